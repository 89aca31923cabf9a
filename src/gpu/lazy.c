/* lazy.c: the CUDA executor, loaded when first needed.
 *
 * cudart, cuDNN and cuBLASLt take 0.3 s and 200 MB to map and relocate, so
 * they are not linked into libsuperopt or the superopt binary: the executor
 * (every other file of src/gpu/ and the kernels) is the shared object
 * libsuperopt_gpu.so, and this file, built into libsuperopt, defines each
 * function of gpu.h as a forwarder that dlopens it on first use. CPU
 * commands, --help and `import superopt` never load CUDA.
 *
 * The object is looked for in $SUPEROPT_GPU_LIB, then beside the file that
 * holds this code (libsuperopt.so, found by dladdr; or the program it is
 * linked into, found by /proc/self/exe, as dladdr gives the program's name
 * as typed, which a PATH lookup leaves bare) and in ../lib from there (an
 * installed bin/), then on the loader's path (LD_LIBRARY_PATH, ldconfig).
 * gpu_lib_versions names the file loaded. When it cannot be loaded,
 * gpu_device_count() is 0, gpu_ctx_new fails with the reason, and
 * gpu_load_error() says why. Functions taking a context or a plan are only
 * reachable after a successful gpu_ctx_new, so the object is loaded by then.
 */
#define _GNU_SOURCE /* dladdr, dladdr1 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* Every forwarded function: name, return type, parameters, arguments. */
#define GPU_FORWARDED(X)                                                       \
  X(gpu_device_count, int, (void), ())                                         \
  X(gpu_ctx_new, base_status,                                                  \
    (const gpu_options *o, gpu_ctx **out, base_diag *d), (o, out, d))          \
  X(gpu_ctx_free, void, (gpu_ctx * c), (c))                                    \
  X(gpu_ctx_describe, void, (const gpu_ctx *c, char *buf, size_t n),           \
    (c, buf, n))                                                               \
  X(gpu_lib_versions, void, (char *buf, size_t n), (buf, n))                   \
  X(gpu_plan_new, base_status,                                                 \
    (gpu_ctx * c, const ir_graph *g, gpu_plan **out, base_diag *d),            \
    (c, g, out, d))                                                            \
  X(gpu_plan_free, void, (gpu_plan * p), (p))                                  \
  X(gpu_plan_upload, base_status,                                              \
    (gpu_plan * p, const ex_values *v, base_diag *d), (p, v, d))               \
  X(gpu_plan_run, base_status, (gpu_plan * p, base_diag * d), (p, d))          \
  X(gpu_plan_download, base_status,                                            \
    (gpu_plan * p, int t, float *dst, base_diag *d), (p, t, dst, d))           \
  X(gpu_plan_write, base_status,                                               \
    (gpu_plan * p, int t, const void *src, int on_device, base_diag *d),       \
    (p, t, src, on_device, d))                                                 \
  X(gpu_plan_read, base_status,                                                \
    (gpu_plan * p, int t, void *dst, int on_device, base_diag *d),             \
    (p, t, dst, on_device, d))                                                 \
  X(gpu_plan_time, base_status,                                                \
    (gpu_plan * p, int warmup, int iters, double *median_ms, base_diag *d),    \
    (p, warmup, iters, median_ms, d))                                          \
  X(gpu_plan_profile, base_status,                                             \
    (gpu_plan * p, int reps, double *node_ms, base_diag *d),                   \
    (p, reps, node_ms, d))                                                     \
  X(gpu_plan_memory, void,                                                     \
    (const gpu_plan *p, size_t *arena, size_t *persist, size_t *workspace),    \
    (p, arena, persist, workspace))                                            \
  X(gpu_plan_unplanned_bytes, size_t, (const gpu_plan *p), (p))                \
  X(gpu_plan_streams, void,                                                    \
    (const gpu_plan *p, int *streams, double *ms_one, double *ms_multi),       \
    (p, streams, ms_one, ms_multi))                                            \
  X(gpu_plan_reorder, base_status,                                             \
    (gpu_ctx * c, const ir_graph *g, const ex_values *v, int tries,            \
     gpu_plan **p, int *kept, base_diag *d),                                   \
    (c, g, v, tries, p, kept, d))                                              \
  X(gpu_plan_graph, const ir_graph *, (const gpu_plan *p), (p))                \
  X(gpu_plan_computed_by, int, (const gpu_plan *p, int i), (p, i))             \
  X(gpu_plan_channels_last, int, (const gpu_plan *p, int t), (p, t))           \
  X(gpu_plan_engine, const char *, (const gpu_plan *p, int i), (p, i))         \
  X(gpu_measure_node, base_status,                                             \
    (gpu_ctx * c, const ir_graph *g, int node, int warmup, int reps,           \
     double *median_ms, base_diag *d),                                         \
    (c, g, node, warmup, reps, median_ms, d))                                  \
  X(gpu_measure_plan, base_status,                                             \
    (gpu_ctx * c, const ir_graph *g, int node, ir_graph **h, gpu_plan **p,     \
     base_diag *d),                                                            \
    (c, g, node, h, p, d))                                                     \
  X(gpu_kernel_stats, void,                                                    \
    (const gpu_ctx *c, int *compiled, int *from_disk, int *reused),            \
    (c, compiled, from_disk, reused))                                          \
  X(gpu_dnn_plan_stats, void,                                                  \
    (const gpu_ctx *c, int *compiled, int *from_disk),                         \
    (c, compiled, from_disk))                                                  \
  X(gpu_tune_stats, void, (const gpu_ctx *c, int *timed, int *from_disk),      \
    (c, timed, from_disk))                                                     \
  X(gpu_fused_source, base_status,                                             \
    (const ir_graph *g, const ir_node *n, const float *const *ptrs,            \
     const int64_t(*phys)[IR_MAX_RANK], const char *arch, int sms, char **src, \
     char name[40], uint64_t *key, int *vec, base_diag *d),                    \
    (g, n, ptrs, phys, arch, sms, src, name, key, vec, d))                     \
  X(gpu_fused_compile, base_status,                                            \
    (const char *src, const char *name, const char *arch, char **cubin,        \
     size_t *len, base_diag *d),                                               \
    (src, name, arch, cubin, len, d))

static struct {
#define FIELD(name, ret, params, args) ret(*name) params;
  GPU_FORWARDED(FIELD)
#undef FIELD
} fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[2048]; /* why the object did not load */

/* dlopen of dir/rel, or of name alone when dir is NULL; 1 when loaded. */
static void *try_open(const char *dir, const char *rel) {
  char path[PATH_MAX + 64];
  if (dir)
    snprintf(path, sizeof path, "%s/%s", dir, rel);
  else
    snprintf(path, sizeof path, "%s", rel);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    size_t len = strlen(why);
    snprintf(why + len, sizeof why - len, "%s%s", len ? "; " : "", dlerror());
  }
  return h;
}

/* The folder of the file holding this code into dir (PATH_MAX); 0 if none.
 * The program itself has an empty link-map name. */
static int own_folder(char *dir) {
  Dl_info info;
  struct link_map *map = NULL;
  const char *file = "/proc/self/exe";
  if (dladdr1((void *)gpu_device_count, &info, (void **)&map,
              RTLD_DL_LINKMAP) &&
      map && map->l_name && map->l_name[0] && info.dli_fname)
    file = info.dli_fname;
  char *slash;
  if (!realpath(file, dir) || !(slash = strrchr(dir, '/')))
    return 0;
  *slash = '\0';
  return 1;
}

static void *open_object(void) {
  const char *env = getenv("SUPEROPT_GPU_LIB");
  void *h = NULL;
  char dir[PATH_MAX];
  if (env && *env)
    return try_open(NULL, env);
  if (own_folder(dir) && !(h = try_open(dir, "libsuperopt_gpu.so")))
    h = try_open(dir, "../lib/libsuperopt_gpu.so");
  return h ? h : try_open(NULL, "libsuperopt_gpu.so");
}

static void load(void) {
  void *h = open_object();
  if (!h)
    return;
  why[0] = '\0';
#define RESOLVE(name, ret, params, args)                                       \
  if (!(*(void **)&fn.name = dlsym(h, #name "_impl"))) {                       \
    snprintf(why, sizeof why, "libsuperopt_gpu.so lacks %s", #name "_impl");   \
    return;                                                                    \
  }
  GPU_FORWARDED(RESOLVE)
#undef RESOLVE
  void (*attach)(const ir_body *(*)(uint64_t), const base_allocator *);
  if (!(*(void **)&attach = dlsym(h, "gpu_attach_host_impl"))) {
    snprintf(why, sizeof why, "libsuperopt_gpu.so lacks gpu_attach_host_impl");
    return;
  }
  /* fused bodies are interned on this side, and the executor allocates
   * through this side's allocator (its counter, its failure switch) */
  attach(ir_body_get, base_alloc_host());
  loaded = 1;
}

static int ready(void) {
  pthread_once(&once, load);
  return loaded;
}

/* The executor could not be loaded: an error naming why. */
static base_status not_loaded(base_diag *d) {
  return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                       "the CUDA executor (libsuperopt_gpu.so) could not be "
                       "loaded: %s",
                       why);
}

const char *gpu_load_error(void) { return ready() ? NULL : why; }

int gpu_device_count(void) { return ready() ? fn.gpu_device_count() : 0; }

base_status gpu_ctx_new(const gpu_options *o, gpu_ctx **out, base_diag *d) {
  if (!ready())
    return not_loaded(d);
  return fn.gpu_ctx_new(o, out, d);
}

/* The executor's versions, then the file it was loaded from. */
void gpu_lib_versions(char *buf, size_t n) {
  Dl_info info;
  if (!ready()) {
    snprintf(buf, n, "executor not loaded (%s)", why);
    return;
  }
  fn.gpu_lib_versions(buf, n);
  size_t len = strlen(buf);
  if (dladdr((void *)fn.gpu_device_count, &info) && info.dli_fname && len < n)
    snprintf(buf + len, n - len, " (%s)", info.dli_fname);
}

/* Freeing NULL needs no executor. */
void gpu_ctx_free(gpu_ctx *c) {
  if (c)
    fn.gpu_ctx_free(c);
}

void gpu_plan_free(gpu_plan *p) {
  if (p)
    fn.gpu_plan_free(p);
}

/* The rest need a context, so the object is loaded. */
#define FORWARD(name, ret, params, args)                                       \
  ret name params { return fn.name args; }
FORWARD(gpu_ctx_describe, void, (const gpu_ctx *c, char *buf, size_t n),
        (c, buf, n))
FORWARD(gpu_plan_new, base_status,
        (gpu_ctx * c, const ir_graph *g, gpu_plan **out, base_diag *d),
        (c, g, out, d))
FORWARD(gpu_plan_upload, base_status,
        (gpu_plan * p, const ex_values *v, base_diag *d), (p, v, d))
FORWARD(gpu_plan_run, base_status, (gpu_plan * p, base_diag *d), (p, d))
FORWARD(gpu_plan_download, base_status,
        (gpu_plan * p, int t, float *dst, base_diag *d), (p, t, dst, d))
FORWARD(gpu_plan_write, base_status,
        (gpu_plan * p, int t, const void *src, int on_device, base_diag *d),
        (p, t, src, on_device, d))
FORWARD(gpu_plan_read, base_status,
        (gpu_plan * p, int t, void *dst, int on_device, base_diag *d),
        (p, t, dst, on_device, d))
FORWARD(gpu_plan_time, base_status,
        (gpu_plan * p, int warmup, int iters, double *median_ms, base_diag *d),
        (p, warmup, iters, median_ms, d))
FORWARD(gpu_plan_profile, base_status,
        (gpu_plan * p, int reps, double *node_ms, base_diag *d),
        (p, reps, node_ms, d))
FORWARD(gpu_plan_memory, void,
        (const gpu_plan *p, size_t *arena, size_t *persist, size_t *workspace),
        (p, arena, persist, workspace))
FORWARD(gpu_plan_unplanned_bytes, size_t, (const gpu_plan *p), (p))
FORWARD(gpu_plan_streams, void,
        (const gpu_plan *p, int *streams, double *ms_one, double *ms_multi),
        (p, streams, ms_one, ms_multi))
FORWARD(gpu_plan_reorder, base_status,
        (gpu_ctx * c, const ir_graph *g, const ex_values *v, int tries,
         gpu_plan **p, int *kept, base_diag *d),
        (c, g, v, tries, p, kept, d))
FORWARD(gpu_plan_graph, const ir_graph *, (const gpu_plan *p), (p))
FORWARD(gpu_plan_computed_by, int, (const gpu_plan *p, int i), (p, i))
FORWARD(gpu_plan_channels_last, int, (const gpu_plan *p, int t), (p, t))
FORWARD(gpu_plan_engine, const char *, (const gpu_plan *p, int i), (p, i))
FORWARD(gpu_measure_node, base_status,
        (gpu_ctx * c, const ir_graph *g, int node, int warmup, int reps,
         double *median_ms, base_diag *d),
        (c, g, node, warmup, reps, median_ms, d))
FORWARD(gpu_measure_plan, base_status,
        (gpu_ctx * c, const ir_graph *g, int node, ir_graph **h, gpu_plan **p,
         base_diag *d),
        (c, g, node, h, p, d))
FORWARD(gpu_kernel_stats, void,
        (const gpu_ctx *c, int *compiled, int *from_disk, int *reused),
        (c, compiled, from_disk, reused))
FORWARD(gpu_dnn_plan_stats, void,
        (const gpu_ctx *c, int *compiled, int *from_disk),
        (c, compiled, from_disk))
FORWARD(gpu_tune_stats, void, (const gpu_ctx *c, int *timed, int *from_disk),
        (c, timed, from_disk))
#undef FORWARD

/* Code generation needs no GPU, but NVRTC, which the executor links. */
base_status gpu_fused_source(const ir_graph *g, const ir_node *n,
                             const float *const *ptrs,
                             const int64_t (*phys)[IR_MAX_RANK],
                             const char *arch, int sms, char **src,
                             char name[40], uint64_t *key, int *vec,
                             base_diag *d) {
  if (!ready())
    return not_loaded(d);
  return fn.gpu_fused_source(g, n, ptrs, phys, arch, sms, src, name, key, vec,
                             d);
}

base_status gpu_fused_compile(const char *src, const char *name,
                              const char *arch, char **cubin, size_t *len,
                              base_diag *d) {
  if (!ready())
    return not_loaded(d);
  return fn.gpu_fused_compile(src, name, arch, cubin, len, d);
}
