/* shuffle.c: the launch of a concat_shuffle node (ops.def: a concat with
 * its channel shuffle, writing channel ranges of the result; one
 * kern/kmove.cu kernel; the lower stage makes the node,
 * src/fuse/lower_se.c). Inputs are read and outputs written through
 * their strides, each in its own layout; half tensors natively (a move:
 * their bits), run/half.c.
 */
#include <string.h>

#include "run.h"

cudaError_t gpu_shuffle_enqueue(gpu_plan *p, int j) {
  const ir_node *n = &p->g->nodes[j];
  const ir_shape *ys = shp(p, n->out[0]);
  cxk_shuffle_args a;
  memset(&a, 0, sizeof a);
  if (n->nin > CXK_PARTS || n->nout > CXK_PARTS)
    return cudaErrorNotSupported;
  a.nin = n->nin, a.g = n->a.groups;
  a.half = gpu_dt_of(p->g, n->out[0]) != CXK_F32;
  a.n = ys->dim[0], a.h = ys->dim[2], a.w = ys->dim[3];
  int64_t st[CXK_RANK];
  for (int k = 0; k < n->nin; k++) {
    a.in[k] = p->ptr[n->in[k]];
    a.in_c0[k + 1] = a.in_c0[k] + shp(p, n->in[k])->dim[1];
    gpu_strides(p, n->in[k], st);
    memcpy(a.in_st[k], st, sizeof a.in_st[k]);
  }
  a.c = a.in_c0[n->nin];
  for (int o = 0; o < n->nout; o++) {
    a.out[o] = p->ptr[n->out[o]];
    a.out_lo[o] = n->a.list[o];
    a.out_hi[o] = n->a.list2[o];
    gpu_strides(p, n->out[o], st);
    memcpy(a.out_st[o], st, sizeof a.out_st[o]);
  }
  a.nout = n->nout;
  return cxk_shuffle(p->ctx->stream, &a);
}
