/* kconv.cu: the executor's own depthwise convolution (channels-last, stride
 * 1, kernels up to 7 x 7, channels in fours), an engine that competes with
 * cuDNN's in the autotuning (ctx.c: gpu_conv_choose keeps it only where it
 * times faster; with candidates timed by graph replay, cuDNN 9.14's engine
 * wins at ConvNeXt's 7 x 7 layers on an H200, docs/benchmarks.md).
 *
 * Sixteen variants, timed; the fastest is kept. In k_dwconv a thread
 * computes OX x R output pixels for one, two or four channels: each input
 * row those outputs need is loaded once into registers, the filter slides
 * over it for every output row it serves. In k_dwconv_tile a block loads
 * its tile's input window and taps into shared memory first. The filter
 * is read as [kh * kw][C], one channel vector per tap: the executor
 * transposes it from [C, 1, kh, kw] (once at upload for weights). Plain
 * fp32 FMAs: exact in strict mode too.
 */
#include <stdint.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

const int kMax = 7; /* largest kernel side */

/* Channel vectors of 1, 2 or 4 floats: zero, multiply-add, add. */
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
__device__ inline float vadd(float a, float b) { return a + b; }
__device__ inline float2 vadd(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__device__ inline float4 vadd(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

/* A thread computes R output rows of OX neighbouring pixels for the
 * channels of one vector T (1, 2 or 4 floats): each input row those
 * outputs need is loaded once (OX + kw - 1 vectors) and serves every
 * output row it falls under. The filter is read as [kh * kw][C] (one
 * vector per tap; ops.c converts it). */
template <typename I, typename T, int OX, int R>
__global__ void k_dwconv(const T *x, const T *w, const T *bias, T *y,
                         const __grid_constant__ cxk_dw p) {
  const I cv = (I)p.c / (I)(sizeof(T) / sizeof(float));
  I oxg = ((I)p.ow + OX - 1) / OX, oyg = ((I)p.oh + R - 1) / R;
  I total = (I)p.n * oyg * oxg * cv;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (I)gridDim.x * blockDim.x) {
    I cq = i % cv, r = i / cv;
    int ox0 = (int)(r % oxg) * OX;
    r /= oxg;
    int oy0 = (int)(r % oyg) * R;
    I img = r / oyg;
    T acc[R][OX];
#pragma unroll
    for (int q = 0; q < R; q++)
#pragma unroll
      for (int j = 0; j < OX; j++)
        acc[q][j] = T{};
    T b = bias ? bias[cq] : T{};
    for (int dy = 0; dy < p.kh + R - 1; dy++) {
      int iy = oy0 - p.pt + dy;
      if (iy < 0 || iy >= p.h)
        continue;
      const T *row = x + ((int64_t)img * p.h + iy) * p.w * cv + cq;
      T buf[OX + kMax - 1];
#pragma unroll
      for (int m = 0; m < OX + kMax - 1; m++) {
        int ix = ox0 - p.pl + m;
        buf[m] = m < OX + p.kw - 1 && ix >= 0 && ix < p.w
                     ? row[(int64_t)ix * cv]
                     : T{};
      }
#pragma unroll
      for (int q = 0; q < R; q++) {
        int ky = dy - q; /* output row oy0 + q reads input row iy via ky */
        if (ky < 0 || ky >= p.kh)
          continue;
#pragma unroll
        for (int kx = 0; kx < kMax; kx++) {
          if (kx >= p.kw)
            break;
          T wv = w[(I)(ky * p.kw + kx) * cv + cq];
#pragma unroll
          for (int j = 0; j < OX; j++)
            vfma(acc[q][j], buf[j + kx], wv);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < R; q++) {
      if (oy0 + q >= p.oh)
        break;
      T *out = y + ((int64_t)img * p.oh + oy0 + q) * p.ow * cv + cq;
#pragma unroll
      for (int j = 0; j < OX; j++)
        if (ox0 + j < p.ow) /* the bias after the sum, like the epilogue */
          out[(int64_t)(ox0 + j) * cv] = vadd(acc[q][j], b);
    }
  }
}

/* The tiled form: a block computes a TH x TW tile of output pixels for CB
 * channels (one float each). Its input window, (TH + kh - 1) x (TW + kw -
 * 1) pixels of CB channels, and the CB channels' filter taps are loaded
 * into shared memory once, channels innermost (coalesced), then thread
 * (row r, channel cl) slides the filter along its output row: each window
 * value is read from global memory once, not once per tap as in k_dwconv.
 * Threads: CB * TH. */
template <int TH, int TW, int CB>
__global__ void __launch_bounds__(CB *TH)
    k_dwconv_tile(const float *x, const float *w, const float *bias, float *y,
                  const __grid_constant__ cxk_dw p) {
  const int IW = TW + kMax - 1;
  __shared__ float win[TH + kMax - 1][IW][CB];
  __shared__ float taps[kMax * kMax][CB];
  int cbs = (int)((p.c + CB - 1) / CB), txs = (int)((p.ow + TW - 1) / TW),
      tys = (int)((p.oh + TH - 1) / TH);
  int64_t b = blockIdx.x;
  int cb = (int)(b % cbs);
  b /= cbs;
  int tx = (int)(b % txs);
  b /= txs;
  int ty = (int)(b % tys);
  int64_t img = b / tys;
  int c0 = cb * CB, oy0 = ty * TH, ox0 = tx * TW;
  int ih = TH + p.kh - 1, iw = TW + p.kw - 1, t = threadIdx.x;
  for (int k = t; k < ih * iw * CB; k += CB * TH) {
    int cl = k % CB, px = k / CB, yy = px / iw, xx = px % iw;
    int gy = oy0 - p.pt + yy, gx = ox0 - p.pl + xx;
    win[yy][xx][cl] =
        c0 + cl < p.c && gy >= 0 && gy < p.h && gx >= 0 && gx < p.w
            ? x[((img * p.h + gy) * p.w + gx) * p.c + c0 + cl]
            : 0.0f;
  }
  for (int k = t; k < p.kh * p.kw * CB; k += CB * TH) {
    int cl = k % CB, tap = k / CB;
    taps[tap][cl] = c0 + cl < p.c ? w[(int64_t)tap * p.c + c0 + cl] : 0.0f;
  }
  __syncthreads();
  int cl = t % CB, r = t / CB;
  float acc[TW];
#pragma unroll
  for (int j = 0; j < TW; j++)
    acc[j] = 0.0f;
  for (int ky = 0; ky < p.kh; ky++) {
    float v[TW + kMax - 1];
#pragma unroll
    for (int m = 0; m < TW + kMax - 1; m++)
      v[m] = m < iw ? win[r + ky][m][cl] : 0.0f;
#pragma unroll
    for (int kx = 0; kx < kMax; kx++) {
      if (kx >= p.kw)
        break;
      float wv = taps[ky * p.kw + kx][cl];
#pragma unroll
      for (int j = 0; j < TW; j++)
        acc[j] = fmaf(v[j + kx], wv, acc[j]);
    }
  }
  int oy = oy0 + r;
  if (c0 + cl >= p.c || oy >= p.oh)
    return;
  float bv = bias ? bias[c0 + cl] : 0.0f;
  float *out = y + ((img * p.oh + oy) * p.ow + ox0) * p.c + c0 + cl;
#pragma unroll
  for (int j = 0; j < TW; j++)
    if (ox0 + j < p.ow)
      out[(int64_t)j * p.c] = acc[j] + bv;
}

template <int TH, int TW, int CB>
cudaError_t launch_tile(cudaStream_t s, const float *x, const float *w,
                        const float *bias, float *y, const cxk_dw *p) {
  int64_t nb = p->n * ((p->oh + TH - 1) / TH) * ((p->ow + TW - 1) / TW) *
               ((p->c + CB - 1) / CB);
  if (nb > 0x7fffffff)
    return cudaErrorInvalidConfiguration;
  k_dwconv_tile<TH, TW, CB><<<(unsigned)nb, CB * TH, 0, s>>>(x, w, bias, y, *p);
  return cudaGetLastError();
}

/* The variants the autotuning times (cxk_dwconv's switch), as OX x R
 * pixels a thread of V channels: float4 4 x 1, 4 x 2, 7 x 2, 8 x 2,
 * 2 x 1, 1 x 1; float 4 x 1, 7 x 1, 2 x 1, 1 x 1, 4 x 2; float2 4 x 1;
 * then the tiled form, TH x TW pixels of CB channels a block: 8 x 8 x 32,
 * 4 x 8 x 32, 4 x 4 x 32, 4 x 4 x 16.
 * Few outputs a thread keep small images busy (batch 1), and one channel
 * a thread gives four times the threads of a float4 (ConvNeXt's 7 x 7
 * layers at batch 1 had about four warps an SM with float4s); more
 * outputs a thread reuse every input row loaded (ConvNeXt's 56/28/14/7-wide
 * rows divide by 7). */
const int kVariants = 16;

template <typename T, int OX, int R>
cudaError_t launch(cudaStream_t s, const float *x, const float *w,
                   const float *bias, float *y, const cxk_dw *p) {
  const int v = (int)(sizeof(T) / sizeof(float));
  int64_t total =
      p->n * ((p->oh + R - 1) / R) * ((p->ow + OX - 1) / OX) * (p->c / v);
  /* 128 threads a block: at about 150 registers a thread (float4, 8 x 2),
   * several blocks still fit on an SM */
  const int threads = 128;
  unsigned nb = blocks_for(total, threads);
  int64_t most = p->n * p->h * p->w * p->c + p->n * p->oh * p->ow * p->c;
  if (fits32(most))
    k_dwconv<int32_t, T, OX, R><<<nb, threads, 0, s>>>(
        (const T *)x, (const T *)w, (const T *)bias, (T *)y, *p);
  else
    k_dwconv<int64_t, T, OX, R><<<nb, threads, 0, s>>>(
        (const T *)x, (const T *)w, (const T *)bias, (T *)y, *p);
  return cudaGetLastError();
}

/* The variants, by index (kVariants above). */
typedef cudaError_t (*dw_launch)(cudaStream_t, const float *, const float *,
                                 const float *, float *, const cxk_dw *);
const dw_launch kLaunch[] = {
    launch<float4, 4, 1>,  launch<float4, 4, 2>,  launch<float4, 7, 2>,
    launch<float4, 8, 2>,  launch<float4, 2, 1>,  launch<float4, 1, 1>,
    launch<float, 4, 1>,   launch<float, 7, 1>,   launch<float, 2, 1>,
    launch<float, 1, 1>,   launch<float, 4, 2>,   launch<float2, 4, 1>,
    launch_tile<8, 8, 32>, launch_tile<4, 8, 32>, launch_tile<4, 4, 32>,
    launch_tile<4, 4, 16>};
static_assert(sizeof kLaunch / sizeof kLaunch[0] == kVariants,
              "one launcher per variant");

} // namespace

extern "C" {

int cxk_dwconv_ok(const cxk_dw *p) {
  return p->c % 4 == 0 && p->kh >= 1 && p->kh <= kMax && p->kw >= 1 &&
         p->kw <= kMax && p->oh == p->h + 2 * p->pt - p->kh + 1 &&
         p->ow == p->w + 2 * p->pl - p->kw + 1 && p->oh > 0 && p->ow > 0 &&
         p->var >= 0 && p->var < kVariants;
}

int cxk_dwconv_variants(void) { return kVariants; }

cudaError_t cxk_dwconv(cudaStream_t s, const float *x, const float *w,
                       const float *bias, float *y, const cxk_dw *p) {
  if (!cxk_dwconv_ok(p) || !aligned16(x) || !aligned16(w) || !aligned16(y) ||
      (bias && !aligned16(bias)))
    return cudaErrorInvalidValue;
  return kLaunch[p->var](s, x, w, bias, y, p);
}

} // extern "C"
