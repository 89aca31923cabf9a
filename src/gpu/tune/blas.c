/* blas.c: matmul algorithm choice: cuBLASLt's heuristic candidates,
 * timed on scratch buffers (of the key's element type; 4 bytes an
 * element allocated whatever it is), fastest kept per (shape, epilogue,
 * precision, element type)
 * in the context, so every node of that shape (and gpu_measure_node) uses
 * the same algorithm.
 */
#include <stdlib.h>
#include <string.h>

#include "../gpu_int.h"

#define GPU_MM_CANDIDATES 24
/* $SUPEROPT_MM_SWEEP set: besides the heuristic's GPU_MM_CANDIDATES, each
 * algorithm id's best GPU_MM_PER_ID configurations (the heuristic limited
 * to that id), at most GPU_MM_WIDE candidates in all */
#define GPU_MM_PER_ID 6
#define GPU_MM_WIDE 320

typedef struct mm_scratch {
  float *a, *b, *c, *bias;
  float *cin; /* C read with beta 1 (key beta), else NULL */
  void *ws;
  cudaEvent_t e0, e1;
} mm_scratch;

static int scratch_new(gpu_ctx *c, const gpu_mm_key *k, size_t ws,
                       mm_scratch *s) {
  int64_t na = k->batch * k->k * k->n, nb = k->batch * k->m * k->k;
  int64_t nc = k->batch * k->m * k->n;
  memset(s, 0, sizeof *s);
  if (cudaMalloc((void **)&s->a, (size_t)na * 4) ||
      cudaMalloc((void **)&s->b, (size_t)nb * 4) ||
      cudaMalloc((void **)&s->c, (size_t)nc * 4) ||
      (k->beta && cudaMalloc((void **)&s->cin, (size_t)nc * 4)) ||
      (k->beta && cxk_fill_dt(c->stream, k->dtype, s->cin, nc, 0.25f)) ||
      cudaMalloc((void **)&s->bias, (size_t)k->n * 4) ||
      cudaMalloc(&s->ws, ws ? ws : 256) || cudaEventCreate(&s->e0) ||
      cudaEventCreate(&s->e1) ||
      cxk_fill_dt(c->stream, k->dtype, s->a, na, 0.01f) ||
      cxk_fill_dt(c->stream, k->dtype, s->b, nb, 0.5f) ||
      cxk_fill_dt(c->stream, k->dtype, s->bias, k->n, 0.1f))
    return -1;
  return 0;
}

static void scratch_free(mm_scratch *s) {
  cudaFree(s->a), cudaFree(s->b), cudaFree(s->c), cudaFree(s->bias);
  cudaFree(s->cin);
  cudaFree(s->ws);
  if (s->e0)
    cudaEventDestroy(s->e0);
  if (s->e1)
    cudaEventDestroy(s->e1);
  cudaGetLastError();
}

/* One product with one algorithm on the scratch buffers (u: mm_run). */
typedef struct mm_run {
  gpu_mm *m;
  const cublasLtMatmulAlgo_t *algo;
  size_t ws;
  mm_scratch *s;
} mm_run;

static int run_mm(gpu_ctx *c, const void *u) {
  const mm_run *r = u;
  const float one = 1.0f, zero = 0.0f;
  const float *cc = r->s->cin ? r->s->cin : r->s->c; /* C, as the node */
  return cublasLtMatmul(c->lt, r->m->desc, &one, r->s->a, r->m->la, r->s->b,
                        r->m->lb, r->s->cin ? &one : &zero, cc, r->m->lc,
                        r->s->c, r->m->lc, r->algo, r->s->ws, r->ws,
                        c->stream) != CUBLAS_STATUS_SUCCESS;
}

/* Median time of one algorithm (gpu_tune_time); huge when it fails. */
static float time_algo(gpu_ctx *c, gpu_mm *m, const cublasLtMatmulAlgo_t *algo,
                       size_t ws, mm_scratch *s) {
  return gpu_tune_time(c, run_mm, &(mm_run){m, algo, ws, s}, s->e0, s->e1);
}

/* Index of the fastest of r[0..nr-1] (0 when timing is impossible). */
static int fastest(gpu_ctx *c, const gpu_mm_key *k, gpu_mm *m,
                   const cublasLtMatmulHeuristicResult_t *r, int nr,
                   float *ms) {
  size_t wmax = 0;
  for (int i = 0; i < nr; i++)
    wmax = r[i].workspaceSize > wmax ? r[i].workspaceSize : wmax;
  mm_scratch s;
  int best = 0, timed = nr > 1 || k->transa; /* a conv's GEMM competes */
  *ms = 0;
  if (timed && scratch_new(c, k, wmax, &s) == 0) {
    if (k->bias)
      cublasLtMatmulDescSetAttribute(m->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                     &s.bias, sizeof s.bias);
    float bt = 1e30f;
    for (int i = 0; i < nr; i++) {
      float t = time_algo(c, m, &r[i].algo, r[i].workspaceSize, &s);
      if (t < bt) {
        bt = t;
        best = i;
      }
    }
    *ms = bt;
  }
  if (timed)
    scratch_free(&s);
  return best;
}

static base_status remember(gpu_ctx *c, const gpu_mm_choice *ch, base_diag *d) {
  if (c->nmms == c->capmms) {
    int cap = c->capmms ? 2 * c->capmms : 16;
    gpu_mm_choice *nc = base_realloc(c->mms, (size_t)cap * sizeof *nc);
    if (!nc)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    c->mms = nc;
    c->capmms = cap;
  }
  c->mms[c->nmms++] = *ch;
  return BASE_OK;
}

/* A heuristic query's preference: at most GPU_MM_WS of workspace, and
 * with by_id the search limited to the algorithm id each result slot
 * carries (wider); nothing to destroy on an error. */
static cublasStatus_t mm_pref(int by_id, cublasLtMatmulPreference_t *p) {
  cublasStatus_t e = cublasLtMatmulPreferenceCreate(p);
  if (e != CUBLAS_STATUS_SUCCESS)
    return e;
  size_t ws = GPU_MM_WS;
  uint32_t mode = CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID;
  e = cublasLtMatmulPreferenceSetAttribute(
      *p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (e == CUBLAS_STATUS_SUCCESS && by_id)
    e = cublasLtMatmulPreferenceSetAttribute(
        *p, CUBLASLT_MATMUL_PREF_SEARCH_MODE, &mode, sizeof mode);
  if (e != CUBLAS_STATUS_SUCCESS)
    cublasLtMatmulPreferenceDestroy(*p);
  return e;
}

/* Adds to r[0..*nr-1] (room for GPU_MM_WIDE) each of cuBLASLt's
 * algorithm ids' best configurations for m (the heuristic limited to the
 * id), those not already there; a failing query adds nothing. */
static void wider(gpu_ctx *c, gpu_mm *m, cublasLtMatmulHeuristicResult_t *r,
                  int *nr) {
  int32_t ct = 0, st = 0;
  uint32_t ta = 0, tb = 0, tc = 0;
  size_t w;
  if (cublasLtMatmulDescGetAttribute(m->desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE,
                                     &ct, sizeof ct, &w) ||
      cublasLtMatmulDescGetAttribute(m->desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE,
                                     &st, sizeof st, &w) ||
      cublasLtMatrixLayoutGetAttribute(m->la, CUBLASLT_MATRIX_LAYOUT_TYPE, &ta,
                                       sizeof ta, &w) ||
      cublasLtMatrixLayoutGetAttribute(m->lb, CUBLASLT_MATRIX_LAYOUT_TYPE, &tb,
                                       sizeof tb, &w) ||
      cublasLtMatrixLayoutGetAttribute(m->lc, CUBLASLT_MATRIX_LAYOUT_TYPE, &tc,
                                       sizeof tc, &w))
    return;
  int ids[128], nids = 0;
  if (cublasLtMatmulAlgoGetIds(c->lt, (cublasComputeType_t)ct,
                               (cudaDataType_t)st, (cudaDataType_t)ta,
                               (cudaDataType_t)tb, (cudaDataType_t)tc,
                               (cudaDataType_t)tc, 128, ids, &nids))
    return;
  cublasLtMatmulPreference_t pref;
  if (mm_pref(1, &pref) != CUBLAS_STATUS_SUCCESS)
    return;
  for (int i = 0; i < nids && *nr < GPU_MM_WIDE; i++) {
    cublasLtMatmulHeuristicResult_t h[GPU_MM_PER_ID];
    memset(h, 0, sizeof h);
    cublasLtMatmulAlgo_t a;
    if (cublasLtMatmulAlgoInit(c->lt, (cublasComputeType_t)ct,
                               (cudaDataType_t)st, (cudaDataType_t)ta,
                               (cudaDataType_t)tb, (cudaDataType_t)tc,
                               (cudaDataType_t)tc, ids[i], &a))
      continue;
    for (int j = 0; j < GPU_MM_PER_ID; j++)
      h[j].algo = a;
    int nh = 0;
    if (cublasLtMatmulAlgoGetHeuristic(c->lt, m->desc, m->la, m->lb, m->lc,
                                       m->lc, pref, GPU_MM_PER_ID, h, &nh))
      continue;
    for (int j = 0; j < nh && *nr < GPU_MM_WIDE; j++) {
      int dup = h[j].state != CUBLAS_STATUS_SUCCESS;
      for (int q = 0; q < *nr && !dup; q++)
        dup = !memcmp(&r[q].algo, &h[j].algo, sizeof h[j].algo);
      if (!dup)
        r[(*nr)++] = h[j];
    }
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cudaGetLastError();
}

base_status gpu_mm_choose(gpu_ctx *c, const gpu_mm_key *k, gpu_mm *m,
                          base_diag *d) {
  for (int i = 0; i < c->nmms; i++)
    if (!memcmp(&c->mms[i].key, k, sizeof *k)) {
      m->algo = c->mms[i].algo;
      m->ws = c->mms[i].ws;
      m->ms = c->mms[i].ms;
      return BASE_OK;
    }
  gpu_mm_choice tc;
  cublasLtMatmulHeuristicResult_t chk;
  if (gpu_tune_mm_find(c, k, &tc) && /* an earlier process's choice */
      cublasLtMatmulAlgoCheck(c->lt, m->desc, m->la, m->lb, m->lc, m->lc,
                              &tc.algo, &chk) == CUBLAS_STATUS_SUCCESS &&
      chk.workspaceSize <= tc.ws) {
    m->algo = tc.algo;
    m->ws = tc.ws;
    m->ms = tc.ms;
    c->tune_loaded++;
    if (c->tune_log)
      fprintf(stderr, "tune: matmul %lldx%lldx%lld: from the tuning cache\n",
              (long long)k->m, (long long)k->n, (long long)k->k);
    return remember(c, &tc, d);
  }
  cublasLtMatmulPreference_t pref;
  GPU_BLAS(d, mm_pref(0, &pref));
  cublasLtMatmulHeuristicResult_t *r = base_malloc(GPU_MM_WIDE * sizeof *r);
  int nr = 0;
  if (!r) {
    cublasLtMatmulPreferenceDestroy(pref);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  cublasStatus_t e =
      cublasLtMatmulAlgoGetHeuristic(c->lt, m->desc, m->la, m->lb, m->lc, m->lc,
                                     pref, GPU_MM_CANDIDATES, r, &nr);
  cublasLtMatmulPreferenceDestroy(pref);
  if (e != CUBLAS_STATUS_SUCCESS || nr < 1)
    free(r);
  if (e != CUBLAS_STATUS_SUCCESS)
    return gpu_blas_fail(d, e, "cublasLtMatmulAlgoGetHeuristic");
  if (nr < 1)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "cuBLASLt has no algorithm for a matmul");
  int nh = nr;
  const char *sweep = getenv("SUPEROPT_MM_SWEEP"); /* set and not empty, as
                                                     tune/store.c reads it */
  if (sweep && *sweep)
    wider(c, m, r, &nr);
  float ms;
  int i = fastest(c, k, m, r, nr, &ms);
  if (c->tune_log && nr > nh)
    fprintf(stderr,
            "tune: matmul %lldx%lldx%lld: %d candidates (%d of the "
            "heuristic's), the fastest %.4f ms is the %s's #%d\n",
            (long long)k->m, (long long)k->n, (long long)k->k, nr, nh, ms,
            i < nh ? "heuristic" : "sweep", i < nh ? i : i - nh);
  gpu_mm_choice ch = {*k, r[i].algo, r[i].workspaceSize, ms};
  free(r);
  m->algo = ch.algo;
  m->ws = ch.ws;
  m->ms = ms;
  base_status st = remember(c, &ch, d);
  if (!st)
    gpu_tune_mm_add(c, &ch);
  return st;
}

/* ---- kwg.cu's matmul against cuBLASLt's (gpu_wg_choose) ------------------
 * Both on the same scratch operands: cuBLASLt's chosen algorithm and the
 * epilogue kernel the executor adds after it (gpu_mm_enqueue), against
 * each of kwg.cu's tilings with the whole epilogue in its stores. */

struct gpu_wg_choice {
  gpu_mm_key key;
  int fn, var;
};

typedef struct wg_run {
  const cxk_wg *w;
  const float *bias, *res;
  float *y;
  int fn;
} wg_run;

static int run_wg(gpu_ctx *c, const void *u) {
  const wg_run *r = u;
  return cxk_wg_mm(c->stream, r->w, r->bias, r->res, r->y, r->fn) !=
         cudaSuccess;
}

typedef struct lt_run {
  gpu_mm *m;
  mm_scratch *s;
  int fn;
} lt_run;

static int run_lt(gpu_ctx *c, const void *u) {
  const lt_run *r = u;
  if (run_mm(c, &(mm_run){r->m, &r->m->algo, r->m->ws, r->s}))
    return 1;
  return r->m->post_act && cxk_bias_act(c->stream, r->s->c, NULL, r->m->count,
                                        r->m->n, 1, r->fn, 0.0f, 0.0f);
}

/* The fastest tiling of kwg.cu for k on s (bt: s's b transposed, y its
 * output), checked against cuBLASLt's result; -1 where none beats
 * lt_ms or agrees. */
static int wg_fastest(gpu_ctx *c, const gpu_mm_key *k, gpu_mm *m, int fn,
                      mm_scratch *s, float *bt, float *y) {
  lt_run lr = {m, s, fn};
  float lt_ms = gpu_tune_time(c, run_lt, &lr, s->e0, s->e1), best = 1e30f;
  int var = -1;
  cxk_wg w;
  wg_run r = {&w, k->bias ? s->bias : NULL, s->cin, y, fn};
  for (int v = 0; v < cxk_wg_variants(); v++) {
    if (!cxk_wg_prepare(&w, s->b, bt, k->m, k->n, k->k, v))
      continue;
    float t = gpu_tune_time(c, run_wg, &r, s->e0, s->e1);
    if (t < best)
      best = t, var = v;
  }
  double dist = 1e30;
  if (var >= 0 && best < 0.98f * lt_ms &&
      cxk_wg_prepare(&w, s->b, bt, k->m, k->n, k->k, var) && !run_lt(c, &lr) &&
      !run_wg(c, &r) && cudaStreamSynchronize(c->stream) == cudaSuccess)
    dist = gpu_rel_l2(s->c, y, k->m * k->n, CXK_F32);
  if (c->tune_log)
    fprintf(stderr,
            "tune: matmul %lldx%lldx%lld fn %d: kwg tiling %d %.4f ms, "
            "cuBLASLt and epilogue %.4f ms, relative L2 %.2g: %s\n",
            (long long)k->m, (long long)k->n, (long long)k->k, fn, var, best,
            lt_ms, dist, dist <= GPU_WG_VERIFY_TOL ? "kwg" : "cuBLASLt");
  cudaGetLastError();
  return dist <= GPU_WG_VERIFY_TOL ? var : -1;
}

/* s's b (our a, [m, k]) and a (our b, [k, n]) drawn at random, and bt
 * ([n, k]) a's transpose. */
static int wg_operands(gpu_ctx *c, const gpu_mm_key *k, mm_scratch *s,
                       float *bt) {
  return gpu_fill_random(c->stream, s->a, k->k * k->n, 7, CXK_F32) ||
         gpu_fill_random(c->stream, s->b, k->m * k->k, 8, CXK_F32) ||
         gpu_fill_random(c->stream, s->bias, k->n, 9, CXK_F32) ||
         gpu_transpose2(c->stream, s->a, bt, k->k, k->n) != cudaSuccess;
}

static int wg_remember(gpu_ctx *c, const gpu_mm_key *k, int fn, int var) {
  if (c->nwgs == c->capwgs) {
    int cap = c->capwgs ? 2 * c->capwgs : 16;
    struct gpu_wg_choice *n = base_realloc(c->wgs, (size_t)cap * sizeof *n);
    if (!n)
      return var; /* not kept: timed again next time */
    c->wgs = n, c->capwgs = cap;
  }
  c->wgs[c->nwgs++] = (struct gpu_wg_choice){*k, fn, var};
  return var;
}

int gpu_wg_choose(gpu_ctx *c, const gpu_mm_key *k, gpu_mm *m, int fn) {
  const char *env = getenv("SUPEROPT_WG");
  if ((env && !strcmp(env, "0")) || k->dtype != CXK_F32 || k->strict ||
      k->transa || k->batch != 1 || !cxk_wg_fn_ok(fn) ||
      !cxk_wg_ok(k->m, k->n, k->k) || !cxk_wg_runs_here())
    return -1;
  if (env && !strcmp(env, "1"))
    return 0;
  for (int i = 0; i < c->nwgs; i++)
    if (c->wgs[i].fn == fn && !memcmp(&c->wgs[i].key, k, sizeof *k))
      return c->wgs[i].var;
  mm_scratch s;
  float *bt = NULL, *y = NULL;
  int var = -1;
  if (scratch_new(c, k, m->ws, &s) == 0 &&
      cudaMalloc((void **)&bt, (size_t)(k->n * k->k) * 4) == cudaSuccess &&
      cudaMalloc((void **)&y, (size_t)(k->m * k->n) * 4) == cudaSuccess &&
      !wg_operands(c, k, &s, bt)) {
    if (k->bias)
      cublasLtMatmulDescSetAttribute(m->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                     &s.bias, sizeof s.bias);
    var = wg_fastest(c, k, m, fn, &s, bt, y);
  }
  scratch_free(&s);
  cudaFree(bt), cudaFree(y);
  cudaGetLastError();
  return wg_remember(c, k, fn, var);
}
