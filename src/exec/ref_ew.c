/* ref_ew.c: reference kernels of the element-wise and normalisation
 * operators: ewadd/ewsub/ewmul/ewdiv (NumPy broadcasting), smul, the
 * activations, clip, batchnorm, softmax and layernorm; the mask operators
 * equal, not, where and cast (int64 and bool values held as floats:
 * ir.h's ir_dtype).
 *
 * Every output element is computed by one thread; reductions (softmax sums,
 * layernorm moments) run in double over one line at a time, so the thread
 * count never changes a result.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "exec_int.h"

/* ---- binary element-wise with broadcasting ----------------------------- */

typedef enum ew_op { EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_EQ } ew_op;

#if defined(__GNUC__)
/* Four floats as one value of GCC's generic vector extension (gcc, clang;
 * as gemm.c's vf4): -O2 leaves the loops below scalar, and a fused node's
 * chunks, in cache, run at the arithmetic's speed. Each lane computes what
 * the scalar loop computes, so the results are the same. */
typedef float ew_v4 __attribute__((vector_size(16)));

static ew_v4 v4_ld(const float *p) {
  ew_v4 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void v4_st(float *p, ew_v4 v) { memcpy(p, &v, sizeof v); }

static ew_v4 v4_splat(float x) {
  ew_v4 v = {x, x, x, x};
  return v;
}

/* The four-lane part of o = a OP b when both operands run contiguously
 * or one is a scalar (stride 0); j: the elements done. */
#define EW_V4(OP)                                                              \
  if (sa == 1 && sb == 1)                                                      \
    for (; j + 4 <= n; j += 4)                                                 \
      v4_st(o + j, v4_ld(a + j) OP v4_ld(b + j));                              \
  else if (sa == 1 && sb == 0)                                                 \
    for (ew_v4 y = v4_splat(b[0]); j + 4 <= n; j += 4)                         \
      v4_st(o + j, v4_ld(a + j) OP y);                                         \
  else if (sa == 0 && sb == 1)                                                 \
    for (ew_v4 x = v4_splat(a[0]); j + 4 <= n; j += 4)                         \
      v4_st(o + j, x OP v4_ld(b + j));
#else
#define EW_V4(OP)
#endif

/* o[j] = a[j*sa] OP b[j*sb] for j < n (o may be a or b). */
#define EW_LOOP(OP)                                                            \
  do {                                                                         \
    int64_t j = 0;                                                             \
    EW_V4(OP)                                                                  \
    for (; j < n; j++)                                                         \
      o[j] = a[j * sa] OP b[j * sb];                                           \
  } while (0)

/* o[j] = a[j*sa] op b[j*sb] for j < n. */
static void ew_line(ew_op op, const float *a, int64_t sa, const float *b,
                    int64_t sb, float *o, int64_t n) {
  switch (op) {
  case EW_ADD: EW_LOOP(+); break;
  case EW_SUB: EW_LOOP(-); break;
  case EW_MUL: EW_LOOP(*); break;
  case EW_DIV: EW_LOOP(/); break;
  case EW_EQ:
    for (int64_t j = 0; j < n; j++)
      o[j] = a[j * sa] == b[j * sb] ? 1.0f : 0.0f;
    break;
  }
}

/* Strides of x seen through the output shape o: x is aligned at o's last
 * dimension, and a missing or size-1 dimension broadcasts (stride 0). */
static void bcast_strides(const ir_shape *x, const ir_shape *o,
                          int64_t st[IR_MAX_RANK]) {
  int64_t xst[IR_MAX_RANK];
  ex_strides(x, xst);
  int shift = o->rank - x->rank;
  for (int i = 0; i < o->rank; i++) {
    int xi = i - shift;
    st[i] = xi >= 0 && x->dim[xi] != 1 ? xst[xi] : 0;
  }
}

/* Same shapes: one flat line, cut into chunks for the threads. */
static void ew_flat(ew_op op, const float *a, const float *b, float *o,
                    int64_t n) {
  const int64_t chunk = 1 << 14;
  int64_t nchunks = (n + chunk - 1) / chunk;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= EX_PAR_MIN)
#endif
  for (int64_t c = 0; c < nchunks; c++) {
    int64_t lo = c * chunk, len = n - lo < chunk ? n - lo : chunk;
    ew_line(op, a + lo, 1, b + lo, 1, o + lo, len);
  }
}

/* out = a op b with broadcasting, one output row at a time. */
static base_status ew_binary(ew_op op, const ex_arg *in, ex_arg *out) {
  const ir_shape *os = &out[0].shape;
  int64_t n = ir_shape_numel(os);
  if (ir_shape_eq(&in[0].shape, os) && ir_shape_eq(&in[1].shape, os)) {
    ew_flat(op, in[0].data, in[1].data, out[0].data, n);
    return BASE_OK;
  }
  int64_t sa[IR_MAX_RANK] = {0}, sb[IR_MAX_RANK] = {0};
  bcast_strides(&in[0].shape, os, sa);
  bcast_strides(&in[1].shape, os, sb);
  int nd = os->rank > 0 ? os->rank - 1 : 0;
  int64_t len = ex_last_dim(os), rows = ex_rows(os);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= EX_PAR_MIN)
#endif
  for (int64_t r = 0; r < rows; r++) {
    const float *a = in[0].data + ex_row_offset(r, os->dim, sa, nd);
    const float *b = in[1].data + ex_row_offset(r, os->dim, sb, nd);
    ew_line(op, a, sa[nd], b, sb[nd], out[0].data + r * len, len);
  }
  return BASE_OK;
}

base_status ex_ref_ewadd(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  return ew_binary(EW_ADD, in, out);
}

base_status ex_ref_ewsub(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  return ew_binary(EW_SUB, in, out);
}

base_status ex_ref_ewmul(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  return ew_binary(EW_MUL, in, out);
}

base_status ex_ref_ewdiv(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  return ew_binary(EW_DIV, in, out);
}

base_status ex_ref_equal(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  return ew_binary(EW_EQ, in, out);
}

/* out = cond ? a : b, each broadcast to the output shape. */
base_status ex_ref_where(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  const ir_shape *os = &out[0].shape;
  int64_t st[3][IR_MAX_RANK] = {{0}}, total = ir_shape_numel(os);
  for (int k = 0; k < 3; k++)
    bcast_strides(&in[k].shape, os, st[k]);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (total >= EX_PAR_MIN)
#endif
  for (int64_t j = 0; j < total; j++) {
    int64_t off[3];
    for (int k = 0; k < 3; k++)
      off[k] = ex_row_offset(j, os->dim, st[k], os->rank);
    out[0].data[j] =
        in[0].data[off[0]] != 0.0f ? in[1].data[off[1]] : in[2].data[off[2]];
  }
  return BASE_OK;
}

base_status ex_ref_not(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  int64_t len = ir_shape_numel(&out[0].shape);
  for (int64_t j = 0; j < len; j++)
    out[0].data[j] = in[0].data[j] != 0.0f ? 0.0f : 1.0f;
  return BASE_OK;
}

/* cast: to i64 truncates toward zero (ONNX), to bool tests for non-zero. */
base_status ex_ref_cast(const ir_node *n, const ex_arg *in, ex_arg *out) {
  int64_t len = ir_shape_numel(&out[0].shape);
  for (int64_t j = 0; j < len; j++) {
    float x = in[0].data[j];
    out[0].data[j] = n->a.groups == IR_DT_I64    ? truncf(x)
                     : n->a.groups == IR_DT_BOOL ? (x != 0.0f ? 1.0f : 0.0f)
                                                 : x;
  }
  return BASE_OK;
}

/* ---- unary ------------------------------------------------------------- */

base_status ex_ref_smul(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  int64_t len = ir_shape_numel(&out[0].shape);
  const float *x = in[0].data;
  float s = in[1].data[0], *o = out[0].data;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (len >= EX_PAR_MIN)
#endif
  for (int64_t i = 0; i < len; i++)
    o[i] = x[i] * s;
  return BASE_OK;
}

/* ---- unary element-wise: ew.def's rows ---------------------------------- */

/* o[i] = f(x[i]) for i < n, f a row's C expression (o may be x). simd:
 * GCC's -O2 leaves these loops scalar; relu, clip and the other
 * expressions without a libm call then run four lanes at a time, each lane
 * computing what the scalar loop computes (no fast-math: the same
 * operations). Clang vectorises what it can by itself and reports a simd
 * request it cannot honour (a libm call) as an error under -Werror, so it
 * gets the plain loop. */
#if defined(_OPENMP) && !defined(__clang__)
#define EW_PAR                                                                 \
  _Pragma("omp parallel for simd schedule(static) if (n >= EX_PAR_MIN)")
#elif defined(_OPENMP)
#define EW_PAR _Pragma("omp parallel for schedule(static) if (n >= EX_PAR_MIN)")
#else
#define EW_PAR
#endif
#define EW(ID, name, c, ...)                                                   \
  static void ew_##name(const float *in, float *o, int64_t n) {                \
    EW_PAR                                                                     \
    for (int64_t i = 0; i < n; i++) {                                          \
      float x = in[i];                                                         \
      o[i] = c;                                                                \
    }                                                                          \
  }
#include "../ir/ew.def"
#undef EW

static void (*const ew_loops[IR_NOPS])(const float *, float *, int64_t) = {
#define EW(ID, name, ...) [IR_OP_##ID] = ew_##name,
#include "../ir/ew.def"
#undef EW
};

base_status ex_ew_apply(ir_opcode op, const float *x, float *o, int64_t n) {
  if (!ir_ew_of(op))
    return BASE_ERR_PARAM; /* not an ew.def operator */
  ew_loops[op](x, o, n);
  return BASE_OK;
}

#define EW(ID, name, ...)                                                      \
  base_status ex_ref_##name(const ir_node *n, const ex_arg *in, ex_arg *out) { \
    (void)n;                                                                   \
    ew_##name(in[0].data, out[0].data, ir_shape_numel(&out[0].shape));         \
    return BASE_OK;                                                            \
  }
#include "../ir/ew.def"
#undef EW

/* Mean over the (sorted) axes in a.list: every input element adds into the
 * output element with the reduced coordinates dropped; sums in double, in
 * input order, single-threaded (deterministic). */
base_status ex_ref_reduce_mean(const ir_node *n, const ex_arg *in,
                               ex_arg *out) {
  const ir_shape *s = &in[0].shape;
  int64_t on = ir_shape_numel(&out[0].shape), total = ir_shape_numel(s);
  int64_t ost[IR_MAX_RANK], kept = 1;
  int reduced[IR_MAX_RANK] = {0};
  for (int i = 0; i < n->a.nlist; i++)
    reduced[n->a.list[i]] = 1;
  for (int i = s->rank - 1; i >= 0; i--) { /* output strides over kept dims */
    ost[i] = reduced[i] ? 0 : kept;
    kept *= reduced[i] ? 1 : s->dim[i];
  }
  double *acc = base_calloc((size_t)on, sizeof *acc);
  if (!acc)
    return BASE_ERR_NOMEM;
  for (int64_t e = 0; e < total; e++) {
    int64_t rem = e, off = 0;
    for (int i = s->rank - 1; i >= 0; i--) {
      off += rem % s->dim[i] * ost[i];
      rem /= s->dim[i];
    }
    acc[off] += in[0].data[e];
  }
  double count = (double)total / (double)on;
  for (int64_t i = 0; i < on; i++)
    out[0].data[i] = (float)(acc[i] / count);
  free(acc);
  return BASE_OK;
}

/* min(max(x, lo), hi); a NaN stays NaN. */
base_status ex_ref_clip(const ir_node *n, const ex_arg *in, ex_arg *out) {
  int64_t len = ir_shape_numel(&out[0].shape);
  const float *x = in[0].data;
  float *o = out[0].data, lo = n->a.lo, hi = n->a.hi;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (len >= EX_PAR_MIN)
#endif
  for (int64_t i = 0; i < len; i++) {
    float v = x[i] < lo ? lo : x[i];
    o[i] = v > hi ? hi : v;
  }
  return BASE_OK;
}

/* ---- normalisations ---------------------------------------------------- */

/* x [N,C,...]: (x - mean) / sqrt(var + eps) * scale + bias per channel. */
base_status ex_ref_batchnorm(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *s = &in[0].shape;
  int64_t c = s->dim[1], planes = s->dim[0] * c;
  int64_t len = planes > 0 ? ir_shape_numel(s) / planes : 0;
  const float *scale = in[1].data, *bias = in[2].data;
  const float *mean = in[3].data, *var = in[4].data;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (planes * len >= EX_PAR_MIN)
#endif
  for (int64_t p = 0; p < planes; p++) {
    int64_t ch = p % c;
    float m = mean[ch], d = sqrtf(var[ch] + n->a.eps);
    float g = scale[ch], b = bias[ch];
    const float *x = in[0].data + p * len;
    float *o = out[0].data + p * len;
    for (int64_t i = 0; i < len; i++)
      o[i] = (x[i] - m) / d * g + b;
  }
  return BASE_OK;
}

/* Softmax of the len elements x[0], x[st], x[2*st], ... into o likewise. */
static void softmax_line(const float *x, float *o, int64_t len, int64_t st) {
  float mx = x[0];
  for (int64_t i = 1; i < len; i++)
    mx = x[i * st] > mx ? x[i * st] : mx;
  double sum = 0.0;
  for (int64_t i = 0; i < len; i++) {
    /* below -104 expf is 0 (its smallest result, 2^-149, is e^-103.3), but
     * glibc's takes its slow underflow path there (errno): large scales */
    float d = x[i * st] - mx, e = d < -104.0f ? 0.0f : expf(d);
    o[i * st] = e;
    sum += e;
  }
  for (int64_t i = 0; i < len; i++)
    o[i * st] = (float)(o[i * st] / sum);
}

base_status ex_ref_softmax(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *s = &in[0].shape;
  int axis = n->a.axis;
  int64_t len = s->dim[axis], inner = 1, outer = 1;
  for (int i = 0; i < axis; i++)
    outer *= s->dim[i];
  for (int i = axis + 1; i < s->rank; i++)
    inner *= s->dim[i];
  int64_t lines = outer * inner;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (lines * len >= EX_PAR_MIN)
#endif
  for (int64_t l = 0; l < lines; l++) {
    int64_t off = l / inner * len * inner + l % inner;
    softmax_line(in[0].data + off, out[0].data + off, len, inner);
  }
  return BASE_OK;
}

/* Strides over the scores [..., S, T] (rank r) of attention's bias b
 * (rank <= r, aligned from the last dimension): 0 where b broadcasts. */
static void att_bias_strides(const ir_shape *b, int r, int64_t *st) {
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) {
    int j = i - (r - b->rank); /* b's dimension, or < 0 */
    st[i] = j >= 0 && b->dim[j] != 1 ? s : 0;
    if (j >= 0)
      s *= b->dim[j];
  }
}

/* The offset in attention's bias of batch bt's scores (leading dimensions
 * of qs flattened). */
static int64_t att_bias_at(const ir_shape *qs, const int64_t *st, int64_t bt) {
  int64_t off = 0;
  for (int i = qs->rank - 3; i >= 0; i--) {
    off += bt % qs->dim[i] * st[i];
    bt /= qs->dim[i];
  }
  return off;
}

/* The scores of one batch after the product: * s, + b, softmax by rows,
 * then (guard) NaN probabilities 0, each step as smul, ewadd, softmax and
 * where(isnan) compute it. */
static void att_probs(const ir_node *n, const ex_arg *in, float *sc, int64_t bt,
                      const int64_t *bst) {
  const ir_shape *qs = &in[0].shape;
  int r = qs->rank;
  int64_t sq = qs->dim[r - 2], tt = in[1].shape.dim[r - 1];
  float scale = n->nin > 3 ? in[3].data[0] : 1.0f;
  for (int64_t i = 0; n->nin > 3 && i < sq * tt; i++)
    sc[i] *= scale;
  if (n->nin > 4) {
    const float *b = in[4].data + att_bias_at(qs, bst, bt);
    for (int64_t i = 0; i < sq; i++)
      for (int64_t j = 0; j < tt; j++)
        sc[i * tt + j] += b[i * bst[r - 2] + j * bst[r - 1]];
  }
  for (int64_t i = 0; i < sq; i++)
    softmax_line(sc + i * tt, sc + i * tt, tt, 1);
  for (int64_t i = 0; n->a.keepdims && i < sq * tt; i++) /* guard */
    if (isnan(sc[i]))
      sc[i] = 0.0f;
}

/* Copies the [m, n] matrix at src with strides (rm, rn) into dst packed,
 * or (back) the packed src into dst's strides. */
static void att_copy(float *dst, const float *src, int64_t m, int64_t n,
                     int64_t rm, int64_t rn, int back) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      if (back)
        dst[i * rm + j * rn] = src[i * n + j];
      else
        dst[i * n + j] = src[i * rm + j * rn];
    }
}

/* One head of the row layout: its q, k and v copied packed (scratch w),
 * then the products and softmax of the default layout, the result written
 * at its strides. */
static void att_rows_head(const ir_node *n, const ex_arg *v, const ex_arg *in,
                          float *y, const ir_att_geom *g, int64_t bt,
                          const int64_t *bst, float *w) {
  int64_t b = bt / g->h, h = bt % g->h;
  float *q = w, *k = q + g->s * g->d, *vv = k + g->d * g->t;
  float *sc = vv + g->t * g->e, *o = sc + g->s * g->t;
  const float *src[3] = {in[0].data, in[1].data, in[2].data};
  float *dst[3] = {q, k, vv};
  int64_t rows[3] = {g->s, g->d, g->t}, cols[3] = {g->d, g->t, g->e};
  for (int i = 0; i < 3; i++)
    att_copy(dst[i], src[i] + g->off[i] + b * g->st[i][0] + h * g->st[i][1],
             rows[i], cols[i], g->st[i][2], g->st[i][3], 0);
  ex_gemm(g->s, g->t, g->d, q, g->d, k, g->t, sc, g->t, 0);
  att_probs(n, v, sc, bt, bst);
  ex_gemm(g->s, g->e, g->t, sc, g->t, vv, g->e, o, g->e, 0);
  att_copy(y + b * g->st[3][0] + h * g->st[3][1], o, g->s, g->e, g->st[3][2],
           g->st[3][3], 1);
}

/* The row layout (heads > 0): q, k and v read as [b, h, ...] views of the
 * rows, each head as the default layout computes it. */
static base_status att_rows(const ir_node *n, const ex_arg *in, ex_arg *out) {
  ir_att_geom g;
  if (ir_att_geom_of(&n->a, &in[0].shape, &in[1].shape, &in[2].shape, &g))
    return BASE_ERR_PARAM;
  ex_arg v[5];
  for (int i = 0; i < n->nin; i++)
    v[i] = in[i];
  v[0].shape = (ir_shape){4, {g.b, g.h, g.s, g.d}};
  v[1].shape = (ir_shape){4, {g.b, g.h, g.d, g.t}};
  v[2].shape = (ir_shape){4, {g.b, g.h, g.t, g.e}};
  int64_t bst[IR_MAX_RANK] = {0};
  if (n->nin > 4)
    att_bias_strides(&in[4].shape, 4, bst);
  size_t wn =
      (size_t)(g.s * g.d + g.d * g.t + g.t * g.e + g.s * g.t + g.s * g.e + 1);
  int failed = 0;
#ifdef _OPENMP
  int par = g.b * g.h > 1 && g.b * g.h * g.s * g.t * (g.d + g.e) >= EX_PAR_MIN;
#pragma omp parallel if (par) reduction(| : failed)
#endif
  {
    float *w = base_malloc(sizeof(float) * wn);
    failed = !w;
#ifdef _OPENMP
#pragma omp for schedule(dynamic)
#endif
    for (int64_t bt = 0; bt < g.b * g.h; bt++)
      if (w)
        att_rows_head(n, v, in, out[0].data, &g, bt, bst, w);
    free(w);
  }
  return failed ? BASE_ERR_NOMEM : BASE_OK;
}

/* softmax(s * q k + b) v, batch by batch (the leading dimensions): the
 * scores in a temporary [S, T], computed as matmul, smul, ewadd and
 * softmax compute them, so that the result equals theirs. The batches are
 * spread over the threads (each with its own scores; the products inside
 * then run on one thread, by the same tiles, so the same sums): one
 * parallel region per node instead of two per batch, and the scaling and
 * softmax no longer on one thread. */
base_status ex_ref_attention(const ir_node *n, const ex_arg *in, ex_arg *out) {
  if (n->a.groups > 0)
    return att_rows(n, in, out);
  const ir_shape *qs = &in[0].shape;
  int r = qs->rank;
  int64_t sq = qs->dim[r - 2], dd = qs->dim[r - 1];
  int64_t tt = in[1].shape.dim[r - 1], ee = in[2].shape.dim[r - 1];
  int64_t batch = 1, bst[IR_MAX_RANK] = {0};
  for (int i = 0; i < r - 2; i++)
    batch *= qs->dim[i];
  if (n->nin > 4)
    att_bias_strides(&in[4].shape, r, bst);
  size_t scn = (size_t)(sq * tt > 0 ? sq * tt : 1);
  int failed = 0;
#ifdef _OPENMP
  int par = batch > 1 && batch * sq * tt * (dd + ee) >= EX_PAR_MIN;
#pragma omp parallel if (par) reduction(| : failed)
#endif
  {
    float *sc = base_malloc(sizeof(float) * scn);
    failed = !sc;
#ifdef _OPENMP
#pragma omp for schedule(dynamic)
#endif
    for (int64_t b = 0; b < batch; b++) {
      if (!sc)
        continue;
      ex_gemm(sq, tt, dd, in[0].data + b * sq * dd, dd,
              in[1].data + b * dd * tt, tt, sc, tt, 0);
      att_probs(n, in, sc, b, bst);
      ex_gemm(sq, ee, tt, sc, tt, in[2].data + b * tt * ee, ee,
              out[0].data + b * sq * ee, ee, 0);
    }
    free(sc);
  }
  return failed ? BASE_ERR_NOMEM : BASE_OK;
}

/* Normalises one row x[0..len-1] into o, then * gamma + beta if given;
 * rms: by the root mean square, not centred (RMSNorm). */
static void layernorm_row(const float *x, float *o, int64_t len, float eps,
                          int rms, const float *gamma, const float *beta) {
  double mean = 0.0, var = 0.0;
  for (int64_t i = 0; i < len && !rms; i++)
    mean += x[i];
  mean /= (double)len;
  for (int64_t i = 0; i < len; i++)
    var += (x[i] - mean) * (x[i] - mean);
  var /= (double)len;
  double inv = 1.0 / sqrt(var + eps);
  for (int64_t i = 0; i < len; i++) {
    double y = (x[i] - mean) * inv;
    if (gamma)
      y *= gamma[i];
    if (beta)
      y += beta[i];
    o[i] = (float)y;
  }
}

base_status ex_ref_layernorm(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *s = &in[0].shape;
  int64_t len = 1, rows = 1;
  for (int i = 0; i < s->rank; i++) {
    if (i < n->a.axis)
      rows *= s->dim[i];
    else
      len *= s->dim[i];
  }
  const float *gamma = n->nin > 1 ? in[1].data : NULL;
  const float *beta = n->nin > 2 ? in[2].data : NULL;
  const float *x = in[0].data;
  float *xs = NULL;
  if (n->nin > 3) { /* xb added to every row first (a moved bias) */
    if (!(xs = base_malloc(sizeof *xs * (size_t)(rows * len + 1))))
      return BASE_ERR_NOMEM;
    for (int64_t i = 0; i < rows * len; i++)
      xs[i] = x[i] + in[3].data[i % len];
    x = xs;
  }
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows * len >= EX_PAR_MIN)
#endif
  for (int64_t r = 0; r < rows; r++)
    layernorm_row(x + r * len, out[0].data + r * len, len, n->a.eps,
                  ir_ln_rms(&n->a), gamma, beta);
  free(xs);
  return BASE_OK;
}
