/* probe-dnn-knobs.c: a probe, not part of the tool. Does cuDNN have a
 * faster engine or knob setting for batch-1 convolutions than the first
 * GPU_DNN_CANDIDATES configurations of heuristics mode A (what dnn.c
 * times)? For each geometry: mode A's configurations (engine, knobs,
 * time), then every engine of the operation graph with its default knobs,
 * then, for engines with split-K knobs, each value of them.
 *
 * PROBE_STRIDED=1 instead: mode A's best for convolutions that read a
 * channel block of a wider tensor in place, against the packed input.
 *
 * Build here (no GPU needed):
 *   nvcc -O2 -o probe-dnn-knobs scripts/probe-dnn-knobs.c -lcudnn
 * run on the device: ./probe-dnn-knobs
 * Times: probe-time.h's (a CUDA-graph replay of 20 launches, the median
 * of 50 after 10), in microseconds. */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe-time.h"

typedef cudnnBackendDescriptor_t bdesc;
#define CK(x)                                                                  \
  do {                                                                         \
    cudnnStatus_t e_ = (x);                                                    \
    if (e_) {                                                                  \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                \
              cudnnGetErrorString(e_));                                        \
      return -1;                                                               \
    }                                                                          \
  } while (0)

static cudnnHandle_t H;
static cudaStream_t S;

/* x's pixel stride where it is a channel block of a wider tensor (a
 * split's output read in place), else 0: x packed */
static int64_t g_xct;

static int tensor(bdesc *t, int64_t uid, const int64_t d[4]) {
  int64_t ct = uid == 1 && g_xct ? g_xct : d[1];
  int64_t st[4] = {d[2] * d[3] * ct, 1, ct * d[3], ct}, al = 16;
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
  CK(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                              CUDNN_TYPE_DATA_TYPE, 1, &f));
  CK(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                              CUDNN_TYPE_INT64, 4, d));
  CK(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                              4, st));
  CK(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64,
                              1, &uid));
  CK(cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                              CUDNN_TYPE_INT64, 1, &al));
  return cudnnBackendFinalize(*t) ? -1 : 0;
}

typedef struct geo {
  int64_t n, c, h, w, o, kh, kw, ph, pw, s;
  const char *name;
} geo;

static bdesc graph(const geo *g) {
  int64_t oh = (g->h + 2 * g->ph - g->kh) / g->s + 1;
  int64_t ow = (g->w + 2 * g->pw - g->kw) / g->s + 1;
  int64_t xd[4] = {g->n, g->c, g->h, g->w}, wd[4] = {g->o, g->c, g->kh, g->kw};
  int64_t yd[4] = {g->n, g->o, oh, ow};
  bdesc x, w, y, cv, op, gr;
  if (tensor(&x, 1, xd) || tensor(&w, 2, wd) || tensor(&y, 3, yd))
    return NULL;
  int64_t two = 2, pad[2] = {g->ph, g->pw}, st[2] = {g->s, g->s},
          dil[2] = {1, 1};
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t m = CUDNN_CROSS_CORRELATION;
  float one = 1, zero = 0;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &cv) ||
      cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                               CUDNN_TYPE_DATA_TYPE, 1, &f) ||
      cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                               CUDNN_TYPE_CONVOLUTION_MODE, 1, &m) ||
      cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                               CUDNN_TYPE_INT64, 1, &two) ||
      cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                               CUDNN_TYPE_INT64, 2, dil) ||
      cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                               CUDNN_TYPE_INT64, 2, st) ||
      cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                               CUDNN_TYPE_INT64, 2, pad) ||
      cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                               CUDNN_TYPE_INT64, 2, pad) ||
      cudnnBackendFinalize(cv))
    return NULL;
  if (cudnnBackendCreateDescriptor(
          CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op) ||
      cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x) ||
      cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w) ||
      cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y) ||
      cudnnBackendSetAttribute(
          op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv) ||
      cudnnBackendSetAttribute(op,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                               CUDNN_TYPE_FLOAT, 1, &one) ||
      cudnnBackendSetAttribute(op,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                               CUDNN_TYPE_FLOAT, 1, &zero) ||
      cudnnBackendFinalize(op))
    return NULL;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                   &gr) ||
      cudnnBackendSetAttribute(gr, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op) ||
      cudnnBackendSetAttribute(gr, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                               CUDNN_TYPE_HANDLE, 1, &H) ||
      cudnnBackendFinalize(gr))
    return NULL;
  return gr;
}

static void *bx, *bw, *by, *bws;

/* One execution of a plan with its variant pack (u: plan_run). */
typedef struct plan_run {
  bdesc plan, vp;
} plan_run;

static int run_plan(void *u) {
  plan_run *r = u;
  return cudnnBackendExecute(H, r->plan, r->vp) != 0;
}

/* Median us per launch of cfg's plan (probe_time_us), or -1. */
static float time_cfg(bdesc cfg, int64_t *wsz) {
  bdesc plan = NULL, vp = NULL;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                                   &plan) ||
      cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg) ||
      cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                               CUDNN_TYPE_HANDLE, 1, &H) ||
      cudnnBackendFinalize(plan)) {
    if (plan)
      cudnnBackendDestroyDescriptor(plan);
    return -1;
  }
  int64_t n = 0, ws = 0;
  cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                           CUDNN_TYPE_INT64, 1, &n, &ws);
  *wsz = ws;
  if (ws > (256 << 20)) {
    cudnnBackendDestroyDescriptor(plan);
    return -2;
  }
  int64_t uids[3] = {1, 2, 3};
  void *ptrs[3] = {bx, bw, by};
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                   &vp) ||
      cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                               CUDNN_TYPE_INT64, 3, uids) ||
      cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                               CUDNN_TYPE_VOID_PTR, 3, ptrs) ||
      cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                               CUDNN_TYPE_VOID_PTR, 1, &bws) ||
      cudnnBackendFinalize(vp)) {
    cudnnBackendDestroyDescriptor(plan);
    return -1;
  }
  float t = probe_time_us(S, run_plan, &(plan_run){plan, vp});
  cudnnBackendDestroyDescriptor(vp);
  cudnnBackendDestroyDescriptor(plan);
  return t;
}

static const char *knob_name(int t) {
  static const char *nm[] = {"SPLIT_K",
                             "SWIZZLE",
                             "TILE_SIZE",
                             "USE_TEX",
                             "EDGE",
                             "KBLOCK",
                             "LDGA",
                             "LDGB",
                             "CHUNK_K",
                             "SPLIT_H",
                             "WINO_TILE",
                             "MULTIPLY",
                             "SPLIT_K_BUF",
                             "TILEK",
                             "STAGES",
                             "RED_MODE",
                             "CTA_SPLIT_K_MODE",
                             "SPLIT_K_SLC",
                             "IDX_MODE",
                             "SLICED",
                             "SPLIT_RS",
                             "SINGLEBUFFER",
                             "LDGC",
                             "SPECFILT",
                             "KERNEL_CFG",
                             "WORKSPACE",
                             "TILE_CGA",
                             "TILE_CGA_M",
                             "TILE_CGA_N",
                             "BLOCK_SIZE",
                             "OCCUPANCY",
                             "ARRAY_SIZE_PER_THREAD",
                             "NUM_C_PER_BLOCK",
                             "SPLIT_COLS",
                             "TILE_ROWS",
                             "TILE_COLS",
                             "LOAD_SIZE",
                             "CTA_COUNT",
                             "STREAM_K",
                             "SPLIT_P_SLC",
                             "TILE_M",
                             "TILE_N",
                             "WARP_SPEC_CFG",
                             "SWAP_AB"};
  return t >= 0 && t < (int)(sizeof nm / sizeof *nm) ? nm[t] : "?";
}

/* Prints cfg's knob choices. */
static void print_knobs(bdesc cfg) {
  bdesc kc[32];
  int64_t n = 0;
  for (int i = 0; i < 32; i++)
    cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &kc[i]);
  if (!cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 32, &n, kc))
    for (int64_t i = 0; i < n && i < 32; i++) {
      cudnnBackendKnobType_t t;
      int64_t v = 0, c = 0;
      cudnnBackendGetAttribute(kc[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                               CUDNN_TYPE_KNOB_TYPE, 1, &c, &t);
      cudnnBackendGetAttribute(kc[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                               CUDNN_TYPE_INT64, 1, &c, &v);
      printf(" %s=%lld", knob_name(t), (long long)v);
    }
  for (int i = 0; i < 32; i++)
    cudnnBackendDestroyDescriptor(kc[i]);
}

static int64_t cfg_engine(bdesc cfg) {
  bdesc e;
  int64_t n = 0, idx = -1;
  cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e);
  if (!cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e))
    cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                             CUDNN_TYPE_INT64, 1, &n, &idx);
  cudnnBackendDestroyDescriptor(e);
  return idx;
}

/* A config of engine idx with knob choices (t[i] = v[i]); NULL if refused */
static bdesc make_cfg(bdesc gr, int64_t idx, int nk, const int *t,
                      const int64_t *v) {
  bdesc e, cfg, kc[8];
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e) ||
      cudnnBackendSetAttribute(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &gr) ||
      cudnnBackendSetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                               CUDNN_TYPE_INT64, 1, &idx) ||
      cudnnBackendFinalize(e))
    return NULL;
  for (int i = 0; i < nk; i++) {
    cudnnBackendKnobType_t kt = (cudnnBackendKnobType_t)t[i];
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                                     &kc[i]) ||
        cudnnBackendSetAttribute(kc[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                 CUDNN_TYPE_KNOB_TYPE, 1, &kt) ||
        cudnnBackendSetAttribute(kc[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                 CUDNN_TYPE_INT64, 1, &v[i]) ||
        cudnnBackendFinalize(kc[i]))
      return NULL;
  }
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg) ||
      cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e) ||
      (nk && cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, nk, kc)) ||
      cudnnBackendFinalize(cfg))
    return NULL;
  return cfg;
}

/* Up to max engine configurations of heuristics mode A for gr into cfg
 * (created here); their number. */
static int64_t heur_a(bdesc gr, bdesc *cfg, int64_t max) {
  bdesc heur;
  int64_t nc = 0;
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  for (int64_t i = 0; i < max; i++)
    cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]);
  if (!cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                                    &heur) &&
      !cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &gr) &&
      !cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                                CUDNN_TYPE_HEUR_MODE, 1, &mode) &&
      !cudnnBackendFinalize(heur))
    cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, max, &nc, cfg);
  return nc < max ? nc : max;
}

static void probe(const geo *g) {
  printf("\n== %s: n%lld c%lld %lldx%lld -> %lld, kernel %lldx%lld stride "
         "%lld\n",
         g->name, (long long)g->n, (long long)g->c, (long long)g->h,
         (long long)g->w, (long long)g->o, (long long)g->kh, (long long)g->kw,
         (long long)g->s);
  bdesc gr = graph(g);
  if (!gr) {
    printf("graph failed\n");
    return;
  }
  /* mode A */
  bdesc cfg[64];
  int64_t nc = heur_a(gr, cfg, 64);
  float best_a = 1e9;
  for (int64_t i = 0; i < nc; i++) {
    int64_t ws = 0;
    float t = time_cfg(cfg[i], &ws);
    printf("A%-2lld engine %3lld %8.2f us ws %lld:", (long long)i,
           (long long)cfg_engine(cfg[i]), t, (long long)ws);
    print_knobs(cfg[i]);
    printf("\n");
    if (t > 0 && i < 10 && t < best_a)
      best_a = t;
  }
  printf("best of mode A's first 10: %.2f us\n", best_a);
  /* every engine, default knobs, then split-K sweeps */
  int64_t count = 0, n = 0;
  cudnnBackendGetAttribute(gr, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                           CUDNN_TYPE_INT64, 1, &n, &count);
  float best = 1e9;
  for (int64_t e = 0; e < count; e++) {
    bdesc c0 = make_cfg(gr, e, 0, NULL, NULL);
    if (!c0)
      continue;
    int64_t ws = 0;
    float t = time_cfg(c0, &ws);
    printf("engine %3lld default %8.2f us ws %lld\n", (long long)e, t,
           (long long)ws);
    if (t > 0 && t < best)
      best = t;
    /* knob infos */
    bdesc eng, ki[32];
    int64_t nk = 0;
    cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng);
    cudnnBackendGetAttribute(c0, CUDNN_ATTR_ENGINECFG_ENGINE,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng);
    for (int i = 0; i < 32; i++)
      cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, &ki[i]);
    cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_KNOB_INFO,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 32, &nk, ki);
    for (int64_t i = 0; i < nk && i < 32; i++) {
      cudnnBackendKnobType_t kt;
      int64_t lo = 0, hi = 0, st = 1;
      cudnnBackendGetAttribute(ki[i], CUDNN_ATTR_KNOB_INFO_TYPE,
                               CUDNN_TYPE_KNOB_TYPE, 1, &n, &kt);
      cudnnBackendGetAttribute(ki[i], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE,
                               CUDNN_TYPE_INT64, 1, &n, &lo);
      cudnnBackendGetAttribute(ki[i], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE,
                               CUDNN_TYPE_INT64, 1, &n, &hi);
      cudnnBackendGetAttribute(ki[i], CUDNN_ATTR_KNOB_INFO_STRIDE,
                               CUDNN_TYPE_INT64, 1, &n, &st);
      printf("    knob %s [%lld..%lld step %lld]\n", knob_name(kt),
             (long long)lo, (long long)hi, (long long)st);
      /* the knobs swept: split-K, tiles, kernel configs, stream-K */
      int split = kt == 0 || kt == 2 || kt == 12 || kt == 17 || kt == 24 ||
                  kt == 37 || kt == 38 || kt == 39 || kt == 40 || kt == 41 ||
                  kt == 43;
      if (!split || st <= 0)
        continue;
      int tries = 0;
      for (int64_t v = lo; v <= hi && tries < 24; v += st, tries++) {
        int ktt = kt;
        bdesc c1 = make_cfg(gr, e, 1, &ktt, &v);
        if (!c1)
          continue;
        float t1 = time_cfg(c1, &ws);
        if (t1 > 0)
          printf("      %s=%lld %8.2f us ws %lld\n", knob_name(kt),
                 (long long)v, t1, (long long)ws);
        if (t1 > 0 && t1 < best)
          best = t1;
      }
    }
  }
  printf("best over all engines and sweeps: %.2f us (mode A first 10: "
         "%.2f)\n",
         best, best_a);
}

/* Mode A's best of its first ten for g (x packed, or strided where
 * g_xct), in us, or -1. */
static float best_a10(const geo *g) {
  bdesc gr = graph(g), cfg[10];
  float best = -1;
  if (!gr)
    return -1;
  int64_t nc = heur_a(gr, cfg, 10);
  for (int64_t i = 0; i < nc; i++) {
    int64_t ws;
    float t = time_cfg(cfg[i], &ws);
    if (t > 0 && (best < 0 || t < best))
      best = t;
  }
  return best;
}

/* PROBE_STRIDED=1: would cuDNN read a split's channel block in place?
 * Inception-v3's and NASNet-A's convolutions that read a split of a merged
 * convolution, x packed against x as channels [0, c) of a tensor of ct
 * channels (pixel stride ct). */
static void strided(void) {
  struct {
    geo g;
    int64_t ct;
  } cs[] = {
      {{1, 64, 35, 35, 96, 3, 3, 1, 1, 1, "5b 3x3dbl_2 (64 of 176)"}, 176},
      {{1, 48, 35, 35, 64, 5, 5, 2, 2, 1, "5b 5x5_2 (48 of 176)"}, 176},
      {{1, 160, 17, 17, 160, 1, 7, 0, 3, 1, "6c 7x7_2 (160 of 512)"}, 512},
      {{1, 192, 17, 17, 320, 3, 3, 0, 0, 2, "7a 3x3_2 s2 (192 of 384)"}, 384},
      {{1, 448, 8, 8, 384, 3, 3, 1, 1, 1, "7b 3x3dbl_2 (448 of 1152)"}, 1152},
      {{1, 44, 28, 28, 44, 1, 1, 0, 0, 1, "nasnet 1x1 (44 of 88)"}, 88},
  };
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
    g_xct = 0;
    float packed = best_a10(&cs[i].g);
    g_xct = cs[i].ct;
    float str = best_a10(&cs[i].g);
    g_xct = 0;
    printf("%-28s packed %7.2f us, channel block of %lld: %7.2f us\n",
           cs[i].g.name, packed, (long long)cs[i].ct, str);
  }
}

int main(void) {
  cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
  if (cudnnCreate(&H) || cudnnSetStream(H, S))
    return 1;
  cudaMalloc(&bx, 64 << 20), cudaMalloc(&bw, 64 << 20),
      cudaMalloc(&by, 64 << 20), cudaMalloc(&bws, 256 << 20);
  cudaMemset(bx, 0, 64 << 20), cudaMemset(bw, 0, 64 << 20);
  geo gs[] = {
      {1, 512, 7, 7, 512, 3, 3, 1, 1, 1, "resnet layer4 3x3"},
      {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, "resnet layer3 3x3"},
      {1, 128, 28, 28, 128, 3, 3, 1, 1, 1, "resnet layer2 3x3"},
      {1, 2048, 7, 7, 512, 1, 1, 0, 0, 1, "resnet50 layer4 1x1 in"},
      {1, 512, 7, 7, 2048, 1, 1, 0, 0, 1, "resnet50 layer4 1x1 out"},
      {1, 384, 8, 8, 384, 1, 3, 0, 1, 1, "inception 7b 1x3"},
      {16, 512, 7, 7, 512, 3, 3, 1, 1, 1, "resnet layer4 3x3 b16"},
  };
  if (getenv("PROBE_STRIDED")) {
    strided();
    return 0;
  }
  const char *only = getenv("PROBE_ONLY");
  for (size_t i = 0; i < sizeof gs / sizeof *gs; i++)
    if (!only || atoi(only) == (int)i)
      probe(&gs[i]);
  return 0;
}
