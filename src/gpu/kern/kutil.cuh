/* kutil.cuh: what the executor's kernel files (kern/: kew.cu, kpad.cu,
 * kred.cu, kmove.cu, kconv.cu, kse.cu, katt.cu) share: the block size, the
 * grid for n threads, grid-stride loops, the checks that pick 32-bit
 * indices and float4 accesses, warp and lane-group sums and maxima, the
 * element-wise functions, where an attention's (batch, head) pair starts
 * (katt.cu, kflash.cu), and the dimension merging that copies, broadcasts
 * and reductions plan with. */
#ifndef SUPEROPT_KUTIL_CUH
#define SUPEROPT_KUTIL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "kern.h"

namespace {

const int kThreads = 256;

/* Blocks of `threads` (kThreads unless said) for n threads (at least 1, at
 * most 2^20: the kernels loop over the rest). */
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1)
    b = 1;
  return (unsigned)(b > (1 << 20) ? (1 << 20) : b);
}

/* Every offset, and every grid-stride loop index up to n plus one stride
 * of a full grid (2^20 blocks of 256), below 2^31: 32-bit index arithmetic
 * (64-bit divisions made small kernels compute-bound). */
inline bool fits32(int64_t n) {
  return n < ((int64_t)1 << 31) - ((int64_t)1 << 28);
}

inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Operand x of a broadcast (strides st in elements over rank dimensions)
 * read 16 bytes, v elements, at a time along the last dimension: broadcast
 * along it, or contiguous along it with every row starting on a 16-byte
 * boundary (kew.cu's float4 path: v 4; khalf.cu's 8 halves: v 8). */
inline bool vec16_operand(const void *x, const int64_t *st, int rank, int v) {
  if (st[rank - 1] == 0)
    return true;
  if (st[rank - 1] != 1 || !aligned16(x))
    return false;
  for (int d = 0; d < rank - 1; d++)
    if (st[d] % v)
      return false;
  return true;
}

/* Sum and maximum over the LANES lanes of an aligned group (a power of
 * two, <= 32); every lane of the warp takes part and gets the result. */
template <int LANES> __device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int o = LANES / 2; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int LANES> __device__ __forceinline__ float group_max(float v) {
#pragma unroll
  for (int o = LANES / 2; o > 0; o /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) { return group_sum<32>(v); }

/* An element of type float, __half or __nv_bfloat16 as a float (ld), and
 * a float stored as one, rounded to nearest even (st<T>: overflow to
 * infinity, NaN kept, as ir_f16_bits and ir_bf16_bits round): the half
 * kernels compute in float32 and round once as they store. */
__device__ __forceinline__ float ld(float v) { return v; }
__device__ __forceinline__ float ld(__half v) { return __half2float(v); }
__device__ __forceinline__ float ld(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T st(float v);
template <> __device__ __forceinline__ float st<float>(float v) { return v; }
template <> __device__ __forceinline__ __half st<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
__device__ __forceinline__ float warp_max(float v) { return group_max<32>(v); }

/* Where the (batch, head) pair bh of an attention (cxk_att; bh = b0 * d1 +
 * b1) starts in its operand i, in elements: 0 q, 1 k, 2 v, 3 y (strides
 * st[i]), 4 the bias (bst). katt.cu's and kflash.cu's kernels. */
__device__ __forceinline__ int64_t att_head_off(const cxk_att &a, int i,
                                                int64_t bh) {
  const int64_t *s = i < 4 ? a.st[i] : a.bst;
  return bh / a.d1 * s[0] + bh % a.d1 * s[1];
}

/* Moves the operand pointers of an attention to its pair bh (the bias
 * only where it is not NULL). */
template <typename In, typename Out>
__device__ __forceinline__ void att_to_head(const cxk_att &a, int64_t bh, In &q,
                                            In &k, In &v, In &bias, Out &y) {
  q += att_head_off(a, 0, bh);
  k += att_head_off(a, 1, bh);
  v += att_head_off(a, 2, bh);
  y += att_head_off(a, 3, bh);
  if (bias)
    bias += att_head_off(a, 4, bh);
}

/* The element-wise functions (CXK_*) of one value; lo, hi: CXK_CLIP's. */
__device__ __forceinline__ float act_fn(int fn, float v, float lo, float hi) {
  switch (fn) {
#define EW(ID, name, c, cuda, ...)                                             \
  case CXK_##ID: {                                                             \
    float x = v;                                                               \
    return cuda;                                                               \
  }
#include "../../ir/ew.def"
#undef EW
  case CXK_CLIP: {
    float t = v < lo ? lo : v;
    return t > hi ? hi : t;
  }
  case CXK_NAN: return __int_as_float(0x7fc00000);
  case CXK_NOT: return v == 0.0f ? 1.0f : 0.0f;
  case CXK_TRUNC: return truncf(v);
  case CXK_NONZERO: return v != 0.0f ? 1.0f : 0.0f;
  default: return v;
  }
}

/* Simplifies the dimensions dim[0..*rank) of nst strided walks (stride
 * arrays st[0..nst)), in place: drops those of size 1 and merges each
 * neighbour into the one before it where every walk is contiguous across
 * the two (st[k][d-1] == st[k][d] * dim[d]). keep1: a walk of no dimension
 * left keeps one, of size 1 and stride 1 (copies and broadcasts); else
 * *rank may become 0 (reductions). */
inline void dims_merge(int *rank, int64_t *dim, int64_t *const *st, int nst,
                       bool keep1) {
  int m = 0;
  for (int d = 0; d < *rank; d++) {
    if (dim[d] == 1)
      continue;
    bool joins = m > 0;
    for (int k = 0; joins && k < nst; k++)
      joins = st[k][m - 1] == st[k][d] * dim[d];
    if (joins) {
      dim[m - 1] *= dim[d];
      for (int k = 0; k < nst; k++)
        st[k][m - 1] = st[k][d];
      continue;
    }
    dim[m] = dim[d];
    for (int k = 0; k < nst; k++)
      st[k][m] = st[k][d];
    m++;
  }
  if (m == 0 && keep1) {
    dim[0] = 1;
    for (int k = 0; k < nst; k++)
      st[k][0] = 1;
    m = 1;
  }
  *rank = m;
}

} // namespace

#define GRID_LOOP(i, n)                                                        \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);    \
       i += (int64_t)gridDim.x * blockDim.x)

/* Index arithmetic in I: 32-bit when every offset fits, else 64-bit. */
#define GRID_LOOP_T(I, i, n)                                                   \
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)(n);             \
       i += (I)gridDim.x * blockDim.x)

#endif
