/* kconv.cu: the executor's own depthwise convolution (channels-last,
 * square kernels of 3, 5 or 7, stride 1 or 2), an engine that competes
 * with cuDNN's in the autotuning (tune/conv.c: gpu_conv_choose keeps it only
 * where it times faster).
 *
 * A thread computes R output rows of OX neighbouring pixels for a vector
 * T of 1, 2 or 4 channels. The kernel side K and the stride S are template
 * arguments, so every loop unrolls: the thread loads its K * K taps into
 * registers once (not the float4 7 x 7 shapes of more than four outputs:
 * they read each tap where they use it), then each input row its outputs need
 * ((R - 1) * S + K rows of (OX - 1) * S + K pixels) is loaded once, all of a
 * row's loads issued before the first multiply, and serves every output row it
 * falls under. Neighbouring threads hold neighbouring channels: every load of a
 * warp is one contiguous run. Ten thread shapes per (K, S), timed by
 * the autotuning; the fastest is kept. Measured on an H200 at ConvNeXt's
 * 7 x 7 layers, batch 1 (docs/notes/benchmarks.md, ninth session), as the
 * autotuning times it: 5.5 / 4.9 / 4.5 / 4.4 us against cuDNN 9.14's 9.8 /
 * 7.6 / 5.2 / 5.2 us; the kernel before it, with K a run-time value, took
 * 11.6 / 10.2 / 9.3 / 7.7 us.
 *
 * The filter is read as [K * K][C], one channel vector per tap (the
 * executor transposes it from [C, 1, K, K], once at upload for weights).
 * Epilogue: bias, then relu or a clip (cxk_dw.fn). Plain fp32
 * FMAs in a fixed order: exact in strict mode too. */
#include <stdint.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

/* Channel vectors of 1, 2 or 4 floats: multiply-add, and the epilogue. */
__device__ inline void vfma(float &a, float x, float w) { a = fmaf(x, w, a); }
__device__ inline void vfma(float2 &a, float2 x, float2 w) {
  a.x = fmaf(x.x, w.x, a.x);
  a.y = fmaf(x.y, w.y, a.y);
}
__device__ inline void vfma(float4 &a, float4 x, float4 w) {
  a.x = fmaf(x.x, w.x, a.x);
  a.y = fmaf(x.y, w.y, a.y);
  a.z = fmaf(x.z, w.z, a.z);
  a.w = fmaf(x.w, w.w, a.w);
}
/* The epilogue: bias, then relu or a clip (cxk_dw.fn). Not act_fn: its
 * switch, inlined for every output a thread holds, half again the kernel's
 * instructions (sigmoid, tanh, gelu), measured 0.4 us slower at ConvNeXt's
 * 56 x 56 layer, batch 1; these two branches measured free. */
__device__ inline float epi(float a, float b, int fn, float lo, float hi) {
  float v = a + b;
  if (fn == CXK_RELU)
    v = v > 0.0f ? v : 0.0f;
  else if (fn == CXK_CLIP) { /* as act_fn's, NaN and lo > hi alike */
    float t = v < lo ? lo : v;
    v = t > hi ? hi : t;
  }
  return v;
}
__device__ inline float2 epi(float2 a, float2 b, int fn, float lo, float hi) {
  return make_float2(epi(a.x, b.x, fn, lo, hi), epi(a.y, b.y, fn, lo, hi));
}
__device__ inline float4 epi(float4 a, float4 b, int fn, float lo, float hi) {
  return make_float4(epi(a.x, b.x, fn, lo, hi), epi(a.y, b.y, fn, lo, hi),
                     epi(a.z, b.z, fn, lo, hi), epi(a.w, b.w, fn, lo, hi));
}

/* Whether the K * K taps of a vector T stay in registers: not the float4
 * 7 x 7 filter (196 registers) beside more than four outputs' sums. */
template <typename T, int K, int R, int OX>
__host__ __device__ constexpr bool taps_in_regs() {
  return sizeof(T) * K * K <= 400 || R * OX <= 4;
}

const int kThreadsDw = 128;

/* The sizes come as 32-bit arguments (the launcher checks that they fit):
 * the same kernel reading them from a __grid_constant__ cxk_dw of 64-bit
 * fields took about 1 us more at every ConvNeXt layer (H200, batch 1). */
template <typename T, int K, int S, int R, int OX>
__global__ void __launch_bounds__(kThreadsDw)
    k_dwconv(const T *__restrict__ x, const T *__restrict__ w,
             const T *__restrict__ bias, T *__restrict__ y, int n, int h,
             int wd, int cv, int oh, int ow, int pt, int pl, int fn, float lo,
             float hi) {
  const int IR = (R - 1) * S + K, IW = (OX - 1) * S + K;
  const bool wreg = taps_in_regs<T, K, R, OX>();
  int oxg = (ow + OX - 1) / OX, oyg = (oh + R - 1) / R;
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n * oyg * oxg * cv)
    return;
  int cq = i % cv, r = i / cv;
  int ox0 = (r % oxg) * OX;
  r /= oxg;
  int oy0 = (r % oyg) * R, img = r / oyg;
  T tap[wreg ? K * K : 1];
  if (wreg) {
#pragma unroll
    for (int t = 0; t < K * K; t++)
      tap[t] = __ldg(w + t * cv + cq);
  }
  T acc[R][OX];
#pragma unroll
  for (int q = 0; q < R; q++)
#pragma unroll
    for (int j = 0; j < OX; j++)
      acc[q][j] = T{};
#pragma unroll
  for (int dy = 0; dy < IR; dy++) {
    int iy = oy0 * S - pt + dy;
    bool in = iy >= 0 && iy < h;
    const T *row = x + ((size_t)img * h + iy) * wd * cv + cq;
    T buf[IW];
#pragma unroll
    for (int m = 0; m < IW; m++) {
      int ix = ox0 * S - pl + m;
      buf[m] = in && ix >= 0 && ix < wd ? __ldg(row + (size_t)ix * cv) : T{};
    }
#pragma unroll
    for (int q = 0; q < R; q++) {
      const int ky = dy - q * S; /* output row oy0 + q reads row dy by ky */
      if (ky < 0 || ky >= K)
        continue;
#pragma unroll
      for (int kx = 0; kx < K; kx++) {
        T wv = wreg ? tap[ky * K + kx] : __ldg(w + (ky * K + kx) * cv + cq);
#pragma unroll
        for (int j = 0; j < OX; j++)
          vfma(acc[q][j], buf[j * S + kx], wv);
      }
    }
  }
  T b = bias ? __ldg(bias + cq) : T{};
#pragma unroll
  for (int q = 0; q < R; q++) {
    if (oy0 + q >= oh)
      break;
    T *out = y + ((size_t)img * oh + oy0 + q) * ow * cv + cq;
#pragma unroll
    for (int j = 0; j < OX; j++)
      if (ox0 + j < ow)
        out[(size_t)(ox0 + j) * cv] = epi(acc[q][j], b, fn, lo, hi);
  }
}

template <typename T, int K, int S, int R, int OX>
cudaError_t launch(cudaStream_t s, const float *x, const float *w,
                   const float *bias, float *y, const cxk_dw *p) {
  int64_t v = (int64_t)(sizeof(T) / sizeof(float));
  int64_t total =
      p->n * ((p->oh + R - 1) / R) * ((p->ow + OX - 1) / OX) * (p->c / v);
  if (p->c % v || !fits32(total)) /* cxk_dwconv_ok checked the rest */
    return cudaErrorInvalidValue;
  if (total == 0) /* an empty batch: nothing to launch */
    return cudaSuccess;
  unsigned nb = (unsigned)((total + kThreadsDw - 1) / kThreadsDw);
  k_dwconv<T, K, S, R, OX><<<nb, kThreadsDw, 0, s>>>(
      (const T *)x, (const T *)w, (const T *)bias, (T *)y, (int)p->n, (int)p->h,
      (int)p->w, (int)(p->c / v), (int)p->oh, (int)p->ow, p->pt, p->pl, p->fn,
      p->lo, p->hi);
  return cudaGetLastError();
}

typedef cudaError_t (*dw_launch)(cudaStream_t, const float *, const float *,
                                 const float *, float *, const cxk_dw *);

/* The thread shapes the autotuning times, T R x OX (cxk_dw.var indexes
 * them). Variant 0 takes one channel a thread: it runs wherever
 * cxk_dwconv_ok accepts the geometry (and the pointers are 16-byte
 * aligned, as the executor's buffers are). Nine of them won a layer of
 * ConvNeXt-T, MobileNet-V2/V3 or ShuffleNet in the autotuning on an H200
 * (float2 2 x 3 and float 7 x 1 at ConvNeXt's batch 1, float2 4 x 4 and
 * 2 x 4 at its batch 16, float4 2 x 2 and float2 1 x 2 at most 3 x 3
 * layers), and float2 4 x 2 came close; four that never won (float 2 x 4,
 * float2 7 x 2 and 3 x 2, float4 1 x 2) were dropped: each shape is six
 * kernels to compile, twice (sm_75, sm_90). */
#define DW_SHAPES(K, S)                                                        \
  {                                                                            \
    launch<float, K, S, 7, 1>, launch<float2, K, S, 2, 3>,                     \
        launch<float2, K, S, 2, 2>, launch<float2, K, S, 1, 2>,                \
        launch<float2, K, S, 4, 4>, launch<float2, K, S, 2, 4>,                \
        launch<float2, K, S, 4, 2>, launch<float4, K, S, 2, 2>,                \
        launch<float4, K, S, 1, 4>, launch<float4, K, S, 2, 4>                 \
  }
const int kVariants = 10;
const int kWidth[kVariants] = {1, 2, 2, 2, 2, 2, 2, 4, 4, 4};
const dw_launch kLaunch[3][2][kVariants] = {{DW_SHAPES(3, 1), DW_SHAPES(3, 2)},
                                            {DW_SHAPES(5, 1), DW_SHAPES(5, 2)},
                                            {DW_SHAPES(7, 1), DW_SHAPES(7, 2)}};

} // namespace

extern "C" {

int cxk_dwconv_ok(const cxk_dw *p) {
  int k = p->kh;
  return (p->fn == CXK_ID || p->fn == CXK_RELU || p->fn == CXK_CLIP) &&
         (k == 3 || k == 5 || k == 7) && p->kw == k &&
         (p->stride == 1 || p->stride == 2) && p->pt >= 0 && p->pl >= 0 &&
         p->oh == (p->h + 2 * p->pt - k) / p->stride + 1 &&
         p->ow == (p->w + 2 * p->pl - k) / p->stride + 1 && p->oh > 0 &&
         p->ow > 0 && p->var >= 0 && p->var < kVariants &&
         p->c % kWidth[p->var] == 0 && fits32(p->n * p->h * p->w * p->c) &&
         fits32(p->n * p->oh * p->ow * p->c);
}

int cxk_dwconv_variants(void) { return kVariants; }

cudaError_t cxk_dwconv(cudaStream_t s, const float *x, const float *w,
                       const float *bias, float *y, const cxk_dw *p) {
  if (!cxk_dwconv_ok(p) || !aligned16(x) || !aligned16(w) || !aligned16(y) ||
      (bias && !aligned16(bias)))
    return cudaErrorInvalidValue;
  return kLaunch[p->kh / 2 - 1][p->stride - 1][p->var](s, x, w, bias, y, p);
}

} // extern "C"
