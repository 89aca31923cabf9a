/* tune.c: the autotuners' choices kept across processes.
 *
 * Choosing a convolution's engine (cuDNN's legacy find, up to ten graph-API
 * plans with and without the epilogue, the verification of fused plans,
 * the executor's own kernels, the epilogue kernel) and a matmul's cuBLASLt
 * algorithm is timed on the GPU: seconds a network (the zoo's ResNet-50 at
 * batch 16: about 4 s of plan time, every runtime-compiled plan already
 * from the disk cache). The choices are kept in the disk cache folder
 * (gpu_cache_dir) as tune-<id>.bin, a file per GPU and library versions:
 * the id hashes the GPU's name, capability and SM count, the driver and
 * CUDA runtime, cuDNN and cuBLASLt versions, which also start the file and
 * are compared on load. A context reads the file on its first choice and
 * takes what it finds there without timing; its new choices are added when
 * it is freed (the file written whole, atomically: an interrupted write
 * leaves the old one). A convolution's graph-API plan is kept as its rank in
 * cuDNN's heuristics (mode A, which the versions pin), rebuilt from there
 * (a runtime-compiled one from its serialised plan, dnn.c); a matmul's
 * algorithm as cuBLASLt's algorithm structure, which cuBLASLt documents as
 * storable and restorable with the same library version. A choice that no
 * longer rebuilds is timed again. Fused plans were verified when chosen.
 *
 * Off ($SUPEROPT_TUNE_CACHE=off, or the kernel cache off) and also where
 * the choice depends on more than the key: the legacy-convolution option
 * and the test and comparison variables that force or restrict engines
 * ($SUPEROPT_CONV_FUSE, $SUPEROPT_DW, $SUPEROPT_DNN_RTC, $SUPEROPT_GEMM).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "gpu_int.h"

typedef struct tune_id {
  char magic[8];
  char gpu[256];
  int32_t major, minor, sms, driver, runtime, pad;
  int64_t cudnn, cublaslt;
} tune_id;

typedef struct tune_conv {
  gpu_conv_key key;
  int32_t algo, math, rank, fused, own, pad;
  float ms, ep_ms;
  uint64_t ws;
} tune_conv;

typedef struct tune_mm {
  gpu_mm_key key;
  cublasLtMatmulAlgo_t algo;
  uint64_t ws;
  float ms;
  int32_t pad;
} tune_mm;

/* The file: id, the two counts, the records. */
typedef struct tune_head {
  tune_id id;
  int64_t nconv, nmm;
} tune_head;

struct gpu_tune {
  int off;
  char dir[1024], path[1200];
  tune_id id;
  tune_conv *convs;
  tune_mm *mms;
  int64_t nconv, nmm, capconv, capmm;
  int dirty;         /* a choice added or replaced: written when freed */
  int timed, loaded; /* choices timed here, taken from the file */
};

static const char kMagic[8] = "SOTUNE1";

static int env_set(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

static void id_of(const gpu_ctx *c, tune_id *id) {
  memset(id, 0, sizeof *id);
  memcpy(id->magic, kMagic, sizeof kMagic);
  snprintf(id->gpu, sizeof id->gpu, "%s", c->prop.name);
  id->major = c->prop.major, id->minor = c->prop.minor;
  id->sms = c->prop.multiProcessorCount;
  cudaDriverGetVersion(&id->driver);
  cudaRuntimeGetVersion(&id->runtime);
  id->cudnn = (int64_t)cudnnGetVersion();
  id->cublaslt = (int64_t)cublasLtGetVersion();
}

/* Reads the file into t (nothing where it is missing, short or for
 * another GPU or version). */
static void load(gpu_tune *t) {
  size_t len = 0;
  base_diag ignore;
  char *f = base_read_file(t->path, &len, &ignore);
  tune_head h;
  if (!f || len < sizeof h) {
    free(f);
    return;
  }
  memcpy(&h, f, sizeof h);
  size_t want = sizeof h + (size_t)h.nconv * sizeof(tune_conv) +
                (size_t)h.nmm * sizeof(tune_mm);
  if (memcmp(&h.id, &t->id, sizeof h.id) || h.nconv < 0 || h.nmm < 0 ||
      h.nconv > (1 << 20) || h.nmm > (1 << 20) || len != want) {
    free(f);
    return;
  }
  t->convs = base_malloc((size_t)(h.nconv ? h.nconv : 1) * sizeof *t->convs);
  t->mms = base_malloc((size_t)(h.nmm ? h.nmm : 1) * sizeof *t->mms);
  if (t->convs && t->mms) {
    memcpy(t->convs, f + sizeof h, (size_t)h.nconv * sizeof *t->convs);
    memcpy(t->mms, f + sizeof h + (size_t)h.nconv * sizeof *t->convs,
           (size_t)h.nmm * sizeof *t->mms);
    t->nconv = t->capconv = h.nconv;
    t->nmm = t->capmm = h.nmm;
  }
  free(f);
}

/* The context's cache, opened on first use; NULL where it is off. */
static gpu_tune *tune_of(gpu_ctx *c) {
  if (c->tune)
    return c->tune->off ? NULL : c->tune;
  gpu_tune *t = c->tune = base_calloc(1, sizeof *t);
  if (!t)
    return NULL;
  const char *e = getenv("SUPEROPT_TUNE_CACHE");
  gpu_cache_dir(t->dir, sizeof t->dir, &t->off);
  t->off |= (e && !strcmp(e, "off")) || c->opt.legacy_conv ||
            env_set("SUPEROPT_CONV_FUSE") || env_set("SUPEROPT_DW") ||
            env_set("SUPEROPT_DNN_RTC") || env_set("SUPEROPT_GEMM");
  if (t->off)
    return NULL;
  id_of(c, &t->id);
  snprintf(t->path, sizeof t->path, "%s/tune-%016llx.bin", t->dir,
           (unsigned long long)XXH3_64bits(&t->id, sizeof t->id));
  load(t);
  return t;
}

int gpu_tune_conv_find(gpu_ctx *c, const gpu_conv_key *k,
                       gpu_conv_choice *out) {
  gpu_tune *t = tune_of(c);
  for (int64_t i = 0; t && i < t->nconv; i++) {
    const tune_conv *r = &t->convs[i];
    if (memcmp(&r->key, k, sizeof *k))
      continue;
    memset(out, 0, sizeof *out);
    out->key = *k;
    out->algo = (cudnnConvolutionFwdAlgo_t)r->algo;
    out->math = (cudnnMathType_t)r->math;
    out->ws = (size_t)r->ws;
    out->own = r->own, out->fused = r->fused;
    out->ms = r->ms, out->ep_ms = r->ep_ms;
    out->rank = r->rank;
    if (r->rank >= 0 &&
        !gpu_dnn_plan_at(c, k, r->fused, r->rank, &out->plan, &out->ws))
      return 0; /* no longer rebuilds: timed again */
    t->loaded++;
    return 1;
  }
  return 0;
}

/* A new record slot (grown as needed), or NULL. */
static void *grow(void **v, int64_t *n, int64_t *cap, size_t size) {
  if (*n == *cap) {
    int64_t nc = *cap ? 2 * *cap : 32;
    void *nv = base_realloc(*v, (size_t)nc * size);
    if (!nv)
      return NULL;
    *v = nv, *cap = nc;
  }
  return (char *)*v + (size_t)(*n)++ * size;
}

void gpu_tune_conv_add(gpu_ctx *c, const gpu_conv_choice *ch) {
  gpu_tune *t = tune_of(c);
  tune_conv *r = NULL;
  for (int64_t i = 0; t && i < t->nconv && !r; i++) /* one that failed */
    if (!memcmp(&t->convs[i].key, &ch->key, sizeof ch->key))
      r = &t->convs[i];
  if (t && !r)
    r = grow((void **)&t->convs, &t->nconv, &t->capconv, sizeof *r);
  if (!r)
    return;
  memset(r, 0, sizeof *r);
  r->key = ch->key;
  r->algo = (int32_t)ch->algo, r->math = (int32_t)ch->math;
  r->rank = ch->plan ? ch->rank : -1;
  r->fused = ch->fused, r->own = ch->own;
  r->ms = ch->ms, r->ep_ms = ch->ep_ms;
  r->ws = (uint64_t)ch->ws;
  t->timed++, t->dirty = 1;
}

int gpu_tune_mm_find(gpu_ctx *c, const gpu_mm_key *k, gpu_mm_choice *out) {
  gpu_tune *t = tune_of(c);
  for (int64_t i = 0; t && i < t->nmm; i++)
    if (!memcmp(&t->mms[i].key, k, sizeof *k)) {
      *out = (gpu_mm_choice){*k, t->mms[i].algo, (size_t)t->mms[i].ws,
                             t->mms[i].ms};
      t->loaded++;
      return 1;
    }
  return 0;
}

void gpu_tune_mm_add(gpu_ctx *c, const gpu_mm_choice *ch) {
  gpu_tune *t = tune_of(c);
  tune_mm *r = t ? grow((void **)&t->mms, &t->nmm, &t->capmm, sizeof *r) : NULL;
  if (!r)
    return;
  memset(r, 0, sizeof *r);
  r->key = ch->key, r->algo = ch->algo;
  r->ws = (uint64_t)ch->ws, r->ms = ch->ms;
  t->timed++, t->dirty = 1;
}

void gpu_tune_stats(const gpu_ctx *c, int *timed, int *from_disk) {
  const gpu_tune *t = c->tune;
  *timed = t ? t->timed : 0;
  *from_disk = t ? t->loaded : 0;
}

void gpu_tune_save(gpu_ctx *c) {
  gpu_tune *t = c->tune;
  if (!t)
    return;
  if (!t->off && t->dirty) {
    tune_head h = {t->id, t->nconv, t->nmm};
    size_t nc = (size_t)t->nconv * sizeof *t->convs,
           nm = (size_t)t->nmm * sizeof *t->mms;
    char *f = base_malloc(sizeof h + nc + nm);
    if (f) {
      base_diag ignore;
      memcpy(f, &h, sizeof h);
      if (nc)
        memcpy(f + sizeof h, t->convs, nc);
      if (nm)
        memcpy(f + sizeof h + nc, t->mms, nm);
      gpu_mkdirs(t->dir);
      base_write_atomic(t->path, f, sizeof h + nc + nm, &ignore);
      free(f);
    }
  }
  free(t->convs);
  free(t->mms);
  free(t);
  c->tune = NULL;
}
