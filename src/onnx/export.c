/* export.c: ir_graph -> ONNX model, a drop-in replacement for the model
 * it came from.
 *
 * Each IR node becomes one ONNX node, or a short chain where ONNX splits
 * what the IR fuses (a convolution's activation, a matmul's bias on a
 * batched operand, a fused node's body: ir_graph_unfuse). Parameters that ONNX
 * takes as inputs (Reshape's shape, Clip's bounds, Split's sizes, ...) become
 * initializers named after the node. All message memory comes from one arena,
 * freed after packing.
 *
 * Drop-in (ox_export_options): weight preprocessing (nodes that compute from
 * weights only, ir_weight_only: folded batch norms, transposed weights) is
 * computed here on the CPU reference kernels and written as initializers
 * when the weights' values are known; when they are not, those nodes stay
 * (to run once at load) and are counted. Given the original model, graph
 * inputs, outputs and initializers get back their original ONNX names and
 * the model keeps its opset where every operator allows (opset 13 at least:
 * Split's sizes and Softmax's axis as today; 17 for LayerNormalization;
 * Gelu is written as its erf formula below opset 20). The mapping is listed
 * in docs/onnx.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "onnx.h"
#include "onnx.pb-c.h"
#include "ox_int.h"

/* An original ONNX name for an IR name (from the model given as `like`). */
typedef struct rename {
  char *ir, *onnx;
} rename_t;

typedef struct exporter {
  const ir_graph *g;
  base_arena *a;
  base_diag *d;
  Onnx__GraphProto *graph;
  size_t capnode, capinit;
  int oom;
  int fresh; /* counter for helper names */
  int opset;
  rename_t *ren; /* sorted by ir name */
  int nren;
  char **like_io; /* the original's graph input (not initializer) and output
                     names */
  int nlike_io;
  ox_dyn dyn;          /* the original's dynamic dimensions (dyn.c) */
  ox_dyn_in *out_dims; /* the original's outputs' named dimensions (param:
                          an index into out_names) */
  const char **out_names;
  int nout_dims;
  float **known;           /* per tensor: values known here (weights, folded) */
  unsigned char *folded;   /* per node: computed here, not written */
  unsigned char *consumed; /* per tensor: read by a written node or output */
} exporter;

static int ren_cmp(const void *a, const void *b) {
  return strcmp(((const rename_t *)a)->ir, ((const rename_t *)b)->ir);
}

/* The name tensor `ir` has in the model written. */
static const char *out_name(const exporter *E, const char *ir) {
  if (!E->nren)
    return ir;
  rename_t key = {(char *)ir, NULL};
  const rename_t *r =
      bsearch(&key, E->ren, (size_t)E->nren, sizeof *E->ren, ren_cmp);
  return r ? r->onnx : ir;
}

static void *alloc(exporter *E, size_t n) {
  void *p = base_arena_alloc(E->a, n ? n : 1);
  if (!p)
    E->oom = 1;
  return p;
}

static char *str(exporter *E, const char *s) {
  char *p = base_arena_strndup(E->a, s, strlen(s));
  if (!p)
    E->oom = 1;
  return p;
}

/* Appends p to an arena array (*arr, *n, *cap). */
static void push(exporter *E, void ***arr, size_t *n, size_t *cap, void *p) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    void **na = alloc(E, sizeof(void *) * nc);
    if (!na)
      return;
    if (*n)
      memcpy(na, *arr, sizeof(void *) * *n);
    *arr = na;
    *cap = nc;
  }
  (*arr)[(*n)++] = p;
}

/* A helper tensor name "<base>.<what>" that no IR tensor uses. */
static char *helper_name(exporter *E, const char *base, const char *what) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s.%s", base, what);
  while (ir_find_tensor(E->g, buf) >= 0)
    snprintf(buf, sizeof buf, "%s.%s%d", base, what, ++E->fresh);
  return str(E, buf);
}

/* ---- tensors and attributes ------------------------------------------------
 */

/* The ONNX element type of an IR type (float, int64, bool, float16,
 * bfloat16: opset 13 and up, which export always writes). */
static int onnx_dtype(int32_t dt) {
  return dt == IR_DT_I64    ? 7
         : dt == IR_DT_BOOL ? 9
         : dt == IR_DT_F16  ? 10
         : dt == IR_DT_BF16 ? 16
                            : 1;
}

static Onnx__TensorProto *tensor_proto(exporter *E, const char *name, int dtype,
                                       const int64_t *dims, int rank) {
  Onnx__TensorProto *t = alloc(E, sizeof *t);
  if (!t)
    return NULL;
  onnx__tensor_proto__init(t);
  t->name = str(E, name);
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = (size_t)rank;
  t->dims = alloc(E, sizeof(int64_t) * (size_t)(rank ? rank : 1));
  if (t->dims && rank)
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
  return t;
}

static void add_init(exporter *E, Onnx__TensorProto *t) {
  if (t)
    push(E, (void ***)&E->graph->initializer, &E->graph->n_initializer,
         &E->capinit, t);
}

/* An int64 initializer; returns its name. */
static char *init_ints(exporter *E, const char *base, const char *what,
                       const int64_t *v, int n) {
  char *name = helper_name(E, base, what);
  int64_t dim = n;
  Onnx__TensorProto *t = name ? tensor_proto(E, name, 7, &dim, 1) : NULL;
  if (!t)
    return NULL;
  t->n_int64_data = (size_t)n;
  t->int64_data = alloc(E, sizeof(int64_t) * (size_t)(n ? n : 1));
  if (t->int64_data && n)
    memcpy(t->int64_data, v, sizeof(int64_t) * (size_t)n);
  add_init(E, t);
  return name;
}

/* A float scalar initializer; returns its name. */
static char *init_scalar(exporter *E, const char *base, const char *what,
                         float x) {
  char *name = helper_name(E, base, what);
  Onnx__TensorProto *t = name ? tensor_proto(E, name, 1, NULL, 0) : NULL;
  if (!t)
    return NULL;
  t->n_float_data = 1;
  t->float_data = alloc(E, sizeof(float));
  if (t->float_data)
    t->float_data[0] = x;
  add_init(E, t);
  return name;
}

static Onnx__AttributeProto *new_attr(exporter *E, Onnx__NodeProto *n,
                                      const char *name, int type) {
  Onnx__AttributeProto *a = alloc(E, sizeof *a);
  if (!a)
    return NULL;
  onnx__attribute_proto__init(a);
  a->name = str(E, name);
  a->has_type = 1;
  a->type = (Onnx__AttributeProto__AttributeType)type;
  size_t cap = n->n_attribute; /* exact-size arrays: re-copy each time */
  Onnx__AttributeProto **arr = alloc(E, sizeof *arr * (cap + 1));
  if (!arr)
    return NULL;
  if (cap)
    memcpy(arr, n->attribute, sizeof *arr * cap);
  arr[cap] = a;
  n->attribute = arr;
  n->n_attribute = cap + 1;
  return a;
}

static void attr_int(exporter *E, Onnx__NodeProto *n, const char *name,
                     int64_t v) {
  Onnx__AttributeProto *a = new_attr(E, n, name, 2);
  if (a)
    a->has_i = 1, a->i = v;
}

static void attr_float(exporter *E, Onnx__NodeProto *n, const char *name,
                       float v) {
  Onnx__AttributeProto *a = new_attr(E, n, name, 1);
  if (a)
    a->has_f = 1, a->f = v;
}

static void attr_ints(exporter *E, Onnx__NodeProto *n, const char *name,
                      const int64_t *v, int cnt) {
  Onnx__AttributeProto *a = new_attr(E, n, name, 7);
  if (!a)
    return;
  a->n_ints = (size_t)cnt;
  a->ints = alloc(E, sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
  if (a->ints && cnt)
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
}

static void attr_str(exporter *E, Onnx__NodeProto *n, const char *name,
                     const char *v) {
  Onnx__AttributeProto *a = new_attr(E, n, name, 3);
  if (!a)
    return;
  a->has_s = 1;
  a->s.len = strlen(v);
  a->s.data = (uint8_t *)str(E, v);
}

/* ---- nodes
 * ------------------------------------------------------------------- */

/* Adds node type(in...) -> out; inputs NULL-terminated. */
static Onnx__NodeProto *node(exporter *E, const char *type, const char *out,
                             const char *const *in) {
  Onnx__NodeProto *n = alloc(E, sizeof *n);
  if (!n)
    return NULL;
  onnx__node_proto__init(n);
  n->op_type = str(E, type);
  n->name = str(E, out);
  size_t nin = 0;
  while (in[nin])
    nin++;
  n->n_input = nin;
  n->input = alloc(E, sizeof(char *) * (nin ? nin : 1));
  for (size_t k = 0; n->input && k < nin; k++)
    n->input[k] = str(E, in[k]);
  n->n_output = 1;
  n->output = alloc(E, sizeof(char *));
  if (n->output)
    n->output[0] = str(E, out);
  push(E, (void ***)&E->graph->node, &E->graph->n_node, &E->capnode, n);
  return n;
}

static const char *tname(exporter *E, int t) {
  return out_name(E, E->g->tensors[t].name);
}

static char *init_scalar(exporter *E, const char *base, const char *what,
                         float x);

/* gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))): Gelu from opset 20, else
 * this formula (Erf is opset 9). */
static void gelu(exporter *E, const char *x, const char *out) {
  if (E->opset >= 20) {
    node(E, "Gelu", out, (const char *[]){x, NULL});
    return;
  }
  const char *q = helper_name(E, out, "gelu_div");
  const char *e = helper_name(E, out, "gelu_erf");
  const char *p = helper_name(E, out, "gelu_add");
  const char *h = helper_name(E, out, "gelu_half");
  node(E, "Div", q,
       (const char *[]){x, init_scalar(E, out, "sqrt2", (float)sqrt(2.0)),
                        NULL});
  node(E, "Erf", e, (const char *[]){q, NULL});
  node(E, "Add", p, (const char *[]){e, init_scalar(E, out, "one", 1), NULL});
  node(E, "Mul", h, (const char *[]){x, p, NULL});
  node(E, "Mul", out,
       (const char *[]){h, init_scalar(E, out, "half", 0.5f), NULL});
}

/* The fused activation of IR node n as ONNX nodes from x to out. */
static void activation(exporter *E, int act, const char *x, const char *out) {
  static const char *types[] = {NULL, "Relu", "Sigmoid", "Tanh", "Gelu"};
  if (act == IR_ACT_GELU)
    gelu(E, x, out);
  else
    node(E, types[act], out, (const char *[]){x, NULL});
}

/* Where a fused node writes before its activation. */
static const char *pre_act(exporter *E, const ir_node *n, const char *out) {
  return n->a.act ? helper_name(E, out, "pre") : out;
}

static void window(exporter *E, Onnx__NodeProto *o, const ir_attrs *a,
                   int dil) {
  int64_t v[4] = {a->stride[0], a->stride[1]};
  attr_ints(E, o, "strides", v, 2);
  if (dil) {
    v[0] = a->dilation[0], v[1] = a->dilation[1];
    attr_ints(E, o, "dilations", v, 2);
  }
  /* onnxruntime rejects auto_pad with dilation: resolved pads then */
  int dilated = dil && (a->dilation[0] != 1 || a->dilation[1] != 1);
  if (a->padmode == IR_PAD_SAME && !dilated)
    attr_str(E, o, "auto_pad", "SAME_UPPER");
  else if (a->padmode == IR_PAD_VALID && !dilated)
    attr_str(E, o, "auto_pad", "VALID");
  else {
    for (int k = 0; k < 4; k++)
      v[k] = a->pad[k];
    attr_ints(E, o, "pads", v, 4);
  }
}

static void ex_conv(exporter *E, const ir_node *n, const char *out) {
  const ir_shape *w = &E->g->tensors[n->in[1]].shape;
  const char *in[4] = {tname(E, n->in[0]), tname(E, n->in[1]),
                       n->nin > 2 ? tname(E, n->in[2]) : NULL, NULL};
  const char *y = pre_act(E, n, out);
  Onnx__NodeProto *o = node(E, "Conv", y, in);
  if (!o)
    return;
  int64_t k[2] = {w->dim[2], w->dim[3]};
  attr_ints(E, o, "kernel_shape", k, 2);
  attr_int(E, o, "group", n->a.groups);
  window(E, o, &n->a, 1);
  if (n->a.act)
    activation(E, n->a.act, y, out);
}

static void ex_matmul(exporter *E, const ir_node *n, const char *out) {
  const char *a = tname(E, n->in[0]), *b = tname(E, n->in[1]);
  const char *y = pre_act(E, n, out);
  int rank2 = E->g->tensors[n->in[0]].shape.rank == 2;
  if (n->nin == 3 && rank2) /* Gemm holds the bias */
    node(E, "Gemm", y, (const char *[]){a, b, tname(E, n->in[2]), NULL});
  else if (n->nin == 3) {
    const char *mm = helper_name(E, out, "mm");
    node(E, "MatMul", mm, (const char *[]){a, b, NULL});
    node(E, "Add", y, (const char *[]){mm, tname(E, n->in[2]), NULL});
  } else
    node(E, "MatMul", y, (const char *[]){a, b, NULL});
  if (n->a.act)
    activation(E, n->a.act, y, out);
}

/* attention: MatMul, Mul by s (where given), Add b (where given), Softmax
 * over the last axis, IsNaN and Where (guard=1), MatMul (ONNX's own Attention
 * is opset 23 and takes k untransposed). */
/* Operand i (q, k, v) of an attention node in the row layout as the
 * default layout reads it: its heads' columns sliced, split into heads and
 * transposed to [.., H, S, D] (k: [.., H, D, T]) for rows [.., S, C] of
 * any rank (seqfirst [S,B,C]: [B,H,S,D]); 0 in the shapes keeps a
 * dimension as it is (dynamic axes). */
static const char *ex_att_operand(exporter *E, const ir_node *n, int i,
                                  const char *out) {
  static const char *what[3][3] = {{"q_cols", "q_heads", "q"},
                                   {"k_cols", "k_heads", "k"},
                                   {"v_cols", "v_heads", "v"}};
  const ir_attrs *a = &n->a;
  int r = E->g->tensors[n->in[i]].shape.rank;
  int64_t w = a->list2[i == 2], sf = a->axis;
  int64_t st = a->list[i], en = a->list[i] + a->groups * w, ax = r - 1;
  const char *cols = helper_name(E, out, what[i][0]);
  node(E, "Slice", cols,
       (const char *[]){tname(E, n->in[i]),
                        init_ints(E, cols, "starts", &st, 1),
                        init_ints(E, cols, "ends", &en, 1),
                        init_ints(E, cols, "axes", &ax, 1), NULL});
  int64_t shp[IR_MAX_RANK + 1] = {0}, perm[IR_MAX_RANK + 1];
  shp[r - 1] = a->groups, shp[r] = w;
  const char *heads = helper_name(E, out, what[i][1]);
  node(E, "Reshape", heads,
       (const char *[]){cols, init_ints(E, heads, "shape", shp, r + 1), NULL});
  static const int64_t sfp[2][4] = {{1, 2, 0, 3}, {1, 2, 3, 0}};
  if (sf)
    memcpy(perm, sfp[i == 1], sizeof sfp[0]);
  else
    ir_att_rows_perm(r, i == 1, perm);
  const char *t = helper_name(E, out, what[i][2]);
  Onnx__NodeProto *o = node(E, "Transpose", t, (const char *[]){heads, NULL});
  if (o)
    attr_ints(E, o, "perm", perm, r + 1);
  return t;
}

static void ex_attention(exporter *E, const ir_node *n, const char *out) {
  int rows = n->a.groups > 0, r = E->g->tensors[n->in[0]].shape.rank;
  const char *opnd[3], *res = out;
  for (int i = 0; i < 3; i++)
    opnd[i] = rows ? ex_att_operand(E, n, i, out) : tname(E, n->in[i]);
  if (rows)
    out = helper_name(E, res, "heads");
  const char *sc = helper_name(E, out, "scores");
  node(E, "MatMul", sc, (const char *[]){opnd[0], opnd[1], NULL});
  if (n->nin >= 4) {
    const char *scaled = helper_name(E, out, "scaled");
    node(E, "Mul", scaled, (const char *[]){sc, tname(E, n->in[3]), NULL});
    sc = scaled;
  }
  if (n->nin == 5) {
    const char *biased = helper_name(E, out, "biased");
    node(E, "Add", biased, (const char *[]){sc, tname(E, n->in[4]), NULL});
    sc = biased;
  }
  const char *pr = helper_name(E, out, "probs");
  Onnx__NodeProto *o = node(E, "Softmax", pr, (const char *[]){sc, NULL});
  if (o) /* the heads' scores have rank r + 1 */
    attr_int(E, o, "axis", rows ? r : r - 1);
  if (n->a.keepdims) { /* guard: NaN probabilities (rows all -inf) 0 */
    const char *nan = helper_name(E, out, "nan");
    const char *kept = helper_name(E, out, "guarded");
    node(E, "IsNaN", nan, (const char *[]){pr, NULL});
    node(E, "Where", kept,
         (const char *[]){nan, init_scalar(E, out, "zero", 0.0f), pr, NULL});
    pr = kept;
  }
  node(E, "MatMul", out, (const char *[]){pr, opnd[2], NULL});
  if (!rows)
    return;
  const char *bshe = helper_name(E, res, "bshe"); /* [.., S, H, E] */
  int64_t perm[IR_MAX_RANK + 1], shp[IR_MAX_RANK] = {0};
  ir_att_rows_perm(r, 0, perm);
  o = node(E, "Transpose", bshe, (const char *[]){out, NULL});
  if (o)
    attr_ints(E, o, "perm", perm, r + 1);
  shp[r - 1] = n->a.groups * n->a.list2[1];
  node(E, "Reshape", res,
       (const char *[]){bshe, init_ints(E, res, "shape", shp, r), NULL});
}

static void ex_pool(exporter *E, const ir_node *n, const char *out,
                    const char *type) {
  Onnx__NodeProto *o =
      node(E, type, out, (const char *[]){tname(E, n->in[0]), NULL});
  if (!o)
    return;
  int64_t k[2] = {n->a.kernel[0], n->a.kernel[1]};
  attr_ints(E, o, "kernel_shape", k, 2);
  window(E, o, &n->a, 0);
  if (n->op == IR_OP_AVGPOOL)
    attr_int(E, o, "count_include_pad", n->a.count_include_pad);
}

/* A const_* node: a Constant with its values computed here. */
static void ex_const(exporter *E, const ir_node *n, const char *out) {
  const ir_shape *s = &E->g->tensors[n->out[0]].shape;
  int64_t cnt = ir_shape_numel(s);
  Onnx__TensorProto *t = tensor_proto(E, out, 1, s->dim, s->rank);
  Onnx__NodeProto *o = node(E, "Constant", out, (const char *[]){NULL});
  Onnx__AttributeProto *a = o ? new_attr(E, o, "value", 4) : NULL;
  float *v = alloc(E, sizeof(float) * (size_t)cnt);
  if (!t || !a || !v)
    return;
  for (int64_t i = 0; i < cnt; i++) {
    int64_t c = i, kw = 1, kh = 1, in = 1, o4;
    if (n->op == IR_OP_CONST_IMM) {
      v[i] = i / s->dim[1] == i % s->dim[1];
    } else if (n->op == IR_OP_CONST_ICONV) {
      kw = s->dim[3], kh = s->dim[2], in = s->dim[1];
      int64_t x = c % kw, y = (c / kw) % kh, ic = (c / kw / kh) % in;
      o4 = c / kw / kh / in;
      v[i] = x == kw / 2 && y == kh / 2 && ic == o4 % in;
    } else
      v[i] = 1; /* const_ones, const_pool */
  }
  t->n_float_data = (size_t)cnt;
  t->float_data = v;
  a->t = t;
}

static void ex_simple(exporter *E, const ir_node *n, const char *out,
                      const char *type) {
  const char *in[IR_MAX_IN + 1];
  for (int k = 0; k < n->nin; k++)
    in[k] = tname(E, n->in[k]);
  in[n->nin] = NULL;
  Onnx__NodeProto *o = node(E, type, out, in);
  if (!o)
    return;
  if (n->op == IR_OP_CONCAT || n->op == IR_OP_SOFTMAX || n->op == IR_OP_GATHER)
    attr_int(E, o, "axis", n->a.axis);
  else if (n->op == IR_OP_CAST)
    attr_int(E, o, "to", onnx_dtype(n->a.groups));
  else if (n->op == IR_OP_TRANSPOSE)
    attr_ints(E, o, "perm", n->a.list, n->a.nlist);
  else if (n->op == IR_OP_BATCHNORM)
    attr_float(E, o, "epsilon", n->a.eps);
}

/* An ew.def operator: its ONNX node (ew.def's onnx column), gelu's own
 * nodes, or an error for a row with no ONNX equivalent. */
static void ex_unary(exporter *E, const ir_node *n, const char *x,
                     const char *out) {
  const ir_ew *w = ir_ew_of(n->op);
  if (w->onnx) {
    ex_simple(E, n, out, w->onnx);
  } else if (n->op == IR_OP_GELU) {
    gelu(E, x, out);
  } else {
    base_diag_set(E->d, BASE_ERR_PARAM, 0, 0,
                  "%s at line %d has no ONNX equivalent", ir_op(n->op)->name,
                  n->line);
    E->oom = -1;
  }
}

/* A layernorm rms=1 (RMSNorm) as primitives, opset 13 and up: x2 =
 * Mul(x, x), m = ReduceMean(x2) over axis.., Sqrt(m + eps), x * 1/that,
 * then * gamma + beta where given (xb, a moved bias, added to x first). */
static void rmsnorm(exporter *E, const ir_node *n, const char *x,
                    const char *out) {
  const ir_shape *s = &E->g->tensors[n->in[0]].shape;
  int64_t axes[IR_MAX_RANK];
  int na = 0;
  for (int k = n->a.axis; k < s->rank; k++)
    axes[na++] = k;
  if (n->nin > 3) {
    const char *xs = helper_name(E, out, "rms_xb");
    node(E, "Add", xs, (const char *[]){x, tname(E, n->in[3]), NULL});
    x = xs;
  }
  const char *sq = helper_name(E, out, "rms_sq");
  const char *m = helper_name(E, out, "rms_mean");
  const char *v = helper_name(E, out, "rms_var");
  const char *r = helper_name(E, out, "rms_root");
  const char *inv = helper_name(E, out, "rms_inv");
  int ng = n->nin > 1, nb = n->nin > 2;
  const char *y = ng || nb ? helper_name(E, out, "rms_norm") : out;
  const char *yg = ng && nb ? helper_name(E, out, "rms_scaled") : out;
  node(E, "Mul", sq, (const char *[]){x, x, NULL});
  Onnx__NodeProto *o =
      node(E, "ReduceMean", m,
           (const char *[]){
               sq, E->opset >= 18 ? init_ints(E, out, "axes", axes, na) : NULL,
               NULL});
  if (o && E->opset < 18)
    attr_ints(E, o, "axes", axes, na);
  if (o)
    attr_int(E, o, "keepdims", 1);
  node(E, "Add", v,
       (const char *[]){m, init_scalar(E, out, "eps", n->a.eps), NULL});
  node(E, "Sqrt", r, (const char *[]){v, NULL});
  node(E, "Reciprocal", inv, (const char *[]){r, NULL});
  node(E, "Mul", y, (const char *[]){x, inv, NULL});
  if (ng)
    node(E, "Mul", yg, (const char *[]){y, tname(E, n->in[1]), NULL});
  if (nb)
    node(E, "Add", out,
         (const char *[]){ng ? yg : y, tname(E, n->in[2]), NULL});
}

static void ex_node(exporter *E, const ir_node *n) {
  const char *out = tname(E, n->out[0]);
  const char *x = n->nin ? tname(E, n->in[0]) : NULL;
  const ir_attrs *a = &n->a;
  Onnx__NodeProto *o;
  switch (n->op) {
  case IR_OP_CONV2D: ex_conv(E, n, out); break;
  case IR_OP_MATMUL: ex_matmul(E, n, out); break;
  case IR_OP_ATTENTION: ex_attention(E, n, out); break;
  case IR_OP_EWADD: ex_simple(E, n, out, "Add"); break;
  case IR_OP_EWSUB: ex_simple(E, n, out, "Sub"); break;
  case IR_OP_EWMUL:
  case IR_OP_SMUL: ex_simple(E, n, out, "Mul"); break;
  case IR_OP_EWDIV: ex_simple(E, n, out, "Div"); break;
#include "../ir/ew_cases.h"
    ex_unary(E, n, x, out);
    break;
  case IR_OP_CONCAT: ex_simple(E, n, out, "Concat"); break;
  case IR_OP_GATHER: ex_simple(E, n, out, "Gather"); break;
  case IR_OP_WHERE: ex_simple(E, n, out, "Where"); break;
  case IR_OP_EQUAL: ex_simple(E, n, out, "Equal"); break;
  case IR_OP_NOT: ex_simple(E, n, out, "Not"); break;
  case IR_OP_CAST: ex_simple(E, n, out, "Cast"); break;
  case IR_OP_TRANSPOSE: ex_simple(E, n, out, "Transpose"); break;
  case IR_OP_SOFTMAX: ex_simple(E, n, out, "Softmax"); break;
  case IR_OP_BATCHNORM: ex_simple(E, n, out, "BatchNormalization"); break;
  case IR_OP_GLOBAL_AVGPOOL: ex_simple(E, n, out, "GlobalAveragePool"); break;
  case IR_OP_AVGPOOL: ex_pool(E, n, out, "AveragePool"); break;
  case IR_OP_MAXPOOL: ex_pool(E, n, out, "MaxPool"); break;
  case IR_OP_CLIP:
    node(E, "Clip", out,
         (const char *[]){x, init_scalar(E, out, "min", a->lo),
                          init_scalar(E, out, "max", a->hi), NULL});
    break;
  case IR_OP_RESHAPE: {
    int64_t t[IR_MAX_LIST];
    memcpy(t, a->list, sizeof(int64_t) * (size_t)a->nlist);
    if (E->dyn.np) /* 0 and -1 where a kept dynamic dimension lives */
      ox_dyn_reshape(&E->dyn, E->g, n, t, NULL);
    node(E, "Reshape", out,
         (const char *[]){x, init_ints(E, out, "shape", t, a->nlist), NULL});
    break;
  }
  case IR_OP_SPLIT: {
    o = node(E, "Split", out,
             (const char *[]){x, init_ints(E, out, "split", a->list, a->nlist),
                              NULL});
    if (!o)
      break;
    o->n_output = (size_t)n->nout;
    o->output = alloc(E, sizeof(char *) * (size_t)n->nout);
    for (int k = 0; o->output && k < n->nout; k++)
      o->output[k] = str(E, tname(E, n->out[k]));
    attr_int(E, o, "axis", a->axis);
    break;
  }
  case IR_OP_REDUCE_MEAN: /* axes: an input from opset 18, else attribute */
    o = node(E, "ReduceMean", out,
             (const char *[]){x,
                              E->opset >= 18
                                  ? init_ints(E, out, "axes", a->list, a->nlist)
                                  : NULL,
                              NULL});
    if (o && E->opset < 18)
      attr_ints(E, o, "axes", a->list, a->nlist);
    if (o)
      attr_int(E, o, "keepdims", a->keepdims);
    break;
  case IR_OP_LAYERNORM: {
    if (ir_ln_rms(a)) {
      rmsnorm(E, n, x, out);
      break;
    }
    const ir_shape *s = &E->g->tensors[n->in[0]].shape;
    const char *gamma = n->nin > 1 ? tname(E, n->in[1]) : NULL;
    if (!gamma) { /* ONNX needs a scale: ones */
      int64_t cnt = 1;
      for (int k = a->axis; k < s->rank; k++)
        cnt *= s->dim[k];
      char *nm = helper_name(E, out, "gamma");
      Onnx__TensorProto *t =
          nm ? tensor_proto(E, nm, 1, s->dim + a->axis, s->rank - a->axis)
             : NULL;
      float *v = alloc(E, sizeof(float) * (size_t)cnt);
      if (t && v) {
        for (int64_t k = 0; k < cnt; k++)
          v[k] = 1;
        t->n_float_data = (size_t)cnt;
        t->float_data = v;
        add_init(E, t);
      }
      gamma = nm;
    }
    o = node(E, "LayerNormalization", out,
             (const char *[]){x, gamma, n->nin > 2 ? tname(E, n->in[2]) : NULL,
                              NULL});
    if (o)
      attr_int(E, o, "axis", a->axis), attr_float(E, o, "epsilon", a->eps);
    break;
  }
  case IR_OP_PAD:
    node(E, "Pad", out,
         (const char *[]){x, init_ints(E, out, "pads", a->list, a->nlist),
                          init_scalar(E, out, "value", a->value), NULL});
    break;
  case IR_OP_SLICE: {
    int64_t axes[IR_MAX_RANK], ends[IR_MAX_RANK];
    const ir_shape *xs = &E->g->tensors[n->in[0]].shape;
    for (int k = 0; k < a->nlist; k++) {
      axes[k] = k, ends[k] = a->list2[k];
      if (ox_dyn_has(&E->dyn, n->in[0], k) && k < xs->rank &&
          ends[k] >= xs->dim[k])
        ends[k] = INT64_MAX; /* the whole of a dynamic dimension */
    }
    node(E, "Slice", out,
         (const char *[]){x, init_ints(E, out, "starts", a->list, a->nlist),
                          init_ints(E, out, "ends", ends, a->nlist2),
                          init_ints(E, out, "axes", axes, a->nlist), NULL});
    break;
  }
  case IR_OP_ENLARGE: { /* zero padding of the kernel, centred */
    const ir_shape *w = &E->g->tensors[n->in[0]].shape;
    int64_t ph = a->kernel[0] - w->dim[2], pw = a->kernel[1] - w->dim[3];
    int64_t pads[8] = {0, 0, ph / 2, pw / 2, 0, 0, ph - ph / 2, pw - pw / 2};
    node(E, "Pad", out,
         (const char *[]){x, init_ints(E, out, "pads", pads, 8), NULL});
    break;
  }
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL: ex_const(E, n, out); break;
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED: /* never reached: ox_export_file_ex unfuses first */
    base_diag_set(E->d, BASE_ERR_INTERNAL, 0, 0,
                  "%s node at line %d reached the ONNX writer",
                  ir_op(n->op)->name, n->line);
    E->oom = -1;
    break;
  }
}

/* ---- graph
 * -------------------------------------------------------------------- */

/* The dim_param of dimension k of graph input or output t when it carries
 * a kept dynamic dimension: the original's name there, else the params'
 * names ("batch*seq"); NULL when fixed. */
static const char *dim_param(exporter *E, const ir_tensor *t, int k) {
  int ti = (int)(t - E->g->tensors);
  if (!ox_dyn_has(&E->dyn, ti, k))
    return NULL;
  for (int i = 0; i < E->dyn.nin; i++)
    if (E->dyn.in[i].tensor == ti && E->dyn.in[i].axis == k)
      return E->dyn.name[E->dyn.in[i].param];
  for (int i = 0; i < E->nout_dims; i++)
    if (E->out_dims[i].tensor == ti && E->out_dims[i].axis == k)
      return E->out_names[E->out_dims[i].param];
  char buf[256];
  size_t n = 0;
  buf[0] = '\0';
  for (int p = 0; p < E->dyn.np; p++)
    for (int e = E->dyn.kept[p] ? E->dyn.e[p][(size_t)ti * IR_MAX_RANK + k] : 0;
         e > 0 && n < sizeof buf; e--)
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? "*" : "",
                            E->dyn.name[p]);
  return str(E, buf);
}

static Onnx__ValueInfoProto *value_info(exporter *E, const ir_tensor *t) {
  Onnx__ValueInfoProto *v = alloc(E, sizeof *v);
  Onnx__TypeProto *ty = alloc(E, sizeof *ty);
  Onnx__TypeProto__Tensor *tt = alloc(E, sizeof *tt);
  Onnx__TensorShapeProto *sh = alloc(E, sizeof *sh);
  Onnx__TensorShapeProto__Dimension **dims =
      alloc(E, sizeof *dims * (size_t)(t->shape.rank ? t->shape.rank : 1));
  if (!v || !ty || !tt || !sh || !dims)
    return NULL;
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(ty);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sh);
  for (int k = 0; k < t->shape.rank; k++) {
    dims[k] = alloc(E, sizeof **dims);
    if (!dims[k])
      return NULL;
    onnx__tensor_shape_proto__dimension__init(dims[k]);
    const char *p = dim_param(E, t, k);
    if (p) {
      dims[k]->value_case =
          ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dims[k]->dim_param = (char *)p;
      continue;
    }
    dims[k]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dims[k]->dim_value = t->shape.dim[k];
  }
  sh->n_dim = (size_t)t->shape.rank;
  sh->dim = dims;
  tt->has_elem_type = 1;
  tt->elem_type = onnx_dtype(t->dtype);
  tt->shape = sh;
  ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  ty->tensor_type = tt;
  v->name = str(E, out_name(E, t->name));
  v->type = ty;
  return v;
}

/* An initializer named `name` of type dt holding v (float32 values held as
 * they are, not copied; int64, bool and half values converted). */
static void init_floats(exporter *E, const char *name, const ir_shape *s,
                        const float *v, int32_t dt) {
  Onnx__TensorProto *p = tensor_proto(E, name, onnx_dtype(dt), s->dim, s->rank);
  size_t n = (size_t)ir_shape_numel(s);
  if (p && dt == IR_DT_F32) {
    p->n_float_data = n;
    p->float_data = (float *)v;
  } else if (p && ir_dtype_is_half((ir_dtype)dt) &&
             (p->raw_data.data = alloc(E, 2 * n + 1))) {
    p->has_raw_data = 1; /* 2 bytes a value, little-endian */
    p->raw_data.len = 2 * n;
    for (size_t k = 0; k < n; k++) {
      uint16_t h = dt == IR_DT_F16 ? ir_f16_bits(v[k]) : ir_bf16_bits(v[k]);
      p->raw_data.data[2 * k] = (uint8_t)h;
      p->raw_data.data[2 * k + 1] = (uint8_t)(h >> 8);
    }
  } else if (p && dt == IR_DT_I64 && (p->int64_data = alloc(E, 8 * n))) {
    p->n_int64_data = n;
    for (size_t k = 0; k < n; k++)
      p->int64_data[k] = (int64_t)v[k];
  } else if (p && (p->int32_data = alloc(E, 4 * n))) {
    p->n_int32_data = n;
    for (size_t k = 0; k < n; k++)
      p->int32_data[k] = v[k] != 0.0f;
  }
  add_init(E, p);
}

static void add_io(exporter *E, size_t *cap_in, size_t *cap_out) {
  const ir_graph *g = E->g;
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind == IR_T_VALUE) {
      if (E->known[i] && E->consumed[i]) /* folded preprocessing */
        init_floats(E, out_name(E, t->name), &t->shape, E->known[i], t->dtype);
      continue;
    }
    if (!E->consumed[i] && E->known[i]) /* only feeds folded nodes */
      continue;
    if (t->data) { /* a weight with values: an initializer */
      init_floats(E, out_name(E, t->name), &t->shape, t->data, t->dtype);
      continue;
    }
    Onnx__ValueInfoProto *v = value_info(E, t);
    if (v && t->kind == IR_T_WEIGHT)
      v->doc_string = str(E, OX_WEIGHT_DOC);
    if (v)
      push(E, (void ***)&E->graph->input, &E->graph->n_input, cap_in, v);
  }
  for (int i = 0; i < g->noutputs; i++) {
    Onnx__ValueInfoProto *v = value_info(E, &g->tensors[g->outputs[i]]);
    if (v)
      push(E, (void ***)&E->graph->output, &E->graph->n_output, cap_out, v);
  }
}

/* Counts the original's interface names the model written has as graph
 * inputs or outputs into r. */
static void count_same_io(const exporter *E, ox_export_report *r) {
  const Onnx__GraphProto *gp = E->graph;
  r->io_total = E->nlike_io;
  for (int i = 0; i < E->nlike_io; i++) {
    int hit = 0;
    for (size_t k = 0; k < gp->n_input && !hit; k++)
      hit = !strcmp(gp->input[k]->name, E->like_io[i]);
    for (size_t k = 0; k < gp->n_output && !hit; k++)
      hit = !strcmp(gp->output[k]->name, E->like_io[i]);
    r->io_same += hit;
  }
}

/* ---- weight preprocessing ------------------------------------------------ */

/* Computes the weight-only nodes whose inputs' values are known (weights
 * with values, constants, earlier folded nodes) on the reference kernels;
 * marks what is read by the nodes still written. Counts into r. */
static base_status fold(exporter *E, ox_export_report *r) {
  const ir_graph *g = E->g;
  unsigned char *wo = base_calloc((size_t)g->nnodes + 1, 1);
  E->known = base_calloc((size_t)g->ntensors + 1, sizeof *E->known);
  E->folded = base_calloc((size_t)g->nnodes + 1, 1);
  E->consumed = base_calloc((size_t)g->ntensors + 1, 1);
  if (!wo || !E->known || !E->folded || !E->consumed) {
    free(wo);
    return base_diag_set(E->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  ir_weight_only(g, wo);
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind == IR_T_WEIGHT && g->tensors[i].data)
      E->known[i] = (float *)g->tensors[i].data;
  base_status st = BASE_OK;
  for (int i = 0; i < g->nnodes && !st; i++) {
    const ir_node *n = &g->nodes[i];
    int ok = wo[i];
    for (int k = 0; ok && k < n->nin; k++)
      ok = E->known[n->in[k]] != NULL;
    if (!ok) {
      if (wo[i] && r)
        r->at_load++;
      continue;
    }
    ex_arg in[IR_MAX_IN], out[IR_MAX_LIST];
    for (int k = 0; k < n->nin; k++) {
      in[k].shape = g->tensors[n->in[k]].shape;
      in[k].data = E->known[n->in[k]];
    }
    for (int k = 0; k < n->nout && !st; k++) {
      const ir_tensor *t = &g->tensors[n->out[k]];
      out[k].shape = t->shape;
      out[k].data = base_arena_alloc(
          E->a, sizeof(float) * (size_t)ir_shape_numel(&t->shape) + 1);
      if (!out[k].data)
        st = base_diag_set(E->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      E->known[n->out[k]] = out[k].data;
    }
    if (!st && (st = ex_kernel_of(n->op)(n, in, out)) != BASE_OK)
      st = base_diag_set(E->d, st, 0, 0, "computing %s (weight preprocessing)",
                         ir_op(n->op)->name);
    E->folded[i] = 1;
    if (r)
      r->folded++;
  }
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; !E->folded[i] && k < g->nodes[i].nin; k++)
      E->consumed[g->nodes[i].in[k]] = 1;
  for (int i = 0; i < g->noutputs; i++)
    E->consumed[g->outputs[i]] = 1;
  free(wo);
  return st;
}

/* ---- the original model: names and opset ---------------------------------
 */

/* The importer's IR name for an ONNX name (ir_name_for in import.c, without
 * its suffix for names taken twice). */
static void ir_name_of(const char *onnx, char *buf, size_t n) {
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
  if (!onnx[0])
    snprintf(buf, n, "t_empty");
}

static void add_rename(exporter *E, const char *onnx, int *cap) {
  char ir[512];
  ir_name_of(onnx, ir, sizeof ir);
  if (!strcmp(ir, onnx) || ir_find_tensor(E->g, ir) < 0)
    return;
  for (int i = 0; i < E->nren; i++)
    if (!strcmp(E->ren[i].ir, ir)) {
      E->ren[i].onnx = NULL; /* two originals for one name: keep ours */
      return;
    }
  if (E->nren == *cap) {
    int nc = *cap ? 2 * *cap : 64;
    rename_t *nr = alloc(E, sizeof *nr * (size_t)nc);
    if (!nr)
      return;
    if (E->nren)
      memcpy(nr, E->ren, sizeof *nr * (size_t)E->nren);
    E->ren = nr;
    *cap = nc;
  }
  E->ren[E->nren].ir = str(E, ir);
  E->ren[E->nren++].onnx = str(E, onnx);
}

/* Reads the original model: its opset (*opset) and its interface and
 * initializer names into E->ren. */
/* The dim_param of dimension k of graph input or output vi, or NULL. */
static const char *param_of(const Onnx__ValueInfoProto *vi, size_t k) {
  const Onnx__TypeProto *t = vi->type;
  if (!t || !t->tensor_type || !t->tensor_type->shape ||
      k >= t->tensor_type->shape->n_dim)
    return NULL;
  const Onnx__TensorShapeProto__Dimension *dm = t->tensor_type->shape->dim[k];
  return dm->value_case ==
                     ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 dm->dim_param && dm->dim_param[0]
             ? dm->dim_param
             : NULL;
}

/* The IR tensor of the original's graph input or output named onnx, or
 * -1. */
static int ir_tensor_of(const exporter *E, const char *onnx) {
  char ir[512];
  ir_name_of(onnx ? onnx : "", ir, sizeof ir);
  return ir_find_tensor(E->g, ir);
}

/* Collects the original's named dimensions: its graph inputs' into
 * E->dyn (a param of two sizes in the graph is fixed), its outputs' names
 * into E->out_dims. */
static void like_dims(exporter *E, const Onnx__GraphProto *g) {
  ox_dyn *y = &E->dyn;
  size_t cap = 0;
  for (size_t i = 0; i < g->n_input; i++)
    cap += g->input[i]->type && g->input[i]->type->tensor_type &&
                   g->input[i]->type->tensor_type->shape
               ? g->input[i]->type->tensor_type->shape->n_dim
               : 0;
  y->in = base_calloc(cap + 1, sizeof *y->in);
  for (size_t i = 0; y->in && i < g->n_input; i++) {
    int t = ir_tensor_of(E, g->input[i]->name);
    if (t < 0 || E->g->tensors[t].kind != IR_T_INPUT)
      continue;
    const ir_shape *s = &E->g->tensors[t].shape;
    for (int k = 0; k < s->rank; k++) {
      const char *p = param_of(g->input[i], (size_t)k);
      int q = 0;
      while (p && q < y->np && strcmp(y->name[q], p))
        q++;
      if (!p || q == OX_DYN_MAX)
        continue;
      if (q == y->np) {
        y->name[q] = str(E, p), y->val[q] = s->dim[k], y->kept[q] = 1;
        y->np++;
      } else if (y->val[q] != s->dim[k] && y->kept[q]) {
        y->kept[q] = 0;
        snprintf(y->why[q], sizeof y->why[q],
                 "it has sizes %lld and %lld in this graph",
                 (long long)y->val[q], (long long)s->dim[k]);
      }
      y->in[y->nin++] = (ox_dyn_in){t, k, q};
    }
  }
  size_t no = 0;
  for (size_t i = 0; i < g->n_output; i++)
    for (size_t k = 0; k < IR_MAX_RANK; k++)
      no += param_of(g->output[i], k) != NULL;
  E->out_dims = alloc(E, sizeof *E->out_dims * (no + 1));
  E->out_names = alloc(E, sizeof *E->out_names * (no + 1));
  for (size_t i = 0; E->out_dims && E->out_names && i < g->n_output; i++)
    for (int k = 0; k < IR_MAX_RANK; k++) {
      const char *p = param_of(g->output[i], (size_t)k);
      int t = p ? ir_tensor_of(E, g->output[i]->name) : -1;
      if (t < 0)
        continue;
      E->out_names[E->nout_dims] = str(E, p);
      E->out_dims[E->nout_dims] = (ox_dyn_in){t, k, E->nout_dims};
      E->nout_dims++;
    }
}

static base_status read_like(exporter *E, const char *path, int *opset,
                             ox_export_report *r) {
  size_t len;
  char *data = base_read_file(path, &len, E->d);
  if (!data)
    return E->d ? E->d->code : BASE_ERR_IO;
  int oom = 0; /* protobuf-c allocates through base_malloc (base.h) */
  ProtobufCAllocator pa = {base_hook_alloc, base_hook_free, &oom};
  Onnx__ModelProto *m =
      onnx__model_proto__unpack(&pa, len, (const uint8_t *)data);
  free(data);
  if (!m && oom)
    return base_diag_set(E->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!m || !m->graph) {
    if (m)
      onnx__model_proto__free_unpacked(m, &pa);
    base_diag_set(E->d, BASE_ERR_SYNTAX, 0, 0, "not an ONNX model");
    if (E->d)
      snprintf(E->d->file, sizeof E->d->file, "%s", path);
    return BASE_ERR_SYNTAX;
  }
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))
      *opset = (int)o->version;
  }
  int cap = 0;
  const Onnx__GraphProto *g = m->graph;
  like_dims(E, g);
  E->like_io = alloc(E, sizeof *E->like_io * (g->n_input + g->n_output + 1));
  for (size_t i = 0; E->like_io && i < g->n_input + g->n_output; i++) {
    const char *nm =
        i < g->n_input ? g->input[i]->name : g->output[i - g->n_input]->name;
    int init = 0;
    for (size_t k = 0; i < g->n_input && k < g->n_initializer && !init; k++)
      init =
          g->initializer[k]->name && nm && !strcmp(g->initializer[k]->name, nm);
    if (nm && !init)
      E->like_io[E->nlike_io++] = str(E, nm);
  }
  for (size_t i = 0; i < g->n_input; i++)
    add_rename(E, g->input[i]->name, &cap);
  for (size_t i = 0; i < g->n_output; i++)
    add_rename(E, g->output[i]->name, &cap);
  for (size_t i = 0; i < g->n_initializer; i++)
    add_rename(E, g->initializer[i]->name, &cap);
  int k = 0;
  for (int i = 0; i < E->nren; i++)
    if (E->ren[i].onnx)
      E->ren[k++] = E->ren[i];
  E->nren = k;
  if (r)
    r->renamed = k;
  if (E->nren)
    qsort(E->ren, (size_t)E->nren, sizeof *E->ren, ren_cmp);
  onnx__model_proto__free_unpacked(m, &pa);
  return E->oom ? base_diag_set(E->d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                : BASE_OK;
}

/* The dynamic dimensions kept and fixed (with why) into r. */
static void dyn_report(const ox_dyn *y, ox_export_report *r) {
  size_t nk = 0, nf = 0;
  for (int p = 0; p < y->np; p++) {
    if (y->kept[p])
      nk += (size_t)snprintf(r->kept_dims + nk, sizeof r->kept_dims - nk,
                             "%s%s", nk ? ", " : "", y->name[p]);
    else
      nf += (size_t)snprintf(r->fixed_dims + nf, sizeof r->fixed_dims - nf,
                             "%s%s = %lld: %s", nf ? "; " : "", y->name[p],
                             (long long)y->val[p], y->why[p]);
    nk = nk < sizeof r->kept_dims ? nk : sizeof r->kept_dims - 1;
    nf = nf < sizeof r->fixed_dims ? nf : sizeof r->fixed_dims - 1;
  }
}

/* The lowest opset that writes every written node of g as today, and why
 * (an operator) when above 13. */
static int needed_opset(const exporter *E, const char **why) {
  int need = 13;
  *why = "Split's sizes and Softmax's axis as inputs/semantics of opset 13";
  for (int i = 0; i < E->g->nnodes; i++)
    if (!E->folded[i] && E->g->nodes[i].op == IR_OP_LAYERNORM &&
        !ir_ln_rms(&E->g->nodes[i].a) && need < 17) {
      need = 17;
      *why = "layernorm needs LayerNormalization (opset 17)";
    }
  return need;
}

base_status ox_export_file_ex(const ir_graph *g, const char *path,
                              const ox_export_options *o, ox_export_report *r,
                              base_diag *d) {
  exporter E;
  memset(&E, 0, sizeof E);
  /* ONNX has no fused operator nor a lowered form: a fused node is
   * written as its body, a residual as an Add, a lower-stage move as plain
   * operators, an se or concat_shuffle node as the operators it stands for
   * (ir_graph_unfuse) */
  ir_graph *unfused = NULL;
  for (int i = 0; i < g->nnodes && !unfused; i++)
    if (ir_node_unfuses(&g->nodes[i]) && !(unfused = ir_graph_unfuse(g, d)))
      return d ? d->code : BASE_ERR_NOMEM;
  if (unfused)
    g = unfused;
  E.g = g;
  E.d = d;
  E.a = base_arena_new();
  if (r)
    memset(r, 0, sizeof *r);
  Onnx__ModelProto m;
  Onnx__OperatorSetIdProto opset, *opsets[1] = {&opset};
  onnx__model_proto__init(&m);
  onnx__operator_set_id_proto__init(&opset);
  base_status st =
      E.a ? BASE_OK : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  int like_opset = 0;
  if (!st && o && o->like)
    st = read_like(&E, o->like, &like_opset, r);
  if (!st && (!o || !o->keep_preprocessing))
    st = fold(&E, r);
  else if (!st) {
    E.known = base_calloc((size_t)g->ntensors + 1, sizeof *E.known);
    E.folded = base_calloc((size_t)g->nnodes + 1, 1);
    E.consumed = base_calloc((size_t)g->ntensors + 1, 1);
    if (!E.known || !E.folded || !E.consumed)
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    for (int i = 0; !st && i < g->ntensors; i++)
      E.consumed[i] = 1;
  }
  if (!st && E.dyn.np && ox_dyn_solve(&E.dyn, g, E.folded))
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (r)
    dyn_report(&E.dyn, r);
  const char *why = "";
  int need = st ? 13 : needed_opset(&E, &why);
  E.opset = like_opset ? like_opset : OX_DEFAULT_OPSET;
  if (E.opset < need)
    E.opset = need;
  if (r) {
    r->opset = E.opset;
    r->like_opset = like_opset;
    snprintf(r->opset_why, sizeof r->opset_why, "%s",
             like_opset && E.opset > like_opset ? why : "");
  }
  opset.domain = "";
  opset.has_version = 1;
  opset.version = E.opset;
  m.has_ir_version = 1;
  m.ir_version = E.opset >= 21 ? 10 : E.opset >= 19 ? 9 : 8;
  m.producer_name = "superopt";
  m.n_opset_import = 1;
  m.opset_import = opsets;
  E.graph = !st ? alloc(&E, sizeof *E.graph) : NULL;
  if (E.graph) {
    onnx__graph_proto__init(E.graph);
    E.graph->name = str(&E, g->name && g->name[0] ? g->name : "graph");
    m.graph = E.graph;
    size_t ci = 0, co = 0;
    add_io(&E, &ci, &co);
    for (int i = 0; i < g->nnodes && E.oom >= 0; i++)
      if (!E.folded[i])
        ex_node(&E, &g->nodes[i]);
    if (r && !E.oom)
      count_same_io(&E, r);
  }
  if (st)
    ;
  else if (!E.graph || E.oom > 0)
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  else if (E.oom < 0)
    st = d ? d->code : BASE_ERR_INTERNAL;
  if (!st) {
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = base_malloc(len ? len : 1);
    if (!buf)
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    else {
      onnx__model_proto__pack(&m, buf);
      st = base_write_atomic(path, (const char *)buf, len, d);
      free(buf);
    }
  }
  free(E.known);
  free(E.folded);
  free(E.consumed);
  ox_dyn_free(&E.dyn);
  base_arena_free(E.a);
  ir_graph_free(unfused);
  return st;
}

base_status ox_export_file(const ir_graph *g, const char *path, base_diag *d) {
  return ox_export_file_ex(g, path, NULL, NULL, d);
}
