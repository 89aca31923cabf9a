/* ksmallk.cu: convolutions with a short reduction (small K) on the
 * tensor cores, in f16 or bf16 with float32 sums: an engine that competes
 * with cuDNN's and cuBLASLt's in the autotuning (tune/conv.c keeps it only
 * where it times faster).
 *
 * Two families, one kernel: a stem (C_in <= 4 input channels, any kernel,
 * stride and padding, x NCHW or channels-last) and a low-K pointwise
 * convolution (1x1, stride 1, unpadded, channels-last, C_in <= 32 and
 * even). Both are the GEMM y[P, O] = A[P, K] w[O, K]^T over the P output
 * pixels with K = kh * kw * C_in (the KRSC filter's order), far from the
 * sizes cuDNN's and cuBLASLt's kernels are tiled for: at MobileNet-V2's
 * 16 -> 96 expansion at batch 16 in bf16 cuDNN took 108 us for a
 * memory bound of about 10 us, its 3 -> 32 stem 81 us (bound 4 us),
 * ConvNeXt-T's 4x4 stride-4 stem 48 us (bound 3 us) on an H200.
 *
 * A warp computes MT tiles of 16 pixels against every output channel, NCH
 * n-tiles of 8 channels at a time, by mma.sync m16n8k16 (f16 or bf16
 * operands, float32 sums; sm_80 on): its A fragments straight from global
 * memory (pointwise: 4-byte pairs of a pixel's row; stem: one element at a
 * time through a table of each k's (ky, kx, offset) in shared memory, zeros
 * outside the image and past K), the filter's B fragments from shared memory
 * (rows of K padded to k-steps of 16, pitch 8 more: no bank conflicts). The
 * sums go through the warp's float32 staging rows in shared memory, then
 * out 16 bytes (8 channels) a lane: bias, a residual of y's layout, relu
 * or a clip, one rounding to the type as stored, each output row
 * contiguous. Output channels a multiple of 8; y (and the residual)
 * channels-last and 16-byte aligned. */
#include <stdint.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

const int kSkWarps = 4;  /* warps a block */
const int kSkMaxK = 160; /* kh * kw * c at most (ResNet's 7x7x3 stem: 147) */
const size_t kSkMaxSmem = 96 * 1024;

/* The variants' tiles: MT m-tiles of 16 pixels a warp, NCH n-tiles of 8
 * output channels a pass. */
const int kSkVariants = 6;
const int kSkNch[kSkVariants] = {4, 4, 8, 8, 12, 12};

/* Float32 staging rows a warp: a pitch of NCH * 8 floats rounded up to 32,
 * plus 8 (a half warp's float2 stores of rows g = 0..3 in distinct banks). */
__host__ __device__ constexpr int sk_pitch(int nch) {
  return (nch * 8 + 31) / 32 * 32 + 8;
}

/* A k-step's column of the gather table: the tap's row and column offsets
 * and its element's offset from the pixel's base (ky huge past K: outside
 * every image). */
struct sk_tap {
  int ky, kx, off, pad_;
};

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ void
sk_mma(__half *, float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void sk_mma(__nv_bfloat16 *, float c[4],
                                       const uint32_t a[4], uint32_t b0,
                                       uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

/* A launch's sizes, 32-bit (the launcher checks that they fit). */
struct sk_args {
  int p;    /* output pixels n * oh * ow */
  int c, o; /* input and output channels */
  int kdim; /* kh * kw * c */
  int ks;   /* k-steps of 16 */
  int kp;   /* ks * 16 + 8: the filter's pitch in shared memory */
  int kh, kw, h, w, oh, ow, sh, sw, pt, pl;
  int xcl; /* x channels-last (else NCHW) */
  int fn;
  float lo, hi;
};

/* Shared memory of a block in bytes: the warps' staging rows, the bias as
 * floats, the gather table, the padded filter. */
__host__ __device__ inline size_t sk_smem_bytes(int nch, int o, int ks,
                                                int kp) {
  return sizeof(float) * (size_t)(kSkWarps * 16 * sk_pitch(nch)) +
         sizeof(float) * (size_t)((o + 3) / 4 * 4) +
         sizeof(sk_tap) * (size_t)(ks * 16) + 2 * (size_t)o * kp;
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ float sk_epi(float v, int fn, float lo, float hi) {
  if (fn == CXK_RELU)
    v = v > 0.0f ? v : 0.0f;
  else if (fn == CXK_CLIP) { /* as act_fn's, NaN and lo > hi alike */
    float t = v < lo ? lo : v;
    v = t > hi ? hi : t;
  }
  return v;
}

/* Eight elements of T as one 16-byte access. */
template <typename T> union sk_raw8 {
  uint4 u;
  T e[8];
};

/* The A fragment a[4] of k-step ks for rows g and g + 8 of an m-tile
 * (PTX m16n8k16: a0 (g, k..k+1), a1 (g+8, k..), a2 (g, k+8..), a3 (g+8,
 * k+8..), k = 16 ks + 2t): pix, the rows' pixels' base offsets in x; iy0,
 * ix0 their windows' corners (the stem); ok, whether the pixel exists. */
template <typename T, bool PW>
__device__ __forceinline__ void
sk_load_a(uint32_t a[4], const T *__restrict__ x, const sk_tap *tab,
          const sk_args &r, int ks, int t, const int pix[2], const int iy0[2],
          const int ix0[2], const bool ok[2]) {
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const int row = q & 1, k = ks * 16 + 2 * t + (q >> 1) * 8;
    uint32_t v = 0;
    if (PW) { /* a pair of the pixel's row (c even: 4-byte aligned) */
      if (ok[row] && k < r.c)
        v = __ldg((const unsigned int *)(x + pix[row] + k));
    } else if (ok[row]) {
#pragma unroll
      for (int e = 0; e < 2; e++) {
        const sk_tap tp = tab[k + e];
        int iy = iy0[row] + tp.ky, ix = ix0[row] + tp.kx;
        if (iy >= 0 && iy < r.h && ix >= 0 && ix < r.w)
          v |= (uint32_t)__ldg((const unsigned short *)(x + pix[row] + tp.off))
               << (16 * e);
      }
    }
    a[q] = v;
  }
}

/* Rows row of the warp's staging (16 pixels x nch n-tiles from n-tile n0)
 * out to y: (sum + bias) + residual, then fn, rounded once; 8 channels a
 * lane, 16-byte accesses. */
template <typename T, int NCH>
__device__ __forceinline__ void sk_store(const float *my, const float *sbias,
                                         const T *__restrict__ res,
                                         T *__restrict__ y, const sk_args &r,
                                         int pix0, int n0, int nch, int lane) {
  constexpr int PITCH = sk_pitch(NCH);
  for (int u = lane; u < 16 * nch; u += 32) {
    int row = u / nch, cu = u - row * nch, pp = pix0 + row;
    if (pp >= r.p)
      continue;
    int ch = (n0 + cu) * 8;
    const float4 *sv = (const float4 *)(my + row * PITCH + cu * 8);
    float4 v0 = sv[0], v1 = sv[1];
    float v[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
    size_t off = (size_t)pp * r.o + ch;
    sk_raw8<T> rr, out;
    if (res)
      rr.u = __ldg((const uint4 *)(res + off));
    const float4 *sb = (const float4 *)(sbias + ch); /* 16-byte aligned */
    float4 b0 = sb[0], b1 = sb[1];
    float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
    for (int e = 0; e < 8; e++) {
      float s = v[e] + b[e];
      if (res)
        s += ld(rr.e[e]);
      out.e[e] = st<T>(sk_epi(s, r.fn, r.lo, r.hi));
    }
    *(uint4 *)(y + off) = out.u;
  }
}

#endif

template <typename T, bool PW, int MT, int NCH>
__global__ void __launch_bounds__(kSkWarps * 32)
    k_smallk(const T *__restrict__ x, const T *__restrict__ w,
             const T *__restrict__ bias, const T *__restrict__ res,
             T *__restrict__ y, sk_args r) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap(); /* mma.sync of 2-byte types: sm_80 on (run/conv.c checks the
               device) */
#else
  extern __shared__ __align__(16) unsigned char sk_smem[];
  constexpr int PITCH = sk_pitch(NCH);
  float *stage = (float *)sk_smem;
  float *sbias = stage + kSkWarps * 16 * PITCH;
  sk_tap *tab = (sk_tap *)(sbias + (r.o + 3) / 4 * 4);
  T *ws = (T *)(tab + r.ks * 16);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, kpad = r.ks * 16;
  /* the filter [o, kdim] padded with zeros to the k-steps, the bias, the
   * gather table */
  for (int i = tid; i < r.o * kpad; i += blockDim.x) {
    int oc = i / kpad, k = i - oc * kpad;
    ws[oc * r.kp + k] = k < r.kdim ? w[(size_t)oc * r.kdim + k] : st<T>(0.0f);
  }
  for (int i = tid; i < r.o; i += blockDim.x)
    sbias[i] = bias ? ld(bias[i]) : 0.0f;
  for (int k = tid; k < kpad; k += blockDim.x) {
    sk_tap tp = {1 << 29, 0, 0, 0}; /* past K: outside every image */
    if (!PW && k < r.kdim) {
      int ci = k % r.c, tap = k / r.c;
      tp.ky = tap / r.kw, tp.kx = tap % r.kw;
      tp.off = r.xcl ? (tp.ky * r.w + tp.kx) * r.c + ci
                     : (ci * r.h + tp.ky) * r.w + tp.kx;
    }
    tab[k] = tp;
  }
  __syncthreads();
  const int nt = r.o / 8; /* n-tiles */
  float *my = stage + warp * 16 * PITCH;
  for (int base = (blockIdx.x * kSkWarps + warp) * MT * 16; base < r.p;
       base += gridDim.x * kSkWarps * MT * 16) {
    int pix[MT][2], iy0[MT][2], ix0[MT][2];
    bool ok[MT][2];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
      for (int row = 0; row < 2; row++) {
        int pp = base + m * 16 + g + 8 * row;
        ok[m][row] = pp < r.p;
        int q = pp < r.p ? pp : 0;
        if (PW) {
          pix[m][row] = q * r.c;
          iy0[m][row] = ix0[m][row] = 0;
        } else {
          int ox = q % r.ow, rest = q / r.ow, oy = rest % r.oh,
              img = rest / r.oh;
          int y0 = oy * r.sh - r.pt, x0 = ox * r.sw - r.pl;
          iy0[m][row] = y0, ix0[m][row] = x0;
          pix[m][row] = r.xcl ? ((img * r.h + y0) * r.w + x0) * r.c
                              : img * r.c * r.h * r.w + y0 * r.w + x0;
        }
      }
    for (int n0 = 0; n0 < nt; n0 += NCH) {
      float acc[MT][NCH][4];
#pragma unroll
      for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < NCH; j++)
          acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.0f;
      for (int ks = 0; ks < r.ks; ks++) {
        uint32_t a[MT][4];
#pragma unroll
        for (int m = 0; m < MT; m++)
          sk_load_a<T, PW>(a[m], x, tab, r, ks, t, pix[m], iy0[m], ix0[m],
                           ok[m]);
#pragma unroll
        for (int j = 0; j < NCH; j++) {
          if (n0 + j >= nt)
            break;
          /* B (k 2t.., n g) and (k 2t + 8.., n g): filter row n */
          const T *wr = ws + ((n0 + j) * 8 + g) * r.kp + ks * 16 + 2 * t;
          uint32_t b0 = *(const uint32_t *)wr, b1 = *(const uint32_t *)(wr + 8);
#pragma unroll
          for (int m = 0; m < MT; m++)
            sk_mma((T *)0, acc[m][j], a[m], b0, b1);
        }
      }
      const int nch = nt - n0 < NCH ? nt - n0 : NCH;
#pragma unroll
      for (int m = 0; m < MT; m++) {
        __syncwarp();
#pragma unroll
        for (int j = 0; j < NCH; j++) {
          if (j >= nch)
            break;
          /* C: (g, 2t..2t+1), (g + 8, 2t..2t+1) of n-tile j */
          *(float2 *)(my + g * PITCH + j * 8 + 2 * t) =
              make_float2(acc[m][j][0], acc[m][j][1]);
          *(float2 *)(my + (g + 8) * PITCH + j * 8 + 2 * t) =
              make_float2(acc[m][j][2], acc[m][j][3]);
        }
        __syncwarp();
        sk_store<T, NCH>(my, sbias, res, y, r, base + m * 16, n0, nch, lane);
      }
    }
  }
#endif
}

typedef cudaError_t (*sk_launch_fn)(cudaStream_t, const void *, const void *,
                                    const void *, const void *, void *,
                                    const sk_args &);

template <typename T, bool PW, int MT, int NCH>
cudaError_t sk_launch(cudaStream_t s, const void *x, const void *w,
                      const void *b, const void *res, void *y,
                      const sk_args &r) {
  static int set; /* the limit raised once (kflash.cu does the same) */
  size_t smem = sk_smem_bytes(NCH, r.o, r.ks, r.kp);
  if (smem > 48 * 1024 && !set) {
    cudaError_t e = cudaFuncSetAttribute(
        k_smallk<T, PW, MT, NCH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)kSkMaxSmem);
    if (e != cudaSuccess)
      return e;
    set = 1;
  }
  int64_t tiles = ((int64_t)r.p + MT * 16 - 1) / (MT * 16);
  int64_t nb = (tiles + kSkWarps - 1) / kSkWarps;
  if (nb > 8192) /* the warps stride over the rest: each block stages the
                    filter once */
    nb = 8192;
  if (nb < 1)
    return cudaSuccess; /* no pixels */
  k_smallk<T, PW, MT, NCH><<<(unsigned)nb, kSkWarps * 32, smem, s>>>(
      (const T *)x, (const T *)w, (const T *)b, (const T *)res, (T *)y, r);
  return cudaGetLastError();
}

#define SK_VARIANTS(T, PW)                                                     \
  {                                                                            \
    sk_launch<T, PW, 1, 4>, sk_launch<T, PW, 2, 4>, sk_launch<T, PW, 1, 8>,    \
        sk_launch<T, PW, 2, 8>, sk_launch<T, PW, 1, 12>,                       \
        sk_launch<T, PW, 2, 12>                                                \
  }
/* [half type: f16, bf16][pointwise][variant] */
const sk_launch_fn kSkLaunch[2][2][kSkVariants] = {
    {SK_VARIANTS(__half, false), SK_VARIANTS(__half, true)},
    {SK_VARIANTS(__nv_bfloat16, false), SK_VARIANTS(__nv_bfloat16, true)}};

int ks_of(const cxk_sk *p) { return (int)((p->kh * p->kw * p->c + 15) / 16); }

} // namespace

extern "C" {

int cxk_smallk_pointwise(const cxk_sk *p) {
  return p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && !p->pt &&
         !p->pl && p->xcl && p->c <= 32 && p->c % 2 == 0;
}

int cxk_smallk_ok(const cxk_sk *p) {
  if ((p->dt != CXK_F16 && p->dt != CXK_BF16) ||
      (p->fn != CXK_ID && p->fn != CXK_RELU && p->fn != CXK_CLIP))
    return 0;
  if (p->var < 0 || p->var >= kSkVariants || p->n < 0 || p->c < 1 || p->o < 8 ||
      p->o % 8 || p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1 ||
      p->pt < 0 || p->pl < 0 || p->oh < 1 || p->ow < 1)
    return 0;
  if (p->oh != (p->h + 2 * p->pt - p->kh) / p->sh + 1 ||
      p->ow != (p->w + 2 * p->pl - p->kw) / p->sw + 1 ||
      p->h + 2 * p->pt < p->kh || p->w + 2 * p->pl < p->kw)
    return 0;
  int64_t kdim = p->kh * p->kw * p->c;
  if (!cxk_smallk_pointwise(p) && (p->c > 4 || kdim > kSkMaxK))
    return 0;
  int ks = ks_of(p);
  size_t smem = sk_smem_bytes(kSkNch[p->var], (int)p->o, ks, ks * 16 + 8);
  return smem <= kSkMaxSmem && p->o <= 4096 &&
         fits32(p->n * p->h * p->w * p->c) &&
         fits32(p->n * p->oh * p->ow * p->o);
}

int cxk_smallk_variants(void) { return kSkVariants; }

cudaError_t cxk_smallk(cudaStream_t s, const void *x, const void *w,
                       const void *bias, const void *res, void *y,
                       const cxk_sk *p) {
  if (!cxk_smallk_ok(p) || ((uintptr_t)x & 3) || !aligned16(y) ||
      (res && !aligned16(res)))
    return cudaErrorInvalidValue;
  sk_args r;
  r.p = (int)(p->n * p->oh * p->ow);
  r.c = (int)p->c, r.o = (int)p->o;
  r.kdim = (int)(p->kh * p->kw * p->c);
  r.ks = ks_of(p), r.kp = r.ks * 16 + 8;
  r.kh = p->kh, r.kw = p->kw, r.h = (int)p->h, r.w = (int)p->w;
  r.oh = (int)p->oh, r.ow = (int)p->ow, r.sh = p->sh, r.sw = p->sw;
  r.pt = p->pt, r.pl = p->pl, r.xcl = p->xcl;
  r.fn = p->fn, r.lo = p->lo, r.hi = p->hi;
  if (r.p == 0)
    return cudaSuccess;
  return kSkLaunch[p->dt - 1][cxk_smallk_pointwise(p)][p->var](s, x, w, bias,
                                                               res, y, r);
}

} // extern "C"
