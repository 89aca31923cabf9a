/* kconv.cu: the executor's own depthwise convolution (channels-last,
 * square kernels of 3, 5 or 7, stride 1 or 2), an engine that competes
 * with cuDNN's in the autotuning (tune/conv.c: gpu_conv_choose keeps it only
 * where it times faster).
 *
 * A thread computes R output rows of OX neighbouring pixels for a vector
 * of V channels: 1, 2 or 4 floats, or 1, 4 or 8 halves (f16, bf16: the
 * element type E is a template argument, every sum float32, the result
 * rounded once as it is stored). The kernel side K and the stride S are
 * template arguments, so every loop unrolls: the thread loads its K * K taps
 * into registers once (not the float4 7 x 7 shapes of more than four outputs:
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

/* V neighbouring channels of element type E (float, __half,
 * __nv_bfloat16) as floats: loaded and stored as one access of V *
 * sizeof(E) bytes (2 to 16), summed in float32, rounded once as stored.
 * For float, V = 1, 2, 4 are the float, float2, float4 accesses and the
 * same fmaf sums in the same order. */
template <int BYTES> struct raw_of;
template <> struct raw_of<2> { typedef unsigned short t; };
template <> struct raw_of<4> { typedef unsigned int t; };
template <> struct raw_of<8> { typedef uint2 t; };
template <> struct raw_of<16> { typedef uint4 t; };

template <typename E, int V> struct chv { float v[V]; };

template <typename E, int V> union chv_raw {
  typename raw_of<V * sizeof(E)>::t r;
  E e[V];
};

template <typename E, int V>
__device__ __forceinline__ chv<E, V> ldv(const E *p) {
  chv_raw<E, V> u;
  u.r = __ldg((const typename raw_of<V * sizeof(E)>::t *)p);
  chv<E, V> a;
#pragma unroll
  for (int j = 0; j < V; j++)
    a.v[j] = ld(u.e[j]);
  return a;
}

template <typename E, int V>
__device__ __forceinline__ void stv(E *p, const chv<E, V> &a) {
  chv_raw<E, V> u;
#pragma unroll
  for (int j = 0; j < V; j++)
    u.e[j] = st<E>(a.v[j]);
  *(typename raw_of<V * sizeof(E)>::t *)p = u.r;
}

template <typename E, int V>
__device__ __forceinline__ void vfma(chv<E, V> &a, const chv<E, V> &x,
                                     const chv<E, V> &w) {
#pragma unroll
  for (int j = 0; j < V; j++)
    a.v[j] = fmaf(x.v[j], w.v[j], a.v[j]);
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
template <typename E, int V>
__device__ __forceinline__ chv<E, V> epi(const chv<E, V> &a, const chv<E, V> &b,
                                         int fn, float lo, float hi) {
  chv<E, V> r;
#pragma unroll
  for (int j = 0; j < V; j++)
    r.v[j] = epi(a.v[j], b.v[j], fn, lo, hi);
  return r;
}

/* Whether the K * K taps of a vector T stay in registers: not the float4
 * 7 x 7 filter (196 registers) beside more than four outputs' sums, and
 * never the 7 x 7 filter of 8 halves a thread (held as 8 floats: 392
 * registers; ptxas -v, sm_90: bf16 2 x 2 and 1 x 4 took 255 registers
 * and 188 and 108 bytes of spills, without them 184 and 0). */
template <typename T, int K, int R, int OX>
__host__ __device__ constexpr bool taps_in_regs() {
  return sizeof(T) * K * K <= 400 || (R * OX <= 4 && sizeof(T) * K * K <= 800);
}

const int kThreadsDw = 128;

/* The sizes come as 32-bit arguments (the launcher checks that they fit):
 * the same kernel reading them from a __grid_constant__ cxk_dw of 64-bit
 * fields took about 1 us more at every ConvNeXt layer (H200, batch 1).
 * cv: c / V, the channel vectors of a pixel. */
template <typename E, int V, int K, int S, int R, int OX>
__global__ void __launch_bounds__(kThreadsDw)
    k_dwconv(const E *__restrict__ x, const E *__restrict__ w,
             const E *__restrict__ bias, E *__restrict__ y, int n, int h,
             int wd, int cv, int oh, int ow, int pt, int pl, int fn, float lo,
             float hi) {
  typedef chv<E, V> T;
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
  const int c = cv * V; /* elements of a pixel, of a tap */
  T tap[wreg ? K * K : 1];
  if (wreg) {
#pragma unroll
    for (int t = 0; t < K * K; t++)
      tap[t] = ldv<E, V>(w + t * c + cq * V);
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
    const E *row = x + ((size_t)img * h + iy) * wd * c + cq * V;
    T buf[IW];
#pragma unroll
    for (int m = 0; m < IW; m++) {
      int ix = ox0 * S - pl + m;
      buf[m] = in && ix >= 0 && ix < wd ? ldv<E, V>(row + (size_t)ix * c) : T{};
    }
#pragma unroll
    for (int q = 0; q < R; q++) {
      const int ky = dy - q * S; /* output row oy0 + q reads row dy by ky */
      if (ky < 0 || ky >= K)
        continue;
#pragma unroll
      for (int kx = 0; kx < K; kx++) {
        T wv =
            wreg ? tap[ky * K + kx] : ldv<E, V>(w + (ky * K + kx) * c + cq * V);
#pragma unroll
        for (int j = 0; j < OX; j++)
          vfma(acc[q][j], buf[j * S + kx], wv);
      }
    }
  }
  T b = bias ? ldv<E, V>(bias + cq * V) : T{};
#pragma unroll
  for (int q = 0; q < R; q++) {
    if (oy0 + q >= oh)
      break;
    E *out = y + ((size_t)img * oh + oy0 + q) * ow * c + cq * V;
#pragma unroll
    for (int j = 0; j < OX; j++)
      if (ox0 + j < ow)
        stv(out + (size_t)(ox0 + j) * c, epi(acc[q][j], b, fn, lo, hi));
  }
}

template <typename E, int V, int K, int S, int R, int OX>
cudaError_t launch(cudaStream_t s, const void *x, const void *w,
                   const void *bias, void *y, const cxk_dw *p) {
  int64_t total =
      p->n * ((p->oh + R - 1) / R) * ((p->ow + OX - 1) / OX) * (p->c / V);
  if (p->c % V || !fits32(total)) /* cxk_dwconv_ok checked the rest */
    return cudaErrorInvalidValue;
  if (total == 0) /* an empty batch: nothing to launch */
    return cudaSuccess;
  unsigned nb = (unsigned)((total + kThreadsDw - 1) / kThreadsDw);
  k_dwconv<E, V, K, S, R, OX><<<nb, kThreadsDw, 0, s>>>(
      (const E *)x, (const E *)w, (const E *)bias, (E *)y, (int)p->n, (int)p->h,
      (int)p->w, (int)(p->c / V), (int)p->oh, (int)p->ow, p->pt, p->pl, p->fn,
      p->lo, p->hi);
  return cudaGetLastError();
}

typedef cudaError_t (*dw_launch)(cudaStream_t, const void *, const void *,
                                 const void *, void *, const cxk_dw *);

/* The thread shapes the autotuning times, V channels R x OX (cxk_dw.var
 * indexes them). Variant 0 takes one channel a thread: it runs wherever
 * cxk_dwconv_ok accepts the geometry (and the pointers are 16-byte
 * aligned, as the executor's buffers are). Nine of them won a layer of
 * ConvNeXt-T, MobileNet-V2/V3 or ShuffleNet in the autotuning on an H200
 * (float2 2 x 3 and float 7 x 1 at ConvNeXt's batch 1, float2 4 x 4 and
 * 2 x 4 at its batch 16, float4 2 x 2 and float2 1 x 2 at most 3 x 3
 * layers), and float2 4 x 2 came close; four that never won (float 2 x 4,
 * float2 7 x 2 and 3 x 2, float4 1 x 2) were dropped: each shape is six
 * kernels to compile, twice (sm_75, sm_90), for each element type. Half
 * types take the same shapes with twice the channels a thread but for
 * variant 0 (so the same bytes a load: 4, 8 and 16; 2 for variant 0). */
#define DW_SHAPES(E, W, K, S)                                                  \
  {                                                                            \
    launch<E, 1, K, S, 7, 1>, launch<E, 2 * W, K, S, 2, 3>,                    \
        launch<E, 2 * W, K, S, 2, 2>, launch<E, 2 * W, K, S, 1, 2>,            \
        launch<E, 2 * W, K, S, 4, 4>, launch<E, 2 * W, K, S, 2, 4>,            \
        launch<E, 2 * W, K, S, 4, 2>, launch<E, 4 * W, K, S, 2, 2>,            \
        launch<E, 4 * W, K, S, 1, 4>, launch<E, 4 * W, K, S, 2, 4>             \
  }
#define DW_TYPE(E, W)                                                          \
  {                                                                            \
    {DW_SHAPES(E, W, 3, 1), DW_SHAPES(E, W, 3, 2)},                            \
        {DW_SHAPES(E, W, 5, 1), DW_SHAPES(E, W, 5, 2)}, {                      \
      DW_SHAPES(E, W, 7, 1), DW_SHAPES(E, W, 7, 2)                             \
    }                                                                          \
  }
const int kVariants = 10;
const int kWidth[kVariants] = {1, 2, 2, 2, 2, 2, 2, 4, 4, 4};
/* [element type (CXK_*)][kernel side][stride][variant] */
const dw_launch kLaunch[3][3][2][kVariants] = {
    DW_TYPE(float, 1), DW_TYPE(__half, 2), DW_TYPE(__nv_bfloat16, 2)};

/* The channels a thread of variant var computes on elements of type dt. */
int width_of(int dt, int var) {
  return dt == CXK_F32 || var == 0 ? kWidth[var] : 2 * kWidth[var];
}

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
         (p->dt == CXK_F32 || p->dt == CXK_F16 || p->dt == CXK_BF16) &&
         p->c % width_of(p->dt, p->var) == 0 &&
         fits32(p->n * p->h * p->w * p->c) &&
         fits32(p->n * p->oh * p->ow * p->c);
}

int cxk_dwconv_variants(void) { return kVariants; }

cudaError_t cxk_dwconv(cudaStream_t s, const void *x, const void *w,
                       const void *bias, void *y, const cxk_dw *p) {
  if (!cxk_dwconv_ok(p) || !aligned16(x) || !aligned16(w) || !aligned16(y) ||
      (bias && !aligned16(bias)))
    return cudaErrorInvalidValue;
  return kLaunch[p->dt][p->kh / 2 - 1][p->stride - 1][p->var](s, x, w, bias, y,
                                                              p);
}

} // extern "C"
