/* dnn.c: convolutions through cuDNN's graph (backend) API, autotuned.
 *
 * The legacy cudnnFind only knows the classic algorithms; the graph API's
 * engines include the Hopper implicit-GEMM kernels that frameworks reach
 * with cudnn.benchmark. For one convolution geometry this builds the
 * operation graph, asks heuristics (mode A) for engine configurations,
 * finalises up to GPU_DNN_CANDIDATES execution plans, times each on scratch
 * buffers (gpu_tune_time, time.c: a CUDA graph of back-to-back runs
 * replayed, median of 5 replays after a warm-up) and keeps the fastest. In
 * strict fp32 mode engines with the tensor-core or down-convert numerical notes
 * (TF32) are skipped. Failure to find any plan is not an error: the caller
 * falls back to the legacy algorithm.
 *
 * Where the convolution has a bias, a residual add, relu or a clip
 * (gpu_conv_key.fep), the same is done for the operation graph conv -> add
 * bias -> add residual -> relu (or the parts it has): the
 * engines that compute the epilogue as they store the result, saving the
 * executor's bias kernel (a pass over the output) where that is faster.
 * Each node's variant pack remembers its pointers and is made again when
 * one changed (another arena, another stream's workspace).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "../gpu_int.h"

#define GPU_DNN_CANDIDATES 10
#define GPU_DNN_WS_MAX ((int64_t)256 << 20)
/* runtime-compiled candidates per operation graph: each costs plan time
 * (ResNet-50's residual convolutions: 33 s of `run` with all ten; with
 * two, 9.2 s at batch 16 against 4.1 s with none, H200, and they keep
 * most of the gain that one keeps half of: docs/cuda.md) */
#define GPU_DNN_RTC_MAX 2

typedef cudnnBackendDescriptor_t bdesc;

#define BK(call)                                                               \
  do {                                                                         \
    cudnnStatus_t bk_e_ = (call);                                              \
    if (bk_e_ != CUDNN_STATUS_SUCCESS)                                         \
      return bk_e_;                                                            \
  } while (0)

static cudnnStatus_t set(bdesc d, cudnnBackendAttributeName_t a,
                         cudnnBackendAttributeType_t t, int64_t n,
                         const void *v) {
  return cudnnBackendSetAttribute(d, a, t, n, v);
}

/* A tensor descriptor of logical dims (N, C, H, W), NCHW or, when cl,
 * NHWC (for a filter: KRSC) in memory, of element type dt (CXK_*); virt:
 * an intermediate of the operation graph that never reaches memory
 * (float32 whatever dt is). */
static cudnnStatus_t tensor(bdesc *t, int64_t uid, const int64_t dim[4], int cl,
                            int virt, int dt) {
  int64_t st[4] = {dim[1] * dim[2] * dim[3], dim[2] * dim[3], dim[3], 1};
  if (cl) {
    st[1] = 1;
    st[3] = dim[1];
    st[2] = dim[1] * dim[3];
  }
  int64_t align = 16;
  bool v = virt != 0;
  cudnnDataType_t f = virt || dt == CXK_F32 ? CUDNN_DATA_FLOAT
                      : dt == CXK_F16       ? CUDNN_DATA_HALF
                                            : CUDNN_DATA_BFLOAT16;
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
  BK(set(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f));
  BK(set(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim));
  BK(set(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st));
  BK(set(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  BK(set(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  if (virt)
    BK(set(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
  return cudnnBackendFinalize(*t);
}

static cudnnStatus_t conv_desc(bdesc *c, const gpu_conv_key *k) {
  int64_t two = 2, pad[2] = {k->pad[0], k->pad[1]};
  int64_t str[2] = {k->stride[0], k->stride[1]},
          dil[2] = {k->dil[0], k->dil[1]};
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t m = CUDNN_CROSS_CORRELATION;
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, c));
  BK(set(*c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f));
  BK(set(*c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
         &m));
  BK(set(*c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two));
  BK(set(*c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
  BK(set(*c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str));
  BK(set(*c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  BK(set(*c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  return cudnnBackendFinalize(*c);
}

/* Output size of one spatial dimension. */
static int64_t out_dim(int64_t in, int64_t k, int pad, int st, int dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / st + 1;
}

/* The descriptors of one convolution's operation graph, all freed by
 * graph_free; ops: the operations in order (the convolution, then the
 * epilogue's pointwise operations). Tensor uids: UID_*. */
enum { UID_X = 1, UID_W, UID_Y, UID_B, UID_R, UID_V0 = 10 };
#define GRAPH_DESCS 16
typedef struct graph_descs {
  bdesc all[GRAPH_DESCS], ops[4], graph;
  int n, nops;
} graph_descs;

static void graph_free(graph_descs *g) {
  if (g->graph)
    cudnnBackendDestroyDescriptor(g->graph);
  for (int i = g->n - 1; i >= 0; i--)
    if (g->all[i])
      cudnnBackendDestroyDescriptor(g->all[i]);
  memset(g, 0, sizeof *g);
}

/* A new descriptor slot of g (freed with it); NULL when g is full. */
static bdesc *slot(graph_descs *g) {
  return g->n < GRAPH_DESCS ? &g->all[g->n++] : NULL;
}

static void dims_of(const gpu_conv_key *k, int64_t x[4], int64_t w[4],
                    int64_t y[4]) {
  int64_t xd[4] = {k->n, k->c, k->h, k->w};
  int64_t wd[4] = {k->o, k->c / k->groups, k->kh, k->kw};
  int64_t yd[4] = {k->n, k->o,
                   out_dim(k->h, k->kh, k->pad[0], k->stride[0], k->dil[0]),
                   out_dim(k->w, k->kw, k->pad[1], k->stride[1], k->dil[1])};
  memcpy(x, xd, sizeof xd), memcpy(w, wd, sizeof wd), memcpy(y, yd, sizeof yd);
}

/* Appends the pointwise operation y = mode(x, b) (b NULL: unary) to g. */
static cudnnStatus_t pointwise(graph_descs *g, cudnnPointwiseMode_t mode,
                               bdesc x, bdesc b, bdesc y, float hi) {
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  bdesc *pw = slot(g), *op = slot(g);
  if (!op || g->nops == 4)
    return CUDNN_STATUS_NOT_SUPPORTED;
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw));
  BK(set(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  BK(set(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f));
  if (hi > 0.0f) { /* relu clipped to [0, hi] */
    float lo = 0.0f;
    BK(set(*pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_FLOAT, 1,
           &lo));
    BK(set(*pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_FLOAT, 1,
           &hi));
  }
  BK(cudnnBackendFinalize(*pw));
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                                  op));
  BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw));
  BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  if (b)
    BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
  BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  BK(cudnnBackendFinalize(*op));
  g->ops[g->nops++] = *op;
  return CUDNN_STATUS_SUCCESS;
}

/* The operation graph of k's convolution, with k->fep's epilogue where
 * fused: conv -> (+ bias) -> (+ residual) -> (relu or clip) -> y, the
 * intermediates virtual. */
static cudnnStatus_t graph_build(cudnnHandle_t h, const gpu_conv_key *k,
                                 int fused, graph_descs *g) {
  int64_t xd[4], wd[4], yd[4], bd[4] = {1, k->o, 1, 1};
  dims_of(k, xd, wd, yd);
  float one = 1.0f, zero = 0.0f;
  int fep = fused ? k->fep : 0;
  static const int step_bit[3] = {GPU_FEP_BIAS, GPU_FEP_ADD,
                                  GPU_FEP_RELU | GPU_FEP_CLIP};
  int nsteps = 0;
  for (int i = 0; i < 3; i++)
    nsteps += !!(fep & step_bit[i]);
  bdesc *x = slot(g), *w = slot(g), *y = slot(g), *conv = slot(g),
        *op = slot(g);
  if (!op)
    return CUDNN_STATUS_NOT_SUPPORTED;
  int64_t uid = UID_V0;
  BK(tensor(x, UID_X, xd, k->cl, 0, k->dtype));
  BK(tensor(w, UID_W, wd, k->cl, 0, k->dtype));
  BK(tensor(y, nsteps ? uid++ : UID_Y, yd, k->cl, nsteps > 0, k->dtype));
  BK(conv_desc(conv, k));
  BK(cudnnBackendCreateDescriptor(
      CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, op));
  BK(set(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x));
  BK(set(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, w));
  BK(set(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, y));
  BK(set(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, conv));
  BK(set(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT,
         1, &one));
  BK(set(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT,
         1, &zero));
  BK(cudnnBackendFinalize(*op));
  g->ops[g->nops++] = *op;
  bdesc cur = *y;                        /* the value so far */
  for (int step = 0; step < 3; step++) { /* bias, residual, activation */
    if (!(fep & step_bit[step]))
      continue;
    bdesc *b = step == 2 ? NULL : slot(g), *t = slot(g);
    if (!t || (step < 2 && !b))
      return CUDNN_STATUS_NOT_SUPPORTED;
    if (step == 0)
      BK(tensor(b, UID_B, bd, k->cl, 0, k->dtype));
    else if (step == 1)
      BK(tensor(b, UID_R, yd, k->cl, 0, k->dtype));
    int last = --nsteps == 0;
    BK(tensor(t, last ? UID_Y : uid++, yd, k->cl, !last, k->dtype));
    BK(pointwise(g, step == 2 ? CUDNN_POINTWISE_RELU_FWD : CUDNN_POINTWISE_ADD,
                 cur, b ? *b : NULL, *t,
                 step == 2 && (fep & GPU_FEP_CLIP) ? k->hi : 0.0f));
    cur = *t;
  }
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                  &g->graph));
  BK(set(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
         g->nops, g->ops));
  BK(set(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  return cudnnBackendFinalize(g->graph);
}

/* Attribute attr (of type t) of cfg's engine, up to max elements into v:
 * their number, or -1 where it cannot be read. */
static int64_t engine_attr(bdesc cfg, cudnnBackendAttributeName_t attr,
                           cudnnBackendAttributeType_t t, void *v,
                           int64_t max) {
  bdesc eng = NULL;
  int64_t n = 0, got = -1;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                               &eng) == CUDNN_STATUS_SUCCESS &&
      cudnnBackendGetAttribute(eng, attr, t, max, &n, v) ==
          CUDNN_STATUS_SUCCESS)
    got = n < max ? n : max;
  if (eng)
    cudnnBackendDestroyDescriptor(eng);
  return got;
}

/* Does cfg's engine compute in TF32 (tensor cores on float data)? Unknown
 * counts as TF32: strict mode skips it. */
static int uses_tf32(bdesc cfg) {
  int v[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t n = engine_attr(cfg, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                          CUDNN_TYPE_NUMERICAL_NOTE, v,
                          CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  int tf32 = n < 0;
  for (int64_t i = 0; i < n; i++)
    tf32 |= v[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
            v[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
  return tf32;
}

/* Is cfg's engine compiled when its plan is finalised (cuDNN's runtime
 * fusion engines: a fraction of a second to a second each)? */
static int compiles_at_runtime(bdesc cfg) {
  int v[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t n =
      engine_attr(cfg, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                  CUDNN_TYPE_BEHAVIOR_NOTE, v, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
  for (int64_t i = 0; i < n; i++)
    if (v[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)
      return 1;
  return 0;
}

static cudnnStatus_t make_plan(cudnnHandle_t h, bdesc cfg, bdesc *plan,
                               int64_t *ws) {
  int64_t n = 0;
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                                  plan));
  BK(set(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
  BK(set(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  BK(cudnnBackendFinalize(*plan));
  return cudnnBackendGetAttribute(*plan,
                                  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                  CUDNN_TYPE_INT64, 1, &n, ws);
}

/* ---- runtime-compiled plans on disk -------------------------------------
 * A runtime-compiled plan (cuDNN compiles its engine when the plan is
 * finalised: a fraction of a second to a second each) is kept as cuDNN's
 * JSON serialisation in the disk cache (gpu_cache_dir) as <key>.plan.json,
 * the key hashing a plan_id (the convolution key, the epilogue, the
 * heuristics rank and engine, the cuDNN and CUDA versions and the GPU),
 * which also starts the file; the next process finalises it from there
 * without compiling. A file that does not load is compiled again and
 * overwritten; fused plans are verified at tune time either way. */

/* The global index of cfg's engine, or -1. */
static int64_t engine_index(bdesc cfg) {
  int64_t idx = -1;
  return engine_attr(cfg, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64,
                     &idx, 1) == 1
             ? idx
             : -1;
}

/* What a cached plan is for: its file starts with these bytes, compared
 * on load (a hash collision or another file of that name is recompiled).
 * The plain plan (fused 0) is the same for every epilogue. */
typedef struct plan_id {
  gpu_conv_key k;
  int64_t fused, rank, engine, cudnn, cudart, major, minor, sms;
  char gpu[256];
} plan_id;

static void plan_id_of(const gpu_ctx *c, const gpu_conv_key *k, int fused,
                       int64_t rank, bdesc cfg, plan_id *id) {
  memset(id, 0, sizeof *id);
  id->k = *k;
  id->k.ep = 0; /* our depthwise kernel's, not cuDNN's */
  if (!fused)
    id->k.fep = 0, id->k.hi = 0.0f;
  id->fused = fused, id->rank = rank, id->engine = engine_index(cfg);
  id->cudnn = (int64_t)cudnnGetVersion();
  id->cudart = (int64_t)cudnnGetCudartVersion();
  id->major = c->prop.major, id->minor = c->prop.minor;
  id->sms = c->prop.multiProcessorCount;
  snprintf(id->gpu, sizeof id->gpu, "%s", c->prop.name);
}

/* A plan finalised from the file at path, which must start with id (no
 * compilation). */
static cudnnStatus_t plan_load(cudnnHandle_t h, const char *path,
                               const plan_id *id, bdesc *plan, int64_t *ws) {
  base_diag ignore;
  size_t len = 0;
  char *f = base_read_file(path, &len, &ignore);
  if (!f || len <= sizeof *id || memcmp(f, id, sizeof *id)) {
    free(f);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  int64_t n = 0;
  cudnnStatus_t e = cudnnBackendCreateDescriptor(
      CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, plan);
  if (!e)
    e = set(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  if (!e)
    e = set(*plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
            CUDNN_TYPE_CHAR, (int64_t)(len - sizeof *id), f + sizeof *id);
  if (!e)
    e = cudnnBackendFinalize(*plan);
  if (!e)
    e = cudnnBackendGetAttribute(*plan,
                                 CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                 CUDNN_TYPE_INT64, 1, &n, ws);
  free(f);
  return e;
}

/* Writes id, then plan's JSON, to path (in dir); failures are ignored. */
static void plan_save(bdesc plan, const plan_id *id, char *dir,
                      const char *path) {
  int64_t n = 0;
  if (cudnnBackendGetAttribute(
          plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
          0, &n, NULL) != CUDNN_STATUS_SUCCESS ||
      n <= 0)
    return;
  char *f = base_malloc(sizeof *id + (size_t)n);
  base_diag ignore;
  if (f &&
      cudnnBackendGetAttribute(
          plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
          n, &n, f + sizeof *id) == CUDNN_STATUS_SUCCESS) {
    memcpy(f, id, sizeof *id);
    gpu_mkdirs(dir);
    base_write_atomic(path, f, sizeof *id + (size_t)n, &ignore);
  }
  free(f);
}

/* Plan *plan for cfg (heuristics rank `rank`; rtc: its engine compiles at
 * run time): a runtime-compiled one from the disk cache where it is there,
 * else finalised (and then cached). */
static cudnnStatus_t cached_plan(gpu_ctx *c, const gpu_conv_key *k, int fused,
                                 int64_t rank, bdesc cfg, int rtc, bdesc *plan,
                                 int64_t *ws) {
  char dir[1024], path[1200];
  int off = 1;
  plan_id id = {0}; /* set by plan_id_of where the cache is on */
  if (rtc)
    gpu_cache_dir(dir, sizeof dir, &off);
  if (!off) {
    plan_id_of(c, k, fused, rank, cfg, &id);
    snprintf(path, sizeof path, "%s/%016llx.plan.json", dir,
             (unsigned long long)XXH3_64bits(&id, sizeof id));
    cudnnStatus_t e = plan_load(c->dnn, path, &id, plan, ws);
    if (c->tune_log)
      fprintf(stderr, "tune:   runtime-compiled plan %s: %s\n", path,
              e ? "not in the disk cache" : "from the disk cache");
    if (!e) {
      c->dp_disk++;
      return e;
    }
    if (*plan)
      cudnnBackendDestroyDescriptor(*plan);
    *plan = NULL;
  }
  cudnnStatus_t e = make_plan(c->dnn, cfg, plan, ws);
  if (!e && rtc) {
    c->dp_compiled++;
    if (!off)
      plan_save(*plan, &id, dir, path);
  }
  return e;
}

void gpu_dnn_plan_stats(const gpu_ctx *c, int *compiled, int *from_disk) {
  *compiled = c->dp_compiled;
  *from_disk = c->dp_disk;
}

/* Engine configurations for g by heuristics `mode`, up to `want` of them
 * into cfg (created by the caller); their number. */
static int64_t heur_configs(const graph_descs *g, cudnnBackendHeurMode_t mode,
                            bdesc *cfg, int want) {
  bdesc heur = NULL;
  int64_t ncfg = 0;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                                   &heur) != CUDNN_STATUS_SUCCESS ||
      set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->graph) != 0 ||
      set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) !=
          0 ||
      cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, want, &ncfg,
                               cfg) != CUDNN_STATUS_SUCCESS)
    ncfg = 0;
  if (heur)
    cudnnBackendDestroyDescriptor(heur);
  return ncfg < want ? ncfg : want;
}

/* Heuristics mode A's engine configurations for g, in its order, into
 * cfg (GPU_DNN_HEUR of them, zeroed by the caller, freed by cfgs_free):
 * their number. The first GPU_DNN_CANDIDATES usable ones are what
 * candidates() times; a rank in this list names one (gpu_dnn_plan_at). */
#define GPU_DNN_HEUR (GPU_DNN_CANDIDATES * 2)
static int64_t heur_a(const graph_descs *g, bdesc cfg[GPU_DNN_HEUR]) {
  int want = GPU_DNN_HEUR;
  for (int i = 0; i < want; i++)
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                     &cfg[i]) != CUDNN_STATUS_SUCCESS)
      cfg[i] = NULL, want = i; /* cfgs_free stops at the first NULL */
  return heur_configs(g, CUDNN_HEUR_MODE_A, cfg, want);
}

static void cfgs_free(bdesc cfg[GPU_DNN_HEUR]) {
  for (int i = 0; i < GPU_DNN_HEUR && cfg[i]; i++)
    cudnnBackendDestroyDescriptor(cfg[i]);
}

/* *plan for configuration cfg (rank `rank` of heur_a, compiled at run
 * time where rtc), finalised or from the plan cache, where it fits the
 * workspace limit: 1; else 0 and *plan NULL. */
static int usable_plan(gpu_ctx *c, const gpu_conv_key *k, int fused,
                       int64_t rank, bdesc cfg, int rtc, bdesc *plan,
                       int64_t *ws) {
  *plan = NULL;
  if (cached_plan(c, k, fused, rank, cfg, rtc, plan, ws) ==
          CUDNN_STATUS_SUCCESS &&
      *ws <= GPU_DNN_WS_MAX)
    return 1;
  if (*plan)
    cudnnBackendDestroyDescriptor(*plan);
  *plan = NULL;
  return 0;
}

/* Up to GPU_DNN_CANDIDATES finalised plans for g (strict: no TF32), in
 * heuristics mode A's order, of which at most GPU_DNN_RTC_MAX (or
 * $SUPEROPT_DNN_RTC) compile at run time. (Adding the fallback list's
 * engines found nothing faster for ConvNeXt's convolutions on an H200, and
 * after some of them cudnnFindConvolutionForwardAlgorithm failed with an
 * internal error.) */
static int candidates(gpu_ctx *c, const gpu_conv_key *k, int fused,
                      const graph_descs *g, bdesc *plans, int64_t *ws,
                      int *rank, int *engine) {
  int strict = k->strict;
  bdesc cfg[GPU_DNN_HEUR] = {0};
  int np = 0;
  const char *rv = getenv("SUPEROPT_DNN_RTC");
  int rtc_left = rv && *rv >= '0' && *rv <= '9' ? atoi(rv) : GPU_DNN_RTC_MAX;
  int64_t ncfg = heur_a(g, cfg);
  for (int64_t i = 0; i < ncfg && np < GPU_DNN_CANDIDATES; i++) {
    if (strict && uses_tf32(cfg[i]))
      continue;
    int rtc = compiles_at_runtime(cfg[i]);
    if (rtc && rtc_left-- <= 0)
      continue;
    if (usable_plan(c, k, fused, i, cfg[i], rtc, &plans[np], &ws[np]))
      engine[np] = (int)engine_index(cfg[i]), rank[np++] = (int)i;
  }
  cfgs_free(cfg);
  return np;
}

int gpu_dnn_plan_at(gpu_ctx *c, const gpu_conv_key *k, int fused, int rank,
                    int engine, cudnnBackendDescriptor_t *plan, size_t *ws) {
  graph_descs g = {0};
  bdesc cfg[GPU_DNN_HEUR] = {0};
  int ok = 0;
  int64_t w = 0;
  *plan = NULL;
  if (rank >= 0 && graph_build(c->dnn, k, fused, &g) == CUDNN_STATUS_SUCCESS &&
      heur_a(&g, cfg) > rank && engine_index(cfg[rank]) == engine &&
      !(k->strict && uses_tf32(cfg[rank])))
    ok = usable_plan(c, k, fused, rank, cfg[rank],
                     compiles_at_runtime(cfg[rank]), plan, &w);
  cfgs_free(cfg);
  graph_free(&g);
  *ws = (size_t)w;
  return ok;
}

/* The variant pack of ptr: x, w, y, bias, residual, workspace (bias and
 * residual skipped where NULL: the plan has none). */
static cudnnStatus_t variant_pack(bdesc *vp, const void *const ptr[6]) {
  int64_t uids[5];
  void *ptrs[5];
  int64_t n = 0;
  for (int i = 0; i < 5; i++)
    if (ptr[i] || i < 3) {
      uids[n] = UID_X + i;
      ptrs[n++] = (void *)ptr[i];
    }
  void *ws = (void *)ptr[5];
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, vp));
  BK(set(*vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
  BK(set(*vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n,
         ptrs));
  BK(set(*vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
  return cudnnBackendFinalize(*vp);
}

/* An execution plan and its variant pack (u: bdesc[2]). */
static int run_plan(gpu_ctx *c, const void *u) {
  const bdesc *pv = u;
  return cudnnBackendExecute(c->dnn, pv[0], pv[1]) != CUDNN_STATUS_SUCCESS;
}

typedef struct scratch {
  float *x, *w, *y, *r; /* r: a residual of y's size, or NULL */
  void *ws;
  cudaEvent_t e0, e1;
} scratch;

/* Scratch buffers for k's convolution (the filter's elements, at least o
 * of them, serve as a bias), a residual where res, and a workspace of ws
 * bytes; 4 bytes an element (enough for every type), filled as k's type
 * (k->dtype). */
static int scratch_new(gpu_ctx *c, const gpu_conv_key *k, int64_t ws, int res,
                       scratch *s) {
  int64_t xd[4], wd[4], yd[4];
  dims_of(k, xd, wd, yd);
  size_t fx = (size_t)(xd[0] * xd[1] * xd[2] * xd[3]);
  size_t fw = (size_t)(wd[0] * wd[1] * wd[2] * wd[3]);
  size_t fy = (size_t)(yd[0] * yd[1] * yd[2] * yd[3]);
  memset(s, 0, sizeof *s);
  if (cudaMalloc((void **)&s->x, fx * 4) ||
      cudaMalloc((void **)&s->w, fw * 4) ||
      cudaMalloc((void **)&s->y, fy * 4) ||
      (res && cudaMalloc((void **)&s->r, fy * 4)) ||
      cudaMalloc(&s->ws, ws > 0 ? (size_t)ws : 256) ||
      cudaEventCreate(&s->e0) || cudaEventCreate(&s->e1) ||
      cxk_fill_dt(c->stream, k->dtype, s->x, (int64_t)fx, 0.5f) ||
      cxk_fill_dt(c->stream, k->dtype, s->w, (int64_t)fw, 0.01f) ||
      (res && cxk_fill_dt(c->stream, k->dtype, s->r, (int64_t)fy, 0.25f)))
    return -1;
  return 0;
}

static void scratch_free(scratch *s) {
  cudaFree(s->x), cudaFree(s->w), cudaFree(s->y), cudaFree(s->r);
  cudaFree(s->ws);
  if (s->e0)
    cudaEventDestroy(s->e0);
  if (s->e1)
    cudaEventDestroy(s->e1);
  cudaGetLastError();
}

int gpu_dw_args(const gpu_conv_key *k, cxk_dw *a) {
  int st = k->stride[0] >= 1 ? k->stride[0] : 1;
  *a = (cxk_dw){.n = k->n,
                .c = k->c,
                .h = k->h,
                .w = k->w,
                .oh = (k->h + 2 * k->pad[0] - k->kh) / st + 1,
                .ow = (k->w + 2 * k->pad[1] - k->kw) / st + 1,
                .kh = (int)k->kh,
                .kw = (int)k->kw,
                .pt = k->pad[0],
                .pl = k->pad[1],
                .stride = st,
                .fn = CXK_ID,
                .dt = k->dtype};
  return k->cl && k->groups == k->c && k->o == k->c &&
         k->stride[1] == k->stride[0] && k->dil[0] == 1 && k->dil[1] == 1 &&
         cxk_dwconv_ok(a);
}

int gpu_dw_variants(void) {
  const char *e = getenv("SUPEROPT_DWT"); /* 0: kconv.cu's alone */
  return cxk_dwconv_variants() +
         (e && !strcmp(e, "0") ? 0 : cxk_dwt_variants());
}

int gpu_dw_ok(const cxk_dw *a) {
  int nk = cxk_dwconv_variants();
  cxk_dw b = *a;
  b.var -= nk;
  return a->var < nk ? cxk_dwconv_ok(a) : cxk_dwt_ok(&b);
}

cudaError_t gpu_dw_run(cudaStream_t s, const void *x, const void *w,
                       const void *bias, void *y, const cxk_dw *a) {
  int nk = cxk_dwconv_variants();
  cxk_dw b = *a;
  b.var -= nk;
  return a->var < nk ? cxk_dwconv(s, x, w, bias, y, a)
                     : cxk_dwt(s, x, w, bias, y, &b);
}

/* The own depthwise kernel on the scratch buffers (u: dw_run). */
typedef struct dw_run {
  const cxk_dw *a;
  const scratch *s;
} dw_run;

static int run_dw(gpu_ctx *c, const void *u) {
  const dw_run *r = u;
  return gpu_dw_run(c->stream, r->s->x, r->s->w, NULL, r->s->y, r->a) !=
         cudaSuccess;
}

/* The activation of k's epilogue: CXK_CLIP (to [0, k->hi]), CXK_RELU or
 * CXK_ID. */
static int ep_fn(const gpu_conv_key *k) {
  return k->fep & GPU_FEP_CLIP   ? CXK_CLIP
         : k->fep & GPU_FEP_RELU ? CXK_RELU
                                 : CXK_ID;
}

/* The executor's epilogue kernel over k's output y (numel elements of
 * k's type), in place: bias (or NULL), the residual res where not NULL
 * (cxk_bias_res_act, y's layout; half: cxk_bias_res_act_dt), then fn
 * (CXK_ID, CXK_RELU, or CXK_CLIP to [0, hi]). */
static cudaError_t run_epilogue(cudaStream_t st, const gpu_conv_key *k,
                                float *y, const float *bias, const float *res,
                                int64_t numel, int fn, float hi) {
  int64_t inner = k->cl ? 1 : numel / (k->n * k->o);
  if (k->dtype != CXK_F32)
    return cxk_bias_res_act_dt(st, k->dtype, y, bias, res, numel, k->o, inner,
                               fn, 0.0f, hi, 0, 1, 1);
  if (res)
    return cxk_bias_res_act(st, y, bias, res, numel, k->o, inner, fn, 0.0f, hi,
                            0, 1, 1);
  return cxk_bias_act(st, y, bias, numel, k->o, inner, fn, 0.0f, hi);
}

/* run_epilogue over the scratch output: bias (or NULL), the scratch
 * residual where s->r (u: ep_run). */
typedef struct ep_run {
  const gpu_conv_key *k;
  const scratch *s;
  int64_t numel;
  const float *bias;
  int fn;
  float hi;
} ep_run;

static int run_ep(gpu_ctx *c, const void *u) {
  const ep_run *r = u;
  return run_epilogue(c->stream, r->k, r->s->y, r->bias, r->s->r, r->numel,
                      r->fn, r->hi) != cudaSuccess;
}

float gpu_dw_time(gpu_ctx *c, const gpu_conv_key *k, int *var, float *ep_ms) {
  cxk_dw a;
  scratch s;
  float best = 1e30f;
  *var = 0;
  if (ep_ms)
    *ep_ms = 1e30f;
  if (!gpu_dw_args(k, &a) || scratch_new(c, k, 256, 0, &s) != 0)
    return best;
  for (a.var = 0; a.var < gpu_dw_variants(); a.var++) {
    if (!gpu_dw_ok(&a)) /* more channels a thread than c divides into, or a
                           tiled one's geometry it does not take */
      continue;
    float ms = gpu_tune_time(c, run_dw, &(dw_run){&a, &s}, s.e0, s.e1);
    if (c->tune_log)
      fprintf(stderr, "tune:   own depthwise shape %d: %.4f ms\n", a.var, ms);
    if (ms < best)
      best = ms, *var = a.var;
  }
  if (ep_ms && best < 1e29f) { /* on the output a shape wrote; s.w, the
                                  filter (o or more floats), as the bias */
    int64_t xd[4], wd[4], yd[4];
    dims_of(k, xd, wd, yd);
    ep_run r = {k, &s, yd[0] * yd[1] * yd[2] * yd[3], s.w, CXK_RELU, 0.0f};
    *ep_ms = gpu_tune_time(c, run_ep, &r, s.e0, s.e1);
  }
  scratch_free(&s);
  return best;
}

int gpu_sk_args(const gpu_conv_key *k, cxk_sk *a) {
  int st = k->stride[0] >= 1 ? k->stride[0] : 1,
      sw = k->stride[1] >= 1 ? k->stride[1] : 1;
  int ep = k->ep;
  *a = (cxk_sk){.n = k->n,
                .c = k->c,
                .h = k->h,
                .w = k->w,
                .o = k->o,
                .oh = (k->h + 2 * k->pad[0] - k->kh) / st + 1,
                .ow = (k->w + 2 * k->pad[1] - k->kw) / sw + 1,
                .kh = (int)k->kh,
                .kw = (int)k->kw,
                .sh = st,
                .sw = sw,
                .pt = k->pad[0],
                .pl = k->pad[1],
                .xcl = !(ep & GPU_SK_NCHW),
                .fn = ep & GPU_FEP_CLIP   ? CXK_CLIP
                      : ep & GPU_FEP_RELU ? CXK_RELU
                                          : CXK_ID,
                .lo = 0.0f,
                .hi = 6.0f,
                .dt = k->dtype};
  return (ep & GPU_SK_ON) && k->cl && k->groups == 1 && k->dil[0] == 1 &&
         k->dil[1] == 1 && cxk_smallk_ok(a);
}

/* ksmallk.cu's kernel on the scratch buffers, with the key's bias (the
 * filter's first elements) and residual (u: sk_run). */
typedef struct sk_run {
  const cxk_sk *a;
  const scratch *s;
  int bias;
} sk_run;

static int run_sk(gpu_ctx *c, const void *u) {
  const sk_run *r = u;
  return cxk_smallk(c->stream, r->s->x, r->s->w, r->bias ? r->s->w : NULL,
                    r->s->r, r->s->y, r->a) != cudaSuccess;
}

/* $SUPEROPT_SK=K: tile K forced (-1: none). */
static int sk_forced_var(void) {
  const char *f = getenv("SUPEROPT_SK");
  char *end = NULL;
  long v = f ? strtol(f, &end, 10) : -1;
  return f && end != f && !*end && v >= 0 && v < 100 ? (int)v : -1;
}

float gpu_sk_time(gpu_ctx *c, const gpu_conv_key *k, int *var, float *ep_ms) {
  cxk_sk a;
  scratch s;
  float best = 1e30f;
  int res = (k->ep & GPU_FEP_ADD) != 0, bias = (k->ep & GPU_FEP_BIAS) != 0;
  int forced = sk_forced_var();
  *var = 0, *ep_ms = 0.0f;
  /* mma.sync of 2-byte types: sm_80 on, in the device and in the build */
  if (!gpu_sk_args(k, &a) || c->prop.major < 8 || !cxk_flash_runs_here() ||
      scratch_new(c, k, 256, res, &s) != 0)
    return best;
  sk_run r = {&a, &s, bias};
  for (a.var = 0; a.var < cxk_smallk_variants(); a.var++) {
    if (!cxk_smallk_ok(&a) || (forced >= 0 && a.var != forced))
      continue;
    float ms = gpu_tune_time(c, run_sk, &r, s.e0, s.e1);
    if (c->tune_log)
      fprintf(stderr, "tune:   own small-K tile %d: %.4f ms\n", a.var, ms);
    if (ms < best)
      best = ms, *var = a.var;
  }
  if (best < 1e29f && (bias || res || a.fn != CXK_ID)) {
    int64_t xd[4], wd[4], yd[4];
    dims_of(k, xd, wd, yd);
    ep_run e = {k,    &s,  yd[0] * yd[1] * yd[2] * yd[3], bias ? s.w : NULL,
                a.fn, 6.0f};
    *ep_ms = gpu_tune_time(c, run_ep, &e, s.e0, s.e1);
    if (*ep_ms > 1e29f)
      *ep_ms = 0.0f;
  }
  scratch_free(&s);
  return best;
}

/* cxk_im2col_rows of a convolution's input (u: im2col_run). */
typedef struct im2col_run {
  const cxk_im2col *a;
  const scratch *s;
} im2col_run;

static int run_im2col(gpu_ctx *c, const void *u) {
  const im2col_run *r = u;
  return cxk_im2col_rows(c->stream, r->s->x, r->s->y, r->a) != cudaSuccess;
}

float gpu_im2col_time(gpu_ctx *c, const cxk_im2col *a) {
  scratch s;
  float ms = 1e30f;
  int64_t nx = a->n * a->h * a->w * a->c;
  int64_t ny = a->n * a->oh * a->ow * a->kh * a->kw * a->c;
  memset(&s, 0, sizeof s);
  if (!cudaMalloc((void **)&s.x, (size_t)nx * 4) &&
      !cudaMalloc((void **)&s.y, (size_t)ny * 4) && !cudaEventCreate(&s.e0) &&
      !cudaEventCreate(&s.e1) && !cxk_fill(c->stream, s.x, nx, 0.5f))
    ms = gpu_tune_time(c, run_im2col, &(im2col_run){a, &s}, s.e0, s.e1);
  scratch_free(&s);
  return ms;
}

/* The pointers of a run on scratch s: x, w, y, the filter as the bias
 * and s->r as the residual where the fused plan has them, the workspace. */
static void scratch_ptrs(const scratch *s, const gpu_conv_key *k, int fused,
                         const void *ptr[6]) {
  int fep = fused ? k->fep : 0;
  ptr[0] = s->x, ptr[1] = s->w, ptr[2] = s->y;
  ptr[3] = fep & GPU_FEP_BIAS ? s->w : NULL;
  ptr[4] = fep & GPU_FEP_ADD ? s->r : NULL;
  ptr[5] = s->ws;
}

void gpu_dnn_autotune(gpu_ctx *c, const gpu_conv_key *k, int fused,
                      gpu_dnn_choice *out) {
  graph_descs g = {0};
  bdesc plans[GPU_DNN_CANDIDATES];
  int64_t ws[GPU_DNN_CANDIDATES], wmax = 0;
  int rank[GPU_DNN_CANDIDATES], engine[GPU_DNN_CANDIDATES];
  memset(out, 0, sizeof *out);
  out->ms = 1e30f;
  int np = graph_build(c->dnn, k, fused, &g) == CUDNN_STATUS_SUCCESS
               ? candidates(c, k, fused, &g, plans, ws, rank, engine)
               : 0;
  for (int i = 0; i < np; i++)
    wmax = ws[i] > wmax ? ws[i] : wmax;
  scratch s;
  int ok = np > 0 &&
           scratch_new(c, k, wmax, fused && (k->fep & GPU_FEP_ADD), &s) == 0;
  int best = -1;
  const void *ptr[6];
  if (ok)
    scratch_ptrs(&s, k, fused, ptr);
  for (int i = 0; ok && i < np; i++) {
    bdesc vp = NULL;
    float t =
        variant_pack(&vp, ptr) == CUDNN_STATUS_SUCCESS
            ? gpu_tune_time(c, run_plan, (bdesc[2]){plans[i], vp}, s.e0, s.e1)
            : 1e30f;
    if (vp)
      cudnnBackendDestroyDescriptor(vp);
    if (c->tune_log)
      fprintf(stderr, "tune:   graph API plan%s %d of %d: %.4f ms\n",
              fused ? " with the epilogue" : "", i, np, t);
    if (t < out->ms) {
      out->ms = t;
      best = i;
    }
  }
  if (np > 0)
    scratch_free(&s);
  for (int i = 0; i < np; i++)
    if (i != best)
      cudnnBackendDestroyDescriptor(plans[i]);
  if (best >= 0) {
    out->plan = plans[best];
    out->ws = (size_t)ws[best];
    out->rank = rank[best];
    out->engine = engine[best];
  }
  out->tried = np;
  graph_free(&g);
}

float gpu_ep_time(gpu_ctx *c, const gpu_conv_key *k) {
  scratch s;
  float ms = 1e30f;
  int64_t xd[4], wd[4], yd[4];
  dims_of(k, xd, wd, yd);
  int64_t ny = yd[0] * yd[1] * yd[2] * yd[3];
  int res = (k->fep & GPU_FEP_ADD) != 0;
  memset(&s, 0, sizeof s); /* the output, a bias and the residual only */
  if (!cudaMalloc((void **)&s.y, (size_t)ny * 4) &&
      !cudaMalloc((void **)&s.w, (size_t)k->o * 4) &&
      !(res && cudaMalloc((void **)&s.r, (size_t)ny * 4)) &&
      !cudaEventCreate(&s.e0) && !cudaEventCreate(&s.e1) &&
      !cxk_fill_dt(c->stream, k->dtype, s.y, ny, 0.5f) &&
      !cxk_fill_dt(c->stream, k->dtype, s.w, k->o, 0.01f) &&
      !(res && cxk_fill_dt(c->stream, k->dtype, s.r, ny, 0.25f))) {
    ep_run r = {k, &s, ny, k->fep & GPU_FEP_BIAS ? s.w : NULL, ep_fn(k), k->hi};
    ms = gpu_tune_time(c, run_ep, &r, s.e0, s.e1);
  }
  scratch_free(&s);
  return ms;
}

/* Element i of the array h of type dt (CXK_*: floats, or the 2-byte
 * elements of a half type) as a float; and v stored there, rounded. */
static float host_get(const void *h, int dt, int64_t i) {
  return dt == CXK_F16    ? ir_f16_value(((const uint16_t *)h)[i])
         : dt == CXK_BF16 ? ir_bf16_value(((const uint16_t *)h)[i])
                          : ((const float *)h)[i];
}

static void host_put(void *h, int dt, int64_t i, float v) {
  if (dt == CXK_F32)
    ((float *)h)[i] = v;
  else
    ((uint16_t *)h)[i] = dt == CXK_F16 ? ir_f16_bits(v) : ir_bf16_bits(v);
}

/* Deterministic values in [-1, 1) for n elements of type dt of a
 * verification input, copied on stream st and complete on return (st is
 * non-blocking: a plain cudaMemcpy from pageable memory may return before
 * the copy lands). */
int gpu_fill_random(cudaStream_t st, float *d, int64_t n, uint32_t seed,
                    int dt) {
  size_t es = cxk_dt_size(dt);
  void *h = base_malloc((size_t)n * es);
  if (!h)
    return -1;
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    host_put(h, dt, i, (float)(seed >> 8) / 8388608.0f - 1.0f);
  }
  int rc = cudaMemcpyAsync(d, h, (size_t)n * es, cudaMemcpyHostToDevice, st) !=
           cudaSuccess;
  rc |= cudaStreamSynchronize(st) != cudaSuccess;
  free(h);
  return rc;
}

/* Relative L2 distance between n elements of type dt at a and b
 * (device), huge where they cannot be read. */
double gpu_rel_l2(const float *a, const float *b, int64_t n, int dt) {
  size_t es = cxk_dt_size(dt);
  char *h = base_malloc(2 * (size_t)n * es);
  double num = 0, den = 0;
  if (!h)
    return 1e30;
  if (cudaMemcpy(h, a, (size_t)n * es, cudaMemcpyDeviceToHost) ||
      cudaMemcpy(h + (size_t)n * es, b, (size_t)n * es,
                 cudaMemcpyDeviceToHost)) {
    free(h);
    return 1e30;
  }
  for (int64_t i = 0; i < n; i++) {
    double ha = host_get(h, dt, i), hb = host_get(h, dt, n + i);
    double d = ha - hb;
    num += d * d, den += ha * ha;
  }
  free(h);
  return num == num && den > 0 ? sqrt(num / den) : num == 0 ? 0 : 1e30;
}

double gpu_dnn_verify(gpu_ctx *c, const gpu_conv_key *k,
                      cudnnBackendDescriptor_t plain, size_t plain_ws,
                      cudnnBackendDescriptor_t fused, size_t fused_ws) {
  int64_t xd[4], wd[4], yd[4];
  dims_of(k, xd, wd, yd);
  int64_t nx = xd[0] * xd[1] * xd[2] * xd[3],
          nw = wd[0] * wd[1] * wd[2] * wd[3],
          ny = yd[0] * yd[1] * yd[2] * yd[3];
  int res = (k->fep & GPU_FEP_ADD) != 0, bias = (k->fep & GPU_FEP_BIAS) != 0;
  int dt = k->dtype; /* buffers of 4 bytes an element: any type's */
  size_t ws = plain_ws > fused_ws ? plain_ws : fused_ws;
  float *x = NULL, *w = NULL, *b = NULL, *r = NULL, *y1 = NULL, *y2 = NULL;
  void *wsp = NULL;
  bdesc vp1 = NULL, vp2 = NULL;
  double err = 1e30;
  if (cudaMalloc((void **)&x, (size_t)nx * 4) ||
      cudaMalloc((void **)&w, (size_t)nw * 4) ||
      cudaMalloc((void **)&b, (size_t)k->o * 4) ||
      cudaMalloc((void **)&r, (size_t)ny * 4) ||
      cudaMalloc((void **)&y1, (size_t)ny * 4) ||
      cudaMalloc((void **)&y2, (size_t)ny * 4) ||
      cudaMalloc(&wsp, ws > 0 ? ws : 256) ||
      gpu_fill_random(c->stream, x, nx, 1, dt) ||
      gpu_fill_random(c->stream, w, nw, 2, dt) ||
      gpu_fill_random(c->stream, b, k->o, 3, dt) ||
      gpu_fill_random(c->stream, r, ny, 4, dt) ||
      cxk_fill_dt(c->stream, dt, y1, ny, 0.0f) ||
      cxk_fill_dt(c->stream, dt, y2, ny, 0.0f))
    goto done;
  const void *p1[6] = {x, w, y1, NULL, NULL, wsp},
             *p2[6] = {x, w, y2, bias ? b : NULL, res ? r : NULL, wsp};
  if (variant_pack(&vp1, p1) != CUDNN_STATUS_SUCCESS ||
      variant_pack(&vp2, p2) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendExecute(c->dnn, plain, vp1) != CUDNN_STATUS_SUCCESS ||
      run_epilogue(c->stream, k, y1, bias ? b : NULL, res ? r : NULL, ny,
                   ep_fn(k), k->hi) != cudaSuccess ||
      cudnnBackendExecute(c->dnn, fused, vp2) != CUDNN_STATUS_SUCCESS ||
      cudaStreamSynchronize(c->stream) != cudaSuccess)
    goto done;
  err = gpu_rel_l2(y1, y2, ny, dt);
done:
  if (vp1)
    cudnnBackendDestroyDescriptor(vp1);
  if (vp2)
    cudnnBackendDestroyDescriptor(vp2);
  cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(r), cudaFree(y1);
  cudaFree(y2), cudaFree(wsp);
  cudaGetLastError();
  return err;
}

double gpu_sk_verify(gpu_ctx *c, const gpu_conv_key *k, int var,
                     cudnnBackendDescriptor_t plain, size_t plain_ws) {
  int64_t xd[4], wd[4], yd[4];
  dims_of(k, xd, wd, yd);
  int64_t nx = xd[0] * xd[1] * xd[2] * xd[3],
          nw = wd[0] * wd[1] * wd[2] * wd[3],
          ny = yd[0] * yd[1] * yd[2] * yd[3];
  cxk_sk a;
  if (!plain || !gpu_sk_args(k, &a))
    return 1e30;
  a.var = var;
  int res = (k->ep & GPU_FEP_ADD) != 0, bias = (k->ep & GPU_FEP_BIAS) != 0;
  int dt = k->dtype; /* buffers of 4 bytes an element: any type's */
  float *x = NULL, *xc = NULL, *w = NULL, *b = NULL, *r = NULL, *y1 = NULL,
        *y2 = NULL;
  void *wsp = NULL;
  bdesc vp = NULL;
  double err = 1e30;
  ir_shape xs = {.rank = 4, .dim = {xd[0], xd[1], xd[2], xd[3]}};
  if (cudaMalloc((void **)&x, (size_t)nx * 4) ||
      cudaMalloc((void **)&xc, (size_t)nx * 4) ||
      cudaMalloc((void **)&w, (size_t)nw * 4) ||
      cudaMalloc((void **)&b, (size_t)k->o * 4) ||
      cudaMalloc((void **)&r, (size_t)ny * 4) ||
      cudaMalloc((void **)&y1, (size_t)ny * 4) ||
      cudaMalloc((void **)&y2, (size_t)ny * 4) ||
      cudaMalloc(&wsp, plain_ws > 0 ? plain_ws : 256) ||
      gpu_fill_random(c->stream, x, nx, 1, dt) ||
      gpu_fill_random(c->stream, w, nw, 2, dt) ||
      gpu_fill_random(c->stream, b, k->o, 3, dt) ||
      gpu_fill_random(c->stream, r, ny, 4, dt) ||
      cxk_fill_dt(c->stream, dt, y1, ny, 0.0f) ||
      cxk_fill_dt(c->stream, dt, y2, ny, 0.0f))
    goto done;
  /* cuDNN's plan reads x channels-last (k->cl); the kernel an NCHW x as
   * it is where the key says so: the same values converted for cuDNN */
  if (a.xcl)
    cudaMemcpyAsync(xc, x, (size_t)nx * cxk_dt_size(dt),
                    cudaMemcpyDeviceToDevice, c->stream);
  else if (gpu_convert_dt(c->stream, &xs, x, xc, 1, dt) != cudaSuccess)
    goto done;
  const void *p1[6] = {xc, w, y1, NULL, NULL, wsp};
  if (variant_pack(&vp, p1) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendExecute(c->dnn, plain, vp) != CUDNN_STATUS_SUCCESS ||
      run_epilogue(c->stream, k, y1, bias ? b : NULL, res ? r : NULL, ny, a.fn,
                   a.hi) != cudaSuccess ||
      cxk_smallk(c->stream, x, w, bias ? b : NULL, res ? r : NULL, y2, &a) !=
          cudaSuccess ||
      cudaStreamSynchronize(c->stream) != cudaSuccess)
    goto done;
  err = gpu_rel_l2(y1, y2, ny, dt);
done:
  if (vp)
    cudnnBackendDestroyDescriptor(vp);
  cudaFree(x), cudaFree(xc), cudaFree(w), cudaFree(b), cudaFree(r);
  cudaFree(y1), cudaFree(y2), cudaFree(wsp);
  cudaGetLastError();
  return err;
}

double gpu_dw_verify(gpu_ctx *c, const gpu_conv_key *k, int var,
                     cudnnBackendDescriptor_t plain, size_t plain_ws) {
  int64_t xd[4], wd[4], yd[4];
  dims_of(k, xd, wd, yd);
  int64_t nx = xd[0] * xd[1] * xd[2] * xd[3],
          nw = wd[0] * wd[1] * wd[2] * wd[3],
          ny = yd[0] * yd[1] * yd[2] * yd[3];
  cxk_dw a;
  if (!plain || !gpu_dw_args(k, &a))
    return 1e30;
  a.var = var;
  int dt = k->dtype;
  float *x = NULL, *w = NULL, *wt = NULL, *y1 = NULL, *y2 = NULL;
  void *wsp = NULL;
  bdesc vp = NULL;
  double err = 1e30;
  /* the filter [c, 1, k, k] as [1, c, k, k] NCHW -> NHWC: [k, k, c] */
  ir_shape ws = {.rank = 4, .dim = {1, k->c, k->kh, k->kw}};
  if (!gpu_dw_ok(&a) || cudaMalloc((void **)&x, (size_t)nx * 4) ||
      cudaMalloc((void **)&w, (size_t)nw * 4) ||
      cudaMalloc((void **)&wt, (size_t)nw * 4) ||
      cudaMalloc((void **)&y1, (size_t)ny * 4) ||
      cudaMalloc((void **)&y2, (size_t)ny * 4) ||
      cudaMalloc(&wsp, plain_ws > 0 ? plain_ws : 256) ||
      gpu_fill_random(c->stream, x, nx, 1, dt) ||
      gpu_fill_random(c->stream, w, nw, 2, dt) ||
      cxk_fill_dt(c->stream, dt, y1, ny, 0.0f) ||
      cxk_fill_dt(c->stream, dt, y2, ny, 0.0f) ||
      gpu_convert_dt(c->stream, &ws, w, wt, 1, dt) != cudaSuccess)
    goto done;
  const void *p1[6] = {x, w, y1, NULL, NULL, wsp};
  if (variant_pack(&vp, p1) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendExecute(c->dnn, plain, vp) != CUDNN_STATUS_SUCCESS ||
      gpu_dw_run(c->stream, x, wt, NULL, y2, &a) != cudaSuccess ||
      cudaStreamSynchronize(c->stream) != cudaSuccess)
    goto done;
  err = gpu_rel_l2(y1, y2, ny, dt);
done:
  if (vp)
    cudnnBackendDestroyDescriptor(vp);
  cudaFree(x), cudaFree(w), cudaFree(wt), cudaFree(y1), cudaFree(y2);
  cudaFree(wsp);
  cudaGetLastError();
  return err;
}

base_status gpu_dnn_execute(gpu_ctx *c, cudnnBackendDescriptor_t plan,
                            gpu_dnn_pack *vp, const float *x, const float *w,
                            float *y, const float *b, const float *r, void *ws,
                            base_diag *d) {
  const void *ptr[6] = {x, w, y, b, r, ws};
  if (vp->vp && memcmp(ptr, vp->ptr, sizeof ptr)) { /* moved: made again */
    cudnnBackendDestroyDescriptor(vp->vp);
    vp->vp = NULL;
  }
  if (!vp->vp) {
    cudnnStatus_t e = variant_pack(&vp->vp, ptr);
    if (e != CUDNN_STATUS_SUCCESS) {
      if (vp->vp)
        cudnnBackendDestroyDescriptor(vp->vp);
      vp->vp = NULL;
      return gpu_dnn_fail(d, e, "cuDNN variant pack");
    }
    memcpy(vp->ptr, ptr, sizeof ptr);
  }
  GPU_DNN(d, cudnnBackendExecute(c->dnn, plan, vp->vp));
  return BASE_OK;
}
