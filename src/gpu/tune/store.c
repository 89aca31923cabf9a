/* store.c: the autotuners' choices kept across processes.
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
 * The id also holds this file's format and tuning-policy version
 * (TUNE_VERSION: raise it when what a choice means or how it is made
 * changes), the record sizes, the own depthwise kernel's shape count and
 * the workspace limits, so a build that tunes differently starts afresh;
 * a record keeps the engine its rank named, checked when it is rebuilt,
 * and the file the records' hash, checked on load; a loaded cuBLASLt
 * algorithm is checked by cublasLtMatmulAlgoCheck (blas.c). Keys hold the
 * operands' element type (gpu_conv_key.dtype, gpu_mm_key.dtype: f16 and
 * bf16 choices apart from float32's) in bytes that are zero for float32,
 * so the float32 records written before half types stay valid. On save the
 * file is read again and the records other processes added meanwhile are
 * kept.
 *
 * Off ($SUPEROPT_TUNE_CACHE=off or 0, or the kernel cache off) and where
 * the choice depends on more than the key: the legacy-convolution option
 * and the test and comparison variables that force or restrict engines
 * ($SUPEROPT_CONV_FUSE, $SUPEROPT_DW, $SUPEROPT_DW_EP, $SUPEROPT_DNN_RTC,
 * $SUPEROPT_SK, $SUPEROPT_DWT).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../gpu_int.h"

/* Raise when a record's meaning or the tuning policy changes. */
/* 2: matmul keys say whether C is read; 3: own may name ksmallk.cu's
 * kernel (GPU_OWN_SK + its tile) */
#define TUNE_VERSION 3

typedef struct tune_id {
  char magic[8];
  char gpu[256];
  int32_t major, minor, sms, driver, runtime, version;
  int64_t cudnn, cublaslt;
  int64_t conv_size, mm_size, dw_shapes, conv_ws, mm_ws;
} tune_id;

typedef struct tune_conv {
  gpu_conv_key key;
  int32_t algo, math, rank, fused, own;
  int32_t engine; /* the global index of the engine rank named */
  float ms, ep_ms;
  float patch_ms; /* gpu_conv_choice.patch_ms */
  int32_t spare;  /* zero */
  uint64_t ws;
} tune_conv;

typedef struct tune_mm {
  gpu_mm_key key;
  cublasLtMatmulAlgo_t algo;
  uint64_t ws;
  float ms;
  int32_t pad;
} tune_mm;

/* The file: id, the two counts, the records' hash, the records. */
typedef struct tune_head {
  tune_id id;
  int64_t nconv, nmm;
  uint64_t hash;
} tune_head;

/* The records of one kind, each starting with its key (ksize bytes),
 * one record a key. */
typedef struct tune_table {
  char *v;
  int64_t n, cap;
  size_t size, ksize;
} tune_table;
_Static_assert(offsetof(tune_conv, key) == 0 && offsetof(tune_mm, key) == 0,
               "a record starts with its key");

struct gpu_tune {
  int off;
  char dir[1024], path[1200];
  tune_id id;
  tune_table convs, mms;
  int dirty; /* a choice added or replaced: written when freed */
};

static const tune_table kConvs = {NULL, 0, 0, sizeof(tune_conv),
                                  sizeof(gpu_conv_key)};
static const tune_table kMms = {NULL, 0, 0, sizeof(tune_mm),
                                sizeof(gpu_mm_key)};

/* t's record for key, or NULL. */
static void *table_find(const tune_table *t, const void *key) {
  for (int64_t i = 0; i < t->n; i++)
    if (!memcmp(t->v + (size_t)i * t->size, key, t->ksize))
      return t->v + (size_t)i * t->size;
  return NULL;
}

/* t's record for key (one that failed to rebuild is replaced), else a
 * new one, zeroed but for the key; NULL without memory. */
static void *table_slot(tune_table *t, const void *key) {
  char *r = table_find(t, key);
  if (r)
    return r;
  if (t->n == t->cap) {
    int64_t nc = t->cap ? 2 * t->cap : 32;
    char *nv = base_realloc(t->v, (size_t)nc * t->size);
    if (!nv)
      return NULL;
    t->v = nv, t->cap = nc;
  }
  r = t->v + (size_t)t->n++ * t->size;
  memset(r, 0, t->size);
  memcpy(r, key, t->ksize);
  return r;
}

/* Adds to dst the records of src whose keys it does not have. */
static void table_merge(tune_table *dst, const tune_table *src) {
  for (int64_t i = 0; i < src->n; i++) {
    const char *r = src->v + (size_t)i * src->size;
    char *d = table_find(dst, r) ? NULL : table_slot(dst, r);
    if (d)
      memcpy(d, r, dst->size);
  }
}

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
  id->version = TUNE_VERSION;
  id->conv_size = (int64_t)sizeof(tune_conv);
  id->mm_size = (int64_t)sizeof(tune_mm);
  id->dw_shapes = gpu_dw_variants();
  id->conv_ws = (int64_t)GPU_CONV_WS_MAX;
  id->mm_ws = (int64_t)GPU_MM_WS;
}

/* Reads the file at path for id into cv and mm (fresh tables, like
 * kConvs and kMms); 0, and empty tables, where it is missing, short, torn
 * or for another GPU, version or build. */
static int read_records(const char *path, const tune_id *id, tune_table *cv,
                        tune_table *mm) {
  size_t len = 0;
  base_diag ignore;
  char *f = base_read_file(path, &len, &ignore);
  tune_head h;
  *cv = kConvs, *mm = kMms;
  if (!f || len < sizeof h) {
    free(f);
    return 0;
  }
  memcpy(&h, f, sizeof h);
  int ok = !memcmp(&h.id, id, sizeof h.id) && h.nconv >= 0 && h.nmm >= 0 &&
           h.nconv <= (1 << 20) && h.nmm <= (1 << 20);
  size_t bc = ok ? (size_t)h.nconv * cv->size : 0,
         bm = ok ? (size_t)h.nmm * mm->size : 0;
  ok = ok && len == sizeof h + bc + bm &&
       XXH3_64bits(f + sizeof h, bc + bm) == h.hash;
  if (ok) {
    cv->v = base_malloc(bc ? bc : 1);
    mm->v = base_malloc(bm ? bm : 1);
    ok = cv->v && mm->v;
  }
  if (ok) {
    memcpy(cv->v, f + sizeof h, bc);
    memcpy(mm->v, f + sizeof h + bc, bm);
    cv->n = cv->cap = h.nconv, mm->n = mm->cap = h.nmm;
  } else {
    free(cv->v), free(mm->v);
    *cv = kConvs, *mm = kMms;
  }
  free(f);
  return ok;
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
  t->off |= (e && (!strcmp(e, "off") || !strcmp(e, "0"))) ||
            c->opt.legacy_conv || env_set("SUPEROPT_CONV_FUSE") ||
            env_set("SUPEROPT_DW") || env_set("SUPEROPT_DW_EP") ||
            env_set("SUPEROPT_DNN_RTC") || env_set("SUPEROPT_SK") ||
            env_set("SUPEROPT_DWT") || env_set("SUPEROPT_MM_SWEEP");
  t->convs = kConvs, t->mms = kMms;
  if (t->off)
    return NULL;
  id_of(c, &t->id);
  snprintf(t->path, sizeof t->path, "%s/tune-%016llx.bin", t->dir,
           (unsigned long long)XXH3_64bits(&t->id, sizeof t->id));
  read_records(t->path, &t->id, &t->convs, &t->mms);
  return t;
}

int gpu_tune_conv_find(gpu_ctx *c, const gpu_conv_key *k,
                       gpu_conv_choice *out) {
  gpu_tune *t = tune_of(c);
  const tune_conv *r = t ? table_find(&t->convs, k) : NULL;
  if (!r)
    return 0;
  memset(out, 0, sizeof *out);
  out->key = *k;
  out->algo = (cudnnConvolutionFwdAlgo_t)r->algo;
  out->math = (cudnnMathType_t)r->math;
  out->ws = (size_t)r->ws;
  out->own = r->own, out->fused = r->fused;
  out->ms = r->ms, out->ep_ms = r->ep_ms;
  out->rank = r->rank, out->engine = r->engine;
  out->patch_ms = r->patch_ms;
  if (r->rank >= 0 && !gpu_dnn_plan_at(c, k, r->fused, r->rank, r->engine,
                                       &out->plan, &out->ws))
    return 0; /* no longer rebuilds, or another engine: timed again */
  c->tune_loaded++;
  return 1;
}

void gpu_tune_conv_add(gpu_ctx *c, const gpu_conv_choice *ch) {
  gpu_tune *t = tune_of(c);
  c->tune_timed++;
  tune_conv *r = t ? table_slot(&t->convs, &ch->key) : NULL;
  if (!r)
    return;
  r->algo = (int32_t)ch->algo, r->math = (int32_t)ch->math;
  r->rank = ch->plan ? ch->rank : -1;
  r->engine = ch->plan ? ch->engine : -1;
  r->fused = ch->fused, r->own = ch->own;
  r->ms = ch->ms, r->ep_ms = ch->ep_ms;
  r->patch_ms = ch->patch_ms;
  r->ws = (uint64_t)ch->ws;
  t->dirty = 1;
}

void gpu_tune_conv_patches(gpu_ctx *c, const gpu_conv_key *k, float ms) {
  gpu_tune *t = tune_of(c);
  tune_conv *r = t ? table_find(&t->convs, k) : NULL;
  if (r && r->patch_ms != ms) {
    r->patch_ms = ms;
    t->dirty = 1;
  }
}

int gpu_tune_mm_find(gpu_ctx *c, const gpu_mm_key *k, gpu_mm_choice *out) {
  gpu_tune *t = tune_of(c);
  const tune_mm *r = t ? table_find(&t->mms, k) : NULL;
  if (r)
    *out = (gpu_mm_choice){*k, r->algo, (size_t)r->ws, r->ms};
  return r != NULL;
}

void gpu_tune_mm_add(gpu_ctx *c, const gpu_mm_choice *ch) {
  gpu_tune *t = tune_of(c);
  c->tune_timed++;
  tune_mm *r = t ? table_slot(&t->mms, &ch->key) : NULL;
  if (!r)
    return;
  r->algo = ch->algo, r->ws = (uint64_t)ch->ws, r->ms = ch->ms;
  t->dirty = 1;
}

void gpu_tune_stats(const gpu_ctx *c, int *timed, int *from_disk) {
  *timed = c->tune_timed;
  *from_disk = c->tune_loaded;
}

void gpu_tune_save(gpu_ctx *c) {
  gpu_tune *t = c->tune;
  if (!t)
    return;
  tune_table dc, dm; /* other processes' records since t was read */
  if (!t->off && t->dirty && read_records(t->path, &t->id, &dc, &dm)) {
    table_merge(&t->convs, &dc);
    table_merge(&t->mms, &dm);
    free(dc.v), free(dm.v);
  }
  if (!t->off && t->dirty) {
    tune_head h = {t->id, t->convs.n, t->mms.n, 0};
    size_t nc = (size_t)t->convs.n * t->convs.size,
           nm = (size_t)t->mms.n * t->mms.size;
    char *f = base_malloc(sizeof h + nc + nm);
    if (f) {
      base_diag ignore;
      if (nc)
        memcpy(f + sizeof h, t->convs.v, nc);
      if (nm)
        memcpy(f + sizeof h + nc, t->mms.v, nm);
      h.hash = XXH3_64bits(f + sizeof h, nc + nm);
      memcpy(f, &h, sizeof h);
      gpu_mkdirs(t->dir);
      base_write_atomic(t->path, f, sizeof h + nc + nm, &ignore);
      free(f);
    }
  }
  free(t->convs.v);
  free(t->mms.v);
  free(t);
  c->tune = NULL;
}
