/* shuffle.c: the launch of a concat with its channel shuffle folded in
 * (one kern/kmove.cu kernel; the fold: plan/shuffle.c).
 */
#include <string.h>

#include "run.h"

cudaError_t gpu_shuffle_enqueue(gpu_plan *p, int j) {
  const ir_node *n = &p->g->nodes[j];
  const gpu_step *s = &p->steps[j];
  const ir_shape *ys = shp(p, s->shuf_y);
  cxk_shuffle_args a;
  memset(&a, 0, sizeof a);
  a.nin = n->nin, a.g = s->shuffle;
  a.n = ys->dim[0], a.c = ys->dim[1], a.h = ys->dim[2], a.w = ys->dim[3];
  int64_t st[CXK_RANK];
  for (int k = 0; k < n->nin; k++) {
    a.in[k] = p->ptr[n->in[k]];
    a.in_c0[k + 1] = a.in_c0[k] + shp(p, n->in[k])->dim[1];
    gpu_strides(p, n->in[k], st);
    memcpy(a.in_st[k], st, sizeof a.in_st[k]);
  }
  if (s->nshuf_out == 0) { /* y itself */
    a.out[0] = p->ptr[s->shuf_y];
    a.out_hi[0] = a.c;
    gpu_strides(p, s->shuf_y, st);
    memcpy(a.out_st[0], st, sizeof a.out_st[0]);
  }
  for (int o = 0; o < s->nshuf_out; o++) {
    const ir_node *sl = &p->g->nodes[s->shuf_out[o]];
    a.out[o] = p->ptr[sl->out[0]];
    a.out_lo[o] = sl->a.list[1];
    a.out_hi[o] = sl->a.list[1] + shp(p, sl->out[0])->dim[1];
    gpu_strides(p, sl->out[0], st);
    memcpy(a.out_st[o], st, sizeof a.out_st[o]);
  }
  a.nout = s->nshuf_out ? s->nshuf_out : 1;
  return cxk_shuffle(p->ctx->stream, &a);
}
