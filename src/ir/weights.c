/* weights.c: weight values beside a .graph file, in a safetensors sidecar.
 *
 * A .graph file carries shapes, not values. The values of the weights whose
 * values are known (ir_tensor.data) go to a sidecar in the safetensors
 * format (docs/graph-format.md): an 8-byte little-endian header length N,
 * N bytes of JSON header (padded with spaces to a multiple of 8), then the
 * raw little-endian data. The header maps each weight's name to
 * {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (offsets
 * into the data), plus "__metadata__": {"format": "superopt"}. Weights are
 * written in the graph's declaration order, so reading a sidecar and writing
 * it again gives the same bytes. JSON through jansson.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir_int.h"

void ir_weights_path(const char *graph_path, char *buf, size_t n) {
  size_t len = strlen(graph_path);
  if (len > 6 && !strcmp(graph_path + len - 6, ".graph"))
    snprintf(buf, n, "%.*s.safetensors", (int)(len - 6), graph_path);
  else
    snprintf(buf, n, "%s.safetensors", graph_path);
}

int ir_weights_count(const ir_graph *g) {
  int k = 0;
  for (int i = 0; i < g->ntensors; i++)
    k += g->tensors[i].kind == IR_T_WEIGHT && g->tensors[i].data;
  return k;
}

/* ---- writing ------------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* safetensors dtype and element size of each IR type. */
static const char *const st_dtype[IR_NDTYPES] = {"F32", "I64", "BOOL"};
static const int st_size[IR_NDTYPES] = {4, 8, 1};

base_status ir_weights_write(const ir_graph *g, const char *path,
                             base_diag *d) {
  json_t *h = json_object(), *meta = json_object();
  uint64_t off = 0;
  base_status s = BASE_OK;
  if (!h || !meta ||
      json_object_set_new(meta, "format", json_string("superopt")) ||
      json_object_set_new(h, "__metadata__", meta)) {
    json_decref(h);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  for (int i = 0; i < g->ntensors && s == BASE_OK; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind != IR_T_WEIGHT || !t->data)
      continue;
    uint64_t bytes = (uint64_t)ir_shape_numel(&t->shape) * st_size[t->dtype];
    json_t *e = json_object(), *shape = json_array(), *offs = json_array();
    for (int k = 0; shape && k < t->shape.rank; k++)
      json_array_append_new(shape, json_integer(t->shape.dim[k]));
    if (offs) {
      json_array_append_new(offs, json_integer((json_int_t)off));
      json_array_append_new(offs, json_integer((json_int_t)(off + bytes)));
    }
    if (!e || !shape || !offs ||
        json_object_set_new(e, "dtype", json_string(st_dtype[t->dtype])) ||
        json_object_set_new(e, "shape", shape) ||
        json_object_set_new(e, "data_offsets", offs) ||
        json_object_set_new(h, t->name, e))
      s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    off += bytes;
  }
  char *js = s == BASE_OK ? json_dumps(h, JSON_COMPACT) : NULL;
  json_decref(h);
  if (!js)
    return s != BASE_OK
               ? s
               : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  size_t hl = strlen(js), padded = (hl + 7) / 8 * 8;
  size_t total = 8 + padded + (size_t)off;
  uint8_t *buf = base_malloc(total ? total : 1);
  if (!buf) {
    free(js);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  put_le32(buf, (uint32_t)padded);
  put_le32(buf + 4, (uint32_t)((uint64_t)padded >> 32));
  memcpy(buf + 8, js, hl);
  memset(buf + 8 + hl, ' ', padded - hl);
  free(js);
  uint8_t *p = buf + 8 + padded;
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind != IR_T_WEIGHT || !t->data)
      continue;
    int64_t n = ir_shape_numel(&t->shape);
    for (int64_t k = 0; k < n; k++, p += st_size[t->dtype]) {
      uint32_t v;
      int64_t iv = (int64_t)t->data[k];
      memcpy(&v, &t->data[k], 4);
      if (t->dtype == IR_DT_F32)
        put_le32(p, v);
      else if (t->dtype == IR_DT_BOOL)
        *p = t->data[k] != 0.0f;
      else
        put_le32(p, (uint32_t)iv), put_le32(p + 4, (uint32_t)(iv >> 32));
    }
  }
  s = base_write_atomic(path, (const char *)buf, total, d);
  free(buf);
  return s;
}

/* ---- reading ------------------------------------------------------------- */

static base_status bad(base_diag *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static base_status bad(base_diag *d, const char *path, const char *fmt, ...) {
  char msg[sizeof d->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  base_diag_set(d, BASE_ERR_SYNTAX, 0, 0, "%s", msg);
  if (d)
    snprintf(d->file, sizeof d->file, "%s", path);
  return BASE_ERR_SYNTAX;
}

static uint64_t get_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* Checks entry `name` -> e of the header against g; the weight's index in
 * *w and its data range in [*b, *e). */
static base_status check_entry(const ir_graph *g, const char *path,
                               const char *name, json_t *e, uint64_t datalen,
                               int *w, uint64_t *b, uint64_t *end,
                               base_diag *d) {
  if (!json_is_object(e))
    return bad(d, path, "header entry '%s' is not an object", name);
  json_t *dt = json_object_get(e, "dtype"), *sh = json_object_get(e, "shape"),
         *of = json_object_get(e, "data_offsets");
  if (!json_is_string(dt) || !json_is_array(sh) || !json_is_array(of) ||
      json_array_size(of) != 2 || !json_is_integer(json_array_get(of, 0)) ||
      !json_is_integer(json_array_get(of, 1)))
    return bad(d, path,
               "tensor '%s' lacks dtype, shape or data_offsets [begin, end]",
               name);
  int t = ir_find_tensor(g, name);
  if (t < 0 || g->tensors[t].kind != IR_T_WEIGHT)
    return bad(d, path, "tensor '%s' is not a weight of the graph", name);
  int32_t ty = g->tensors[t].dtype;
  if (strcmp(json_string_value(dt), st_dtype[ty]))
    return bad(d, path, "tensor '%s' has dtype %s; the graph says %s (%s)",
               name, json_string_value(dt), ir_dtype_name((ir_dtype)ty),
               st_dtype[ty]);
  const ir_shape *s = &g->tensors[t].shape;
  int same = (int)json_array_size(sh) == s->rank;
  for (int k = 0; same && k < s->rank; k++) {
    json_t *x = json_array_get(sh, (size_t)k);
    same = json_is_integer(x) && json_integer_value(x) == s->dim[k];
  }
  if (!same) {
    char *txt = json_dumps(sh, JSON_COMPACT), sb[96];
    base_status r = bad(d, path, "tensor '%s' has shape %s; the graph says %s",
                        name, txt ? txt : "?", ir_shape_str(s, sb, sizeof sb));
    free(txt);
    return r;
  }
  json_int_t ob = json_integer_value(json_array_get(of, 0)),
             oe = json_integer_value(json_array_get(of, 1));
  if (ob < 0 || oe < ob || (uint64_t)oe > datalen ||
      (uint64_t)(oe - ob) != (uint64_t)ir_shape_numel(s) * st_size[ty])
    return bad(d, path,
               "tensor '%s': data_offsets [%lld, %lld] do not hold its %lld "
               "values within the %llu data bytes",
               name, (long long)ob, (long long)oe, (long long)ir_shape_numel(s),
               (unsigned long long)datalen);
  *w = t;
  *b = (uint64_t)ob;
  *end = (uint64_t)oe;
  return BASE_OK;
}

base_status ir_weights_read_mem(ir_graph *g, const uint8_t *data, size_t len,
                                const char *path, base_diag *d) {
  if (len < 8)
    return bad(d, path,
               "not a safetensors file: %zu bytes, no 8-byte header "
               "length",
               len);
  uint64_t hl = get_le64(data);
  if (hl > len - 8)
    return bad(d, path,
               "not a safetensors file: header length %llu exceeds the %zu "
               "bytes that follow",
               (unsigned long long)hl, len - 8);
  json_error_t je;
  json_t *h = json_loadb((const char *)data + 8, (size_t)hl,
                         JSON_REJECT_DUPLICATES, &je);
  if (!h)
    return bad(d, path, "header (JSON) at byte %d: %s", je.position + 8,
               je.text);
  base_status s = BASE_OK;
  const uint8_t *raw = data + 8 + hl;
  uint64_t datalen = len - 8 - hl;
  int n = (int)json_object_size(h);
  int *which = base_calloc((size_t)n + 1, sizeof *which);
  uint64_t *from = base_calloc((size_t)n + 1, sizeof *from);
  int k = 0;
  if (!json_is_object(h))
    s = bad(d, path, "header is not a JSON object");
  else if (!which || !from)
    s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  const char *name;
  json_t *e;
  if (s == BASE_OK)
    json_object_foreach(h, name, e) {
      if (!strcmp(name, "__metadata__"))
        continue;
      uint64_t end;
      if ((s = check_entry(g, path, name, e, datalen, &which[k], &from[k], &end,
                           d)) != BASE_OK)
        break;
      k++;
    }
  /* all checked: now set the values (nothing changes on an error) */
  for (int i = 0; s == BASE_OK && i < k; i++) {
    ir_tensor *t = &g->tensors[which[i]];
    int64_t m = ir_shape_numel(&t->shape);
    float *v = base_arena_alloc(g->arena, (size_t)m * 4 + 1);
    if (!v) {
      s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      break;
    }
    int es = st_size[t->dtype];
    for (int64_t j = 0; j < m; j++) {
      const uint8_t *p = raw + from[i] + (size_t)es * (size_t)j;
      if (t->dtype == IR_DT_BOOL)
        v[j] = p[0] != 0;
      else if (t->dtype == IR_DT_I64)
        v[j] = (float)(int64_t)get_le64(p);
      else {
        uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
                     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        memcpy(&v[j], &u, 4);
      }
    }
    t->data = v;
  }
  free(which);
  free(from);
  json_decref(h);
  return s;
}

base_status ir_weights_read(ir_graph *g, const char *path, base_diag *d) {
  size_t len;
  char *data = base_read_file(path, &len, d);
  if (!data)
    return d ? d->code : BASE_ERR_IO;
  base_status s = ir_weights_read_mem(g, (const uint8_t *)data, len, path, d);
  free(data);
  return s;
}

int ir_weights_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}
