/* kconv.cu: the executor's own depthwise convolution (channels-last, stride
 * 1, kernels up to 7 x 7, channels in fours), an engine that competes with
 * cuDNN's in the autotuning (ctx.c: gpu_conv_choose keeps it only where it
 * is faster on the H100: ConvNeXt's 7 x 7 and the MobileNets' 3 x 3 and
 * 5 x 5 depthwise layers are the cases cuDNN serves with slow kernels).
 *
 * A thread computes four neighbouring output pixels of one row for four
 * channels: for each filter row it loads the (3 + kw) input pixels those
 * outputs need once into registers and slides the filter over them. The
 * filter is read as [C, kh, kw] (KRSC and KCRS agree when each group has
 * one channel). Plain fp32 FMAs: exact in strict mode too.
 */
#include <stdint.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

const int kMax = 7; /* largest kernel side */
const int kOx = 4;  /* output pixels a thread */

template <typename I>
__global__ void k_dwconv(const float4 *x, const float *w, float4 *y,
                         const __grid_constant__ cxk_dw p) {
  I c4 = (I)p.c / 4, oxg = ((I)p.ow + kOx - 1) / kOx;
  I total = (I)p.n * (I)p.oh * oxg * c4;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (I)gridDim.x * blockDim.x) {
    I cq = i % c4, r = i / c4;
    int ox0 = (int)(r % oxg) * kOx;
    r /= oxg;
    int oy = (int)(r % (I)p.oh);
    I img = r / (I)p.oh;
    float4 acc[kOx];
#pragma unroll
    for (int j = 0; j < kOx; j++)
      acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float *wc = w + (int64_t)cq * 4 * p.kh * p.kw;
    for (int ky = 0; ky < p.kh; ky++) {
      int iy = oy - p.pt + ky;
      if (iy < 0 || iy >= p.h)
        continue;
      const float4 *row = x + ((int64_t)img * p.h + iy) * p.w * c4 + cq;
      float4 buf[kOx + kMax - 1];
#pragma unroll
      for (int m = 0; m < kOx + kMax - 1; m++) {
        int ix = ox0 - p.pl + m;
        buf[m] = m < kOx + p.kw - 1 && ix >= 0 && ix < p.w
                     ? row[(int64_t)ix * c4]
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
#pragma unroll
      for (int kx = 0; kx < kMax; kx++) {
        if (kx >= p.kw)
          break;
        int t = ky * p.kw + kx, s = p.kh * p.kw;
        float4 wv = make_float4(wc[t], wc[s + t], wc[2 * s + t], wc[3 * s + t]);
#pragma unroll
        for (int j = 0; j < kOx; j++) {
          float4 v = buf[j + kx];
          acc[j].x = fmaf(v.x, wv.x, acc[j].x);
          acc[j].y = fmaf(v.y, wv.y, acc[j].y);
          acc[j].z = fmaf(v.z, wv.z, acc[j].z);
          acc[j].w = fmaf(v.w, wv.w, acc[j].w);
        }
      }
    }
    float4 *out = y + ((int64_t)img * p.oh + oy) * p.ow * c4 + cq;
#pragma unroll
    for (int j = 0; j < kOx; j++)
      if (ox0 + j < p.ow)
        out[(int64_t)(ox0 + j) * c4] = acc[j];
  }
}

} // namespace

extern "C" {

int cxk_dwconv_ok(const cxk_dw *p) {
  return p->c % 4 == 0 && p->kh >= 1 && p->kh <= kMax && p->kw >= 1 &&
         p->kw <= kMax && p->oh == p->h + 2 * p->pt - p->kh + 1 &&
         p->ow == p->w + 2 * p->pl - p->kw + 1 && p->oh > 0 && p->ow > 0;
}

cudaError_t cxk_dwconv(cudaStream_t s, const float *x, const float *w, float *y,
                       const cxk_dw *p) {
  if (!cxk_dwconv_ok(p) || !aligned16(x) || !aligned16(y))
    return cudaErrorInvalidValue;
  int64_t total = p->n * p->oh * ((p->ow + kOx - 1) / kOx) * (p->c / 4);
  unsigned nb = blocks_for(total);
  int64_t most = p->n * p->h * p->w * p->c + p->n * p->oh * p->ow * p->c;
  if (fits32(most))
    k_dwconv<int32_t>
        <<<nb, kThreads, 0, s>>>((const float4 *)x, w, (float4 *)y, *p);
  else
    k_dwconv<int64_t>
        <<<nb, kThreads, 0, s>>>((const float4 *)x, w, (float4 *)y, *p);
  return cudaGetLastError();
}

} // extern "C"
