/* katt.cu: attention, softmax(s * q k + b) v, and the split form's softmax.
 *
 * BERT's heads, node by node, are a batched matmul for the scores, a
 * kernel scaling them and taking each row's softmax, and a batched matmul
 * with v: three launches and the scores written to memory and read back.
 * At batch 1 (sequence 128, 12 heads of 64) they took 3.5 + 1.8 + 4.4 us a
 * layer on an H200, each launch nearly empty. Three kernels here:
 *
 * - k_attention_tc (TF32 WMMA, at most ATT_TC_T keys): the keys spread
 *   over a block's warps, each warp's partial softmax and outputs combined
 *   at the end (below). 7.1 us a layer at batch 1.
 * - k_attention (fp32, any number of keys: strict mode, long sequences):
 *   a warp takes RW (2) query rows and walks the keys in stages of k and v in
 *   shared memory; lane j computes key j's score for each row, the rows'
 *   running maxima and sums are updated (the online softmax: earlier
 *   partial sums rescaled when the maximum grows) and each lane
 *   accumulates its columns of the outputs, p_j broadcast by shuffles.
 *   Plain FMAs in a fixed order.
 * - k_scaled_softmax: softmax(s * x) in place, for the split form (cuBLAS
 *   computes the scores and the product with v; run/att.c times both forms).
 *
 * Operands are read through strides over [d0, d1, rows, cols] (cxk_att):
 * the executor reads the heads of BERT's merged projection in place
 * (plan/layout.c). The two attention kernels are templates on the element
 * type T of q, k, v, the scale, the bias and y (float, __half,
 * __nv_bfloat16: cxk_att.dt): half operands are loaded as floats (exact),
 * everything is computed as for float32, and y is rounded once as stored.
 */
#include <math.h>
#include <mma.h>
#include <string.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

const int ATT_WARPS = 4; /* warps a block */

/* Keys a stage: 64, or 32 where 128-wide rows would overflow the 48 KiB
 * of static shared memory. */
__host__ __device__ constexpr int att_kc(int dc, int ec) {
  return dc + ec > 128 ? 32 : 64;
}

/* DC, EC: d and e rounded up to 32, 64 or 128 (q, k and v zero-padded in
 * shared memory, so every loop has a fixed count); RW: query rows a warp.
 * Shared memory: each warp's q rows [RW][DC] (its own: written and read
 * by that warp alone), a stage of k [KC][DC + 1] (the pad: lane j reads
 * key j's row, conflict-free) and of v [KC][EC]. A warp loads every
 * KC / ATT_WARPS-th key of a stage, a lane the columns lane + 32 u, all
 * loads issued before any store (the loops unrolled), so a stage costs
 * about one memory latency, not one a key. */
template <typename T, int RW, int DC, int EC>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    k_attention(const T *__restrict__ q, const T *__restrict__ k,
                const T *__restrict__ v, const T *__restrict__ scale,
                const T *__restrict__ bias, T *__restrict__ y, cxk_att a,
                int64_t qtiles) {
  constexpr int KC = att_kc(DC, EC), KW = KC / ATT_WARPS;
  constexpr int DU = DC / 32, EU = EC / 32;
  __shared__ float qs[ATT_WARPS * RW * DC];
  __shared__ float ks[KC * (DC + 1)];
  __shared__ float vs[KC * EC];
  const int rows = ATT_WARPS * RW, D = (int)a.d, E = (int)a.e;
  int64_t bx = blockIdx.x, bh = bx / qtiles, q0 = (bx % qtiles) * rows;
  att_to_head(a, bh, q, k, v, bias, y);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  float *qw = qs + w * RW * DC;
  {
    float r[RW][DU];
#pragma unroll
    for (int i = 0; i < RW; i++) {
      int64_t row = q0 + w * RW + i;
#pragma unroll
      for (int u = 0; u < DU; u++) {
        int c = lane + 32 * u;
        r[i][u] = row < a.s && c < D ? ld(q[row * a.st[0][2] + c * a.st[0][3]])
                                     : 0.0f;
      }
    }
#pragma unroll
    for (int i = 0; i < RW; i++)
#pragma unroll
      for (int u = 0; u < DU; u++)
        qw[i * DC + lane + 32 * u] = r[i][u];
  }
  const float sc = scale ? ld(*scale) : 1.0f;
  float m[RW], l[RW], acc[RW][EU];
#pragma unroll
  for (int r = 0; r < RW; r++) {
    m[r] = -INFINITY, l[r] = 0.0f;
#pragma unroll
    for (int u = 0; u < EU; u++)
      acc[r][u] = 0.0f;
  }
  for (int64_t t0 = 0; t0 < a.t; t0 += KC) {
    __syncthreads(); /* the previous stage is used up */
    {
      float kr[KW][DU], vr[KW][EU];
#pragma unroll
      for (int i = 0; i < KW; i++) {
        int64_t t = t0 + w + ATT_WARPS * i;
        bool in = t < a.t;
#pragma unroll
        for (int u = 0; u < DU; u++) {
          int c = lane + 32 * u;
          kr[i][u] =
              in && c < D ? ld(k[c * a.st[1][2] + t * a.st[1][3]]) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < EU; u++) {
          int c = lane + 32 * u;
          vr[i][u] =
              in && c < E ? ld(v[t * a.st[2][2] + c * a.st[2][3]]) : 0.0f;
        }
      }
#pragma unroll
      for (int i = 0; i < KW; i++) {
        int j = w + ATT_WARPS * i;
#pragma unroll
        for (int u = 0; u < DU; u++)
          ks[j * (DC + 1) + lane + 32 * u] = kr[i][u];
#pragma unroll
        for (int u = 0; u < EU; u++)
          vs[j * EC + lane + 32 * u] = vr[i][u];
      }
    }
    __syncthreads();
    for (int sub = 0; sub < KC && t0 + sub < a.t; sub += 32) {
      float s[RW];
#pragma unroll
      for (int r = 0; r < RW; r++)
        s[r] = 0.0f;
      const float *kk = ks + (sub + lane) * (DC + 1);
#pragma unroll 16
      for (int c = 0; c < DC; c++) {
        float kv = kk[c];
#pragma unroll
        for (int r = 0; r < RW; r++)
          s[r] = fmaf(qw[r * DC + c], kv, s[r]);
      }
      const int64_t key = t0 + sub + lane;
      const bool valid = key < a.t;
#pragma unroll
      for (int r = 0; r < RW; r++) {
        int64_t row = q0 + w * RW + r;
        float x = valid ? s[r] * sc : -INFINITY;
        if (bias && valid && row < a.s)
          x += ld(bias[row * a.bst[2] + key * a.bst[3]]);
        float mn = fmaxf(m[r], warp_max(x));
        /* every key so far masked (-inf): no NaN from -inf - -inf */
        float mr = mn == -INFINITY ? 0.0f : mn;
        float p = valid ? expf(x - mr) : 0.0f, ps = warp_sum(p);
        float corr = expf(m[r] - mr); /* 0 on the first keys */
        l[r] = l[r] * corr + ps;
        m[r] = mn;
#pragma unroll
        for (int u = 0; u < EU; u++)
          acc[r][u] *= corr;
        s[r] = p;
      }
      const float *vv = vs + sub * EC + lane;
#pragma unroll 8
      for (int j = 0; j < 32; j++) {
        float pj[RW];
#pragma unroll
        for (int r = 0; r < RW; r++)
          pj[r] = __shfl_sync(0xffffffffu, s[r], j);
#pragma unroll
        for (int u = 0; u < EU; u++) {
          float x = vv[j * EC + 32 * u];
#pragma unroll
          for (int r = 0; r < RW; r++)
            acc[r][u] = fmaf(pj[r], x, acc[r][u]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < RW; r++) {
    int64_t row = q0 + w * RW + r;
    if (row >= a.s)
      continue;
    /* l == 0: every key masked, NaN as softmax gives, 0 with the guard */
    float inv = l[r] > 0.0f ? 1.0f / l[r] : a.guard ? 0.0f : NAN;
#pragma unroll
    for (int u = 0; u < EU; u++) {
      int c = lane + 32 * u;
      if (c < E)
        y[row * a.st[3][2] + c * a.st[3][3]] = st<T>(acc[r][u] * inv);
    }
  }
}

template <typename T, int RW, int DC, int EC>
cudaError_t launch(cudaStream_t st, const T *q, const T *k, const T *v,
                   const T *scale, const T *bias, T *y, const cxk_att *a) {
  const int rows = ATT_WARPS * RW;
  int64_t qt = (a->s + rows - 1) / rows;
  k_attention<T, RW, DC, EC>
      <<<(unsigned)(qt * a->d0 * a->d1), ATT_WARPS * 32, 0, st>>>(
          q, k, v, scale, bias, y, *a, qt);
  return cudaGetLastError();
}

template <typename T, int RW, int DC>
cudaError_t launch_e(cudaStream_t st, const T *q, const T *k, const T *v,
                     const T *scale, const T *bias, T *y, const cxk_att *a) {
  if (a->e <= 32)
    return launch<T, RW, DC, 32>(st, q, k, v, scale, bias, y, a);
  if (a->e <= 64)
    return launch<T, RW, DC, 64>(st, q, k, v, scale, bias, y, a);
  return launch<T, RW, DC, 128>(st, q, k, v, scale, bias, y, a);
}

template <typename T, int RW>
cudaError_t launch_d(cudaStream_t st, const T *q, const T *k, const T *v,
                     const T *scale, const T *bias, T *y, const cxk_att *a) {
  if (a->d <= 32)
    return launch_e<T, RW, 32>(st, q, k, v, scale, bias, y, a);
  if (a->d <= 64)
    return launch_e<T, RW, 64>(st, q, k, v, scale, bias, y, a);
  return launch_e<T, RW, 128>(st, q, k, v, scale, bias, y, a);
}

/* ---- tensor cores (TF32), keys up to ATT_TC_T --------------------------
 *
 * At batch 1 the work is small and the kernel latency-bound: what counts
 * is how many warps share it. A block takes 16 query rows of one batch and
 * ATT_TC_W warps, warp w the keys 16 w .. 16 w + 15: it stages them (k and
 * v rows, float4 loads where contiguous and aligned), computes its 16 x 16
 * scores with WMMA (TF32 16 x 16 x 8 tiles, fp32 sums), each row's maximum
 * and sum of exponentials over its keys, and its partial 16 x e outputs
 * (the unnormalised probabilities times v, WMMA). The block then combines
 * the warps' partials, each weighted by exp(its maximum - the row's) over
 * the row's total (exact expf), and stores y through its strides.
 */
namespace wm = nvcuda::wmma;

const int ATT_TC_W = 8;             /* warps a block */
const int ATT_TC_T = 16 * ATT_TC_W; /* most keys */

/* Stages 16 x cols of src (element (r, c) at src[r * sr + c * sc]) into
 * dst[r * lds + c] with the threads tid of nth, zeros outside rows_in x
 * cols_in; COLS a compile-time bound of cols (a power of two), vec: float4
 * along c (sc == 1, aligned; float32 only: half elements are loaded one by
 * one, as floats). */
template <int COLS, typename T>
__device__ void stage16(float *dst, int lds, const T *src, int64_t sr,
                        int64_t sc, int rows_in, int cols_in, bool vec, int tid,
                        int nth) {
  if (vec && sizeof(T) == sizeof(float)) {
    for (int i = tid; i < 16 * COLS / 4; i += nth) {
      int r = i / (COLS / 4), c = i % (COLS / 4) * 4;
      float4 x = r < rows_in && c < cols_in
                     ? *(const float4 *)((const float *)src + r * sr + c)
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      *(float4 *)(dst + r * lds + c) = x;
    }
    return;
  }
  for (int i = tid; i < 16 * COLS; i += nth) {
    int r = i / COLS, c = i % COLS;
    dst[r * lds + c] =
        r < rows_in && c < cols_in ? ld(src[r * sr + c * sc]) : 0.0f;
  }
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
template <typename F> __device__ void to_tf32(F &f) {
#pragma unroll
  for (int i = 0; i < f.num_elements; i++)
    f.x[i] = wm::__float_to_tf32(f.x[i]);
}
#endif

/* Shared memory: q [16][DC + 4]; per warp its k rows [16][DC + 4] (then
 * its partial outputs [16][EC + 4], in place), v rows [16][EC + 4], scores
 * [16][20]; per warp and row its maximum and sum; the combine weights. */
template <int DC, int EC> struct tc_smem {
  static const int LQ = DC + 4, LV = EC + 4, LS = 20;
  static const int LK = (DC > EC ? DC : EC) + 4;
  static const int WARP = 16 * LK + 16 * LV + 16 * LS;
  static const int TOTAL = 16 * LQ + ATT_TC_W * WARP + 3 * ATT_TC_W * 16;
};

/* vec bits: 1 q, 2 k, 4 v staged with float4 loads. */
template <typename Elt, int DC, int EC>
__global__ void __launch_bounds__(ATT_TC_W * 32)
    k_attention_tc(const Elt *__restrict__ q, const Elt *__restrict__ k,
                   const Elt *__restrict__ v, const Elt *__restrict__ scale,
                   const Elt *__restrict__ bias, Elt *__restrict__ y, cxk_att a,
                   int64_t qtiles, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap(); /* TF32 WMMA: sm_80 on (the executor runs it on sm_90) */
#else
  typedef tc_smem<DC, EC> L;
  extern __shared__ __align__(128) float sm[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  float *qs = sm, *kw = qs + 16 * L::LQ + w * L::WARP;
  float *vw = kw + 16 * L::LK, *sw = vw + 16 * L::LV;
  float *mx = sm + 16 * L::LQ + ATT_TC_W * L::WARP, *sum = mx + ATT_TC_W * 16;
  float *wt = sum + ATT_TC_W * 16;
  const int T = (int)a.t, D = (int)a.d, E = (int)a.e;
  int64_t bx = blockIdx.x, bh = bx / qtiles, q0 = (bx % qtiles) * 16;
  att_to_head(a, bh, q, k, v, bias, y);
  int j0 = 16 * w; /* this warp's first key */
  q += q0 * a.st[0][2];
  k += j0 * a.st[1][3];
  v += j0 * a.st[2][2];
  if (bias)
    bias += q0 * a.bst[2] + j0 * a.bst[3];
  int qin = (int)(a.s - q0 < 16 ? a.s - q0 : 16), kin = T - j0;
  stage16<DC>(qs, L::LQ, q, a.st[0][2], a.st[0][3], qin, D, vec & 1,
              threadIdx.x, ATT_TC_W * 32);
  /* k's rows (keys) along st[1][3], its columns along st[1][2] */
  stage16<DC>(kw, L::LK, k, a.st[1][3], a.st[1][2], kin, D, vec & 2, lane, 32);
  stage16<EC>(vw, L::LV, v, a.st[2][2], a.st[2][3], kin, E, vec & 4, lane, 32);
  __syncthreads();
  {
    wm::fragment<wm::accumulator, 16, 16, 8, float> c;
    wm::fill_fragment(c, 0.0f);
#pragma unroll
    for (int kk = 0; kk < DC / 8; kk++) {
      wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wm::row_major>
          fa;
      wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wm::col_major>
          fb;
      wm::load_matrix_sync(fa, qs + kk * 8, L::LQ);
      wm::load_matrix_sync(fb, kw + kk * 8, L::LK);
      to_tf32(fa), to_tf32(fb);
      wm::mma_sync(c, fa, fb, c);
    }
    wm::store_matrix_sync(sw, c, L::LS, wm::mem_row_major);
  }
  __syncwarp();
  { /* two lanes a row, eight keys each */
    const float sc = scale ? ld(*scale) : 1.0f;
    int r = lane >> 1, h = (lane & 1) * 8;
    float x[8], m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int u = 0; u < 8; u++) {
      x[u] = h + u < kin ? sw[r * L::LS + h + u] * sc : -INFINITY;
      if (bias && h + u < kin && r < qin)
        x[u] += ld(bias[r * a.bst[2] + (h + u) * a.bst[3]]);
      m = fmaxf(m, x[u]);
    }
    m = group_max<2>(m);
    float mr = m == -INFINITY ? 0.0f : m; /* all this warp's keys masked */
#pragma unroll
    for (int u = 0; u < 8; u++) {
      x[u] = h + u < kin ? expf(x[u] - mr) : 0.0f;
      l += x[u];
      sw[r * L::LS + h + u] = x[u];
    }
    l = group_sum<2>(l);
    if (!h)
      mx[w * 16 + r] = m, sum[w * 16 + r] = l;
  }
  __syncwarp();
  float *ow = kw; /* k is used up */
#pragma unroll
  for (int et = 0; et < EC / 16; et++) {
    wm::fragment<wm::accumulator, 16, 16, 8, float> c;
    wm::fill_fragment(c, 0.0f);
#pragma unroll
    for (int kk = 0; kk < 2; kk++) {
      wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wm::row_major>
          fa;
      wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wm::row_major>
          fb;
      wm::load_matrix_sync(fa, sw + kk * 8, L::LS);
      wm::load_matrix_sync(fb, vw + kk * 8 * L::LV + et * 16, L::LV);
      to_tf32(fa), to_tf32(fb);
      wm::mma_sync(c, fa, fb, c);
    }
    wm::store_matrix_sync(ow + et * 16, c, L::LK, wm::mem_row_major);
  }
  __syncthreads();
  if (threadIdx.x < ATT_TC_W * 16) { /* weight of warp i's partial, row r */
    int i = threadIdx.x / 16, r = threadIdx.x % 16;
    float m = -INFINITY, tot = 0.0f;
    for (int u = 0; u < ATT_TC_W; u++)
      m = fmaxf(m, mx[u * 16 + r]);
    if (m == -INFINITY) { /* every key masked: NaN as softmax, 0 guarded */
      wt[i * 16 + r] = a.guard ? 0.0f : NAN;
    } else {
      for (int u = 0; u < ATT_TC_W; u++)
        tot += sum[u * 16 + r] * expf(mx[u * 16 + r] - m);
      wt[i * 16 + r] = expf(mx[i * 16 + r] - m) / tot;
    }
  }
  __syncthreads();
  const float *o0 = sm + 16 * L::LQ;
  for (int i = threadIdx.x; i < 16 * EC; i += ATT_TC_W * 32) {
    int r = i / EC, col = i % EC;
    if (q0 + r >= a.s || col >= E)
      continue;
    float o = 0.0f;
#pragma unroll
    for (int u = 0; u < ATT_TC_W; u++)
      o = fmaf(o0[u * L::WARP + r * L::LK + col], wt[u * 16 + r], o);
    y[(q0 + r) * a.st[3][2] + col * a.st[3][3]] = st<Elt>(o);
  }
#endif
}

template <typename T, int DC, int EC>
cudaError_t launch_tc(cudaStream_t st, const T *q, const T *k, const T *v,
                      const T *scale, const T *bias, T *y, const cxk_att *a,
                      int vec) {
  size_t smem = sizeof(float) * (size_t)tc_smem<DC, EC>::TOTAL;
  static int set; /* once an instantiation (setting it twice is harmless) */
  if (!set) {
    cudaError_t e = cudaFuncSetAttribute(
        k_attention_tc<T, DC, EC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)smem);
    if (e != cudaSuccess)
      return e;
    set = 1;
  }
  int64_t qt = (a->s + 15) / 16;
  k_attention_tc<T, DC, EC>
      <<<(unsigned)(qt * a->d0 * a->d1), ATT_TC_W * 32, smem, st>>>(
          q, k, v, scale, bias, y, *a, qt, vec);
  return cudaGetLastError();
}

template <typename T, int DC>
cudaError_t launch_tc_e(cudaStream_t st, const T *q, const T *k, const T *v,
                        const T *scale, const T *bias, T *y, const cxk_att *a,
                        int vec) {
  if (a->e <= 32)
    return launch_tc<T, DC, 32>(st, q, k, v, scale, bias, y, a, vec);
  if (a->e <= 64)
    return launch_tc<T, DC, 64>(st, q, k, v, scale, bias, y, a, vec);
  return launch_tc<T, DC, 128>(st, q, k, v, scale, bias, y, a, vec);
}

/* Whether x's rows (stride sr, columns along sc; batch strides st[0],
 * st[1]) load as float4 in every batch. */
bool rows_vec(const float *x, const int64_t *st, int64_t sr, int64_t sc,
              int64_t cols) {
  return sc == 1 && sr % 4 == 0 && st[0] % 4 == 0 && st[1] % 4 == 0 &&
         cols % 4 == 0 && aligned16(x);
}

/* cxk_attention on operands of element type T. */
template <typename T>
cudaError_t attention_t(cudaStream_t st, const void *q0, const void *k0,
                        const void *v0, const void *scale0, const void *bias0,
                        void *y0, const cxk_att *a, int rw) {
  const T *q = (const T *)q0, *k = (const T *)k0, *v = (const T *)v0;
  const T *scale = (const T *)scale0, *bias = (const T *)bias0;
  T *y = (T *)y0;
  if (rw == 0) { /* tensor cores */
    if (a->t > ATT_TC_T)
      return cudaErrorInvalidValue;
    int vec = 0; /* float4 staging: float32 only */
    if (sizeof(T) == sizeof(float))
      vec =
          rows_vec((const float *)q, a->st[0], a->st[0][2], a->st[0][3], a->d) |
          rows_vec((const float *)k, a->st[1], a->st[1][3], a->st[1][2], a->d)
              << 1 |
          rows_vec((const float *)v, a->st[2], a->st[2][2], a->st[2][3], a->e)
              << 2;
    return a->d <= 32 ? launch_tc_e<T, 32>(st, q, k, v, scale, bias, y, a, vec)
           : a->d <= 64
               ? launch_tc_e<T, 64>(st, q, k, v, scale, bias, y, a, vec)
               : launch_tc_e<T, 128>(st, q, k, v, scale, bias, y, a, vec);
  }
  /* two rows a warp: four served only large batches, where the split form
     is faster anyway, at twice the instantiations (build time) */
  return launch_d<T, 2>(st, q, k, v, scale, bias, y, a);
}

} // namespace

/* The bias of one score row (NULL: none) and its column stride. */
struct att_brow {
  const float *b;
  int64_t cs;
};

/* One row of softmax(s * x + b) in place, by a warp: N > 0 keeps it in
 * registers, N floats a lane (one read, one write), N == 0 reads it three
 * times (any length). A row all -inf: NaN as softmax gives, or 0 (guard). */
template <int N>
__device__ void scaled_softmax_row(float *r, int64_t len, float sc, att_brow b,
                                   int guard, int lane) {
  float mx = -INFINITY, sum = 0.0f;
  if (N > 0) {
    float v[N > 0 ? N : 1];
#pragma unroll
    for (int u = 0; u < N; u++) {
      int64_t i = lane + 32 * u;
      v[u] = i < len ? r[i] * sc : -INFINITY;
      if (b.b && i < len)
        v[u] += b.b[i * b.cs];
      mx = fmaxf(mx, v[u]);
    }
    mx = warp_max(mx);
    if (guard && mx == -INFINITY)
      mx = INFINITY; /* every e 0: the row 0 below */
#pragma unroll
    for (int u = 0; u < N; u++) {
      v[u] = lane + 32 * u < len ? expf(v[u] - mx) : 0.0f;
      sum += v[u];
    }
    sum = warp_sum(sum);
    float inv = guard && sum == 0.0f ? 0.0f : 1.0f / sum;
#pragma unroll
    for (int u = 0; u < N; u++)
      if (lane + 32 * u < len)
        r[lane + 32 * u] = v[u] * inv;
  } else {
    for (int64_t i = lane; i < len; i += 32)
      mx = fmaxf(mx, r[i] * sc + (b.b ? b.b[i * b.cs] : 0.0f));
    mx = warp_max(mx);
    if (guard && mx == -INFINITY)
      mx = INFINITY;
    for (int64_t i = lane; i < len; i += 32) {
      float e = expf(r[i] * sc + (b.b ? b.b[i * b.cs] : 0.0f) - mx);
      r[i] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    float inv = guard && sum == 0.0f ? 0.0f : 1.0f / sum;
    for (int64_t i = lane; i < len; i += 32)
      r[i] *= inv;
  }
}

/* softmax(s * x + b) in place, a warp a row, grid-stride over the rows
 * (row r: row r % a.s of batch r / a.s, for the bias). */
template <int N>
__global__ void k_scaled_softmax(float *x, int64_t rows, int64_t len,
                                 const float *scale, const float *bias,
                                 cxk_att a, int guard) {
  const float sc = scale ? *scale : 1.0f;
  int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
       row < rows; row += warps) {
    att_brow b = {NULL, 0};
    if (bias) {
      int64_t bh = row / a.s, i = row % a.s;
      b.b = bias + att_head_off(a, 4, bh) + i * a.bst[2];
      b.cs = a.bst[3];
    }
    scaled_softmax_row<N>(x + row * len, len, sc, b, guard, threadIdx.x & 31);
  }
}

cudaError_t cxk_scaled_softmax(cudaStream_t st, float *x, int64_t rows,
                               int64_t len, const float *scale,
                               const float *bias, const cxk_att *a) {
  if (rows <= 0)
    return cudaSuccess;
  cxk_att z;
  memset(&z, 0, sizeof z);
  z.s = z.d1 = 1;
  const cxk_att &aa = a ? *a : z;
  int guard = a ? (int)a->guard : 0;
  if (!a)
    bias = NULL;
  unsigned nb = blocks_for(rows * 32);
  if (len <= 128)
    k_scaled_softmax<4>
        <<<nb, kThreads, 0, st>>>(x, rows, len, scale, bias, aa, guard);
  else if (len <= 512)
    k_scaled_softmax<16>
        <<<nb, kThreads, 0, st>>>(x, rows, len, scale, bias, aa, guard);
  else
    k_scaled_softmax<0>
        <<<nb, kThreads, 0, st>>>(x, rows, len, scale, bias, aa, guard);
  return cudaGetLastError();
}

int cxk_attention_tc_t(void) { return ATT_TC_T; }

int cxk_attention_ok(const cxk_att *a) {
  return a->d >= 1 && a->d <= CXK_ATT_MAX_DIM && a->e >= 1 &&
         a->e <= CXK_ATT_MAX_DIM && a->s >= 1 && a->t >= 1 && a->d0 >= 1 &&
         a->d1 >= 1 && (a->s + 7) / 8 * a->d0 * a->d1 < ((int64_t)1 << 31);
}

cudaError_t cxk_attention(cudaStream_t st, const void *q, const void *k,
                          const void *v, const void *scale, const void *bias,
                          void *y, const cxk_att *a, int rw) {
  if (!cxk_attention_ok(a))
    return cudaErrorInvalidValue;
  if (a->dt == CXK_F16)
    return attention_t<__half>(st, q, k, v, scale, bias, y, a, rw);
  if (a->dt == CXK_BF16)
    return attention_t<__nv_bfloat16>(st, q, k, v, scale, bias, y, a, rw);
  return attention_t<float>(st, q, k, v, scale, bias, y, a, rw);
}
