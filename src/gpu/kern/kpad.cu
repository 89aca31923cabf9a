/* kpad.cu: the CUDA executor's padding kernels (pad, enlarge,
 * asymmetric convolution padding): a warp a row for rows of at least 32,
 * else one thread per output element. The formula follows the CPU
 * reference (src/exec/ref_*.c).
 */
#include <math.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

/* Padding with rows of at least 32 (the last output dimension): a warp a
 * row, the row's source offset found once, not per element (k_pad's
 * divisions made NASNet-A's padding compute-bound: 50 us for 13M floats on
 * an H200). */
__global__ void k_pad_rows(const float *x, float *y, int rows,
                           const __grid_constant__ cxk_pad p) {
  int L = p.rank - 1, lane = threadIdx.x % 32;
  int ol = (int)p.odim[L], il = (int)p.idim[L], bl = (int)p.before[L];
  int sl = (int)p.ist[L];
  int nw = (int)(gridDim.x * blockDim.x / 32);
  for (int r = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32); r < rows;
       r += nw) {
    int rem = r, off = 0;
    bool inside = true;
    for (int d = L - 1; d >= 0; d--) {
      int od = (int)p.odim[d], q = rem % od, s = q - (int)p.before[d];
      rem /= od;
      inside = inside && s >= 0 && s < (int)p.idim[d];
      off += inside ? s * (int)p.ist[d] : 0;
    }
    float *yr = y + (size_t)r * ol;
    for (int q = lane; q < ol; q += 32) {
      int s = q - bl;
      yr[q] = inside && s >= 0 && s < il ? x[off + s * sl] : p.value;
    }
  }
}

template <typename I>
__global__ void k_pad(const float *x, float *y, I n,
                      const __grid_constant__ cxk_pad p) {
  GRID_LOOP_T(I, i, n) {
    I rem = i, off = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; d--) {
      I od = (I)p.odim[d], id = (I)p.idim[d];
      I q = rem % od;
      rem /= od;
      bool in_d = q >= (I)p.before[d] && q - (I)p.before[d] < id;
      inside = inside && in_d;
      off += (in_d ? q - (I)p.before[d] : 0) * (I)p.ist[d];
    }
    y[i] = inside ? x[off] : p.value;
  }
}

} // namespace

extern "C" {

cudaError_t cxk_pad_nd(cudaStream_t s, const float *x, float *y,
                       const cxk_pad *p) {
  cxk_pad q = *p;
  int64_t n = 1, in = 1, st = 1, zero = 1;
  for (int d = 0; d < q.rank; d++)
    zero = zero && !q.ist[d];
  for (int d = q.rank - 1; d >= 0; d--) {
    if (zero)
      q.ist[d] = st, st *= q.idim[d];
    n *= q.odim[d];
    in += (q.idim[d] - 1) * q.ist[d]; /* past the farthest input offset */
  }
  int64_t ol = q.rank > 1 ? q.odim[q.rank - 1] : 0;
  if (ol >= 32 && fits32(n) && fits32(in))
    k_pad_rows<<<blocks_for(n / ol * 32), kThreads, 0, s>>>(x, y, (int)(n / ol),
                                                            q);
  else if (fits32(n) && fits32(in))
    k_pad<int32_t><<<blocks_for(n), kThreads, 0, s>>>(x, y, (int32_t)n, q);
  else
    k_pad<int64_t><<<blocks_for(n), kThreads, 0, s>>>(x, y, n, q);
  return cudaGetLastError();
}

} // extern "C"
