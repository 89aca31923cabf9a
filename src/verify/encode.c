/* encode.c: graphs and axioms as Z3 terms.
 *
 * Tensors are one uninterpreted sort; each function symbol of verify_int.h is
 * an uninterpreted Z3 function (Int parameters, then tensors). A graph input or
 * weight is a Tensor constant named after it, so src and dst of a rule share
 * them. Operators whose form the axioms cover get their own symbol; any
 * other (or an unusual form: dilated conv, explicit pads above 255, batched
 * matmul with a batched right operand) becomes a generic
 * function named after the operator and all its parameters, equal only by
 * congruence.
 *
 * Every function here returns NULL (or stops) once a Z3 call has failed
 * (verify_z3_bad, guard.c): Z3 crashes on a NULL argument.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "encode.h"

static Z3_ast num(verify_ctx *c, int64_t v) {
  return Z3_mk_int64(c->z, v, c->I);
}

static Z3_ast apply(verify_ctx *c, verify_fn f, const int64_t *iv,
                    const Z3_ast *tv) {
  const verify_fninfo *fi = verify_fn_info(f);
  Z3_ast a[VERIFY_MAX_ARGS];
  for (int i = 0; i < fi->nint && !verify_z3_bad(); i++)
    a[i] = num(c, iv[i]);
  for (int i = 0; i < fi->nten; i++)
    a[fi->nint + i] = tv[i];
  if (verify_z3_bad())
    return NULL;
  return Z3_mk_app(c->z, c->fn[f], (unsigned)(fi->nint + fi->nten), a);
}

/* Shape code: rank + 8 * (d0 + M * (d1 + M * (...))), M = 2^36 + 1 (dims
 * are below 2^36), injective; computed by Z3's simplifier. */
Z3_ast verify_shape_code(verify_ctx *c, const ir_shape *s) {
  Z3_ast m = Z3_mk_numeral(c->z, "68719476737", c->I), acc = num(c, 0);
  for (int i = s->rank - 1; i >= 0 && !verify_z3_bad(); i--) {
    Z3_ast t[2] = {acc, m}, u[2];
    u[0] = num(c, s->dim[i]);
    u[1] = verify_z3_bad() ? NULL : Z3_mk_mul(c->z, 2, t);
    acc = verify_z3_bad() ? NULL : Z3_mk_add(c->z, 2, u);
  }
  Z3_ast t[2] = {verify_z3_bad() ? NULL : num(c, 8), acc}, u[2];
  u[0] = verify_z3_bad() ? NULL : num(c, s->rank);
  u[1] = verify_z3_bad() ? NULL : Z3_mk_mul(c->z, 2, t);
  Z3_ast sum = verify_z3_bad() ? NULL : Z3_mk_add(c->z, 2, u);
  return verify_z3_bad() ? NULL : Z3_simplify(c->z, sum);
}

/* ---- generic operators -------------------------------------------------- */

static const size_t param_off[IR_NPARAMS] = {
#define PARAM(ID, name, kind, field) [IR_P_##ID] = offsetof(ir_attrs, field),
#include "../ir/params.def"
#undef PARAM
};

static int put_list(char *b, size_t n, const int64_t *v, int k) {
  int w = snprintf(b, n, "[");
  for (int i = 0; i < k && (size_t)w < n; i++)
    w +=
        snprintf(b + w, n - (size_t)w, "%s%lld", i ? "," : "", (long long)v[i]);
  if ((size_t)w < n)
    w += snprintf(b + w, n - (size_t)w, "]");
  return w;
}

/* Writes "name=value" of parameter p of attributes a into b. */
static int put_param(char *b, size_t n, ir_param_id p, const ir_attrs *a) {
  const char *f = (const char *)a + param_off[p];
  int w = snprintf(b, n, "%s=", ir_param_name(p));
  const int32_t *i32 = (const int32_t *)(const void *)f;
  switch (ir_param_kind_of(p)) {
  case IR_PK_FLOAT:
    return w + snprintf(b + w, n - (size_t)w, "%.9g",
                        (double)*(const float *)(const void *)f);
  case IR_PK_PAIR:
    return w + snprintf(b + w, n - (size_t)w, "[%d,%d]", i32[0], i32[1]);
  case IR_PK_PAD:
    return w + snprintf(b + w, n - (size_t)w, "%d:[%d,%d,%d,%d]", a->padmode,
                        i32[0], i32[1], i32[2], i32[3]);
  case IR_PK_LIST: return w + put_list(b + w, n - (size_t)w, a->list, a->nlist);
  case IR_PK_LIST2:
    return w + put_list(b + w, n - (size_t)w, a->list2, a->nlist2);
  default: return w + snprintf(b + w, n - (size_t)w, "%d", *i32);
  }
}

/* The generic function of node nd's output slot: "op{p=v ...}#slot". */
static Z3_func_decl generic_decl(verify_ctx *c, const ir_node *nd, int slot) {
  const ir_opinfo *oi = ir_op(nd->op);
  char name[1024];
  int w = snprintf(name, sizeof name, "%s{", oi->name);
  for (int i = 0; i < oi->nparams && (size_t)w < sizeof name - 64; i++) {
    w += i ? snprintf(name + w, sizeof name - (size_t)w, " ") : 0;
    w +=
        put_param(name + w, sizeof name - (size_t)w - 1, oi->params[i], &nd->a);
  }
  if (nd->op == IR_OP_FUSED || nd->op == IR_OP_MOVE) /* one per body */
    w += snprintf(name + w, sizeof name - (size_t)w, "body=%016llx",
                  (unsigned long long)nd->a.body);
  snprintf(name + w, sizeof name - (size_t)w, "}#%d", slot);
  Z3_sort dom[IR_MAX_IN];
  for (int i = 0; i < nd->nin; i++)
    dom[i] = c->T;
  Z3_symbol sym = Z3_mk_string_symbol(c->z, name);
  if (verify_z3_bad())
    return NULL;
  return Z3_mk_func_decl(c->z, sym, (unsigned)nd->nin, dom, c->T);
}

static void note_generic(verify_enc *e, const char *name) {
  size_t n = strlen(e->generic);
  if (strstr(e->generic, name) || n + strlen(name) + 3 >= sizeof e->generic)
    return;
  snprintf(e->generic + n, sizeof e->generic - n, "%s%s", n ? ", " : "", name);
}

static void encode_generic(verify_ctx *c, verify_enc *e, const ir_node *nd,
                           const Z3_ast *in, Z3_ast *out) {
  for (int k = 0; k < nd->nout; k++) {
    Z3_func_decl f = verify_z3_bad() ? NULL : generic_decl(c, nd, k);
    out[k] = verify_z3_bad() ? NULL : Z3_mk_app(c->z, f, (unsigned)nd->nin, in);
  }
  note_generic(e, ir_op(nd->op)->name);
}

/* ---- operators with axioms ---------------------------------------------- */

static const ir_shape *shape_in(const ir_graph *g, const ir_node *nd, int i) {
  return &g->tensors[nd->in[i]].shape;
}

/* ---- element-wise operators of two operands ---------------------------- */

int verify_bias_vector(const ir_shape *x, const ir_shape *b) {
  return x->rank >= 2 && b->rank == 1 && b->dim[0] == x->dim[x->rank - 1];
}

/* x of shape *s reshaped to rank r (ones prepended: numpy's broadcasting
 * aligns the last axes); x itself when its rank is r or more. */
static Z3_ast rank_up(verify_ctx *c, ir_shape *s, Z3_ast x, int r) {
  if (s->rank >= r)
    return x;
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < r; i++)
    dims[i] = i < r - s->rank ? 1 : s->dim[i - (r - s->rank)];
  *s = ir_shape_make(r, dims);
  Z3_ast a[2] = {verify_shape_code(c, s), x};
  return verify_z3_bad() ? NULL
                         : Z3_mk_app(c->z, c->fn[VERIFY_F_RESHAPE], 2, a);
}

/* Which operand of a product is a scale of one element and rank 1 or more
 * no higher than the other's (which has more elements, so the product has
 * its shape): 1 for b, 0 for a, -1 neither. Such a product is smul by the
 * element reshaped to [] (ViT's q and k scaled by a [1] constant). */
static int one_scale(const ir_shape *sa, const ir_shape *sb) {
  int64_t na = ir_shape_numel(sa), nb = ir_shape_numel(sb);
  if (nb == 1 && sb->rank >= 1 && sa->rank >= sb->rank && na > 1)
    return 1;
  if (na == 1 && sa->rank >= 1 && sb->rank >= sa->rank && nb > 1)
    return 0;
  return -1;
}

/* a OP b, OP ewadd, ewmul, ewsub or ewdiv, of operands of shapes sa and sb
 * (docs/verify.md, "Broadcasting"). Equal shapes: the operator's symbol,
 * whose axioms are laws of equal shapes (a split, concat or convolution of
 * a sum is the sum of the parts). A product with a scalar [] (either
 * order) is smul, and so is one with an operand of one element (one_scale:
 * that element as []); a vector [N] added along the last axis of a value of
 * rank 2 or more (either order) is bcadd(x, b) (the ONNX projections' bias
 * Add). Any other broadcast: the operand of lower rank reshaped up, then
 * the operator's symbol if the shapes now agree, else its broadcast symbol
 * (badd, bmul, bsub, bdiv), whose only axioms are laws that hold under
 * broadcasting. Every encoder of an element-wise part (attention's mask,
 * the residual epilogue, RMSNorm) comes here, so that a graph writing the
 * part out encodes alike. */
static Z3_ast enc_ew2(verify_ctx *c, ir_opcode op, const ir_shape *sa,
                      const ir_shape *sb, Z3_ast a, Z3_ast b) {
  static const struct {
    ir_opcode op;
    verify_fn same, bc;
  } sym[] = {{IR_OP_EWADD, VERIFY_F_EWADD, VERIFY_F_BADD},
             {IR_OP_EWMUL, VERIFY_F_EWMUL, VERIFY_F_BMUL},
             {IR_OP_EWSUB, VERIFY_F_EWSUB, VERIFY_F_BSUB},
             {IR_OP_EWDIV, VERIFY_F_EWDIV, VERIFY_F_BDIV}};
  size_t k = 0;
  while (sym[k].op != op)
    k++;
  int same = ir_shape_eq(sa, sb), v = verify_bias_vector(sa, sb)   ? 1
                                      : verify_bias_vector(sb, sa) ? 0
                                                                   : -1;
  Z3_ast t[2] = {a, b};
  int one = !same && op == IR_OP_EWMUL ? one_scale(sa, sb) : -1;
  if (one >= 0) { /* a scale of one element, [1] or [1,1]: as a scalar */
    static const ir_shape scalar = {0, {0}};
    Z3_ast k[2] = {verify_shape_code(c, &scalar), one ? b : a};
    t[0] = one ? a : b;
    t[1] =
        verify_z3_bad() ? NULL : Z3_mk_app(c->z, c->fn[VERIFY_F_RESHAPE], 2, k);
    return verify_z3_bad() ? NULL : apply(c, VERIFY_F_SMUL, NULL, t);
  }
  if (!same && op == IR_OP_EWMUL && (sa->rank == 0) != (sb->rank == 0)) {
    if (sa->rank == 0)
      t[0] = b, t[1] = a;
    return apply(c, VERIFY_F_SMUL, NULL, t);
  }
  if (!same && op == IR_OP_EWADD && v >= 0) {
    t[0] = v ? a : b, t[1] = v ? b : a;
    return apply(c, VERIFY_F_BCADD, NULL, t);
  }
  if (!same) {
    ir_shape ua = *sa, ub = *sb;
    t[0] = rank_up(c, &ua, a, sb->rank);
    t[1] = verify_z3_bad() ? NULL : rank_up(c, &ub, b, sa->rank);
    same = ir_shape_eq(&ua, &ub);
  }
  return verify_z3_bad() ? NULL
                         : apply(c, same ? sym[k].same : sym[k].bc, NULL, t);
}

/* An ewadd, ewmul, ewsub or ewdiv node by enc_ew2; 0 for other nodes. */
static int enc_ew_node(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                       const Z3_ast *in, Z3_ast *out) {
  if ((nd->op != IR_OP_EWADD && nd->op != IR_OP_EWMUL &&
       nd->op != IR_OP_EWSUB && nd->op != IR_OP_EWDIV) ||
      nd->nin != 2)
    return 0;
  out[0] =
      enc_ew2(c, nd->op, shape_in(g, nd, 0), shape_in(g, nd, 1), in[0], in[1]);
  return 1;
}

static Z3_ast enc_concat(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                         const Z3_ast *in) {
  Z3_ast acc = in[0];
  int64_t n = shape_in(g, nd, 0)->dim[nd->a.axis];
  for (int i = 1; i < nd->nin; i++) {
    int64_t iv[2] = {nd->a.axis, n};
    Z3_ast tv[2] = {acc, in[i]};
    acc = apply(c, VERIFY_F_CONCAT, iv, tv);
    n += shape_in(g, nd, i)->dim[nd->a.axis];
  }
  return acc;
}

/* A slice as one (slice a s e ..) per axis it narrows, axis 0 innermost
 * (an axis taken whole is no term; a slice of every axis whole is its
 * input); 0 when a range is not 0 <= s < e <= dim (then generic). */
static int enc_slice(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                     Z3_ast x, Z3_ast *out) {
  const ir_shape *sh = shape_in(g, nd, 0);
  const ir_attrs *a = &nd->a;
  if (a->nlist != sh->rank || a->nlist2 != sh->rank)
    return 0;
  for (int k = 0; k < sh->rank; k++)
    if (a->list[k] < 0 || a->list[k] >= a->list2[k] || a->list2[k] > sh->dim[k])
      return 0;
  for (int k = 0; k < sh->rank; k++)
    if (a->list[k] != 0 || a->list2[k] != sh->dim[k]) {
      int64_t iv[3] = {k, a->list[k], a->list2[k]};
      x = apply(c, VERIFY_F_SLICE, iv, &x);
    }
  out[0] = x;
  return 1;
}

static void enc_split(verify_ctx *c, const ir_node *nd, Z3_ast x, Z3_ast *out) {
  for (int k = 0; k + 1 < nd->nout; k++) {
    int64_t iv[2] = {nd->a.axis, nd->a.list[k]};
    out[k] = apply(c, VERIFY_F_SPLIT0, iv, &x);
    x = apply(c, VERIFY_F_SPLIT1, iv, &x);
  }
  out[nd->nout - 1] = x;
}

static int plain_window(const ir_attrs *a) {
  return a->padmode == IR_PAD_SAME || a->padmode == IR_PAD_VALID;
}

/* The activation operators' codes are ir_act's (ops.def's act column). */
_Static_assert((int)VERIFY_ACT_RELU == (int)IR_ACT_RELU &&
                   (int)VERIFY_ACT_SIGMOID == (int)IR_ACT_SIGMOID &&
                   (int)VERIFY_ACT_TANH == (int)IR_ACT_TANH &&
                   (int)VERIFY_ACT_GELU == (int)IR_ACT_GELU,
               "VERIFY_ACT_* codes follow ir_act");

/* Encodes the shape-independent operators; 0 when nd needs another rule. */
static int enc_simple(verify_ctx *c, const ir_node *nd, const Z3_ast *in,
                      Z3_ast *out) {
  const ir_attrs *a = &nd->a;
  int64_t iv[6];
  int f = -1; /* a verify_fn */
  switch (nd->op) {
  case IR_OP_EWADD: /* enc_ew_node, by the operands' shapes */
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV: return 0;
  case IR_OP_WHERE: f = VERIFY_F_WHERE; break;
  case IR_OP_EQUAL: f = VERIFY_F_EQUAL; break;
  case IR_OP_NOT: f = VERIFY_F_LNOT; break;
  case IR_OP_SMUL: f = VERIFY_F_SMUL; break;
  case IR_OP_TRANSPOSE:
    f = VERIFY_F_TRANSPOSE, iv[0] = verify_perm_code(a->list, a->nlist);
    break;
  case IR_OP_ENLARGE:
    f = VERIFY_F_ENLARGE, iv[0] = a->kernel[0], iv[1] = a->kernel[1];
    break;
  case IR_OP_CONST_ICONV:
    f = VERIFY_F_ICONV;
    for (int i = 0; i < 4; i++)
      iv[i] = a->list[i];
    break;
  case IR_OP_CONST_IMM: f = VERIFY_F_IMM, iv[0] = a->list[0]; break;
  case IR_OP_CONST_POOL:
    f = VERIFY_F_CPOOL, iv[0] = a->list[0], iv[1] = a->list[2];
    iv[2] = a->list[3];
    break;
#include "../ir/ew_cases.h"
    f = VERIFY_F_ACT, iv[0] = ir_ew_of(nd->op)->index + 1; /* VERIFY_ACT_* */
    break;
  case IR_OP_CONV2D:
  case IR_OP_MATMUL:
  case IR_OP_CLIP:
  case IR_OP_CONCAT:
  case IR_OP_SPLIT:
  case IR_OP_RESHAPE:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_PAD:
  case IR_OP_SLICE:
  case IR_OP_CONST_ONES:
  case IR_OP_GATHER: /* int64 / bool operators: uninterpreted, no laws */
  case IR_OP_CAST:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED: /* encode_generic: one uninterpreted function per body */
    return 0;       /* encode_node: its own case, enc_windowed
                       or encode_generic */
  }
  if (f < 0)
    return 0; /* not an operator (a corrupt node) */
  out[0] = apply(c, (verify_fn)f, iv, in);
  return 1;
}

static int enc_windowed(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                        const Z3_ast *in, Z3_ast *out);

/* clip(y) min=lo max=hi as a clip node's term: the generic function of
 * its bounds (no axioms; equal by congruence). */
static Z3_ast enc_clip(verify_ctx *c, float lo, float hi, Z3_ast y) {
  ir_node k;
  memset(&k, 0, sizeof k);
  k.op = IR_OP_CLIP, k.nin = 1, k.nout = 1;
  ir_attrs_default(IR_OP_CLIP, &k.a);
  k.a.lo = lo, k.a.hi = hi;
  Z3_func_decl f = verify_z3_bad() ? NULL : generic_decl(c, &k, 0);
  return verify_z3_bad() ? NULL : Z3_mk_app(c->z, f, 1, &y);
}

/* conv2d or matmul with act=clip by its definition: clip(y) min max, y the
 * node with act none (the lower stage's clip epilogue; the third tier's
 * conv2d+clip6). 0 when y has no encoding but the generic one. */
static int enc_clipped(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                       const Z3_ast *in, Z3_ast *out) {
  ir_node p = *nd;
  p.a.act = IR_ACT_NONE;
  p.a.lo = p.a.hi = 0;
  Z3_ast y;
  if (!enc_windowed(c, g, &p, in, &y))
    return 0;
  out[0] = enc_clip(c, nd->a.lo, nd->a.hi, y);
  return 1;
}

/* conv2d or matmul with a residual input r (the fourth: the lower stage's
 * epilogue, docs/graph-format.md) by its definition, the axiom
 * `residual`: act(y + r), y the product with its bias and act none
 * (docs/verify.md). 0 when y has no encoding but the generic one. */
static int enc_residual(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                        const Z3_ast *in, Z3_ast *out) {
  ir_node p = *nd;
  p.nin = 3;
  p.a.act = IR_ACT_NONE;
  Z3_ast y;
  if (nd->a.act == IR_ACT_CLIP || !enc_windowed(c, g, &p, in, &y))
    return 0;
  out[0] = enc_ew2(c, IR_OP_EWADD, &g->tensors[nd->out[0]].shape,
                   shape_in(g, nd, 3), y, in[3]);
  if (nd->a.act != IR_ACT_NONE) {
    int64_t iv[1] = {nd->a.act}; /* VERIFY_ACT_* follow ir_act */
    out[0] = apply(c, VERIFY_F_ACT, iv, out);
  }
  return 1;
}

/* Whether a product of x and y is batched alike: one rank >= 3, the
 * leading dimensions equal (no broadcast of the batch). */
static int batched(const ir_shape *x, const ir_shape *y) {
  if (x->rank < 3 || x->rank != y->rank)
    return 0;
  for (int k = 0; k + 2 < x->rank; k++)
    if (x->dim[k] != y->dim[k])
      return 0;
  return 1;
}

/* Conv, matmul and pools: only their plain forms have axioms. */
static int enc_windowed(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                        const Z3_ast *in, Z3_ast *out) {
  const ir_attrs *a = &nd->a;
  if ((nd->op == IR_OP_CONV2D || nd->op == IR_OP_MATMUL) &&
      a->act == IR_ACT_CLIP)
    return enc_clipped(c, g, nd, in, out);
  if ((nd->op == IR_OP_CONV2D || nd->op == IR_OP_MATMUL) && nd->nin == 4)
    return enc_residual(c, g, nd, in, out);
  if (nd->op == IR_OP_CONV2D && verify_pad_code(a) >= 0 &&
      a->dilation[0] == 1 && a->dilation[1] == 1 && nd->nin <= 3 &&
      a->act != IR_ACT_CLIP) { /* with a bias: its own symbol (lowered
                                  forms, src/fuse/lower.h, have none);
                                  explicit pads by their code */
    int64_t iv[5] = {a->stride[0], a->stride[1], verify_pad_code(a), a->groups,
                     a->act};
    out[0] =
        apply(c, nd->nin == 2 ? VERIFY_F_CONV2D : VERIFY_F_CONV2DB, iv, in);
    return 1;
  }
  if (nd->op == IR_OP_MATMUL && nd->nin == 2 && shape_in(g, nd, 0)->rank == 2 &&
      shape_in(g, nd, 1)->rank == 2) {
    int64_t iv[1] = {a->act};
    out[0] = apply(c, VERIFY_F_MATMUL, iv, in);
    return 1;
  }
  if (nd->op == IR_OP_MATMUL && nd->nin == 2 && shape_in(g, nd, 0)->rank >= 3 &&
      shape_in(g, nd, 1)->rank == 2) { /* batched rows, 2-D weights */
    int64_t iv[2] = {shape_in(g, nd, 0)->rank - 1, a->act};
    out[0] = apply(c, VERIFY_F_MATMULR, iv, in);
    return 1;
  }
  if (nd->op == IR_OP_MATMUL && nd->nin == 2 &&
      batched(shape_in(g, nd, 0), shape_in(g, nd, 1))) {
    int64_t iv[1] = {a->act};
    out[0] = apply(c, VERIFY_F_BMATMUL, iv, in);
    return 1;
  }
  if (nd->op == IR_OP_MATMUL && nd->nin == 3 && shape_in(g, nd, 1)->rank == 2 &&
      shape_in(g, nd, 2)->rank == 1) { /* x of any rank: ax is its last axis */
    int64_t iv[2] = {shape_in(g, nd, 0)->rank - 1, a->act};
    out[0] = apply(c, VERIFY_F_MATMULB, iv, in);
    return 1;
  }
  if ((nd->op == IR_OP_AVGPOOL || nd->op == IR_OP_MAXPOOL) && plain_window(a)) {
    int64_t iv[6] = {a->kernel[0], a->kernel[1], a->stride[0],
                     a->stride[1], a->padmode,   a->count_include_pad};
    out[0] =
        apply(c, nd->op == IR_OP_AVGPOOL ? VERIFY_F_AVGPOOL : VERIFY_F_MAXPOOL,
              iv, in);
    return 1;
  }
  return 0;
}

static void encode_node(verify_ctx *c, verify_enc *e, const ir_graph *g,
                        const ir_node *nd, const Z3_ast *in, Z3_ast *out);

/* Node nd's operator op on inputs from slots i0, i1 of nd (for their
 * ranks) with values x: a matmul or softmax of the attention's definition
 * (default attributes; softmax's axis the last). */
static Z3_ast enc_part(verify_ctx *c, verify_enc *e, const ir_graph *g,
                       const ir_node *nd, ir_opcode op, int i0, int i1,
                       const Z3_ast *x) {
  ir_node p;
  int32_t pin[2] = {nd->in[i0], nd->in[i1]}, pout[1] = {nd->out[0]};
  Z3_ast y = NULL;
  memset(&p, 0, sizeof p);
  p.op = op, p.nin = op == IR_OP_MATMUL ? 2 : 1, p.nout = 1;
  p.in = pin, p.out = pout;
  ir_attrs_default(op, &p.a);
  if (op == IR_OP_SOFTMAX)
    p.a.axis = shape_in(g, nd, 0)->rank - 1;
  encode_node(c, e, g, &p, x, &y);
  return y;
}

/* Whether term s is const_ones of shape [] (a scale of 1: what the
 * fusion stage gives an attention with a bias and no scale). */
static int scalar_one(verify_ctx *c, Z3_ast s) {
  ir_shape sc = {0};
  Z3_ast code = verify_shape_code(c, &sc);
  Z3_ast one =
      verify_z3_bad() ? NULL : Z3_mk_app(c->z, c->fn[VERIFY_F_ONES], 1, &code);
  return !verify_z3_bad() && Z3_is_eq_ast(c->z, s, one);
}

/* The guard of an attention (guard=1) on probabilities p: where(not(
 * equal(p, p)), 0, p), PyTorch's export of Where(IsNaN(p), 0, p), the 0
 * a (cval 0 code([])) as a rule input bound to 0 is (docs/verify.md). */
static Z3_ast enc_guard(verify_ctx *c, Z3_ast p) {
  ir_shape sc = {0};
  Z3_ast t[3] = {p, p, NULL}, a[2] = {num(c, 0), NULL};
  a[1] = verify_z3_bad() ? NULL : verify_shape_code(c, &sc);
  Z3_ast zero =
      verify_z3_bad() ? NULL : Z3_mk_app(c->z, c->fn[VERIFY_F_CVAL], 2, a);
  Z3_ast eq = apply(c, VERIFY_F_EQUAL, NULL, t);
  t[0] = apply(c, VERIFY_F_LNOT, NULL, &eq), t[1] = zero, t[2] = p;
  return apply(c, VERIFY_F_WHERE, NULL, t);
}

/* attention(q, k, v[, s[, b]]) in the default layout by its definition
 * (docs/verify.md): matmul(softmax(ewadd(smul(matmul(q, k), s), b)), v),
 * the smul left out where s is const_ones [] (times 1), with guard=1 the
 * probabilities guarded (enc_guard), each part encoded as that node of a
 * graph is (so a graph stating it proves equal by the encoding); the row
 * layout by its own definition (enc_att_rows). */
static int enc_att_rows(verify_ctx *c, verify_enc *e, const ir_graph *g,
                        const ir_node *nd, const Z3_ast *in, Z3_ast *out);

static int enc_attention(verify_ctx *c, verify_enc *e, const ir_graph *g,
                         const ir_node *nd, const Z3_ast *in, Z3_ast *out) {
  if (nd->a.groups)
    return enc_att_rows(c, e, g, nd, in, out);
  Z3_ast t[2] = {in[0], in[1]},
         x = enc_part(c, e, g, nd, IR_OP_MATMUL, 0, 1, t);
  ir_shape sc = *shape_in(g, nd, 0); /* the scores' [.., Sq, Sk] */
  const ir_shape *k = shape_in(g, nd, 1);
  if (sc.rank >= 2 && k->rank >= 2)
    sc.dim[sc.rank - 1] = k->dim[k->rank - 1];
  if (nd->nin >= 4 && !scalar_one(c, in[3]))
    x = enc_ew2(c, IR_OP_EWMUL, &sc, shape_in(g, nd, 3), x, in[3]);
  if (nd->nin == 5)
    x = enc_ew2(c, IR_OP_EWADD, &sc, shape_in(g, nd, 4), x, in[4]);
  t[0] = enc_part(c, e, g, nd, IR_OP_SOFTMAX, 0, 0, &x), t[1] = in[2];
  if (nd->a.keepdims) /* guard=1 */
    t[0] = enc_guard(c, t[0]);
  out[0] = enc_part(c, e, g, nd, IR_OP_MATMUL, 0, 2, t);
  return 1;
}

/* Adds to h the node op(x) with attributes a; its output, or -1 (also
 * where x is -1: a step before failed). */
static int def_node(ir_graph *h, ir_opcode op, const int32_t *x, int n,
                    const ir_attrs *a) {
  base_diag d;
  for (int k = 0; k < n; k++)
    if (x[k] < 0)
      return -1;
  int m = ir_add_node(h, op, x, n, a, NULL, &d);
  return m < 0 ? -1 : h->nodes[m].out[0];
}

/* Adds to h the reshape or transpose of x whose shape or perm is list[0..n). */
static int def_move(ir_graph *h, ir_opcode op, int x, const int64_t *list,
                    int n) {
  ir_attrs a;
  ir_attrs_default(op, &a);
  a.nlist = n;
  memcpy(a.list, list, sizeof(int64_t) * (size_t)n);
  return def_node(h, op, (int32_t[]){x}, 1, &a);
}

/* Operand j (0 q, 1 k, 2 v) of a row-layout attention as the default
 * layout reads it: rows x [.., R, C] (rank r >= 3) sliced to the heads'
 * columns (where they are not all of C), reshaped to [.., R, H, w],
 * transposed to [.., H, R, w] (k to [.., H, w, R]). */
static int rows_operand(ir_graph *h, const ir_attrs *att, int x, int j) {
  const ir_shape *s = &h->tensors[x].shape;
  int r = s->rank;
  int64_t H = att->groups, w = att->list2[j == 2], col = att->list[j];
  int64_t shp[IR_MAX_RANK], perm[IR_MAX_RANK];
  if (r + 1 > IR_MAX_RANK)
    return -1;
  for (int k = 0; k < r - 1; k++)
    shp[k] = s->dim[k];
  shp[r - 1] = H, shp[r] = w;
  ir_att_rows_perm(r, j == 1, perm);
  if (col != 0 || s->dim[r - 1] != H * w) {
    ir_attrs a;
    ir_attrs_default(IR_OP_SLICE, &a);
    a.nlist = a.nlist2 = r;
    for (int k = 0; k < r; k++)
      a.list[k] = 0, a.list2[k] = s->dim[k];
    a.list[r - 1] = col, a.list2[r - 1] = col + H * w;
    x = def_node(h, IR_OP_SLICE, &x, 1, &a);
  }
  x = def_move(h, IR_OP_RESHAPE, x, shp, r + 1);
  return def_move(h, IR_OP_TRANSPOSE, x, perm, r + 1);
}

/* The graph of a row-layout attention's definition (docs/graph-format.md)
 * on inputs of nd's shapes: each operand (seqfirst: first transposed from
 * [S,B,C] to [B,S,C]) by rows_operand, the node in the default layout, its
 * result transposed to [.., S, H, E] and reshaped to [.., S, H*E]. NULL
 * where it does not build (rows of rank < 3, seqfirst rows of rank other
 * than 3, out of memory). */
static ir_graph *rows_definition(const ir_graph *g, const ir_node *nd) {
  const ir_attrs *att = &nd->a;
  int r = shape_in(g, nd, 0)->rank;
  if ((att->axis && r != 3) || att->nlist != 3 || att->nlist2 != 2 || r < 3 ||
      r + 1 > IR_MAX_RANK)
    return NULL;
  ir_graph *h = ir_graph_new("rows");
  int32_t x[5];
  int ok = h != NULL;
  for (int i = 0; ok && i < nd->nin; i++) {
    char name[16];
    snprintf(name, sizeof name, "i%d", i);
    const ir_shape *s = shape_in(g, nd, i);
    base_diag d;
    ok = (i >= 3 || s->rank == r) &&
         (x[i] = ir_add_tensor(h, name, IR_T_INPUT, s, &d)) >= 0;
  }
  static const int64_t bsc[3] = {1, 0, 2};
  for (int j = 0; ok && j < 3; j++) {
    if (att->axis) /* seqfirst */
      x[j] = def_move(h, IR_OP_TRANSPOSE, x[j], bsc, 3);
    ok = x[j] >= 0 && (x[j] = rows_operand(h, att, x[j], j)) >= 0;
  }
  ir_attrs a = *att;
  a.groups = 0, a.nlist = a.nlist2 = 0, a.axis = 0;
  int64_t back[IR_MAX_RANK];
  ir_att_rows_perm(r, 0, back);
  const ir_shape *o = &g->tensors[nd->out[0]].shape;
  int y = ok ? def_node(h, IR_OP_ATTENTION, x, nd->nin, &a) : -1;
  y = def_move(h, IR_OP_TRANSPOSE, y, back, r + 1);
  y = def_move(h, IR_OP_RESHAPE, y, o->dim, o->rank);
  if (y < 0 || !ir_shape_eq(&h->tensors[y].shape, o)) {
    ir_graph_free(h);
    return NULL;
  }
  return h;
}

/* attention in the row layout (heads > 0) by its definition: the graph of
 * rows_definition encoded node by node on nd's input terms, its shape
 * facts asserted, so that a graph of transposes and reshapes around a
 * default-layout attention proves equal to it (the twelfth tier,
 * docs/generation.md). 0 (uninterpreted) where that graph does not build. */
static int enc_att_rows(verify_ctx *c, verify_enc *e, const ir_graph *g,
                        const ir_node *nd, const Z3_ast *in, Z3_ast *out) {
  ir_graph *h = rows_definition(g, nd);
  if (!h)
    return 0;
  Z3_ast t[32]; /* at most 5 inputs, 5 nodes an operand (seqfirst), 3 more */
  int ok = h->ntensors <= 32;
  for (int i = 0; ok && i < nd->nin; i++)
    t[i] = in[i]; /* h's inputs are its first tensors, in order */
  for (int i = 0; ok && i < h->nnodes && !verify_z3_bad(); i++) {
    const ir_node *n = &h->nodes[i];
    Z3_ast a[IR_MAX_IN], o[IR_MAX_IN];
    for (int k = 0; k < n->nin; k++)
      a[k] = t[n->in[k]];
    encode_node(c, e, h, n, a, o);
    t[n->out[0]] = o[0];
  }
  if (ok && !verify_z3_bad()) {
    verify_assert_shapes(c, h, t);
    out[0] = t[h->nodes[h->nnodes - 1].out[0]];
  }
  ir_graph_free(h);
  return ok && !verify_z3_bad();
}

/* A rule input constrained to a value (ir_tensor.has_value): the term
 * (cval bits code), so that inputs of one value and shape are one tensor
 * and axioms can speak of the constant (docs/verify.md). */
static Z3_ast value_const(verify_ctx *c, const ir_tensor *t) {
  Z3_ast a[2] = {num(c, ir_f32_bits(t->value)), NULL};
  a[1] = verify_z3_bad() ? NULL : verify_shape_code(c, &t->shape);
  return verify_z3_bad() ? NULL : Z3_mk_app(c->z, c->fn[VERIFY_F_CVAL], 2, a);
}

/* layernorm(x, gamma) rms=1 over the last axis (RMSNorm) by its
 * definition: gamma * (x * (1 / sqrt(mean(x * x) + eps))), the mean the
 * generic reduce_mean over the last axis (keepdims), 1 and eps (cval ..)
 * of shape [] as rule inputs bound to them are, each operator by enc_ew2
 * at the shapes the written-out graph has (the exports write RMSNorm so;
 * docs/verify.md). 0 for other layernorms (generic). */
static int enc_rmsnorm(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                       const Z3_ast *in, Z3_ast *out) {
  const ir_attrs *a = &nd->a;
  int r = shape_in(g, nd, 0)->rank;
  if (nd->op != IR_OP_LAYERNORM || nd->nin != 2 || !ir_ln_rms(a) || r < 1 ||
      (a->axis != -1 && a->axis != r - 1))
    return 0;
  ir_node m;
  memset(&m, 0, sizeof m);
  m.op = IR_OP_REDUCE_MEAN, m.nin = 1, m.nout = 1;
  ir_attrs_default(IR_OP_REDUCE_MEAN, &m.a);
  m.a.nlist = 1, m.a.list[0] = r - 1;
  ir_tensor k;
  memset(&k, 0, sizeof k);
  k.has_value = 1, k.value = 1.0f;
  Z3_ast one = value_const(c, &k);
  k.value = a->eps;
  Z3_ast eps = value_const(c, &k);
  const ir_shape *xs = shape_in(g, nd, 0);
  ir_shape ms = *xs, ss = {0}; /* the mean's [.., 1], the constants' [] */
  ms.dim[r - 1] = 1;
  Z3_ast y = enc_ew2(c, IR_OP_EWMUL, xs, xs, in[0], in[0]);
  Z3_func_decl f = verify_z3_bad() ? NULL : generic_decl(c, &m, 0);
  y = verify_z3_bad() ? NULL : Z3_mk_app(c->z, f, 1, &y);
  y = enc_ew2(c, IR_OP_EWADD, &ms, &ss, y, eps);
  int64_t iv[1] = {VERIFY_ACT_SQRT};
  y = apply(c, VERIFY_F_ACT, iv, &y);
  y = enc_ew2(c, IR_OP_EWDIV, &ss, &ms, one, y);
  y = enc_ew2(c, IR_OP_EWMUL, xs, &ms, in[0], y);
  out[0] = enc_ew2(c, IR_OP_EWMUL, shape_in(g, nd, 1), xs, in[1], y);
  return 1;
}

/* where(cond, k, b) with k a rule input bound to one value and of one
 * element ([], [1], [1,1]...): k broadcasts to the same values whatever
 * its rank, so it is encoded as the value of shape [] (the legacy exports'
 * guard zero is [1], the dynamo ones' [], enc_guard's []); 0 for other
 * wheres. */
static int enc_where_scalar(verify_ctx *c, const ir_graph *g, const ir_node *nd,
                            const Z3_ast *in, Z3_ast *out) {
  if (nd->op != IR_OP_WHERE || nd->nin != 3)
    return 0;
  const ir_tensor *k = &g->tensors[nd->in[1]];
  if (!k->has_value || ir_shape_numel(&k->shape) != 1 ||
      k->shape.rank > g->tensors[nd->out[0]].shape.rank)
    return 0;
  ir_tensor s = *k;
  memset(&s.shape, 0, sizeof s.shape);
  Z3_ast t[3] = {in[0], value_const(c, &s), in[2]};
  out[0] = apply(c, VERIFY_F_WHERE, NULL, t);
  return 1;
}

/* Node nd's output terms from its input terms (encode_node adds the move
 * chains' facts). */
static void encode_op(verify_ctx *c, verify_enc *e, const ir_graph *g,
                      const ir_node *nd, const Z3_ast *in, Z3_ast *out) {
  if (enc_where_scalar(c, g, nd, in, out) || enc_rmsnorm(c, g, nd, in, out) ||
      (nd->op == IR_OP_ATTENTION && enc_attention(c, e, g, nd, in, out)) ||
      enc_ew_node(c, g, nd, in, out))
    return;
  if (nd->a.act != IR_ACT_NONE && /* the lower stage's forms: uninterpreted */
      (nd->op == IR_OP_CONCAT || nd->op == IR_OP_SPLIT))
    encode_generic(c, e, nd, in, out);
  else if (nd->op == IR_OP_CONCAT)
    out[0] = enc_concat(c, g, nd, in);
  else if (nd->op == IR_OP_SPLIT)
    enc_split(c, nd, in[0], out);
  else if (nd->op == IR_OP_SLICE && enc_slice(c, g, nd, in[0], out))
    return;
  else if (nd->op == IR_OP_BATCHNORM && nd->nin == 5) {
    int64_t iv[1] = {ir_f32_bits(nd->a.eps)};
    out[0] = apply(c, VERIFY_F_BN, iv, in);
  } else if (nd->op == IR_OP_RESHAPE) {
    Z3_ast a[2] = {verify_shape_code(c, &g->tensors[nd->out[0]].shape), in[0]};
    out[0] =
        verify_z3_bad() ? NULL : Z3_mk_app(c->z, c->fn[VERIFY_F_RESHAPE], 2, a);
  } else if (nd->op == IR_OP_CONST_ONES) {
    Z3_ast code = verify_shape_code(c, &g->tensors[nd->out[0]].shape);
    out[0] = verify_z3_bad() ? NULL
                             : Z3_mk_app(c->z, c->fn[VERIFY_F_ONES], 1, &code);
  } else if (!enc_simple(c, nd, in, out) && !enc_windowed(c, g, nd, in, out))
    encode_generic(c, e, nd, in, out);
}

static void encode_node(verify_ctx *c, verify_enc *e, const ir_graph *g,
                        const ir_node *nd, const Z3_ast *in, Z3_ast *out) {
  encode_op(c, e, g, nd, in, out);
  if (e->moves && nd->nin >= 1 && nd->nout == 1)
    verify_moves_note(c, e->moves, g, nd, in[0], out[0]);
}

Z3_ast verify_input_const(verify_ctx *c, const char *name) {
  char buf[300];
  snprintf(buf, sizeof buf, "in:%s", name);
  Z3_symbol sym = Z3_mk_string_symbol(c->z, buf);
  return verify_z3_bad() ? NULL : Z3_mk_const(c->z, sym, c->T);
}

base_status verify_encode_graph(verify_ctx *c, verify_enc *e, const ir_graph *g,
                                Z3_ast *t) {
  for (int i = 0; i < g->ntensors && !verify_z3_bad(); i++)
    if (g->tensors[i].kind != IR_T_VALUE)
      t[i] = g->tensors[i].has_value
                 ? value_const(c, &g->tensors[i])
                 : verify_input_const(c, g->tensors[i].name);
  for (int i = 0; i < g->nnodes && !verify_z3_bad(); i++) {
    const ir_node *nd = &g->nodes[i];
    Z3_ast in[IR_MAX_IN], out[IR_MAX_IN];
    for (int k = 0; k < nd->nin; k++)
      in[k] = t[nd->in[k]];
    encode_node(c, e, g, nd, in, out);
    for (int k = 0; k < nd->nout; k++)
      t[nd->out[k]] = out[k];
  }
  return verify_z3_bad() ? BASE_ERR_INTERNAL : BASE_OK;
}

static void assert_eq(verify_ctx *c, Z3_ast a, Z3_ast b) {
  Z3_ast eq = verify_z3_bad() ? NULL : Z3_mk_eq(c->z, a, b);
  if (!verify_z3_bad())
    Z3_solver_assert(c->z, c->s, eq);
}

/* Asserts rankc(code) = rank and dimc(k, code) = dim[k] for shape s of
 * code `code` (what guards relating a reshape to its input read). */
static void assert_dims(verify_ctx *c, const ir_shape *s, Z3_ast code) {
  Z3_ast r =
      verify_z3_bad() ? NULL : Z3_mk_app(c->z, c->fn[VERIFY_F_RANKC], 1, &code);
  if (!verify_z3_bad())
    assert_eq(c, r, num(c, s->rank));
  for (int k = 0; k < s->rank && !verify_z3_bad(); k++) {
    Z3_ast a[2] = {num(c, k), code};
    Z3_ast d =
        verify_z3_bad() ? NULL : Z3_mk_app(c->z, c->fn[VERIFY_F_DIMC], 2, a);
    if (!verify_z3_bad())
      assert_eq(c, d, num(c, s->dim[k]));
  }
}

/* Asserts sh(t) = code(shape) for every tensor of g (the shape facts that
 * guards such as the const_ones axiom's rely on), and its rank and
 * dimensions (rankc, dimc). */
void verify_assert_shapes(verify_ctx *c, const ir_graph *g, const Z3_ast *t) {
  for (int i = 0; i < g->ntensors && !verify_z3_bad(); i++) {
    Z3_ast s = Z3_mk_app(c->z, c->fn[VERIFY_F_SH], 1, &t[i]);
    Z3_ast code =
        verify_z3_bad() ? NULL : verify_shape_code(c, &g->tensors[i].shape);
    if (!verify_z3_bad())
      assert_eq(c, s, code);
    if (!verify_z3_bad())
      assert_dims(c, &g->tensors[i].shape, code);
  }
}
