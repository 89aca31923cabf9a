/* kutil.cuh: what the executor's kernel files (kernels.cu, kmove.cu,
 * kconv.cu) share: the block size, the grid for n threads, grid-stride
 * loops, and the checks that pick 32-bit indices and float4 accesses. */
#ifndef SUPEROPT_KUTIL_CUH
#define SUPEROPT_KUTIL_CUH

#include <stdint.h>

namespace {

const int kThreads = 256;

/* Blocks of kThreads for n threads (at least 1, at most 2^20: the
 * kernels loop over the rest). */
inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
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

} // namespace

#define GRID_LOOP(i, n)                                                        \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);    \
       i += (int64_t)gridDim.x * blockDim.x)

/* Index arithmetic in I: 32-bit when every offset fits, else 64-bit. */
#define GRID_LOOP_T(I, i, n)                                                   \
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)(n);             \
       i += (I)gridDim.x * blockDim.x)

#endif
