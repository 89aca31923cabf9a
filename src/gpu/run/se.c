/* se.c: the launch of a squeeze-and-excitation node (ops.def's se: one
 * kern/kse.cu kernel; the lower stage makes the node, src/fuse/lower_se.c).
 */
#include <math.h>

#include "run.h"

/* The kernel's activation code for act (an ir_act), or -1. */
static int se_act(int act) {
  return act == IR_ACT_NONE      ? CXK_ID
         : act == IR_ACT_RELU    ? CXK_RELU
         : act == IR_ACT_SIGMOID ? CXK_SIGMOID
                                 : -1;
}

cxk_se gpu_se_args(const gpu_plan *p, int i) {
  const ir_node *n = &p->g->nodes[i];
  const ir_shape *x = shp(p, n->in[0]), *w1 = shp(p, n->in[1]),
                 *w2 = shp(p, n->in[2]);
  /* bounds: the kernel's clip replaces the second activation */
  int clip = !isinf(n->a.lo) || !isinf(n->a.hi);
  int act2 = se_act(n->a.axis);
  if (clip)
    act2 = n->a.axis == IR_ACT_NONE ? CXK_CLIP : -1;
  return (cxk_se){.n = x->dim[0],
                  .c = x->dim[1],
                  .hw = x->dim[2] * x->dim[3],
                  .r = w1->dim[0],
                  .c2 = w2->dim[0],
                  .cl = gpu_is_cl(p, n->in[0]),
                  .act1 = se_act(n->a.groups),
                  .act2 = act2,
                  .lo2 = n->a.lo,
                  .hi2 = n->a.hi};
}

base_status gpu_se_prepare(gpu_plan *p, int i, base_diag *d) {
  cxk_se a = gpu_se_args(p, i);
  if (cxk_se_ok(&a))
    return BASE_OK;
  return base_diag_set(
      d, BASE_ERR_PARAM, 0, 0,
      "se: the squeeze-and-excitation kernel cannot run this node (it takes "
      "act1 and act2 none, relu or sigmoid, min and max only with "
      "act2=none, %lld + %lld channels in 48 KiB of shared memory)",
      (long long)a.c, (long long)a.r);
}

cudaError_t gpu_se_enqueue(gpu_plan *p, int i) {
  const ir_node *n = &p->g->nodes[i];
  cxk_se a = gpu_se_args(p, i);
  const float *b1 = n->nin > 3 ? p->ptr[n->in[3]] : NULL;
  const float *b2 = n->nin > 4 ? p->ptr[n->in[4]] : NULL;
  return cxk_se_run(p->ctx->stream, gpu_in(p, i, 0), p->ptr[n->in[1]], b1,
                    p->ptr[n->in[2]], b2, p->ptr[n->out[0]], &a);
}
