/* fold.c: host evaluation of ONNX nodes whose inputs are all constants.
 *
 * Exported networks compute shapes, position ids and attention masks from
 * Shape, ConstantOfShape, Range, Trilu, Equal, Where, ... on values that
 * are known at import (every input shape is fixed). ox_fold evaluates one
 * such node in double precision (ONNX int64 and bool values are integers:
 * exact), so that whole subgraphs collapse into constants no matter how a
 * model spells them; only what depends on a graph input reaches the IR.
 * One row per operator in the table at the bottom.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox_int.h"

int ox_ir_dtype(int64_t t) {
  switch (t) {
  case OX_DT_FLOAT:
  case OX_DT_FLOAT16:
  case OX_DT_DOUBLE:
  case 16: /* bfloat16 */ return IR_DT_F32;
  case OX_DT_UINT8:
  case OX_DT_INT8:
  case 4: /* uint16 */
  case 5: /* int16 */
  case OX_DT_INT32:
  case OX_DT_INT64:
  case 12: /* uint32 */
  case 13: /* uint64 */ return IR_DT_I64;
  case OX_DT_BOOL: return IR_DT_BOOL;
  default: return -1;
  }
}

typedef struct fctx {
  const Onnx__NodeProto *n;
  const ox_host *in;
  int nin;
  ox_host *out;
  char *err;
  size_t errn;
} fctx;

static base_status ferr(fctx *c, base_status st, const char *msg) {
  snprintf(c->err, c->errn, "%s", msg);
  return st;
}

static const Onnx__AttributeProto *fattr(const fctx *c, const char *name) {
  for (size_t k = 0; k < c->n->n_attribute; k++)
    if (c->n->attribute[k]->name && !strcmp(c->n->attribute[k]->name, name))
      return c->n->attribute[k];
  return NULL;
}

static int64_t fattr_i(const fctx *c, const char *name, int64_t def) {
  const Onnx__AttributeProto *a = fattr(c, name);
  return a && a->has_i ? a->i : def;
}

static int has(const fctx *c, int k) { return k < c->nin && c->in[k].v; }

static int64_t numel(const ir_shape *s) { return ir_shape_numel(s); }

/* Output k of shape s and type dt (values zeroed). */
static base_status mk(fctx *c, int k, const ir_shape *s, int dt) {
  for (int i = 0; i < s->rank; i++)
    if (s->dim[i] < 0)
      return ferr(c, BASE_ERR_SHAPE, "negative dimension");
  if (s->rank > IR_MAX_RANK)
    return ferr(c, BASE_ERR_SHAPE, "rank too large");
  int64_t n = numel(s);
  if (n > IR_MAX_NUMEL)
    return ferr(c, BASE_ERR_SHAPE, "constant too large");
  c->out[k].shape = *s;
  c->out[k].dtype = dt;
  c->out[k].v = base_calloc((size_t)(n ? n : 1), sizeof(double));
  return c->out[k].v ? BASE_OK : ferr(c, BASE_ERR_NOMEM, "out of memory");
}

/* Integers of a 1-D (or scalar) constant input; -1 if too many. */
static int ints_of(const ox_host *h, int64_t *out, int max) {
  int64_t n = numel(&h->shape);
  if (n > max)
    return -1;
  for (int64_t k = 0; k < n; k++) /* INT64_MAX ends and the like: clamp */
    out[k] = h->v[k] >= 9.2e18    ? INT64_MAX
             : h->v[k] <= -9.2e18 ? INT64_MIN
                                  : (int64_t)h->v[k];
  return (int)n;
}

/* Axes from input k (opset >= 13) or the attribute; -1 if absent. */
static int axes_of(fctx *c, int k, int64_t *out, int max) {
  if (has(c, k))
    return ints_of(&c->in[k], out, max);
  const Onnx__AttributeProto *a = fattr(c, "axes");
  if (!a || (int)a->n_ints > max)
    return -1;
  for (size_t i = 0; i < a->n_ints; i++)
    out[i] = a->ints[i];
  return (int)a->n_ints;
}

static void strides(const ir_shape *s, int64_t *st) {
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--)
    st[i] = acc, acc *= s->dim[i];
}

/* ---- element-wise with broadcasting ---------------------------------- */

typedef double (*fn1)(double);
typedef double (*fn2)(double, double);

static base_status bcast(fctx *c, int nin, ir_shape *o) {
  o->rank = 0;
  for (int k = 0; k < nin; k++)
    if (c->in[k].shape.rank > o->rank)
      o->rank = c->in[k].shape.rank;
  for (int i = 0; i < o->rank; i++) {
    int64_t d = 1;
    for (int k = 0; k < nin; k++) {
      const ir_shape *s = &c->in[k].shape;
      int j = i - (o->rank - s->rank);
      int64_t e = j >= 0 ? s->dim[j] : 1;
      if (e != 1 && d != 1 && e != d)
        return ferr(c, BASE_ERR_SHAPE, "shapes do not broadcast");
      d = e != 1 ? e : d;
    }
    o->dim[i] = d;
  }
  return BASE_OK;
}

/* Offset into input k of output element j (shape o). */
static int64_t boff(const ox_host *h, const ir_shape *o, int64_t j) {
  int64_t st[IR_MAX_RANK], off = 0;
  strides(&h->shape, st);
  for (int i = o->rank - 1; i >= 0; i--) {
    int64_t x = j % o->dim[i];
    j /= o->dim[i];
    int hi = i - (o->rank - h->shape.rank);
    if (hi >= 0 && h->shape.dim[hi] != 1)
      off += x * st[hi];
  }
  return off;
}

static double trunc_int(double x, int dt) {
  return dt == IR_DT_F32 ? x : trunc(x);
}

static base_status ew(fctx *c, int nin, fn1 f1, fn2 f2, int outdt) {
  ir_shape o;
  base_status st = bcast(c, nin, &o);
  if (st || (st = mk(c, 0, &o, outdt)))
    return st;
  for (int64_t j = 0; j < numel(&o); j++) {
    double a = c->in[0].v[boff(&c->in[0], &o, j)];
    double r;
    if (nin == 1)
      r = f1(a);
    else if (nin == 2)
      r = f2(a, c->in[1].v[boff(&c->in[1], &o, j)]);
    else
      r = a != 0 ? c->in[1].v[boff(&c->in[1], &o, j)]
                 : c->in[2].v[boff(&c->in[2], &o, j)];
    c->out[0].v[j] = outdt == IR_DT_BOOL ? (r != 0) : trunc_int(r, outdt);
  }
  return BASE_OK;
}

static double d_neg(double x) { return -x; }
static double d_abs(double x) { return fabs(x); }
static double d_sqrt(double x) { return sqrt(x); }
static double d_floor(double x) { return floor(x); }
static double d_ceil(double x) { return ceil(x); }
static double d_not(double x) { return x == 0; }
static double d_recip(double x) { return 1 / x; }
static double d_exp(double x) { return exp(x); }
static double d_log(double x) { return log(x); }
static double d_relu(double x) { return x > 0 ? x : 0; }
static double d_sign(double x) { return (x > 0) - (x < 0); }
static double d_cos(double x) { return cos(x); }
static double d_sin(double x) { return sin(x); }
static double d_isnan(double x) { return isnan(x); }
static double d_id(double x) { return x; }
static double d_add(double a, double b) { return a + b; }
static double d_sub(double a, double b) { return a - b; }
static double d_mul(double a, double b) { return a * b; }
static double d_div(double a, double b) { return a / b; }
static double d_pow(double a, double b) { return pow(a, b); }
static double d_eq(double a, double b) { return a == b; }
static double d_lt(double a, double b) { return a < b; }
static double d_le(double a, double b) { return a <= b; }
static double d_gt(double a, double b) { return a > b; }
static double d_ge(double a, double b) { return a >= b; }
static double d_and(double a, double b) { return a != 0 && b != 0; }
static double d_or(double a, double b) { return a != 0 || b != 0; }
static double d_xor(double a, double b) { return (a != 0) != (b != 0); }
static double d_max(double a, double b) { return a > b ? a : b; }
static double d_min(double a, double b) { return a < b ? a : b; }
static double d_mod(double a, double b) { /* integer Mod: divisor's sign */
  double r = fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

#define EW1(name, f)                                                           \
  static base_status name(fctx *c) { return ew(c, 1, f, NULL, c->in[0].dtype); }
#define EW2(name, f)                                                           \
  static base_status name(fctx *c) { return ew(c, 2, NULL, f, c->in[0].dtype); }
#define CMP(name, f)                                                           \
  static base_status name(fctx *c) { return ew(c, 2, NULL, f, IR_DT_BOOL); }
EW1(f_neg, d_neg)
EW1(f_abs, d_abs)
EW1(f_sqrt, d_sqrt)
EW1(f_floor, d_floor)
EW1(f_ceil, d_ceil)
EW1(f_recip, d_recip)
EW1(f_exp, d_exp)
EW1(f_log, d_log)
EW1(f_relu, d_relu)
EW1(f_sign, d_sign)
EW1(f_cos, d_cos)
EW1(f_sin, d_sin)
EW1(f_identity, d_id)
EW2(f_add, d_add)
EW2(f_sub, d_sub)
EW2(f_mul, d_mul)
EW2(f_pow, d_pow)
EW2(f_max, d_max)
EW2(f_min, d_min)
CMP(f_equal, d_eq)
CMP(f_less, d_lt)
CMP(f_lesseq, d_le)
CMP(f_greater, d_gt)
CMP(f_greatereq, d_ge)
CMP(f_and, d_and)
CMP(f_or, d_or)
CMP(f_xor, d_xor)

static base_status f_not(fctx *c) { return ew(c, 1, d_not, NULL, IR_DT_BOOL); }
static base_status f_isnan(fctx *c) {
  return ew(c, 1, d_isnan, NULL, IR_DT_BOOL);
}

/* IsInf with its detect_negative / detect_positive attributes. */
static base_status f_isinf(fctx *c) {
  int neg = (int)fattr_i(c, "detect_negative", 1);
  int pos = (int)fattr_i(c, "detect_positive", 1);
  base_status st = mk(c, 0, &c->in[0].shape, IR_DT_BOOL);
  for (int64_t j = 0; !st && j < numel(&c->in[0].shape); j++) {
    double x = c->in[0].v[j];
    c->out[0].v[j] = isinf(x) && (x > 0 ? pos : neg);
  }
  return st;
}

static base_status f_div(fctx *c) {
  if (c->in[0].dtype != IR_DT_F32) /* integer division truncates */
    for (int64_t k = 0; k < numel(&c->in[1].shape); k++)
      if (c->in[1].v[k] == 0)
        return ferr(c, BASE_ERR_PARAM, "integer division by zero");
  return ew(c, 2, NULL, d_div, c->in[0].dtype);
}

static base_status f_mod(fctx *c) {
  for (int64_t k = 0; k < numel(&c->in[1].shape); k++)
    if (c->in[1].v[k] == 0)
      return ferr(c, BASE_ERR_PARAM, "Mod by zero");
  return ew(c, 2, NULL, fattr_i(c, "fmod", 0) ? fmod : d_mod, c->in[0].dtype);
}

static base_status f_where(fctx *c) {
  if (c->nin < 3 || !has(c, 2))
    return ferr(c, BASE_ERR_ARITY, "Where takes 3 inputs");
  return ew(c, 3, NULL, NULL, c->in[1].dtype);
}

static base_status f_cast(fctx *c) {
  int dt = ox_ir_dtype(fattr_i(c, "to", OX_DT_FLOAT));
  if (dt < 0)
    return ferr(c, BASE_ERR_PARAM, "Cast to an unsupported type");
  base_status st = ew(c, 1, d_id, NULL, dt);
  if (!st && dt == IR_DT_F32) /* float32, as ONNX computes it */
    for (int64_t k = 0; k < numel(&c->out[0].shape); k++)
      c->out[0].v[k] = (float)c->out[0].v[k];
  return st;
}

static base_status f_castlike(fctx *c) {
  if (!has(c, 1))
    return ferr(c, BASE_ERR_ARITY, "CastLike takes 2 inputs");
  return ew(c, 1, d_id, NULL, c->in[1].dtype);
}

/* ---- shapes ------------------------------------------------------------ */

/* Output 0 = input 0's values under shape s. */
static base_status same_values(fctx *c, const ir_shape *s) {
  if (numel(s) != numel(&c->in[0].shape))
    return ferr(c, BASE_ERR_SHAPE, "element counts differ");
  base_status st = mk(c, 0, s, c->in[0].dtype);
  if (!st)
    memcpy(c->out[0].v, c->in[0].v, sizeof(double) * (size_t)numel(s));
  return st;
}

static base_status f_reshape(fctx *c) {
  int64_t d[IR_MAX_RANK + 1];
  int n = has(c, 1) ? ints_of(&c->in[1], d, IR_MAX_RANK) : -1;
  if (n < 0)
    return ferr(c, BASE_ERR_SHAPE, "bad target shape");
  const ir_shape *x = &c->in[0].shape;
  ir_shape s = {.rank = n};
  int neg = -1;
  int64_t known = 1;
  for (int i = 0; i < n; i++) {
    s.dim[i] = d[i] == 0 && !fattr_i(c, "allowzero", 0) && i < x->rank
                   ? x->dim[i]
                   : d[i];
    if (s.dim[i] == -1) {
      if (neg >= 0)
        return ferr(c, BASE_ERR_SHAPE, "two -1 dimensions");
      neg = i;
    } else if (__builtin_mul_overflow(known, s.dim[i], &known)) {
      return ferr(c, BASE_ERR_SHAPE, "target shape too large");
    }
  }
  if (neg >= 0)
    s.dim[neg] = known ? numel(x) / known : 0;
  return same_values(c, &s);
}

static int norm_ax(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

static base_status f_unsqueeze(fctx *c) {
  int64_t ax[IR_MAX_RANK];
  int na = axes_of(c, 1, ax, IR_MAX_RANK);
  const ir_shape *x = &c->in[0].shape;
  int rank = x->rank + (na > 0 ? na : 0);
  if (na < 0 || rank > IR_MAX_RANK)
    return ferr(c, BASE_ERR_PARAM, "bad axes");
  int mark[IR_MAX_RANK] = {0};
  for (int k = 0; k < na; k++) {
    int a = norm_ax(ax[k], rank);
    if (a < 0 || a >= rank || mark[a]++)
      return ferr(c, BASE_ERR_PARAM, "bad axes");
  }
  ir_shape s = {.rank = rank};
  for (int i = 0, j = 0; i < rank; i++)
    s.dim[i] = mark[i] ? 1 : x->dim[j++];
  return same_values(c, &s);
}

static base_status f_squeeze(fctx *c) {
  int64_t ax[IR_MAX_RANK];
  int na = axes_of(c, 1, ax, IR_MAX_RANK);
  const ir_shape *x = &c->in[0].shape;
  int mark[IR_MAX_RANK] = {0};
  for (int k = 0; k < na; k++) {
    int a = norm_ax(ax[k], x->rank);
    if (a < 0 || a >= x->rank || x->dim[a] != 1)
      return ferr(c, BASE_ERR_PARAM, "bad axes");
    mark[a] = 1;
  }
  ir_shape s = {.rank = 0};
  for (int i = 0; i < x->rank; i++)
    if (!(na > 0 ? mark[i] : x->dim[i] == 1))
      s.dim[s.rank++] = x->dim[i];
  return same_values(c, &s);
}

static base_status f_flatten(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  int a = norm_ax(fattr_i(c, "axis", 1), x->rank);
  if (a < 0 || a > x->rank)
    return ferr(c, BASE_ERR_PARAM, "bad axis");
  ir_shape s = {.rank = 2, .dim = {1, 1}};
  for (int i = 0; i < x->rank; i++)
    s.dim[i >= a] *= x->dim[i];
  return same_values(c, &s);
}

static base_status f_shape(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  int64_t r = x->rank, b = fattr_i(c, "start", 0), e = fattr_i(c, "end", r);
  b = b < 0 ? b + r : b, e = e < 0 ? e + r : e;
  b = b < 0 ? 0 : b > r ? r : b, e = e < b ? b : e > r ? r : e;
  ir_shape s = {.rank = 1, .dim = {e - b}};
  ir_shape xs = *x;
  base_status st = mk(c, 0, &s, IR_DT_I64);
  for (int64_t k = b; !st && k < e; k++)
    c->out[0].v[k - b] = (double)xs.dim[k];
  return st;
}

static base_status f_size(fctx *c) {
  ir_shape s = {.rank = 0};
  base_status st = mk(c, 0, &s, IR_DT_I64);
  if (!st)
    c->out[0].v[0] = (double)numel(&c->in[0].shape);
  return st;
}

/* Copies the box of x given by per-dim start/step into out (shape o). */
static void copy_box(const ox_host *x, const int64_t *start,
                     const int64_t *step, const ir_shape *o, double *out) {
  int64_t st[IR_MAX_RANK];
  strides(&x->shape, st);
  for (int64_t j = 0; j < numel(o); j++) {
    int64_t r = j, off = 0;
    for (int i = o->rank - 1; i >= 0; i--) {
      off += (start[i] + (r % o->dim[i]) * step[i]) * st[i];
      r /= o->dim[i];
    }
    out[j] = x->v[off];
  }
}

static base_status f_slice(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  int64_t b[IR_MAX_RANK], e[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
  int nb, ne, na = -1, np = -1;
  if (has(c, 1)) {
    nb = ints_of(&c->in[1], b, IR_MAX_RANK);
    ne = has(c, 2) ? ints_of(&c->in[2], e, IR_MAX_RANK) : -1;
    na = has(c, 3) ? ints_of(&c->in[3], ax, IR_MAX_RANK) : -1;
    np = has(c, 4) ? ints_of(&c->in[4], sp, IR_MAX_RANK) : -1;
  } else {
    const Onnx__AttributeProto *a[3] = {fattr(c, "starts"), fattr(c, "ends"),
                                        fattr(c, "axes")};
    nb = a[0] && a[0]->n_ints <= IR_MAX_RANK ? (int)a[0]->n_ints : -1;
    ne = a[1] && a[1]->n_ints <= IR_MAX_RANK ? (int)a[1]->n_ints : -1;
    na = a[2] && a[2]->n_ints <= IR_MAX_RANK ? (int)a[2]->n_ints : -1;
    for (int k = 0; k < nb; k++)
      b[k] = a[0]->ints[k];
    for (int k = 0; k < ne; k++)
      e[k] = a[1]->ints[k];
    for (int k = 0; k < na; k++)
      ax[k] = a[2]->ints[k];
  }
  if (nb < 0 || nb != ne || (na >= 0 && na != nb) || (np >= 0 && np != nb))
    return ferr(c, BASE_ERR_PARAM, "starts, ends, axes, steps disagree");
  int64_t start[IR_MAX_RANK], step[IR_MAX_RANK];
  ir_shape o = *x;
  for (int i = 0; i < x->rank; i++)
    start[i] = 0, step[i] = 1;
  for (int k = 0; k < nb; k++) {
    int d = na >= 0 ? norm_ax(ax[k], x->rank) : k;
    int64_t s = np >= 0 ? sp[k] : 1, n = x->dim[d];
    if (d < 0 || d >= x->rank || s == 0)
      return ferr(c, BASE_ERR_PARAM, "bad axis or step");
    int64_t lo = b[k] < 0 ? b[k] + n : b[k], hi = e[k] < 0 ? e[k] + n : e[k];
    if (s > 0) {
      lo = lo < 0 ? 0 : lo > n ? n : lo;
      hi = hi < 0 ? 0 : hi > n ? n : hi;
      o.dim[d] = hi > lo ? (hi - lo + s - 1) / s : 0;
    } else {
      lo = lo < 0 ? -1 : lo > n - 1 ? n - 1 : lo;
      hi = hi < -1 ? -1 : hi > n - 1 ? n - 1 : hi;
      o.dim[d] = lo > hi ? (lo - hi - s - 1) / -s : 0;
    }
    start[d] = lo, step[d] = s;
  }
  base_status st = mk(c, 0, &o, c->in[0].dtype);
  if (!st)
    copy_box(&c->in[0], start, step, &o, c->out[0].v);
  return st;
}

static base_status f_concat(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  int a = norm_ax(fattr_i(c, "axis", 0), x->rank);
  if (a < 0 || a >= x->rank)
    return ferr(c, BASE_ERR_PARAM, "bad axis");
  ir_shape o = *x;
  o.dim[a] = 0;
  for (int k = 0; k < c->nin; k++) {
    if (!has(c, k) || c->in[k].shape.rank != x->rank)
      return ferr(c, BASE_ERR_SHAPE, "inputs of different ranks");
    o.dim[a] += c->in[k].shape.dim[a];
  }
  base_status st = mk(c, 0, &o, c->in[0].dtype);
  if (st)
    return st;
  int64_t outer = 1, inner = 1, pos = 0;
  for (int i = 0; i < a; i++)
    outer *= o.dim[i];
  for (int i = a + 1; i < o.rank; i++)
    inner *= o.dim[i];
  for (int64_t q = 0; q < outer; q++)
    for (int k = 0; k < c->nin; k++) {
      int64_t len = c->in[k].shape.dim[a] * inner;
      memcpy(c->out[0].v + pos, c->in[k].v + q * len, sizeof(double) * len);
      pos += len;
    }
  return BASE_OK;
}

static base_status f_transpose(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  int64_t st[IR_MAX_RANK], step[IR_MAX_RANK];
  const Onnx__AttributeProto *a = fattr(c, "perm");
  strides(x, st);
  ir_shape o = {.rank = x->rank};
  for (int i = 0; i < x->rank; i++) {
    int64_t p = a && (int)a->n_ints == x->rank ? a->ints[i] : x->rank - 1 - i;
    if (p < 0 || p >= x->rank)
      return ferr(c, BASE_ERR_PARAM, "bad perm");
    o.dim[i] = x->dim[p];
    step[i] = st[p];
  }
  base_status s = mk(c, 0, &o, c->in[0].dtype);
  for (int64_t j = 0; !s && j < numel(&o); j++) {
    int64_t r = j, off = 0;
    for (int i = o.rank - 1; i >= 0; i--)
      off += (r % o.dim[i]) * step[i], r /= o.dim[i];
    c->out[0].v[j] = c->in[0].v[off];
  }
  return s;
}

static base_status f_expand(fctx *c) {
  int64_t d[IR_MAX_RANK];
  int n = has(c, 1) ? ints_of(&c->in[1], d, IR_MAX_RANK) : -1;
  if (n < 0)
    return ferr(c, BASE_ERR_SHAPE, "bad shape");
  ox_host ones = {.shape = {.rank = n}, .dtype = c->in[0].dtype};
  for (int i = 0; i < n; i++)
    ones.shape.dim[i] = d[i];
  ir_shape o;
  fctx c2 = *c;
  ox_host two[2] = {c->in[0], ones};
  c2.in = two;
  base_status st = bcast(&c2, 2, &o);
  if (st || (st = mk(c, 0, &o, c->in[0].dtype)))
    return st;
  for (int64_t j = 0; j < numel(&o); j++)
    c->out[0].v[j] = c->in[0].v[boff(&c->in[0], &o, j)];
  return BASE_OK;
}

static base_status f_tile(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  int64_t r[IR_MAX_RANK];
  if (!has(c, 1) || ints_of(&c->in[1], r, IR_MAX_RANK) != x->rank)
    return ferr(c, BASE_ERR_PARAM, "bad repeats");
  ir_shape o = *x;
  for (int i = 0; i < x->rank; i++)
    o.dim[i] *= r[i];
  base_status st = mk(c, 0, &o, c->in[0].dtype);
  int64_t xs[IR_MAX_RANK];
  strides(x, xs);
  for (int64_t j = 0; !st && j < numel(&o); j++) {
    int64_t q = j, off = 0;
    for (int i = o.rank - 1; i >= 0; i--)
      off += (q % o.dim[i]) % x->dim[i] * xs[i], q /= o.dim[i];
    c->out[0].v[j] = c->in[0].v[off];
  }
  return st;
}

static base_status f_gather(fctx *c) {
  const ir_shape *x = &c->in[0].shape, *ix = &c->in[1].shape;
  int a = norm_ax(fattr_i(c, "axis", 0), x->rank);
  if (a < 0 || a >= x->rank || x->rank - 1 + ix->rank > IR_MAX_RANK)
    return ferr(c, BASE_ERR_PARAM, "bad axis or ranks");
  ir_shape o = {.rank = 0};
  int64_t outer = 1, inner = 1, n = x->dim[a], m = numel(ix);
  for (int i = 0; i < a; i++)
    o.dim[o.rank++] = x->dim[i], outer *= x->dim[i];
  for (int i = 0; i < ix->rank; i++)
    o.dim[o.rank++] = ix->dim[i];
  for (int i = a + 1; i < x->rank; i++)
    o.dim[o.rank++] = x->dim[i], inner *= x->dim[i];
  base_status st = mk(c, 0, &o, c->in[0].dtype);
  for (int64_t q = 0; !st && q < outer; q++)
    for (int64_t k = 0; k < m; k++) {
      int64_t j = (int64_t)c->in[1].v[k];
      j = j < 0 ? j + n : j;
      if (j < 0 || j >= n)
        return ferr(c, BASE_ERR_PARAM, "index out of range");
      memcpy(c->out[0].v + (q * m + k) * inner,
             c->in[0].v + (q * n + j) * inner, sizeof(double) * (size_t)inner);
    }
  return st;
}

/* GatherND: out[b..., i...] = data[b..., indices[b..., i..., :], ...] with
 * batch_dims b leading dimensions shared by data and indices. */
static base_status f_gathernd(fctx *c) {
  const ir_shape *x = &c->in[0].shape, *ix = &c->in[1].shape;
  int b = (int)fattr_i(c, "batch_dims", 0);
  int64_t k = ix->rank ? ix->dim[ix->rank - 1] : 0;
  if (ix->rank < 1 || b < 0 || b >= ix->rank || k < 1 || b + k > x->rank ||
      ix->rank - 1 + x->rank - b - k > IR_MAX_RANK)
    return ferr(c, BASE_ERR_SHAPE, "bad indices shape or batch_dims");
  int64_t batch = 1, slice = 1, xs[IR_MAX_RANK];
  for (int i = 0; i < b; i++) {
    if (x->dim[i] != ix->dim[i])
      return ferr(c, BASE_ERR_SHAPE, "batch dimensions differ");
    batch *= x->dim[i];
  }
  ir_shape o = {.rank = 0};
  for (int i = 0; i < ix->rank - 1; i++)
    o.dim[o.rank++] = ix->dim[i];
  for (int i = b + (int)k; i < x->rank; i++)
    o.dim[o.rank++] = x->dim[i], slice *= x->dim[i];
  base_status st = mk(c, 0, &o, c->in[0].dtype);
  strides(x, xs);
  int64_t per = numel(ix) / k / batch; /* index tuples per batch entry */
  int64_t bstride = b ? xs[b - 1] : 0;
  for (int64_t t = 0; !st && t < numel(ix) / k; t++) {
    int64_t off = (t / per) * bstride;
    for (int64_t j = 0; j < k; j++) {
      int64_t v = (int64_t)c->in[1].v[t * k + j], n = x->dim[b + j];
      v = v < 0 ? v + n : v;
      if (v < 0 || v >= n)
        return ferr(c, BASE_ERR_PARAM, "index out of range");
      off += v * xs[b + j];
    }
    memcpy(c->out[0].v + t * slice, c->in[0].v + off,
           sizeof(double) * (size_t)slice);
  }
  return st;
}

/* ScatterND (reduction none): a copy of data with the slices that indices
 * name replaced by updates. */
static base_status f_scatternd(fctx *c) {
  if (!has(c, 2))
    return ferr(c, BASE_ERR_ARITY, "ScatterND takes 3 inputs");
  const Onnx__AttributeProto *red = fattr(c, "reduction");
  if (red && red->has_s &&
      !(red->s.len == 4 && !memcmp(red->s.data, "none", 4)))
    return ferr(c, BASE_ERR_PARAM, "ScatterND with a reduction");
  const ir_shape *x = &c->in[0].shape, *ix = &c->in[1].shape;
  int64_t k = ix->rank ? ix->dim[ix->rank - 1] : 0, slice = 1, xs[IR_MAX_RANK];
  if (ix->rank < 1 || k < 1 || k > x->rank)
    return ferr(c, BASE_ERR_SHAPE, "bad indices shape");
  for (int i = (int)k; i < x->rank; i++)
    slice *= x->dim[i];
  int64_t q = numel(ix) / k;
  if (numel(&c->in[2].shape) != q * slice)
    return ferr(c, BASE_ERR_SHAPE, "updates do not fit the indices");
  base_status st = same_values(c, x);
  strides(x, xs);
  for (int64_t t = 0; !st && t < q; t++) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; j++) {
      int64_t v = (int64_t)c->in[1].v[t * k + j], n = x->dim[j];
      v = v < 0 ? v + n : v;
      if (v < 0 || v >= n)
        return ferr(c, BASE_ERR_PARAM, "index out of range");
      off += v * xs[j];
    }
    memcpy(c->out[0].v + off, c->in[2].v + t * slice,
           sizeof(double) * (size_t)slice);
  }
  return st;
}

/* ---- generators --------------------------------------------------------- */

static base_status f_constantofshape(fctx *c) {
  int64_t d[IR_MAX_RANK];
  int n = ints_of(&c->in[0], d, IR_MAX_RANK);
  if (n < 0)
    return ferr(c, BASE_ERR_SHAPE, "rank too large");
  ir_shape s = {.rank = n};
  for (int i = 0; i < n; i++)
    s.dim[i] = d[i];
  const Onnx__AttributeProto *a = fattr(c, "value");
  int dt = IR_DT_F32;
  double v = 0;
  if (a && a->t) {
    const Onnx__TensorProto *t = a->t;
    dt = ox_ir_dtype(t->data_type);
    if (dt < 0)
      return ferr(c, BASE_ERR_PARAM, "unsupported value type");
    if (t->n_float_data)
      v = t->float_data[0];
    else if (t->n_int64_data)
      v = (double)t->int64_data[0];
    else if (t->n_int32_data && t->data_type == OX_DT_FLOAT16)
      v = ir_f16_value((uint16_t)t->int32_data[0]); /* the bits */
    else if (t->n_int32_data && t->data_type == 16 /* bfloat16 */)
      v = ir_bf16_value((uint16_t)t->int32_data[0]);
    else if (t->n_int32_data)
      v = t->int32_data[0];
    else if (t->n_double_data)
      v = t->double_data[0];
    else if (t->has_raw_data && t->raw_data.len) {
      const uint8_t *p = t->raw_data.data;
      size_t len = t->raw_data.len;
      if (t->data_type == OX_DT_FLOAT && len >= 4) {
        float f;
        memcpy(&f, p, 4);
        v = f;
      } else if (t->data_type == OX_DT_INT64 && len >= 8) {
        int64_t i;
        memcpy(&i, p, 8);
        v = (double)i;
      } else if (t->data_type == OX_DT_INT32 && len >= 4) {
        int32_t i;
        memcpy(&i, p, 4);
        v = i;
      } else if (t->data_type == OX_DT_DOUBLE && len >= 8)
        memcpy(&v, p, 8);
      else if (t->data_type == OX_DT_FLOAT16 && len >= 2)
        v = ir_f16_value((uint16_t)(p[0] | p[1] << 8));
      else if (t->data_type == 16 /* bfloat16 */ && len >= 2)
        v = ir_bf16_value((uint16_t)(p[0] | p[1] << 8));
      else
        v = p[0];
    }
  }
  base_status st = mk(c, 0, &s, dt);
  for (int64_t k = 0; !st && k < numel(&s); k++)
    c->out[0].v[k] = v;
  return st;
}

static base_status f_range(fctx *c) {
  if (!has(c, 2))
    return ferr(c, BASE_ERR_ARITY, "Range takes 3 inputs");
  double a = c->in[0].v[0], b = c->in[1].v[0], d = c->in[2].v[0];
  if (d == 0)
    return ferr(c, BASE_ERR_PARAM, "delta is 0");
  double cnt = ceil((b - a) / d);
  ir_shape s = {.rank = 1, .dim = {cnt > 0 ? (int64_t)cnt : 0}};
  base_status st = mk(c, 0, &s, c->in[0].dtype);
  for (int64_t k = 0; !st && k < s.dim[0]; k++)
    c->out[0].v[k] = a + (double)k * d;
  return st;
}

static base_status f_trilu(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  if (x->rank < 2)
    return ferr(c, BASE_ERR_SHAPE, "Trilu needs rank >= 2");
  int64_t k = has(c, 1) ? (int64_t)c->in[1].v[0] : 0;
  int upper = (int)fattr_i(c, "upper", 1);
  base_status st = mk(c, 0, x, c->in[0].dtype);
  int64_t rows = x->dim[x->rank - 2], cols = x->dim[x->rank - 1];
  for (int64_t j = 0; !st && j < numel(x); j++) {
    int64_t col = j % cols, row = j / cols % rows;
    int keep = upper ? col - row >= k : col - row <= k;
    c->out[0].v[j] = keep ? c->in[0].v[j] : 0;
  }
  return st;
}

/* ReduceSum/Prod/Max/Min/Mean over axes (attribute or input 1). */
static base_status reduce(fctx *c, int kind) {
  const ir_shape *x = &c->in[0].shape;
  int64_t ax[IR_MAX_RANK];
  int na = axes_of(c, 1, ax, IR_MAX_RANK),
      keep = (int)fattr_i(c, "keepdims", 1);
  int mark[IR_MAX_RANK] = {0};
  for (int k = 0; k < x->rank; k++)
    mark[k] = na <= 0 && !(na == 0 && fattr_i(c, "noop_with_empty_axes", 0));
  for (int k = 0; k < na; k++) {
    int a = norm_ax(ax[k], x->rank);
    if (a < 0 || a >= x->rank)
      return ferr(c, BASE_ERR_PARAM, "bad axes");
    mark[a] = 1;
  }
  ir_shape o = {.rank = 0}, full = *x;
  for (int i = 0; i < x->rank; i++) {
    full.dim[i] = mark[i] ? 1 : x->dim[i];
    if (!mark[i] || keep)
      o.dim[o.rank++] = full.dim[i];
  }
  base_status st = mk(c, 0, &o, c->in[0].dtype);
  if (st)
    return st;
  int64_t n = numel(&full), cnt = numel(x) / (n ? n : 1);
  for (int64_t j = 0; j < n; j++)
    c->out[0].v[j] = kind == 1   ? 1
                     : kind == 2 ? -INFINITY
                     : kind == 3 ? INFINITY
                                 : 0;
  int64_t fs[IR_MAX_RANK];
  strides(&full, fs);
  for (int64_t j = 0; j < numel(x); j++) {
    int64_t r = j, off = 0;
    for (int i = x->rank - 1; i >= 0; i--) {
      off += (mark[i] ? 0 : r % x->dim[i]) * fs[i];
      r /= x->dim[i];
    }
    double v = c->in[0].v[j], *o2 = &c->out[0].v[off];
    *o2 = kind == 1   ? *o2 * v
          : kind == 2 ? (v > *o2 ? v : *o2)
          : kind == 3 ? (v < *o2 ? v : *o2)
                      : *o2 + v;
  }
  if (kind == 4)
    for (int64_t j = 0; j < n; j++)
      c->out[0].v[j] /= (double)cnt;
  return BASE_OK;
}

static base_status f_rsum(fctx *c) { return reduce(c, 0); }
static base_status f_rprod(fctx *c) { return reduce(c, 1); }
static base_status f_rmax(fctx *c) { return reduce(c, 2); }
static base_status f_rmin(fctx *c) { return reduce(c, 3); }
static base_status f_rmean(fctx *c) { return reduce(c, 4); }

static base_status f_cumsum(fctx *c) {
  const ir_shape *x = &c->in[0].shape;
  int a = has(c, 1) ? norm_ax((int64_t)c->in[1].v[0], x->rank) : -1;
  if (a < 0 || a >= x->rank)
    return ferr(c, BASE_ERR_PARAM, "bad axis");
  int excl = (int)fattr_i(c, "exclusive", 0),
      rev = (int)fattr_i(c, "reverse", 0);
  base_status st = mk(c, 0, x, c->in[0].dtype);
  int64_t st_[IR_MAX_RANK];
  strides(x, st_);
  int64_t n = x->dim[a], s = st_[a];
  for (int64_t j = 0; !st && j < numel(x); j++) {
    if ((j / s) % n)
      continue; /* j: the start of one line along the axis */
    double acc = 0;
    for (int64_t k = 0; k < n; k++) {
      int64_t p = j + (rev ? n - 1 - k : k) * s;
      double v = c->in[0].v[p];
      c->out[0].v[p] = excl ? acc : acc + v;
      acc += v;
    }
  }
  return st;
}

/* ---- the table ------------------------------------------------------------
 */

typedef struct fold_row {
  const char *name;
  base_status (*fn)(fctx *);
} fold_row;

static const fold_row rows[] = {
    {"Abs", f_abs},
    {"Add", f_add},
    {"And", f_and},
    {"Cast", f_cast},
    {"CastLike", f_castlike},
    {"Ceil", f_ceil},
    {"Concat", f_concat},
    {"ConstantOfShape", f_constantofshape},
    {"Cos", f_cos},
    {"CumSum", f_cumsum},
    {"Div", f_div},
    {"Equal", f_equal},
    {"Exp", f_exp},
    {"Expand", f_expand},
    {"Flatten", f_flatten},
    {"Floor", f_floor},
    {"Gather", f_gather},
    {"GatherND", f_gathernd},
    {"Greater", f_greater},
    {"GreaterOrEqual", f_greatereq},
    {"Identity", f_identity},
    {"IsInf", f_isinf},
    {"IsNaN", f_isnan},
    {"Less", f_less},
    {"LessOrEqual", f_lesseq},
    {"Log", f_log},
    {"Max", f_max},
    {"Min", f_min},
    {"Mod", f_mod},
    {"Mul", f_mul},
    {"Neg", f_neg},
    {"Not", f_not},
    {"Or", f_or},
    {"Pow", f_pow},
    {"Range", f_range},
    {"Reciprocal", f_recip},
    {"ReduceMax", f_rmax},
    {"ReduceMean", f_rmean},
    {"ReduceMin", f_rmin},
    {"ReduceProd", f_rprod},
    {"ReduceSum", f_rsum},
    {"Relu", f_relu},
    {"Reshape", f_reshape},
    {"ScatterND", f_scatternd},
    {"Shape", f_shape},
    {"Sign", f_sign},
    {"Sin", f_sin},
    {"Size", f_size},
    {"Slice", f_slice},
    {"Sqrt", f_sqrt},
    {"Squeeze", f_squeeze},
    {"Sub", f_sub},
    {"Tile", f_tile},
    {"Transpose", f_transpose},
    {"Trilu", f_trilu},
    {"Unsqueeze", f_unsqueeze},
    {"Where", f_where},
    {"Xor", f_xor},
};

base_status ox_fold(const Onnx__NodeProto *n, const ox_host *in, int nin,
                    ox_host *out, char *err, size_t errn) {
  const char *type = n->op_type ? n->op_type : "";
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
    if (!strcmp(rows[i].name, type)) {
      if (nin < 1 || !in[0].v)
        return BASE_ERR_UNKNOWN_OP;
      int binary =
          rows[i].fn == f_add || rows[i].fn == f_sub || rows[i].fn == f_mul ||
          rows[i].fn == f_div || rows[i].fn == f_pow || rows[i].fn == f_mod ||
          rows[i].fn == f_max || rows[i].fn == f_min || rows[i].fn == f_equal ||
          rows[i].fn == f_less || rows[i].fn == f_lesseq ||
          rows[i].fn == f_greater || rows[i].fn == f_greatereq ||
          rows[i].fn == f_and || rows[i].fn == f_or || rows[i].fn == f_xor;
      if (binary && (nin != 2 || !in[1].v)) {
        snprintf(err, errn, "%s takes 2 inputs here", type);
        return BASE_ERR_ARITY;
      }
      fctx c = {n, in, nin, out, err, errn};
      return rows[i].fn(&c);
    }
  return BASE_ERR_UNKNOWN_OP;
}
