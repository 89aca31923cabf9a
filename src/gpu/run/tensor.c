/* tensor.c: what every launcher reads of the plan: a tensor's layout
 * (channels-last or NCHW) and strides, the conversion between the two, the
 * pointer a node reads an input from, a node's stream and workspace.
 */
#include <string.h>

#include "run.h"

int gpu_is_cl(const gpu_plan *p, int t) { return p->cl && p->cl[t]; }

void gpu_strides(const gpu_plan *p, int t, int64_t st[CXK_RANK]) {
  const ir_shape *s = shp(p, t);
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s->dim[i];
  }
  if (gpu_is_cl(p, t)) { /* (n, c, h, w) at n*HWC + c + h*WC + w*C */
    int64_t c = s->dim[1], w = s->dim[3];
    st[1] = 1;
    st[3] = c;
    st[2] = c * w;
  }
}

cudaError_t gpu_convert(cudaStream_t st, const ir_shape *s, const float *src,
                        float *dst, int to_cl) {
  int64_t n = s->dim[0], c = s->dim[1], h = s->dim[2], w = s->dim[3];
  cxk_walk k = {.rank = 4, .extent = ir_shape_numel(s)};
  if (to_cl) { /* walk (n, h, w, c) of the NHWC result */
    int64_t d[4] = {n, h, w, c}, ds[4] = {h * w * c, w * c, c, 1},
            ss[4] = {c * h * w, w, 1, h * w};
    memcpy(k.dim, d, sizeof d), memcpy(k.dst, ds, sizeof ds);
    memcpy(k.sst, ss, sizeof ss);
  } else { /* walk (n, c, h, w) of the NCHW result */
    int64_t d[4] = {n, c, h, w}, ds[4] = {c * h * w, h * w, w, 1},
            ss[4] = {h * w * c, 1, w * c, c};
    memcpy(k.dim, d, sizeof d), memcpy(k.dst, ds, sizeof ds);
    memcpy(k.sst, ss, sizeof ss);
  }
  return cxk_copy(st, src, dst, &k);
}

const float *gpu_in(const gpu_plan *p, int i, int k) {
  const gpu_step *s = &p->steps[i];
  if (s->cin_off && s->cin_off[k] != (size_t)-1)
    return (const float *)((const char *)s->scratch + s->cin_off[k]);
  return p->ptr[p->g->nodes[i].in[k]];
}

/* Node i's stream: 0 before the schedule exists and for nodes that do not
 * run. */
int gpu_stream_of(const gpu_plan *p, int i) {
  int s = p->sched.stream ? p->sched.stream[i] : 0;
  return s > 0 ? s : 0;
}

void *gpu_step_ws(const gpu_plan *p, const ir_node *n) {
  return p->ws[gpu_stream_of(p, (int)(n - p->g->nodes))];
}
