/* half.c: the half-precision types f16 (IEEE binary16) and bf16 (bfloat16):
 * conversion to and from their 16-bit encodings with round-to-nearest-even,
 * the rounding the executors apply at every tensor, each type's unit
 * roundoff, and the mixed-precision policy (which operators run in the half
 * type and which in float32) with the conversion of a float32 graph to a
 * half type by it (docs/half.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

uint32_t ir_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static float bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

uint16_t ir_f16_bits(float x) {
  uint32_t u = ir_f32_bits(x), sign = (u >> 16) & 0x8000, ax = u & 0x7fffffff;
  if (ax > 0x7f800000) /* NaN: quiet, keeps the top of its payload */
    return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
  if (ax >= 0x477ff000) /* 65520 and up (half-way past 65504, even) */
    return (uint16_t)(sign | 0x7c00);
  if (ax < 0x38800000) /* below 2^-14: a subnormal (or zero) of 2^-24 steps;
                          the scaling is exact and rintf rounds to even */
    return (uint16_t)(sign | (uint32_t)rintf(bits_f32(ax) * 0x1p24f));
  uint32_t e = ax - 0x38000000; /* exponent bias 127 -> 15 */
  return (uint16_t)(sign | ((e + 0xfff + ((e >> 13) & 1)) >> 13));
}

float ir_f16_value(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f,
           m = h & 0x3ff;
  if (e == 0) /* zero or subnormal: m * 2^-24, exact in float32 */
    return bits_f32(sign | ir_f32_bits((float)m * 0x1p-24f));
  if (e == 31)
    return bits_f32(sign | 0x7f800000 | (m << 13));
  return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t ir_bf16_bits(float x) {
  uint32_t u = ir_f32_bits(x);
  if ((u & 0x7fffffff) > 0x7f800000) /* NaN: quiet */
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float ir_bf16_value(uint16_t h) { return bits_f32((uint32_t)h << 16); }

int ir_dtype_is_half(ir_dtype t) { return t == IR_DT_F16 || t == IR_DT_BF16; }

int ir_dtype_is_float(ir_dtype t) {
  return t == IR_DT_F32 || ir_dtype_is_half(t);
}

float ir_dtype_round(float x, ir_dtype t) {
  return t == IR_DT_F16    ? ir_f16_value(ir_f16_bits(x))
         : t == IR_DT_BF16 ? ir_bf16_value(ir_bf16_bits(x))
                           : x;
}

void ir_dtype_round_n(float *x, int64_t n, ir_dtype t) {
  if (ir_dtype_is_half(t))
    for (int64_t i = 0; i < n; i++)
      x[i] = ir_dtype_round(x[i], t);
}

double ir_dtype_unit_roundoff(ir_dtype t) {
  return t == IR_DT_F16 ? 0x1p-11 : t == IR_DT_BF16 ? 0x1p-8 : 0x1p-24;
}

/* ---- the mixed-precision policy: one row per operator ---------------------
 */

ir_half_policy ir_op_half_policy(ir_opcode op) {
  switch (op) {
  /* products and convolutions: half inputs and output, float32 sums */
  case IR_OP_CONV2D:
  case IR_OP_MATMUL:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_ENLARGE:
  /* element-wise and pooling: float32 inside, the result rounded */
  case IR_OP_EWADD:
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
  case IR_OP_RELU:
  case IR_OP_SIGMOID:
  case IR_OP_TANH:
  case IR_OP_GELU:
  case IR_OP_ERF:
  case IR_OP_SQRT:
  case IR_OP_NEG:
  case IR_OP_COS:
  case IR_OP_SIN:
  case IR_OP_CLIP:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_PAD:
  case IR_OP_FUSED:
  /* reductions, softmax and normalisation: half in and out, the sums,
   * maxima and statistics in float32 inside (no cast nodes around them) */
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM: return IR_HALF_RUN;
  /* the range-hungry exp and log: f16 overflows from exp(11.1) on, and
   * their inputs and results leave its range first (autocast's list) */
  case IR_OP_EXP:
  case IR_OP_LOG: return IR_HALF_F32;
  /* type-generic and constants: the widest of their float inputs */
  case IR_OP_CONCAT:
  case IR_OP_SPLIT:
  case IR_OP_TRANSPOSE:
  case IR_OP_RESHAPE:
  case IR_OP_SLICE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL: return IR_HALF_KEEP;
  }
  return IR_HALF_KEEP;
}
/* ---- converting a graph ---------------------------------------------------
 */

typedef struct conv {
  const ir_graph *g;
  ir_graph *h;
  ir_dtype t;   /* the half type */
  int32_t *map; /* g's tensor -> h's */
  int32_t *to;  /* [2 * i + (w != F32)]: g's tensor i cast to w in h; -1 */
  int fresh;
  base_diag *d;
} conv;

/* Whether every node reading g's tensor i runs in float32 (a weight only
 * they read stays float32, not rounded to the half type first). */
static int only_f32_readers(const ir_graph *g, int i) {
  int any = 0;
  for (int n = 0; n < g->nnodes; n++)
    for (int k = 0; k < g->nodes[n].nin; k++)
      if (g->nodes[n].in[k] == i) {
        if (ir_op_half_policy(g->nodes[n].op) != IR_HALF_F32)
          return 0;
        any = 1;
      }
  return any;
}

/* Adds g's input or weight i to h: float ones in the half type (weights
 * with values rounded to it), but for weights only float32 operators read. */
static base_status conv_leaf(conv *c, int i) {
  const ir_tensor *x = &c->g->tensors[i];
  int k = ir_add_tensor(c->h, x->name, x->kind, &x->shape, c->d);
  if (k < 0)
    return c->d->code;
  ir_tensor *y = &c->h->tensors[k];
  int keep = !ir_dtype_is_float((ir_dtype)x->dtype) ||
             x->dtype == (int32_t)c->t ||
             (x->kind == IR_T_WEIGHT && only_f32_readers(c->g, i));
  y->dtype = keep ? x->dtype : (int32_t)c->t;
  y->data = x->data;
  if (!keep && x->data) {
    int64_t n = ir_shape_numel(&x->shape);
    float *v = base_arena_alloc(c->h->arena, (size_t)n * 4 + 1);
    if (!v)
      return base_diag_set(c->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    memcpy(v, x->data, (size_t)n * 4);
    ir_dtype_round_n(v, n, c->t);
    y->data = v;
  }
  c->map[i] = k;
  return BASE_OK;
}

/* g's tensor i in h as type w: itself, or its cast (made once). */
static int32_t conv_cast(conv *c, int i, ir_dtype w) {
  int32_t k = c->map[i], *slot = &c->to[2 * i + (w != IR_DT_F32)];
  if (c->h->tensors[k].dtype == (int32_t)w)
    return k;
  if (*slot >= 0)
    return *slot;
  char name[300];
  snprintf(name, sizeof name, "%.250s.%s", c->g->tensors[i].name,
           ir_dtype_name(w));
  while (ir_find_tensor(c->g, name) >= 0 || ir_find_tensor(c->h, name) >= 0)
    snprintf(name, sizeof name, "%.250s.%s.%d", c->g->tensors[i].name,
             ir_dtype_name(w), ++c->fresh);
  ir_attrs a;
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = (int32_t)w; /* cast's `to` (params.def) */
  const char *names[1] = {name};
  int n = ir_add_node(c->h, IR_OP_CAST, &k, 1, &a, names, c->d);
  return n < 0 ? -1 : (*slot = c->h->nodes[n].out[0]);
}

/* The type node n's float inputs are cast to under the policy; -1: none
 * (a cast, or no float input). */
static int conv_want(const conv *c, const ir_node *n) {
  ir_half_policy p = ir_op_half_policy(n->op);
  if (p == IR_HALF_RUN)
    return (int)c->t;
  if (p == IR_HALF_F32)
    return IR_DT_F32;
  if (n->op == IR_OP_CAST)
    return -1;
  int w = -1;
  for (int k = 0; k < n->nin; k++) {
    int32_t dt = c->h->tensors[c->map[n->in[k]]].dtype;
    if (ir_dtype_is_float((ir_dtype)dt) && (w < 0 || dt == IR_DT_F32))
      w = dt; /* float32 is the widest */
  }
  return w;
}

static base_status conv_node(conv *c, const ir_node *n) {
  int w = conv_want(c, n);
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++) {
    int32_t x = c->map[n->in[k]];
    int fl = ir_dtype_is_float((ir_dtype)c->h->tensors[x].dtype);
    in[k] = w >= 0 && fl ? conv_cast(c, n->in[k], (ir_dtype)w) : x;
    if (in[k] < 0)
      return c->d->code;
  }
  for (int o = 0; o < n->nout; o++)
    names[o] = c->g->tensors[n->out[o]].name;
  int k = ir_add_node(c->h, n->op, in, n->nin, &n->a, names, c->d);
  if (k < 0)
    return c->d->code;
  for (int o = 0; o < n->nout; o++)
    c->map[n->out[o]] = c->h->nodes[k].out[o];
  return BASE_OK;
}

static base_status conv_run(conv *c) {
  base_status st = BASE_OK;
  for (int i = 0; !st && i < c->g->ntensors; i++)
    if (c->g->tensors[i].kind != IR_T_VALUE)
      st = conv_leaf(c, i);
  for (int i = 0; !st && i < c->g->nnodes; i++)
    st = conv_node(c, &c->g->nodes[i]);
  for (int i = 0; !st && i < c->g->noutputs; i++)
    st = ir_add_output(c->h, c->map[c->g->outputs[i]], c->d);
  return st;
}

/* Widens node n: a cast from a float type to a float type is dropped (its
 * readers read its input) unless it writes an output of g. */
static base_status wide_node(conv *c, const ir_node *n) {
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++)
    in[k] = c->map[n->in[k]];
  ir_attrs a = n->a;
  if (n->op == IR_OP_CAST && ir_dtype_is_float((ir_dtype)a.groups) &&
      ir_dtype_is_float((ir_dtype)c->h->tensors[in[0]].dtype)) {
    if (!ir_is_output(c->g, n->out[0])) {
      c->map[n->out[0]] = in[0];
      return BASE_OK;
    }
    a.groups = IR_DT_F32;
  }
  for (int o = 0; o < n->nout; o++)
    names[o] = c->g->tensors[n->out[o]].name;
  int k = ir_add_node(c->h, n->op, in, n->nin, &a, names, c->d);
  if (k < 0)
    return c->d->code;
  for (int o = 0; o < n->nout; o++)
    c->map[n->out[o]] = c->h->nodes[k].out[o];
  return BASE_OK;
}

static base_status wide_run(conv *c) {
  base_status st = BASE_OK;
  for (int i = 0; !st && i < c->g->ntensors; i++) {
    const ir_tensor *x = &c->g->tensors[i];
    if (x->kind == IR_T_VALUE)
      continue;
    int k = ir_add_tensor(c->h, x->name, x->kind, &x->shape, c->d);
    if (k < 0)
      return c->d->code;
    c->h->tensors[k].dtype =
        ir_dtype_is_half((ir_dtype)x->dtype) ? IR_DT_F32 : x->dtype;
    c->h->tensors[k].data = x->data; /* half values are exact in float32 */
    c->map[i] = k;
  }
  for (int i = 0; !st && i < c->g->nnodes; i++)
    st = wide_node(c, &c->g->nodes[i]);
  for (int i = 0; !st && i < c->g->noutputs; i++)
    st = ir_add_output(c->h, c->map[c->g->outputs[i]], c->d);
  return st;
}

/* Runs f (conv_run or wide_run) from g into a new graph that owns its
 * weight values. */
static ir_graph *convert(const ir_graph *g, ir_dtype t,
                         base_status (*f)(conv *), base_diag *d) {
  conv c = {.g = g, .t = t, .d = d};
  c.h = ir_graph_new(g->name);
  c.map = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
  c.to = base_malloc(2 * sizeof(int32_t) * ((size_t)g->ntensors + 1));
  base_status st = BASE_ERR_NOMEM;
  if (c.h && c.map && c.to) {
    for (int i = 0; i < g->ntensors; i++)
      c.map[i] = c.to[2 * i] = c.to[2 * i + 1] = -1;
    st = f(&c);
  } else
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st)
    st = ir_graph_own_data(c.h, d);
  free(c.map);
  free(c.to);
  if (st) {
    ir_graph_free(c.h);
    return NULL;
  }
  return c.h;
}

ir_graph *ir_graph_to_dtype(const ir_graph *g, ir_dtype t, base_diag *d) {
  if (!ir_dtype_is_half(t)) {
    base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                  "a graph converts to f16 or bf16, not %s", ir_dtype_name(t));
    return NULL;
  }
  return convert(g, t, conv_run, d);
}

ir_graph *ir_graph_to_f32(const ir_graph *g, base_diag *d) {
  return convert(g, IR_DT_F32, wide_run, d);
}

ir_dtype ir_graph_float_type(const ir_graph *g) {
  for (int i = 0; i < g->ntensors; i++)
    if (ir_dtype_is_half((ir_dtype)g->tensors[i].dtype))
      return (ir_dtype)g->tensors[i].dtype;
  return IR_DT_F32;
}
