/* conv.c: the choice of a convolution's engine, kept per geometry in the
 * context's algorithm cache and the tuning cache: cudnnFind's legacy
 * algorithms, the graph API's autotuned plans (dnn.c) with or without
 * the epilogue, the executor's own depthwise kernel, and the time of a
 * GEMM's patches (gpu_conv_patch_time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu_int.h"

static gpu_conv_choice *find_choice(gpu_ctx *c, const gpu_conv_key *k) {
  for (int i = 0; i < c->nconvs; i++)
    if (!memcmp(&c->convs[i].key, k, sizeof *k))
      return &c->convs[i];
  return NULL;
}

static base_status remember(gpu_ctx *c, const gpu_conv_choice *ch,
                            base_diag *d) {
  if (c->nconvs == c->capconvs) {
    int cap = c->capconvs ? 2 * c->capconvs : 32;
    gpu_conv_choice *nc = base_realloc(c->convs, (size_t)cap * sizeof *nc);
    if (!nc)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    c->convs = nc;
    c->capconvs = cap;
  }
  c->convs[c->nconvs++] = *ch;
  return BASE_OK;
}

/* Picks the fastest successful result within the workspace limit; strict
 * mode takes only plain FMA math (no TF32). */
static int pick(const cudnnConvolutionFwdAlgoPerf_t *r, int n, int strict) {
  for (int i = 0; i < n; i++) {
    if (r[i].status != CUDNN_STATUS_SUCCESS || r[i].memory > GPU_CONV_WS_MAX)
      continue;
    if (strict && r[i].mathType != CUDNN_FMA_MATH &&
        r[i].mathType != CUDNN_DEFAULT_MATH)
      continue;
    return i;
  }
  return -1;
}

long gpu_conv_fuse_env(int *always) {
  const char *cf = getenv("SUPEROPT_CONV_FUSE");
  char *end = NULL;
  long mask = cf ? strtol(cf, &end, 10) : 0;
  if (always)
    *always = cf && !strcmp(cf, "always");
  return cf && end != cf && !*end ? mask : -1L;
}

float gpu_conv_patch_time(gpu_ctx *c, const gpu_conv_key *k,
                          const cxk_im2col *a) {
  gpu_conv_choice *ch = find_choice(c, k);
  if (ch && ch->patch_ms > 0)
    return ch->patch_ms;
  float ms = gpu_im2col_time(c, a);
  if (ch && ms < 1e29f) {
    ch->patch_ms = ms;
    gpu_tune_conv_patches(c, k, ms);
  }
  return ms;
}

/* ksmallk.cu's kernel (k->ep: GPU_SK_ON), with the whole epilogue,
 * against the choice so far (out: its time out->ms, plus the epilogue
 * kernel unless fused; plain: the best plain engine's time): taken where
 * 3% faster ($SUPEROPT_SK=always or =K: wherever it runs; =off: never),
 * and only where it computes what the graph API's plain plan (g) and the
 * epilogue kernel compute (gpu_sk_verify; not checked without a plan).
 * Where timed, the epilogue kernel's time becomes out->ep_ms when none was
 * measured, so that a GEMM is charged it too (run/conv.c). Returns its
 * time (-1: not timed), *var its tile. */
static float choose_smallk(gpu_ctx *c, const gpu_conv_key *k,
                           gpu_conv_choice *out, float plain,
                           const gpu_dnn_choice *g, int *var) {
  const char *f = getenv("SUPEROPT_SK");
  if (!(k->ep & GPU_SK_ON) || (f && !strcmp(f, "off")))
    return -1.0f;
  float ep = 0.0f, ms = gpu_sk_time(c, k, var, &ep);
  if (ms > 1e29f)
    return -1.0f;
  if (!out->fused && out->ep_ms == 0.0f)
    out->ep_ms = ep;
  float rival = out->fused ? out->ms : plain + ep;
  int forced = f && strcmp(f, "off") && *f;
  int take = forced || ms < 0.97f * rival;
  /* taken only where it computes what cuDNN's plain plan and the epilogue
   * kernel compute (where there is such a plan to compare with) */
  double err =
      take && g->plan ? gpu_sk_verify(c, k, *var, g->plan, g->ws) : 0.0;
  if (take && c->tune_log)
    fprintf(stderr,
            "tune: conv2d %lldx%lldx%lldx%lld -> %lld, kernel %lldx%lld: the "
            "small-K kernel differs from cuDNN's plain plan by %.2e "
            "(relative L2)%s\n",
            (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w,
            (long long)k->o, (long long)k->kh, (long long)k->kw, err,
            err > GPU_DNN_VERIFY_TOL ? ": not used" : "");
  if (take && err <= GPU_DNN_VERIFY_TOL) {
    out->own = GPU_OWN_SK + *var;
    out->fused = 0;
    out->ms = ms;
  }
  return ms;
}

base_status
gpu_conv_choose(gpu_ctx *c, const gpu_conv_key *k, cudnnTensorDescriptor_t x,
                cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                cudnnTensorDescriptor_t y, gpu_conv_choice *out, base_diag *d) {
  gpu_conv_choice *hit = find_choice(c, k);
  if (hit) {
    *out = *hit;
    return BASE_OK;
  }
  if (gpu_tune_conv_find(c, k, out)) { /* an earlier process's choice */
    if (c->tune_log)
      fprintf(stderr,
              "tune: conv2d %lldx%lldx%lldx%lld -> %lld, kernel %lldx%lld, "
              "stride %d, groups %d: from the tuning cache (%s, %.4f ms)\n",
              (long long)k->n, (long long)k->c, (long long)k->h,
              (long long)k->w, (long long)k->o, (long long)k->kh,
              (long long)k->kw, k->stride[0], k->groups,
              out->own     ? "own"
              : out->fused ? "graph API with epilogue"
              : out->plan  ? "graph API"
                           : "legacy",
              out->ms);
    base_status st = remember(c, out, d);
    if (st && out->plan)
      cudnnBackendDestroyDescriptor(out->plan);
    return st;
  }
  cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int n = 0;
  GPU_DNN(d,
          cudnnFindConvolutionForwardAlgorithm(
              c->dnn, x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, r));
  int strict = k->strict && k->dtype == CXK_F32; /* half: tensor cores */
  int i = pick(r, n, strict);
  if (i < 0)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "cuDNN found no usable algorithm for a convolution "
                         "(%lldx%lldx%lldx%lld, kernel %lldx%lld)",
                         (long long)k->n, (long long)k->c, (long long)k->h,
                         (long long)k->w, (long long)k->kh, (long long)k->kw);
  memset(out, 0, sizeof *out);
  out->key = *k;
  out->algo = r[i].algo;
  out->math = strict ? CUDNN_FMA_MATH : r[i].mathType;
  out->ws = r[i].memory;
  out->plan = NULL;
  gpu_dnn_choice g = {0}, gf = {0};
  if (!c->opt.legacy_conv)
    gpu_dnn_autotune(c, k, 0, &g);
  int graph_api = g.plan && g.ms < r[i].time; /* faster than the legacy */
  float best = graph_api ? g.ms : r[i].time;
  /* the convolution with its epilogue in one plan (cuDNN's fusion engines)
   * against the best engine plus the epilogue kernel (none where the
   * legacy engine wins and adds bias and relu itself:
   * cudnnConvolutionBiasActivationForward) */
  out->fused = 0;
  out->ep_ms = 0.0f;
  if (!c->opt.legacy_conv && k->fep) {
    gpu_dnn_autotune(c, k, 1, &gf);
    int legacy_fuses = !graph_api && k->fep == (GPU_FEP_BIAS | GPU_FEP_RELU) &&
                       k->dtype == CXK_F32; /* half: the bias kernel */
    float ep = !gf.plan ? 1e30f : legacy_fuses ? 0.0f : gpu_ep_time(c, k);
    int always;
    gpu_conv_fuse_env(&always);
    if (ep < 1e29f) {
      out->ep_ms = ep;
      out->fused = gf.ms < best + ep || always;
    }
    /* taken only where it computes what the plain plan and the executor's
     * epilogue kernel compute */
    double err = out->fused && g.plan
                     ? gpu_dnn_verify(c, k, g.plan, g.ws, gf.plan, gf.ws)
                     : 1e30;
    if (out->fused && c->tune_log)
      fprintf(stderr,
              "tune: conv2d %lldx%lldx%lldx%lld -> %lld, kernel %lldx%lld, "
              "epilogue %d: the fused plan differs from the plain one by "
              "%.2e (relative L2)%s\n",
              (long long)k->n, (long long)k->c, (long long)k->h,
              (long long)k->w, (long long)k->o, (long long)k->kh,
              (long long)k->kw, k->fep, err,
              err > GPU_DNN_VERIFY_TOL ? ": not used" : "");
    out->fused = out->fused && err <= GPU_DNN_VERIFY_TOL;
  }
  /* $SUPEROPT_DW=always takes kconv.cu's kernel wherever it runs, =K its
   * variant K (tests) */
  const char *force = getenv("SUPEROPT_DW");
  char *end = NULL;
  long fv = force && strcmp(force, "always") ? strtol(force, &end, 10) : 0;
  int forced =
      force && (!end || (end != force && !*end && fv >= 0 && fv < 100));
  cxk_dw a;
  int var = forced ? (int)fv : 0;
  float dw_ms = 1e30f, ep = 0.0f;
  out->own = 0;
  if (forced)
    out->own = !c->opt.legacy_conv && gpu_dw_args(k, &a) &&
               (a.var = var, gpu_dw_ok(&a));
  else if (!c->opt.legacy_conv) {
    /* cuDNN's time, plus the epilogue kernel it needs and ours saves
     * ($SUPEROPT_DW_EP=0: not, for comparisons); none where cuDNN's fused
     * plan computes it */
    const char *no_ep = getenv("SUPEROPT_DW_EP");
    /* ep 1 (bias and relu) is a kernel of its own after the graph API's
     * plain plan and after any half engine (float32's legacy fuses it) */
    int ep1_apart = graph_api || k->dtype != CXK_F32;
    int sep = !out->fused && (k->ep == 2 || (k->ep == 1 && ep1_apart)) &&
              !(no_ep && !strcmp(no_ep, "0"));
    dw_ms = gpu_dw_time(c, k, &var, sep ? &ep : NULL);
    ep = ep < 1e29f ? ep : 0.0f;
    out->own =
        dw_ms < 1e29f && dw_ms < 0.97f * (out->fused ? gf.ms : best + ep);
  }
  /* kdwt.cu's tiles (not yet run on a GPU when written) only where they
   * compute what cuDNN's plain plan computes */
  if (out->own && var >= cxk_dwconv_variants() && g.plan) {
    double err = gpu_dw_verify(c, k, var, g.plan, g.ws);
    if (c->tune_log)
      fprintf(stderr,
              "tune: conv2d %lldx%lldx%lldx%lld, depthwise %lldx%lld: the "
              "tiled kernel %d differs from cuDNN's plain plan by %.2e "
              "(relative L2)%s\n",
              (long long)k->n, (long long)k->c, (long long)k->h,
              (long long)k->w, (long long)k->kh, (long long)k->kw, var, err,
              err > GPU_DNN_VERIFY_TOL ? ": not used" : "");
    out->own = err <= GPU_DNN_VERIFY_TOL;
  }
  out->own = out->own ? 1 + var : 0;
  out->fused = out->fused && !out->own;
  out->ms = out->fused ? gf.ms : best; /* the own kernel, when chosen, is
                                          faster still */
  float sk_ms = -1.0f;
  int skv = 0;
  if (!out->own && !c->opt.legacy_conv)
    sk_ms = choose_smallk(c, k, out, best, &g, &skv);
  if (c->tune_log)
    fprintf(stderr,
            "tune: conv2d %lldx%lldx%lldx%lld -> %lld, kernel %lldx%lld, "
            "stride %d, groups %d, %s: legacy %.4f ms, graph API %.4f ms, "
            "with epilogue %d %.4f ms (its kernel %.4f ms), own %.4f ms "
            "(shape %d), epilogue it saves %.4f ms, small-K %.4f ms (tile "
            "%d): %s\n",
            (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w,
            (long long)k->o, (long long)k->kh, (long long)k->kw, k->stride[0],
            k->groups, k->cl ? "NHWC" : "NCHW", r[i].time,
            g.plan ? g.ms : -1.0f, k->fep, gf.plan ? gf.ms : -1.0f, out->ep_ms,
            dw_ms < 1e29f ? dw_ms : -1.0f, var, ep, sk_ms, skv,
            out->own >= GPU_OWN_SK ? "own small-K"
            : out->own             ? "own"
            : out->fused           ? "graph API with epilogue"
            : graph_api            ? "graph API"
                                   : "legacy");
  out->rank = out->engine = -1;
  if (out->fused) {
    out->plan = gf.plan;
    out->ws = gf.ws;
    out->rank = gf.rank, out->engine = gf.engine;
    gf.plan = NULL;
  } else if (graph_api && !out->own) {
    out->plan = g.plan;
    out->ws = g.ws;
    out->rank = g.rank, out->engine = g.engine;
    g.plan = NULL;
  }
  if (g.plan)
    cudnnBackendDestroyDescriptor(g.plan);
  if (gf.plan)
    cudnnBackendDestroyDescriptor(gf.plan);
  base_status st = remember(c, out, d);
  if (st && out->plan)
    cudnnBackendDestroyDescriptor(out->plan);
  else if (!st)
    gpu_tune_conv_add(c, out);
  return st;
}
