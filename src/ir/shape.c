/* shape.c: one shape rule per operator, and ir_infer which dispatches to them.
 *
 * A rule checks its inputs' shapes and parameters, normalises the parameters
 * (negative axes, resolved padding, reshape's -1) and computes the output
 * shapes. Every rejection says what was expected and shows the shapes
 * involved; the caller adds the source position.
 */
#include <stdio.h>
#include <string.h>

#include "ir_int.h"

typedef char sbuf[96];

static const char *S(const ir_shape *s, char *buf) {
  return ir_shape_str(s, buf, sizeof(sbuf));
}

/* Errors of a shape rule carry no position: the caller adds it. */
/* Arguments (shape strings) are only formatted when d wants a message. */
#define shape_err(d, ...)                                                      \
  ((d) ? base_diag_set(d, BASE_ERR_SHAPE, 0, 0, __VA_ARGS__) : BASE_ERR_SHAPE)
#define param_err(d, ...)                                                      \
  ((d) ? base_diag_set(d, BASE_ERR_PARAM, 0, 0, __VA_ARGS__) : BASE_ERR_PARAM)

static base_status need_rank(const char *op, const char *what,
                             const ir_shape *s, int rank, base_diag *d) {
  sbuf b;
  if (s->rank == rank)
    return BASE_OK;
  return shape_err(d, "%s: %s must have rank %d, got %s", op, what, rank,
                   S(s, b));
}

/* Normalises axis into [0, rank) (rank+1 when allow_end). */
static base_status norm_axis(const char *op, int32_t *axis, int rank,
                             base_diag *d) {
  if (*axis < -rank || *axis >= rank)
    return param_err(d,
                     "%s: axis %d out of range for rank %d (expected %d..%d)",
                     op, *axis, rank, -rank, rank - 1);
  if (*axis < 0)
    *axis += rank;
  return BASE_OK;
}

/* ---- windows: conv and pooling ----------------------------------------- */

/* Output size and padding of one spatial dimension; pad_lo/hi in and out. */
static int window_dim(int padmode, int64_t in, int k, int stride, int dil,
                      int32_t *lo, int32_t *hi, int64_t *out) {
  int64_t span = (int64_t)(k - 1) * dil + 1;
  if (padmode == IR_PAD_SAME) {
    int64_t o = (in + stride - 1) / stride;
    int64_t total = (o - 1) * stride + span - in;
    if (total < 0)
      total = 0;
    if (total > INT32_MAX)
      return -1;
    *lo = (int32_t)(total / 2);
    *hi = (int32_t)(total - total / 2);
  } else if (padmode == IR_PAD_VALID) {
    *lo = *hi = 0;
  }
  int64_t padded = in + *lo + *hi;
  if (padded < span)
    return -1;
  *out = (padded - span) / stride + 1;
  return 0;
}

static base_status window(const char *op, ir_attrs *a, const ir_shape *x,
                          int kh, int kw, int dh, int dw, ir_shape *out,
                          base_diag *d) {
  sbuf b;
  if (a->stride[0] < 1 || a->stride[1] < 1 || kh < 1 || kw < 1)
    return param_err(d, "%s: kernel and stride must be positive", op);
  if (a->padmode < IR_PAD_SAME || a->padmode > IR_PAD_EXPLICIT)
    return param_err(d, "%s: bad padding mode %d", op, a->padmode);
  *out = *x;
  if (window_dim(a->padmode, x->dim[2], kh, a->stride[0], dh, &a->pad[0],
                 &a->pad[2], &out->dim[2]) ||
      window_dim(a->padmode, x->dim[3], kw, a->stride[1], dw, &a->pad[1],
                 &a->pad[3], &out->dim[3]))
    return shape_err(d,
                     "%s: window %dx%d (dilation %dx%d) does not fit input %s "
                     "with padding [%d,%d,%d,%d]",
                     op, kh, kw, dh, dw, S(x, b), a->pad[0], a->pad[1],
                     a->pad[2], a->pad[3]);
  return BASE_OK;
}

static base_status check_act(const char *op, int act, base_diag *d) {
  if (act == IR_ACT_CLIP)
    return param_err(d, "%s: act=clip is conv2d's only (with min and max)", op);
  if (act < IR_ACT_NONE || act > IR_ACT_GELU)
    return param_err(d, "%s: bad activation %d", op, act);
  return BASE_OK;
}

/* A convolution's act=clip clamps to [min, max] (min <= max); min and max
 * go with it alone. */
static base_status check_conv_act(const ir_attrs *a, base_diag *d) {
  if (a->act == IR_ACT_CLIP)
    return a->lo <= a->hi ? BASE_OK
                          : param_err(d,
                                      "conv2d: act=clip needs min <= max, "
                                      "got min=%g max=%g",
                                      (double)a->lo, (double)a->hi);
  if (a->lo != 0 || a->hi != 0)
    return param_err(d, "conv2d: min and max go with act=clip");
  return check_act("conv2d", a->act, d);
}

/* A conv2d's or matmul's residual input r (its fourth) has the result's
 * shape. */
static base_status residual(const char *op, const ir_shape *const *in, int nin,
                            const ir_shape *out, base_diag *d) {
  sbuf b0, b1;
  if (nin == 4 && !ir_shape_eq(in[3], out))
    return shape_err(d, "%s: residual r %s must have the result's shape %s", op,
                     S(in[3], b0), S(out, b1));
  return BASE_OK;
}

base_status ir_shape_conv2d(ir_attrs *a, const ir_shape *const *in, int nin,
                            ir_shape *out, base_diag *d) {
  const ir_shape *x = in[0], *w = in[1];
  sbuf b0, b1;
  base_status st;
  if ((st = need_rank("conv2d", "input x", x, 4, d)) ||
      (st = need_rank("conv2d", "weight w", w, 4, d)) ||
      (st = check_conv_act(a, d)))
    return st;
  int64_t c = x->dim[1], o = w->dim[0];
  if (a->groups < 1 || c % a->groups || o % a->groups)
    return param_err(d,
                     "conv2d: groups=%d must divide the input channels (%lld) "
                     "and the output channels (%lld)",
                     a->groups, (long long)c, (long long)o);
  if (w->dim[1] * a->groups != c)
    return shape_err(d,
                     "conv2d: input x %s has %lld channels but weight w %s "
                     "with groups=%d expects %lld",
                     S(x, b0), (long long)c, S(w, b1), a->groups,
                     (long long)(w->dim[1] * a->groups));
  if (nin >= 3 && (in[2]->rank != 1 || in[2]->dim[0] != o))
    return shape_err(d, "conv2d: bias b %s must be [%lld] to match weight w %s",
                     S(in[2], b0), (long long)o, S(w, b1));
  if (a->dilation[0] < 1 || a->dilation[1] < 1)
    return param_err(d, "conv2d: dilation must be positive");
  if ((st = window("conv2d", a, x, (int)w->dim[2], (int)w->dim[3],
                   a->dilation[0], a->dilation[1], out, d)))
    return st;
  out->dim[1] = o;
  return residual("conv2d", in, nin, out, d);
}

base_status ir_shape_matmul(ir_attrs *a, const ir_shape *const *in, int nin,
                            ir_shape *out, base_diag *d) {
  const ir_shape *x = in[0], *y = in[1];
  sbuf b0, b1;
  base_status st;
  if ((st = check_act("matmul", a->act, d)))
    return st;
  if (x->rank < 2 || (y->rank != 2 && y->rank != x->rank))
    return shape_err(d,
                     "matmul: expected a of rank >= 2 and b of rank 2 or a's "
                     "rank, got %s and %s",
                     S(x, b0), S(y, b1));
  int r = x->rank;
  int64_t k = x->dim[r - 1], n = y->dim[y->rank - 1];
  int batch_ok = 1;
  for (int i = 0; y->rank == r && i < r - 2; i++)
    batch_ok &= x->dim[i] == y->dim[i];
  if (y->dim[y->rank - 2] != k || !batch_ok)
    return shape_err(d, "matmul: shapes %s and %s do not multiply", S(x, b0),
                     S(y, b1));
  if (nin >= 3 && (in[2]->rank != 1 || in[2]->dim[0] != n))
    return shape_err(d, "matmul: bias %s must be [%lld] to match b %s",
                     S(in[2], b0), (long long)n, S(y, b1));
  *out = *x;
  out->dim[r - 1] = n;
  return residual("matmul", in, nin, out, d);
}

static base_status broadcast(const char *op, const ir_shape *const *in,
                             ir_shape *out, base_diag *d) {
  const ir_shape *x = in[0], *y = in[1];
  sbuf b0, b1;
  int r = x->rank > y->rank ? x->rank : y->rank;
  out->rank = r;
  for (int i = 0; i < r; i++) {
    int ix = i - (r - x->rank), iy = i - (r - y->rank);
    int64_t dx = ix >= 0 ? x->dim[ix] : 1, dy = iy >= 0 ? y->dim[iy] : 1;
    if (dx != dy && dx != 1 && dy != 1)
      return shape_err(d, "%s: shapes %s and %s do not broadcast", op, S(x, b0),
                       S(y, b1));
    out->dim[i] = dx == 1 ? dy : dx;
  }
  return BASE_OK;
}

#define BINARY(name)                                                           \
  base_status ir_shape_##name(ir_attrs *a, const ir_shape *const *in, int nin, \
                              ir_shape *out, base_diag *d) {                   \
    (void)a, (void)nin;                                                        \
    return broadcast(#name, in, out, d);                                       \
  }
BINARY(ewadd)
BINARY(ewmul)
BINARY(ewsub)
BINARY(ewdiv)

base_status ir_shape_smul(ir_attrs *a, const ir_shape *const *in, int nin,
                          ir_shape *out, base_diag *d) {
  sbuf b;
  (void)a, (void)nin;
  if (in[1]->rank != 0)
    return shape_err(d, "smul: s must be a scalar [], got %s", S(in[1], b));
  *out = *in[0];
  return BASE_OK;
}

#define UNARY(name)                                                            \
  base_status ir_shape_##name(ir_attrs *a, const ir_shape *const *in, int nin, \
                              ir_shape *out, base_diag *d) {                   \
    (void)a, (void)nin, (void)d;                                               \
    *out = *in[0];                                                             \
    return BASE_OK;                                                            \
  }
#define EW(ID, name, ...) UNARY(name)
#include "ew.def"
#undef EW

base_status ir_shape_clip(ir_attrs *a, const ir_shape *const *in, int nin,
                          ir_shape *out, base_diag *d) {
  (void)nin;
  if (!(a->lo <= a->hi))
    return param_err(d, "clip: min (%g) must not exceed max (%g)",
                     (double)a->lo, (double)a->hi);
  *out = *in[0];
  return BASE_OK;
}

base_status ir_shape_concat(ir_attrs *a, const ir_shape *const *in, int nin,
                            ir_shape *out, base_diag *d) {
  sbuf b0, b1;
  base_status st;
  const ir_shape *x = in[0];
  if (x->rank < 1)
    return shape_err(d, "concat: inputs must have rank >= 1, got %s", S(x, b0));
  if ((st = norm_axis("concat", &a->axis, x->rank, d)))
    return st;
  *out = *x;
  for (int i = 1; i < nin; i++) {
    int ok = in[i]->rank == x->rank;
    for (int j = 0; ok && j < x->rank; j++)
      ok = j == a->axis || in[i]->dim[j] == x->dim[j];
    if (!ok)
      return shape_err(d,
                       "concat: input %d %s does not match input 1 %s outside "
                       "axis %d",
                       i + 1, S(in[i], b0), S(x, b1), a->axis);
    out->dim[a->axis] += in[i]->dim[a->axis];
  }
  return BASE_OK;
}

/* split's act= and acted=: per part k, acted[k] 0 gives the part, 1 its
 * activation in its place, 2 the part and then its activation (one more
 * output); acted=[] with an activation is 1 for every part (so written:
 * the form is normalised). Expands the parts' shapes out[0..nlist) into the
 * outputs' in place. */
static base_status split_acted(ir_attrs *a, const ir_shape *x, ir_shape *out,
                               base_diag *d) {
  if (a->act == IR_ACT_NONE && a->nlist2)
    return param_err(d, "split: acted needs an activation (act=)");
  if (a->nlist2 && a->nlist2 != a->nlist)
    return param_err(d, "split: acted has %d entries for %d parts", a->nlist2,
                     a->nlist);
  int all = 1;
  for (int i = 0; i < a->nlist2; i++)
    all &= a->list2[i] == 1;
  if (all)
    a->nlist2 = 0;
  int nout = ir_op_nout(IR_OP_SPLIT, a);
  if (nout > IR_MAX_LIST)
    return param_err(d, "split: more than %d outputs", IR_MAX_LIST);
  for (int i = a->nlist - 1, o = nout; i >= 0; i--) {
    int64_t m = a->nlist2 ? a->list2[i] : a->act != IR_ACT_NONE;
    if (m < 0 || m > 2)
      return param_err(d, "split: acted entries are 0, 1 or 2");
    ir_shape s = out[i];
    out[--o] = s;
    if (m == 2)
      out[--o] = s;
  }
  (void)x;
  return BASE_OK;
}

base_status ir_shape_split(ir_attrs *a, const ir_shape *const *in, int nin,
                           ir_shape *out, base_diag *d) {
  sbuf b;
  base_status st;
  const ir_shape *x = in[0];
  (void)nin;
  if (x->rank < 1)
    return shape_err(d, "split: input must have rank >= 1, got %s", S(x, b));
  if ((st = norm_axis("split", &a->axis, x->rank, d)))
    return st;
  if (a->nlist < 1)
    return param_err(d, "split: sizes must list at least one size");
  int64_t sum = 0;
  for (int i = 0; i < a->nlist; i++) {
    if (a->list[i] < 1)
      return param_err(d, "split: sizes must be positive");
    sum += a->list[i];
    out[i] = *x;
    out[i].dim[a->axis] = a->list[i];
  }
  if (sum != x->dim[a->axis])
    return shape_err(
        d, "split: sizes sum to %lld but input %s has %lld on axis %d",
        (long long)sum, S(x, b), (long long)x->dim[a->axis], a->axis);
  return split_acted(a, x, out, d);
}

base_status ir_shape_transpose(ir_attrs *a, const ir_shape *const *in, int nin,
                               ir_shape *out, base_diag *d) {
  sbuf b;
  const ir_shape *x = in[0];
  int seen[IR_MAX_RANK] = {0};
  (void)nin;
  if (a->nlist != x->rank)
    return shape_err(d,
                     "transpose: perm has %d entries but input %s has rank %d",
                     a->nlist, S(x, b), x->rank);
  out->rank = x->rank;
  for (int i = 0; i < x->rank; i++) {
    int64_t p = a->list[i];
    if (p < 0 || p >= x->rank || seen[p]++)
      return param_err(d, "transpose: perm is not a permutation of 0..%d",
                       x->rank - 1);
    out->dim[i] = x->dim[p];
  }
  return BASE_OK;
}

base_status ir_shape_reshape(ir_attrs *a, const ir_shape *const *in, int nin,
                             ir_shape *out, base_diag *d) {
  sbuf b;
  const ir_shape *x = in[0];
  int infer = -1;
  int64_t known = 1;
  (void)nin;
  if (a->nlist > IR_MAX_RANK)
    return param_err(d, "reshape: shape has rank %d, at most %d", a->nlist,
                     IR_MAX_RANK);
  for (int i = 0; i < a->nlist; i++) {
    if (a->list[i] == -1 && infer < 0)
      infer = i;
    else if (a->list[i] < 1)
      return param_err(d,
                       "reshape: dimensions must be positive (one -1 allowed)");
    else if (__builtin_mul_overflow(known, a->list[i], &known) ||
             known > IR_MAX_NUMEL)
      return param_err(d, "reshape: shape has too many elements");
  }
  int64_t n = ir_shape_numel(x);
  if (infer >= 0 && n % known == 0)
    a->list[infer] = n / known;
  else if (infer >= 0 || known != n)
    return shape_err(d,
                     "reshape: input %s has %lld elements, cannot reshape to "
                     "the given shape",
                     S(x, b), (long long)n);
  *out = ir_shape_make(a->nlist, a->list);
  return BASE_OK;
}

/* Pools also need every window to hold at least one input element: each
 * padding must be smaller than the kernel (as in ONNX). */
static base_status pool(const char *op, ir_attrs *a, const ir_shape *const *in,
                        ir_shape *out, base_diag *d) {
  base_status st = need_rank(op, "input x", in[0], 4, d);
  if (st ||
      (st = window(op, a, in[0], a->kernel[0], a->kernel[1], 1, 1, out, d)))
    return st;
  for (int i = 0; i < 4; i++)
    if (a->pad[i] >= a->kernel[i % 2])
      return param_err(d,
                       "%s: padding [%d,%d,%d,%d] must be smaller than the "
                       "kernel %dx%d",
                       op, a->pad[0], a->pad[1], a->pad[2], a->pad[3],
                       a->kernel[0], a->kernel[1]);
  return BASE_OK;
}

base_status ir_shape_avgpool(ir_attrs *a, const ir_shape *const *in, int nin,
                             ir_shape *out, base_diag *d) {
  (void)nin;
  return pool("avgpool", a, in, out, d);
}

base_status ir_shape_maxpool(ir_attrs *a, const ir_shape *const *in, int nin,
                             ir_shape *out, base_diag *d) {
  (void)nin;
  return pool("maxpool", a, in, out, d);
}

base_status ir_shape_global_avgpool(ir_attrs *a, const ir_shape *const *in,
                                    int nin, ir_shape *out, base_diag *d) {
  base_status st = need_rank("global_avgpool", "input x", in[0], 4, d);
  (void)a, (void)nin;
  if (st)
    return st;
  *out = *in[0];
  out->dim[2] = out->dim[3] = 1;
  return BASE_OK;
}

base_status ir_shape_enlarge(ir_attrs *a, const ir_shape *const *in, int nin,
                             ir_shape *out, base_diag *d) {
  sbuf b;
  const ir_shape *w = in[0];
  base_status st = need_rank("enlarge", "kernel w", w, 4, d);
  (void)nin;
  if (st)
    return st;
  int64_t dh = a->kernel[0] - w->dim[2], dw = a->kernel[1] - w->dim[3];
  if (dh < 0 || dw < 0 || dh % 2 || dw % 2)
    return shape_err(d,
                     "enlarge: kernel %s cannot be centred in %dx%d (the "
                     "target must be at least as large, by an even amount)",
                     S(w, b), a->kernel[0], a->kernel[1]);
  *out = *w;
  out->dim[2] = a->kernel[0];
  out->dim[3] = a->kernel[1];
  return BASE_OK;
}

static base_status per_channel(const char *op, const char *what,
                               const ir_shape *p, const ir_shape *x, int64_t c,
                               base_diag *d) {
  sbuf b0, b1;
  if (p->rank == 1 && p->dim[0] == c)
    return BASE_OK;
  return shape_err(d, "%s: %s %s must be [%lld] for input %s", op, what,
                   S(p, b0), (long long)c, S(x, b1));
}

base_status ir_shape_batchnorm(ir_attrs *a, const ir_shape *const *in, int nin,
                               ir_shape *out, base_diag *d) {
  static const char *what[] = {"", "scale", "bias", "mean", "var"};
  sbuf b;
  const ir_shape *x = in[0];
  base_status st;
  (void)nin;
  if (x->rank < 2)
    return shape_err(d, "batchnorm: input must have rank >= 2, got %s",
                     S(x, b));
  if (!(a->eps >= 0))
    return param_err(d, "batchnorm: eps must be >= 0");
  for (int i = 1; i < 5; i++)
    if ((st = per_channel("batchnorm", what[i], in[i], x, x->dim[1], d)))
      return st;
  *out = *x;
  return BASE_OK;
}

/* Normalises and sorts axes (unique, each in range); keepdims keeps 1s. */
base_status ir_shape_reduce_mean(ir_attrs *a, const ir_shape *const *in,
                                 int nin, ir_shape *out, base_diag *d) {
  const ir_shape *x = in[0];
  int seen[IR_MAX_RANK] = {0};
  (void)nin;
  if (a->nlist < 1 || a->nlist > x->rank)
    return param_err(d, "reduce_mean: axes must list 1 to %d axes", x->rank);
  for (int i = 0; i < a->nlist; i++) {
    int32_t ax = (int32_t)a->list[i];
    base_status st = norm_axis("reduce_mean", &ax, x->rank, d);
    if (st)
      return st;
    if (seen[ax]++)
      return param_err(d, "reduce_mean: axis %d listed twice", ax);
  }
  out->rank = 0;
  a->nlist = 0;
  for (int i = 0; i < x->rank; i++) {
    if (seen[i])
      a->list[a->nlist++] = i;
    if (!seen[i] || a->keepdims)
      out->dim[out->rank++] = seen[i] ? 1 : x->dim[i];
  }
  return BASE_OK;
}

base_status ir_shape_softmax(ir_attrs *a, const ir_shape *const *in, int nin,
                             ir_shape *out, base_diag *d) {
  sbuf b;
  (void)nin;
  if (in[0]->rank < 1)
    return shape_err(d, "softmax: input must have rank >= 1, got %s",
                     S(in[0], b));
  *out = *in[0];
  return norm_axis("softmax", &a->axis, in[0]->rank, d);
}

base_status ir_shape_layernorm(ir_attrs *a, const ir_shape *const *in, int nin,
                               ir_shape *out, base_diag *d) {
  sbuf b0, b1;
  const ir_shape *x = in[0];
  base_status st;
  if (x->rank < 1)
    return shape_err(d, "layernorm: input must have rank >= 1, got %s",
                     S(x, b0));
  if ((st = norm_axis("layernorm", &a->axis, x->rank, d)))
    return st;
  if (!(a->eps >= 0))
    return param_err(d, "layernorm: eps must be >= 0");
  ir_shape tail = ir_shape_make(x->rank - a->axis, x->dim + a->axis);
  for (int i = 1; i < nin; i++)
    if (!ir_shape_eq(in[i], &tail))
      return shape_err(d, "layernorm: %s %s must be %s for input %s",
                       i == 1   ? "gamma"
                       : i == 2 ? "beta"
                                : "xb",
                       S(in[i], b0), ir_shape_str(&tail, b1, sizeof b1),
                       S(x, b0));
  *out = *x;
  return BASE_OK;
}

/* softmax(s * q k) v over the last two dimensions: q [..., S, D],
 * k [..., D, T] (a matmul's second operand), v [..., T, E], the leading
 * dimensions equal, s a scalar [] (1 when absent) -> [..., S, E]. */
/* Whether attention's bias b broadcasts to the scores [..., S, T] of q
 * [..., S, D] and k [..., D, T] without growing them: rank at most theirs,
 * each dimension (aligned from the last) 1 or theirs. */
static int att_bias_fits(const ir_shape *b, const ir_shape *q,
                         const ir_shape *k) {
  int r = q->rank;
  if (b->rank > r)
    return 0;
  for (int i = 0; i < b->rank; i++) {
    int j = r - b->rank + i; /* the scores' dimension */
    int64_t want = j == r - 1 ? k->dim[r - 1] : q->dim[j];
    if (b->dim[i] != 1 && b->dim[i] != want)
      return 0;
  }
  return 1;
}

/* Packed strides of [n0, n1, n2, n3]. */
static void att_packed(int64_t n1, int64_t n2, int64_t n3, int64_t *st) {
  st[3] = 1, st[2] = n3, st[1] = n2 * n3, st[0] = n1 * n2 * n3;
}

/* The strides of a row-layout operand [B,R,C] ([R,B,C] with seqfirst) as
 * [b, h, r, c]: head blocks of w columns. */
static void att_rows(int sf, int64_t b, int64_t r, int64_t c, int64_t w,
                     int64_t *st) {
  st[0] = sf ? c : r * c, st[1] = w, st[2] = sf ? b * c : c, st[3] = 1;
}

int ir_att_geom_of(const ir_attrs *a, const ir_shape *q, const ir_shape *k,
                   const ir_shape *v, ir_att_geom *g) {
  memset(g, 0, sizeof *g);
  int r = q->rank, sf = a->axis;
  if (a->groups <= 0) { /* today's layout: leading dimensions folded */
    g->b = 1, g->h = 1;
    for (int i = 0; i < r - 2; i++)
      g->h *= q->dim[i];
    g->s = q->dim[r - 2], g->d = q->dim[r - 1];
    g->t = k->dim[r - 1], g->e = v->dim[r - 1];
    att_packed(g->h, g->s, g->d, g->st[0]);
    att_packed(g->h, g->d, g->t, g->st[1]);
    att_packed(g->h, g->t, g->e, g->st[2]);
    att_packed(g->h, g->s, g->e, g->st[3]);
    return 0;
  }
  if (r < 3 || (sf && r != 3) || k->rank != r || v->rank != r ||
      a->nlist != 3 || a->nlist2 != 2)
    return -1;
  /* rows of rank > 3: [lead..., R, C], the leading dimensions one batch */
  g->b = sf ? q->dim[1] : ir_att_rows3(q).dim[0];
  g->s = q->dim[sf ? 0 : r - 2], g->t = k->dim[sf ? 0 : r - 2];
  g->h = a->groups, g->d = a->list2[0], g->e = a->list2[1];
  for (int i = 0; i < 3; i++)
    g->off[i] = a->list[i];
  att_rows(sf, g->b, g->s, q->dim[r - 1], g->d, g->st[0]);
  att_rows(sf, g->b, g->t, k->dim[r - 1], g->d, g->st[1]);
  int64_t c = g->st[1][2]; /* k as [b, h, d, t]: rows are t */
  g->st[1][2] = 1, g->st[1][3] = c;
  att_rows(sf, g->b, g->t, v->dim[r - 1], g->e, g->st[2]);
  att_rows(0, g->b, g->s, g->h * g->e, g->e, g->st[3]);
  return 0;
}

ir_shape ir_att_rows3(const ir_shape *x) {
  int r = x->rank;
  ir_shape f = {3, {1, x->dim[r - 2], x->dim[r - 1]}};
  for (int i = 0; i < r - 2; i++)
    f.dim[0] *= x->dim[i];
  return f;
}

void ir_att_rows_perm(int r, int k, int64_t *perm) {
  for (int i = 0; i <= r; i++)
    perm[i] = i;
  perm[r - 2] = r - 1, perm[r - 1] = k ? r : r - 2;
  if (k)
    perm[r] = r - 2;
}

/* Whether a row-layout attention's bias b, on rows of rank r > 3, leaves
 * the rows' leading dimensions (all but the last two) to broadcast: rank
 * at most 4 ([.., H, S, T]), and a 1 wherever it reaches them, so that
 * the kernels' folded batch reads it as [1, H, S, T]. */
static int att_rows_bias_lead(const ir_shape *b) {
  if (b->rank > 4)
    return 0;
  for (int i = 0; i + 3 < b->rank; i++)
    if (b->dim[i] != 1)
      return 0;
  return 1;
}

/* Shape inference of the row layout (heads > 0). */
static base_status att_rows_shape(ir_attrs *a, const ir_shape *const *in,
                                  int nin, ir_shape *out, base_diag *d) {
  sbuf b0, b1, b2;
  const ir_shape *q = in[0], *k = in[1], *v = in[2];
  int sf = a->axis, r = q->rank, lead = 1;
  if (r < 3 || (sf && r != 3) || k->rank != r || v->rank != r)
    return shape_err(d,
                     "attention: heads=%d takes q, k and v as rows [B,S,C] "
                     "or [..., S, C] (seqfirst: [S,B,C]), got %s, %s and %s",
                     (int)a->groups, S(q, b0), S(k, b1), S(v, b2));
  for (int i = 0; i < r - 3; i++) /* rows of rank > 3: one batch */
    lead &= q->dim[i] == k->dim[i] && q->dim[i] == v->dim[i];
  if (!lead)
    return shape_err(d,
                     "attention: q %s, k %s and v %s differ in their leading "
                     "dimensions",
                     S(q, b0), S(k, b1), S(v, b2));
  if (r > 3) { /* as rank 3, [prod(lead), S, C] */
    ir_shape f[3] = {ir_att_rows3(q), ir_att_rows3(k), ir_att_rows3(v)};
    const ir_shape *fp[5] = {&f[0], &f[1], &f[2], nin > 3 ? in[3] : NULL,
                             nin > 4 ? in[4] : NULL};
    if (nin == 5 && !att_rows_bias_lead(in[4]))
      return shape_err(d,
                       "attention: b %s must broadcast along the rows' "
                       "leading dimensions (rows %s)",
                       S(in[4], b0), S(q, b1));
    base_status st = att_rows_shape(a, fp, nin, out, d);
    if (st)
      return st;
    *out = *q;
    out->dim[r - 1] = a->groups * a->list2[1];
    return BASE_OK;
  }
  if (a->nlist != 3 || a->nlist2 != 2 || a->list2[0] < 1 || a->list2[1] < 1)
    return param_err(d,
                     "attention: heads=%d needs cols=[q,k,v] (three "
                     "column offsets) and hdim=[D,E] of at least 1",
                     (int)a->groups);
  if (q->dim[sf] != k->dim[sf] || q->dim[sf] != v->dim[sf] ||
      k->dim[!sf] != v->dim[!sf])
    return shape_err(d,
                     "attention: q %s, k %s and v %s differ in batch or k "
                     "and v in length",
                     S(q, b0), S(k, b1), S(v, b2));
  const ir_shape *x[3] = {q, k, v};
  for (int i = 0; i < 3; i++) {
    int64_t w = a->groups * a->list2[i == 2];
    if (a->list[i] < 0 || a->list[i] + w > x[i]->dim[2])
      return param_err(d,
                       "attention: cols[%d]=%lld + %lld head columns pass "
                       "the %lld columns of %s",
                       i, (long long)a->list[i], (long long)w,
                       (long long)x[i]->dim[2], S(x[i], b0));
  }
  int64_t bb = q->dim[sf], hh = a->groups;
  ir_shape qs = {4, {bb, hh, q->dim[!sf], a->list2[0]}};
  ir_shape ks = {4, {bb, hh, a->list2[0], k->dim[!sf]}};
  if (nin >= 4 && in[3]->rank != 0)
    return shape_err(d, "attention: s must be a scalar [], got %s",
                     S(in[3], b0));
  if (nin == 5 && !att_bias_fits(in[4], &qs, &ks))
    return shape_err(d,
                     "attention: b %s does not broadcast to the scores %s "
                     "x %lld",
                     S(in[4], b0), S(&qs, b1), (long long)ks.dim[3]);
  *out = (ir_shape){3, {bb, q->dim[!sf], hh * a->list2[1]}};
  return BASE_OK;
}

base_status ir_shape_attention(ir_attrs *a, const ir_shape *const *in, int nin,
                               ir_shape *out, base_diag *d) {
  sbuf b0, b1, b2;
  const ir_shape *q = in[0], *k = in[1], *v = in[2];
  if (a->groups < 0)
    return param_err(d, "attention: heads must be 0 or more, got %d",
                     (int)a->groups);
  if (a->groups > 0)
    return att_rows_shape(a, in, nin, out, d);
  if (a->nlist || a->nlist2 || a->axis)
    return param_err(d, "attention: cols, hdim and seqfirst need heads");
  int r = q->rank;
  if (r < 2 || k->rank != r || v->rank != r)
    return shape_err(d,
                     "attention: expected q, k and v of one rank >= 2, got "
                     "%s, %s and %s",
                     S(q, b0), S(k, b1), S(v, b2));
  int lead = 1;
  for (int i = 0; i < r - 2; i++)
    lead &= q->dim[i] == k->dim[i] && q->dim[i] == v->dim[i];
  if (!lead || k->dim[r - 2] != q->dim[r - 1] || v->dim[r - 2] != k->dim[r - 1])
    return shape_err(d,
                     "attention: q %s, k %s and v %s do not multiply (q "
                     "[..., S, D], k [..., D, T], v [..., T, E])",
                     S(q, b0), S(k, b1), S(v, b2));
  if (nin >= 4 && in[3]->rank != 0)
    return shape_err(d, "attention: s must be a scalar [], got %s",
                     S(in[3], b0));
  if (nin == 5 && !att_bias_fits(in[4], q, k))
    return shape_err(d,
                     "attention: b %s does not broadcast to the scores "
                     "[..., S, T] of q %s and k %s",
                     S(in[4], b0), S(q, b1), S(k, b2));
  *out = *q;
  out->dim[r - 1] = v->dim[r - 1];
  return BASE_OK;
}

base_status ir_shape_pad(ir_attrs *a, const ir_shape *const *in, int nin,
                         ir_shape *out, base_diag *d) {
  sbuf b;
  const ir_shape *x = in[0];
  (void)nin;
  if (a->nlist != 2 * x->rank)
    return shape_err(d, "pad: pads has %d entries but input %s needs %d",
                     a->nlist, S(x, b), 2 * x->rank);
  *out = *x;
  for (int i = 0; i < x->rank; i++) {
    out->dim[i] += a->list[i] + a->list[i + x->rank];
    if (out->dim[i] < 1) /* a negative pad crops (ONNX Pad) */
      return param_err(d,
                       "pad: pads %lld and %lld leave nothing of "
                       "dimension %d of input %s",
                       (long long)a->list[i], (long long)a->list[i + x->rank],
                       i, S(x, b));
  }
  return BASE_OK;
}

base_status ir_shape_slice(ir_attrs *a, const ir_shape *const *in, int nin,
                           ir_shape *out, base_diag *d) {
  sbuf b;
  const ir_shape *x = in[0];
  (void)nin;
  if (a->nlist != x->rank || a->nlist2 != x->rank)
    return shape_err(d,
                     "slice: starts and ends need %d entries each for input %s",
                     x->rank, S(x, b));
  *out = *x;
  for (int i = 0; i < x->rank; i++) {
    int64_t s = a->list[i], e = a->list2[i];
    if (s < 0 || e <= s || e > x->dim[i])
      return shape_err(d,
                       "slice: range [%lld,%lld) is not within dimension %d "
                       "(size %lld) of input %s",
                       (long long)s, (long long)e, i, (long long)x->dim[i],
                       S(x, b));
    out->dim[i] = e - s;
  }
  return BASE_OK;
}

/* se: global_avgpool, then two 1x1 convolutions of the pooled vector
 * (docs/graph-format.md). */
static base_status se_weight(const char *what, const ir_shape *w, int64_t i,
                             base_diag *d) {
  sbuf b;
  if (w->rank == 4 && w->dim[1] == i && w->dim[2] == 1 && w->dim[3] == 1)
    return BASE_OK;
  return shape_err(d, "se: %s %s must be [O,%lld,1,1]", what, S(w, b),
                   (long long)i);
}

base_status ir_shape_se(ir_attrs *a, const ir_shape *const *in, int nin,
                        ir_shape *out, base_diag *d) {
  const ir_shape *x = in[0], *w1 = in[1], *w2 = in[2];
  sbuf b0;
  base_status st;
  if ((st = need_rank("se", "input x", x, 4, d)) ||
      (st = check_act("se", a->groups, d)) ||
      (st = check_act("se", a->axis, d)) ||
      (st = se_weight("weight w1", w1, x->dim[1], d)) ||
      (st = se_weight("weight w2", w2, w1->dim[0], d)))
    return st;
  for (int k = 3; k < nin; k++) {
    int64_t o = (k == 3 ? w1 : w2)->dim[0];
    if (in[k]->rank != 1 || in[k]->dim[0] != o)
      return shape_err(d, "se: bias %s %s must be [%lld]", k == 3 ? "b1" : "b2",
                       S(in[k], b0), (long long)o);
  }
  if (!(a->lo <= a->hi))
    return param_err(d, "se: min %g must not exceed max %g", (double)a->lo,
                     (double)a->hi);
  *out = *x;
  out->dim[1] = w2->dim[0];
  out->dim[2] = out->dim[3] = 1;
  return BASE_OK;
}

/* concat_shuffle: concat on channels, channel shuffle, channel ranges
 * (docs/graph-format.md). */
base_status ir_shape_concat_shuffle(ir_attrs *a, const ir_shape *const *in,
                                    int nin, ir_shape *out, base_diag *d) {
  sbuf b;
  base_status st;
  ir_shape k;
  ir_attrs ca = *a;
  ca.axis = 1;
  if ((st = need_rank("concat_shuffle", "input x", in[0], 4, d)) ||
      (st = ir_shape_concat(&ca, in, nin, &k, d)))
    return st;
  int64_t c = k.dim[1];
  if (a->groups < 1 || c % a->groups)
    return param_err(d,
                     "concat_shuffle: groups=%d must divide the %lld channels "
                     "of the concat %s",
                     a->groups, (long long)c, S(&k, b));
  if (a->nlist < 1 || a->nlist != a->nlist2)
    return param_err(d, "concat_shuffle: starts and ends need one entry per "
                        "output (at least one)");
  for (int i = 0; i < a->nlist; i++) {
    int64_t s = a->list[i], e = a->list2[i];
    if (s < 0 || e <= s || e > c)
      return shape_err(d,
                       "concat_shuffle: channel range [%lld,%lld) is not "
                       "within the %lld channels of %s",
                       (long long)s, (long long)e, (long long)c, S(&k, b));
    out[i] = k;
    out[i].dim[1] = e - s;
  }
  return BASE_OK;
}

/* Constants: the shape parameter is the output shape. */
static base_status const_shape(const char *op, const ir_attrs *a, int rank,
                               ir_shape *out, base_diag *d) {
  if (a->nlist > IR_MAX_RANK || (rank >= 0 && a->nlist != rank))
    return param_err(d, "%s: shape must have rank %d", op,
                     rank >= 0 ? rank : IR_MAX_RANK);
  for (int i = 0; i < a->nlist; i++)
    if (a->list[i] < 1)
      return param_err(d, "%s: shape dimensions must be positive", op);
  *out = ir_shape_make(a->nlist, a->list);
  return BASE_OK;
}

base_status ir_shape_const_iconv(ir_attrs *a, const ir_shape *const *in,
                                 int nin, ir_shape *out, base_diag *d) {
  base_status st = const_shape("const_iconv", a, 4, out, d);
  (void)in, (void)nin;
  if (!st && (a->list[2] % 2 == 0 || a->list[3] % 2 == 0))
    return param_err(d, "const_iconv: kernel size must be odd, got %lldx%lld",
                     (long long)a->list[2], (long long)a->list[3]);
  return st;
}

base_status ir_shape_const_imm(ir_attrs *a, const ir_shape *const *in, int nin,
                               ir_shape *out, base_diag *d) {
  base_status st = const_shape("const_imm", a, 2, out, d);
  (void)in, (void)nin;
  if (!st && a->list[0] != a->list[1])
    return param_err(d, "const_imm: shape must be square");
  return st;
}

base_status ir_shape_const_ones(ir_attrs *a, const ir_shape *const *in, int nin,
                                ir_shape *out, base_diag *d) {
  (void)in, (void)nin;
  return const_shape("const_ones", a, -1, out, d);
}

base_status ir_shape_const_pool(ir_attrs *a, const ir_shape *const *in, int nin,
                                ir_shape *out, base_diag *d) {
  base_status st = const_shape("const_pool", a, 4, out, d);
  (void)in, (void)nin;
  if (!st && a->list[1] != 1)
    return param_err(d, "const_pool: shape must be [C,1,kh,kw]");
  return st;
}

/* ---- indices, masks and casts ------------------------------------------- */

/* gather: out = data with dimension axis replaced by indices' dimensions
 * (ONNX Gather). */
base_status ir_shape_gather(ir_attrs *a, const ir_shape *const *in, int nin,
                            ir_shape *out, base_diag *d) {
  sbuf b0, b1;
  (void)nin;
  const ir_shape *x = in[0], *ix = in[1];
  if (x->rank < 1)
    return shape_err(d, "gather: data must have rank >= 1, got %s", S(x, b0));
  base_status st = norm_axis("gather", &a->axis, x->rank, d);
  if (st)
    return st;
  if (x->rank - 1 + ix->rank > IR_MAX_RANK)
    return shape_err(d, "gather: data %s and indices %s give rank > %d",
                     S(x, b0), S(ix, b1), IR_MAX_RANK);
  out->rank = 0;
  for (int i = 0; i < a->axis; i++)
    out->dim[out->rank++] = x->dim[i];
  for (int i = 0; i < ix->rank; i++)
    out->dim[out->rank++] = ix->dim[i];
  for (int i = a->axis + 1; i < x->rank; i++)
    out->dim[out->rank++] = x->dim[i];
  return BASE_OK;
}

/* where: the broadcast of cond, a and b. */
base_status ir_shape_where(ir_attrs *a, const ir_shape *const *in, int nin,
                           ir_shape *out, base_diag *d) {
  ir_shape ab;
  const ir_shape *two[2] = {in[1], in[2]};
  (void)a, (void)nin;
  base_status st = broadcast("where", two, &ab, d);
  if (st)
    return st;
  const ir_shape *c[2] = {in[0], &ab};
  return broadcast("where", c, out, d);
}

BINARY(equal)
UNARY(not )
UNARY(cast)

/* ---- element types --------------------------------------------------------
 */

static const char *const dtype_names[IR_NDTYPES] = {"f32", "i64", "bool", "f16",
                                                    "bf16"};

const char *ir_dtype_name(ir_dtype t) {
  return (unsigned)t < IR_NDTYPES ? dtype_names[t] : "?";
}

int ir_dtype_lookup(const char *s, size_t len) {
  for (int i = 0; i < IR_NDTYPES; i++)
    if (strlen(dtype_names[i]) == len && !memcmp(dtype_names[i], s, len))
      return i;
  return -1;
}

static base_status type_err(base_diag *d, ir_opcode op, int k, const char *want,
                            ir_dtype got) {
  const ir_opinfo *r = ir_op(op);
  return param_err(d, "%s: input %d (%s) must be %s, got %s", r->name, k + 1,
                   k < r->nnamed ? r->in_name[k] : r->in_name[0], want,
                   ir_dtype_name(got));
}

/* A float operator: its inputs all of one float type (f32 without any),
 * its outputs of that type. */
static base_status float_type(ir_opcode op, const ir_dtype *in, int nin,
                              int nout, ir_dtype *out, base_diag *d) {
  ir_dtype t = nin > 0 ? in[0] : IR_DT_F32;
  if (!ir_dtype_is_float(t))
    return type_err(d, op, 0, "f32, f16 or bf16", t);
  for (int k = 1; k < nin; k++)
    if (in[k] != t)
      return type_err(d, op, k, ir_dtype_name(t), in[k]);
  for (int k = 0; k < nout; k++)
    out[k] = t;
  return BASE_OK;
}

base_status ir_dtype_infer(ir_opcode op, const ir_attrs *a, const ir_dtype *in,
                           int nin, ir_dtype *out, base_diag *d) {
  int nout = ir_op_nout(op, a);
  ir_dtype t = IR_DT_F32;
  switch (op) {
  case IR_OP_CONCAT:
  case IR_OP_SPLIT:
    if (a->act != IR_ACT_NONE && !ir_dtype_is_float(in[0])) /* act=: float */
      return type_err(d, op, 0, "f32, f16 or bf16", in[0]);
    /* fall through */
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_TRANSPOSE:
  case IR_OP_RESHAPE:
  case IR_OP_SLICE: /* moves: any type, all inputs alike */
    t = in[0];
    for (int k = 1; k < nin; k++)
      if (in[k] != t)
        return type_err(d, op, k, ir_dtype_name(t), in[k]);
    break;
  case IR_OP_GATHER:
    if (in[1] != IR_DT_I64)
      return type_err(d, op, 1, "i64", in[1]);
    t = in[0];
    break;
  case IR_OP_WHERE:
    if (in[0] != IR_DT_BOOL)
      return type_err(d, op, 0, "bool", in[0]);
    if (in[2] != in[1])
      return type_err(d, op, 2, ir_dtype_name(in[1]), in[2]);
    t = in[1];
    break;
  case IR_OP_EQUAL:
    if (in[1] != in[0])
      return type_err(d, op, 1, ir_dtype_name(in[0]), in[1]);
    t = IR_DT_BOOL;
    break;
  case IR_OP_NOT:
    if (in[0] != IR_DT_BOOL)
      return type_err(d, op, 0, "bool", in[0]);
    t = IR_DT_BOOL;
    break;
  case IR_OP_CAST:
    if ((unsigned)a->groups >= IR_NDTYPES)
      return param_err(d, "cast: bad target type %d", a->groups);
    t = (ir_dtype)a->groups;
    break;
  case IR_OP_CONV2D:
  case IR_OP_MATMUL:
  case IR_OP_EWADD:
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
#include "ew_cases.h"
  case IR_OP_CLIP:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_ENLARGE:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_PAD:
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL:
  case IR_OP_ATTENTION:
  case IR_OP_FUSED:
  case IR_OP_SE: return float_type(op, in, nin, nout, out, d);
  }
  for (int k = 0; k < nout; k++)
    out[k] = t;
  return BASE_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

typedef base_status (*shape_rule)(ir_attrs *, const ir_shape *const *, int,
                                  ir_shape *, base_diag *);

static const shape_rule rules[IR_NOPS] = {
#define OP(ID, name, inputs, params, ...) [IR_OP_##ID] = ir_shape_##name,
#include "ops.def"
#undef OP
};

base_status ir_check_arity(const ir_opinfo *r, int nin, base_diag *d) {
  if (nin > IR_MAX_IN)
    return base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                         "%s takes at most %d inputs, got %d", r->name,
                         IR_MAX_IN, nin);
  if (nin >= r->min_in && (r->max_in < 0 || nin <= r->max_in))
    return BASE_OK;
  if (r->max_in < 0)
    return base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                         "%s takes one or more inputs, got %d", r->name, nin);
  char names[128] = "";
  size_t k = 0;
  for (int i = 0; i < r->nnamed && k < sizeof names; i++)
    k += (size_t)snprintf(names + k, sizeof names - k, "%s%s%s", i ? ", " : "",
                          r->in_name[i], i >= r->min_in ? "?" : "");
  if (r->min_in == r->max_in)
    return base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                         "%s takes %d input%s (%s), got %d", r->name, r->min_in,
                         r->min_in == 1 ? "" : "s", names, nin);
  return base_diag_set(d, BASE_ERR_ARITY, 0, 0,
                       "%s takes %d to %d inputs (%s), got %d", r->name,
                       r->min_in, r->max_in, names, nin);
}

base_status ir_infer(ir_opcode op, ir_attrs *a, const ir_shape *const *in,
                     int nin, ir_shape *out, base_diag *d) {
  if ((unsigned)op >= IR_NOPS)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "bad opcode %d", (int)op);
  base_status st = ir_check_arity(ir_op(op), nin, d);
  if (st || (st = rules[op](a, in, nin, out, d)))
    return st;
  for (int i = 0; i < ir_op_nout(op, a); i++) {
    int64_t n = ir_shape_numel(&out[i]);
    if (n < 1 || n > IR_MAX_NUMEL)
      return shape_err(d, "%s: output %d would have %lld elements",
                       ir_op(op)->name, i + 1, (long long)n);
  }
  return BASE_OK;
}
