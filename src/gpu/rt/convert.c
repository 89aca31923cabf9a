/* convert.c: a 4-D tensor's bytes from one layout to the other (NCHW to
 * channels-last NHWC and back), and a float32 matrix transposed, each as
 * one strided copy kernel (kern/): below the tuning and run layers, which
 * both convert (tune/dnn.c times convolutions on converted copies; run/
 * converts inputs and filters; tune/blas.c and run/mm.c transpose kwg.cu's
 * weights).
 */
#include <string.h>

#include "../gpu_int.h"

cudaError_t gpu_convert(cudaStream_t st, const ir_shape *s, const float *src,
                        float *dst, int to_cl) {
  return gpu_convert_dt(st, s, src, dst, to_cl, CXK_F32);
}

cudaError_t gpu_convert_dt(cudaStream_t st, const ir_shape *s, const void *src,
                           void *dst, int to_cl, int dt) {
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
  if (dt != CXK_F32) /* half: 2-byte elements */
    return cxk_copy16(st, src, dst, &k);
  return cxk_copy(st, src, dst, &k);
}

cudaError_t gpu_transpose2(cudaStream_t st, const float *src, float *dst,
                           int64_t rows, int64_t cols) {
  cxk_walk t = {.rank = 2, .extent = rows * cols};
  int64_t dim[2] = {cols, rows}, sst[2] = {1, cols}, dst_st[2] = {rows, 1};
  memcpy(t.dim, dim, sizeof dim), memcpy(t.sst, sst, sizeof sst);
  memcpy(t.dst, dst_st, sizeof dst_st);
  return cxk_copy(st, src, dst, &t);
}
