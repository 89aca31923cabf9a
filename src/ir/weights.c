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
 *
 * The metadata also holds "graph": the XXH3 64-bit hash (16 hex digits)
 * of the graph's canonical text (ir_print), and a reader refuses a sidecar
 * whose hash is not its graph's: a graph and weights from two different
 * writes (a kill between the two renames of ir_save) never run together. A
 * sidecar without the field (written before it existed) loads unchecked.
 *
 * Values are held as float (ir_tensor.data): an int64 value that a float
 * cannot hold exactly is refused on reading, and a value that is not an
 * integer in range is refused on writing an int64 weight, rather than
 * changed.
 */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "ir_int.h"

/* jansson allocates through base_malloc, so that the allocator's fault
 * injection (tests/oom.sh) reaches the JSON code's out-of-memory paths too
 * (unchecked, they wrote a header with entries missing, and exited 0). */
static void json_alloc_init(void) { json_set_alloc_funcs(base_malloc, free); }

static void use_base_alloc(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, json_alloc_init);
}

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

static void put_le16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

/* safetensors dtype and element size of each IR type. */
static const char *const st_dtype[IR_NDTYPES] = {"F32", "I64", "BOOL", "F16",
                                                 "BF16"};
static const int st_size[IR_NDTYPES] = {4, 8, 1, 2, 2};

uint64_t ir_text_hash(const char *text, size_t len) {
  return XXH3_64bits(text, len);
}

/* The hash of g's canonical text into hex[17]; BASE_ERR_NOMEM. */
static base_status graph_hash_hex(const ir_graph *g, char hex[17]) {
  char *txt = ir_print(g);
  if (!txt)
    return BASE_ERR_NOMEM;
  snprintf(hex, 17, "%016llx",
           (unsigned long long)ir_text_hash(txt, strlen(txt)));
  free(txt);
  return BASE_OK;
}

/* Appends v to the JSON array a; nonzero on failure (out of memory). */
static int append_int(json_t *a, int64_t v) {
  return json_array_append_new(a, json_integer((json_int_t)v)) != 0;
}

/* Adds header h's entry name: its dtype, shape s and the next bytes of
 * the data at *off (advanced). Non-zero on failure. */
static int add_entry(json_t *h, const char *name, const char *dtype,
                     const ir_shape *s, uint64_t bytes, uint64_t *off) {
  json_t *e = json_object(), *shape = json_array(), *offs = json_array();
  if (!e) {
    json_decref(shape);
    json_decref(offs);
    return 1;
  }
  /* set_new takes its value, also on failure (a NULL one fails) */
  int bad = json_object_set_new(e, "dtype", json_string(dtype));
  bad |= json_object_set_new(e, "shape", shape);
  bad |= json_object_set_new(e, "data_offsets", offs);
  bad |= json_object_set_new(h, name, e);
  for (int k = 0; !bad && k < s->rank; k++)
    bad = append_int(shape, s->dim[k]);
  bad = bad || append_int(offs, (int64_t)*off) ||
        append_int(offs, (int64_t)(*off + bytes));
  *off += bytes;
  return bad;
}

/* The header: one entry per weight with values, plus the metadata. */
static json_t *header(const ir_graph *g, const char *hash, uint64_t *datalen) {
  use_base_alloc();
  json_t *h = json_object(), *meta = json_object();
  if (!h || !meta) {
    json_decref(h);
    json_decref(meta);
    return NULL;
  }
  int bad = json_object_set_new(h, "__metadata__", meta) ||
            json_object_set_new(meta, "format", json_string("superopt")) ||
            json_object_set_new(meta, "graph", json_string(hash));
  uint64_t off = 0;
  for (int i = 0; i < g->ntensors && !bad; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind != IR_T_WEIGHT || !t->data)
      continue;
    uint64_t bytes = (uint64_t)ir_shape_numel(&t->shape) * st_size[t->dtype];
    bad = add_entry(h, t->name, st_dtype[t->dtype], &t->shape, bytes, &off);
  }
  if (bad) {
    json_decref(h);
    return NULL;
  }
  *datalen = off;
  return h;
}

/* An int64 weight's value v as an integer in *out, or 0 when it is not
 * one (NaN, infinite, fractional, or out of int64's range). */
static int exact_i64(float v, int64_t *out) {
  if (!(v >= -0x1p63f && v < 0x1p63f) || truncf(v) != v)
    return 0;
  *out = (int64_t)v;
  return 1;
}

/* The raw values of g's weights with values, after the header. */
static base_status put_values(const ir_graph *g, uint8_t *p, base_diag *d) {
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind != IR_T_WEIGHT || !t->data)
      continue;
    int64_t n = ir_shape_numel(&t->shape), iv;
    for (int64_t k = 0; k < n; k++, p += st_size[t->dtype]) {
      uint32_t v;
      memcpy(&v, &t->data[k], 4);
      if (t->dtype == IR_DT_F32)
        put_le32(p, v);
      else if (ir_dtype_is_half((ir_dtype)t->dtype))
        put_le16(p, t->dtype == IR_DT_F16 ? ir_f16_bits(t->data[k])
                                          : ir_bf16_bits(t->data[k]));
      else if (t->dtype == IR_DT_BOOL)
        *p = t->data[k] != 0.0f;
      else if (exact_i64(t->data[k], &iv))
        put_le32(p, (uint32_t)iv),
            put_le32(p + 4, (uint32_t)((uint64_t)iv >> 32));
      else
        return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                             "int64 weight '%s' holds %g at index %lld, not "
                             "an integer in range; nothing was written",
                             t->name, (double)t->data[k], (long long)k);
    }
  }
  return BASE_OK;
}

base_status ir_weights_encode(const ir_graph *g, char **out, size_t *len,
                              base_diag *d) {
  char hash[17];
  uint64_t off = 0;
  json_t *h = graph_hash_hex(g, hash) ? NULL : header(g, hash, &off);
  char *js = h ? json_dumps(h, JSON_COMPACT) : NULL;
  json_decref(h);
  if (!js)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  size_t hl = strlen(js), padded = (hl + 7) / 8 * 8;
  size_t total = 8 + padded + (size_t)off;
  uint8_t *buf = base_malloc(total);
  if (!buf) {
    free(js);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  put_le32(buf, (uint32_t)padded);
  put_le32(buf + 4, (uint32_t)((uint64_t)padded >> 32));
  memcpy(buf + 8, js, hl);
  memset(buf + 8 + hl, ' ', padded - hl);
  free(js);
  base_status s = put_values(g, buf + 8 + padded, d);
  if (s) {
    free(buf);
    return s;
  }
  *out = (char *)buf;
  *len = total;
  return BASE_OK;
}

base_status ir_weights_write(const ir_graph *g, const char *path,
                             base_diag *d) {
  char *buf;
  size_t len;
  base_status s = ir_weights_encode(g, &buf, &len, d);
  if (s)
    return s;
  s = base_write_atomic(path, buf, len, d);
  free(buf);
  return s;
}

/* The header of n float32 tensors (names[i], shapes[i]) in that order. */
static json_t *values_header(int n, const char *const *names,
                             const ir_shape *const *shapes, uint64_t *datalen) {
  use_base_alloc();
  json_t *h = json_object(), *meta = json_object();
  int bad = !h || !meta || json_object_set_new(h, "__metadata__", meta) ||
            json_object_set_new(meta, "format", json_string("superopt"));
  if (!h || !meta)
    json_decref(meta);
  uint64_t off = 0;
  for (int i = 0; i < n && !bad; i++) {
    uint64_t bytes = 4 * (uint64_t)ir_shape_numel(shapes[i]);
    bad = add_entry(h, names[i], "F32", shapes[i], bytes, &off);
  }
  if (bad) {
    json_decref(h);
    return NULL;
  }
  *datalen = off;
  return h;
}

base_status ir_values_write(const char *path, int n, const char *const *names,
                            const ir_shape *const *shapes,
                            const float *const *vals, base_diag *d) {
  uint64_t off = 0;
  json_t *h = values_header(n, names, shapes, &off);
  char *js = h ? json_dumps(h, JSON_COMPACT) : NULL;
  json_decref(h);
  size_t hl = js ? strlen(js) : 0, padded = (hl + 7) / 8 * 8;
  uint8_t *buf = js ? base_malloc(8 + padded + (size_t)off) : NULL;
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
  for (int i = 0; i < n; i++)
    for (int64_t k = 0, m = ir_shape_numel(shapes[i]); k < m; k++, p += 4) {
      uint32_t v;
      memcpy(&v, &vals[i][k], 4);
      put_le32(p, v);
    }
  base_status s =
      base_write_atomic(path, (const char *)buf, 8 + padded + (size_t)off, d);
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
static base_status check_entry(const ir_graph *g, ir_tkind kind,
                               const char *path, const char *name, json_t *e,
                               uint64_t datalen, int *w, int *ety, uint64_t *b,
                               uint64_t *end, base_diag *d) {
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
  if (t < 0 || g->tensors[t].kind != kind)
    return bad(d, path, "tensor '%s' is not %s of the graph", name,
               kind == IR_T_WEIGHT ? "a weight" : "an input");
  int32_t ty = g->tensors[t].dtype;
  /* an input of a half type may come as float32 (rounded when drawn) */
  if (kind == IR_T_INPUT && ir_dtype_is_half((ir_dtype)ty) &&
      !strcmp(json_string_value(dt), "F32"))
    ty = IR_DT_F32;
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
  *ety = ty;
  *b = (uint64_t)ob;
  *end = (uint64_t)oe;
  return BASE_OK;
}

/* The sidecar's "graph" hash, if it has one, must be g's: the hash of the
 * graph file's bytes as read (raw, when known: what the writer hashed,
 * since it wrote ir_print's text), else of g's canonical text (the same
 * graph with other comments or spacing). */
static base_status check_graph_hash(const ir_graph *g, json_t *h,
                                    const char *path, const char *raw,
                                    base_diag *d) {
  json_t *m = json_object_get(h, "__metadata__");
  json_t *want = json_is_object(m) ? json_object_get(m, "graph") : NULL;
  if (!want)
    return BASE_OK; /* written before the field existed */
  if (raw && json_is_string(want) && !strcmp(json_string_value(want), raw))
    return BASE_OK;
  char have[17];
  if (graph_hash_hex(g, have))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (json_is_string(want) && !strcmp(json_string_value(want), have))
    return BASE_OK;
  return bad(d, path,
             "these weights were written with another graph (graph hash %s; "
             "the graph read has %s): the graph and its weights come from "
             "different writes (one interrupted, two at once, or the graph "
             "edited since); write the pair again, or remove this file to "
             "run with seeded random weights",
             json_is_string(want) ? json_string_value(want) : "malformed",
             have);
}

/* Every value of an int64 weight t (raw data at p) must be exact as float. */
static base_status check_i64(const ir_tensor *t, const uint8_t *p,
                             const char *path, base_diag *d) {
  if (t->dtype != IR_DT_I64)
    return BASE_OK;
  int64_t m = ir_shape_numel(&t->shape);
  for (int64_t j = 0; j < m; j++, p += 8) {
    int64_t v = (int64_t)get_le64(p);
    float f = (float)v;
    if (!(f >= -0x1p63f && f < 0x1p63f) || (int64_t)f != v)
      return bad(d, path,
                 "int64 weight '%s' holds %lld at index %lld, which superopt "
                 "cannot hold exactly (weights are computed as float32: "
                 "integers up to 2^24 in magnitude, larger ones only when "
                 "exact)",
                 t->name, (long long)v, (long long)j);
  }
  return BASE_OK;
}

/* Reads the safetensors bytes data[0..len) into the data of g's tensors of
 * kind `kind` (weights: a sidecar, whose graph hash is checked; inputs). */
static base_status read_mem(ir_graph *g, ir_tkind kind, const uint8_t *data,
                            size_t len, const char *path, const char *raw_hash,
                            base_diag *d) {
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
  use_base_alloc();
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
  int *ety = base_calloc((size_t)n + 1, sizeof *ety);
  uint64_t *from = base_calloc((size_t)n + 1, sizeof *from);
  int k = 0;
  if (!json_is_object(h))
    s = bad(d, path, "header is not a JSON object");
  else if (!which || !from || !ety)
    s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  const char *name;
  json_t *e;
  if (s == BASE_OK)
    json_object_foreach(h, name, e) {
      if (!strcmp(name, "__metadata__"))
        continue;
      uint64_t end;
      if ((s = check_entry(g, kind, path, name, e, datalen, &which[k], &ety[k],
                           &from[k], &end, d)) != BASE_OK)
        break;
      k++;
    }
  if (s == BASE_OK && kind == IR_T_WEIGHT)
    s = check_graph_hash(g, h, path, raw_hash, d);
  for (int i = 0; s == BASE_OK && i < k; i++)
    s = check_i64(&g->tensors[which[i]], raw + from[i], path, d);
  /* all checked: now set the values (nothing changes on an error) */
  for (int i = 0; s == BASE_OK && i < k; i++) {
    ir_tensor *t = &g->tensors[which[i]];
    int64_t m = ir_shape_numel(&t->shape);
    float *v = base_arena_alloc(g->arena, (size_t)m * 4 + 1);
    if (!v) {
      s = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      break;
    }
    int ty = ety[i], es = st_size[ty];
    for (int64_t j = 0; j < m; j++) {
      const uint8_t *p = raw + from[i] + (size_t)es * (size_t)j;
      if (ty == IR_DT_BOOL)
        v[j] = p[0] != 0;
      else if (ty == IR_DT_I64)
        v[j] = (float)(int64_t)get_le64(p);
      else if (ty == IR_DT_F16)
        v[j] = ir_f16_value((uint16_t)(p[0] | p[1] << 8));
      else if (ty == IR_DT_BF16)
        v[j] = ir_bf16_value((uint16_t)(p[0] | p[1] << 8));
      else {
        uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
                     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        memcpy(&v[j], &u, 4);
      }
    }
    t->data = v;
  }
  free(which);
  free(ety);
  free(from);
  json_decref(h);
  return s;
}

base_status ir_weights_read_mem(ir_graph *g, const uint8_t *data, size_t len,
                                const char *path, base_diag *d) {
  return read_mem(g, IR_T_WEIGHT, data, len, path, NULL, d);
}

base_status ir_weights_read_for(ir_graph *g, const char *path, const char *text,
                                size_t text_len, base_diag *d) {
  size_t len;
  char raw[17];
  if (text)
    snprintf(raw, sizeof raw, "%016llx",
             (unsigned long long)ir_text_hash(text, text_len));
  char *data = base_read_file(path, &len, d);
  if (!data)
    return d ? d->code : BASE_ERR_IO;
  base_status s = read_mem(g, IR_T_WEIGHT, (const uint8_t *)data, len, path,
                           text ? raw : NULL, d);
  free(data);
  return s;
}

base_status ir_inputs_read(ir_graph *g, const char *path, base_diag *d) {
  size_t len;
  char *data = base_read_file(path, &len, d);
  if (!data)
    return d ? d->code : BASE_ERR_IO;
  base_status s =
      read_mem(g, IR_T_INPUT, (const uint8_t *)data, len, path, NULL, d);
  free(data);
  return s;
}

base_status ir_weights_read(ir_graph *g, const char *path, base_diag *d) {
  return ir_weights_read_for(g, path, NULL, 0, d);
}

int ir_weights_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}
