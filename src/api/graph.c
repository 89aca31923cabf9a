/* graph.c: graph handles of the embedding API: load (.graph text or ONNX),
 * inspect inputs and outputs, print, save, export ONNX bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../onnx/onnx.h"
#include "api_int.h"

api_code api_wrap(ir_graph *g, api_graph **out, api_error *err) {
  api_graph *h = base_malloc(sizeof *h);
  if (!h) {
    ir_graph_free(g);
    return api_fail(err, API_ERR_INTERNAL, "out of memory");
  }
  h->g = g;
  *out = h;
  return api_ok(err);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

api_code api_graph_load(const char *path, api_graph **out, api_error *err) {
  if (!path || !out)
    return api_fail(err, API_ERR_USAGE, "api_graph_load: NULL argument");
  base_diag d;
  ir_graph *g = ends_with(path, ".onnx") ? ox_import_file(path, NULL, &d)
                                         : ir_load(path, &d);
  return g ? api_wrap(g, out, err) : api_fail_diag(err, &d);
}

api_code api_graph_parse(const char *text, size_t len, const char *name,
                         api_graph **out, api_error *err) {
  if (!text || !out)
    return api_fail(err, API_ERR_USAGE, "api_graph_parse: NULL argument");
  base_diag d;
  ir_graph *g = ir_parse(text, len, name ? name : "<text>", &d);
  return g ? api_wrap(g, out, err) : api_fail_diag(err, &d);
}

api_code api_graph_load_onnx(const void *data, size_t len, const char *name,
                             api_graph **out, api_error *err) {
  if (!data || !out)
    return api_fail(err, API_ERR_USAGE, "api_graph_load_onnx: NULL argument");
  base_diag d;
  ir_graph *g = ox_import(data, len, name, NULL, &d);
  return g ? api_wrap(g, out, err) : api_fail_diag(err, &d);
}

void api_graph_free(api_graph *g) {
  if (g)
    ir_graph_free(g->g);
  free(g);
}

/* The accessors below answer -1 (counts, ranks) or NULL (names, text) for a
 * NULL graph (superopt.h). */
int api_graph_nnodes(const api_graph *g) { return g ? g->g->nnodes : -1; }

/* Tensor index of the i-th graph input (kind input), or -1. */
static int input_tensor(const ir_graph *g, int i) {
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind == IR_T_INPUT && i-- == 0)
      return t;
  return -1;
}

int api_graph_ninputs(const api_graph *g) {
  if (!g)
    return -1;
  int n = 0;
  for (int t = 0; t < g->g->ntensors; t++)
    n += g->g->tensors[t].kind == IR_T_INPUT;
  return n;
}

int api_graph_noutputs(const api_graph *g) { return g ? g->g->noutputs : -1; }

const char *api_graph_input_name(const api_graph *g, int i) {
  int t = g && i >= 0 ? input_tensor(g->g, i) : -1;
  return t < 0 ? NULL : g->g->tensors[t].name;
}

const char *api_graph_output_name(const api_graph *g, int i) {
  if (!g || i < 0 || i >= g->g->noutputs)
    return NULL;
  return g->g->tensors[g->g->outputs[i]].name;
}

/* dims may be NULL only when max <= 0 (asking for the rank alone). */
static int shape_of(const ir_graph *g, int t, int64_t *dims, int max) {
  if (t < 0 || (!dims && max > 0))
    return -1;
  const ir_shape *s = &g->tensors[t].shape;
  for (int k = 0; k < s->rank && k < max; k++)
    dims[k] = s->dim[k];
  return s->rank;
}

int api_graph_input_shape(const api_graph *g, int i, int64_t *dims, int max) {
  if (!g)
    return -1;
  return shape_of(g->g, i >= 0 ? input_tensor(g->g, i) : -1, dims, max);
}

int api_graph_output_shape(const api_graph *g, int i, int64_t *dims, int max) {
  if (!g)
    return -1;
  int t = i >= 0 && i < g->g->noutputs ? g->g->outputs[i] : -1;
  return shape_of(g->g, t, dims, max);
}

char *api_graph_print(const api_graph *g) { return g ? ir_print(g->g) : NULL; }

api_code api_graph_save(const api_graph *g, const char *path, api_error *err) {
  if (!g || !path)
    return api_fail(err, API_ERR_USAGE, "api_graph_save: NULL argument");
  base_diag d;
  base_status st = ends_with(path, ".onnx") ? ox_export_file(g->g, path, &d)
                                            : ir_save(g->g, path, 1, &d);
  return st ? api_fail_diag(err, &d) : api_ok(err);
}

/* The exporter writes files: export to a private temporary file, read it
 * back, remove it. */
api_code api_graph_export_onnx(const api_graph *g, void **data, size_t *len,
                               api_error *err) {
  if (!g || !data || !len)
    return api_fail(err, API_ERR_USAGE, "api_graph_export_onnx: NULL argument");
  const char *tmp = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/superopt-export-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0)
    return api_fail(err, API_ERR_INPUT, "%s: cannot create a temporary file",
                    path);
  close(fd);
  base_diag d;
  size_t n = 0;
  char *bytes = NULL;
  api_code rc = API_OK;
  if (ox_export_file(g->g, path, &d) || !(bytes = base_read_file(path, &n, &d)))
    rc = api_fail_diag(err, &d);
  unlink(path);
  if (rc)
    return rc;
  *data = bytes;
  *len = n;
  return api_ok(err);
}
