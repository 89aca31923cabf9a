/* probe-lt-splitk.c: a probe, not part of the tool. Does cuBLASLt have a
 * faster configuration for batch-1 GEMMs (few rows: a convolution's
 * pixels, BERT's 128 tokens) than the candidates of its heuristic (what
 * blas.c times)? For each shape: the heuristic's best of
 * GPU_MM_CANDIDATES, then every algorithm id with each of its tiles,
 * stages and a split-K of 1..32 with each reduction scheme it allows.
 *
 * The product is blas.c's channels-last convolution as a GEMM: row-major
 * y[P,O] = x[P,K] w[O,K]^T, i.e. column-major y^T (O x P) = op(A) B with
 * A = w seen as K x O (ld K) and transposed, B = x^T (K x P, ld K).
 * Found on an H200 (2026-11-26): the heuristic's candidates are the
 * fastest (49 x 512 x 4608 in 7.3 us, cuDNN's convolution 13.4 us);
 * the exhaustive search found nothing faster (docs/cuda.md).
 *
 * Build here (no GPU needed):
 *   nvcc -O2 -o probe-lt-splitk scripts/probe-lt-splitk.c -lcublasLt
 * run on the device: ./probe-lt-splitk [seconds per shape]
 * Times: probe-time.h's (a CUDA-graph replay of 20 launches, the median
 * of 50 after 10), in microseconds. */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe-time.h"

#define CANDIDATES 24
#define WS ((size_t)32 << 20)

static cublasLtHandle_t L;
static cudaStream_t S;
static float *ba, *bb, *bc;
static void *bws;

typedef struct shape {
  int64_t p, o, k;
  const char *name;
} shape;

static const shape shapes[] = {
    {49, 512, 4608, "3x3 512->512 7x7 (im2col)"},
    {196, 256, 2304, "3x3 256->256 14x14 (im2col)"},
    {784, 128, 1152, "3x3 128->128 28x28 (im2col)"},
    {3136, 64, 576, "3x3 64->64 56x56 (im2col)"},
    {49, 512, 2048, "1x1 2048->512 7x7"},
    {49, 2048, 512, "1x1 512->2048 7x7"},
    {196, 256, 1024, "1x1 1024->256 14x14"},
    {196, 1024, 256, "1x1 256->1024 14x14"},
    {784, 128, 512, "1x1 512->128 28x28"},
    {128, 2304, 768, "BERT QKV 128x2304x768"},
    {128, 768, 768, "BERT out 128x768x768"},
    {128, 3072, 768, "BERT FC1 128x3072x768"},
    {128, 768, 3072, "BERT FC2 128x768x3072"},
};

typedef struct mm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
} mm;

static int mm_new(mm *m, const shape *s) {
  cublasOperation_t tr = CUBLAS_OP_T;
  if (cublasLtMatmulDescCreate(&m->desc, CUBLAS_COMPUTE_32F_FAST_TF32,
                               CUDA_R_32F) ||
      cublasLtMatmulDescSetAttribute(m->desc, CUBLASLT_MATMUL_DESC_TRANSA, &tr,
                                     sizeof tr) ||
      cublasLtMatrixLayoutCreate(&m->la, CUDA_R_32F, s->k, s->o, s->k) ||
      cublasLtMatrixLayoutCreate(&m->lb, CUDA_R_32F, s->k, s->p, s->k) ||
      cublasLtMatrixLayoutCreate(&m->lc, CUDA_R_32F, s->o, s->p, s->o))
    return -1;
  return 0;
}

/* One product with one algorithm (u: mm_run). */
typedef struct mm_run {
  mm *m;
  const cublasLtMatmulAlgo_t *algo;
  size_t ws;
} mm_run;

static int run_mm(void *u) {
  const mm_run *r = u;
  const float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(L, r->m->desc, &one, ba, r->m->la, bb, r->m->lb, &zero,
                        bc, r->m->lc, bc, r->m->lc, r->algo, bws, r->ws,
                        S) != CUBLAS_STATUS_SUCCESS;
}

/* Median us per launch of algo (probe_time_us), or -1. */
static float time_algo(mm *m, const cublasLtMatmulAlgo_t *algo, size_t ws) {
  return probe_time_us(S, run_mm, &(mm_run){m, algo, ws});
}

static float heuristic_best(mm *m, int *which) {
  cublasLtMatmulPreference_t pref;
  size_t ws = WS;
  cublasLtMatmulHeuristicResult_t r[CANDIDATES];
  int nr = 0;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulAlgoGetHeuristic(L, m->desc, m->la, m->lb, m->lc, m->lc, pref,
                                 CANDIDATES, r, &nr);
  cublasLtMatmulPreferenceDestroy(pref);
  float best = 1e30f;
  for (int i = 0; i < nr; i++) {
    float t = time_algo(m, &r[i].algo, r[i].workspaceSize);
    if (t > 0 && t < best)
      best = t, *which = i;
  }
  printf("  heuristic: %d candidates, best %.2f us (#%d)\n", nr, best, *which);
  return best;
}

static int cap_u32s(const cublasLtMatmulAlgo_t *a,
                    cublasLtMatmulAlgoCapAttributes_t at, uint32_t *v,
                    int max) {
  size_t sz = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(a, at, NULL, 0, &sz) || !sz)
    return 0;
  int n = (int)(sz / sizeof *v);
  n = n > max ? max : n;
  cublasLtMatmulAlgoCapGetAttribute(a, at, v, (size_t)n * sizeof *v, &sz);
  return n;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void exhaustive(mm *m, double budget, float heur) {
  int ids[128], nid = 0;
  cublasLtMatmulAlgoGetIds(L, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F,
                           CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 128,
                           ids, &nid);
  static const uint32_t splits[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  float best = 1e30f;
  char desc[160] = "";
  int tried = 0, ran = 0;
  double t0 = now();
  for (int a = 0; a < nid; a++) {
    cublasLtMatmulAlgo_t base;
    if (cublasLtMatmulAlgoInit(L, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F,
                               CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                               ids[a], &base))
      continue;
    uint32_t tiles[64], stages[64];
    int nt = cap_u32s(&base, CUBLASLT_ALGO_CAP_TILE_IDS, tiles, 64);
    int ns = cap_u32s(&base, CUBLASLT_ALGO_CAP_STAGES_IDS, stages, 64);
    if (!nt)
      tiles[0] = 0, nt = 1;
    if (!ns)
      stages[0] = 0, ns = 1;
    int32_t splitk = 0;
    uint32_t redmask = 0;
    size_t sz;
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
                                      &splitk, sizeof splitk, &sz);
    cublasLtMatmulAlgoCapGetAttribute(&base,
                                      CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK,
                                      &redmask, sizeof redmask, &sz);
    for (int ti = 0; ti < nt; ti++)
      for (int si = 0; si < ns; si++)
        for (int ki = 0; ki < (splitk ? 10 : 1); ki++)
          for (uint32_t red = 0; red <= 4; red = red ? red << 1 : 1) {
            if (splits[ki] == 1 && red)
              break;
            if (splits[ki] > 1 && (!red || !(redmask & red)))
              continue;
            if (now() - t0 > budget)
              goto done;
            cublasLtMatmulAlgo_t al = base;
            cublasLtMatmulAlgoConfigSetAttribute(&al,
                                                 CUBLASLT_ALGO_CONFIG_TILE_ID,
                                                 &tiles[ti], sizeof tiles[ti]);
            cublasLtMatmulAlgoConfigSetAttribute(
                &al, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages[si],
                sizeof stages[si]);
            cublasLtMatmulAlgoConfigSetAttribute(
                &al, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits[ki],
                sizeof splits[ki]);
            cublasLtMatmulAlgoConfigSetAttribute(
                &al, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red);
            cublasLtMatmulHeuristicResult_t chk;
            tried++;
            if (cublasLtMatmulAlgoCheck(L, m->desc, m->la, m->lb, m->lc, m->lc,
                                        &al, &chk) ||
                chk.workspaceSize > WS)
              continue;
            float t = time_algo(m, &al, chk.workspaceSize);
            ran++;
            if (t > 0 && t < best) {
              best = t;
              snprintf(desc, sizeof desc,
                       "algo %d tile %u stages %u splitk %u red %u ws %zu",
                       ids[a], tiles[ti], stages[si], splits[ki], red,
                       chk.workspaceSize);
            }
          }
  }
done:
  printf("  exhaustive: %d ids, %d configs checked, %d ran, best %.2f us "
         "(%.2fx the heuristic's): %s\n",
         nid, tried, ran, best, heur / best, desc);
}

int main(int argc, char **argv) {
  double budget = argc > 1 ? atof(argv[1]) : 25.0;
  size_t big = (size_t)3136 * 4608 * 4 + (1 << 20);
  if (cublasLtCreate(&L) || cudaStreamCreate(&S) ||
      cudaMalloc((void **)&ba, big) || cudaMalloc((void **)&bb, big) ||
      cudaMalloc((void **)&bc, big) || cudaMalloc(&bws, WS)) {
    fprintf(stderr, "setup failed\n");
    return 1;
  }
  /* 0x3c3c3c3c: 0.0115 everywhere, not zeros (tensor cores run zeros
   * faster) */
  cudaMemset(ba, 0x3c, big), cudaMemset(bb, 0x3c, big);
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    const shape *s = &shapes[i];
    mm m;
    printf("%s: P=%lld O=%lld K=%lld\n", s->name, (long long)s->p,
           (long long)s->o, (long long)s->k);
    if (mm_new(&m, s)) {
      printf("  descriptor failed\n");
      continue;
    }
    int w = -1;
    float h = heuristic_best(&m, &w);
    exhaustive(&m, budget, h);
    fflush(stdout);
  }
  return 0;
}
