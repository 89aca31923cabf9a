/* graph.c: graph handles of the embedding API: load (.graph text or ONNX,
 * with `superopt import`'s options), inspect inputs, outputs and weights,
 * set weight values, print, save, export ONNX (with `superopt export`'s
 * options: ox_export_file_ex, as the CLI). */
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
  return api_graph_load_onnx_ex(data, len, name, NULL, out, err);
}

/* One kind of `superopt import`'s options: the n strings of v added with
 * add (the CLI's function: the same messages); what names the array. */
static api_code add_each(const char *fn, const char *what, const char *const *v,
                         int n,
                         int (*add)(ox_options *, const char *, char *, size_t),
                         ox_options *ox, api_error *err) {
  char msg[512];
  if (n < 0 || (n && !v))
    return api_fail(err, API_ERR_USAGE,
                    "%s: a negative count, or NULL %s with a count", fn, what);
  for (int i = 0; i < n; i++)
    if (!v[i] || add(ox, v[i], msg, sizeof msg))
      return v[i] ? api_fail(err, API_ERR_USAGE, "%s: %s", fn, msg)
                  : api_fail(err, API_ERR_USAGE, "%s: %s[%d] is NULL", fn, what,
                             i);
  return API_OK;
}

/* `superopt import`'s options from o, added as the CLI adds its flags
 * (ox_options_add_shape, _data, _dim: the same messages). */
static api_code import_options(const char *fn, const api_import_options *o,
                               ox_options *ox, api_error *err) {
  memset(ox, 0, sizeof *ox);
  api_code rc = add_each(fn, "input_shapes", o->input_shapes, o->ninput_shapes,
                         ox_options_add_shape, ox, err);
  if (!rc)
    rc = add_each(fn, "data_inputs", o->data_inputs, o->ndata_inputs,
                  ox_options_add_data, ox, err);
  if (!rc)
    rc = add_each(fn, "dims", o->dims, o->ndims, ox_options_add_dim, ox, err);
  return rc;
}

api_code api_graph_load_onnx_ex(const void *data, size_t len, const char *name,
                                const api_import_options *o, api_graph **out,
                                api_error *err) {
  if (!data || !out)
    return api_fail(err, API_ERR_USAGE, "api_graph_load_onnx: NULL argument");
  ox_options ox;
  api_code rc = o ? import_options("api_graph_load_onnx", o, &ox, err) : 0;
  if (rc)
    return rc;
  base_diag d;
  ir_graph *g = ox_import(data, len, name, o ? &ox : NULL, &d);
  return g ? api_wrap(g, out, err) : api_fail_diag(err, &d);
}

api_code api_graph_load_ex(const char *path, const api_import_options *o,
                           api_graph **out, api_error *err) {
  if (!path || !out)
    return api_fail(err, API_ERR_USAGE, "api_graph_load: NULL argument");
  if (!o || ends_with(path, ".onnx") == 0) {
    if (o && (o->ninput_shapes || o->ndata_inputs || o->ndims))
      return api_fail(err, API_ERR_USAGE,
                      "api_graph_load: %s: import options are for ONNX "
                      "models (.onnx)",
                      path);
    return api_graph_load(path, out, err);
  }
  ox_options ox;
  api_code rc = import_options("api_graph_load", o, &ox, err);
  if (rc)
    return rc;
  base_diag d;
  ir_graph *g = ox_import_file(path, &ox, &d);
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

static int output_tensor(const ir_graph *g, int i) {
  return i >= 0 && i < g->noutputs ? g->outputs[i] : -1;
}

/* Tensor index of the i-th weight, or -1. */
static int weight_tensor(const ir_graph *g, int i) {
  for (int t = 0; i >= 0 && t < g->ntensors; t++)
    if (g->tensors[t].kind == IR_T_WEIGHT && i-- == 0)
      return t;
  return -1;
}

int api_graph_input_dtype(const api_graph *g, int i) {
  int t = g && i >= 0 ? input_tensor(g->g, i) : -1;
  return t < 0 ? -1 : api_dtype_of(g->g->tensors[t].dtype);
}

int api_graph_output_dtype(const api_graph *g, int i) {
  int t = g ? output_tensor(g->g, i) : -1;
  return t < 0 ? -1 : api_dtype_of(g->g->tensors[t].dtype);
}

int api_graph_nweights(const api_graph *g) {
  if (!g)
    return -1;
  int n = 0;
  for (int t = 0; t < g->g->ntensors; t++)
    n += g->g->tensors[t].kind == IR_T_WEIGHT;
  return n;
}

const char *api_graph_weight_name(const api_graph *g, int i) {
  int t = g ? weight_tensor(g->g, i) : -1;
  return t < 0 ? NULL : g->g->tensors[t].name;
}

int api_graph_weight_shape(const api_graph *g, int i, int64_t *dims, int max) {
  return g ? shape_of(g->g, weight_tensor(g->g, i), dims, max) : -1;
}

int api_graph_weight_dtype(const api_graph *g, int i) {
  int t = g ? weight_tensor(g->g, i) : -1;
  return t < 0 ? -1 : api_dtype_of(g->g->tensors[t].dtype);
}

int api_graph_weight_has_values(const api_graph *g, int i) {
  int t = g ? weight_tensor(g->g, i) : -1;
  return t < 0 ? -1 : g->g->tensors[t].data != NULL;
}

api_code api_weight_find(const char *fn, const ir_graph *g, const char *name,
                         const api_tensor *v, const int64_t *dims, int rank,
                         int *t, api_error *err) {
  int k = ir_find_tensor(g, name);
  if (k < 0 || g->tensors[k].kind != IR_T_WEIGHT)
    return api_fail(err, API_ERR_INPUT, "%s: the graph has no weight '%s'%s",
                    fn, name, k < 0 ? "" : " (that tensor is not a weight)");
  const ir_tensor *w = &g->tensors[k];
  int same = rank == w->shape.rank && (dims || rank == 0);
  for (int i = 0; same && i < rank; i++)
    same = dims[i] == w->shape.dim[i];
  if (!same) {
    char want[128], got[128] = "[";
    size_t n = 1;
    for (int i = 0; dims && i < rank && i < IR_MAX_RANK && n < sizeof got; i++)
      n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", i ? "," : "",
                            (long long)dims[i]);
    snprintf(got + (n < sizeof got ? n : sizeof got - 1), 2, "]");
    return api_fail(err, API_ERR_INPUT,
                    "%s: weight '%s' has shape %s, not %s%s", fn, name,
                    ir_shape_str(&w->shape, want, sizeof want),
                    rank > IR_MAX_RANK || rank < 0 ? "(bad rank)" : got,
                    rank > IR_MAX_RANK ? "..." : "");
  }
  char what[300];
  snprintf(what, sizeof what, "weight '%s'", name);
  api_code rc = api_tensor_check(fn, what, w, v, err);
  if (rc)
    return rc;
  *t = k;
  return API_OK;
}

api_code api_graph_set_weight(api_graph *g, const char *name,
                              const api_tensor *v, const int64_t *dims,
                              int rank, api_error *err) {
  if (!g || !name || !v)
    return api_fail(err, API_ERR_USAGE, "api_graph_set_weight: NULL argument");
  int t;
  api_code rc = api_weight_find("api_graph_set_weight", g->g, name, v, dims,
                                rank, &t, err);
  if (rc)
    return rc;
  ir_tensor *w = &g->g->tensors[t];
  float *buf = base_arena_alloc(
      g->g->arena, sizeof(float) * (size_t)ir_shape_numel(&w->shape) + 1);
  if (!buf)
    return api_fail(err, API_ERR_INTERNAL, "out of memory");
  char what[300];
  snprintf(what, sizeof what, "api_graph_set_weight: weight '%s'", name);
  if ((rc = api_tensor_to_f32(what, w, v, buf, err)))
    return rc; /* buf stays in the arena, unused */
  w->data = buf;
  return api_ok(err);
}

api_code api_graph_load_weights(api_graph *g, const char *path,
                                api_error *err) {
  if (!g || !path)
    return api_fail(err, API_ERR_USAGE,
                    "api_graph_load_weights: NULL argument");
  base_diag d;
  return ir_weights_read(g->g, path, &d) ? api_fail_diag(err, &d) : api_ok(err);
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

static void fill_export_report(api_export_report *rep,
                               const ox_export_report *r) {
  memset(rep, 0, sizeof *rep);
  rep->opset = r->opset;
  rep->like_opset = r->like_opset;
  snprintf(rep->opset_why, sizeof rep->opset_why, "%s", r->opset_why);
  rep->renamed = r->renamed;
  rep->folded = r->folded;
  rep->at_load = r->at_load;
}

api_code api_graph_save_onnx(const api_graph *g, const char *path,
                             const api_export_options *o,
                             api_export_report *rep, api_error *err) {
  if (!g || !path)
    return api_fail(err, API_ERR_USAGE, "api_graph_save_onnx: NULL argument");
  ox_export_options ox = {o ? o->like : NULL, 0};
  ox_export_report r;
  base_diag d;
  if (ox_export_file_ex(g->g, path, &ox, &r, &d))
    return api_fail_diag(err, &d);
  if (rep)
    fill_export_report(rep, &r);
  return api_ok(err);
}

api_code api_graph_export_onnx(const api_graph *g, void **data, size_t *len,
                               api_error *err) {
  return api_graph_export_onnx_ex(g, NULL, data, len, NULL, err);
}

/* The exporter writes files: export to a private temporary file, read it
 * back, remove it. */
api_code api_graph_export_onnx_ex(const api_graph *g,
                                  const api_export_options *o, void **data,
                                  size_t *len, api_export_report *rep,
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
  api_export_report r;
  api_code rc = api_graph_save_onnx(g, path, o, &r, err);
  if (!rc && !(bytes = base_read_file(path, &n, &d)))
    rc = api_fail_diag(err, &d);
  unlink(path);
  if (rc)
    return rc;
  *data = bytes;
  *len = n;
  if (rep)
    *rep = r;
  return api_ok(err);
}
