/* kflash.cu: attention, softmax(s * q k + b) v, flash-attention style on
 * tensor cores (the third form of run/att.c): TF32 for float32 tensors
 * (k_flash), f16 or bf16 operands for half ones (k_flash_h, further down:
 * the same plan on m16n8k16), float32 sums and softmax in both.
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
 * rows 2t by 8. q is rounded to TF32 once (cvt.rna, into registers); k,
 * v and the probabilities as each mma reads them (fl_rn: one integer add
 * giving cvt.rna's value, no pass over shared memory).
 *
 * Occupancy (ptxas -v, sm_90; FL_WARPS 4): __launch_bounds__ asks for
 * fl_smem::MINB blocks an SM, 3 for d + e <= 128 (168 registers at most:
 * d = e = 64 uses 166, no spills, 12 warps an SM; it used 209 and held 2
 * blocks, 8 warps, before), 4 for d = e = 32 (127 registers, 16 warps;
 * was 150, 3 blocks). Shared memory: 74 KB a block for d = e = 64 (three
 * fit in 228 KB with the carveout at its maximum), 42 KB for 32.
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
  /* blocks an SM is to hold (registers capped at 64K / (128 MINB)) */
  static const int MINB = DC + EC <= 64 ? 4 : DC + EC <= 128 ? 3 : 1;
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

__device__ __forceinline__ void fl_cp16(void *dst, const void *src) {
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

/* x as a TF32 operand rounded to nearest, ties away (cvt.rna's value) in
 * one integer add: half a TF32 unit added to the bits carries into the
 * kept 19 when the 13 dropped ones are at least half; the tensor cores
 * read the top 19 bits of a .tf32 register and ignore the rest (CUTLASS's
 * round_half_ulp_truncate feeds them the same). Infinities and NaN stay
 * so; the largest floats round to infinity, as cvt.rna does. */
__device__ __forceinline__ uint32_t fl_rn(float x) {
  return __float_as_uint(x) + 0x1000u;
}

/* 2^x (ex2.approx.ftz: results below 2^-126 are 0, nothing a probability
 * summed with the row maximum's 1 misses; exp2f's subnormal fix-up is not
 * needed). */
__device__ __forceinline__ float fl_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/* c += a b, m16n8k8, TF32 operands (fl_rn's or rounded), float32 sums. */
__device__ __forceinline__ void fl_mma(float c[4], const uint32_t a[4],
                                       uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* A ROWS x COLS tile of s into dst[r * ld + c] by the block's threads:
 * cp.async copies, zeros stored outside s's rows and cols. Scalar copies
 * go along c unless only r is contiguous (k read [d, t]: keys along the
 * contiguous axis). */
template <int ROWS, int COLS>
__device__ __forceinline__ void fl_stage(float *dst, int ld, const fl_src &s) {
  const int tid = threadIdx.x;
  if (s.vec) {
    constexpr int CH = COLS / 4, N = ROWS * CH / FL_THREADS;
    static_assert(ROWS * CH % FL_THREADS == 0, "whole rounds of chunks");
#pragma unroll
    for (int u = 0; u < N; u++) {
      int i = tid + u * FL_THREADS, r = i / CH, c = i % CH * 4;
      float4 *d = (float4 *)(dst + r * ld + c);
      if (r < s.rows && c < s.cols)
        fl_cp16((float *)d, s.p + r * s.rs + c);
      else
        *d = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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
    if (r < s.rows && c < s.cols)
      fl_cp4(d, s.p + r * s.rs + c * s.cs);
    else
      *d = 0.0f;
  }
}

/* A thread's share of a ROWS x COLS tile of T (rows rs apart) copied 16
 * bytes at a time into dst at pitch LD, zeros past p's first `rows` rows
 * (all ROWS where FULL) and past cols: the addresses worked out once a
 * call (fl_stage's vec form took about 27 instructions a chunk, most of
 * them 64-bit index arithmetic; ncu, 2026-11-29): chunk c0 of rows r0, r0
 * + RPR, ... Nothing kept between calls (registers: the kernels are at
 * their launch bounds' caps). Both kernels (T float, __half or
 * __nv_bfloat16). */
template <typename T, int ROWS, int COLS, int LD, bool FULL>
__device__ __forceinline__ void fl_copy(T *dst, const T *p, int64_t rs,
                                        int rows, int cols) {
  constexpr int EC16 = 16 / (int)sizeof(T); /* elements a chunk */
  constexpr int CH = COLS / EC16, RPR = FL_THREADS / CH, N = ROWS / RPR;
  static_assert(FL_THREADS % CH == 0 && ROWS % RPR == 0, "whole rounds");
  const int c0 = (int)threadIdx.x % CH * EC16, r0 = (int)threadIdx.x / CH;
  const T *s = p + r0 * rs + c0;
  T *d = dst + r0 * LD + c0;
  const int64_t step = RPR * rs;
  const bool cin = c0 < cols;
#pragma unroll
  for (int u = 0; u < N; u++, s += step, d += RPR * LD) {
    if (cin && (FULL || r0 + u * RPR < rows))
      fl_cp16(d, s);
    else
      *(uint4 *)d = make_uint4(0, 0, 0, 0);
  }
}

/* Key tile it of k and v into a stage at buf: fl_copy where the operand
 * takes 16-byte copies (vec bits 2, 4), else fl_stage (keys along
 * st[1][3], k's columns along st[1][2]; v's rows along st[2][2]). */
template <int DC, int EC>
__device__ __forceinline__ void fl_stage_tile(float *buf, const float *k,
                                              const float *v, const cxk_att &a,
                                              int it, int vec) {
  typedef fl_smem<DC, EC> L;
  const int64_t kt0 = (int64_t)it * L::KT;
  const int kin = a.t - kt0 < L::KT ? (int)(a.t - kt0) : L::KT;
  const float *kp = k + kt0 * a.st[1][3], *vp = v + kt0 * a.st[2][2];
  float *kd = buf, *vd = buf + L::KT * L::LK;
  const int D = (int)a.d, E = (int)a.e;
  if (!(vec & 2)) {
    fl_src sk = {kp, a.st[1][3], a.st[1][2], kin, D, false};
    fl_stage<L::KT, DC>(kd, L::LK, sk);
  } else if (kin == L::KT) {
    fl_copy<float, L::KT, DC, L::LK, true>(kd, kp, a.st[1][3], kin, D);
  } else {
    fl_copy<float, L::KT, DC, L::LK, false>(kd, kp, a.st[1][3], kin, D);
  }
  if (!(vec & 4)) {
    fl_src sv = {vp, a.st[2][2], a.st[2][3], kin, E, false};
    fl_stage<L::KT, EC>(vd, L::LV, sv);
  } else if (kin == L::KT) {
    fl_copy<float, L::KT, EC, L::LV, true>(vd, vp, a.st[2][2], kin, E);
  } else {
    fl_copy<float, L::KT, EC, L::LV, false>(vd, vp, a.st[2][2], kin, E);
  }
}

/* A flash kernel's running state: a lane's two rows' maxima and sums
 * (log2 domain) and its EN output fragments (k_flash's and k_flash_h's). */
template <int EN> struct fl_run { float m[2], l[2], acc[EN][4]; };

/* The online softmax over one key tile's scores s (log2 domain, -inf for
 * keys past t; mt: each row's maximum over this lane's keys): the rows'
 * maxima over their four lanes, earlier sums and outputs rescaled when a
 * maximum grows, s replaced by the (unnormalised) probabilities, summed
 * into l. Both kernels' tiles (fl_tile, fh_tile). */
template <int NT, int EN>
__device__ __forceinline__ void fl_online(fl_run<EN> &R, float (&s)[NT][4],
                                          const float mt[2]) {
  float mr[2], corr[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float mn = fmaxf(R.m[h], group_max<4>(mt[h]));
    mr[h] = mn == -INFINITY ? 0.0f : mn; /* no -inf - -inf */
    corr[h] = fl_exp2(R.m[h] - mr[h]);   /* 0 on the first keys */
    R.m[h] = mn;
    R.l[h] *= corr[h];
  }
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int c = 0; c < 4; c++) {
      float p = fl_exp2(s[j][c] - mr[c >> 1]);
      s[j][c] = p;
      R.l[c >> 1] += p;
    }
#pragma unroll
  for (int i = 0; i < EN; i++)
    R.acc[i][0] *= corr[0], R.acc[i][1] *= corr[0], R.acc[i][2] *= corr[1],
        R.acc[i][3] *= corr[1];
}

/* One key tile of k_flash (fh_tile's plan on TF32): kin keys, all KT
 * where FULL (no key checks); bp[h] row h's bias at key 2 tq (keys along
 * b3; NULL: none), float2 pairs where pair (b3 == 1, 8-byte aligned). */
template <int DC, int EC, bool FULL>
__device__ __forceinline__ void
fl_tile(fl_run<EC / 8> &R, const uint32_t (&qa)[DC / 8][4], const float *ks,
        const float *vs, const float *const bp[2], int64_t b3, bool pair,
        int kin, float sc2, int lane) {
  typedef fl_smem<DC, EC> L;
  constexpr float LOG2E = 1.4426950408889634f;
  constexpr int KT = L::KT, NT = KT / 8, DU = DC / 16, EP = EC / 32;
  const int g = lane >> 2, tq = lane & 3;
  float bv[NT][4]; /* the bias, loaded before the products */
  if (bp[0]) {
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
      for (int j = 0; j < NT; j++) {
        const int key = 8 * j + 2 * tq;
        if (FULL && pair) {
          float2 b = *(const float2 *)(bp[h] + 8 * j);
          bv[j][2 * h] = b.x, bv[j][2 * h + 1] = b.y;
        } else {
          const float *p = bp[h] + 8 * j * b3;
          bv[j][2 * h] = FULL || key < kin ? p[0] : 0.0f;
          bv[j][2 * h + 1] = FULL || key + 1 < kin ? p[b3] : 0.0f;
        }
      }
  }
  float s[NT][4];
#pragma unroll
  for (int j = 0; j < NT; j++) {
    s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    if (FULL || 8 * j < kin) {
      const float *kr = ks + (8 * j + g) * L::LK + 4 * tq;
#pragma unroll
      for (int u = 0; u < DU; u++) {
        float4 x = *(const float4 *)(kr + 16 * u);
        fl_mma(s[j], qa[2 * u], fl_rn(x.x), fl_rn(x.y));
        fl_mma(s[j], qa[2 * u + 1], fl_rn(x.z), fl_rn(x.w));
      }
    }
  }
  /* the scores in the log2 domain, -inf past t; each row's maximum over
   * its four lanes */
  float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int c = 0; c < 4; c++) {
      float x = -INFINITY;
      if (FULL || 8 * j + 2 * tq + (c & 1) < kin)
        x = bp[0] ? fmaf(bv[j][c], LOG2E, s[j][c] * sc2) : s[j][c] * sc2;
      s[j][c] = x;
      mt[c >> 1] = fmaxf(mt[c >> 1], x);
    }
  fl_online(R, s, mt);
#pragma unroll
  for (int j = 0; j < NT; j++) {
    if (!FULL && 8 * j >= kin)
      continue; /* every p of the step 0 */
    uint32_t pa[4] = {fl_rn(s[j][0]), fl_rn(s[j][2]), fl_rn(s[j][1]),
                      fl_rn(s[j][3])};
    const float *v0 = vs + (8 * j + 2 * tq) * L::LV + 4 * g;
#pragma unroll
    for (int p = 0; p < EP; p++) {
      float4 x0 = *(const float4 *)(v0 + 32 * p);
      float4 x1 = *(const float4 *)(v0 + L::LV + 32 * p);
      fl_mma(R.acc[4 * p + 0], pa, fl_rn(x0.x), fl_rn(x1.x));
      fl_mma(R.acc[4 * p + 1], pa, fl_rn(x0.y), fl_rn(x1.y));
      fl_mma(R.acc[4 * p + 2], pa, fl_rn(x0.z), fl_rn(x1.z));
      fl_mma(R.acc[4 * p + 3], pa, fl_rn(x0.w), fl_rn(x1.w));
    }
  }
}

#endif

/* vec bits: 1 q, 2 k, 4 v read with 16-byte copies, 8 y written with
 * float4 stores, 16 the bias read in pairs. */
template <int DC, int EC>
__global__ void __launch_bounds__(FL_THREADS, (fl_smem<DC, EC>::MINB))
    k_flash(const float *__restrict__ q, const float *__restrict__ k,
            const float *__restrict__ v, const float *__restrict__ scale,
            const float *__restrict__ bias, float *__restrict__ y, cxk_att a,
            int64_t qtiles, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap(); /* cp.async and TF32 mma: sm_80 on (run/att.c checks) */
#else
  typedef fl_smem<DC, EC> L;
  constexpr float LOG2E = 1.4426950408889634f;
  constexpr int KT = L::KT, DU = DC / 16, EP = EC / 32;
  extern __shared__ __align__(16) float sm[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int g = lane >> 2, tq = lane & 3;
  const int E = (int)a.e;
  /* the grid has fewer than 2^31 blocks: 32-bit divisions */
  const unsigned qt = (unsigned)qtiles, d1 = (unsigned)a.d1;
  const unsigned bh = blockIdx.x / qt, b0 = bh / d1, b1 = bh - b0 * d1;
  const int64_t q0 = (int64_t)(blockIdx.x - bh * qt) * FL_ROWS;
  q += b0 * a.st[0][0] + b1 * a.st[0][1];
  k += b0 * a.st[1][0] + b1 * a.st[1][1];
  v += b0 * a.st[2][0] + b1 * a.st[2][1];
  y += b0 * a.st[3][0] + b1 * a.st[3][1];
  if (bias)
    bias += b0 * a.bst[0] + b1 * a.bst[1];
  {
    const int qin = a.s - q0 < FL_ROWS ? (int)(a.s - q0) : FL_ROWS;
    const float *qp = q + q0 * a.st[0][2];
    if (vec & 1) {
      fl_copy<float, FL_ROWS, DC, L::LK, false>(sm + L::BUF, qp, a.st[0][2],
                                                qin, (int)a.d);
    } else {
      fl_src sq = {qp, a.st[0][2], a.st[0][3], qin, (int)a.d, false};
      fl_stage<FL_ROWS, DC>(sm + L::BUF, L::LK, sq);
    }
    fl_stage_tile<DC, EC>(sm, k, v, a, 0, vec);
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
  const int64_t b3 = a.bst[3];
  const bool pair = (vec & 16) != 0;
  fl_run<EC / 8> R;
  R.m[0] = R.m[1] = -INFINITY, R.l[0] = R.l[1] = 0.0f;
#pragma unroll
  for (int i = 0; i < EC / 8; i++)
    R.acc[i][0] = R.acc[i][1] = R.acc[i][2] = R.acc[i][3] = 0.0f;
  const int ntiles = (int)((a.t + KT - 1) / KT);
  for (int it = 0; it < ntiles; it++) {
    const float *ks = sm + (it & 1) * L::BUF, *vs = ks + KT * L::LK;
    if (it + 1 < ntiles) {
      fl_stage_tile<DC, EC>(sm + ((it + 1) & 1) * L::BUF, k, v, a, it + 1, vec);
      fl_commit();
      fl_wait<1>(); /* this tile's copies done, the next one's in flight */
    } else {
      fl_wait<0>();
    }
    __syncthreads();
    const int64_t kt0 = (int64_t)it * KT;
    const int kin = a.t - kt0 < KT ? (int)(a.t - kt0) : KT;
    if (live) {
      /* the bias of this lane's rows at key kt0 + 2 tq (row 0's where a
       * row is past s: read, never used) */
      const float *bp[2] = {NULL, NULL};
      if (bias)
        for (int h = 0; h < 2; h++)
          bp[h] = bias + (row0 + 8 * h < a.s ? row0 + 8 * h : 0) * a.bst[2] +
                  (kt0 + 2 * tq) * b3;
      if (kin == KT)
        fl_tile<DC, EC, true>(R, qa, ks, vs, bp, b3, pair, kin, sc2, lane);
      else
        fl_tile<DC, EC, false>(R, qa, ks, vs, bp, b3, pair, kin, sc2, lane);
    }
    __syncthreads(); /* the stage is used up: the next round refills it */
  }
  if (!live)
    return;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    int64_t row = row0 + 8 * h;
    float lt = group_sum<4>(R.l[h]);
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
        lo[c] = R.acc[4 * p + c][2 * h] * inv,
        hi[c] = R.acc[4 * p + c][2 * h + 1] * inv;
      if (vec & 8) {
        if (E == EC || e0 < E)
          *(float4 *)(yr + e0) = make_float4(lo[0], lo[1], lo[2], lo[3]);
        if (E == EC || e0 + 4 < E)
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
    /* all of L1 as shared memory: MINB blocks of 74 KB (d = e = 64) */
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(k_flash<DC, EC>,
                               cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared);
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

/* ---- Half precision (f16, bf16): mma.sync m16n8k16 ----------------------
 * The same blocks, tiles, edges and online softmax as k_flash, on 2-byte
 * operands with float32 sums: q, k and v staged in their own type (rows
 * of DC or EC elements at a pitch 8 more: 16 bytes, so that the eight
 * 16-byte rows an ldmatrix reads lie in eight bank groups), fragments
 * read by ldmatrix (PTX ISA, m16n8k16 .f16/.bf16; g = lane / 4, t = lane
 * % 4: A (g, 2t..2t+1), (g + 8, ..), (g, 2t + 8..), (g + 8, 2t + 8..); B
 * (k 2t..2t+1, n g), (k 2t + 8.., n g); C as m16n8k8's):
 * - q's A fragments once (ldmatrix.x4 of its rows);
 * - scores: B from k's rows (keys) with ldmatrix.x4: keys 8j .. 8j + 7,
 *   d 32u .. 32u + 31, the b0 b1 of k-steps 2u and 2u + 1;
 * - p v: the scores' C fragments of key tiles 2jj and 2jj + 1 are, packed
 *   in pairs, the A fragment of keys 16jj .. 16jj + 15 (no shuffles); v's
 *   B fragments by ldmatrix.x4.trans from v's rows (keys), two n-tiles of
 *   e a load.
 * The probabilities are rounded to the type for the product (flash
 * attention's practice), their sum l kept in float32; the scale and bias
 * are read in the type, the output rounded once to it. */

/* Shared memory of k_flash_h<T, DC, EC> in elements (fl_smem's plan). */
template <int DC, int EC> struct fh_smem {
  static const int KT = 64; /* keys a tile */
  static const int LK = DC + 8, LV = EC + 8;
  static const int BUF = KT * LK + KT * LV;
  static const int QSZ = FL_ROWS * LK;
  static const int TOTAL = BUF + (QSZ > BUF ? QSZ : BUF);
  /* blocks an SM is to hold (registers capped at 64K / (128 MINB)) */
  static const int MINB = DC + EC <= 64 ? 4 : DC + EC <= 128 ? 3 : 2;
};

template <typename T> struct fh_src {
  const T *p;
  int64_t rs, cs;
  int rows, cols;
  bool vec;
};

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
/* c += a b, m16n8k16 of T (__half or __nv_bfloat16), float32 sums. */
__device__ __forceinline__ void
fh_mma(__half *, float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void fh_mma(__nv_bfloat16 *, float c[4],
                                       const uint32_t a[4], uint32_t b0,
                                       uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats as a pair of T rounded to nearest even, lo in the low half. */
__device__ __forceinline__ uint32_t fh_pack(__half *, float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *(const uint32_t *)&h;
}

__device__ __forceinline__ uint32_t fh_pack(__nv_bfloat16 *, float lo,
                                            float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *(const uint32_t *)&h;
}

/* Four 8x8 matrices of 2-byte elements from shared memory: lane l gives
 * the address of row l % 8 of matrix l / 8; TRANS: transposed. */
template <bool TRANS>
__device__ __forceinline__ void fh_ldm4(uint32_t r[4], const void *p) {
  unsigned s = (unsigned)__cvta_generic_to_shared(p);
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s)
                 : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s)
                 : "memory");
}

/* fl_stage on elements of T: 16-byte cp.async of 8 elements where vec,
 * else plain loads and stores (cp.async copies no 2-byte element). */
template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void fh_stage(T *dst, int ld, const fh_src<T> &s) {
  const int tid = threadIdx.x;
  if (s.vec) {
    constexpr int CH = COLS / 8, N = ROWS * CH / FL_THREADS;
    static_assert(ROWS * CH % FL_THREADS == 0, "whole rounds of chunks");
#pragma unroll
    for (int u = 0; u < N; u++) {
      int i = tid + u * FL_THREADS, r = i / CH, c = i % CH * 8;
      T *d = dst + r * ld + c;
      if (r < s.rows && c < s.cols)
        fl_cp16(d, s.p + r * s.rs + c);
      else
        *(uint4 *)d = make_uint4(0, 0, 0, 0);
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
    dst[r * ld + c] =
        r < s.rows && c < s.cols ? s.p[r * s.rs + c * s.cs] : st<T>(0.0f);
  }
}

/* Two elements of T packed in 32 bits (lo in the low half) as floats. */
__device__ __forceinline__ void fh_unpack(const __nv_bfloat16 *, uint32_t u,
                                          float &lo, float &hi) {
  lo = __uint_as_float(u << 16), hi = __uint_as_float(u & 0xffff0000u);
}

__device__ __forceinline__ void fh_unpack(const __half *, uint32_t u, float &lo,
                                          float &hi) {
  __half2 h = *(const __half2 *)&u;
  float2 f = __half22float2(h);
  lo = f.x, hi = f.y;
}

/* The bits of one element of T. */
template <typename T> __device__ __forceinline__ uint32_t fh_bits(T x) {
  return *(const unsigned short *)&x;
}

/* One key tile (kin keys: all KT where FULL) of k_flash_h: the scores,
 * the online softmax and the product with v. bp[h]: row h's bias at this
 * tile's key 2 tq (keys along b3; NULL: no bias), read in pairs where
 * pair (b3 == 1, 4-byte aligned). FULL leaves out every key check: a full
 * tile's body was 1083 instructions a warp, 320 of them the bias's
 * guarded scalar loads (ncu, BERT-base's layout on an H200). */
template <typename T, int DC, int EC, bool FULL>
__device__ __forceinline__ void
fh_tile(fl_run<EC / 8> &R, const uint32_t (&qa)[DC / 16][4], const T *ks,
        const T *vs, const T *const bp[2], int64_t b3, bool pair, int kin,
        float sc2, int lane) {
  typedef fh_smem<DC, EC> L;
  constexpr float LOG2E = 1.4426950408889634f;
  constexpr int KT = L::KT, NT = KT / 8, DS = DC / 16, EN = EC / 8;
  const int tq = lane & 3;
  /* the bias, loaded before the products and kept as pairs of T (half
   * the registers of floats: the kernel is at its launch bounds' cap);
   * bw[j][h]: row h, keys 8 j + 2 tq and the next */
  uint32_t bw[NT][2];
  if (bp[0]) {
    if (FULL && pair) {
#pragma unroll
      for (int j = 0; j < NT; j++)
        bw[j][0] = *(const uint32_t *)(bp[0] + 8 * j),
        bw[j][1] = *(const uint32_t *)(bp[1] + 8 * j);
    } else {
#pragma unroll
      for (int h = 0; h < 2; h++)
#pragma unroll
        for (int j = 0; j < NT; j++) {
          const int key = 8 * j + 2 * tq;
          const T *p = bp[h] + 8 * j * b3;
          uint32_t lo = FULL || key < kin ? fh_bits(p[0]) : 0u;
          uint32_t hi = FULL || key + 1 < kin ? fh_bits(p[b3]) : 0u;
          bw[j][h] = lo | hi << 16;
        }
    }
  }
  float s[NT][4];
#pragma unroll
  for (int j = 0; j < NT; j++) {
    s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    if (FULL || 8 * j < kin) {
      const T *kr = ks + (8 * j + (lane & 7)) * L::LK + 8 * (lane >> 3);
#pragma unroll
      for (int u = 0; u < DS / 2; u++) {
        uint32_t b[4];
        fh_ldm4<false>(b, kr + 32 * u);
        fh_mma((T *)0, s[j], qa[2 * u], b[0], b[1]);
        fh_mma((T *)0, s[j], qa[2 * u + 1], b[2], b[3]);
      }
    }
  }
  float mt[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int c = 0; c < 4; c++) {
      float x = -INFINITY, b = 0.0f;
      if (bp[0]) {
        float lo, hi;
        fh_unpack((const T *)0, bw[j][c >> 1], lo, hi);
        b = c & 1 ? hi : lo;
      }
      if (FULL || 8 * j + 2 * tq + (c & 1) < kin)
        x = bp[0] ? fmaf(b, LOG2E, s[j][c] * sc2) : s[j][c] * sc2;
      s[j][c] = x;
      mt[c >> 1] = fmaxf(mt[c >> 1], x);
    }
  fl_online(R, s, mt);
#pragma unroll
  for (int jj = 0; jj < NT / 2; jj++) {
    if (!FULL && 16 * jj >= kin)
      continue; /* every p of the step 0 */
    const uint32_t pa[4] = {
        fh_pack((T *)0, s[2 * jj][0], s[2 * jj][1]),
        fh_pack((T *)0, s[2 * jj][2], s[2 * jj][3]),
        fh_pack((T *)0, s[2 * jj + 1][0], s[2 * jj + 1][1]),
        fh_pack((T *)0, s[2 * jj + 1][2], s[2 * jj + 1][3])};
    const T *vr =
        vs + (16 * jj + (lane & 7) + (lane & 8)) * L::LV + (lane >> 4) * 8;
#pragma unroll
    for (int np = 0; np < EN / 2; np++) {
      uint32_t b[4];
      fh_ldm4<true>(b, vr + 16 * np);
      fh_mma((T *)0, R.acc[2 * np], pa, b[0], b[1]);
      fh_mma((T *)0, R.acc[2 * np + 1], pa, b[2], b[3]);
    }
  }
}

/* Key tile it of k and v into a stage at buf: fl_copy where the operand
 * takes 16-byte copies (vec bits 2, 4), else fh_stage. */
template <typename T, int DC, int EC>
__device__ __forceinline__ void fh_stage_tile(T *buf, const T *k, const T *v,
                                              const cxk_att &a, int it,
                                              int vec) {
  typedef fh_smem<DC, EC> L;
  const int64_t kt0 = (int64_t)it * L::KT;
  const int kin = a.t - kt0 < L::KT ? (int)(a.t - kt0) : L::KT;
  const T *kp = k + kt0 * a.st[1][3], *vp = v + kt0 * a.st[2][2];
  T *kd = buf, *vd = buf + L::KT * L::LK;
  const int D = (int)a.d, E = (int)a.e;
  if (!(vec & 2)) {
    fh_src<T> sk = {kp, a.st[1][3], a.st[1][2], kin, D, false};
    fh_stage<T, L::KT, DC>(kd, L::LK, sk);
  } else if (kin == L::KT) {
    fl_copy<T, L::KT, DC, L::LK, true>(kd, kp, a.st[1][3], kin, D);
  } else {
    fl_copy<T, L::KT, DC, L::LK, false>(kd, kp, a.st[1][3], kin, D);
  }
  if (!(vec & 4)) {
    fh_src<T> sv = {vp, a.st[2][2], a.st[2][3], kin, E, false};
    fh_stage<T, L::KT, EC>(vd, L::LV, sv);
  } else if (kin == L::KT) {
    fl_copy<T, L::KT, EC, L::LV, true>(vd, vp, a.st[2][2], kin, E);
  } else {
    fl_copy<T, L::KT, EC, L::LV, false>(vd, vp, a.st[2][2], kin, E);
  }
}
#endif

/* k_flash on T = __half or __nv_bfloat16 (vec bits as there: 16-byte
 * copies of q, k, v; y written in pairs; 16: the bias read in pairs). */
template <typename T, int DC, int EC>
__global__ void __launch_bounds__(FL_THREADS, (fh_smem<DC, EC>::MINB))
    k_flash_h(const T *__restrict__ q, const T *__restrict__ k,
              const T *__restrict__ v, const T *__restrict__ scale,
              const T *__restrict__ bias, T *__restrict__ y, cxk_att a,
              int64_t qtiles, int vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap(); /* cp.async, ldmatrix and m16n8k16: sm_80 on */
#else
  typedef fh_smem<DC, EC> L;
  constexpr int KT = L::KT, DS = DC / 16, EN = EC / 8;
  extern __shared__ __align__(16) unsigned char fh_sm[];
  T *sm = (T *)fh_sm;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int g = lane >> 2, tq = lane & 3;
  const int E = (int)a.e;
  /* the grid has fewer than 2^31 blocks: 32-bit divisions */
  const unsigned qt = (unsigned)qtiles, d1 = (unsigned)a.d1;
  const unsigned bh = blockIdx.x / qt, b0 = bh / d1, b1 = bh - b0 * d1;
  const int64_t q0 = (int64_t)(blockIdx.x - bh * qt) * FL_ROWS;
  q += b0 * a.st[0][0] + b1 * a.st[0][1];
  k += b0 * a.st[1][0] + b1 * a.st[1][1];
  v += b0 * a.st[2][0] + b1 * a.st[2][1];
  y += b0 * a.st[3][0] + b1 * a.st[3][1];
  if (bias)
    bias += b0 * a.bst[0] + b1 * a.bst[1];
  {
    const int qin = a.s - q0 < FL_ROWS ? (int)(a.s - q0) : FL_ROWS;
    const T *qp = q + q0 * a.st[0][2];
    if (vec & 1) {
      fl_copy<T, FL_ROWS, DC, L::LK, false>(sm + L::BUF, qp, a.st[0][2], qin,
                                            (int)a.d);
    } else {
      fh_src<T> sq = {qp, a.st[0][2], a.st[0][3], qin, (int)a.d, false};
      fh_stage<T, FL_ROWS, DC>(sm + L::BUF, L::LK, sq);
    }
    fh_stage_tile<T, DC, EC>(sm, k, v, a, 0, vec);
    fl_commit();
    fl_wait<0>();
    __syncthreads();
  }
  uint32_t qa[DS][4]; /* rows 16 w .., d 16 u .. 16 u + 15 */
#pragma unroll
  for (int u = 0; u < DS; u++)
    fh_ldm4<false>(qa[u], sm + L::BUF + (16 * w + (lane & 15)) * L::LK +
                              16 * u + (lane >> 4) * 8);
  __syncthreads(); /* q's space is the second stage's */
  const float sc2 = (scale ? ld(*scale) : 1.0f) * 1.4426950408889634f;
  const int64_t row0 = q0 + 16 * w + g; /* this lane's rows: row0, row0 + 8 */
  const bool live = q0 + 16 * w < a.s;  /* the warp has a row to compute */
  const int64_t b3 = a.bst[3];
  const bool pair = (vec & 16) != 0;
  fl_run<EN> R;
  R.m[0] = R.m[1] = -INFINITY, R.l[0] = R.l[1] = 0.0f;
#pragma unroll
  for (int i = 0; i < EN; i++)
    R.acc[i][0] = R.acc[i][1] = R.acc[i][2] = R.acc[i][3] = 0.0f;
  const int ntiles = (int)((a.t + KT - 1) / KT);
  for (int it = 0; it < ntiles; it++) {
    const T *ks = sm + (it & 1) * L::BUF, *vs = ks + KT * L::LK;
    if (it + 1 < ntiles) {
      fh_stage_tile<T, DC, EC>(sm + ((it + 1) & 1) * L::BUF, k, v, a, it + 1,
                               vec);
      fl_commit();
      fl_wait<1>(); /* this tile's copies done, the next one's in flight */
    } else {
      fl_wait<0>();
    }
    __syncthreads();
    const int64_t kt0 = (int64_t)it * KT;
    const int kin = a.t - kt0 < KT ? (int)(a.t - kt0) : KT;
    if (live) {
      /* the bias of this lane's rows at key kt0 + 2 tq (row 0's where a
       * row is past s: read, never used) */
      const T *bp[2] = {NULL, NULL};
      if (bias)
        for (int h = 0; h < 2; h++)
          bp[h] = bias + (row0 + 8 * h < a.s ? row0 + 8 * h : 0) * a.bst[2] +
                  (kt0 + 2 * tq) * b3;
      if (kin == KT)
        fh_tile<T, DC, EC, true>(R, qa, ks, vs, bp, b3, pair, kin, sc2, lane);
      else
        fh_tile<T, DC, EC, false>(R, qa, ks, vs, bp, b3, pair, kin, sc2, lane);
    }
    __syncthreads(); /* the stage is used up: the next round refills it */
  }
  if (!live)
    return;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    int64_t row = row0 + 8 * h;
    float lt = group_sum<4>(R.l[h]);
    if (row >= a.s)
      continue;
    /* l == 0: every key masked, NaN as softmax gives, 0 with the guard */
    float inv = lt > 0.0f ? 1.0f / lt : a.guard ? 0.0f : NAN;
    T *yr = y + row * a.st[3][2];
    if ((vec & 8) && E == EC) { /* whole rows of pairs: no checks */
      T *y2 = yr + 2 * tq;
#pragma unroll
      for (int i = 0; i < EN; i++)
        *(uint32_t *)(y2 + 8 * i) =
            fh_pack((T *)0, R.acc[i][2 * h] * inv, R.acc[i][2 * h + 1] * inv);
      continue;
    }
#pragma unroll
    for (int i = 0; i < EN; i++) {
      int e0 = 8 * i + 2 * tq; /* e0 and e0 + 1 */
      float x0 = R.acc[i][2 * h] * inv, x1 = R.acc[i][2 * h + 1] * inv;
      if (vec & 8) {
        if (e0 < E)
          *(uint32_t *)(yr + e0) = fh_pack((T *)0, x0, x1);
        continue;
      }
      if (e0 < E)
        yr[e0 * a.st[3][3]] = st<T>(x0);
      if (e0 + 1 < E)
        yr[(e0 + 1) * a.st[3][3]] = st<T>(x1);
    }
  }
#endif
}

template <typename T, int DC, int EC>
cudaError_t fh_launch(cudaStream_t st, const void *q, const void *k,
                      const void *v, const void *scale, const void *bias,
                      void *y, const cxk_att *a, int vec) {
  size_t smem = sizeof(T) * (size_t)fh_smem<DC, EC>::TOTAL;
  static int set; /* once an instantiation (setting it twice is harmless) */
  if (!set) {
    cudaError_t e = cudaFuncSetAttribute(
        k_flash_h<T, DC, EC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)smem);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(k_flash_h<T, DC, EC>,
                               cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess)
      return e;
    set = 1;
  }
  int64_t qt = (a->s + FL_ROWS - 1) / FL_ROWS;
  k_flash_h<T, DC, EC>
      <<<(unsigned)(qt * a->d0 * a->d1), FL_THREADS, smem, st>>>(
          (const T *)q, (const T *)k, (const T *)v, (const T *)scale,
          (const T *)bias, (T *)y, *a, qt, vec);
  return cudaGetLastError();
}

template <typename T, int DC>
cudaError_t fh_launch_e(cudaStream_t st, const void *q, const void *k,
                        const void *v, const void *scale, const void *bias,
                        void *y, const cxk_att *a, int vec) {
  if (a->e <= 32)
    return fh_launch<T, DC, 32>(st, q, k, v, scale, bias, y, a, vec);
  if (a->e <= 64)
    return fh_launch<T, DC, 64>(st, q, k, v, scale, bias, y, a, vec);
  return fh_launch<T, DC, 128>(st, q, k, v, scale, bias, y, a, vec);
}

template <typename T>
cudaError_t fh_launch_d(cudaStream_t st, const void *q, const void *k,
                        const void *v, const void *scale, const void *bias,
                        void *y, const cxk_att *a, int vec) {
  return a->d <= 32 ? fh_launch_e<T, 32>(st, q, k, v, scale, bias, y, a, vec)
         : a->d <= 64
             ? fh_launch_e<T, 64>(st, q, k, v, scale, bias, y, a, vec)
             : fh_launch_e<T, 128>(st, q, k, v, scale, bias, y, a, vec);
}

/* Whether x's rows (stride rs, columns along cs; batch strides st[0],
 * st[1]; elements of es bytes) copy as 16-byte chunks in every batch
 * (katt.cu's rows_vec). */
bool fl_vec(const void *x, const int64_t *st, int64_t rs, int64_t cs,
            int64_t cols, int es) {
  const int n = 16 / es; /* elements a chunk */
  return cs == 1 && rs % n == 0 && st[0] % n == 0 && st[1] % n == 0 &&
         cols % n == 0 && aligned16(x);
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
         a->s < ((int64_t)1 << 30) &&
         (a->dt == CXK_F32 || a->dt == CXK_F16 || a->dt == CXK_BF16);
}

int cxk_flash_vec(const void *q, const void *k, const void *v, const void *y,
                  const cxk_att *a) {
  const int es = (int)cxk_dt_size((int)a->dt);
  return fl_vec(q, a->st[0], a->st[0][2], a->st[0][3], a->d, es) |
         fl_vec(k, a->st[1], a->st[1][3], a->st[1][2], a->d, es) << 1 |
         fl_vec(v, a->st[2], a->st[2][2], a->st[2][3], a->e, es) << 2 |
         fl_vec(y, a->st[3], a->st[3][2], a->st[3][3], a->e, es) << 3;
}

cudaError_t cxk_flash(cudaStream_t st, const void *q, const void *k,
                      const void *v, const void *scale, const void *bias,
                      void *y, const cxk_att *a) {
  if (!cxk_flash_ok(a))
    return cudaErrorInvalidValue;
  int vec = cxk_flash_vec(q, k, v, y, a);
  /* the bias in pairs: keys contiguous, every pair aligned to its size (a
   * tile starts at an even key, a lane's pairs at 2 tq) */
  const size_t es = cxk_dt_size((int)a->dt);
  if (bias && a->bst[3] == 1 && (a->bst[0] | a->bst[1] | a->bst[2]) % 2 == 0 &&
      ((uintptr_t)bias & (2 * es - 1)) == 0)
    vec |= 16;
  if (a->dt == CXK_F16)
    return fh_launch_d<__half>(st, q, k, v, scale, bias, y, a, vec);
  if (a->dt == CXK_BF16)
    return fh_launch_d<__nv_bfloat16>(st, q, k, v, scale, bias, y, a, vec);
  const float *qf = (const float *)q, *kf = (const float *)k,
              *vf = (const float *)v, *sf = (const float *)scale,
              *bf = (const float *)bias;
  float *yf = (float *)y;
  return a->d <= 32   ? fl_launch_e<32>(st, qf, kf, vf, sf, bf, yf, a, vec)
         : a->d <= 64 ? fl_launch_e<64>(st, qf, kf, vf, sf, bf, yf, a, vec)
                      : fl_launch_e<128>(st, qf, kf, vf, sf, bf, yf, a, vec);
}
