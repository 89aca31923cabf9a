/* kconv.cu: the executor's own depthwise convolution (channels-last, stride
 * 1, kernels up to 7 x 7, channels in fours), an engine that competes with
 * cuDNN's in the autotuning (ctx.c: gpu_conv_choose keeps it only where it
 * is faster on the H100: ConvNeXt's 7 x 7 and the MobileNets' 3 x 3 and
 * 5 x 5 depthwise layers are the cases cuDNN serves with slow kernels).
 *
 * A thread computes OX x R output pixels (a few variants, timed; the
 * fastest is kept) for four channels: each input row those outputs need is
 * loaded once into registers, the filter slides over it for every output
 * row it serves. The filter is read as [kh * kw][C], one float4 per tap:
 * the executor transposes it from [C, 1, kh, kw] (once at upload for
 * weights). Plain fp32 FMAs: exact in strict mode too.
 */
#include <stdint.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

const int kMax = 7; /* largest kernel side */

/* A thread computes R output rows of OX neighbouring pixels for four
 * channels: each input row those outputs need is loaded once (OX + kw - 1
 * float4s) and serves every output row it falls under. The filter is read
 * as [kh * kw][C] (one float4 per tap; ops.c converts it). */
template <typename I, int OX, int R>
__global__ void k_dwconv(const float4 *x, const float4 *w, const float4 *bias,
                         float4 *y, const __grid_constant__ cxk_dw p) {
  I c4 = (I)p.c / 4, oxg = ((I)p.ow + OX - 1) / OX, oyg = ((I)p.oh + R - 1) / R;
  I total = (I)p.n * oyg * oxg * c4;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (I)gridDim.x * blockDim.x) {
    I cq = i % c4, r = i / c4;
    int ox0 = (int)(r % oxg) * OX;
    r /= oxg;
    int oy0 = (int)(r % oyg) * R;
    I img = r / oyg;
    float4 acc[R][OX];
#pragma unroll
    for (int q = 0; q < R; q++)
#pragma unroll
      for (int j = 0; j < OX; j++)
        acc[q][j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 b = bias ? bias[cq] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int dy = 0; dy < p.kh + R - 1; dy++) {
      int iy = oy0 - p.pt + dy;
      if (iy < 0 || iy >= p.h)
        continue;
      const float4 *row = x + ((int64_t)img * p.h + iy) * p.w * c4 + cq;
      float4 buf[OX + kMax - 1];
#pragma unroll
      for (int m = 0; m < OX + kMax - 1; m++) {
        int ix = ox0 - p.pl + m;
        buf[m] = m < OX + p.kw - 1 && ix >= 0 && ix < p.w
                     ? row[(int64_t)ix * c4]
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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
          float4 wv = w[(I)(ky * p.kw + kx) * c4 + cq];
#pragma unroll
          for (int j = 0; j < OX; j++) {
            float4 v = buf[j + kx];
            acc[q][j].x = fmaf(v.x, wv.x, acc[q][j].x);
            acc[q][j].y = fmaf(v.y, wv.y, acc[q][j].y);
            acc[q][j].z = fmaf(v.z, wv.z, acc[q][j].z);
            acc[q][j].w = fmaf(v.w, wv.w, acc[q][j].w);
          }
        }
      }
    }
#pragma unroll
    for (int q = 0; q < R; q++) {
      if (oy0 + q >= p.oh)
        break;
      float4 *out = y + ((int64_t)img * p.oh + oy0 + q) * p.ow * c4 + cq;
#pragma unroll
      for (int j = 0; j < OX; j++)
        if (ox0 + j < p.ow) /* the bias after the sum, like the epilogue */
          out[(int64_t)(ox0 + j) * c4] =
              make_float4(acc[q][j].x + b.x, acc[q][j].y + b.y,
                          acc[q][j].z + b.z, acc[q][j].w + b.w);
    }
  }
}

/* The variants the autotuning times (cxk_dwconv's switch): pixels a
 * thread, OX x R = 4 x 1, 4 x 2, 7 x 2, 8 x 2, 2 x 1, 1 x 1. Few outputs a
 * thread keep small images busy (batch 1); more reuse every input row
 * loaded (ConvNeXt's 56/28/14/7-wide rows divide by 7). */
const int kVariants = 6;

template <int OX, int R>
cudaError_t launch(cudaStream_t s, const float *x, const float *w,
                   const float *bias, float *y, const cxk_dw *p) {
  int64_t total =
      p->n * ((p->oh + R - 1) / R) * ((p->ow + OX - 1) / OX) * (p->c / 4);
  /* 128 threads a block: at about 150 registers a thread, several blocks
   * still fit on an SM */
  const int threads = 128;
  unsigned nb = blocks_for(total, threads);
  int64_t most = p->n * p->h * p->w * p->c + p->n * p->oh * p->ow * p->c;
  if (fits32(most))
    k_dwconv<int32_t, OX, R>
        <<<nb, threads, 0, s>>>((const float4 *)x, (const float4 *)w,
                                (const float4 *)bias, (float4 *)y, *p);
  else
    k_dwconv<int64_t, OX, R>
        <<<nb, threads, 0, s>>>((const float4 *)x, (const float4 *)w,
                                (const float4 *)bias, (float4 *)y, *p);
  return cudaGetLastError();
}

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
  switch (p->var) {
  case 0: return launch<4, 1>(s, x, w, bias, y, p);
  case 1: return launch<4, 2>(s, x, w, bias, y, p);
  case 2: return launch<7, 2>(s, x, w, bias, y, p);
  case 3: return launch<8, 2>(s, x, w, bias, y, p);
  case 4: return launch<2, 1>(s, x, w, bias, y, p);
  default: return launch<1, 1>(s, x, w, bias, y, p);
  }
}

} // extern "C"
