/* build.c: TASO term DAGs -> ir_rules.
 *
 * A rule arrives as two lists of root terms over TASO's vocabulary. Inputs
 * input_N take the shapes chosen by the importer; everything else gets its
 * shape from our shape rules, except TASO's constants (Iconv, Cpool,
 * Imatmul), which have no shape of their own: each is built with a *hint*,
 * the shape its context expects (the other operand of ewadd/ewmul/concat,
 * the channels of the convolution it is a kernel of, the dimension of the
 * matmul it multiplies), with unknown dimensions left at -1. Operands that
 * determine their own shape are therefore built before their siblings.
 *
 * A split takes its split point from the concat that joined its input (the
 * nearest concat among the input's ancestors whose first part is a proper
 * prefix along the split axis), else from any concat of the rule.
 * Equal nodes (operator, inputs, normalised parameters) are built once.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ruleio_int.h"

/* ---- term table ---------------------------------------------------------- */

void ruleio_terms_free(ruleio_terms *ts) {
  free(ts->t);
  memset(ts, 0, sizeof *ts);
}

int ruleio_terms_intern(ruleio_terms *ts, const ruleio_term *x) {
  for (int i = 0; i < ts->n; i++) {
    const ruleio_term *y = &ts->t[i];
    if (y->k == x->k && y->np == x->np && y->nin == x->nin &&
        !memcmp(y->p, x->p, sizeof x->p) && !memcmp(y->in, x->in, sizeof x->in))
      return i;
  }
  if (ts->n == ts->cap) {
    int cap = ts->cap ? 2 * ts->cap : 32;
    ruleio_term *nt = base_realloc(ts->t, (size_t)cap * sizeof *nt);
    if (!nt)
      return -1;
    ts->t = nt;
    ts->cap = cap;
  }
  ts->t[ts->n] = *x;
  return ts->n++;
}

void ruleio_taso_inshapes(ruleio_inshapes *sh) {
  static const int64_t mat[2][2] = {{2, 4}, {4, 4}};
  static const int64_t img[6][4] = {
      {2, 4, 5, 5}, {4, 4, 3, 3}, {4, 4, 1, 3}, {4, 4, 3, 1}, {4, 1, 3, 3}};
  memset(sh, 0, sizeof *sh);
  for (int i = 0; i <= RULEIO_MAX_INPUT; i++)
    sh->s[i].rank = -1;
  for (int n = 1; n <= 6; n++)
    sh->s[n] = ir_shape_make(2, mat[(n - 1) / 3]);
  for (int n = 7; n <= 19; n++)
    sh->s[n] = ir_shape_make(4, img[(n - 7) / 3]);
  sh->s[20] = ir_shape_make(0, NULL);
}

int ruleio_input_number(const char *name) {
  if (strncmp(name, "input_", 6) || !name[6] || name[6] == '0')
    return 0;
  int n = 0;
  for (const char *p = name + 6; *p; p++) {
    if (*p < '0' || *p > '9' || n > RULEIO_MAX_INPUT)
      return 0;
    n = n * 10 + (*p - '0');
  }
  return n >= 1 && n <= RULEIO_MAX_INPUT ? n : 0;
}

/* ---- building ------------------------------------------------------------ */

typedef struct hint {
  int rank; /* -1: nothing known */
  int64_t d[IR_MAX_RANK];
} hint;

typedef struct bctx {
  const ruleio_terms *ts;
  ir_graph *g;
  const ir_graph *other; /* the rule's other side, for split points */
  const ruleio_inshapes *sh;
  int *memo;        /* term -> tensor, -1 when not built */
  signed char *ctx; /* term -> needs_ctx, -1 when not known */
  char *why;
  size_t why_n;
  int split_missing; /* a split found no concat */
} bctx;

static int fail(bctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(bctx *c, const char *fmt, ...) {
  if (c->why[0]) /* keep the first reason */
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, c->why_n, fmt, ap);
  va_end(ap);
  return -1;
}

static hint no_hint(void) {
  hint h;
  h.rank = -1;
  for (int i = 0; i < IR_MAX_RANK; i++)
    h.d[i] = -1;
  return h;
}

static hint hint_of(const ir_shape *s) {
  hint h = no_hint();
  h.rank = s->rank;
  for (int i = 0; i < s->rank; i++)
    h.d[i] = s->dim[i];
  return h;
}

/* h with dimension i forgotten. */
static hint forget(hint h, int i) {
  if (i >= 0 && i < IR_MAX_RANK)
    h.d[i] = -1;
  return h;
}

static hint hint4(int64_t a, int64_t b, int64_t c, int64_t d) {
  hint h = {4, {a, b, c, d, -1, -1, -1, -1}};
  return h;
}

/* Whether a term's shape depends on its context (holds a constant that no
 * sibling determines). Memoised: terms form a DAG. */
static int needs_ctx_of(bctx *c, int t);

static int needs_ctx_uncached(bctx *c, const ruleio_term *x) {
  switch (x->k) {
  case RT_INPUT: return 0;
  case RT_ICONV:
  case RT_CPOOL: return x->p[2] == 0;
  case RT_IMATMUL: return x->p[0] == 0;
  case RT_CONES: return 0;
  case RT_EWADD:
  case RT_EWMUL:
  case RT_CONCAT:
  case RT_MATMUL:
    for (int i = 0; i < x->nin; i++)
      if (!needs_ctx_of(c, x->in[i]))
        return 0;
    return 1;
  default: /* conv2d: its input x; the others: their only term operand */
    return x->nin ? needs_ctx_of(c, x->in[0]) : 0;
  }
}

static int needs_ctx_of(bctx *c, int t) {
  if (c->ctx[t] < 0)
    c->ctx[t] = (signed char)needs_ctx_uncached(c, &c->ts->t[t]);
  return c->ctx[t];
}

static const ir_shape *shape_of(bctx *c, int tensor) {
  return &c->g->tensors[tensor].shape;
}

/* Adds (or finds an equal) node; returns its output `slot`'s tensor. */
static int emit(bctx *c, ir_opcode op, const int32_t *in, int nin, ir_attrs *a,
                int slot) {
  const ir_shape *ins[RULEIO_MAX_TIN] = {0};
  ir_shape outs[4];
  base_diag d;
  for (int i = 0; i < nin; i++)
    ins[i] = shape_of(c, in[i]);
  ir_attrs norm = *a;
  if (ir_infer(op, &norm, ins, nin, outs, &d) != BASE_OK)
    return fail(c, "shape error in %s", ir_op(op)->name);
  for (int i = 0; i < c->g->nnodes; i++) {
    const ir_node *n = &c->g->nodes[i];
    if (n->op == op && n->nin == nin &&
        (!nin || !memcmp(n->in, in, (size_t)nin * sizeof *in)) &&
        !memcmp(&n->a, &norm, sizeof norm))
      return n->out[slot];
  }
  int k = ir_add_node(c->g, op, in, nin, a, NULL, &d);
  if (k < 0)
    return fail(c, "shape error in %s", ir_op(op)->name);
  return c->g->nodes[k].out[slot];
}

static int build(bctx *c, int t, hint h);

/* A constant from its hint. */
/* The operator of a constant or unary term kind; -1 for the others. */
static int term_op(ruleio_tk k) {
  switch (k) {
  case RT_CONES: return IR_OP_CONST_ONES;
  case RT_IMATMUL: return IR_OP_CONST_IMM;
  case RT_ICONV: return IR_OP_CONST_ICONV;
  case RT_CPOOL: return IR_OP_CONST_POOL;
  case RT_RELU: return IR_OP_RELU;
  case RT_SIGMOID: return IR_OP_SIGMOID;
  case RT_TANH: return IR_OP_TANH;
  case RT_EWADD: return IR_OP_EWADD;
  case RT_EWMUL: return IR_OP_EWMUL;
  default: return -1;
  }
}

static int build_const(bctx *c, const ruleio_term *x, hint h) {
  ir_attrs a;
  int64_t *s = a.list;
  int32_t none[1] = {0};
  ir_opcode op;
  const char *name = x->k == RT_ICONV   ? "Iconv"
                     : x->k == RT_CPOOL ? "Cpool"
                                        : "Imatmul";
  /* a carried shape (TASO .pb extension) */
  int rank = x->k == RT_CONES                       ? x->p[0]
             : x->k == RT_IMATMUL                   ? (x->p[0] ? 2 : 0)
             : x->k == RT_ICONV || x->k == RT_CPOOL ? x->p[2]
                                                    : 0;
  if (rank > 0 || x->k == RT_CONES) {
    const int *dims = x->k == RT_CONES ? x->p + 1 : x->p + 3;
    op = (ir_opcode)term_op(x->k);
    ir_attrs_default(op, &a);
    if (rank < 0 || rank > IR_MAX_RANK)
      return fail(c, "constant of rank %d", rank);
    for (int i = 0; i < rank; i++)
      s[i] = x->k == RT_IMATMUL ? x->p[0] : dims[i];
    a.nlist = rank;
    return emit(c, op, none, 0, &a, 0);
  }
  if (x->k == RT_IMATMUL) {
    int64_t n = h.rank == 2 ? (h.d[0] > 0 ? h.d[0] : h.d[1]) : -1;
    if (n <= 0)
      return fail(c, "cannot infer the shape of %s", name);
    ir_attrs_default(op = IR_OP_CONST_IMM, &a);
    s[0] = s[1] = n;
    a.nlist = 2;
    return emit(c, op, none, 0, &a, 0);
  }
  if (h.rank != 4 || (h.d[0] <= 0 && h.d[1] <= 0) ||
      (h.d[2] > 0 && h.d[2] != x->p[0]) || (h.d[3] > 0 && h.d[3] != x->p[1]))
    return fail(c, "cannot infer the shape of %s", name);
  int64_t o = h.d[0] > 0 ? h.d[0] : h.d[1];
  ir_attrs_default(op = (ir_opcode)term_op(x->k), &a); /* iconv or cpool */
  s[0] = o;
  s[1] = x->k == RT_CPOOL ? 1 : (h.d[1] > 0 ? h.d[1] : o);
  s[2] = x->p[0];
  s[3] = x->p[1];
  a.nlist = 4;
  return emit(c, op, none, 0, &a, 0);
}

/* Builds the operands of an ewadd/ewmul/concat: self-determined ones
 * first, then the others with a built sibling's shape (dimension `axis`
 * forgotten) as hint. */
static int build_siblings(bctx *c, const ruleio_term *x, hint h, int axis,
                          int32_t *in) {
  int have = -1;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < x->nin; i++) {
      if (needs_ctx_of(c, x->in[i]) != pass)
        continue;
      hint hi = have >= 0 ? forget(hint_of(shape_of(c, have)), axis)
                          : forget(h, axis);
      if ((in[i] = build(c, x->in[i], hi)) < 0)
        return -1;
      if (have < 0)
        have = in[i];
    }
  return 0;
}

static int build_conv(bctx *c, const ruleio_term *x, hint h) {
  int32_t in[2];
  static const int acts[4] = {IR_ACT_NONE, IR_ACT_SIGMOID, IR_ACT_RELU,
                              IR_ACT_TANH};
  if (x->p[2] < 0 || x->p[2] > 1)
    return fail(c, "conv2d padding code %d", x->p[2]);
  if (x->p[3] < 0 || x->p[3] > 3)
    return fail(c, "conv2d activation code %d", x->p[3]);
  if ((in[0] = build(c, x->in[0],
                     hint4(h.rank == 4 ? h.d[0] : -1, -1, -1, -1))) < 0)
    return -1;
  const ir_shape *xs = shape_of(c, in[0]);
  if (xs->rank != 4)
    return fail(c, "shape error in conv2d");
  if ((in[1] = build(c, x->in[1], hint4(xs->dim[1], -1, -1, -1))) < 0)
    return -1;
  const ir_shape *ws = shape_of(c, in[1]);
  if (ws->rank != 4 || ws->dim[1] <= 0 || xs->dim[1] % ws->dim[1])
    return fail(c, "shape error in conv2d");
  ir_attrs a;
  ir_attrs_default(IR_OP_CONV2D, &a);
  a.stride[0] = x->p[0];
  a.stride[1] = x->p[1];
  a.padmode = x->p[2] == 0 ? IR_PAD_SAME : IR_PAD_VALID;
  a.act = acts[x->p[3]];
  a.groups = (int32_t)(xs->dim[1] / ws->dim[1]);
  return emit(c, IR_OP_CONV2D, in, 2, &a, 0);
}

static int build_pool(bctx *c, const ruleio_term *x, hint h) {
  if (x->p[4] < 0 || x->p[4] > 1)
    return fail(c, "pool padding code %d", x->p[4]);
  int keep = x->p[2] == 1 && x->p[3] == 1 && x->p[4] == 0;
  hint hi = keep ? h : forget(forget(h, 2), 3);
  int32_t in;
  if ((in = build(c, x->in[0], hi)) < 0)
    return -1;
  ir_opcode op = x->k == RT_POOLAVG ? IR_OP_AVGPOOL : IR_OP_MAXPOOL;
  ir_attrs a;
  ir_attrs_default(op, &a);
  a.kernel[0] = x->p[0];
  a.kernel[1] = x->p[1];
  a.stride[0] = x->p[2];
  a.stride[1] = x->p[3];
  a.padmode = x->p[4] == 0 ? IR_PAD_SAME : IR_PAD_VALID;
  if (op == IR_OP_AVGPOOL)
    a.count_include_pad = 1;
  return emit(c, op, &in, 1, &a, 0);
}

/* The split point of a split of tensor t along axis (see the top). */
static int64_t split_point(const ir_graph *g, int t, int axis, int64_t dim) {
  int32_t *queue = base_calloc((size_t)g->ntensors + 1, sizeof *queue);
  char *seen = base_calloc((size_t)g->ntensors + 1, 1);
  int64_t p = -1;
  int head = 0, tail = 0;
  (void)axis;
  if (!queue || !seen)
    goto done;
  if (t >= 0) {
    queue[tail++] = t;
    seen[t] = 1;
  }
  while (head < tail && p < 0) {
    const ir_tensor *x = &g->tensors[queue[head++]];
    if (x->node < 0)
      continue;
    const ir_node *n = &g->nodes[x->node];
    if (n->op == IR_OP_CONCAT) {
      int64_t q = g->tensors[n->in[0]].shape.dim[n->a.axis];
      if (q > 0 && q < dim)
        p = q;
    }
    for (int i = 0; i < n->nin; i++)
      if (!seen[n->in[i]]) {
        seen[n->in[i]] = 1;
        queue[tail++] = n->in[i];
      }
  }
  for (int i = 0; t < 0 && i < g->nnodes && p < 0; i++) {
    const ir_node *n = &g->nodes[i];
    if (n->op != IR_OP_CONCAT)
      continue;
    int64_t q = g->tensors[n->in[0]].shape.dim[n->a.axis];
    if (q > 0 && q < dim)
      p = q;
  }
done:
  free(queue);
  free(seen);
  return p;
}

static int build_split(bctx *c, const ruleio_term *x, hint h) {
  int axis = x->p[0];
  int32_t in;
  if ((in = build(c, x->in[0], forget(h, axis))) < 0)
    return -1;
  const ir_shape *s = shape_of(c, in);
  if (axis < 0 || axis >= s->rank)
    return fail(c, "shape error in split");
  int64_t dim = s->dim[axis];
  int64_t p = x->p[2] > 0 && x->p[2] < dim ? x->p[2] : -1;
  if (x->p[2] > 0 && p < 0)
    return fail(c, "split size %d does not fit", x->p[2]);
  if (p < 0)
    p = split_point(c->g, in, axis, dim);
  if (p < 0)
    p = split_point(c->g, -1, axis, dim);
  if (p < 0 && c->other)
    p = split_point(c->other, -1, axis, dim);
  if (p < 0) {
    c->split_missing = 1;
    return fail(c, "split without a matching concat");
  }
  ir_attrs a;
  ir_attrs_default(IR_OP_SPLIT, &a);
  a.axis = axis;
  a.list[0] = p;
  a.list[1] = dim - p;
  a.nlist = 2;
  return emit(c, IR_OP_SPLIT, &in, 1, &a, x->p[1]);
}

static int build_matmul(bctx *c, const ruleio_term *x, hint h) {
  int32_t in[2];
  int64_t m = h.rank == 2 ? h.d[0] : -1, n = h.rank == 2 ? h.d[1] : -1;
  int first = needs_ctx_of(c, x->in[0]) ? 1 : 0;
  if (first == 0) {
    if ((in[0] = build(c, x->in[0], (hint){2, {m, -1, -1, -1, -1}})) < 0)
      return -1;
    const ir_shape *s = shape_of(c, in[0]);
    int64_t k = s->rank == 2 ? s->dim[1] : -1;
    if ((in[1] = build(c, x->in[1], (hint){2, {k, n, -1, -1, -1}})) < 0)
      return -1;
  } else {
    if ((in[1] = build(c, x->in[1], (hint){2, {-1, n, -1, -1, -1}})) < 0)
      return -1;
    const ir_shape *s = shape_of(c, in[1]);
    int64_t k = s->rank == 2 ? s->dim[0] : -1;
    if ((in[0] = build(c, x->in[0], (hint){2, {m, k, -1, -1, -1}})) < 0)
      return -1;
  }
  if (x->p[0] < 0 || x->p[0] > 3)
    return fail(c, "matmul activation code %d", x->p[0]);
  static const int acts[4] = {IR_ACT_NONE, IR_ACT_SIGMOID, IR_ACT_RELU,
                              IR_ACT_TANH};
  ir_attrs a;
  ir_attrs_default(IR_OP_MATMUL, &a);
  a.act = acts[x->p[0]];
  return emit(c, IR_OP_MATMUL, in, 2, &a, 0);
}

static int build_transpose(bctx *c, const ruleio_term *x, hint h) {
  int n = x->p[0] ? x->p[0] : 2;
  int64_t perm[IR_MAX_RANK] = {1, 0};
  for (int i = 0; x->p[0] && i < n; i++)
    perm[i] = x->p[1 + i];
  hint hi = no_hint();
  if (h.rank == n) {
    hi.rank = n;
    for (int i = 0; i < n; i++)
      if (perm[i] >= 0 && perm[i] < n)
        hi.d[perm[i]] = h.d[i];
  }
  int32_t in;
  if ((in = build(c, x->in[0], hi)) < 0)
    return -1;
  ir_attrs a;
  ir_attrs_default(IR_OP_TRANSPOSE, &a);
  for (int i = 0; i < n; i++)
    a.list[i] = perm[i];
  a.nlist = n;
  return emit(c, IR_OP_TRANSPOSE, &in, 1, &a, 0);
}

/* Operators whose operands are built independently of each other. */
static int build_simple(bctx *c, const ruleio_term *x, hint h) {
  int32_t in[RULEIO_MAX_TIN];
  ir_attrs a;
  ir_opcode op;
  switch (x->k) {
  case RT_SMUL:
    op = IR_OP_SMUL;
    if ((in[0] = build(c, x->in[0], h)) < 0 ||
        (in[1] = build(c, x->in[1], (hint){0, {-1, -1, -1, -1, -1}})) < 0)
      return -1;
    break;
  case RT_ENLARGE:
    op = IR_OP_ENLARGE;
    if ((in[0] = build(c, x->in[0], forget(forget(h, 2), 3))) < 0)
      return -1;
    break;
  default:
    if (term_op(x->k) < 0)
      return fail(c, "term kind %d has no operator", (int)x->k);
    op = (ir_opcode)term_op(x->k);
    if ((in[0] = build(c, x->in[0], h)) < 0)
      return -1;
  }
  ir_attrs_default(op, &a);
  if (op == IR_OP_ENLARGE) {
    a.kernel[0] = x->p[0];
    a.kernel[1] = x->p[1];
  }
  return emit(c, op, in, x->nin, &a, 0);
}

static int build_uncached(bctx *c, int t, hint h) {
  const ruleio_term *x = &c->ts->t[t];
  int32_t in[RULEIO_MAX_TIN];
  ir_attrs a;
  char name[32];
  switch (x->k) {
  case RT_INPUT:
    if (c->sh->name[x->p[0]])
      return ir_find_tensor(c->g, c->sh->name[x->p[0]]);
    snprintf(name, sizeof name, "input_%d", x->p[0]);
    return ir_find_tensor(c->g, name);
  case RT_CONV: return build_conv(c, x, h);
  case RT_POOLAVG:
  case RT_POOLMAX: return build_pool(c, x, h);
  case RT_CONCAT:
    if (build_siblings(c, x, h, x->p[0], in) < 0)
      return -1;
    ir_attrs_default(IR_OP_CONCAT, &a);
    a.axis = x->p[0];
    return emit(c, IR_OP_CONCAT, in, x->nin, &a, 0);
  case RT_EWADD:
  case RT_EWMUL:
    if (build_siblings(c, x, h, -1, in) < 0)
      return -1;
    ir_opcode op = (ir_opcode)term_op(x->k);
    ir_attrs_default(op, &a);
    return emit(c, op, in, 2, &a, 0);
  case RT_SPLIT: return build_split(c, x, h);
  case RT_ICONV:
  case RT_CPOOL:
  case RT_IMATMUL:
  case RT_CONES: return build_const(c, x, h);
  case RT_MATMUL: return build_matmul(c, x, h);
  case RT_TRANSPOSE: return build_transpose(c, x, h);
  default: return build_simple(c, x, h);
  }
}

static int build(bctx *c, int t, hint h) {
  if (c->memo[t] >= 0)
    return c->memo[t];
  int r = build_uncached(c, t, h);
  if (r >= 0)
    c->memo[t] = r;
  return r;
}

/* Marks in used[] the input numbers reachable from term t (seen[]: terms
 * already visited). */
static void mark_inputs(const ruleio_terms *ts, int t, char *used, char *seen) {
  const ruleio_term *x = &ts->t[t];
  if (seen[t])
    return;
  seen[t] = 1;
  if (x->k == RT_INPUT)
    used[x->p[0]] = 1;
  for (int i = 0; i < x->nin; i++)
    mark_inputs(ts, x->in[i], used, seen);
}

/* One side of a rule: inputs used[] (in order of N), then the roots. */
static ir_graph *build_side(bctx *c, const int *roots, int n, const char *used,
                            const ruleio_inshapes *sh, const char *gname) {
  base_diag d;
  c->g = ir_graph_new(gname);
  if (!c->g) {
    fail(c, "out of memory");
    return NULL;
  }
  for (int i = 0; i < c->ts->n; i++)
    c->memo[i] = -1;
  for (int k = 1; k <= RULEIO_MAX_INPUT; k++) {
    if (!used[k])
      continue;
    char name[32];
    snprintf(name, sizeof name, "input_%d", k);
    if (sh->s[k].rank < 0 ||
        ir_add_tensor(c->g, sh->name[k] ? sh->name[k] : name,
                      sh->weight[k] ? IR_T_WEIGHT : IR_T_INPUT, &sh->s[k],
                      &d) < 0) {
      fail(c, "no shape for input_%d", k);
      goto bad;
    }
  }
  for (int i = 0; i < n; i++) {
    int t = build(c, roots[i], no_hint());
    if (t < 0 || ir_add_output(c->g, t, &d) != BASE_OK) {
      fail(c, "cannot build an output");
      goto bad;
    }
  }
  return c->g;
bad:
  ir_graph_free(c->g);
  c->g = NULL;
  return NULL;
}

/* Builds src then dst; if src lacked a concat for a split, once more with
 * dst's concats in view. */
static base_status build_pair(bctx *c, const int *src, const int *dst, int n,
                              const ruleio_inshapes *sh, ir_graph **gs,
                              ir_graph **gd) {
  char used_src[RULEIO_MAX_INPUT + 1] = {0},
                                   used_dst[RULEIO_MAX_INPUT + 1] = {0};
  char *seen = (char *)c->ctx + c->ts->n; /* scratch after ctx[] */
  memset(seen, 0, (size_t)c->ts->n);
  for (int i = 0; i < n; i++)
    mark_inputs(c->ts, src[i], used_src, seen);
  memset(seen, 0, (size_t)c->ts->n);
  for (int i = 0; i < n; i++)
    mark_inputs(c->ts, dst[i], used_dst, seen);
  for (int k = 0; k <= RULEIO_MAX_INPUT; k++)
    used_src[k] |= used_dst[k]; /* dst's inputs are src's */
  c->other = NULL;
  *gs = build_side(c, src, n, used_src, sh, "src");
  int retry = !*gs && c->split_missing;
  if (retry)
    c->why[0] = 0;
  c->other = *gs;
  *gd = build_side(c, dst, n, used_dst, sh, "dst");
  if (retry && *gd) {
    c->other = *gd;
    c->split_missing = 0;
    *gs = build_side(c, src, n, used_src, sh, "src");
  }
  if (*gs && *gd)
    return BASE_OK;
  ir_graph_free(*gs);
  ir_graph_free(*gd);
  *gs = *gd = NULL;
  return BASE_ERR_SHAPE;
}

base_status ruleio_build_rule(const ruleio_terms *ts, const int *src,
                              const int *dst, int n, const ruleio_inshapes *sh,
                              const char *id, const char *note, ir_ruleset *rs,
                              char *why, size_t why_n) {
  bctx c = {ts, NULL, NULL, sh, NULL, NULL, why, why_n, 0};
  why[0] = 0;
  c.memo = base_malloc(((size_t)ts->n + 1) * sizeof *c.memo);
  c.ctx = base_malloc(2 * ((size_t)ts->n + 1));
  if (!c.memo || !c.ctx) {
    free(c.memo);
    free(c.ctx);
    snprintf(why, why_n, "out of memory");
    return BASE_ERR_NOMEM;
  }
  memset(c.ctx, -1, (size_t)ts->n + 1);
  ir_graph *gs, *gd;
  base_status st = build_pair(&c, src, dst, n, sh, &gs, &gd);
  free(c.memo);
  free(c.ctx);
  if (st != BASE_OK)
    return st;
  base_diag d;
  ir_rule *r = ir_ruleset_add(rs, id, gs, gd, &d);
  if (!r) {
    snprintf(why, why_n, "%s",
             d.code == BASE_ERR_NOMEM ? "out of memory" : "sides do not agree");
    return d.code;
  }
  r->status = IR_RULE_UNVERIFIED;
  if (note && ir_rule_set_note(r, note) != BASE_OK) {
    snprintf(why, why_n, "out of memory");
    return BASE_ERR_NOMEM;
  }
  return BASE_OK;
}
