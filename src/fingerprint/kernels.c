/* kernels.c: the fingerprint kernels: the generation operators evaluated on
 * residues modulo FP_P = 2^31-1.
 *
 * Residues are below 2^31, so a product fits in 62 bits and a running sum
 * reduced after every addition never overflows 64 bits. Linear operators
 * are exact; avgpool multiplies the window sum by the inverse of the count;
 * maxpool takes the largest residue (a law about max survives only when it
 * holds for any total order, e.g. pooling commutes with concat); relu is a
 * keyed random function (fp_act), the same for conv2d's act=relu;
 * softmax one of each row (attention: its definition with that softmax).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fp.h"

static inline uint32_t red(uint64_t x) {
  x = (x & FP_P) + (x >> 31);
  x = (x & FP_P) + (x >> 31);
  return (uint32_t)(x >= FP_P ? x - FP_P : x);
}

/* A product of two residues folded once: congruent, below 2^32, so up to
 * 2^32 of them add up in a uint64_t before one red(). */
static inline uint64_t mulf(uint32_t a, uint32_t b) {
  uint64_t x = (uint64_t)a * b;
  return (x & FP_P) + (x >> 31);
}

static inline uint32_t addm(uint32_t a, uint32_t b) {
  uint32_t s = a + b; /* < 2^32 */
  return s >= FP_P ? s - FP_P : s;
}

static uint32_t powm(uint32_t b, uint32_t e) {
  uint64_t r = 1, x = b;
  for (; e; e >>= 1, x = red(x * x))
    if (e & 1)
      r = red(r * x);
  return (uint32_t)r;
}

uint32_t fp_act(int act, uint64_t key, uint32_t x) {
  if (act == IR_ACT_NONE)
    return x;
  uint64_t h = XXH3_64bits_withSeed(
      &x, sizeof x, key ^ (0x9e3779b97f4a7c15ull * (uint64_t)act));
  return (uint32_t)(h % FP_P);
}

static uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void fp_random(uint32_t *dst, int64_t n, uint64_t seed, uint64_t stream) {
  uint64_t base = splitmix(seed ^ splitmix(stream));
  for (int64_t i = 0; i < n; i++)
    dst[i] = (uint32_t)(splitmix(base + (uint64_t)i) % FP_P);
}

/* ---- products ------------------------------------------------------------
 */

/* a [.., k] (rows: every leading index) times b [k, n], plus bias[n] when
 * there is one (nin 3). */
static void k_matmul(const ir_shape *const *s, const uint32_t *const *in,
                     int nin, uint32_t *y) {
  int64_t k = s[0]->dim[s[0]->rank - 1], n = s[1]->dim[1];
  int64_t m = ir_shape_numel(s[0]) / k;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      uint64_t acc = 0;
      for (int64_t t = 0; t < k; t++)
        acc += mulf(in[0][i * k + t], in[1][t * n + j]);
      y[i * n + j] = nin == 3 ? addm(red(acc), in[2][j]) : red(acc);
    }
}

/* One output element of a convolution: the dot product of the window at
 * (oy, ox) of channels c0.. of batch plane x with kernel w of output o. */
/* The kernel taps [lo, hi) of one axis that land inside the input (from
 * position p0, dilation d, input extent n, kernel extent k). */
static void taps(int64_t p0, int64_t d, int64_t n, int64_t k, int64_t *lo,
                 int64_t *hi) {
  *lo = 0, *hi = k;
  while (*lo < k && p0 + *lo * d < 0)
    (*lo)++;
  while (*hi > *lo && p0 + (*hi - 1) * d >= n)
    (*hi)--;
}

static uint32_t conv_at(const ir_shape *xs, const ir_shape *ws,
                        const ir_attrs *a, const uint32_t *x, const uint32_t *w,
                        int64_t c0, int64_t oy, int64_t ox) {
  int64_t cg = ws->dim[1], kh = ws->dim[2], kw = ws->dim[3];
  int64_t h = xs->dim[2], wd = xs->dim[3];
  int64_t dy = a->dilation[0], dx = a->dilation[1];
  int64_t y0 = oy * a->stride[0] - a->pad[0],
          x0 = ox * a->stride[1] - a->pad[1];
  int64_t ky0, ky1, kx0, kx1;
  taps(y0, dy, h, kh, &ky0, &ky1);
  taps(x0, dx, wd, kw, &kx0, &kx1);
  uint64_t acc = 0;
  for (int64_t c = 0; c < cg; c++)
    for (int64_t ky = ky0; ky < ky1; ky++) {
      const uint32_t *xr = x + ((c0 + c) * h + y0 + ky * dy) * wd + x0;
      const uint32_t *wr = w + (c * kh + ky) * kw;
      for (int64_t kx = kx0; kx < kx1; kx++)
        acc += mulf(xr[kx * dx], wr[kx]);
    }
  return red(acc);
}

/* The same, one output plane at a time: each weight tap is multiplied into
 * every output position it reaches (no per-position tap ranges); the same
 * terms are summed, so the residues are the same. acc holds oh * ow sums. */
static void conv_plane(const ir_attrs *a, const ir_shape *xs,
                       const ir_shape *ws, const uint32_t *x, const uint32_t *w,
                       int64_t c0, int64_t oh, int64_t ow, uint64_t *acc) {
  int64_t cg = ws->dim[1], kh = ws->dim[2], kw = ws->dim[3];
  int64_t h = xs->dim[2], wd = xs->dim[3];
  memset(acc, 0, (size_t)(oh * ow) * sizeof *acc);
  for (int64_t c = 0; c < cg; c++)
    for (int64_t ky = 0; ky < kh; ky++)
      for (int64_t kx = 0; kx < kw; kx++) {
        uint32_t wv = w[(c * kh + ky) * kw + kx];
        int64_t x0 = kx * a->dilation[1] - a->pad[1], sx = a->stride[1];
        /* the output columns whose input column x0 + ox * sx is inside */
        int64_t lo = x0 < 0 ? (-x0 + sx - 1) / sx : 0;
        int64_t hi = wd - x0 <= 0 ? 0 : (wd - x0 + sx - 1) / sx;
        hi = hi < ow ? hi : ow;
        for (int64_t oy = 0; oy < oh; oy++) {
          int64_t iy = oy * a->stride[0] - a->pad[0] + ky * a->dilation[0];
          if (iy < 0 || iy >= h)
            continue;
          const uint32_t *xr = x + ((c0 + c) * h + iy) * wd;
          uint64_t *ar = acc + oy * ow;
          for (int64_t ox = lo; ox < hi; ox++)
            ar[ox] += mulf(xr[x0 + ox * sx], wv);
        }
      }
}

/* in[2]: the bias (one residue per output channel, added before the
 * activation), or NULL. */
static void k_conv(const ir_attrs *a, const ir_shape *const *s,
                   const uint32_t *const *in, const ir_shape *os, uint32_t *y,
                   uint64_t key) {
  const ir_shape *xs = s[0], *ws = s[1];
  int64_t nb = xs->dim[0], c = xs->dim[1], o = ws->dim[0];
  int64_t og = o / a->groups, cg = c / a->groups;
  int64_t oh = os->dim[2], ow = os->dim[3];
  int64_t wsz = ws->dim[1] * ws->dim[2] * ws->dim[3];
  uint64_t acc[EN_MAX_NUMEL];
  for (int64_t b = 0; b < nb; b++)
    for (int64_t oc = 0; oc < o; oc++) {
      const uint32_t *xb = in[0] + b * c * xs->dim[2] * xs->dim[3];
      uint32_t *yp = y + (b * o + oc) * oh * ow;
      if (oh * ow > EN_MAX_NUMEL) {
        for (int64_t oy = 0; oy < oh; oy++)
          for (int64_t ox = 0; ox < ow; ox++) {
            uint32_t v =
                conv_at(xs, ws, a, xb, in[1] + oc * wsz, oc / og * cg, oy, ox);
            v = in[2] ? addm(v, in[2][oc]) : v;
            yp[oy * ow + ox] = fp_act(a->act, key, v);
          }
        continue;
      }
      conv_plane(a, xs, ws, xb, in[1] + oc * wsz, oc / og * cg, oh, ow, acc);
      for (int64_t i = 0; i < oh * ow; i++)
        yp[i] = fp_act(a->act, key,
                       in[2] ? addm(red(acc[i]), in[2][oc]) : red(acc[i]));
    }
}

/* ---- element-wise --------------------------------------------------------
 */

/* The element-wise kernels: y = a + b, a * b, a * scalar b. */
typedef enum ew_fn { EW_ADD, EW_MUL, EW_SMUL } ew_fn;

static void k_ew(ew_fn fn, int64_t n, const uint32_t *const *in, uint32_t *y) {
  for (int64_t i = 0; i < n; i++)
    switch (fn) {
    case EW_ADD: y[i] = addm(in[0][i], in[1][i]); break;
    case EW_MUL: y[i] = red((uint64_t)in[0][i] * in[1][i]); break;
    case EW_SMUL: y[i] = red((uint64_t)in[0][i] * in[1][0]); break;
    }
}

/* y = x + b, b [n] broadcast along x's last axis (of n elements). */
static void k_bias_add(int64_t len, int64_t n, const uint32_t *const *in,
                       uint32_t *y) {
  for (int64_t i = 0; i < len; i++)
    y[i] = addm(in[0][i], in[1][i % n]);
}

/* An ew.def operator with the FP flag: a keyed random function, fp_act's
 * of its activation (that of conv2d's act=), else one keyed by its row. */
static void k_unary(ir_opcode op, int64_t n, const uint32_t *x, uint32_t *y,
                    uint64_t key) {
  int act = ir_op(op)->act;
  int k = act != IR_ACT_NONE ? act : 64 + ir_ew_of(op)->index;
  for (int64_t i = 0; i < n; i++)
    y[i] = fp_act(k, key, x[i]);
}

/* ---- data movement -------------------------------------------------------
 */

/* Elements before and after axis (outer, inner) of shape s. */
static void around(const ir_shape *s, int axis, int64_t *outer,
                   int64_t *inner) {
  *outer = *inner = 1;
  for (int i = 0; i < axis; i++)
    *outer *= s->dim[i];
  for (int i = axis + 1; i < s->rank; i++)
    *inner *= s->dim[i];
}

static void k_concat(int axis, const ir_shape *const *ins,
                     const uint32_t *const *in, int nin, const ir_shape *os,
                     uint32_t *y) {
  int64_t outer, inner, off = 0;
  around(os, axis, &outer, &inner);
  int64_t row = os->dim[axis] * inner;
  for (int i = 0; i < nin; i++) {
    int64_t len = ins[i]->dim[axis] * inner;
    for (int64_t o = 0; o < outer; o++)
      memcpy(y + o * row + off, in[i] + o * len, (size_t)len * sizeof *y);
    off += len;
  }
}

static void k_split(int axis, const ir_shape *s, const uint32_t *x,
                    const ir_shape *outs, int np, uint32_t *const *out) {
  int64_t outer, inner, off = 0;
  around(s, axis, &outer, &inner);
  int64_t row = s->dim[axis] * inner;
  for (int i = 0; i < np; i++) {
    int64_t len = outs[i].dim[axis] * inner;
    for (int64_t o = 0; o < outer; o++)
      memcpy(out[i] + o * len, x + o * row + off, (size_t)len * sizeof *x);
    off += len;
  }
}

/* A transpose of the two leading axes: [r, c] -> [c, r] of rows of n
 * elements (n = 1: the 2-D transpose; a rank-3 [r, c, n] with perm
 * [1,0,2]: the seventh tier's). */
static void k_transpose(const ir_shape *s, const uint32_t *x, uint32_t *y) {
  int64_t r = s->dim[0], c = s->dim[1], n = s->rank == 3 ? s->dim[2] : 1;
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++)
      memcpy(y + (j * r + i) * n, x + (i * c + j) * n, (size_t)n * sizeof *y);
}

static void k_enlarge(const ir_shape *s, const ir_shape *os, const uint32_t *x,
                      uint32_t *y) {
  int64_t planes = s->dim[0] * s->dim[1], h = s->dim[2], w = s->dim[3];
  int64_t kh = os->dim[2], kw = os->dim[3];
  int64_t oy = (kh - h) / 2, ox = (kw - w) / 2;
  memset(y, 0, (size_t)(planes * kh * kw) * sizeof *y);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t i = 0; i < h; i++)
      memcpy(y + (p * kh + oy + i) * kw + ox, x + (p * h + i) * w,
             (size_t)w * sizeof *y);
}

/* ---- pooling -------------------------------------------------------------
 */

#define POOL_INV 64 /* window sizes whose inverses k_pool keeps */

/* The inverse of count modulo FP_P, from inv[] (inverses of 1..n - 1,
 * 0 where not computed yet) when count is below n. */
static uint32_t inverse(uint32_t *inv, int64_t n, int64_t count) {
  if (count >= n)
    return powm((uint32_t)count, FP_P - 2);
  if (!inv[count])
    inv[count] = powm((uint32_t)count, FP_P - 2);
  return inv[count];
}

static uint32_t pool_at(const ir_attrs *a, int is_max, int64_t h, int64_t w,
                        const uint32_t *x, int64_t oy, int64_t ox,
                        uint32_t *inv) {
  int64_t y0 = oy * a->stride[0] - a->pad[0],
          x0 = ox * a->stride[1] - a->pad[1];
  uint64_t acc = 0;
  int64_t count = 0;
  for (int64_t y = y0; y < y0 + a->kernel[0]; y++)
    for (int64_t xx = x0; xx < x0 + a->kernel[1]; xx++) {
      if (y < 0 || y >= h || xx < 0 || xx >= w)
        continue;
      uint32_t v = x[y * w + xx];
      acc = is_max ? (v > acc ? v : acc) : addm((uint32_t)acc, v);
      count++;
    }
  if (is_max)
    return (uint32_t)acc;
  if (a->count_include_pad)
    count = (int64_t)a->kernel[0] * a->kernel[1];
  return count ? red(acc * inverse(inv, POOL_INV, count)) : 0;
}

static void k_pool(const ir_attrs *a, int is_max, const ir_shape *s,
                   const ir_shape *os, const uint32_t *x, uint32_t *y) {
  int64_t planes = s->dim[0] * s->dim[1], h = s->dim[2], w = s->dim[3];
  int64_t oh = os->dim[2], ow = os->dim[3];
  uint32_t inv[POOL_INV] = {0}; /* each window size's inverse, once */
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oy = 0; oy < oh; oy++)
      for (int64_t ox = 0; ox < ow; ox++)
        y[(p * oh + oy) * ow + ox] =
            pool_at(a, is_max, h, w, x + p * h * w, oy, ox, inv);
}

/* ---- constants -----------------------------------------------------------
 */

static void k_const(ir_opcode op, const ir_shape *s, uint32_t *y) {
  int64_t n = ir_shape_numel(s);
  for (int64_t i = 0; i < n; i++)
    y[i] = op == IR_OP_CONST_ONES || op == IR_OP_CONST_POOL;
  if (op == IR_OP_CONST_IMM)
    for (int64_t i = 0; i < s->dim[0]; i++)
      y[i * s->dim[0] + i] = 1;
  if (op == IR_OP_CONST_ICONV) {
    int64_t ci = s->dim[1], kh = s->dim[2], kw = s->dim[3];
    for (int64_t o = 0; o < s->dim[0]; o++)
      y[((o * ci + o % ci) * kh + kh / 2) * kw + kw / 2] = 1;
  }
}

/* ---- the extended set's batchnorm ------------------------------------ */

static uint32_t bn_f(const uint32_t *n, int64_t c, uint64_t key) {
  uint32_t sv[2] = {n[c], n[12 + c]}; /* scale, var */
  return (uint32_t)(XXH3_64bits_withSeed(sv, sizeof sv, key ^ 0xb7a7c4ull) %
                    FP_P);
}

base_status fp_bn_kernel(int gop, const ir_shape *const *ins,
                         const uint32_t *const *in, const ir_shape *out,
                         uint32_t *y, uint64_t key) {
  const uint32_t *n = in[gop == EN_BNFOLD_B ? 0 : 1];
  if (gop == EN_BNFOLD_B) {
    for (int64_t c = 0; c < 4; c++) /* bias - mean f */
      y[c] = addm(n[4 + c], FP_P - red(mulf(n[8 + c], bn_f(n, c, key))));
    return BASE_OK;
  }
  if (gop == EN_BNFOLD_C) {
    for (int64_t c = 0; c < 4; c++) /* (x - mean) f + bias */
      y[c] = addm(red(mulf(addm(in[0][c], FP_P - n[8 + c]), bn_f(n, c, key))),
                  n[4 + c]);
    return BASE_OK;
  }
  const ir_shape *s = ins[0];
  int64_t total = ir_shape_numel(out), inner = 1;
  int axis = gop == EN_BN ? 1 : 0;
  for (int k = axis + 1; k < s->rank; k++)
    inner *= s->dim[k];
  for (int64_t i = 0; i < total; i++) {
    int64_t c = i / inner % s->dim[axis];
    uint32_t f = bn_f(n, c, key), x = in[0][i];
    y[i] = gop == EN_BN ? addm(red(mulf(addm(x, FP_P - n[8 + c]), f)), n[4 + c])
                        : red(mulf(x, f));
  }
  return BASE_OK;
}

/* ---- the fourth tier: softmax and attention ------------------------------
 */

/* softmax over the last axis of s (n rows of c): a keyed random function
 * of each whole row and the element's position in it (so exactly the laws
 * of every row-wise function hold); key tells it from fp_act's. */
static void k_softmax(const ir_shape *s, const uint32_t *x, uint32_t *y,
                      uint64_t key) {
  int64_t c = s->dim[s->rank - 1], n = ir_shape_numel(s) / c;
  for (int64_t r = 0; r < n; r++) {
    uint64_t h = XXH3_64bits_withSeed(x + r * c, (size_t)c * sizeof *x,
                                      key ^ 0x5f3759df5f3759dfull);
    for (int64_t j = 0; j < c; j++)
      y[r * c + j] = (uint32_t)(splitmix(h + (uint64_t)j) % FP_P);
  }
}

/* b [m, k] times c [k, n] into y [m, n], b times the scalar s when s. */
static void k_mm(int64_t m, int64_t k, int64_t n, const uint32_t *b,
                 const uint32_t *c, const uint32_t *s, uint32_t *y) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      uint64_t acc = 0;
      for (int64_t t = 0; t < k; t++)
        acc += mulf(b[i * k + t], c[t * n + j]);
      y[i * n + j] = s ? red(mulf(red(acc), s[0])) : red(acc);
    }
}

/* attention(q, k, v[, s[, b]]) by its definition, softmax(s * q k + b) v
 * (softmax as k_softmax), per leading index; b only of the scores' shape.
 * guard=1 and the row layout are not fingerprinted. */
static base_status k_attention(const ir_attrs *a, const ir_shape *const *ins,
                               const uint32_t *const *in, int nin, uint32_t *y,
                               uint64_t key) {
  int r = ins[0]->rank;
  if (a->groups || a->keepdims || r < 2 || (nin == 5 && (ins[4]->rank != r)))
    return BASE_ERR_PARAM;
  int64_t S = ins[0]->dim[r - 2], D = ins[0]->dim[r - 1];
  int64_t T = ins[1]->dim[r - 1], E = ins[2]->dim[r - 1];
  int64_t nb = ir_shape_numel(ins[0]) / (S * D);
  ir_shape ps = {2, {S, T}};
  if (nin == 5 && ir_shape_numel(ins[4]) != nb * S * T)
    return BASE_ERR_PARAM;
  uint32_t *p = base_malloc((size_t)(2 * S * T) * sizeof *p);
  if (!p)
    return BASE_ERR_NOMEM;
  for (int64_t i = 0; i < nb; i++) {
    k_mm(S, D, T, in[0] + i * S * D, in[1] + i * D * T, nin >= 4 ? in[3] : NULL,
         p);
    for (int64_t j = 0; nin == 5 && j < S * T; j++)
      p[j] = addm(p[j], in[4][i * S * T + j]);
    k_softmax(&ps, p, p + S * T, key);
    k_mm(S, T, E, p + S * T, in[2] + i * T * E, NULL, y + i * S * E);
  }
  free(p);
  return BASE_OK;
}

/* Whether a's bounds are the generation set's clip's, [0, 6]: the only
 * clip fingerprinted (fp_act's function of IR_ACT_CLIP stands for it). */
static int clip6(const ir_attrs *a) { return a->lo == 0 && a->hi == 6; }

/* conv2d or matmul op (a) with a bias and a residual input r = in[3]: the
 * product with the bias, plus r, then a's activation. */
static base_status k_residual(ir_opcode op, const ir_attrs *a,
                              const ir_shape *const *ins,
                              const uint32_t *const *in, const ir_shape *outs,
                              uint32_t *y, uint64_t key) {
  ir_attrs b = *a;
  b.act = IR_ACT_NONE;
  int64_t n = ir_shape_numel(&outs[0]);
  if (!ir_shape_eq(ins[3], &outs[0]))
    return BASE_ERR_PARAM;
  base_status st = fp_kernel(op, &b, ins, in, 3, outs, &y, key);
  if (st)
    return st;
  const uint32_t *sum[2] = {y, in[3]};
  k_ew(EW_ADD, n, sum, y);
  for (int64_t i = 0; a->act && i < n; i++)
    y[i] = fp_act(a->act, key, y[i]);
  return BASE_OK;
}

base_status fp_kernel(ir_opcode op, const ir_attrs *a,
                      const ir_shape *const *ins, const uint32_t *const *in,
                      int nin, const ir_shape *outs, uint32_t *const *out,
                      uint64_t key) {
  switch (op) {
  case IR_OP_MATMUL:
  case IR_OP_CONV2D:
    if (a->act == IR_ACT_CLIP && !clip6(a))
      return BASE_ERR_PARAM; /* the third tier's clip only */
    if (nin == 4)            /* the residual epilogue (the third tier's) */
      return k_residual(op, a, ins, in, outs, out[0], key);
    break;
  default: break;
  }
  switch (op) {
  case IR_OP_MATMUL:
    if (ins[0]->rank < 2 || ins[0]->rank > 3 || ins[1]->rank != 2 || nin < 2 ||
        nin > 3 || (nin == 2 && a->act && ins[0]->rank == 2) ||
        (nin == 3 && (ins[2]->rank != 1 || ins[2]->dim[0] != ins[1]->dim[1])))
      return BASE_ERR_PARAM; /* (a bias, rank 3, act: the extended set's;
                                act without a bias: rank 3, the fifth
                                tier's) */
    k_matmul(ins, in, nin, out[0]);
    for (int64_t i = 0; a->act && i < ir_shape_numel(&outs[0]); i++)
      out[0][i] = fp_act(a->act, key, out[0][i]); /* as conv2d's act= */
    return BASE_OK;
  case IR_OP_CONV2D: {
    if (nin < 2 || nin > 3)
      return BASE_ERR_PARAM; /* a residual input: not generated */
    const uint32_t *cin[3] = {in[0], in[1], nin == 3 ? in[2] : NULL};
    k_conv(a, ins, cin, &outs[0], out[0], key);
    return BASE_OK;
  }
  case IR_OP_EWADD:
    if (nin == 2 && ins[0]->rank >= 2 && ins[1]->rank == 1 &&
        ins[1]->dim[0] == ins[0]->dim[ins[0]->rank - 1]) {
      k_bias_add(ir_shape_numel(ins[0]), ins[1]->dim[0], in, out[0]);
      return BASE_OK; /* the fifth tier's ewadd/bias */
    }
    if (!ir_shape_eq(ins[0], ins[1]))
      return BASE_ERR_PARAM;
    k_ew(EW_ADD, ir_shape_numel(&outs[0]), in, out[0]);
    return BASE_OK;
  case IR_OP_EWMUL:
    if (!ir_shape_eq(ins[0], ins[1]))
      return BASE_ERR_PARAM;
    k_ew(EW_MUL, ir_shape_numel(&outs[0]), in, out[0]);
    return BASE_OK;
  case IR_OP_SMUL:
    k_ew(EW_SMUL, ir_shape_numel(&outs[0]), in, out[0]);
    return BASE_OK;
#include "../ir/ew_cases.h"
    if (!(ir_ew_of(op)->flags & IR_EWF_FP) && ir_op(op)->act == IR_ACT_NONE)
      break; /* not a generation operator (ew.def's FP flag, or an
                activation conv2d and matmul fuse: sigmoid, tanh, gelu) */
    k_unary(op, ir_shape_numel(&outs[0]), in[0], out[0], key);
    return BASE_OK;
  case IR_OP_CONCAT:
    if (a->act) /* the lower stage's form: no generation operator */
      return BASE_ERR_PARAM;
    k_concat(a->axis, ins, in, nin, &outs[0], out[0]);
    return BASE_OK;
  case IR_OP_SPLIT:
    if (a->act)
      return BASE_ERR_PARAM;
    k_split(a->axis, ins[0], in[0], outs, a->nlist, out);
    return BASE_OK;
  case IR_OP_TRANSPOSE: /* perm [1,0], or [1,0,2] */
    if (!(ins[0]->rank == 2 ||
          (ins[0]->rank == 3 && a->nlist == 3 && a->list[0] == 1 &&
           a->list[1] == 0 && a->list[2] == 2)))
      return BASE_ERR_PARAM;
    k_transpose(ins[0], in[0], out[0]);
    return BASE_OK;
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
    k_pool(a, op == IR_OP_MAXPOOL, ins[0], &outs[0], in[0], out[0]);
    return BASE_OK;
  case IR_OP_ENLARGE:
    k_enlarge(ins[0], &outs[0], in[0], out[0]);
    return BASE_OK;
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL: k_const(op, &outs[0], out[0]); return BASE_OK;
  case IR_OP_CLIP: /* the third tier's relu6, fp_act's as conv2d's act=clip */
    if (!clip6(a))
      return BASE_ERR_PARAM;
    for (int64_t i = 0; i < ir_shape_numel(&outs[0]); i++)
      out[0][i] = fp_act(IR_ACT_CLIP, key, in[0][i]);
    return BASE_OK;
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_RESHAPE:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX: /* the fourth tier's: the last axis */
    if (a->axis != ins[0]->rank - 1)
      return BASE_ERR_PARAM;
    k_softmax(ins[0], in[0], out[0], key);
    return BASE_OK;
  case IR_OP_ATTENTION: return k_attention(a, ins, in, nin, out[0], key);
  case IR_OP_LAYERNORM:
  case IR_OP_PAD:
  case IR_OP_SLICE:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED:
    break; /* not generation operators (fusion runs after
              the search) */
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
    break; /* int64 / bool operators: fingerprints are
              float-only (ir.h, ir_dtype) */
  }
  return BASE_ERR_PARAM; /* no fingerprint kernel: unsupported operator */
}
