/* gemm.c: the executor's matrix product and fused activations.
 *
 * ex_gemm is portable C17 (no intrinsics, no -march): C is cut into tiles of
 * TILE_M x TILE_N; each tile is computed whole (over all of k) by one thread,
 * so a C element is always summed by one thread in one fixed order and
 * results never depend on the thread count. Within a tile, k is blocked by
 * BLOCK_K (the A rows and B panel stay in cache) and the work is done by a
 * micro kernel that keeps a 4 x 8 block of C in registers while it walks k,
 * reading 8 contiguous floats of a row of B per step. Every element of C is
 * computed as c = c0 + a0*b0 + a1*b1 + ... in increasing k, c0 being 0 or
 * the old C, whichever path (full block or edge) computes it.
 *
 * Builds with OpenBLAS (SUPEROPT_HAVE_BLAS, CMakeLists.txt) hand products of
 * BLAS_MIN multiply-adds or more to cblas_sgemm (4x faster on one AVX2 core
 * than the kernel here), when the loaded OpenBLAS is threaded by OpenMP or
 * not at all: it then runs on the executor's OpenMP threads, one tile of C
 * of a fixed size per call and thread (blas_gemm), so the two never
 * oversubscribe the cores and results still do not depend on the thread
 * count (tested). Smaller products (every one of gen-rules' fingerprint
 * runs) stay here.
 */
#include <limits.h>
#include <math.h>
#include <string.h>
#ifdef SUPEROPT_HAVE_BLAS
#include <cblas.h>
#endif

#include "exec_int.h"

enum {
  MR = 4,            /* rows of C per micro kernel (fixed by micro_full) */
  NR = 8,            /* columns of C per micro kernel (fixed by micro_full) */
  TILE_M = 64,       /* rows of C per parallel tile (a multiple of MR) */
  TILE_N = 256,      /* columns of C per parallel tile (a multiple of NR) */
  BLOCK_K = 256,     /* depth of one pass over a tile */
  PAR_MIN = 1 << 15, /* fewer multiply-adds than this: stay single-threaded */
  MEMO_MIN = 1 << 17 /* products the check's memo keeps (memo.c) */
};

/* The operands of one gemm call, as passed to ex_gemm. */
typedef struct gemm_args {
  int64_t m, n, k;
  const float *A, *B;
  float *C;
  int64_t lda, ldb, ldc;
  int accumulate;
} gemm_args;

#if defined(__GNUC__)
/* Four floats as one value of GCC's generic vector extension (gcc, clang):
 * compiled to SSE, NEON, ... or to scalars, with no -march needed. Plain
 * loops here get vectorised over k instead of n by gcc -O3 (in-order
 * reductions, 3.5x slower), hence the explicit vectors. */
typedef float vf4 __attribute__((vector_size(16)));

static vf4 ld4(const float *p) {
  vf4 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void st4(float *p, vf4 v) { memcpy(p, &v, sizeof v); }

/* c[0..3][0..7] (+)= a[0..3][0..kc-1] * b[0..kc-1][0..7], the 4 x 8 block
 * of C held in eight vector accumulators (registers). */
static void micro_full(int64_t kc, const float *restrict a, int64_t lda,
                       const float *restrict b, int64_t ldb, float *restrict c,
                       int64_t ldc, int load) {
  vf4 z = {0}, c00 = z, c01 = z, c10 = z, c11 = z;
  vf4 c20 = z, c21 = z, c30 = z, c31 = z;
  float *c0 = c, *c1 = c + ldc, *c2 = c + 2 * ldc, *c3 = c + 3 * ldc;
  if (load) {
    c00 = ld4(c0), c01 = ld4(c0 + 4), c10 = ld4(c1), c11 = ld4(c1 + 4);
    c20 = ld4(c2), c21 = ld4(c2 + 4), c30 = ld4(c3), c31 = ld4(c3 + 4);
  }
  const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
  for (int64_t p = 0; p < kc; p++) {
    vf4 b0 = ld4(b + p * ldb), b1 = ld4(b + p * ldb + 4);
    c00 += a0[p] * b0, c01 += a0[p] * b1;
    c10 += a1[p] * b0, c11 += a1[p] * b1;
    c20 += a2[p] * b0, c21 += a2[p] * b1;
    c30 += a3[p] * b0, c31 += a3[p] * b1;
  }
  st4(c0, c00), st4(c0 + 4, c01), st4(c1, c10), st4(c1 + 4, c11);
  st4(c2, c20), st4(c2 + 4, c21), st4(c3, c30), st4(c3 + 4, c31);
}
#else
/* Plain C17 fallback: the same block and order, accumulated in t. */
static void micro_full(int64_t kc, const float *restrict a, int64_t lda,
                       const float *restrict b, int64_t ldb, float *restrict c,
                       int64_t ldc, int load) {
  float t[MR][NR];
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++)
      t[r][j] = load ? c[r * ldc + j] : 0.0f;
  for (int64_t p = 0; p < kc; p++)
    for (int r = 0; r < MR; r++)
      for (int j = 0; j < NR; j++)
        t[r][j] += a[r * lda + p] * b[p * ldb + j];
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++)
      c[r * ldc + j] = t[r][j];
}
#endif

/* The same for an edge block of mr <= MR rows and nr <= NR columns. */
static void micro_edge(int64_t mr, int64_t nr, int64_t kc, const float *a,
                       int64_t lda, const float *b, int64_t ldb, float *c,
                       int64_t ldc, int load) {
  for (int64_t r = 0; r < mr; r++) {
    for (int64_t j = 0; j < nr; j++) {
      float s = load ? c[r * ldc + j] : 0.0f;
      for (int64_t p = 0; p < kc; p++)
        s += a[r * lda + p] * b[p * ldb + j];
      c[r * ldc + j] = s;
    }
  }
}

/* One BLOCK_K pass over the tile at (i0, j0) of mt x nt, depths p0..p0+kc. */
static void tile_pass(const gemm_args *g, int64_t i0, int64_t j0, int64_t mt,
                      int64_t nt, int64_t p0, int64_t kc, int load) {
  for (int64_t j = 0; j < nt; j += NR) {
    int64_t nr = nt - j < NR ? nt - j : NR;
    const float *b = g->B + p0 * g->ldb + j0 + j;
    for (int64_t i = 0; i < mt; i += MR) {
      int64_t mr = mt - i < MR ? mt - i : MR;
      const float *a = g->A + (i0 + i) * g->lda + p0;
      float *c = g->C + (i0 + i) * g->ldc + j0 + j;
      if (mr == MR && nr == NR)
        micro_full(kc, a, g->lda, b, g->ldb, c, g->ldc, load);
      else
        micro_edge(mr, nr, kc, a, g->lda, b, g->ldb, c, g->ldc, load);
    }
  }
}

/* Computes tile number t of C (row-major order of tiles) over all of k. */
static void gemm_tile(const gemm_args *g, int64_t t, int64_t ntn) {
  int64_t i0 = t / ntn * TILE_M, j0 = t % ntn * TILE_N;
  int64_t mt = g->m - i0 < TILE_M ? g->m - i0 : TILE_M;
  int64_t nt = g->n - j0 < TILE_N ? g->n - j0 : TILE_N;
  for (int64_t p0 = 0; p0 < g->k; p0 += BLOCK_K) {
    int64_t kc = g->k - p0 < BLOCK_K ? g->k - p0 : BLOCK_K;
    tile_pass(g, i0, j0, mt, nt, p0, kc, p0 > 0 || g->accumulate);
  }
}

/* k = 0: the product is empty, so C becomes 0 unless accumulating. */
static void gemm_empty(const gemm_args *g) {
  if (g->accumulate)
    return;
  for (int64_t i = 0; i < g->m; i++)
    memset(g->C + i * g->ldc, 0, (size_t)g->n * sizeof(float));
}

#ifdef SUPEROPT_HAVE_BLAS
enum {
  BLAS_MIN = 1 << 17, /* multiply-adds from which sgemm runs */
  BLAS_TM = 64,       /* rows of C per sgemm call (BLAS_TM_BIG: m >= 1024) */
  BLAS_TM_BIG = 256,
  BLAS_TN = 256, /* columns of C per sgemm call (BLAS_TN_BIG: n >= 3072) */
  BLAS_TN_BIG = 768
};

/* 1 when g goes to cblas_sgemm: large enough, its sizes fit BLAS's int, and
 * the OpenBLAS loaded shares OpenMP's threads (0: sequential, 2: OpenMP; a
 * pthreads build would start its own threads beside OpenMP's). */
static int blas_takes(const gemm_args *g) {
  int threading = openblas_get_parallel(); /* a constant of the build */
  if (threading != 0 && threading != 2)
    return 0;
  if (g->m * g->n * g->k < BLAS_MIN)
    return 0;
  const int64_t v[6] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc};
  for (int i = 0; i < 6; i++)
    if (v[i] > INT_MAX)
      return 0;
  return 1;
}

/* Tile t of C (tm x tn, row-major order of tiles) by one sgemm. */
static void blas_tile(const gemm_args *g, int64_t t, int64_t tm, int64_t tn) {
  int64_t ntn = (g->n + tn - 1) / tn;
  int64_t i0 = t / ntn * tm, j0 = t % ntn * tn;
  int64_t mt = g->m - i0 < tm ? g->m - i0 : tm;
  int64_t nt = g->n - j0 < tn ? g->n - j0 : tn;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mt, (int)nt,
              (int)g->k, 1.0f, g->A + i0 * g->lda, (int)g->lda, g->B + j0,
              (int)g->ldb, g->accumulate ? 1.0f : 0.0f, g->C + i0 * g->ldc + j0,
              (int)g->ldc);
}

/* C by tiles whose size depends on C's shape alone, each one sgemm on one
 * thread: OpenBLAS runs single-threaded inside an active parallel region
 * (and with one thread outside), so every tile is computed the same
 * whatever the thread count. (One sgemm over all of C gives other sums
 * with 2 threads than with 1.) Large C gets larger tiles: each call packs
 * its operands again (BERT at batch 16: a fifth of sgemm's time packing
 * with 64 x 256 tiles of a 2048-row C). */
static void blas_gemm(const gemm_args *g) {
  int64_t tm = g->m >= 1024 ? BLAS_TM_BIG : BLAS_TM;
  int64_t tn = g->n >= 3072 ? BLAS_TN_BIG : BLAS_TN;
  int64_t ntiles = (g->m + tm - 1) / tm * ((g->n + tn - 1) / tn);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
  for (int64_t t = 0; t < ntiles; t++)
    blas_tile(g, t, tm, tn);
}
#endif

/* C by the kernel here: tiles over the threads. */
static void own_gemm(const gemm_args *g) {
  int64_t m = g->m, n = g->n, k = g->k;
  int64_t ntn = (n + TILE_N - 1) / TILE_N;
  int64_t ntiles = (m + TILE_M - 1) / TILE_M * ntn;
#ifdef _OPENMP
  int par = m * n * k >= PAR_MIN && ntiles > 1;
#pragma omp parallel for schedule(static) if (par)
#endif
  for (int64_t t = 0; t < ntiles; t++)
    gemm_tile(g, t, ntn);
}

void ex_gemm(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
             const float *B, int64_t ldb, float *C, int64_t ldc,
             int accumulate) {
  gemm_args g = {m, n, k, A, B, C, lda, ldb, ldc, accumulate};
  ex_memo_key key = {NULL, 0, 0, 0};
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    gemm_empty(&g);
    return;
  }
  if (!accumulate && m * n * k >= MEMO_MIN &&
      ex_memo_begin(m, n, k, A, lda, B, ldb, C, ldc, &key))
    return;
#ifdef SUPEROPT_HAVE_BLAS
  if (blas_takes(&g))
    blas_gemm(&g);
  else
#endif
    own_gemm(&g);
  ex_memo_end(&key, m, n, C, ldc);
}

/* ---- activations ------------------------------------------------------- */

/* The activation's operator's row of ew.def (ex_ew_apply); none: no-op. */
void ex_activate(float *x, int64_t n, int act) {
  int op = ir_act_op((ir_act)act);
  if (op >= 0)
    ex_ew_apply((ir_opcode)op, x, x, n);
}
