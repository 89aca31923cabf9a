/* se.c: the launch of a folded squeeze-and-excitation chain (one
 * kern/kse.cu kernel from the pool's step; the fold: plan/se.c).
 */
#include "run.h"

/* The kernel's activation code for convolution i, or -1. */
int gpu_se_act(const gpu_plan *p, int i) {
  const gpu_step *s = &p->steps[i];
  if (s->fuse_clip)
    return CXK_CLIP;
  int a = gpu_effective_act(&p->g->nodes[i], s);
  return a == IR_ACT_NONE      ? CXK_ID
         : a == IR_ACT_RELU    ? CXK_RELU
         : a == IR_ACT_SIGMOID ? CXK_SIGMOID
                               : -1;
}

cxk_se gpu_se_args(const gpu_plan *p, int head) {
  const ir_node *pool = &p->g->nodes[head];
  int f2 = p->steps[head].se - 1;
  const ir_shape *x = shp(p, pool->in[0]), *w1, *w2;
  const ir_node *c2 = &p->g->nodes[f2];
  int f1 = p->g->tensors[c2->in[0]].node;
  w1 = shp(p, p->g->nodes[f1].in[1]);
  w2 = shp(p, c2->in[1]);
  return (cxk_se){.n = x->dim[0],
                  .c = x->dim[1],
                  .hw = x->dim[2] * x->dim[3],
                  .r = w1->dim[0],
                  .c2 = w2->dim[0],
                  .cl = gpu_is_cl(p, pool->in[0]),
                  .act1 = gpu_se_act(p, f1),
                  .act2 = gpu_se_act(p, f2),
                  .lo2 = p->steps[f2].clip_lo,
                  .hi2 = p->steps[f2].clip_hi};
}

cudaError_t gpu_se_enqueue(gpu_plan *p, int head) {
  const gpu_step *s = &p->steps[head];
  const ir_node *c2 = &p->g->nodes[s->se - 1];
  int f1 = p->g->tensors[c2->in[0]].node;
  const ir_node *c1 = &p->g->nodes[f1];
  cxk_se a = gpu_se_args(p, head);
  const float *b1 = c1->nin == 3 ? p->ptr[c1->in[2]] : NULL;
  const float *b2 = c2->nin == 3 && !p->steps[s->se - 1].bias_moved
                        ? p->ptr[c2->in[2]]
                        : NULL;
  return cxk_se_run(p->ctx->stream, gpu_in(p, head, 0), p->ptr[c1->in[1]], b1,
                    p->ptr[c2->in[1]], b2, p->ptr[c2->out[0]], &a);
}
