/* kflash.cu: attention, softmax(s * q k + b) v, flash-attention style on
 * TF32 tensor cores, for float32 tensors (the third form of run/att.c).
 *
 * At batch 16 the attention nodes of ViT, BERT and Swin ran split (cuBLAS's
 * batched GEMMs and a softmax kernel, the scores through memory) at 2-6x
 * their memory and FLOP bound: katt.cu's kernels spread one 16-row query
 * tile over 8 warps (good at batch 1) or use plain FMAs. Here a block of
 * FL_WARPS warps takes FL_ROWS (64) query rows of one (d0, d1) head, warp
 * w the rows 16 w .. 16 w + 15, and streams the keys in tiles of KT (64,
 * or 32 where d or e is 128) through shared memory: k's and v's rows of
 * the next tile are copied by cp.async while the block computes on the
 * current one (two stages). A warp computes its 16 x KT scores with
 * mma.sync m16n8k8 (TF32 operands rounded to nearest, float32 sums), the
 * scale and the bias applied in the log2 domain, an online softmax per row
 * (the running maximum and sum; earlier outputs rescaled when the maximum
 * grows), and the product of the probabilities with v (mma.sync again),
 * the outputs staying in registers until the last tile.
 *
 * Fragments (PTX ISA, m16n8k8 .tf32; g = lane / 4, t = lane % 4): A holds
 * (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); B (k, n) = (t, g) and
 * (t + 4, g); C (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1). A sum
 * over k does not depend on the order of k, so each product numbers its k
 * to suit float4 loads:
 * - scores: k-steps 2u and 2u + 1 take d = 16u + 4t .. 16u + 4t + 3 (lane's
 *   b0, b1 of step 2u, then of 2u + 1, one float4 of its key's row of k);
 *   q's fragments (loaded once) follow the same numbering.
 * - p v: the scores' C fragment of keys 8j .. 8j + 7 is the A fragment of
 *   key step j with k index t meaning key 8j + 2t and t + 4 key 8j + 2t + 1
 *   (no shuffles); v's B fragment then reads rows 8j + 2t and 8j + 2t + 1.
 *   Output n-tile 4p + c takes column n as e = 32p + 4n + c, so a lane
 *   reads one float4 of each of the two rows for four n-tiles and holds
 *   e = 32p + 8t .. 32p + 8t + 7 of its rows at the end (two float4 stores).
 * Shared memory pitches (floats): q and k rows DC + 16, v rows EC + 4, so
 * that the float4 loads of a quarter warp (lanes g = 0, 1; t = 0..3) hit
 * eight different 16-byte bank groups: k's rows g differ by 16 banks, v's
 * rows 2t by 8. k and v are rounded to TF32 once in shared memory, each
 * thread rounding the elements it copied (its own cp.async are complete
 * after cp.async.wait_group, before the barrier that publishes them).
 *
 * Edges: rows past s and keys past t are zeros in shared memory (never
 * NaN * 0), scores of keys past t are -inf and their key steps skipped; a
 * maximum still -inf (every key so far masked) is replaced by 0 so that
 * -inf - -inf gives no NaN, and a row masked everywhere gives NaN as
 * softmax does, or 0 with the guard.
 */
#include <math.h>
#include <stdint.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

const int FL_WARPS = 4;            /* warps a block, 16 query rows each */
const int FL_ROWS = 16 * FL_WARPS; /* query rows a block */
const int FL_THREADS = FL_WARPS * 32;

/* Shared memory of k_flash<DC, EC> in floats: two stages of k [KT][LK] and
 * v [KT][LV]; q [FL_ROWS][LK] staged once at the second stage (BUF), read
 * into registers before that stage is first filled (and running past it
 * where it is larger). */
template <int DC, int EC> struct fl_smem {
  static const int KT = DC + EC <= 128 ? 64 : 32; /* keys a tile */
  static const int LK = DC + 16, LV = EC + 4;
  static const int BUF = KT * LK + KT * LV; /* one stage */
  static const int QSZ = FL_ROWS * LK;
  static const int TOTAL = BUF + (QSZ > BUF ? QSZ : BUF);
};

/* A tile's source: element (r, c) at p[r * rs + c * cs], rows x cols of
 * them real (zeros elsewhere); vec: 16-byte copies along c (cs == 1, rs,
 * the batch strides and cols multiples of 4, p aligned). */
struct fl_src {
  const float *p;
  int64_t rs, cs;
  int rows, cols;
  bool vec;
};

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ float fl_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

__device__ __forceinline__ void fl_cp16(float *dst, const float *src) {
  unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src)
               : "memory");
}

__device__ __forceinline__ void fl_cp4(float *dst, const float *src) {
  unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src)
               : "memory");
}

__device__ __forceinline__ void fl_commit(void) {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

/* Until at most N of this thread's committed groups are in flight. */
template <int N> __device__ __forceinline__ void fl_wait(void) {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* c += a b, m16n8k8, TF32 operands (already rounded), float32 sums. */
__device__ __forceinline__ void fl_mma(float c[4], const uint32_t a[4],
                                       float b0, float b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(__float_as_uint(b0)),
        "r"(__float_as_uint(b1)));
}

/* A ROWS x COLS tile of s into dst[r * ld + c] by the block's threads:
 * CONV false issues the copies (cp.async; zeros stored outside s's rows
 * and cols), CONV true rounds to TF32 in place the elements this thread
 * copied (its copies complete). Scalar copies go along c unless only r is
 * contiguous (k read [d, t]: keys along the contiguous axis). */
template <int ROWS, int COLS, bool CONV>
__device__ __forceinline__ void fl_stage(float *dst, int ld, const fl_src &s) {
  const int tid = threadIdx.x;
  if (s.vec) {
    constexpr int CH = COLS / 4, N = ROWS * CH / FL_THREADS;
    static_assert(ROWS * CH % FL_THREADS == 0, "whole rounds of chunks");
#pragma unroll
    for (int u = 0; u < N; u++) {
      int i = tid + u * FL_THREADS, r = i / CH, c = i % CH * 4;
      float4 *d = (float4 *)(dst + r * ld + c);
      if (CONV) {
        float4 x = *d;
        *d =
            make_float4(fl_tf32(x.x), fl_tf32(x.y), fl_tf32(x.z), fl_tf32(x.w));
      } else if (r < s.rows && c < s.cols) {
        fl_cp16((float *)d, s.p + r * s.rs + c);
      } else {
        *d = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
    return;
  }
  constexpr int N = ROWS * COLS / FL_THREADS;
  static_assert(ROWS * COLS % FL_THREADS == 0, "whole rounds of elements");
  const bool rfast = s.rs == 1 && s.cs != 1;
#pragma unroll 4
  for (int u = 0; u < N; u++) {
    int i = tid + u * FL_THREADS;
    int r = rfast ? i % ROWS : i / COLS, c = rfast ? i / ROWS : i % COLS;
    float *d = dst + r * ld + c;
    if (CONV)
      *d = fl_tf32(*d);
    else if (r < s.rows && c < s.cols)
      fl_cp4(d, s.p + r * s.rs + c * s.cs);
    else
      *d = 0.0f;
  }
}

/* Key tile it of k and v (fl_stage, CONV as there) into a stage at buf:
 * k's rows (keys) along st[1][3], its columns along st[1][2]; v's rows
 * along st[2][2]. */
template <int DC, int EC, bool CONV>
__device__ __forceinline__ void fl_stage_kv(float *buf, const float *k,
                                            const float *v, const cxk_att &a,
                                            int it, int vec) {
  typedef fl_smem<DC, EC> L;
  const int64_t kt0 = (int64_t)it * L::KT;
  const int kin = a.t - kt0 < L::KT ? (int)(a.t - kt0) : L::KT;
  fl_src sk = {k + kt0 * a.st[1][3], a.st[1][3], a.st[1][2], kin, (int)a.d,
               (vec & 2) != 0};
  fl_src sv = {v + kt0 * a.st[2][2], a.st[2][2], a.st[2][3], kin, (int)a.e,
               (vec & 4) != 0};
  fl_stage<L::KT, DC, CONV>(buf, L::LK, sk);
  fl_stage<L::KT, EC, CONV>(buf + L::KT * L::LK, L::LV, sv);
}
#endif

/* vec bits: 1 q, 2 k, 4 v read with 16-byte copies, 8 y written with
 * float4 stores. */
template <int DC, int EC>
__global__ void __launch_bounds__(FL_THREADS)
    k_flash(const float *__restrict__ q, const float *__restrict__ k,
            const float *__restrict__ v, const float *__restrict__ scale,
            const float *__restrict__ bias, float *__restrict__ y, cxk_att a,
            int64_t qtiles, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap(); /* cp.async and TF32 mma: sm_80 on (run/att.c checks) */
#else
  typedef fl_smem<DC, EC> L;
  constexpr float LOG2E = 1.4426950408889634f;
  constexpr int KT = L::KT, NT = KT / 8, DU = DC / 16, EP = EC / 32;
  extern __shared__ __align__(16) float sm[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int g = lane >> 2, tq = lane & 3;
  const int T = (int)a.t, D = (int)a.d, E = (int)a.e;
  const int64_t bh = blockIdx.x / qtiles, q0 = blockIdx.x % qtiles * FL_ROWS;
  att_to_head(a, bh, q, k, v, bias, y);
  {
    const int qin = a.s - q0 < FL_ROWS ? (int)(a.s - q0) : FL_ROWS;
    fl_src sq = {q + q0 * a.st[0][2], a.st[0][2], a.st[0][3], qin, D,
                 (vec & 1) != 0};
    fl_stage<FL_ROWS, DC, false>(sm + L::BUF, L::LK, sq);
    fl_stage_kv<DC, EC, false>(sm, k, v, a, 0, vec);
    fl_commit();
    fl_wait<0>();
    __syncthreads();
  }
  /* q's A fragments (the numbering above), rounded once */
  uint32_t qa[DC / 8][4];
  {
    const float *qr = sm + L::BUF + (16 * w + g) * L::LK + 4 * tq;
#pragma unroll
    for (int u = 0; u < DU; u++) {
      float4 x0 = *(const float4 *)(qr + 16 * u);
      float4 x1 = *(const float4 *)(qr + 8 * L::LK + 16 * u);
      qa[2 * u][0] = __float_as_uint(fl_tf32(x0.x));
      qa[2 * u][1] = __float_as_uint(fl_tf32(x1.x));
      qa[2 * u][2] = __float_as_uint(fl_tf32(x0.y));
      qa[2 * u][3] = __float_as_uint(fl_tf32(x1.y));
      qa[2 * u + 1][0] = __float_as_uint(fl_tf32(x0.z));
      qa[2 * u + 1][1] = __float_as_uint(fl_tf32(x1.z));
      qa[2 * u + 1][2] = __float_as_uint(fl_tf32(x0.w));
      qa[2 * u + 1][3] = __float_as_uint(fl_tf32(x1.w));
    }
  }
  __syncthreads(); /* q's space is the second stage's */
  const float sc2 = (scale ? *scale : 1.0f) * LOG2E;
  const int64_t row0 = q0 + 16 * w + g; /* this lane's rows: row0, row0 + 8 */
  const bool live = q0 + 16 * w < a.s;  /* the warp has a row to compute */
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float acc[EC / 8][4];
#pragma unroll
  for (int i = 0; i < EC / 8; i++)
    acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
  const int ntiles = (T + KT - 1) / KT;
  for (int it = 0; it < ntiles; it++) {
    float *ks = sm + (it & 1) * L::BUF, *vs = ks + KT * L::LK;
    if (it + 1 < ntiles) {
      fl_stage_kv<DC, EC, false>(sm + ((it + 1) & 1) * L::BUF, k, v, a, it + 1,
                                 vec);
      fl_commit();
      fl_wait<1>(); /* this tile's copies done, the next one's in flight */
    } else {
      fl_wait<0>();
    }
    fl_stage_kv<DC, EC, true>(ks, k, v, a, it, vec);
    __syncthreads();
    const int64_t kt0 = (int64_t)it * KT;
    const int kin = T - kt0 < KT ? (int)(T - kt0) : KT;
    if (live) {
      float bv[NT][4]; /* the bias, loaded before the products */
      if (bias) {
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
          for (int c = 0; c < 4; c++) {
            int key = 8 * j + 2 * tq + (c & 1);
            int64_t row = row0 + 8 * (c >> 1);
            bv[j][c] = key < kin && row < a.s
                           ? bias[row * a.bst[2] + (kt0 + key) * a.bst[3]]
                           : 0.0f;
          }
      }
      float s[NT][4];
#pragma unroll
      for (int j = 0; j < NT; j++) {
        s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
        if (8 * j < kin) {
          const float *kr = ks + (8 * j + g) * L::LK + 4 * tq;
#pragma unroll
          for (int u = 0; u < DU; u++) {
            float4 x = *(const float4 *)(kr + 16 * u);
            fl_mma(s[j], qa[2 * u], x.x, x.y);
            fl_mma(s[j], qa[2 * u + 1], x.z, x.w);
          }
        }
      }
      /* the scores in the log2 domain, -inf past t; each row's maximum
       * over its four lanes */
      float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < NT; j++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
          float x = -INFINITY;
          if (8 * j + 2 * tq + (c & 1) < kin)
            x = bias ? fmaf(bv[j][c], LOG2E, s[j][c] * sc2) : s[j][c] * sc2;
          s[j][c] = x;
          mt[c >> 1] = fmaxf(mt[c >> 1], x);
        }
      float mr[2], corr[2];
#pragma unroll
      for (int h = 0; h < 2; h++) {
        float mn = fmaxf(m[h], group_max<4>(mt[h]));
        mr[h] = mn == -INFINITY ? 0.0f : mn; /* no -inf - -inf */
        corr[h] = exp2f(m[h] - mr[h]);       /* 0 on the first keys */
        m[h] = mn;
        l[h] *= corr[h];
      }
#pragma unroll
      for (int j = 0; j < NT; j++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
          float p = exp2f(s[j][c] - mr[c >> 1]);
          s[j][c] = p;
          l[c >> 1] += p;
        }
#pragma unroll
      for (int i = 0; i < EC / 8; i++)
        acc[i][0] *= corr[0], acc[i][1] *= corr[0], acc[i][2] *= corr[1],
            acc[i][3] *= corr[1];
#pragma unroll
      for (int j = 0; j < NT; j++) {
        if (8 * j >= kin)
          continue; /* every p of the step 0 */
        uint32_t pa[4] = {__float_as_uint(fl_tf32(s[j][0])),
                          __float_as_uint(fl_tf32(s[j][2])),
                          __float_as_uint(fl_tf32(s[j][1])),
                          __float_as_uint(fl_tf32(s[j][3]))};
        const float *v0 = vs + (8 * j + 2 * tq) * L::LV + 4 * g;
#pragma unroll
        for (int p = 0; p < EP; p++) {
          float4 x0 = *(const float4 *)(v0 + 32 * p);
          float4 x1 = *(const float4 *)(v0 + L::LV + 32 * p);
          fl_mma(acc[4 * p + 0], pa, x0.x, x1.x);
          fl_mma(acc[4 * p + 1], pa, x0.y, x1.y);
          fl_mma(acc[4 * p + 2], pa, x0.z, x1.z);
          fl_mma(acc[4 * p + 3], pa, x0.w, x1.w);
        }
      }
    }
    __syncthreads(); /* the stage is used up: the next round refills it */
  }
  if (!live)
    return;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    int64_t row = row0 + 8 * h;
    float lt = group_sum<4>(l[h]);
    if (row >= a.s)
      continue;
    /* l == 0: every key masked, NaN as softmax gives, 0 with the guard */
    float inv = lt > 0.0f ? 1.0f / lt : a.guard ? 0.0f : NAN;
    float *yr = y + row * a.st[3][2];
#pragma unroll
    for (int p = 0; p < EP; p++) {
      int e0 = 32 * p + 8 * tq; /* e0 .. e0 + 3, then e0 + 4 .. e0 + 7 */
      float lo[4], hi[4];
#pragma unroll
      for (int c = 0; c < 4; c++)
        lo[c] = acc[4 * p + c][2 * h] * inv,
        hi[c] = acc[4 * p + c][2 * h + 1] * inv;
      if (vec & 8) {
        if (e0 < E)
          *(float4 *)(yr + e0) = make_float4(lo[0], lo[1], lo[2], lo[3]);
        if (e0 + 4 < E)
          *(float4 *)(yr + e0 + 4) = make_float4(hi[0], hi[1], hi[2], hi[3]);
        continue;
      }
#pragma unroll
      for (int c = 0; c < 4; c++) {
        if (e0 + c < E)
          yr[(e0 + c) * a.st[3][3]] = lo[c];
        if (e0 + 4 + c < E)
          yr[(e0 + 4 + c) * a.st[3][3]] = hi[c];
      }
    }
  }
#endif
}

template <int DC, int EC>
cudaError_t fl_launch(cudaStream_t st, const float *q, const float *k,
                      const float *v, const float *scale, const float *bias,
                      float *y, const cxk_att *a, int vec) {
  size_t smem = sizeof(float) * (size_t)fl_smem<DC, EC>::TOTAL;
  static int set; /* once an instantiation (setting it twice is harmless) */
  if (!set) {
    cudaError_t e = cudaFuncSetAttribute(
        k_flash<DC, EC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)smem);
    if (e != cudaSuccess)
      return e;
    set = 1;
  }
  int64_t qt = (a->s + FL_ROWS - 1) / FL_ROWS;
  k_flash<DC, EC><<<(unsigned)(qt * a->d0 * a->d1), FL_THREADS, smem, st>>>(
      q, k, v, scale, bias, y, *a, qt, vec);
  return cudaGetLastError();
}

template <int DC>
cudaError_t fl_launch_e(cudaStream_t st, const float *q, const float *k,
                        const float *v, const float *scale, const float *bias,
                        float *y, const cxk_att *a, int vec) {
  if (a->e <= 32)
    return fl_launch<DC, 32>(st, q, k, v, scale, bias, y, a, vec);
  if (a->e <= 64)
    return fl_launch<DC, 64>(st, q, k, v, scale, bias, y, a, vec);
  return fl_launch<DC, 128>(st, q, k, v, scale, bias, y, a, vec);
}

/* Whether x's rows (stride rs, columns along cs; batch strides st[0],
 * st[1]) copy as 16-byte chunks in every batch (katt.cu's rows_vec). */
bool fl_vec(const float *x, const int64_t *st, int64_t rs, int64_t cs,
            int64_t cols) {
  return cs == 1 && rs % 4 == 0 && st[0] % 4 == 0 && st[1] % 4 == 0 &&
         cols % 4 == 0 && aligned16(x);
}

} // namespace

int cxk_flash_runs_here(void) {
  cudaFuncAttributes fa;
  if (cudaFuncGetAttributes(&fa, k_flash<32, 32>) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return fa.ptxVersion >= 80; /* every instantiation: the same targets */
}

int cxk_flash_ok(const cxk_att *a) {
  return cxk_attention_ok(a) && a->t < ((int64_t)1 << 30) &&
         a->s < ((int64_t)1 << 30);
}

cudaError_t cxk_flash(cudaStream_t st, const float *q, const float *k,
                      const float *v, const float *scale, const float *bias,
                      float *y, const cxk_att *a) {
  if (!cxk_flash_ok(a))
    return cudaErrorInvalidValue;
  int vec = fl_vec(q, a->st[0], a->st[0][2], a->st[0][3], a->d) |
            fl_vec(k, a->st[1], a->st[1][3], a->st[1][2], a->d) << 1 |
            fl_vec(v, a->st[2], a->st[2][2], a->st[2][3], a->e) << 2 |
            fl_vec(y, a->st[3], a->st[3][2], a->st[3][3], a->e) << 3;
  return a->d <= 32   ? fl_launch_e<32>(st, q, k, v, scale, bias, y, a, vec)
         : a->d <= 64 ? fl_launch_e<64>(st, q, k, v, scale, bias, y, a, vec)
                      : fl_launch_e<128>(st, q, k, v, scale, bias, y, a, vec);
}
