/* inst.c: an axiom's concrete instance as two ir_graphs (verify_axiom_graphs),
 * so that every axiom can be checked numerically on the CPU executor.
 *
 * The instance string binds each variable: a shape for a tensor variable
 * ("x=[2,3]"), an integer ("a=1") or a shape ("c=[2,3]", standing for its
 * shape code) for an Int variable. The guard is evaluated on these values
 * and must hold; each operator term becomes one node, and parameters the
 * encoding carries redundantly (concat's and split's first-part size) must
 * agree with the shapes, which checks that the axiom states them right.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_int.h"

/* An Int value: a number, or a shape code kept as the shape itself. */
typedef struct ival {
  int is_shape;
  int64_t v;
  ir_shape s;
} ival;

typedef struct inst {
  const verify_axiom *ax;
  verify_form *f;
  ival val[VERIFY_MAX_VARS];
  int bound[VERIFY_MAX_VARS];
  base_diag *d;
} inst;

static base_status ierr(inst *in, const char *msg, const char *what) {
  return base_diag_set(in->d, BASE_ERR_PARAM, 0, 0, "axiom %s: %s%s%s",
                       in->ax->name, msg, what ? " " : "", what ? what : "");
}

/* Parses "[d0,d1,...]" at *p into s. */
static int parse_shape(const char **p, ir_shape *s) {
  const char *q = *p + 1;
  int64_t dims[IR_MAX_RANK];
  int r = 0;
  while (*q && *q != ']') {
    char *e;
    long long v = strtoll(q, &e, 10);
    if (e == q || v <= 0 || r == IR_MAX_RANK)
      return 0;
    dims[r++] = v;
    q = *e == ',' ? e + 1 : e;
  }
  if (*q != ']')
    return 0;
  *s = ir_shape_make(r, dims);
  *p = q + 1;
  return 1;
}

static int find_var(const verify_form *f, const char *name, size_t n) {
  for (int i = 0; i < f->nvars; i++)
    if (strlen(f->vars[i].name) == n && !strncmp(f->vars[i].name, name, n))
      return i;
  return -1;
}

static base_status parse_binding(inst *in, const char **pp) {
  const char *p = *pp, *eq = strchr(p, '=');
  if (!eq)
    return ierr(in, "bad instance near", p);
  int v = find_var(in->f, p, (size_t)(eq - p));
  if (v < 0)
    return ierr(in, "instance binds an unknown variable near", p);
  ival *x = &in->val[v];
  p = eq + 1;
  if (*p == '[') {
    x->is_shape = 1;
    if (!parse_shape(&p, &x->s))
      return ierr(in, "bad shape in instance near", eq);
  } else {
    char *e;
    x->v = strtoll(p, &e, 10);
    if (e == p || in->f->vars[v].sort != VERIFY_S_INT)
      return ierr(in, "bad value in instance near", eq);
    p = e;
  }
  in->bound[v] = 1;
  *pp = p;
  return BASE_OK;
}

static base_status parse_inst(inst *in) {
  const char *p = in->ax->inst ? in->ax->inst : "";
  for (;;) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    base_status st = parse_binding(in, &p);
    if (st != BASE_OK)
      return st;
  }
  for (int i = 0; i < in->f->nvars; i++) {
    const verify_var *v = &in->f->vars[i];
    if (!in->bound[i] || (v->sort == VERIFY_S_TENSOR && !in->val[i].is_shape))
      return ierr(in, "instance lacks a value for", v->name);
  }
  return BASE_OK;
}

/* ---- evaluating guards and parameters ----------------------------------- */

static ival eval_int(inst *in, const verify_term *e, int *ok);

static ival num(int64_t v) {
  ival r = {0, v, {0}};
  return r;
}

static int ival_eq(const ival *a, const ival *b) {
  if (a->is_shape != b->is_shape)
    return 0;
  return a->is_shape ? ir_shape_eq(&a->s, &b->s) : a->v == b->v;
}

static int64_t arith(verify_fn fn, int64_t a, int64_t b, int *ok) {
  switch (fn) {
  case VERIFY_F_ADD: return a + b;
  case VERIFY_F_SUB: return a - b;
  case VERIFY_F_MUL: return a * b;
  case VERIFY_F_MOD:
    if (b == 0)
      break;
    return ((a % b) + b) % b;
  default: break;
  }
  *ok = 0;
  return 0;
}

/* The modulus of shape codes (encode.c, verify_shape_code). */
#define CODE_M 68719476737LL

/* A shape's code as a number (in arithmetic: the batchnorm folds'
 * reshapes), when it fits in 62 bits; else *ok = 0. */
static int64_t shape_code(const ir_shape *s, int *ok) {
  __int128 acc = 0;
  for (int i = s->rank - 1; i >= 0; i--) {
    acc = acc * CODE_M + s->dim[i];
    if (acc > ((__int128)1 << 58))
      *ok = 0;
  }
  return *ok ? (int64_t)(s->rank + 8 * acc) : 0;
}

/* The shape whose code is c; 0 when c is no shape's code. */
static int code_shape(int64_t c, ir_shape *s) {
  int64_t dims[IR_MAX_RANK], rest = c / 8;
  int r = (int)(c % 8);
  if (c < 0 || r > IR_MAX_RANK)
    return 0;
  for (int i = 0; i < r; i++, rest /= CODE_M)
    dims[i] = rest % CODE_M;
  *s = ir_shape_make(r, dims);
  return rest == 0;
}

static int decode_perm(int64_t code, ir_attrs *a);

/* (perm p i) and (dim c i) on values: entry i of the permutation of code
 * p, dimension i of the shape c (a shape, or its code); *ok = 0 when i is
 * out of range. */
static int64_t digit(verify_fn fn, const ival *a, int64_t i, int *ok) {
  ir_attrs at;
  ir_shape s = a->s;
  if (fn == VERIFY_F_PERM && !a->is_shape && decode_perm(a->v, &at) && i >= 0 &&
      i < at.nlist)
    return at.list[i];
  if (fn == VERIFY_F_DIM && (a->is_shape || code_shape(a->v, &s)) && i >= 0 &&
      i < s.rank)
    return s.dim[i];
  *ok = 0;
  return 0;
}

static int build(inst *in, ir_graph *g, const verify_term *e);

/* The shape of tensor term e (rows_sink's right side reshapes to its left
 * side's shape): e built in a scratch graph. */
static ival term_shape(inst *in, const verify_term *e, int *ok) {
  ival r = {.is_shape = 1};
  ir_graph *g = ir_graph_new("sh");
  int t = g ? build(in, g, e) : -1;
  if (t < 0)
    *ok = 0;
  else
    r.s = g->tensors[t].shape;
  ir_graph_free(g);
  return r;
}

static ival eval_int(inst *in, const verify_term *e, int *ok) {
  if (e->kind == VERIFY_T_NUM)
    return num(e->num);
  if (e->kind == VERIFY_T_VAR)
    return in->val[e->var];
  if (e->fn == VERIFY_F_SH && e->args[0]->kind == VERIFY_T_VAR) {
    ival r = in->val[e->args[0]->var];
    r.is_shape = 1;
    return r;
  }
  if (e->fn == VERIFY_F_RANK) {
    ival a = eval_int(in, e->args[0], ok);
    return num(a.is_shape ? a.s.rank : ((a.v % 8) + 8) % 8);
  }
  if (e->fn == VERIFY_F_SH) /* of a term: built apart, for its shape */
    return term_shape(in, e->args[0], ok);
  if (e->fn == VERIFY_F_RANKC || e->fn == VERIFY_F_DIMC) { /* of a shape */
    int last = e->fn == VERIFY_F_DIMC;
    ival c = eval_int(in, e->args[last], ok);
    int64_t k = last ? eval_int(in, e->args[0], ok).v : -1;
    ir_shape s = c.s;
    if (!c.is_shape && !code_shape(c.v, &s))
      *ok = 0;
    if (*ok && last && (k < 0 || k >= s.rank))
      *ok = 0;
    return num(!*ok ? 0 : last ? s.dim[k] : s.rank);
  }
  ival a = eval_int(in, e->args[0], ok), b = eval_int(in, e->args[1], ok);
  if (e->fn == VERIFY_F_PERM || e->fn == VERIFY_F_DIM)
    return num(digit(e->fn, &a, b.v, ok));
  int64_t x = a.is_shape ? shape_code(&a.s, ok) : a.v;
  int64_t y = b.is_shape ? shape_code(&b.s, ok) : b.v;
  return num(arith(e->fn, x, y, ok));
}

static int eval_bool(inst *in, const verify_term *e, int *ok) {
  if (e->fn == VERIFY_F_EQ) {
    ival a = eval_int(in, e->args[0], ok), b = eval_int(in, e->args[1], ok);
    return ival_eq(&a, &b);
  }
  if (e->fn == VERIFY_F_NOT)
    return !eval_bool(in, e->args[0], ok);
  if (e->fn == VERIFY_F_AND || e->fn == VERIFY_F_OR) {
    int all = 1, any = 0;
    for (int i = 0; i < e->nargs; i++) {
      int b = eval_bool(in, e->args[i], ok);
      all &= b;
      any |= b;
    }
    return e->fn == VERIFY_F_AND ? all : any;
  }
  if (e->fn == VERIFY_F_IMPLIES)
    return !eval_bool(in, e->args[0], ok) || eval_bool(in, e->args[1], ok);
  ival a = eval_int(in, e->args[0], ok), b = eval_int(in, e->args[1], ok);
  switch (e->fn) {
  case VERIFY_F_LT: return a.v < b.v;
  case VERIFY_F_LE: return a.v <= b.v;
  case VERIFY_F_GT: return a.v > b.v;
  case VERIFY_F_GE: return a.v >= b.v;
  default: *ok = 0; return 0;
  }
}

/* ---- building graphs ---------------------------------------------------- */

typedef struct gnode {
  ir_opcode op;
  ir_attrs a;
  int slot; /* which output of the node the term is */
} gnode;

static void set_list(ir_attrs *a, const int64_t *v, int n) {
  a->nlist = n;
  for (int i = 0; i < n; i++)
    a->list[i] = v[i];
}

static int decode_perm(int64_t code, ir_attrs *a) {
  int n = (int)(code % 8);
  int64_t c = code / 8, p[IR_MAX_RANK];
  if (!n) /* n = 8: code = 8 + 8 c */
    n = 8, c--;
  if (c < 0 || n > IR_MAX_RANK)
    return 0;
  for (int i = 0; i < n; i++, c /= 8)
    p[i] = c % 8;
  if (c)
    return 0;
  set_list(a, p, n);
  return 1;
}

/* The shape of constant op (iconv, imm, cpool) from iv[]. */
static int describe_const(const verify_term *e, const ival *iv, gnode *g,
                          ir_opcode op) {
  ir_attrs *a = &g->a;
  g->op = op;
  ir_attrs_default(g->op, a);
  int64_t d[4];
  int n = verify_fn_info(e->fn)->nint;
  for (int i = 0; i < n; i++)
    d[i] = iv[i].v;
  if (e->fn == VERIFY_F_IMM)
    d[1] = d[0], n = 2;
  if (e->fn == VERIFY_F_CPOOL)
    d[3] = d[2], d[2] = d[1], d[1] = 1, n = 4;
  set_list(a, d, n);
  return 1;
}

/* Fills g's operator and parameters from the term's Int arguments iv[]. */
static int describe(const verify_term *e, const ival *iv, gnode *g) {
  ir_attrs *a = &g->a;
  g->slot = 0;
  switch (e->fn) {
  case VERIFY_F_CONV2D:
  case VERIFY_F_CONV2DB:
    g->op = IR_OP_CONV2D;
    ir_attrs_default(g->op, a);
    a->stride[0] = (int32_t)iv[0].v, a->stride[1] = (int32_t)iv[1].v;
    a->groups = (int32_t)iv[3].v, a->act = (int32_t)iv[4].v;
    return verify_pad_decode(iv[2].v, a);
  case VERIFY_F_MATMUL:
  case VERIFY_F_MATMULB:
  case VERIFY_F_MATMULR:
  case VERIFY_F_BMATMUL:
    g->op = IR_OP_MATMUL;
    ir_attrs_default(g->op, a);
    a->act =
        (int32_t)iv[e->fn == VERIFY_F_MATMULB || e->fn == VERIFY_F_MATMULR].v;
    return 1; /* matmulb's and matmulr's ax is checked against x's rank once
                 it is built */
  case VERIFY_F_EWADD:
  case VERIFY_F_BADD:
  case VERIFY_F_BCADD: g->op = IR_OP_EWADD; break;
  case VERIFY_F_EWMUL:
  case VERIFY_F_BMUL: g->op = IR_OP_EWMUL; break;
  case VERIFY_F_BSUB: g->op = IR_OP_EWSUB; break;
  case VERIFY_F_BDIV: g->op = IR_OP_EWDIV; break;
  case VERIFY_F_SMUL: g->op = IR_OP_SMUL; break;
  case VERIFY_F_ACT:
    if (iv[0].v < 1 || iv[0].v >= VERIFY_ACT_END)
      return 0;
    g->op = ir_ew_op((int)iv[0].v - 1);
    break;
  case VERIFY_F_CONCAT:
    g->op = IR_OP_CONCAT;
    ir_attrs_default(g->op, a);
    a->axis = (int32_t)iv[0].v;
    return 1;
  case VERIFY_F_SPLIT0:
  case VERIFY_F_SPLIT1:
    g->op = IR_OP_SPLIT;
    ir_attrs_default(g->op, a);
    a->axis = (int32_t)iv[0].v;
    g->slot = e->fn == VERIFY_F_SPLIT1;
    return 1; /* sizes are filled once the input's shape is known */
  case VERIFY_F_TRANSPOSE:
    g->op = IR_OP_TRANSPOSE;
    ir_attrs_default(g->op, a);
    return decode_perm(iv[0].v, a);
  case VERIFY_F_AVGPOOL:
  case VERIFY_F_MAXPOOL:
    g->op = e->fn == VERIFY_F_AVGPOOL ? IR_OP_AVGPOOL : IR_OP_MAXPOOL;
    ir_attrs_default(g->op, a);
    a->kernel[0] = (int32_t)iv[0].v, a->kernel[1] = (int32_t)iv[1].v;
    a->stride[0] = (int32_t)iv[2].v, a->stride[1] = (int32_t)iv[3].v;
    a->padmode = (int32_t)iv[4].v;
    if (e->fn == VERIFY_F_AVGPOOL)
      a->count_include_pad = (int32_t)iv[5].v;
    return a->padmode == IR_PAD_SAME || a->padmode == IR_PAD_VALID;
  case VERIFY_F_ENLARGE:
    g->op = IR_OP_ENLARGE;
    ir_attrs_default(g->op, a);
    a->kernel[0] = (int32_t)iv[0].v, a->kernel[1] = (int32_t)iv[1].v;
    return 1;
  case VERIFY_F_ICONV: return describe_const(e, iv, g, IR_OP_CONST_ICONV);
  case VERIFY_F_IMM: return describe_const(e, iv, g, IR_OP_CONST_IMM);
  case VERIFY_F_CPOOL: return describe_const(e, iv, g, IR_OP_CONST_POOL);
  case VERIFY_F_BN: {
    uint32_t bits = (uint32_t)iv[0].v;
    g->op = IR_OP_BATCHNORM;
    ir_attrs_default(g->op, a);
    memcpy(&a->eps, &bits, sizeof bits);
    return !iv[0].is_shape && a->eps >= 0;
  }
  case VERIFY_F_RESHAPE: {
    ir_shape s = iv[0].s;
    g->op = IR_OP_RESHAPE;
    ir_attrs_default(g->op, a);
    if (!iv[0].is_shape && !code_shape(iv[0].v, &s))
      return 0;
    set_list(a, s.dim, s.rank);
    return 1;
  }
  case VERIFY_F_EWSUB: g->op = IR_OP_EWSUB; break;
  case VERIFY_F_EWDIV: g->op = IR_OP_EWDIV; break;
  case VERIFY_F_WHERE: g->op = IR_OP_WHERE; break;
  case VERIFY_F_EQUAL: g->op = IR_OP_EQUAL; break;
  case VERIFY_F_LNOT: g->op = IR_OP_NOT; break;
  case VERIFY_F_SLICE:
    g->op = IR_OP_SLICE;
    ir_attrs_default(g->op, a);
    return 1; /* starts and ends are filled once the input's shape is known */
  case VERIFY_F_ONES:
    g->op = IR_OP_CONST_ONES;
    ir_attrs_default(g->op, a);
    if (!iv[0].is_shape)
      return 0;
    set_list(a, iv[0].s.dim, iv[0].s.rank);
    return 1;
  default: return 0;
  }
  ir_attrs_default(g->op, a);
  return 1;
}

/* Checks concat's and split's carried size n against x's shape: concat's
 * n is x.dim[axis]; a split point lies strictly inside (and fills split's
 * sizes). */
static int carried_size(inst *in, const ir_graph *g, const verify_term *e,
                        int x, int64_t n, gnode *gn) {
  const ir_shape *s = &g->tensors[x].shape;
  int ax = gn->a.axis;
  int64_t dim = ax >= 0 && ax < s->rank ? s->dim[ax] : -1;
  int good = e->fn == VERIFY_F_CONCAT ? n == dim : n > 0 && n < dim;
  if (!good) {
    ierr(in, "carried size disagrees with the shapes in",
         verify_fn_info(e->fn)->name);
    return 0;
  }
  if (e->fn != VERIFY_F_CONCAT) {
    int64_t sz[2] = {n, dim - n};
    set_list(&gn->a, sz, 2);
  }
  return 1;
}

/* (slice a s e x): starts and ends of x's whole range but on axis a,
 * [s, e) there, strictly inside (the encoding never writes a whole axis). */
static int slice_range(inst *in, const ir_graph *g, int x, const ival *iv,
                       gnode *gn) {
  const ir_shape *sh = &g->tensors[x].shape;
  int64_t ax = iv[0].v, s = iv[1].v, e = iv[2].v;
  if (ax < 0 || ax >= sh->rank || s < 0 || e > sh->dim[ax] || s >= e ||
      (s == 0 && e == sh->dim[ax])) {
    ierr(in, "axis or range disagrees with the shapes in", "slice");
    return 0;
  }
  ir_attrs *a = &gn->a;
  a->nlist = a->nlist2 = sh->rank;
  for (int k = 0; k < sh->rank; k++)
    a->list[k] = k == ax ? s : 0, a->list2[k] = k == ax ? e : sh->dim[k];
  return 1;
}

/* Whether variable var is a parameter of a (bn ...) term of e (scale,
 * bias, mean, var: a weight, drawn by its reader's hint, so that the
 * variance is positive). */
static int bn_param(const verify_term *e, int var) {
  if (e->kind != VERIFY_T_APP)
    return 0;
  for (int i = 0; i < e->nargs; i++)
    if ((e->fn == VERIFY_F_BN && i >= 2 && e->args[i]->kind == VERIFY_T_VAR &&
         e->args[i]->var == var) ||
        bn_param(e->args[i], var))
      return 1;
  return 0;
}

static int build_var(inst *in, ir_graph *g, const verify_term *e) {
  const char *name = in->f->vars[e->var].name;
  int t = ir_find_tensor(g, name);
  if (t >= 0)
    return t;
  int w = bn_param(in->f->lhs, e->var) || bn_param(in->f->rhs, e->var);
  return ir_add_tensor(g, name, w ? IR_T_WEIGHT : IR_T_INPUT,
                       &in->val[e->var].s, in->d);
}

/* Whether the operands' shapes x and y suit the element-wise symbol fn:
 * equal shapes for ewadd, ewmul, ewsub and ewdiv; one rank and different
 * shapes for their broadcasts badd, bmul, bsub, bdiv; a bias vector for
 * bcadd (the encoding's classes, encode.c's enc_ew2, so that no axiom of
 * one is stated, or checked, on another's operands); 1 for other
 * symbols. */
static int ew_shapes(verify_fn fn, const ir_shape *x, const ir_shape *y) {
  switch (fn) {
  case VERIFY_F_EWADD:
  case VERIFY_F_EWMUL:
  case VERIFY_F_EWSUB:
  case VERIFY_F_EWDIV: return ir_shape_eq(x, y);
  case VERIFY_F_BADD:
  case VERIFY_F_BMUL:
  case VERIFY_F_BSUB:
  case VERIFY_F_BDIV: return x->rank == y->rank && !ir_shape_eq(x, y);
  case VERIFY_F_BCADD: return verify_bias_vector(x, y);
  default: return 1;
  }
}

/* (cval bits c): a weight of the shape of code c holding that float
 * everywhere, constrained to it as a rule's input is (has_value), so that
 * the instance as a rule encodes it as the axiom does. */
static int build_cval(inst *in, ir_graph *g, const ival *iv) {
  ir_shape s = iv[1].s;
  uint32_t bits = (uint32_t)iv[0].v;
  char name[48];
  if (iv[0].is_shape || iv[0].v < 0 || iv[0].v > UINT32_MAX ||
      (!iv[1].is_shape && !code_shape(iv[1].v, &s))) {
    ierr(in, "bad parameters for", "cval");
    return -1;
  }
  snprintf(name, sizeof name, "cval_%08x_%d", (unsigned)bits, s.rank);
  int t = ir_find_tensor(g, name);
  if (t >= 0)
    return t;
  if ((t = ir_add_tensor(g, name, IR_T_WEIGHT, &s, in->d)) < 0)
    return -1;
  int64_t n = ir_shape_numel(&s);
  float v, *p = base_arena_alloc(g->arena, sizeof(float) * (size_t)n);
  if (!p) {
    base_diag_set(in->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return -1;
  }
  memcpy(&v, &bits, sizeof v);
  for (int64_t i = 0; i < n; i++)
    p[i] = v;
  g->tensors[t].data = p;
  g->tensors[t].has_value = 1, g->tensors[t].value = v;
  return t;
}

static int build_app(inst *in, ir_graph *g, const verify_term *e) {
  const verify_fninfo *fi = verify_fn_info(e->fn);
  ival iv[VERIFY_MAX_ARGS];
  int32_t ids[VERIFY_MAX_ARGS];
  int ok = 1;
  for (int i = 0; i < fi->nint; i++)
    iv[i] = eval_int(in, e->args[i], &ok);
  if (e->fn == VERIFY_F_CVAL)
    return ok ? build_cval(in, g, iv)
              : (ierr(in, "bad parameters for", "cval"), -1);
  for (int i = 0; i < fi->nten; i++)
    if ((ids[i] = build(in, g, e->args[fi->nint + i])) < 0)
      return -1;
  gnode gn;
  memset(&gn, 0, sizeof gn);
  if (!ok || !describe(e, iv, &gn)) {
    ierr(in, "bad parameters for", fi->name);
    return -1;
  }
  if ((e->fn == VERIFY_F_CONCAT || e->fn == VERIFY_F_SPLIT0 ||
       e->fn == VERIFY_F_SPLIT1) &&
      !carried_size(in, g, e, ids[0], iv[1].v, &gn))
    return -1;
  if (e->fn == VERIFY_F_SLICE && !slice_range(in, g, ids[0], iv, &gn))
    return -1;
  if ((e->fn == VERIFY_F_MATMULB || e->fn == VERIFY_F_MATMULR) &&
      (g->tensors[ids[0]].shape.rank != iv[0].v + 1 ||
       g->tensors[ids[1]].shape.rank != 2 ||
       (e->fn == VERIFY_F_MATMULB ? g->tensors[ids[2]].shape.rank != 1
                                  : iv[0].v < 2))) {
    ierr(in, "axis or ranks disagree with the shapes in", fi->name);
    return -1;
  }
  if (fi->nten == 2 &&
      !ew_shapes(e->fn, &g->tensors[ids[0]].shape, &g->tensors[ids[1]].shape)) {
    ierr(in, "operand shapes are not of the class of", fi->name);
    return -1;
  }
  int nd = ir_add_node(g, gn.op, ids, fi->nten, &gn.a, NULL, in->d);
  return nd < 0 ? -1 : g->nodes[nd].out[gn.slot];
}

static int build(inst *in, ir_graph *g, const verify_term *e) {
  if (e->kind == VERIFY_T_VAR)
    return build_var(in, g, e);
  if (e->kind != VERIFY_T_APP ||
      verify_fn_info(e->fn)->result != VERIFY_S_TENSOR) {
    ierr(in, "not a tensor term", NULL);
    return -1;
  }
  return build_app(in, g, e);
}

static ir_graph *side(inst *in, const verify_term *e, const char *name) {
  ir_graph *g = ir_graph_new(name);
  if (!g) {
    base_diag_set(in->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  int t = build(in, g, e);
  if (t < 0 || ir_add_output(g, t, in->d) != BASE_OK) {
    ir_graph_free(g);
    return NULL;
  }
  return g;
}

base_status verify_axiom_graphs(const verify_axiom *ax, ir_graph **lhs,
                                ir_graph **rhs, base_diag *d) {
  *lhs = *rhs = NULL;
  verify_form *f = base_malloc(sizeof *f);
  if (!f)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  inst in;
  memset(&in, 0, sizeof in);
  in.ax = ax, in.f = f, in.d = d;
  base_status st = verify_form_parse(ax, f, d);
  if (st == BASE_OK)
    st = parse_inst(&in);
  int ok = 1;
  if (st == BASE_OK && f->guard && !(eval_bool(&in, f->guard, &ok) && ok))
    st = ierr(&in, "the guard does not hold for the instance", NULL);
  if (st == BASE_OK && (!(*lhs = side(&in, f->lhs, "lhs")) ||
                        !(*rhs = side(&in, f->rhs, "rhs")))) {
    st = d && d->code ? d->code : BASE_ERR_INTERNAL;
    ir_graph_free(*lhs);
    *lhs = NULL;
  }
  free(f);
  return st;
}
