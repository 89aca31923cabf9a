/* kdwt.cu: a tiled depthwise convolution in half (f16, bf16; stride 1,
 * square kernels of 3, 5 or 7), more variants of the executor's own
 * depthwise engine (tune/dnn.c times them beside kconv.cu's shapes and keeps
 * the fastest).
 *
 * kconv.cu's half shapes convert every input vector and tap to float32
 * as each thread loads it, several times over for neighbouring threads,
 * and its 8-halves 7 x 7 shapes read the taps where used (their registers
 * would spill): ConvNeXt-T's 7 x 7 layer [16,96,56,56] in bf16 took 37 us
 * on an H200 (its 472 MFLOP are 7 us of float32 FMAs). Here a block of
 * 256 threads takes a tile of TH = 8 output rows by TW columns of one
 * image and 32 channels: the input tile with its halo is read once, 16
 * bytes (8 channels) a load, converted once into float32 in shared memory
 * ([row][column][32]: a warp's lanes read 32 consecutive floats, no bank
 * conflicts); each warp computes one output row, each lane one channel,
 * its K * K taps in registers, a row of the input tile in registers for
 * the K taps of a row (TW + K - 1 loads for K * TW FMAs). The sums are
 * float32, rounded once as stored; the epilogue is bias, then relu or a
 * clip (cxk_dw.fn). */
#include <stdint.h>

#include "kdwt.h"
#include "kutil.cuh"

namespace {

const int kDwtThreads = 256; /* 8 warps: TH = 8 output rows */
const int kDwtRows = 8;
const int kDwtCh = 32; /* channels a block */

/* The variants' tile widths (cxk_dw.var): 8, 14 and 16 columns. */
const int kDwtVariants = 3;

template <typename T> union dwt_raw8 {
  uint4 u;
  T e[8];
};

__device__ __forceinline__ float dwt_epi(float v, int fn, float lo, float hi) {
  if (fn == CXK_RELU)
    v = v > 0.0f ? v : 0.0f;
  else if (fn == CXK_CLIP) { /* as act_fn's, NaN and lo > hi alike */
    float t = v < lo ? lo : v;
    v = t > hi ? hi : t;
  }
  return v;
}

/* Sizes as 32-bit values (the launcher checks that they fit). */
struct dwt_args {
  int h, w, c, oh, ow, pt, pl, tiles_x, tiles_y, fn;
  float lo, hi;
};

template <typename T, int K, int TW>
__global__ void __launch_bounds__(kDwtThreads)
    k_dwt(const T *__restrict__ x, const T *__restrict__ w,
          const T *__restrict__ bias, T *__restrict__ y, dwt_args r) {
  constexpr int IH = kDwtRows + K - 1, IW = TW + K - 1;
  __shared__ __align__(16) float tile[IH * IW * kDwtCh];
  int b = blockIdx.x;
  const int tx = b % r.tiles_x;
  b /= r.tiles_x;
  const int ty = b % r.tiles_y, img = b / r.tiles_y;
  const int c0 = blockIdx.y * kDwtCh;
  const int iy0 = ty * kDwtRows - r.pt, ix0 = tx * TW - r.pl;
  /* the input tile, 8 channels a load, zeros outside the image and past c */
  for (int i = threadIdx.x; i < IH * IW * (kDwtCh / 8); i += kDwtThreads) {
    const int v = i % (kDwtCh / 8), p = i / (kDwtCh / 8);
    const int iy = iy0 + p / IW, ix = ix0 + p % IW, ch = c0 + v * 8;
    float f[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (iy >= 0 && iy < r.h && ix >= 0 && ix < r.w && ch < r.c) {
      dwt_raw8<T> u;
      u.u = __ldg((
          const uint4 *)(x + ((size_t)(img * r.h + iy) * r.w + ix) * r.c + ch));
#pragma unroll
      for (int e = 0; e < 8; e++)
        f[e] = ld(u.e[e]);
    }
    float4 *d = (float4 *)(tile + p * kDwtCh + v * 8);
    d[0] = make_float4(f[0], f[1], f[2], f[3]);
    d[1] = make_float4(f[4], f[5], f[6], f[7]);
  }
  const int lane = threadIdx.x & 31, row = threadIdx.x >> 5;
  const int ch = c0 + lane;
  const bool live = ch < r.c;
  float tap[K * K];
#pragma unroll
  for (int t = 0; t < K * K; t++)
    tap[t] = live ? ld(w[(size_t)t * r.c + ch]) : 0.0f;
  __syncthreads();
  float acc[TW];
#pragma unroll
  for (int j = 0; j < TW; j++)
    acc[j] = 0.0f;
#pragma unroll
  for (int ky = 0; ky < K; ky++) {
    float buf[IW];
    const float *src = tile + (row + ky) * IW * kDwtCh + lane;
#pragma unroll
    for (int m = 0; m < IW; m++)
      buf[m] = src[m * kDwtCh];
#pragma unroll
    for (int kx = 0; kx < K; kx++)
#pragma unroll
      for (int j = 0; j < TW; j++)
        acc[j] = fmaf(buf[j + kx], tap[ky * K + kx], acc[j]);
  }
  const int oy = ty * kDwtRows + row;
  if (!live || oy >= r.oh)
    return;
  const float bv = bias ? ld(bias[ch]) : 0.0f;
  T *out = y + ((size_t)(img * r.oh + oy) * r.ow) * r.c + ch;
#pragma unroll
  for (int j = 0; j < TW; j++) {
    const int ox = tx * TW + j;
    if (ox < r.ow)
      out[(size_t)ox * r.c] = st<T>(dwt_epi(acc[j] + bv, r.fn, r.lo, r.hi));
  }
}

typedef cudaError_t (*dwt_launch_fn)(cudaStream_t, const void *, const void *,
                                     const void *, void *, const cxk_dw *);

template <typename T, int K, int TW>
cudaError_t dwt_launch(cudaStream_t s, const void *x, const void *w,
                       const void *bias, void *y, const cxk_dw *p) {
  dwt_args r;
  r.h = (int)p->h, r.w = (int)p->w, r.c = (int)p->c;
  r.oh = (int)p->oh, r.ow = (int)p->ow, r.pt = p->pt, r.pl = p->pl;
  r.tiles_x = (r.ow + TW - 1) / TW;
  r.tiles_y = (r.oh + kDwtRows - 1) / kDwtRows;
  r.fn = p->fn, r.lo = p->lo, r.hi = p->hi;
  int64_t nb = p->n * r.tiles_x * r.tiles_y;
  if (nb == 0)
    return cudaSuccess; /* an empty batch */
  if (nb >= ((int64_t)1 << 31))
    return cudaErrorInvalidValue;
  dim3 grid((unsigned)nb, (unsigned)((r.c + kDwtCh - 1) / kDwtCh));
  k_dwt<T, K, TW><<<grid, kDwtThreads, 0, s>>>((const T *)x, (const T *)w,
                                               (const T *)bias, (T *)y, r);
  return cudaGetLastError();
}

#define DWT_WIDTHS(T, K)                                                       \
  { dwt_launch<T, K, 8>, dwt_launch<T, K, 14>, dwt_launch<T, K, 16> }
#define DWT_TYPE(T)                                                            \
  { DWT_WIDTHS(T, 3), DWT_WIDTHS(T, 5), DWT_WIDTHS(T, 7) }
/* [half type: f16, bf16][kernel side 3, 5, 7][variant] */
const dwt_launch_fn kDwtLaunch[2][3][kDwtVariants] = {DWT_TYPE(__half),
                                                      DWT_TYPE(__nv_bfloat16)};

} // namespace

extern "C" {

int cxk_dwt_ok(const cxk_dw *p) {
  int k = p->kh;
  return (p->dt == CXK_F16 || p->dt == CXK_BF16) &&
         (p->fn == CXK_ID || p->fn == CXK_RELU || p->fn == CXK_CLIP) &&
         (k == 3 || k == 5 || k == 7) && p->kw == k && p->stride == 1 &&
         p->pt >= 0 && p->pl >= 0 && p->oh == p->h + 2 * p->pt - k + 1 &&
         p->ow == p->w + 2 * p->pl - k + 1 && p->oh > 0 && p->ow > 0 &&
         p->c % 8 == 0 && p->var >= 0 && p->var < kDwtVariants &&
         fits32(p->n * p->h * p->w * p->c) &&
         fits32(p->n * p->oh * p->ow * p->c);
}

int cxk_dwt_variants(void) { return kDwtVariants; }

cudaError_t cxk_dwt(cudaStream_t s, const void *x, const void *w,
                    const void *bias, void *y, const cxk_dw *p) {
  if (!cxk_dwt_ok(p) || !aligned16(x) || !aligned16(y))
    return cudaErrorInvalidValue;
  return kDwtLaunch[p->dt - 1][p->kh / 2 - 1][p->var](s, x, w, bias, y, p);
}

} // extern "C"
