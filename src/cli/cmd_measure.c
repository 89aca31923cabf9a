/* cmd_measure.c: `superopt costdb measure GRAPH...`: times every distinct
 * operator signature of the graphs alone on the GPU (the CUDA executor's
 * own algorithm choices, warm-up, median of repeats) and stores the
 * results in the cost database under the GPU's device name (h100, h200). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "cli.h"
#ifdef SUPEROPT_HAVE_CUDA
#include "../gpu/gpu.h"
#endif

#define MEASURE_WARMUP 5
#define MEASURE_REPS 20

#ifdef SUPEROPT_HAVE_CUDA
/* "NVIDIA H100 80GB HBM3" -> "h100"; the first word with a digit,
 * lowercased; "gpu" if none. */
static void device_from_name(const char *gpu, char *out, size_t n) {
  snprintf(out, n, "gpu");
  for (const char *p = gpu; *p;) {
    while (*p == ' ')
      p++;
    size_t len = strcspn(p, " ");
    int digit = 0;
    for (size_t i = 0; i < len; i++)
      digit |= isdigit((unsigned char)p[i]) != 0;
    if (digit && len < n) {
      for (size_t i = 0; i < len; i++)
        out[i] = (char)tolower((unsigned char)p[i]);
      out[len] = 0;
      return;
    }
    p += len;
  }
}

static int measure_graph(gpu_ctx *cx, cd_db *db, const char *device,
                         const char *gpu, const char *path, int batch,
                         int *measured, int *skipped) {
  int rc = CLI_OK;
  ir_graph *g = cli_load(path, &rc);
  if (g && batch)
    rc = cli_rebatch(&g, batch);
  if (!g || rc) {
    ir_graph_free(g);
    return rc;
  }
  base_diag d;
  char sig[4096];
  for (int i = 0; i < g->nnodes && !rc; i++) {
    cd_node_sig(g, i, sig, sizeof sig);
    double old;
    int found = 0;
    if (cd_lookup(db, device, sig, &old, &found, &d) != BASE_OK) {
      rc = cli_report(&d);
      break;
    }
    if (found) { /* measured already (this run or an earlier one) */
      (*skipped)++;
      continue;
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
  }
  ir_graph_free(g);
  return rc;
}
#endif

int cli_costdb_measure(cd_db *db, const char *device, int batch, int n,
                       char **graphs) {
#ifndef SUPEROPT_HAVE_CUDA
  (void)db, (void)device, (void)batch, (void)n, (void)graphs;
  fprintf(stderr, "superopt costdb measure: this build has no CUDA "
                  "executor (nvcc was not found at build time)\n");
  return CLI_USAGE;
#else
  gpu_ctx *cx = NULL;
  base_diag d;
  if (gpu_ctx_new(NULL, &cx, &d) != BASE_OK)
    return cli_report(&d);
  char desc[512], gpu[256], dev[64];
  gpu_ctx_describe(cx, desc, sizeof desc);
  snprintf(gpu, sizeof gpu, "%.*s", (int)strcspn(desc, "("), desc);
  for (size_t k = strlen(gpu); k > 0 && gpu[k - 1] == ' ';)
    gpu[--k] = 0;
  device_from_name(gpu, dev, sizeof dev);
  if (!device)
    device = dev;
  int rc = CLI_OK, measured = 0, skipped = 0;
  for (int i = 0; i < n && !rc; i++) {
    if (cd_begin(db, &d) != BASE_OK) {
      rc = cli_report(&d);
      break;
    }
    rc = measure_graph(cx, db, device, gpu, graphs[i], batch, &measured,
                       &skipped);
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
