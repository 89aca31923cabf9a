/* cmd_measure.c: `superopt costdb measure GRAPH...` (or `--signatures
 * FILE...`, the lists `optimize --emit-signatures` writes): times every
 * distinct operator signature alone on the GPU (the CUDA executor's own
 * algorithm choices, warm-up, median of repeats) and stores the results in
 * the cost database under the GPU's device name (h100, h200). Also the
 * cost model's hook for `optimize --measure` (each unmeasured signature
 * the search proposes, measured on the spot and stored) and
 * `--emit-signatures` (the signatures noted). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "../costdb/costdb.h"
#include "cli.h"
#ifdef SUPEROPT_HAVE_CUDA
#include "../gpu/gpu.h"
#endif

#define MEASURE_WARMUP 5
#define MEASURE_REPS 20

#ifdef SUPEROPT_HAVE_CUDA
/* Measures node i of g into db unless (device, its signature) is there. */
static int measure_node(gpu_ctx *cx, cd_db *db, const char *device,
                        const char *gpu, const ir_graph *g, int i,
                        int *measured, int *skipped) {
  base_diag d;
  char sig[CD_SIG_MAX];
  int rc = CLI_OK;
  do {
    cd_node_sig(g, i, sig, sizeof sig);
    double old;
    int found = 0;
    if (cd_lookup(db, device, sig, &old, &found, &d) != BASE_OK) {
      rc = cli_report(&d);
      break;
    }
    if (found) { /* measured already (this run or an earlier one) */
      (*skipped)++;
      break;
    }
    double ms;
    if (gpu_measure_node(cx, g, i, MEASURE_WARMUP, MEASURE_REPS, &ms, &d)) {
      rc = cli_report(&d);
      break;
    }
    cd_entry e = {ms, 0, MEASURE_REPS, "cuda-exec", gpu, NULL};
    if (ms <= 0) /* a view or constant: no kernel; keep a tiny cost */
      e.ms = 1e-6;
    if (cd_put(db, device, sig, &e, &d) != BASE_OK) {
      rc = cli_report(&d);
      break;
    }
    (*measured)++;
  } while (0);
  return rc;
}

static int measure_graph(gpu_ctx *cx, cd_db *db, const char *device,
                         const char *gpu, const char *path, int batch, int dt,
                         int *measured, int *skipped) {
  int rc = CLI_OK;
  ir_graph *g = cli_load(path, &rc);
  if (g && batch)
    rc = cli_rebatch(&g, batch);
  if (g && !rc) /* --dtype: as run --dtype converts (docs/half.md) */
    rc = cli_to_dtype(&g, dt);
  for (int i = 0; g && !rc && i < g->nnodes; i++)
    rc = measure_node(cx, db, device, gpu, g, i, measured, skipped);
  ir_graph_free(g);
  return rc;
}

/* A signature list: one signature a line; '#' comments and blank lines
 * skipped; a signature that builds no graph fails as file:line. */
static int measure_sigs(gpu_ctx *cx, cd_db *db, const char *device,
                        const char *gpu, const char *path, int *measured,
                        int *skipped) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "superopt: cannot open '%s': %s\n", path, strerror(errno));
    return CLI_BAD_INPUT;
  }
  char line[CD_SIG_MAX + 2];
  int rc = CLI_OK, ln = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    ln++;
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0] || line[0] == '#')
      continue;
    base_diag d;
    ir_graph *g = cd_sig_graph(line, &d);
    if (!g) {
      fprintf(stderr, "%s:%d: error: %s\n", path, ln, d.msg);
      rc = d.code == BASE_ERR_NOMEM ? cli_oom() : CLI_BAD_INPUT;
      break;
    }
    rc = measure_node(cx, db, device, gpu, g, 0, measured, skipped);
    ir_graph_free(g);
  }
  fclose(f);
  return rc;
}

/* The GPU's name ("NVIDIA H100 80GB HBM3") and device key ("h100"). */
static void gpu_names(gpu_ctx *cx, char *gpu, size_t ng, char *dev, size_t nd) {
  char desc[512];
  gpu_ctx_describe(cx, desc, sizeof desc);
  snprintf(gpu, ng, "%.*s", (int)strcspn(desc, "("), desc);
  for (size_t k = strlen(gpu); k > 0 && gpu[k - 1] == ' ';)
    gpu[--k] = 0;
  cd_gpu_key(gpu, dev, nd); /* "gpu" when its name has no such word */
  if (!dev[0])
    snprintf(dev, nd, "gpu");
}
#endif

int cli_costdb_measure(cd_db *db, const char *device, int batch, int dtype,
                       int sigs, int n, char **graphs) {
  if (sigs && dtype != IR_DT_F32) {
    fprintf(stderr, "superopt costdb measure: --dtype converts graphs; a "
                    "signature list's signatures carry their types\n");
    return CLI_USAGE;
  }
#ifndef SUPEROPT_HAVE_CUDA
  (void)db, (void)device, (void)batch, (void)sigs, (void)n, (void)graphs;
  fprintf(stderr, "superopt costdb measure: this build has no CUDA "
                  "executor (nvcc was not found at build time)\n");
  return CLI_USAGE;
#else
  gpu_ctx *cx = NULL;
  base_diag d;
  if (gpu_ctx_new(NULL, &cx, &d) != BASE_OK)
    return cli_report(&d);
  char gpu[256], dev[64];
  gpu_names(cx, gpu, sizeof gpu, dev, sizeof dev);
  char hdev[96]; /* --dtype T: rows of device "<gpu>-T" (h200-bf16) */
  snprintf(hdev, sizeof hdev, "%s-%s", dev, ir_dtype_name((ir_dtype)dtype));
  if (!device)
    device = ir_dtype_is_half((ir_dtype)dtype) && cd_device_find(hdev, NULL)
                 ? hdev
                 : dev;
  int rc = CLI_OK, measured = 0, skipped = 0;
  for (int i = 0; i < n && !rc; i++) {
    if (cd_begin(db, &d) != BASE_OK) {
      rc = cli_report(&d);
      break;
    }
    rc = sigs
             ? measure_sigs(cx, db, device, gpu, graphs[i], &measured, &skipped)
             : measure_graph(cx, db, device, gpu, graphs[i], batch, dtype,
                             &measured, &skipped);
    if (!rc && cd_commit(db, &d) != BASE_OK)
      rc = cli_report(&d);
    if (rc)
      cd_rollback(db, &d);
    else
      fprintf(stderr, "%s: done (%d measured so far, %d already known)\n",
              graphs[i], measured, skipped);
  }
  if (!rc)
    printf("measured %d operator signatures on %s (device %s); %d nodes "
           "already measured\n",
           measured, gpu, device, skipped);
  gpu_ctx_free(cx);
  return rc;
#endif
}

/* ---- optimize --measure / --emit-signatures ------------------------------
 */

struct cli_proposed {
  cd_db *db;
  const char *device; /* where measurements are stored */
  int emit;           /* note the signatures */
  char **sig;         /* noted, in order of first sight */
  int n, cap;
  int32_t *slot; /* open addressing: index + 1, 0 = empty */
  int capslot;   /* power of two > 2 n, or 0 */
  int measured;  /* measured on the spot */
#ifdef SUPEROPT_HAVE_CUDA
  gpu_ctx *cx;
  char gpu[256], gpudev[64];
#endif
};

static base_status oom(base_diag *d) {
  return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
}

static base_status regrow(cli_proposed *p, base_diag *d) {
  int cap = p->capslot ? 2 * p->capslot : 256;
  int32_t *slot = base_calloc((size_t)cap, sizeof *slot);
  if (!slot)
    return oom(d);
  for (int i = 0; i < p->n; i++) {
    uint64_t h = XXH3_64bits(p->sig[i], strlen(p->sig[i]));
    int k = (int)(h & (uint64_t)(cap - 1));
    while (slot[k])
      k = (k + 1) & (cap - 1);
    slot[k] = i + 1;
  }
  free(p->slot);
  p->slot = slot;
  p->capslot = cap;
  return BASE_OK;
}

/* Adds sig unless noted already. */
static base_status note(cli_proposed *p, const char *sig, base_diag *d) {
  if (2 * (p->n + 1) >= p->capslot && regrow(p, d))
    return BASE_ERR_NOMEM;
  uint64_t h = XXH3_64bits(sig, strlen(sig));
  int k = (int)(h & (uint64_t)(p->capslot - 1));
  for (; p->slot[k]; k = (k + 1) & (p->capslot - 1))
    if (!strcmp(p->sig[p->slot[k] - 1], sig))
      return BASE_OK;
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 256;
    char **v = base_realloc(p->sig, (size_t)cap * sizeof *v);
    if (!v)
      return oom(d);
    p->sig = v;
    p->cap = cap;
  }
  if (!(p->sig[p->n] = base_strdup(sig)))
    return oom(d);
  p->slot[k] = ++p->n;
  return BASE_OK;
}

static base_status unmeasured(void *u, const ir_graph *g, int node,
                              const char *sig, double *ms, int *measured,
                              base_diag *d) {
  cli_proposed *p = u;
  *measured = 0;
  if (p->emit && g->nodes[node].op != IR_OP_FUSED &&
      g->nodes[node].op != IR_OP_MOVE && note(p, sig, d))
    return BASE_ERR_NOMEM;
#ifdef SUPEROPT_HAVE_CUDA
  if (p->cx) {
    base_status st =
        gpu_measure_node(p->cx, g, node, MEASURE_WARMUP, MEASURE_REPS, ms, d);
    if (st)
      return st;
    cd_entry e = {*ms > 0 ? *ms : 1e-6, 0,      MEASURE_REPS,
                  "cuda-exec",          p->gpu, NULL};
    if ((st = cd_put(p->db, p->device, sig, &e, d)))
      return st;
    *ms = e.ms;
    *measured = 1;
    p->measured++;
    if (p->measured % 25 == 0)
      fprintf(stderr, "superopt: measured %d new operator signatures on %s\n",
              p->measured, p->gpu);
  }
#else
  (void)g, (void)node, (void)ms;
#endif
  return BASE_OK;
}

int cli_proposed_open(cd_model *m, int measure, int emit,
                      const char *device_given, cli_proposed **out) {
  *out = NULL;
#ifndef SUPEROPT_HAVE_CUDA
  (void)device_given;
  if (measure) {
    fprintf(stderr, "superopt optimize: --measure needs a GPU, and this "
                    "build has no CUDA executor (nvcc was not found at "
                    "build time); --emit-signatures FILE writes the "
                    "signatures to measure on a GPU machine\n");
    return CLI_BAD_INPUT;
  }
#endif
  cli_proposed *p = base_calloc(1, sizeof *p);
  if (!p)
    return cli_oom();
  p->db = m->db;
  p->emit = emit;
  p->device = m->dev->name;
#ifdef SUPEROPT_HAVE_CUDA
  if (measure) {
    base_diag d;
    if (gpu_ctx_new(NULL, &p->cx, &d) != BASE_OK) {
      fprintf(stderr, "superopt optimize: --measure needs a GPU: %s\n", d.msg);
      free(p);
      return CLI_BAD_INPUT;
    }
    gpu_names(p->cx, p->gpu, sizeof p->gpu, p->gpudev, sizeof p->gpudev);
    const cd_device *dev = cd_device_find(p->gpudev, &d);
    if (!dev || (device_given && strcmp(device_given, p->gpudev) &&
                 strncmp(device_given, p->gpudev, strlen(p->gpudev)))) {
      fprintf(stderr,
              "superopt optimize: --measure on %s (device %s) cannot "
              "measure costs for %s\n",
              p->gpu, p->gpudev,
              !dev ? "a device superopt has no model of" : device_given);
      cli_proposed_free(p);
      return CLI_BAD_INPUT;
    }
    if (!device_given) { /* costs for the GPU at hand */
      m->dev = dev;
      p->device = dev->name;
    }
    fprintf(stderr,
            "superopt: --measure: unmeasured operators are timed on %s and "
            "stored as device %s\n",
            p->gpu, p->device);
  }
#endif
  m->unmeasured = unmeasured;
  m->unmeasured_u = p;
  *out = p;
  return CLI_OK;
}

int cli_proposed_measured(const cli_proposed *p) { return p ? p->measured : 0; }

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_proposed_write(cli_proposed *p, const char *path) {
  qsort(p->sig, (size_t)p->n, sizeof *p->sig, cmp_str);
  p->capslot = 0; /* the order changed: the index is stale */
  free(p->slot);
  p->slot = NULL;
  base_buf b = {0};
  base_buf_printf(&b,
                  "# superopt optimize --emit-signatures: %d operator "
                  "signatures the search costed without a measurement on "
                  "%s\n# measure them on a GPU: superopt costdb measure "
                  "--signatures %s\n",
                  p->n, p->device, path);
  for (int i = 0; i < p->n; i++)
    base_buf_printf(&b, "%s\n", p->sig[i]);
  base_diag d;
  base_status st = base_buf_write(&b, path, &d);
  free(b.s);
  if (st)
    return cli_report(&d);
  printf("wrote %s (%d operator signatures without a measurement)\n", path,
         p->n);
  return CLI_OK;
}

void cli_proposed_free(cli_proposed *p) {
  if (!p)
    return;
  for (int i = 0; i < p->n; i++)
    free(p->sig[i]);
  free(p->sig);
  free(p->slot);
#ifdef SUPEROPT_HAVE_CUDA
  gpu_ctx_free(p->cx);
#endif
  free(p);
}
