/* import.c: ONNX model -> ir_graph.
 *
 * One pass over the (topologically sorted) ONNX nodes. Every ONNX value name
 * maps to a `val`: either an IR tensor or a host constant (float, int64 or
 * bool) folded at import: a node whose inputs are all constants is
 * evaluated on the host (fold.c) before its handler is consulted. A handler per
 * ONNX operator (the table at the bottom) reads its inputs, attributes and
 * constants and emits IR nodes through ir_add_node, which shape-checks every
 * step. Any failure names the node (index, name, type) and frees the graph:
 * never a partial graph.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"
#include "onnx.pb-c.h"
#include "ox_int.h"

#define MIN_OPSET 11
#define MAX_INPUTS 64
/* protobuf messages nested deeper are refused before unpacking (a subgraph
 * level is 3: graph -> node -> attribute -> graph) */
#define MAX_NESTING 100

typedef Onnx__NodeProto node_t;

/* What an ONNX value name refers to. */
typedef struct val {
  const char *name; /* ONNX name (owned by the model) */
  int tensor;       /* IR tensor, or -1 */
  int is_const;     /* host constant: shape + f (float) or i (int64) */
  int is_int;
  int is_bool;   /* with is_int: a bool constant (values 0 / 1 in i) */
  int from_init; /* a float initializer (weight values: never folded, but
                    for scalars) */
  ir_shape shape;
  float *f;
  int64_t *i;
} val;

typedef struct imp {
  const char *file;
  base_diag *d;
  const ox_options *o;
  Onnx__ModelProto *m;
  ir_graph *g;
  int64_t opset;
  val *vals;
  int nvals, capvals;
  int32_t *index; /* name -> val, see find_val */
  int capindex;
  int node_index; /* 1-based, for messages */
  const node_t *node;
  char *weight_input; /* per graph input: 1 if it feeds only weight slots */
  ox_extdata ext;     /* files of external tensor data, mapped on use */
  int half; /* the model's half type (IR_DT_F16, IR_DT_BF16): the first
               float16 / bfloat16 input, initializer or Cast target seen;
               the float32 import is converted to it (docs/half.md) */
} imp;

/* ---- errors ----------------------------------------------------------------
 */

static base_status fail(imp *I, base_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error about the current node (if any), without a line:col. */
static base_status fail(imp *I, base_status code, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (I->node)
    base_diag_set(I->d, code, 0, 0, "node %d '%s' (%s): %s", I->node_index,
                  I->node->name ? I->node->name : "",
                  I->node->op_type && I->node->op_type[0] ? I->node->op_type
                                                          : "no op type",
                  msg);
  else
    base_diag_set(I->d, code, 0, 0, "%s", msg);
  return code;
}

/* ---- values
 * ------------------------------------------------------------------ */

/* The values are indexed by name (open addressing over val index + 1, the
 * latest definition winning), so each lookup is constant-time. */
static uint32_t val_slot(const imp *I, const char *name) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = name; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  return h & (uint32_t)(I->capindex - 1);
}

static val *find_val(imp *I, const char *name) {
  if (!I->index)
    return NULL;
  for (uint32_t i = val_slot(I, name);;
       i = (i + 1) & (uint32_t)(I->capindex - 1)) {
    int32_t k = I->index[i] - 1;
    if (k < 0)
      return NULL;
    if (strcmp(I->vals[k].name, name) == 0)
      return &I->vals[k];
  }
}

static void index_val(imp *I, int32_t k) {
  uint32_t i = val_slot(I, I->vals[k].name);
  while (I->index[i] && strcmp(I->vals[I->index[i] - 1].name, I->vals[k].name))
    i = (i + 1) & (uint32_t)(I->capindex - 1);
  I->index[i] = k + 1;
}

static int reindex(imp *I) {
  int cap = 1024;
  while (cap <= 2 * I->capvals)
    cap *= 2;
  int32_t *index = base_calloc((size_t)cap, sizeof *index);
  if (!index)
    return -1;
  free(I->index);
  I->index = index;
  I->capindex = cap;
  for (int32_t k = 0; k < I->nvals; k++)
    index_val(I, k);
  return 0;
}

static val *new_val(imp *I, const char *name) {
  if (I->nvals == I->capvals) {
    int cap = I->capvals ? 2 * I->capvals : 256;
    val *v = base_realloc(I->vals, sizeof *v * (size_t)cap);
    if (!v)
      return NULL;
    I->vals = v;
    I->capvals = cap;
    if (reindex(I))
      return NULL;
  }
  val *v = &I->vals[I->nvals++];
  memset(v, 0, sizeof *v);
  v->name = name;
  v->tensor = -1;
  index_val(I, I->nvals - 1);
  return v;
}

static void free_vals(imp *I) {
  for (int i = 0; i < I->nvals; i++) {
    free(I->vals[i].f);
    free(I->vals[i].i);
  }
  free(I->vals);
  free(I->index);
}

/* An IR name for an ONNX name: invalid characters become '_', a name that
 * does not start with a letter or '_' gets "t_" in front, and a name taken
 * already gets a numeric suffix. */
static void ir_name_for(imp *I, const char *onnx, char *buf, size_t n) {
  size_t k = 0;
  int c0 = (unsigned char)onnx[0];
  if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_'))
    k = (size_t)snprintf(buf, n, "t_");
  for (const char *p = onnx; *p && k + 1 < n; p++) {
    int c = (unsigned char)*p;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    buf[k++] = ok ? (char)c : '_';
  }
  buf[k] = '\0';
  if (k == 2 && onnx[0] == '\0')
    snprintf(buf, n, "t_empty");
  size_t base = strlen(buf);
  for (int s = 2; ir_find_tensor(I->g, buf) >= 0; s++)
    snprintf(buf + (base < n - 12 ? base : n - 12), 12, "_%d", s);
}

/* ---- constants
 * ------------------------------------------------------------------ */

enum {
  DT_FLOAT = 1,
  DT_INT32 = 6,
  DT_INT64 = 7,
  DT_BOOL = 9,
  DT_FLOAT16 = 10,
  DT_DOUBLE = 11,
  DT_BFLOAT16 = 16
};

/* Notes the model's half type from an ONNX element type e. */
static void note_half(imp *I, int64_t e) {
  if (!I->half && (e == DT_FLOAT16 || e == DT_BFLOAT16))
    I->half = e == DT_FLOAT16 ? IR_DT_F16 : IR_DT_BF16;
}

/* Half values (float16, bfloat16: raw 2 bytes each, else one an int32_data
 * entry, as ONNX stores them) of t into v->f. */
static base_status load_half(imp *I, const Onnx__TensorProto *t, int dt,
                             const uint8_t *rp, size_t raw, int64_t n, val *v) {
  size_t have = rp ? raw / 2 : t->n_int32_data;
  if ((int64_t)have != n)
    return fail(I, BASE_ERR_SHAPE,
                "tensor '%s' holds %zu values for shape of %lld",
                t->name ? t->name : "", have, (long long)n);
  v->f = base_malloc(sizeof(float) * (size_t)(n ? n : 1));
  if (!v->f)
    return fail(I, BASE_ERR_NOMEM, "out of memory");
  for (int64_t k = 0; k < n; k++) {
    uint16_t h = rp ? (uint16_t)(rp[2 * k] | rp[2 * k + 1] << 8)
                    : (uint16_t)t->int32_data[k];
    v->f[k] = dt == DT_FLOAT16 ? ir_f16_value(h) : ir_bf16_value(h);
  }
  note_half(I, dt);
  return BASE_OK;
}

static int set_dims(imp *I, ir_shape *s, size_t n, const int64_t *dims) {
  if (n > IR_MAX_RANK)
    return fail(I, BASE_ERR_SHAPE, "tensor of rank %zu (at most %d)", n,
                IR_MAX_RANK);
  memset(s, 0, sizeof *s);
  s->rank = (int32_t)n;
  for (size_t k = 0; k < n; k++) {
    if (dims[k] < 0 || dims[k] > INT32_MAX)
      return fail(I, BASE_ERR_SHAPE, "bad dimension %lld", (long long)dims[k]);
    s->dim[k] = dims[k];
  }
  return BASE_OK;
}

static base_status count_err(imp *I, const Onnx__TensorProto *t, size_t have,
                             int64_t n) {
  return fail(I, BASE_ERR_SHAPE,
              "tensor '%s' holds %zu values for shape of %lld",
              t->name ? t->name : "", have, (long long)n);
}

/* Fills v from an ONNX TensorProto (float or integer data). */
static base_status load_tensor(imp *I, const Onnx__TensorProto *t, val *v) {
  base_status st = set_dims(I, &v->shape, t->n_dims, t->dims);
  if (st)
    return st;
  int64_t n = ir_shape_numel(&v->shape);
  int dt = t->has_data_type ? t->data_type : 0;
  size_t raw = t->has_raw_data ? t->raw_data.len : 0;
  const uint8_t *rp = t->has_raw_data ? t->raw_data.data : NULL;
  if (ox_ext_is_external(t)) {
    char err[300];
    if ((st = ox_ext_bytes(&I->ext, t, &rp, &raw, err, sizeof err)))
      return fail(I, st, "tensor '%s': %s", t->name ? t->name : "", err);
  }
  v->is_const = 1;
  if (dt == DT_FLOAT16 || dt == DT_BFLOAT16)
    return load_half(I, t, dt, rp, raw, n, v);
  if (dt == DT_FLOAT || dt == DT_DOUBLE) {
    size_t es = dt == DT_FLOAT ? 4 : 8;
    size_t have = rp               ? raw / es
                  : dt == DT_FLOAT ? t->n_float_data
                                   : t->n_double_data;
    if ((int64_t)have != n)
      return count_err(I, t, have, n);
    v->f = base_malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!v->f)
      return fail(I, BASE_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++) {
      if (dt == DT_FLOAT && rp)
        memcpy(&v->f[k], rp + 4 * k, 4);
      else if (dt == DT_FLOAT)
        v->f[k] = t->float_data[k];
      else {
        double x;
        if (rp)
          memcpy(&x, rp + 8 * k, 8);
        else
          x = t->double_data[k];
        v->f[k] = (float)x;
      }
    }
    return BASE_OK;
  }
  if (dt == DT_INT64 || dt == DT_INT32) {
    size_t es = dt == DT_INT64 ? 8 : 4;
    size_t have = rp               ? raw / es
                  : dt == DT_INT64 ? t->n_int64_data
                                   : t->n_int32_data;
    if ((int64_t)have != n)
      return count_err(I, t, have, n);
    v->is_int = 1;
    v->i = base_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v->i)
      return fail(I, BASE_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++) {
      if (dt == DT_INT64 && rp)
        memcpy(&v->i[k], rp + 8 * k, 8);
      else if (dt == DT_INT64)
        v->i[k] = t->int64_data[k];
      else if (rp) {
        int32_t x;
        memcpy(&x, rp + 4 * k, 4);
        v->i[k] = x;
      } else
        v->i[k] = t->int32_data[k];
    }
    return BASE_OK;
  }
  if (dt == DT_BOOL) {
    size_t have = rp ? raw : t->n_int32_data;
    if ((int64_t)have != n)
      return count_err(I, t, have, n);
    v->is_int = v->is_bool = 1;
    v->i = base_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v->i)
      return fail(I, BASE_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++)
      v->i[k] = (rp ? rp[k] : t->int32_data[k]) != 0;
    return BASE_OK;
  }
  return fail(I, BASE_ERR_PARAM,
              "tensor '%s' has data type %d (supported: float, "
              "double, float16, bfloat16, int32, int64, bool)",
              t->name ? t->name : "", dt);
}

/* The IR tensor of value v, creating a weight with its data if constant. */
static int tensor_of(imp *I, val *v) {
  if (v->tensor >= 0)
    return v->tensor;
  char name[256];
  ir_name_for(I, v->name, name, sizeof name);
  int64_t n = ir_shape_numel(&v->shape);
  for (int64_t k = 0; v->is_int && k < n; k++)
    if (v->i[k] >= IR_I64_EXACT || v->i[k] <= -IR_I64_EXACT)
      return fail(I, BASE_ERR_PARAM,
                  "integer constant '%s' holds %lld, beyond what the "
                  "executors hold exactly (|v| < 2^24)",
                  v->name, (long long)v->i[k]),
             -1;
  int t = ir_add_tensor(I->g, name, IR_T_WEIGHT, &v->shape, I->d);
  if (t < 0)
    return fail(I, I->d->code, "%s", I->d->msg), -1;
  I->g->tensors[t].dtype = v->is_bool  ? IR_DT_BOOL
                           : v->is_int ? IR_DT_I64
                                       : IR_DT_F32;
  float *data =
      base_arena_alloc(I->g->arena, sizeof(float) * (size_t)(n ? n : 1));
  if (!data)
    return fail(I, BASE_ERR_NOMEM, "out of memory"), -1;
  for (int64_t k = 0; k < n; k++)
    data[k] = v->is_int ? (float)v->i[k] : v->f[k];
  I->g->tensors[t].data = data;
  v->tensor = t;
  return t;
}

/* ---- node inputs and attributes
 * -------------------------------------------------- */

static int emit(imp *I, ir_opcode op, const int32_t *in, int nin,
                const ir_attrs *a, const char *name_hint, int bind_outputs);
static const char *aux(imp *I, const char *suffix, char *buf, size_t n);

static int has_input(const node_t *n, size_t k) {
  return k < n->n_input && n->input[k] && n->input[k][0];
}

static val *input(imp *I, size_t k) {
  const node_t *n = I->node;
  if (!has_input(n, k)) {
    fail(I, BASE_ERR_ARITY, "missing input %zu", k + 1);
    return NULL;
  }
  val *v = find_val(I, n->input[k]);
  if (!v)
    fail(I, BASE_ERR_UNDEFINED, "input '%s' is not defined before this node",
         n->input[k]);
  return v;
}

/* Input k as an IR tensor index, or -1 (error set). */
static int in_tensor(imp *I, size_t k) {
  val *v = input(I, k);
  return v ? tensor_of(I, v) : -1;
}

/* Input k as a constant, or NULL (error set). */
static val *in_const(imp *I, size_t k) {
  val *v = input(I, k);
  if (v && !v->is_const) {
    fail(I, BASE_ERR_PARAM, "input %zu ('%s') must be a constant", k + 1,
         v->name);
    return NULL;
  }
  return v;
}

static const Onnx__AttributeProto *attr(const node_t *n, const char *name) {
  for (size_t k = 0; k < n->n_attribute; k++)
    if (n->attribute[k]->name && strcmp(n->attribute[k]->name, name) == 0)
      return n->attribute[k];
  return NULL;
}

static int64_t attr_i(const node_t *n, const char *name, int64_t def) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a && a->has_i ? a->i : def;
}

static float attr_f(const node_t *n, const char *name, float def) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a && a->has_f ? a->f : def;
}

static const char *attr_s(const node_t *n, const char *name, const char *def,
                          char *buf, size_t len) {
  const Onnx__AttributeProto *a = attr(n, name);
  if (!a || !a->has_s)
    return def;
  size_t k = a->s.len < len - 1 ? a->s.len : len - 1;
  memcpy(buf, a->s.data, k);
  buf[k] = '\0';
  return buf;
}

/* Integer list attribute; returns its length (-1 if absent or too long). */
static int attr_ints(const node_t *n, const char *name, int64_t *out, int max) {
  const Onnx__AttributeProto *a = attr(n, name);
  if (!a || (int)a->n_ints > max)
    return -1;
  for (size_t k = 0; k < a->n_ints; k++)
    out[k] = a->ints[k];
  return (int)a->n_ints;
}

/* Integer list from a constant input (opset >= 13 style) or an attribute. */
static int ints_from(imp *I, size_t k, const char *attr_name, int64_t *out,
                     int max) {
  if (has_input(I->node, k)) {
    val *v = in_const(I, k);
    if (!v)
      return -2;
    int64_t n = ir_shape_numel(&v->shape);
    if (!v->is_int || n > max)
      return fail(I, BASE_ERR_PARAM, "input %zu must hold at most %d integers",
                  k + 1, max),
             -2;
    memcpy(out, v->i, sizeof(int64_t) * (size_t)n);
    return (int)n;
  }
  return attr_ints(I->node, attr_name, out, max);
}

static const ir_shape *shape_of(imp *I, val *v) {
  return v->tensor >= 0 ? &I->g->tensors[v->tensor].shape : &v->shape;
}

/* ---- emitting
 * ------------------------------------------------------------------- */

/* Defines ONNX output k of the current node as IR tensor t. */
static base_status bind(imp *I, size_t k, int t) {
  if (k >= I->node->n_output || !I->node->output[k][0])
    return BASE_OK;
  val *v = new_val(I, I->node->output[k]);
  if (!v)
    return fail(I, BASE_ERR_NOMEM, "out of memory");
  v->tensor = t;
  return BASE_OK;
}

/* Adds one IR node; its outputs are named after ONNX outputs first..; when
 * bind_outputs, ONNX outputs 0..nout-1 refer to them. Returns node or -1. */
static int emit(imp *I, ir_opcode op, const int32_t *in, int nin,
                const ir_attrs *a, const char *name_hint, int bind_outputs) {
  char names[IR_MAX_LIST][256];
  const char *np[IR_MAX_LIST];
  int nout = ir_op_nout(op, a);
  if (nout > IR_MAX_LIST || nout < 1)
    return fail(I, BASE_ERR_PARAM, "too many outputs"), -1;
  for (int k = 0; k < nout; k++) {
    const char *src = name_hint;
    if (bind_outputs && (size_t)k < I->node->n_output && I->node->output[k][0])
      src = I->node->output[k];
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", src ? src : "t");
    ir_name_for(I, tmp, names[k], sizeof names[k]);
    np[k] = names[k];
  }
  int node = ir_add_node(I->g, op, in, nin, a, np, I->d);
  if (node < 0)
    return fail(I, I->d->code, "%s", I->d->msg), -1;
  for (int k = 0; bind_outputs && k < nout; k++)
    if (bind(I, (size_t)k, I->g->nodes[node].out[k]))
      return -1;
  return node;
}

/* The single output tensor of node, or -1 when node < 0. */
static int out0(imp *I, int node) {
  return node < 0 ? -1 : I->g->nodes[node].out[0];
}

/* A helper name for an intermediate tensor: "<first output>.<suffix>". */
static const char *aux(imp *I, const char *suffix, char *buf, size_t n) {
  snprintf(buf, n, "%s.%s", I->node->n_output ? I->node->output[0] : "t",
           suffix);
  return buf;
}

/* A float scalar constant as a weight tensor (named after the node). */
static int scalar_weight(imp *I, float x, const char *suffix) {
  char hint[256], name[256];
  ir_shape s;
  memset(&s, 0, sizeof s);
  ir_name_for(I, aux(I, suffix, hint, sizeof hint), name, sizeof name);
  int t = ir_add_tensor(I->g, name, IR_T_WEIGHT, &s, I->d);
  float *p = t < 0 ? NULL : base_arena_alloc(I->g->arena, sizeof(float));
  if (!p)
    return fail(I, t < 0 ? I->d->code : BASE_ERR_NOMEM, "%s",
                t < 0 ? I->d->msg : "out of memory"),
           -1;
  *p = x;
  I->g->tensors[t].data = p;
  return t;
}

/* Tensor t cast to type dt through an IR cast named "<output>.<suffix>"
 * (t itself when it has that type); -1 with the error set. */
static int cast_to(imp *I, int32_t t, int dt, const char *suffix) {
  if (t < 0 || I->g->tensors[t].dtype == dt)
    return t;
  ir_attrs a;
  char buf[256];
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = dt; /* cast's `to` (params.def) */
  return out0(
      I, emit(I, IR_OP_CAST, &t, 1, &a, aux(I, suffix, buf, sizeof buf), 0));
}

static int dtype_of(imp *I, val *v) {
  if (v->tensor >= 0)
    return I->g->tensors[v->tensor].dtype;
  return v->is_bool ? IR_DT_BOOL : v->is_int ? IR_DT_I64 : IR_DT_F32;
}

/* ---- handlers
 * --------------------------------------------------------------------- */

typedef base_status (*handler)(imp *I);

static base_status emit1(imp *I, ir_opcode op, const int32_t *in, int nin,
                         const ir_attrs *a) {
  return emit(I, op, in, nin, a, NULL, 1) < 0 ? I->d->code : BASE_OK;
}

static base_status unary(imp *I, ir_opcode op) {
  ir_attrs a;
  ir_attrs_default(op, &a);
  int32_t x = in_tensor(I, 0);
  return x < 0 ? I->d->code : emit1(I, op, &x, 1, &a);
}

/* An ew.def operator by its onnx column (find_op: ew_onnx_op). */
static base_status h_ew(imp *I) {
  int op = ir_ew_by_onnx(I->node->op_type ? I->node->op_type : "");
  return op < 0 ? fail(I, BASE_ERR_INTERNAL, "not an ew.def operator")
                : unary(I, (ir_opcode)op);
}

static base_status h_gelu(imp *I) {
  char buf[32];
  const char *ap = attr_s(I->node, "approximate", "none", buf, sizeof buf);
  if (strcmp(ap, "none") != 0)
    return fail(I, BASE_ERR_PARAM,
                "approximate='%s' is not supported (only none)", ap);
  return unary(I, IR_OP_GELU);
}

static base_status alias(imp *I) {
  val *v = input(I, 0);
  if (!v)
    return I->d->code;
  for (size_t k = 1; k < I->node->n_output; k++)
    if (I->node->output[k][0])
      return fail(I, BASE_ERR_PARAM, "output %zu is not supported", k + 1);
  val *o = new_val(I, I->node->output[0]);
  if (!o)
    return fail(I, BASE_ERR_NOMEM, "out of memory");
  v = input(I, 0); /* new_val may have moved the array */
  const char *name = o->name;
  *o = *v;
  o->name = name;
  if (v->is_const) { /* deep copy: each val owns its data */
    int64_t n = ir_shape_numel(&v->shape);
    size_t es = v->is_int ? sizeof(int64_t) : sizeof(float);
    void *p = base_malloc(es * (size_t)(n ? n : 1));
    if (!p)
      return fail(I, BASE_ERR_NOMEM, "out of memory");
    memcpy(p, v->is_int ? (void *)v->i : (void *)v->f, es * (size_t)n);
    o->i = v->is_int ? p : NULL;
    o->f = v->is_int ? NULL : p;
  }
  return BASE_OK;
}

static base_status h_dropout(imp *I) { return alias(I); }
static base_status h_identity(imp *I) { return alias(I); }

/* A new constant output 0 of the current node. */
static val *const_out(imp *I, const ir_shape *s, int is_int) {
  val *v = new_val(I, I->node->n_output ? I->node->output[0] : "");
  if (!v) {
    fail(I, BASE_ERR_NOMEM, "out of memory");
    return NULL;
  }
  int64_t n = ir_shape_numel(s);
  v->is_const = 1;
  v->is_int = is_int;
  v->shape = *s;
  if (is_int)
    v->i = base_calloc((size_t)(n ? n : 1), sizeof(int64_t));
  else
    v->f = base_calloc((size_t)(n ? n : 1), sizeof(float));
  if (!v->i && !v->f) {
    fail(I, BASE_ERR_NOMEM, "out of memory");
    return NULL;
  }
  return v;
}

static base_status h_constant(imp *I) {
  const node_t *n = I->node;
  const Onnx__AttributeProto *a;
  val *v;
  if ((a = attr(n, "value")) && a->t) {
    if (!(v = new_val(I, n->output[0])))
      return fail(I, BASE_ERR_NOMEM, "out of memory");
    return load_tensor(I, a->t, v);
  }
  ir_shape s = {0};
  if ((a = attr(n, "value_float")) && a->has_f) {
    if (!(v = const_out(I, &s, 0)))
      return I->d->code;
    v->f[0] = a->f;
  } else if ((a = attr(n, "value_int")) && a->has_i) {
    if (!(v = const_out(I, &s, 1)))
      return I->d->code;
    v->i[0] = a->i;
  } else if ((a = attr(n, "value_floats")) || (a = attr(n, "value_ints"))) {
    int is_int = a->n_ints > 0 || a->n_floats == 0;
    s.rank = 1;
    s.dim[0] = is_int ? (int64_t)a->n_ints : (int64_t)a->n_floats;
    if (!(v = const_out(I, &s, is_int)))
      return I->d->code;
    for (int64_t k = 0; k < s.dim[0]; k++)
      is_int ? (void)(v->i[k] = a->ints[k]) : (void)(v->f[k] = a->floats[k]);
  } else
    return fail(I, BASE_ERR_PARAM,
                "unsupported Constant form (use value, "
                "value_float(s) or value_int(s))");
  return BASE_OK;
}

/* Spatial attributes of Conv and pools into a (kernel from k). */
static base_status window_attrs(imp *I, ir_attrs *a, const ir_shape *x,
                                const int64_t *k, int is_pool) {
  int64_t v[8];
  char buf[32];
  if (x->rank != 4)
    return fail(I, BASE_ERR_SHAPE,
                "only 2-D (NCHW, rank 4) inputs are supported");
  if (attr_ints(I->node, "strides", v, 2) == 2)
    a->stride[0] = (int32_t)v[0], a->stride[1] = (int32_t)v[1];
  int nd = attr_ints(I->node, "dilations", v, 2);
  if (nd == 2 && is_pool && (v[0] != 1 || v[1] != 1))
    return fail(I, BASE_ERR_PARAM, "pooling with dilation is not supported");
  if (nd == 2 && !is_pool)
    a->dilation[0] = (int32_t)v[0], a->dilation[1] = (int32_t)v[1];
  const char *ap = attr_s(I->node, "auto_pad", "NOTSET", buf, sizeof buf);
  a->padmode = IR_PAD_EXPLICIT;
  memset(a->pad, 0, sizeof a->pad);
  if (!strcmp(ap, "SAME_UPPER"))
    a->padmode = IR_PAD_SAME;
  else if (!strcmp(ap, "VALID"))
    a->padmode = IR_PAD_VALID;
  else if (!strcmp(ap, "SAME_LOWER")) {
    for (int d = 0; d < 2; d++) { /* like SAME, extra padding at the start */
      int64_t in = x->dim[2 + d], s = a->stride[d];
      int64_t span = (k[d] - 1) * (is_pool ? 1 : a->dilation[d]) + 1;
      int64_t out = (in + s - 1) / s, tot = (out - 1) * s + span - in;
      tot = tot < 0 ? 0 : tot;
      a->pad[d] = (int32_t)(tot - tot / 2);
      a->pad[d + 2] = (int32_t)(tot / 2);
    }
  } else if (!strcmp(ap, "NOTSET")) {
    if (attr_ints(I->node, "pads", v, 4) == 4)
      for (int d = 0; d < 4; d++) {
        if (v[d] < 0 || v[d] > INT32_MAX)
          return fail(I, BASE_ERR_PARAM, "bad pads");
        a->pad[d] = (int32_t)v[d];
      }
  } else
    return fail(I, BASE_ERR_PARAM, "unknown auto_pad '%s'", ap);
  return BASE_OK;
}

static base_status h_conv(imp *I) {
  ir_attrs a;
  ir_attrs_default(IR_OP_CONV2D, &a);
  int32_t in[3];
  int nin = has_input(I->node, 2) ? 3 : 2;
  for (int k = 0; k < nin; k++)
    if ((in[k] = in_tensor(I, (size_t)k)) < 0)
      return I->d->code;
  const ir_shape *w = &I->g->tensors[in[1]].shape;
  if (w->rank != 4)
    return fail(I, BASE_ERR_SHAPE, "only 2-D convolutions are supported");
  a.groups = (int32_t)attr_i(I->node, "group", 1);
  base_status st =
      window_attrs(I, &a, &I->g->tensors[in[0]].shape, w->dim + 2, 0);
  return st ? st : emit1(I, IR_OP_CONV2D, in, nin, &a);
}

/* ONNX ceil_mode as extra bottom/right padding (exact for max pooling and
 * for average pooling that does not count padding). */
static base_status ceil_mode(imp *I, ir_attrs *a, const ir_shape *x) {
  if (a->padmode != IR_PAD_EXPLICIT)
    return fail(I, BASE_ERR_PARAM, "ceil_mode with auto_pad is not supported");
  for (int d = 0; d < 2; d++) {
    int64_t in = x->dim[2 + d], k = a->kernel[d], s = a->stride[d];
    int64_t lo = a->pad[d], hi = a->pad[d + 2];
    int64_t span = in + lo + hi - k;
    if (span < 0)
      continue;
    int64_t out = (span + s - 1) / s + 1;
    if ((out - 1) * s >= in + lo) /* last window must start inside */
      out--;
    int64_t need = (out - 1) * s + k - (in + lo + hi);
    if (need > 0)
      a->pad[d + 2] += (int32_t)need;
  }
  return BASE_OK;
}

static base_status pool(imp *I, ir_opcode op) {
  ir_attrs a;
  ir_attrs_default(op, &a);
  int32_t x = in_tensor(I, 0);
  int64_t k[2];
  if (x < 0)
    return I->d->code;
  if (attr_ints(I->node, "kernel_shape", k, 2) != 2)
    return fail(I, BASE_ERR_PARAM, "needs a 2-D kernel_shape");
  a.kernel[0] = (int32_t)k[0], a.kernel[1] = (int32_t)k[1];
  const ir_shape *xs = &I->g->tensors[x].shape;
  base_status st = window_attrs(I, &a, xs, k, 1);
  if (st)
    return st;
  if (op == IR_OP_AVGPOOL)
    a.count_include_pad = (int32_t)attr_i(I->node, "count_include_pad", 0);
  if (attr_i(I->node, "ceil_mode", 0)) {
    if (op == IR_OP_AVGPOOL && a.count_include_pad)
      return fail(I, BASE_ERR_PARAM,
                  "ceil_mode=1 with count_include_pad=1 is not supported");
    if ((st = ceil_mode(I, &a, xs)))
      return st;
  }
  if (I->node->n_output > 1 && I->node->output[1][0])
    return fail(I, BASE_ERR_PARAM, "the Indices output is not supported");
  return emit1(I, op, &x, 1, &a);
}

static base_status h_maxpool(imp *I) { return pool(I, IR_OP_MAXPOOL); }
static base_status h_avgpool(imp *I) { return pool(I, IR_OP_AVGPOOL); }
static base_status h_gap(imp *I) { return unary(I, IR_OP_GLOBAL_AVGPOOL); }

/* Element-wise arithmetic on two int64 constants (shape computations). */
static base_status fold_int_binary(imp *I, ir_opcode op, val *x, val *y) {
  int64_t nx = ir_shape_numel(&x->shape), ny = ir_shape_numel(&y->shape);
  if (!(nx == ny || nx == 1 || ny == 1) || x->shape.rank > 1 ||
      y->shape.rank > 1)
    return fail(I, BASE_ERR_SHAPE, "unsupported integer broadcast");
  ir_shape so = nx >= ny ? x->shape : y->shape; /* copy: vals may move */
  int64_t *xi = x->i, *yi = y->i;
  val *o = const_out(I, &so, 1);
  if (!o)
    return I->d->code;
  for (int64_t k = 0; k < ir_shape_numel(&so); k++) {
    int64_t p = xi[nx == 1 ? 0 : k], q = yi[ny == 1 ? 0 : k];
    if ((op == IR_OP_EWDIV) && q == 0)
      return fail(I, BASE_ERR_PARAM, "integer division by zero");
    switch (op) {
    case IR_OP_EWADD: o->i[k] = p + q; break;
    case IR_OP_EWSUB: o->i[k] = p - q; break;
    case IR_OP_EWMUL: o->i[k] = p * q; break;
    case IR_OP_EWDIV: o->i[k] = p / q; break;
    default:
      return fail(I, BASE_ERR_INTERNAL, "%s: no integer folding",
                  ir_op(op)->name);
    }
  }
  return BASE_OK;
}

static base_status binary(imp *I, ir_opcode op) {
  val *x = input(I, 0), *y = x ? input(I, 1) : NULL;
  if (!y)
    return I->d->code;
  if (x->is_const && y->is_const && x->is_int && y->is_int)
    return fold_int_binary(I, op, x, y);
  int dt = dtype_of(I, x);
  ir_attrs a;
  ir_attrs_default(op, &a);
  int32_t in[2] = {in_tensor(I, 0), -1};
  if (in[0] < 0 || (in[1] = in_tensor(I, 1)) < 0)
    return I->d->code;
  if (dt == IR_DT_F32)
    return emit1(I, op, in, 2, &a);
  /* int64 arithmetic on values that depend on an input (position ids):
   * in float32, exact for the integers executors hold (|v| < 2^24), and
   * cast back (division truncates, as ONNX's integer Div) */
  char buf[256];
  if ((in[0] = cast_to(I, in[0], IR_DT_F32, "af")) < 0 ||
      (in[1] = cast_to(I, in[1], IR_DT_F32, "bf")) < 0)
    return I->d->code;
  int32_t r = out0(I, emit(I, op, in, 2, &a, aux(I, "f", buf, sizeof buf), 0));
  if (r < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = dt;
  return emit1(I, IR_OP_CAST, &r, 1, &a);
}

static base_status h_add(imp *I) { return binary(I, IR_OP_EWADD); }
static base_status h_sub(imp *I) { return binary(I, IR_OP_EWSUB); }
static base_status h_mul(imp *I) { return binary(I, IR_OP_EWMUL); }
static base_status h_div(imp *I) { return binary(I, IR_OP_EWDIV); }

static base_status h_pow(imp *I) {
  val *e = in_const(I, 1);
  if (!e)
    return I->d->code;
  if (ir_shape_numel(&e->shape) != 1)
    return fail(I, BASE_ERR_PARAM, "the exponent must be a scalar constant");
  double p = e->is_int ? (double)e->i[0] : e->f[0];
  ir_attrs a;
  int32_t in[2] = {in_tensor(I, 0), -1};
  if (in[0] < 0)
    return I->d->code;
  in[1] = in[0];
  if (p == 2) {
    ir_attrs_default(IR_OP_EWMUL, &a);
    return emit1(I, IR_OP_EWMUL, in, 2, &a);
  }
  if (p == 3) { /* GPT-2's tanh GELU: (x * x) * x */
    char buf[256];
    ir_attrs_default(IR_OP_EWMUL, &a);
    in[1] = out0(
        I, emit(I, IR_OP_EWMUL, in, 2, &a, aux(I, "sq", buf, sizeof buf), 0));
    return in[1] < 0 ? I->d->code : emit1(I, IR_OP_EWMUL, in, 2, &a);
  }
  if (p == 0.5)
    return unary(I, IR_OP_SQRT);
  if (p == 1)
    return alias(I);
  return fail(I, BASE_ERR_PARAM, "exponent %g is not supported (1, 2, 3, 0.5)",
              p);
}

static base_status h_clip(imp *I) {
  ir_attrs a;
  ir_attrs_default(IR_OP_CLIP, &a);
  a.lo = -INFINITY, a.hi = INFINITY;
  if (I->opset < 11) {
    a.lo = attr_f(I->node, "min", a.lo);
    a.hi = attr_f(I->node, "max", a.hi);
  }
  for (size_t k = 1; k <= 2; k++) {
    if (!has_input(I->node, k))
      continue;
    val *v = in_const(I, k);
    if (!v)
      return I->d->code;
    if (ir_shape_numel(&v->shape) != 1)
      return fail(I, BASE_ERR_PARAM, "min and max must be scalars");
    float x = v->is_int ? (float)v->i[0] : v->f[0];
    *(k == 1 ? &a.lo : &a.hi) = x;
  }
  int32_t x = in_tensor(I, 0);
  return x < 0 ? I->d->code : emit1(I, IR_OP_CLIP, &x, 1, &a);
}

static int norm_axis(int64_t axis, int rank) {
  return (int)(axis < 0 ? axis + rank : axis);
}

/* Concat of rank-1 constants, else an IR concat. */
static base_status h_concat(imp *I) {
  const node_t *n = I->node;
  int all_const = n->n_input > 0;
  for (size_t k = 0; k < n->n_input; k++) {
    val *v = input(I, k);
    if (!v)
      return I->d->code;
    all_const &= v->is_const && v->is_int && v->shape.rank == 1;
  }
  if (all_const) {
    ir_shape s = {.rank = 1};
    for (size_t k = 0; k < n->n_input; k++)
      s.dim[0] += input(I, k)->shape.dim[0];
    val *o = const_out(I, &s, 1);
    int64_t at = 0;
    for (size_t k = 0; o && k < n->n_input; k++) {
      val *v = input(I, k);
      memcpy(o->i + at, v->i, sizeof(int64_t) * (size_t)v->shape.dim[0]);
      at += v->shape.dim[0];
    }
    return o ? BASE_OK : I->d->code;
  }
  if (n->n_input > MAX_INPUTS)
    return fail(I, BASE_ERR_ARITY, "more than %d inputs", MAX_INPUTS);
  int32_t in[MAX_INPUTS];
  for (size_t k = 0; k < n->n_input; k++)
    if ((in[k] = in_tensor(I, k)) < 0)
      return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_CONCAT, &a);
  a.axis = (int32_t)attr_i(n, "axis", 0);
  return emit1(I, IR_OP_CONCAT, in, (int)n->n_input, &a);
}

static base_status h_split(imp *I) {
  const node_t *n = I->node;
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  const ir_shape *s = &I->g->tensors[x].shape;
  ir_attrs a;
  ir_attrs_default(IR_OP_SPLIT, &a);
  a.axis = norm_axis(attr_i(n, "axis", 0), s->rank);
  if (a.axis < 0 || a.axis >= s->rank)
    return fail(I, BASE_ERR_PARAM, "axis out of range");
  int cnt = ints_from(I, 1, "split", a.list, IR_MAX_LIST);
  if (cnt == -2)
    return I->d->code;
  if (cnt < 0) { /* equal parts, one per output */
    int64_t parts = attr_i(n, "num_outputs", (int64_t)n->n_output);
    if (parts < 1 || parts > IR_MAX_LIST)
      return fail(I, BASE_ERR_ARITY, "bad number of outputs");
    int64_t dim = s->dim[a.axis], each = (dim + parts - 1) / parts;
    for (cnt = 0; cnt < parts; cnt++)
      a.list[cnt] = cnt + 1 < parts ? each : dim - each * (parts - 1);
  }
  a.nlist = cnt;
  if ((size_t)cnt != n->n_output)
    return fail(I, BASE_ERR_ARITY, "%d parts but %zu outputs", cnt,
                n->n_output);
  return emit1(I, IR_OP_SPLIT, &x, 1, &a);
}

/* Reshape of a tensor to dims (0 = copy the input's dimension, -1 inferred),
 * or of a constant (no IR node). */
static base_status reshape_to(imp *I, val *x, const int64_t *dims, int n,
                              int allowzero) {
  const ir_shape *xs = shape_of(I, x);
  ir_attrs a;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  if (n > IR_MAX_RANK)
    return fail(I, BASE_ERR_SHAPE, "target rank %d exceeds %d", n, IR_MAX_RANK);
  a.nlist = n;
  for (int k = 0; k < n; k++)
    a.list[k] =
        dims[k] == 0 && !allowzero && k < xs->rank ? xs->dim[k] : dims[k];
  if (x->is_const) { /* fold: reuse the shape rule for -1 and checks */
    ir_shape out;
    const ir_shape *in[1] = {xs};
    if (ir_infer(IR_OP_RESHAPE, &a, in, 1, &out, I->d))
      return fail(I, I->d->code, "%s", I->d->msg);
    int is_bool = x->is_bool;
    val *o = const_out(I, &out, x->is_int);
    if (!o)
      return I->d->code;
    o->is_bool = is_bool;
    x = input(I, 0); /* the array may have moved */
    int64_t m = ir_shape_numel(&out);
    if (x->is_int)
      memcpy(o->i, x->i, sizeof(int64_t) * (size_t)m);
    else
      memcpy(o->f, x->f, sizeof(float) * (size_t)m);
    return BASE_OK;
  }
  int32_t t = tensor_of(I, x);
  return t < 0 ? I->d->code : emit1(I, IR_OP_RESHAPE, &t, 1, &a);
}

static base_status h_reshape(imp *I) {
  val *x = input(I, 0), *s = x ? in_const(I, 1) : NULL;
  if (!s)
    return I->d->code;
  if (!s->is_int || s->shape.rank != 1)
    return fail(I, BASE_ERR_PARAM, "shape must be a 1-D integer constant");
  int64_t dims[IR_MAX_RANK];
  int n = (int)s->shape.dim[0];
  if (n > IR_MAX_RANK)
    return fail(I, BASE_ERR_SHAPE, "target rank %d exceeds %d", n, IR_MAX_RANK);
  memcpy(dims, s->i, sizeof(int64_t) * (size_t)n);
  return reshape_to(I, x, dims, n, (int)attr_i(I->node, "allowzero", 0));
}

static base_status h_flatten(imp *I) {
  val *x = input(I, 0);
  if (!x)
    return I->d->code;
  const ir_shape *s = shape_of(I, x);
  int axis = norm_axis(attr_i(I->node, "axis", 1), s->rank);
  if (axis < 0 || axis > s->rank)
    return fail(I, BASE_ERR_PARAM, "axis out of range");
  int64_t dims[2] = {1, 1};
  for (int k = 0; k < s->rank; k++)
    dims[k >= axis] *= s->dim[k];
  return reshape_to(I, x, dims, 2, 1);
}

/* Unsqueeze / Squeeze: a reshape computed from the axes. */
static base_status squeeze(imp *I, int unsq) {
  val *x = input(I, 0);
  if (!x)
    return I->d->code;
  const ir_shape *s = shape_of(I, x);
  int64_t axes[IR_MAX_RANK + 1], dims[IR_MAX_RANK + 1];
  int na = ints_from(I, 1, "axes", axes, IR_MAX_RANK);
  if (na == -2)
    return I->d->code;
  int rank = unsq ? s->rank + (na > 0 ? na : 0) : s->rank;
  int mark[IR_MAX_RANK + 1] = {0};
  for (int k = 0; k < na; k++) {
    int ax = norm_axis(axes[k], rank);
    if (ax < 0 || ax >= rank || rank > IR_MAX_RANK || mark[ax]++)
      return fail(I, BASE_ERR_PARAM, "bad axes");
  }
  int n = 0;
  for (int k = 0, src = 0; k < rank; k++) {
    if (unsq)
      dims[n++] = mark[k] ? 1 : s->dim[src++];
    else if (!(mark[k] || (na < 0 && s->dim[k] == 1)))
      dims[n++] = s->dim[k];
    else if (s->dim[k] != 1)
      return fail(I, BASE_ERR_SHAPE, "cannot squeeze a dimension of size %lld",
                  (long long)s->dim[k]);
  }
  return reshape_to(I, x, dims, n, 1);
}

static base_status h_unsqueeze(imp *I) { return squeeze(I, 1); }
static base_status h_squeeze(imp *I) { return squeeze(I, 0); }

static base_status h_shape(imp *I) {
  val *x = input(I, 0);
  if (!x)
    return I->d->code;
  const ir_shape *s = shape_of(I, x);
  int64_t start = attr_i(I->node, "start", 0),
          end = attr_i(I->node, "end", s->rank);
  start = start < 0 ? start + s->rank : start;
  end = end < 0 ? end + s->rank : end;
  start = start < 0 ? 0 : start > s->rank ? s->rank : start;
  end = end < start ? start : end > s->rank ? s->rank : end;
  ir_shape os = {.rank = 1, .dim = {end - start}};
  ir_shape copy = *s;
  val *o = const_out(I, &os, 1);
  for (int64_t k = start; o && k < end; k++)
    o->i[k - start] = copy.dim[k];
  return o ? BASE_OK : I->d->code;
}

/* Gather on constants (shape arithmetic): data of rank 1, indices rank <= 1. */
static base_status gather_const(imp *I, val *x, val *idx) {
  if (x->shape.rank != 1 || idx->shape.rank > 1)
    return fail(I, BASE_ERR_PARAM,
                "Gather on constants needs 1-D data and "
                "indices of rank <= 1");
  int64_t n = x->shape.dim[0];
  ir_shape os = idx->shape;
  int is_int = x->is_int;
  val *o = const_out(I, &os, is_int);
  if (!o)
    return I->d->code;
  x = input(I, 0), idx = input(I, 1);
  for (int64_t k = 0; k < ir_shape_numel(&os); k++) {
    int64_t j = idx->i[k] < 0 ? idx->i[k] + n : idx->i[k];
    if (j < 0 || j >= n)
      return fail(I, BASE_ERR_PARAM, "index %lld out of range",
                  (long long)idx->i[k]);
    if (is_int)
      o->i[k] = x->i[j];
    else
      o->f[k] = x->f[j];
  }
  return BASE_OK;
}

/* Gather of a tensor with constant indices: one slice per index along the
 * axis, joined by concat; a scalar index also drops the axis (reshape). */
static base_status gather_tensor(imp *I, int32_t x, val *idx, int axis) {
  ir_shape s = I->g->tensors[x].shape;
  int64_t cnt = ir_shape_numel(&idx->shape), idxv[IR_MAX_IN];
  if (idx->shape.rank > 1 || cnt < 1 || cnt > IR_MAX_IN)
    return fail(I, BASE_ERR_PARAM,
                "Gather needs a scalar or 1-D constant index "
                "(at most %d entries)",
                IR_MAX_IN);
  memcpy(idxv, idx->i, sizeof(int64_t) * (size_t)cnt);
  int scalar = idx->shape.rank == 0;
  int32_t parts[IR_MAX_IN];
  char buf[256], nm[64];
  ir_attrs a;
  for (int64_t k = 0; k < cnt; k++) {
    int64_t j = idxv[k] < 0 ? idxv[k] + s.dim[axis] : idxv[k];
    if (j < 0 || j >= s.dim[axis])
      return fail(I, BASE_ERR_PARAM, "index %lld out of range",
                  (long long)idxv[k]);
    ir_attrs_default(IR_OP_SLICE, &a);
    a.nlist = a.nlist2 = s.rank;
    for (int d = 0; d < s.rank; d++)
      a.list[d] = d == axis ? j : 0, a.list2[d] = d == axis ? j + 1 : s.dim[d];
    snprintf(nm, sizeof nm, "part%lld", (long long)k);
    int last = !scalar && cnt == 1;
    parts[k] = out0(
        I, emit(I, IR_OP_SLICE, &x, 1, &a, aux(I, nm, buf, sizeof buf), last));
    if (parts[k] < 0)
      return I->d->code;
    if (last)
      return BASE_OK;
  }
  if (scalar) {
    ir_attrs_default(IR_OP_RESHAPE, &a);
    for (int d = 0; d < s.rank; d++)
      if (d != axis)
        a.list[a.nlist++] = s.dim[d];
    return emit1(I, IR_OP_RESHAPE, parts, 1, &a);
  }
  ir_attrs_default(IR_OP_CONCAT, &a);
  a.axis = axis;
  return emit1(I, IR_OP_CONCAT, parts, (int)cnt, &a);
}

/* Gather: small constant index lists on a tensor become slices (which
 * rules see through), anything else (token ids into an embedding table)
 * an IR gather with int64 indices. */
static base_status h_gather(imp *I) {
  val *x = input(I, 0), *idx = x ? input(I, 1) : NULL;
  if (!idx)
    return I->d->code;
  if (dtype_of(I, idx) != IR_DT_I64)
    return fail(I, BASE_ERR_PARAM, "Gather indices must be integers");
  if (x->is_const && idx->is_const)
    return gather_const(I, x, idx);
  int32_t t = tensor_of(I, x);
  if (t < 0)
    return I->d->code;
  int rank = I->g->tensors[t].shape.rank;
  int axis = norm_axis(attr_i(I->node, "axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return fail(I, BASE_ERR_PARAM, "axis out of range");
  idx = input(I, 1);
  int64_t cnt = ir_shape_numel(&idx->shape);
  if (idx->is_const && idx->shape.rank <= 1 && cnt >= 1 && cnt <= 8 &&
      I->g->tensors[t].dtype == IR_DT_F32)
    return gather_tensor(I, t, idx, axis);
  int32_t in[2] = {t, in_tensor(I, 1)};
  if (in[1] < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_GATHER, &a);
  a.axis = axis;
  return emit1(I, IR_OP_GATHER, in, 2, &a);
}

/* Expand: x * ones(target), which broadcasts exactly like ONNX. */
static base_status h_expand(imp *I) {
  val *s = in_const(I, 1);
  int32_t x = s ? in_tensor(I, 0) : -1;
  if (x < 0)
    return I->d->code;
  s = input(I, 1);
  if (!s->is_int || s->shape.rank != 1 || s->shape.dim[0] > IR_MAX_RANK)
    return fail(I, BASE_ERR_PARAM, "shape must be a 1-D integer constant");
  ir_shape xs = I->g->tensors[x].shape, ts;
  ts.rank = (int32_t)(s->shape.dim[0] > xs.rank ? s->shape.dim[0] : xs.rank);
  for (int d = 0; d < ts.rank; d++) { /* broadcast of shape and x */
    int ix = d - (ts.rank - xs.rank), is = d - (ts.rank - (int)s->shape.dim[0]);
    int64_t a = ix >= 0 ? xs.dim[ix] : 1, b = is >= 0 ? s->i[is] : 1;
    ts.dim[d] = a == 1 ? b : a;
  }
  ir_attrs a;
  ir_attrs_default(IR_OP_CONST_ONES, &a);
  a.nlist = ts.rank;
  memcpy(a.list, ts.dim, sizeof(int64_t) * (size_t)ts.rank);
  char buf[256];
  const int32_t none[1] = {0};
  int32_t in[2] = {x, out0(I, emit(I, IR_OP_CONST_ONES, none, 0, &a,
                                   aux(I, "ones", buf, sizeof buf), 0))};
  if (in[1] < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_EWMUL, &a);
  int dt = I->g->tensors[x].dtype;
  if (dt == IR_DT_F32)
    return emit1(I, IR_OP_EWMUL, in, 2, &a);
  /* int64 / bool: broadcast in float32 (exact) and cast back */
  if ((in[0] = cast_to(I, x, IR_DT_F32, "xf")) < 0)
    return I->d->code;
  int32_t r =
      out0(I, emit(I, IR_OP_EWMUL, in, 2, &a, aux(I, "f", buf, sizeof buf), 0));
  if (r < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = dt;
  return emit1(I, IR_OP_CAST, &r, 1, &a);
}

/* HardSigmoid: clip(alpha * x + beta, 0, 1); with mul_x, HardSwish. */
static base_status hard_sigmoid(imp *I, float alpha, float beta, int mul_x) {
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  ir_attrs a;
  char buf[256];
  int32_t sm[2] = {x, scalar_weight(I, alpha, "alpha")};
  if (sm[1] < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_SMUL, &a);
  int32_t ad[2] = {
      out0(I, emit(I, IR_OP_SMUL, sm, 2, &a, aux(I, "ax", buf, sizeof buf), 0)),
      scalar_weight(I, beta, "beta")};
  if (ad[0] < 0 || ad[1] < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_EWADD, &a);
  int32_t c = out0(
      I, emit(I, IR_OP_EWADD, ad, 2, &a, aux(I, "axb", buf, sizeof buf), 0));
  if (c < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_CLIP, &a);
  a.lo = 0, a.hi = 1;
  if (!mul_x)
    return emit1(I, IR_OP_CLIP, &c, 1, &a);
  int32_t m[2] = {x, out0(I, emit(I, IR_OP_CLIP, &c, 1, &a,
                                  aux(I, "hsig", buf, sizeof buf), 0))};
  if (m[1] < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_EWMUL, &a);
  return emit1(I, IR_OP_EWMUL, m, 2, &a);
}

static base_status h_hardsigmoid(imp *I) {
  return hard_sigmoid(I, attr_f(I->node, "alpha", 0.2f),
                      attr_f(I->node, "beta", 0.5f), 0);
}

static base_status h_hardswish(imp *I) {
  return hard_sigmoid(I, 1.0f / 6, 0.5f, 1);
}

/* Cast of a tensor (constants are folded before: fold.c). */
static base_status h_cast(imp *I) {
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  int64_t to = attr_i(I->node, "to", DT_FLOAT);
  int dt = ox_ir_dtype(to);
  note_half(I, to);
  if (dt < 0)
    return fail(I, BASE_ERR_PARAM, "Cast to type %lld is not supported",
                (long long)to);
  if (I->g->tensors[x].dtype == dt)
    return alias(I);
  ir_attrs a;
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = dt;
  return emit1(I, IR_OP_CAST, &x, 1, &a);
}

/* A 1-D int64 weight holding v[0..n-1] (named after the node). */
static int index_weight(imp *I, const int64_t *v, int64_t n,
                        const char *suffix) {
  char hint[256], name[256];
  ir_shape s = {.rank = 1, .dim = {n}};
  ir_name_for(I, aux(I, suffix, hint, sizeof hint), name, sizeof name);
  int t = ir_add_tensor(I->g, name, IR_T_WEIGHT, &s, I->d);
  float *p = t < 0 ? NULL : base_arena_alloc(I->g->arena, sizeof(float) * n);
  if (!p)
    return fail(I, t < 0 ? I->d->code : BASE_ERR_NOMEM, "%s",
                t < 0 ? I->d->msg : "out of memory"),
           -1;
  for (int64_t k = 0; k < n; k++)
    p[k] = (float)v[k];
  I->g->tensors[t].dtype = IR_DT_I64;
  I->g->tensors[t].data = p;
  return t;
}

/* The row of data viewed as [rows, slice] that GatherND's index tuple t
 * names (b batch dimensions, k indexed ones), or -1 when out of range. */
static int64_t gathernd_row(const ir_shape *x, const int64_t *ix, int b,
                            int64_t k, int64_t t, int64_t per) {
  int64_t row = t / per; /* the batch entry */
  for (int64_t j = 0; j < k; j++) {
    int64_t v = ix[t * k + j], n = x->dim[b + j];
    v = v < 0 ? v + n : v;
    if (v < 0 || v >= n)
      return -1;
    row = row * n + v;
  }
  return row;
}

/* Whether GatherND's rows r[0..nt-1] are every row of data in order: an
 * identity (torch.export's padding mask: mask[arange(B), arange(S)]). */
static int rows_identity(const int64_t *r, int64_t nt, int64_t rows) {
  int same = nt == rows;
  for (int64_t t = 0; same && t < nt; t++)
    same = r[t] == t;
  return same;
}

/* GatherND of a tensor by constant indices (the padding masks of
 * torch.export's attention): data reshaped to [rows, slice], an IR gather
 * of the rows the index tuples name, reshaped to the output's shape; when
 * the tuples name every row in order, the reshape alone (no gather whose
 * indices would fix the batch: the model rebatches). */
static base_status h_gathernd(imp *I) {
  val *idx = in_const(I, 1);
  int32_t x = idx ? in_tensor(I, 0) : -1;
  if (x < 0)
    return I->d->code;
  idx = input(I, 1);
  ir_shape xs = I->g->tensors[x].shape, is = idx->shape;
  int b = (int)attr_i(I->node, "batch_dims", 0);
  int64_t k = is.rank ? is.dim[is.rank - 1] : 0;
  if (!idx->is_int || is.rank < 1 || b < 0 || b >= is.rank || k < 1 ||
      b + k > xs.rank || is.rank - 1 + xs.rank - b - k > IR_MAX_RANK)
    return fail(I, BASE_ERR_PARAM, "bad indices shape or batch_dims");
  int64_t rows = 1, slice = 1, nt = ir_shape_numel(&is) / k, batch = 1;
  for (int i = 0; i < xs.rank; i++)
    *(i < b + k ? &rows : &slice) *= xs.dim[i];
  for (int i = 0; i < b; i++)
    batch *= xs.dim[i];
  int64_t *r = base_malloc(sizeof(int64_t) * (size_t)(nt ? nt : 1));
  if (!r)
    return fail(I, BASE_ERR_NOMEM, "out of memory");
  for (int64_t t = 0; t < nt; t++)
    if ((r[t] = gathernd_row(&xs, idx->i, b, k, t, nt / batch)) < 0) {
      free(r);
      return fail(I, BASE_ERR_PARAM, "index out of range");
    }
  ir_attrs a;
  char buf[256];
  ir_attrs_default(IR_OP_RESHAPE, &a);
  if (rows_identity(r, nt, rows)) {
    free(r);
    for (int i = 0; i < is.rank - 1; i++)
      a.list[a.nlist++] = is.dim[i];
    for (int i = b + (int)k; i < xs.rank; i++)
      a.list[a.nlist++] = xs.dim[i];
    return emit1(I, IR_OP_RESHAPE, &x, 1, &a);
  }
  a.nlist = 2, a.list[0] = rows, a.list[1] = slice;
  int32_t in[2] = {out0(I, emit(I, IR_OP_RESHAPE, &x, 1, &a,
                                aux(I, "rows", buf, sizeof buf), 0)),
                   index_weight(I, r, nt, "index")};
  free(r);
  if (in[0] < 0 || in[1] < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_GATHER, &a);
  int32_t g = out0(I, emit(I, IR_OP_GATHER, in, 2, &a,
                           aux(I, "gather", buf, sizeof buf), 0));
  if (g < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  for (int i = 0; i < is.rank - 1; i++)
    a.list[a.nlist++] = is.dim[i];
  for (int i = b + (int)k; i < xs.rank; i++)
    a.list[a.nlist++] = xs.dim[i];
  return emit1(I, IR_OP_RESHAPE, &g, 1, &a);
}

/* Reciprocal of a tensor: 1 / x (constants are folded before). */
static base_status h_reciprocal(imp *I) {
  int32_t in[2] = {-1, in_tensor(I, 0)};
  if (in[1] < 0 || (in[0] = scalar_weight(I, 1, "one")) < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_EWDIV, &a);
  return emit1(I, IR_OP_EWDIV, in, 2, &a);
}

/* ---- Einsum as a matmul ----------------------------------------------- */

/* An einsum term: one letter per dimension. */
typedef struct eterm {
  char c[IR_MAX_RANK + 1];
  int n;
} eterm;

/* Parses "ab,cb->ac" (spaces ignored) into t[0..2]; -1 when it is not two
 * inputs and an explicit output of single letters, each at most once per
 * term. */
static int einsum_parse(const char *eq, eterm t[3]) {
  int k = 0;
  memset(t, 0, sizeof(eterm) * 3);
  for (const char *p = eq; *p; p++) {
    if (*p == ' ')
      continue;
    if (*p == ',' && k == 0) {
      k = 1;
    } else if (*p == '-' && p[1] == '>' && k == 1) {
      k = 2, p++;
    } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
      if (t[k].n == IR_MAX_RANK || memchr(t[k].c, *p, (size_t)t[k].n))
        return -1;
      t[k].c[t[k].n++] = *p;
    } else
      return -1;
  }
  return k == 2 ? 0 : -1;
}

static int epos(const eterm *t, char c) {
  const char *p = memchr(t->c, c, (size_t)t->n);
  return p ? (int)(p - t->c) : -1;
}

/* x transposed by perm (skipped when perm is the identity) then reshaped to
 * dims[0..n-1]; -1 with the error set. */
static int32_t perm_reshape(imp *I, int32_t x, const int *perm, int r,
                            const int64_t *dims, int n, const char *what) {
  ir_attrs a;
  char buf[256], nm[32];
  int moved = 0;
  for (int k = 0; k < r; k++)
    moved |= perm[k] != k;
  if (moved) {
    ir_attrs_default(IR_OP_TRANSPOSE, &a);
    a.nlist = r;
    for (int k = 0; k < r; k++)
      a.list[k] = perm[k];
    snprintf(nm, sizeof nm, "%s_t", what);
    x = out0(
        I, emit(I, IR_OP_TRANSPOSE, &x, 1, &a, aux(I, nm, buf, sizeof buf), 0));
  }
  if (x < 0)
    return -1;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = n;
  memcpy(a.list, dims, sizeof(int64_t) * (size_t)n);
  snprintf(nm, sizeof nm, "%s_r", what);
  return out0(
      I, emit(I, IR_OP_RESHAPE, &x, 1, &a, aux(I, nm, buf, sizeof buf), 0));
}

/* x transposed by perm[0..r) (x itself where perm is the identity); -1
 * with the error set. */
static int32_t einsum_move(imp *I, int32_t x, const int *perm, int r,
                           const char *what) {
  ir_attrs a;
  char buf[256];
  int moved = 0;
  ir_attrs_default(IR_OP_TRANSPOSE, &a);
  a.nlist = r;
  for (int k = 0; k < r; k++)
    moved |= (a.list[k] = perm[k]) != k;
  return moved ? out0(I, emit(I, IR_OP_TRANSPOSE, &x, 1, &a,
                              aux(I, what, buf, sizeof buf), 0))
               : x;
}

/* The output's order as a permutation of mid[0..n) (the letters the
 * matmul gives) into po; whether it moves any. */
static int einsum_out_perm(const char *mid, int n, const eterm *out, int *po) {
  int moved = 0;
  for (int k = 0; k < n; k++) {
    po[k] = (int)((const char *)memchr(mid, out->c[k], (size_t)n) - mid);
    moved |= po[k] != k;
  }
  return moved;
}

/* op(in) with attributes a, the product in the letters mid[0..n), then
 * transposed to the output's order where that moves (op's output named
 * by what then): the node's result. */
static base_status einsum_last(imp *I, ir_opcode op, const int32_t *in, int nin,
                               const ir_attrs *a, const char *what,
                               const char *mid, int n, const eterm *out) {
  int po[IR_MAX_RANK];
  if (!einsum_out_perm(mid, n, out, po))
    return emit1(I, op, in, nin, a);
  char buf[256];
  int32_t y =
      out0(I, emit(I, op, in, nin, a, aux(I, what, buf, sizeof buf), 0));
  if (y < 0)
    return I->d->code;
  ir_attrs t;
  ir_attrs_default(IR_OP_TRANSPOSE, &t);
  t.nlist = n;
  for (int k = 0; k < n; k++)
    t.list[k] = po[k];
  return emit1(I, IR_OP_TRANSPOSE, &y, 1, &t);
}

/* The einsum whose rows, contracted and columns are one letter each: A
 * transposed to [batch..., M, K], B to [batch..., K, N] (pa, pb; each
 * only where it moves), one batched matmul of their rank (batch letters
 * as its leading dimensions, equal in both: docs/onnx.md), its result
 * [batch..., M, N] (letters mid) transposed to the output's order. No
 * reshape: MaxViT's rank-5 products stay rank-5, the heads and windows
 * the batch, as the rules' attention patterns read them. */
static base_status einsum_full(imp *I, const int32_t *x, const int *pa,
                               const int *pb, int r, const char *mid,
                               const eterm *out) {
  int32_t in[2] = {einsum_move(I, x[0], pa, r, "a_t"), -1};
  if (in[0] < 0 || (in[1] = einsum_move(I, x[1], pb, r, "b_t")) < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_MATMUL, &a);
  return einsum_last(I, IR_OP_MATMUL, in, 2, &a, "mm", mid, r, out);
}

/* Einsum of two operands that is one (batched) matrix product: letters in
 * both inputs and the output are batch dimensions, in both inputs only
 * contracted, in one input and the output kept (A's rows, B's columns).
 * A becomes [batch, M, K] and B [batch, K, N] (transpose + reshape), a
 * matmul gives [batch, M, N], reshaped and transposed to the output. */
static base_status h_einsum(imp *I) {
  char eqbuf[128];
  const char *eq = attr_s(I->node, "equation", "", eqbuf, sizeof eqbuf);
  eterm t[3];
  int32_t x[2] = {-1, -1};
  if (I->node->n_input != 2 || einsum_parse(eq, t))
    return fail(I, BASE_ERR_PARAM,
                "Einsum '%s': only two operands with an explicit output, "
                "one letter per dimension, are supported",
                eq);
  if ((x[0] = in_tensor(I, 0)) < 0 || (x[1] = in_tensor(I, 1)) < 0)
    return I->d->code;
  const ir_shape *s[2] = {&I->g->tensors[x[0]].shape,
                          &I->g->tensors[x[1]].shape};
  if (s[0]->rank != t[0].n || s[1]->rank != t[1].n)
    return fail(I, BASE_ERR_SHAPE, "Einsum '%s': operand ranks differ", eq);
  /* order of A: batch, rows, contracted; of B: batch, contracted, cols */
  int pa[IR_MAX_RANK], pb[IR_MAX_RANK], na = 0, nb = 0;
  int64_t B = 1, M = 1, K = 1, N = 1;
  char mid[2 * IR_MAX_RANK + 1]; /* output letters as the matmul gives them */
  int nmid = 0;
  for (int i = 0; i < t[0].n; i++) { /* batch letters, in A's order */
    char c = t[0].c[i];
    int j = epos(&t[1], c), o = epos(&t[2], c);
    if (j >= 0 && o >= 0) {
      if (s[0]->dim[i] != s[1]->dim[j])
        return fail(I, BASE_ERR_SHAPE, "Einsum '%s': '%c' differs", eq, c);
      pa[na++] = i, pb[nb++] = j, B *= s[0]->dim[i], mid[nmid++] = c;
    }
  }
  int nbatch = na;
  for (int i = 0; i < t[0].n; i++) /* A's rows */
    if (epos(&t[1], t[0].c[i]) < 0) {
      if (epos(&t[2], t[0].c[i]) < 0)
        return fail(I, BASE_ERR_PARAM,
                    "Einsum '%s': '%c' is summed within one operand", eq,
                    t[0].c[i]);
      pa[na++] = i, M *= s[0]->dim[i], mid[nmid++] = t[0].c[i];
    }
  int nrows = na - nbatch;
  for (int i = 0; i < t[0].n; i++) { /* contracted, in A's order */
    char c = t[0].c[i];
    int j = epos(&t[1], c);
    if (j >= 0 && epos(&t[2], c) < 0) {
      if (s[0]->dim[i] != s[1]->dim[j])
        return fail(I, BASE_ERR_SHAPE, "Einsum '%s': '%c' differs", eq, c);
      pa[na++] = i, pb[nb++] = j, K *= s[0]->dim[i];
    }
  }
  for (int j = 0; j < t[1].n; j++) /* B's columns */
    if (epos(&t[0], t[1].c[j]) < 0) {
      if (epos(&t[2], t[1].c[j]) < 0)
        return fail(I, BASE_ERR_PARAM,
                    "Einsum '%s': '%c' is summed within one operand", eq,
                    t[1].c[j]);
      pb[nb++] = j, N *= s[1]->dim[j], mid[nmid++] = t[1].c[j];
    }
  if (nmid != t[2].n)
    return fail(I, BASE_ERR_PARAM, "Einsum '%s': bad output letters", eq);
  /* one letter each of rows, contracted and columns: the product at full
   * rank, the batch letters its leading dimensions (no reshape) */
  if (na == nb && nmid == na && na - nbatch == 2 && nrows == 1)
    return einsum_full(I, x, pa, pb, na, mid, &t[2]);
  int64_t da[3] = {B, M, K}, db[3] = {B, K, N}, dm[IR_MAX_RANK];
  int32_t in[2] = {perm_reshape(I, x[0], pa, na, da, 3, "a"), -1};
  if (in[0] < 0 || (in[1] = perm_reshape(I, x[1], pb, nb, db, 3, "b")) < 0)
    return I->d->code;
  ir_attrs a;
  char buf[256];
  ir_attrs_default(IR_OP_MATMUL, &a);
  int32_t y = out0(
      I, emit(I, IR_OP_MATMUL, in, 2, &a, aux(I, "mm", buf, sizeof buf), 0));
  if (y < 0)
    return I->d->code;
  /* [B, M, N] -> the letters of mid, then transposed to the output */
  for (int k = 0; k < nmid; k++) {
    char c = mid[k];
    int i = epos(&t[0], c);
    dm[k] = i >= 0 ? s[0]->dim[i] : s[1]->dim[epos(&t[1], c)];
  }
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = nmid;
  memcpy(a.list, dm, sizeof(int64_t) * (size_t)nmid);
  return einsum_last(I, IR_OP_RESHAPE, &y, 1, &a, "mid", mid, nmid, &t[2]);
}

/* IsNaN: not(x == x), which holds for NaN alone. */
static base_status h_isnan(imp *I) {
  int32_t in[2] = {in_tensor(I, 0), -1};
  if (in[0] < 0)
    return I->d->code;
  in[1] = in[0];
  ir_attrs a;
  char buf[256];
  ir_attrs_default(IR_OP_EQUAL, &a);
  int32_t eq = out0(
      I, emit(I, IR_OP_EQUAL, in, 2, &a, aux(I, "eq", buf, sizeof buf), 0));
  if (eq < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_NOT, &a);
  return emit1(I, IR_OP_NOT, &eq, 1, &a);
}

/* Equal / Not / Where on tensors (constants are folded before). */
static base_status h_equal(imp *I) {
  int32_t in[2] = {in_tensor(I, 0), -1};
  if (in[0] < 0 || (in[1] = in_tensor(I, 1)) < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_EQUAL, &a);
  return emit1(I, IR_OP_EQUAL, in, 2, &a);
}

static base_status h_not(imp *I) { return unary(I, IR_OP_NOT); }

static base_status h_where(imp *I) {
  int32_t in[3] = {in_tensor(I, 0), -1, -1};
  if (in[0] < 0 || (in[1] = in_tensor(I, 1)) < 0 ||
      (in[2] = in_tensor(I, 2)) < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_WHERE, &a);
  return emit1(I, IR_OP_WHERE, in, 3, &a);
}

/* And / Or / Xor of bool tensors: 0/1 values multiplied, added or
 * subtracted in float32, then cast to bool (non-zero). */
static base_status logic(imp *I, ir_opcode op) {
  int32_t in[2] = {in_tensor(I, 0), -1};
  if (in[0] < 0 || (in[1] = in_tensor(I, 1)) < 0)
    return I->d->code;
  for (int k = 0; k < 2; k++)
    if (I->g->tensors[in[k]].dtype != IR_DT_BOOL)
      return fail(I, BASE_ERR_PARAM, "input %d must be bool", k + 1);
  char buf[256];
  if ((in[0] = cast_to(I, in[0], IR_DT_F32, "af")) < 0 ||
      (in[1] = cast_to(I, in[1], IR_DT_F32, "bf")) < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(op, &a);
  int32_t r = out0(I, emit(I, op, in, 2, &a, aux(I, "f", buf, sizeof buf), 0));
  if (r < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = IR_DT_BOOL;
  return emit1(I, IR_OP_CAST, &r, 1, &a);
}

static base_status h_and(imp *I) { return logic(I, IR_OP_EWMUL); }
static base_status h_or(imp *I) { return logic(I, IR_OP_EWADD); }
static base_status h_xor(imp *I) { return logic(I, IR_OP_EWSUB); }

/* GatherElements whose data has size 1 off the axis (a position or token
 * type table indexed per element): a gather from the flattened data. */
static base_status h_gatherelements(imp *I) {
  val *x = input(I, 0), *idx = x ? input(I, 1) : NULL;
  if (!idx)
    return I->d->code;
  ir_shape xs = *shape_of(I, x);
  int axis = norm_axis(attr_i(I->node, "axis", 0), xs.rank);
  if (axis < 0 || axis >= xs.rank)
    return fail(I, BASE_ERR_PARAM, "axis out of range");
  for (int k = 0; k < xs.rank; k++)
    if (k != axis && xs.dim[k] != 1)
      return fail(I, BASE_ERR_PARAM,
                  "supported when the data has size 1 off the axis, got "
                  "dimension %d of %lld",
                  k, (long long)xs.dim[k]);
  if (dtype_of(I, idx) != IR_DT_I64)
    return fail(I, BASE_ERR_PARAM, "indices must be integers");
  char buf[256];
  ir_attrs a;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = 1;
  a.list[0] = xs.dim[axis];
  int32_t t = tensor_of(I, x);
  int32_t in[2] = {t < 0 ? -1
                         : out0(I, emit(I, IR_OP_RESHAPE, &t, 1, &a,
                                        aux(I, "flat", buf, sizeof buf), 0)),
                   -1};
  if (in[0] < 0 || (in[1] = in_tensor(I, 1)) < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_GATHER, &a);
  return emit1(I, IR_OP_GATHER, in, 2, &a);
}

/* CumSum of a tensor along its last axis: a matmul with the constant
 * triangle of ones (int64 values in float32, exact below 2^24). */
static base_status h_cumsum(imp *I) {
  val *ax = in_const(I, 1);
  int32_t x = ax ? in_tensor(I, 0) : -1;
  if (x < 0)
    return I->d->code;
  ax = input(I, 1);
  ir_shape s = I->g->tensors[x].shape;
  /* a float axis is cast only in range (a huge one is undefined) */
  int64_t av = ax->is_int ? ax->i[0]
               : ax->f[0] >= -IR_MAX_RANK && ax->f[0] <= IR_MAX_RANK
                   ? (int64_t)ax->f[0]
                   : IR_MAX_RANK + 1;
  int axis = s.rank ? norm_axis(av, s.rank) : -1;
  if (axis != s.rank - 1 || attr_i(I->node, "exclusive", 0) ||
      attr_i(I->node, "reverse", 0))
    return fail(I, BASE_ERR_PARAM,
                "CumSum of a tensor is supported along the last axis only, "
                "not exclusive or reversed");
  int dt = I->g->tensors[x].dtype;
  int64_t n = s.dim[axis];
  if (n > 4096)
    return fail(I, BASE_ERR_SHAPE, "CumSum over %lld elements (at most 4096)",
                (long long)n);
  char hint[256], name[256];
  ir_shape ts = {.rank = 2, .dim = {n, n}};
  ir_name_for(I, aux(I, "tri", hint, sizeof hint), name, sizeof name);
  int tri = ir_add_tensor(I->g, name, IR_T_WEIGHT, &ts, I->d);
  float *p =
      tri < 0 ? NULL
              : base_arena_alloc(I->g->arena, sizeof(float) * (size_t)(n * n));
  if (!p)
    return fail(I, tri < 0 ? I->d->code : BASE_ERR_NOMEM, "%s",
                tri < 0 ? I->d->msg : "out of memory");
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < n; c++)
      p[r * n + c] = r <= c;
  I->g->tensors[tri].data = p;
  int32_t in[2] = {cast_to(I, x, IR_DT_F32, "xf"), tri};
  if (in[0] < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_MATMUL, &a);
  if (dt == IR_DT_F32)
    return emit1(I, IR_OP_MATMUL, in, 2, &a);
  char buf[256];
  int32_t r = out0(
      I, emit(I, IR_OP_MATMUL, in, 2, &a, aux(I, "sum", buf, sizeof buf), 0));
  if (r < 0)
    return I->d->code;
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = dt;
  return emit1(I, IR_OP_CAST, &r, 1, &a);
}

/* Operators folded when their inputs are constants (fold.c) and not
 * computed on tensors: shape and mask generators, comparisons. */
static base_status h_const_only(imp *I) {
  for (size_t k = 0; k < I->node->n_input; k++) {
    val *v = has_input(I->node, k) ? input(I, k) : NULL;
    if (v && !v->is_const)
      return fail(I, BASE_ERR_PARAM,
                  "supported only on constants (shape and mask computations "
                  "folded at import), but input %zu ('%s') depends on a graph "
                  "input",
                  k + 1, v->name);
  }
  return fail(I, BASE_ERR_PARAM, "cannot be folded");
}

static base_status transpose(imp *I, int32_t x, const char *name,
                             int32_t *out) {
  ir_attrs a;
  ir_attrs_default(IR_OP_TRANSPOSE, &a);
  int r = I->g->tensors[x].shape.rank;
  a.nlist = r;
  for (int k = 0; k < r; k++)
    a.list[k] = r - 1 - k;
  char buf[256];
  *out = out0(
      I, emit(I, IR_OP_TRANSPOSE, &x, 1, &a, aux(I, name, buf, sizeof buf), 0));
  return *out < 0 ? I->d->code : BASE_OK;
}

static base_status h_transpose(imp *I) {
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_TRANSPOSE, &a);
  int r = I->g->tensors[x].shape.rank;
  a.nlist = attr_ints(I->node, "perm", a.list, IR_MAX_RANK);
  if (a.nlist < 0) {
    a.nlist = r;
    for (int k = 0; k < r; k++)
      a.list[k] = r - 1 - k;
  }
  return emit1(I, IR_OP_TRANSPOSE, &x, 1, &a);
}

static base_status h_matmul(imp *I) {
  int32_t in[2] = {in_tensor(I, 0), -1};
  if (in[0] < 0 || (in[1] = in_tensor(I, 1)) < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_MATMUL, &a);
  return emit1(I, IR_OP_MATMUL, in, 2, &a);
}

/* Gemm: alpha * A' B' + beta * C, A' = A or A^T, B' likewise. */
static base_status h_gemm(imp *I) {
  const node_t *n = I->node;
  float alpha = attr_f(n, "alpha", 1), beta = attr_f(n, "beta", 1);
  int32_t in[3] = {in_tensor(I, 0), -1, -1};
  if (in[0] < 0 || (in[1] = in_tensor(I, 1)) < 0)
    return I->d->code;
  base_status st = BASE_OK;
  if (attr_i(n, "transA", 0))
    st = transpose(I, in[0], "a_t", &in[0]);
  if (!st && attr_i(n, "transB", 0))
    st = transpose(I, in[1], "b_t", &in[1]);
  if (st)
    return st;
  int has_c = has_input(n, 2);
  if (has_c && (in[2] = in_tensor(I, 2)) < 0)
    return I->d->code;
  const ir_shape *cs = has_c ? &I->g->tensors[in[2]].shape : NULL;
  int fuse = has_c && alpha == 1 && beta == 1 && cs->rank == 1;
  ir_attrs a;
  ir_attrs_default(IR_OP_MATMUL, &a);
  char buf[256];
  int last = !has_c || fuse; /* does the matmul give the node's output? */
  if (alpha == 1 && last)
    return emit1(I, IR_OP_MATMUL, in, fuse ? 3 : 2, &a);
  int32_t y = out0(I, emit(I, IR_OP_MATMUL, in, fuse ? 3 : 2, &a,
                           aux(I, "mm", buf, sizeof buf), 0));
  if (y < 0)
    return I->d->code;
  if (alpha != 1) {
    int32_t sm[2] = {y, scalar_weight(I, alpha, "alpha")};
    if (sm[1] < 0)
      return I->d->code;
    ir_attrs_default(IR_OP_SMUL, &a);
    if (last)
      return emit1(I, IR_OP_SMUL, sm, 2, &a);
    y = out0(I, emit(I, IR_OP_SMUL, sm, 2, &a,
                     aux(I, "scaled", buf, sizeof buf), 0));
    if (y < 0)
      return I->d->code;
  }
  int32_t c = in[2];
  if (beta != 1) {
    int32_t sm[2] = {c, scalar_weight(I, beta, "beta")};
    if (sm[1] < 0)
      return I->d->code;
    ir_attrs_default(IR_OP_SMUL, &a);
    c = out0(I,
             emit(I, IR_OP_SMUL, sm, 2, &a, aux(I, "c", buf, sizeof buf), 0));
    if (c < 0)
      return I->d->code;
  }
  int32_t ad[2] = {y, c};
  ir_attrs_default(IR_OP_EWADD, &a);
  return emit1(I, IR_OP_EWADD, ad, 2, &a);
}

static base_status h_softmax(imp *I) {
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_SOFTMAX, &a);
  int r = I->g->tensors[x].shape.rank;
  a.axis = (int32_t)attr_i(I->node, "axis", I->opset >= 13 ? -1 : 1);
  if (I->opset < 13 && norm_axis(a.axis, r) != r - 1)
    return fail(I, BASE_ERR_PARAM,
                "Softmax before opset 13 is only supported on "
                "the last axis");
  return emit1(I, IR_OP_SOFTMAX, &x, 1, &a);
}

static base_status h_batchnorm(imp *I) {
  if (attr_i(I->node, "training_mode", 0))
    return fail(I, BASE_ERR_PARAM, "training_mode=1 is not supported");
  int32_t in[5];
  for (int k = 0; k < 5; k++)
    if ((in[k] = in_tensor(I, (size_t)k)) < 0)
      return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_BATCHNORM, &a);
  a.eps = attr_f(I->node, "epsilon", 1e-5f);
  return emit1(I, IR_OP_BATCHNORM, in, 5, &a);
}

static base_status h_layernorm(imp *I) {
  const node_t *n = I->node;
  for (size_t k = 1; k < n->n_output; k++)
    if (n->output[k][0])
      return fail(I, BASE_ERR_PARAM,
                  "the Mean/InvStdDev outputs are not supported");
  int32_t in[3];
  int nin = has_input(n, 2) ? 3 : 2;
  for (int k = 0; k < nin; k++)
    if ((in[k] = in_tensor(I, (size_t)k)) < 0)
      return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_LAYERNORM, &a);
  a.axis = (int32_t)attr_i(n, "axis", -1);
  a.eps = attr_f(n, "epsilon", 1e-5f);
  return emit1(I, IR_OP_LAYERNORM, in, nin, &a);
}

static base_status h_reducemean(imp *I) {
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_REDUCE_MEAN, &a);
  int r = I->g->tensors[x].shape.rank;
  a.keepdims = (int32_t)attr_i(I->node, "keepdims", 1) != 0;
  int n = ints_from(I, 1, "axes", a.list, IR_MAX_RANK);
  if (n == -2)
    return I->d->code;
  if (n <= 0) {
    if (attr_i(I->node, "noop_with_empty_axes", 0))
      return alias(I);
    for (n = 0; n < r; n++)
      a.list[n] = n;
  }
  a.nlist = n;
  return emit1(I, IR_OP_REDUCE_MEAN, &x, 1, &a);
}

static base_status h_pad(imp *I) {
  char buf[32];
  const char *mode = attr_s(I->node, "mode", "constant", buf, sizeof buf);
  if (strcmp(mode, "constant"))
    return fail(I, BASE_ERR_PARAM, "mode '%s' is not supported (constant only)",
                mode);
  if (has_input(I->node, 3))
    return fail(I, BASE_ERR_PARAM, "the axes input is not supported");
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  ir_attrs a;
  ir_attrs_default(IR_OP_PAD, &a);
  int n = ints_from(I, 1, "pads", a.list, IR_MAX_LIST);
  if (n == -2)
    return I->d->code;
  a.nlist = n < 0 ? 0 : n;
  if (has_input(I->node, 2)) {
    val *v = in_const(I, 2);
    if (!v)
      return I->d->code;
    a.value = v->is_int ? (float)v->i[0] : v->f[0];
  } else
    a.value = attr_f(I->node, "value", 0);
  return emit1(I, IR_OP_PAD, &x, 1, &a);
}

static base_status h_slice(imp *I) {
  int32_t x = in_tensor(I, 0);
  if (x < 0)
    return I->d->code;
  const ir_shape *s = &I->g->tensors[x].shape;
  int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
  int ns = ints_from(I, 1, "starts", st, IR_MAX_RANK);
  int ne = ints_from(I, 2, "ends", en, IR_MAX_RANK);
  int na = ints_from(I, 3, "axes", ax, IR_MAX_RANK);
  int np = ints_from(I, 4, "steps", sp, IR_MAX_RANK);
  if (ns == -2 || ne == -2 || na == -2 || np == -2)
    return I->d->code;
  if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
    return fail(I, BASE_ERR_PARAM, "starts, ends, axes and steps must agree");
  ir_attrs a;
  ir_attrs_default(IR_OP_SLICE, &a);
  a.nlist = a.nlist2 = s->rank;
  int64_t step[IR_MAX_RANK], cnt[IR_MAX_RANK], pick[IR_MAX_RANK];
  int strided = 0;
  for (int k = 0; k < s->rank; k++)
    a.list[k] = 0, a.list2[k] = s->dim[k], step[k] = 1;
  for (int k = 0; k < ns; k++) {
    int d = na >= 0 ? norm_axis(ax[k], s->rank) : k;
    if (d < 0 || d >= s->rank || (np >= 0 && sp[k] < 1))
      return fail(I, BASE_ERR_PARAM, "bad axis, or a step below 1");
    int64_t dim = s->dim[d], b = st[k] < 0 ? st[k] + dim : st[k];
    int64_t e = en[k] < 0 ? en[k] + dim : en[k];
    a.list[d] = b < 0 ? 0 : b > dim ? dim : b;
    a.list2[d] = e < 0 ? 0 : e > dim ? dim : e;
    step[d] = np >= 0 ? sp[k] : 1;
    pick[d] = 0;
    if (step[d] > 1) { /* keep [b, b + (cnt-1)*step], picked below */
      int64_t len = a.list2[d] - a.list[d], r = a.list[d];
      cnt[d] = len > 0 ? (len + step[d] - 1) / step[d] : 0;
      a.list2[d] = a.list[d] + (cnt[d] - 1) * step[d] + 1;
      /* where cnt * step elements fit, a range of that many starting at
       * most step - 1 before b (picked at b's place): no pad, and the
       * program a strided walk (Swin's x[:, 1::2]) */
      if (r + cnt[d] * step[d] > dim)
        r = dim - cnt[d] * step[d];
      if (cnt[d] > 0 && r >= 0 && a.list[d] - r < step[d]) {
        pick[d] = a.list[d] - r;
        a.list[d] = r, a.list2[d] = r + cnt[d] * step[d];
      }
      strided = 1;
    }
  }
  if (!strided)
    return emit1(I, IR_OP_SLICE, &x, 1, &a);
  char buf[256];
  int32_t t = out0(
      I, emit(I, IR_OP_SLICE, &x, 1, &a, aux(I, "range", buf, sizeof buf), 0));
  /* every step-th element of axis d: pad the range to cnt * step, split
   * the axis into [cnt, step], keep the first of each step, join back */
  for (int d = 0; t >= 0 && d < I->g->tensors[t].shape.rank; d++) {
    if (step[d] == 1)
      continue;
    ir_shape cur = I->g->tensors[t].shape;
    if (cur.rank + 1 > IR_MAX_RANK || cnt[d] < 1)
      return fail(I, BASE_ERR_SHAPE,
                  "a step other than 1 on a rank-%d tensor (at most %d)",
                  cur.rank, IR_MAX_RANK - 1);
    int64_t pad = cnt[d] * step[d] - cur.dim[d];
    if (pad > 0) {
      ir_attrs_default(IR_OP_PAD, &a);
      a.nlist = 2 * cur.rank;
      a.list[cur.rank + d] = pad;
      t = out0(
          I, emit(I, IR_OP_PAD, &t, 1, &a, aux(I, "pad", buf, sizeof buf), 0));
      if (t < 0)
        break;
    }
    ir_attrs_default(IR_OP_RESHAPE, &a);
    for (int k = 0; k < cur.rank; k++) {
      a.list[a.nlist++] = k == d ? cnt[d] : cur.dim[k];
      if (k == d)
        a.list[a.nlist++] = step[d];
    }
    t = out0(I, emit(I, IR_OP_RESHAPE, &t, 1, &a,
                     aux(I, "split", buf, sizeof buf), 0));
    if (t < 0)
      break;
    ir_attrs_default(IR_OP_SLICE, &a);
    a.nlist = a.nlist2 = cur.rank + 1;
    for (int k = 0; k <= cur.rank; k++)
      a.list[k] = 0, a.list2[k] = I->g->tensors[t].shape.dim[k];
    a.list[d + 1] = pick[d], a.list2[d + 1] = pick[d] + 1;
    t = out0(
        I, emit(I, IR_OP_SLICE, &t, 1, &a, aux(I, "pick", buf, sizeof buf), 0));
    if (t < 0)
      break;
    ir_attrs_default(IR_OP_RESHAPE, &a);
    a.nlist = cur.rank;
    for (int k = 0; k < cur.rank; k++)
      a.list[k] = k == d ? cnt[d] : cur.dim[k];
    int last = 1;
    for (int k = d + 1; k < cur.rank; k++)
      last &= step[k] == 1;
    if (last)
      return emit1(I, IR_OP_RESHAPE, &t, 1, &a);
    t = out0(I, emit(I, IR_OP_RESHAPE, &t, 1, &a,
                     aux(I, "joined", buf, sizeof buf), 0));
  }
  return I->d->code ? I->d->code : fail(I, BASE_ERR_INTERNAL, "slice");
}

/* ---- the table
 * -------------------------------------------------------------------- */

/* One row per ONNX operator: name, handler, and which input slots hold
 * parameters (a graph input that only feeds such slots is a weight). */
typedef struct onnx_op {
  const char *name;
  handler fn;
  unsigned weight_slots;
} onnx_op;

static const onnx_op onnx_ops[] = {
    {"Abs", h_const_only, 0},
    {"Add", h_add, 0},
    {"And", h_and, 0},
    {"AveragePool", h_avgpool, 0},
    {"BatchNormalization", h_batchnorm, 0x1e},
    {"Cast", h_cast, 0},
    {"CastLike", h_const_only, 0},
    {"Ceil", h_const_only, 0},
    {"Clip", h_clip, 0x6},
    {"Concat", h_concat, 0},
    {"Constant", h_constant, 0},
    {"ConstantOfShape", h_const_only, 0},
    {"Conv", h_conv, 0x6},
    {"CumSum", h_cumsum, 0},
    {"Div", h_div, 0},
    {"Dropout", h_dropout, 0},
    {"Einsum", h_einsum, 0},
    {"Equal", h_equal, 0},
    {"Expand", h_expand, 0},
    {"Flatten", h_flatten, 0},
    {"Floor", h_const_only, 0},
    {"Gather", h_gather, 0x1},
    {"GatherND", h_gathernd, 0},
    {"GatherElements", h_gatherelements, 0x1},
    {"Gelu", h_gelu, 0},
    {"Gemm", h_gemm, 0x6},
    {"GlobalAveragePool", h_gap, 0},
    {"Greater", h_const_only, 0},
    {"GreaterOrEqual", h_const_only, 0},
    {"HardSigmoid", h_hardsigmoid, 0},
    {"HardSwish", h_hardswish, 0},
    {"Identity", h_identity, 0},
    {"IsInf", h_const_only, 0},
    {"IsNaN", h_isnan, 0},
    {"LayerNormalization", h_layernorm, 0x6},
    {"Less", h_const_only, 0},
    {"LessOrEqual", h_const_only, 0},
    {"MatMul", h_matmul, 0x2},
    {"Max", h_const_only, 0},
    {"MaxPool", h_maxpool, 0},
    {"Min", h_const_only, 0},
    {"Mod", h_const_only, 0},
    {"Mul", h_mul, 0},
    {"Not", h_not, 0},
    {"Or", h_or, 0},
    {"Pad", h_pad, 0},
    {"Pow", h_pow, 0},
    {"Range", h_const_only, 0},
    {"Reciprocal", h_reciprocal, 0},
    {"ReduceMax", h_const_only, 0},
    {"ReduceMean", h_reducemean, 0},
    {"ReduceMin", h_const_only, 0},
    {"ReduceProd", h_const_only, 0},
    {"ReduceSum", h_const_only, 0},
    {"Reshape", h_reshape, 0},
    {"ScatterND", h_const_only, 0},
    {"Shape", h_shape, 0},
    {"Sign", h_const_only, 0},
    {"Size", h_const_only, 0},
    {"Slice", h_slice, 0},
    {"Softmax", h_softmax, 0},
    {"Split", h_split, 0},
    {"Squeeze", h_squeeze, 0},
    {"Sub", h_sub, 0},
    {"Tile", h_const_only, 0},
    {"Transpose", h_transpose, 0},
    {"Trilu", h_const_only, 0},
    {"Unsqueeze", h_unsqueeze, 0},
    {"Where", h_where, 0},
    {"Xor", h_xor, 0},
};

#define NONNX_OPS (int)(sizeof onnx_ops / sizeof *onnx_ops)

/* The element-wise unary operators of ew.def's onnx column. */
static const onnx_op ew_onnx_op = {"(ew.def)", h_ew, 0};

const char *ox_supported_ops(void) {
  static char list[2048];
  if (!list[0]) {
    size_t k = 0;
    for (int i = 0; i < NONNX_OPS; i++)
      k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "",
                            onnx_ops[i].name);
    for (int i = 0; i < IR_EW_NROWS; i++) {
      const char *nm = ir_ew_of(ir_ew_op(i))->onnx;
      if (nm && k < sizeof list)
        k += (size_t)snprintf(list + k, sizeof list - k, ", %s", nm);
    }
  }
  return list;
}

/* ew.def's rows first: a name also in onnx_ops (say as constant-only) is
 * then computed by its operator. */
static const onnx_op *find_op(const char *name) {
  if (ir_ew_by_onnx(name) >= 0)
    return &ew_onnx_op;
  for (int i = 0; i < NONNX_OPS; i++)
    if (strcmp(onnx_ops[i].name, name) == 0)
      return &onnx_ops[i];
  return NULL;
}

/* ---- the model
 * ---------------------------------------------------------------------- */

static int is_initializer(const Onnx__GraphProto *g, const char *name) {
  for (size_t k = 0; k < g->n_initializer; k++)
    if (g->initializer[k]->name && !strcmp(g->initializer[k]->name, name))
      return 1;
  return 0;
}

/* Whether ONNX value name is read only through parameter slots (following
 * Identity nodes), and read at all. */
static int only_weight_uses(const Onnx__GraphProto *g, const char *name,
                            int depth) {
  int uses = 0;
  for (size_t i = 0; i < g->n_node && depth < 8; i++) {
    const node_t *n = g->node[i];
    const onnx_op *op = find_op(n->op_type ? n->op_type : "");
    for (size_t k = 0; k < n->n_input; k++) {
      if (!n->input[k] || strcmp(n->input[k], name))
        continue;
      uses++;
      if (op && (op->fn == h_identity || op->fn == h_transpose)) {
        if (!only_weight_uses(g, n->output[0], depth + 1))
          return 0;
      } else if (!op || k >= 32 || !(op->weight_slots & (1u << k)))
        return 0;
    }
  }
  return uses > 0;
}

/* A dimension's name: its dim_param, or "?". */
static const char *dim_name(const Onnx__TensorShapeProto__Dimension *d) {
  return d->value_case ==
                     ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 d->dim_param && d->dim_param[0]
             ? d->dim_param
             : "?";
}

/* An --input-shape value for shape s: its fixed sizes, <name> for the
 * dynamic ones ("1x<seq>"). */
static void shape_hint(const Onnx__TensorShapeProto *s, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t k = 0; k < s->n_dim && len < n; k++) {
    const Onnx__TensorShapeProto__Dimension *d = s->dim[k];
    const char *x = k ? "x" : "";
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        d->dim_value >= 1)
      len += (size_t)snprintf(buf + len, n - len, "%s%lld", x,
                              (long long)d->dim_value);
    else
      len += (size_t)snprintf(buf + len, n - len, "%s<%s>", x, dim_name(d));
  }
}

/* The size o gives the dynamic dimension d at axis k of a graph input:
 * --dim's for its name, else --batch's for a first dimension; 0 if none. */
static int64_t bound_dim(const ox_options *o,
                         const Onnx__TensorShapeProto__Dimension *d, size_t k) {
  if (!o)
    return 0;
  const char *name = dim_name(d);
  for (int i = 0; strcmp(name, "?") && i < o->ndims; i++)
    if (!strcmp(o->dim_name[i], name))
      return o->dim_size[i];
  return k == 0 ? o->batch : 0;
}

static base_status input_shape(imp *I, const Onnx__ValueInfoProto *vi,
                               ir_shape *s, int *dtype) {
  const Onnx__TypeProto *t0 = vi->type;
  *dtype = IR_DT_F32;
  if (t0 && t0->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
      t0->tensor_type && t0->tensor_type->has_elem_type) {
    int e = t0->tensor_type->elem_type;
    note_half(I, e); /* imported in float32, converted at the end */
    *dtype = e == DT_FLOAT || e == DT_FLOAT16 || e == DT_BFLOAT16 ? IR_DT_F32
             : e == DT_INT64 || e == DT_INT32                     ? IR_DT_I64
             : e == DT_BOOL                                       ? IR_DT_BOOL
                                                                  : -1;
    if (*dtype < 0)
      return fail(I, BASE_ERR_PARAM,
                  "graph input '%s' has element type %d (supported: float32, "
                  "float16, bfloat16, int64, int32, bool)",
                  vi->name, e);
  }
  for (int k = 0; I->o && k < I->o->nshapes; k++)
    if (!strcmp(I->o->shapes[k].name, vi->name)) {
      *s = I->o->shapes[k].shape;
      return BASE_OK;
    }
  const Onnx__TypeProto *t = vi->type;
  if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
      !t->tensor_type)
    return fail(I, BASE_ERR_PARAM, "graph input '%s' is not a tensor",
                vi->name);
  const Onnx__TypeProto__Tensor *tt = t->tensor_type;
  if (!tt->shape)
    return fail(I, BASE_ERR_SHAPE,
                "graph input '%s' has no shape: pass --input-shape %s=DxDx...",
                vi->name, vi->name);
  int64_t dims[IR_MAX_RANK + 1];
  if (tt->shape->n_dim > IR_MAX_RANK)
    return fail(I, BASE_ERR_SHAPE, "graph input '%s' has rank %zu (at most %d)",
                vi->name, tt->shape->n_dim, IR_MAX_RANK);
  for (size_t k = 0; k < tt->shape->n_dim; k++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        d->dim_value < 0)
      return fail(I, BASE_ERR_SHAPE,
                  "graph input '%s' has a negative dimension %zu (%lld)",
                  vi->name, k, (long long)d->dim_value);
    if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
        d->dim_value < 1) {
      int64_t bound = bound_dim(I->o, d, k);
      if (bound > 0) {
        dims[k] = bound;
        continue;
      }
      char hint[256], alt[96] = "";
      shape_hint(tt->shape, hint, sizeof hint);
      if (strcmp(dim_name(d), "?"))
        snprintf(alt, sizeof alt, ", or --dim %s=SIZE", dim_name(d));
      return fail(I, BASE_ERR_SHAPE,
                  "graph input '%s' has a dynamic dimension %zu ('%s'): pass "
                  "--input-shape %s=%s with sizes for the <dynamic> ones%s",
                  vi->name, k, dim_name(d), vi->name, hint, alt);
    }
    dims[k] = d->dim_value;
  }
  return set_dims(I, s, tt->shape->n_dim, dims);
}

/* Is name one of the inputs o names as data (--data-input)? */
static int named_data(const ox_options *o, const char *name) {
  for (int k = 0; k < o->ndata; k++)
    if (!strcmp(o->data[k], name))
      return 1;
  return 0;
}

static base_status load_inputs(imp *I) {
  const Onnx__GraphProto *g = I->m->graph;
  for (int k = 0; I->o && k < I->o->ndata; k++) { /* each names an input */
    size_t i = 0;
    while (i < g->n_input &&
           (!g->input[i]->name || strcmp(g->input[i]->name, I->o->data[k])))
      i++;
    if (i == g->n_input)
      return fail(I, BASE_ERR_PARAM,
                  "--data-input '%s': the model has no graph input of that "
                  "name",
                  I->o->data[k]);
  }
  for (size_t k = 0; k < g->n_initializer; k++) {
    const Onnx__TensorProto *t = g->initializer[k];
    val *v = new_val(I, t->name ? t->name : "");
    base_status st =
        v ? load_tensor(I, t, v) : fail(I, BASE_ERR_NOMEM, "out of memory");
    if (st)
      return st; /* becomes a weight (with data) when an operator reads it */
    v->from_init = !v->is_int;
  }
  for (size_t k = 0; k < g->n_input; k++) {
    const Onnx__ValueInfoProto *vi = g->input[k];
    if (!vi->name || is_initializer(g, vi->name))
      continue;
    ir_shape s;
    int dtype;
    base_status st = input_shape(I, vi, &s, &dtype);
    if (st)
      return st;
    char name[256];
    ir_name_for(I, vi->name, name, sizeof name);
    int data = I->o && I->o->ndata > 0 && named_data(I->o, vi->name);
    int weight =
        !data && ((vi->doc_string && !strcmp(vi->doc_string, OX_WEIGHT_DOC)) ||
                  only_weight_uses(g, vi->name, 0) ||
                  (I->o && I->o->ndata > 0 && dtype == IR_DT_F32));
    int t =
        ir_add_tensor(I->g, name, weight ? IR_T_WEIGHT : IR_T_INPUT, &s, I->d);
    val *v = t >= 0 ? new_val(I, vi->name) : NULL;
    if (!v)
      return t < 0 ? fail(I, I->d->code, "%s", I->d->msg)
                   : fail(I, BASE_ERR_NOMEM, "out of memory");
    v->tensor = t;
    I->g->tensors[t].dtype = dtype;
  }
  return BASE_OK;
}

/* Every node's shape as a message, checked before anything reads a node:
 * an op type, at least one output, at most MAX_INPUTS inputs and
 * IR_MAX_LIST outputs, and names present (handlers and the weight scan
 * index input[k] and output[0] without further checks). */
static base_status check_nodes(imp *I) {
  const Onnx__GraphProto *g = I->m->graph;
  for (size_t i = 0; i < g->n_node; i++) {
    const node_t *n = g->node[i];
    I->node = n;
    I->node_index = (int)i + 1;
    if (!n->op_type || !n->op_type[0])
      return fail(I, BASE_ERR_UNKNOWN_OP, "the node has no op type");
    if (n->n_output < 1)
      return fail(I, BASE_ERR_ARITY, "the node has no output");
    if (n->n_input > MAX_INPUTS)
      return fail(I, BASE_ERR_ARITY, "%zu inputs (at most %d)", n->n_input,
                  MAX_INPUTS);
    if (n->n_output > IR_MAX_LIST)
      return fail(I, BASE_ERR_ARITY, "%zu outputs (at most %d)", n->n_output,
                  IR_MAX_LIST);
    for (size_t k = 0; k < n->n_input; k++)
      if (!n->input[k])
        return fail(I, BASE_ERR_SYNTAX, "input %zu has no name", k + 1);
    for (size_t k = 0; k < n->n_output; k++)
      if (!n->output[k])
        return fail(I, BASE_ERR_SYNTAX, "output %zu has no name", k + 1);
  }
  I->node = NULL;
  return BASE_OK;
}

/* Evaluates the current node on the host when every input it has is a
 * constant (fold.c), defining its outputs as constants. Float nodes over
 * weight initializers are left to their handlers (weight preprocessing
 * stays in the graph, "run once at load"). BASE_ERR_UNKNOWN_OP: not
 * folded, nothing changed. */
static base_status try_fold(imp *I) {
  const node_t *n = I->node;
  ox_host in[MAX_INPUTS], out[IR_MAX_LIST];
  int nin = (int)n->n_input, all_float = 1, any_init = 0;
  if (nin == 0)
    return BASE_ERR_UNKNOWN_OP;
  for (int k = 0; k < nin; k++) {
    val *v = has_input(n, (size_t)k) ? find_val(I, n->input[k]) : NULL;
    if (has_input(n, (size_t)k) && (!v || !v->is_const))
      return BASE_ERR_UNKNOWN_OP;
    all_float &= !v || !v->is_int;
    /* a scalar initializer is a literal (the dynamo exporter stores its
     * constants so), not a weight */
    any_init |= v && v->from_init && ir_shape_numel(&v->shape) > 1;
  }
  if (all_float && any_init)
    return BASE_ERR_UNKNOWN_OP;
  memset(in, 0, sizeof in);
  memset(out, 0, sizeof out);
  base_status st = BASE_OK;
  for (int k = 0; k < nin && !st; k++) {
    val *v = has_input(n, (size_t)k) ? find_val(I, n->input[k]) : NULL;
    if (!v)
      continue;
    int64_t m = ir_shape_numel(&v->shape);
    in[k].shape = v->shape;
    in[k].dtype = v->is_bool ? IR_DT_BOOL : v->is_int ? IR_DT_I64 : IR_DT_F32;
    in[k].v = base_malloc(sizeof(double) * (size_t)(m ? m : 1));
    if (!in[k].v)
      st = fail(I, BASE_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; !st && j < m; j++)
      in[k].v[j] = v->is_int ? (double)v->i[j] : (double)v->f[j];
  }
  char err[256] = "";
  if (!st) {
    st = ox_fold(n, in, nin, out, err, sizeof err);
    if (st && st != BASE_ERR_UNKNOWN_OP)
      st = fail(I, st, "%s", err);
  }
  for (size_t k = 0; !st && k < n->n_output; k++) {
    if (!n->output[k][0])
      continue;
    if (k >= IR_MAX_LIST || !out[k].v) {
      st = fail(I, BASE_ERR_PARAM, "output %zu cannot be folded", k + 1);
      break;
    }
    val *v = new_val(I, n->output[k]);
    int64_t m = ir_shape_numel(&out[k].shape);
    if (v) {
      v->is_const = 1;
      v->shape = out[k].shape;
      v->is_int = out[k].dtype != IR_DT_F32;
      v->is_bool = out[k].dtype == IR_DT_BOOL;
      if (v->is_int)
        v->i = base_malloc(sizeof(int64_t) * (size_t)(m ? m : 1));
      else
        v->f = base_malloc(sizeof(float) * (size_t)(m ? m : 1));
    }
    if (!v || (!v->i && !v->f)) {
      st = fail(I, BASE_ERR_NOMEM, "out of memory");
      break;
    }
    for (int64_t j = 0; j < m; j++) {
      double x = out[k].v[j];
      if (v->is_int)
        v->i[j] = x >= 9.2e18    ? INT64_MAX
                  : x <= -9.2e18 ? INT64_MIN
                                 : (int64_t)x;
      else
        v->f[j] = (float)x;
    }
  }
  for (int k = 0; k < nin; k++)
    free(in[k].v);
  for (int k = 0; k < IR_MAX_LIST; k++)
    free(out[k].v);
  return st;
}

static base_status run_nodes(imp *I) {
  const Onnx__GraphProto *g = I->m->graph;
  for (size_t i = 0; i < g->n_node; i++) {
    I->node = g->node[i];
    I->node_index = (int)i + 1;
    const char *type = I->node->op_type ? I->node->op_type : "";
    if (I->node->domain && I->node->domain[0] &&
        strcmp(I->node->domain, "ai.onnx"))
      return fail(I, BASE_ERR_UNKNOWN_OP,
                  "operator domain '%s' is not supported", I->node->domain);
    const onnx_op *op = find_op(type);
    if (!op)
      return fail(I, BASE_ERR_UNKNOWN_OP,
                  "unsupported ONNX operator '%s' (supported: %s)", type,
                  ox_supported_ops());
    base_status st = try_fold(I);
    if (st == BASE_ERR_UNKNOWN_OP)
      st = op->fn(I);
    if (st)
      return st;
  }
  I->node = NULL;
  return BASE_OK;
}

static base_status bind_outputs(imp *I) {
  const Onnx__GraphProto *g = I->m->graph;
  for (size_t k = 0; k < g->n_output; k++) {
    val *v = g->output[k]->name ? find_val(I, g->output[k]->name) : NULL;
    if (!v)
      return fail(I, BASE_ERR_UNDEFINED, "graph output '%s' is never computed",
                  g->output[k]->name ? g->output[k]->name : "");
    int t = tensor_of(I, v);
    if (t < 0 || ir_add_output(I->g, t, I->d))
      return I->d->code;
  }
  if (g->n_output == 0)
    return fail(I, BASE_ERR_NO_OUTPUT, "the model declares no output");
  return BASE_OK;
}

/* The graph's name: the ONNX graph name, else (also for PyTorch's generic
 * "main_graph") the file's stem, made valid. */
static base_status name_graph(imp *I) {
  const char *src = I->m->graph->name, *base = strrchr(I->file, '/');
  char buf[256];
  if (!src || !src[0] || !strcmp(src, "main_graph")) {
    base = base ? base + 1 : I->file;
    snprintf(buf, sizeof buf, "%s", base);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf)
      *dot = '\0';
    src = buf;
  }
  char name[256];
  ir_name_for(I, src, name, sizeof name);
  I->g->name = base_arena_strndup(I->g->arena, name, strlen(name));
  return I->g->name ? BASE_OK : fail(I, BASE_ERR_NOMEM, "out of memory");
}

static base_status check_model(imp *I) {
  const Onnx__ModelProto *m = I->m;
  if (!m->graph)
    return fail(I, BASE_ERR_SYNTAX, "the model has no graph");
  I->opset = -1;
  for (size_t k = 0; k < m->n_opset_import; k++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[k];
    if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))
      I->opset = o->has_version ? o->version : 1;
  }
  if (I->opset < 0)
    return fail(I, BASE_ERR_PARAM, "the model imports no default-domain opset");
  if (I->opset < MIN_OPSET)
    return fail(I, BASE_ERR_PARAM,
                "opset %lld is too old (at least %d; convert the model with "
                "onnx.version_converter)",
                (long long)I->opset, MIN_OPSET);
  return BASE_OK;
}

/* A half model, imported in float32 (its values are exact there), in its
 * half type by the mixed-precision policy (ir_graph_to_dtype). */
static base_status to_half(imp *I) {
  ir_graph *h = ir_graph_to_dtype(I->g, (ir_dtype)I->half, I->d);
  if (!h)
    return fail(I, I->d->code, "%s", I->d->msg);
  ir_graph_free(I->g);
  I->g = h;
  return BASE_OK;
}

ir_graph *ox_import(const uint8_t *data, size_t len, const char *file,
                    const ox_options *o, base_diag *d) {
  base_diag local;
  imp I;
  memset(&I, 0, sizeof I);
  I.file = file ? file : "<onnx>";
  I.ext.model = file;
  I.d = d ? d : &local;
  memset(I.d, 0, sizeof *I.d);
  I.o = o;
  int oom = 0; /* protobuf-c allocates through base_malloc (base.h) */
  ProtobufCAllocator pa = {base_hook_alloc, base_hook_free, &oom};
  base_status st = base_pb_check_depth(&onnx__model_proto__descriptor, data,
                                       len, MAX_NESTING, I.d);
  if (st)
    fail(&I, st, "not a valid ONNX model: %s", I.d->msg);
  else
    I.m = onnx__model_proto__unpack(&pa, len, data);
  if (!st && !I.m)
    st = oom ? fail(&I, BASE_ERR_NOMEM, "out of memory")
             : fail(&I, BASE_ERR_SYNTAX,
                    "not a valid ONNX model (protobuf parse failed)");
  if (!st)
    st = check_model(&I);
  if (!st && !(I.g = ir_graph_new(NULL)))
    st = fail(&I, BASE_ERR_NOMEM, "out of memory");
  if (!st)
    st = check_nodes(&I);
  if (!st)
    st = name_graph(&I);
  if (!st)
    st = load_inputs(&I);
  if (!st)
    st = run_nodes(&I);
  if (!st)
    st = bind_outputs(&I);
  if (!st && ir_graph_validate(I.g, I.d))
    st = fail(&I, BASE_ERR_INTERNAL, "imported graph is invalid: %s", I.d->msg);
  if (!st && I.half)
    st = to_half(&I);
  if (st) {
    ir_graph_free(I.g);
    I.g = NULL;
  }
  snprintf(I.d->file, sizeof I.d->file, "%s", I.file);
  free_vals(&I);
  ox_ext_close(&I.ext);
  if (I.m)
    onnx__model_proto__free_unpacked(I.m, &pa);
  return I.g;
}

ir_graph *ox_import_file(const char *path, const ox_options *o, base_diag *d) {
  size_t len;
  char *data = base_read_file(path, &len, d);
  if (!data)
    return NULL;
  ir_graph *g = ox_import((const uint8_t *)data, len, path, o, d);
  free(data);
  return g;
}

int ox_parse_shape_arg(const char *text, ox_shape_arg *a) {
  const char *eq = strrchr(text, '=');
  if (!eq || eq == text || (size_t)(eq - text) >= sizeof a->name)
    return -1;
  memset(a, 0, sizeof *a);
  memcpy(a->name, text, (size_t)(eq - text));
  const char *p = eq + 1;
  while (*p) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 1 || v > INT32_MAX || a->shape.rank == IR_MAX_RANK)
      return -1;
    a->shape.dim[a->shape.rank++] = v;
    if (*end == 'x' || *end == ',')
      end++;
    else if (*end)
      return -1;
    p = end;
  }
  return a->shape.rank > 0 ? 0 : -1;
}
