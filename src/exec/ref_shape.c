/* ref_shape.c: reference kernels of the operators that move data without
 * arithmetic (concat, split, transpose, reshape, pad, slice) and of the
 * constant generators (const_iconv, const_imm, const_ones, const_pool).
 *
 * Most work row by row: a row of the output (all dimensions but the last
 * fixed) maps to a run of the input found by ex_row_offset, copied with
 * memcpy or, for a transpose, gathered with the input's stride.
 */
#include <string.h>

#include "exec.h"
#include "exec_int.h"

/* Elements in dims axis+1..rank-1 of s. */
static int64_t inner_size(const ir_shape *s, int axis) {
  int64_t n = 1;
  for (int i = axis + 1; i < s->rank; i++)
    n *= s->dim[i];
  return n;
}

/* Elements in dims 0..axis-1 of s. */
static int64_t outer_size(const ir_shape *s, int axis) {
  int64_t n = 1;
  for (int i = 0; i < axis; i++)
    n *= s->dim[i];
  return n;
}

static void copy_floats(float *dst, const float *src, int64_t n) {
  if (n > 0 && dst != src)
    memmove(dst, src, (size_t)n * sizeof(float));
}

static void fill_floats(float *dst, float v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    dst[i] = v;
}

/* ---- concat and split ---------------------------------------------------- */

/* Each outer index of the output takes one block from every input, in order. */
base_status ex_ref_concat(const ir_node *n, const ex_arg *in, ex_arg *out) {
  int axis = n->a.axis;
  const ir_shape *os = &out[0].shape;
  int64_t outer = outer_size(os, axis), inner = inner_size(os, axis);
  int64_t orow = os->dim[axis] * inner;
  for (int64_t o = 0; o < outer; o++) {
    float *dst = out[0].data + o * orow;
    for (int i = 0; i < n->nin; i++) {
      int64_t len = in[i].shape.dim[axis] * inner;
      copy_floats(dst, in[i].data + o * len, len);
      dst += len;
    }
  }
  ex_activate(out[0].data, ir_shape_numel(os), n->a.act); /* act= */
  return BASE_OK;
}

/* The inverse of concat: part k's size is a.list[k]. With act=, each
 * part gives itself, its activation, or both (acted=, ir_shape_split):
 * an activated output is the part's copy, activated in place. */
base_status ex_ref_split(const ir_node *n, const ex_arg *in, ex_arg *out) {
  int axis = n->a.axis;
  const ir_shape *s = &in[0].shape;
  int64_t outer = outer_size(s, axis), inner = inner_size(s, axis);
  int64_t irow = s->dim[axis] * inner;
  for (int k = 0, i = 0; k < n->a.nlist; k++) {
    int mode = n->a.nlist2 ? (int)n->a.list2[k] : n->a.act != IR_ACT_NONE;
    int64_t off = 0, len = n->a.list[k] * inner;
    for (int j = 0; j < k; j++)
      off += n->a.list[j] * inner;
    for (int c = 0; c < (mode == 2 ? 2 : 1); c++, i++) {
      for (int64_t o = 0; o < outer; o++)
        copy_floats(out[i].data + o * len, in[0].data + o * irow + off, len);
      if (mode == 1 || c == 1)
        ex_activate(out[i].data, outer * len, n->a.act);
    }
  }
  return BASE_OK;
}

/* concat on channels, then channel c of the shuffled y is channel
 * (c % g) * (C / g) + c / g of the concat; output i is y's channels
 * [starts[i], ends[i]). */
base_status ex_ref_concat_shuffle(const ir_node *n, const ex_arg *in,
                                  ex_arg *out) {
  int64_t nb = in[0].shape.dim[0],
          plane = ex_last_dim(&in[0].shape) * in[0].shape.dim[2];
  int64_t c = 0, g = n->a.groups;
  for (int i = 0; i < n->nin; i++)
    c += in[i].shape.dim[1];
  for (int o = 0; o < n->nout; o++) {
    int64_t lo = n->a.list[o], oc = out[o].shape.dim[1];
    for (int64_t b = 0; b < nb; b++)
      for (int64_t j = 0; j < oc; j++) {
        int64_t y = lo + j, kc = y % g * (c / g) + y / g;
        int i = 0;
        while (kc >= in[i].shape.dim[1])
          kc -= in[i++].shape.dim[1];
        copy_floats(out[o].data + (b * oc + j) * plane,
                    in[i].data + (b * in[i].shape.dim[1] + kc) * plane, plane);
      }
  }
  return BASE_OK;
}

/* ---- transpose and reshape ------------------------------------------------
 */

enum { TBLOCK = 32 };

/* x [nb, R, C] -> y [nb, C, R] in TBLOCK x TBLOCK blocks, a block per
 * step: row by row, a row of y gathers a column of x, one cache miss per
 * element once x's rows outgrow the cache (VGG-16's 4096 x 25088 weight:
 * half of its check at batch 1). */
static void transpose_last2(const float *x, float *y, int64_t nb, int64_t R,
                            int64_t C) {
  int64_t bi = (R + TBLOCK - 1) / TBLOCK, bj = (C + TBLOCK - 1) / TBLOCK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (nb * R * C >= EX_PAR_MIN)
#endif
  for (int64_t t = 0; t < nb * bi * bj; t++) {
    int64_t b = t / (bi * bj), i0 = t / bj % bi * TBLOCK, j0 = t % bj * TBLOCK;
    int64_t i1 = i0 + TBLOCK < R ? i0 + TBLOCK : R;
    int64_t j1 = j0 + TBLOCK < C ? j0 + TBLOCK : C;
    const float *xs = x + b * R * C;
    float *ys = y + b * R * C;
    for (int64_t j = j0; j < j1; j++)
      for (int64_t i = i0; i < i1; i++)
        ys[j * R + i] = xs[i * C + j];
  }
}

/* 1 when perm swaps the last two axes and keeps the others. */
static int swaps_last2(const ir_attrs *a, int r) {
  for (int i = 0; i < r - 2; i++)
    if (a->list[i] != i)
      return 0;
  return a->list[r - 2] == r - 1 && a->list[r - 1] == r - 2;
}

/* out.dim[i] = x.dim[perm[i]]: each output row gathers with the stride of
 * input dimension perm[r-1] (the last two axes swapped: by blocks). */
base_status ex_ref_transpose(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *os = &out[0].shape;
  int r = os->rank;
  if (r < 2) {
    copy_floats(out[0].data, in[0].data, ir_shape_numel(os));
    return BASE_OK;
  }
  if (ir_shape_numel(os) == 0)
    return BASE_OK;
  if (swaps_last2(&n->a, r)) {
    int64_t R = os->dim[r - 1], C = os->dim[r - 2];
    transpose_last2(in[0].data, out[0].data, ex_rows(os) / C, R, C);
    return BASE_OK;
  }
  int64_t ist[IR_MAX_RANK] = {0}, pst[IR_MAX_RANK];
  ex_strides(&in[0].shape, ist);
  for (int i = 0; i < r; i++)
    pst[i] = ist[n->a.list[i]];
  int64_t len = ex_last_dim(os), rows = ex_rows(os), step = pst[r - 1];
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows * len >= EX_PAR_MIN)
#endif
  for (int64_t row = 0; row < rows; row++) {
    const float *src = in[0].data + ex_row_offset(row, os->dim, pst, r - 1);
    float *dst = out[0].data + row * len;
    for (int64_t j = 0; j < len; j++)
      dst[j] = src[j * step];
  }
  return BASE_OK;
}

base_status ex_ref_reshape(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n;
  copy_floats(out[0].data, in[0].data, ir_shape_numel(&out[0].shape));
  return BASE_OK;
}

/* ---- pad and slice ------------------------------------------------------- */

/* Fills with value, then copies into each output row the part of the
 * input row it shows: out[q] = x[q - before] (before-pads a.list[0..r-1];
 * a negative pad crops). */
base_status ex_ref_pad(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *s = &in[0].shape, *os = &out[0].shape;
  int r = s->rank;
  fill_floats(out[0].data, n->a.value, ir_shape_numel(os));
  if (r == 0) {
    out[0].data[0] = in[0].data[0];
    return BASE_OK;
  }
  int64_t ist[IR_MAX_RANK];
  ex_strides(s, ist);
  int64_t olen = ex_last_dim(os), rows = ex_rows(os), b = n->a.list[r - 1];
  int64_t lo = b > 0 ? b : 0, hi = b + s->dim[r - 1]; /* [lo, hi) of a row */
  if (hi > olen)
    hi = olen;
  for (int64_t row = 0; row < rows && lo < hi; row++) {
    int64_t rem = row, off = 0;
    int inside = 1;
    for (int i = r - 2; i >= 0 && inside; i--) {
      int64_t q = rem % os->dim[i] - n->a.list[i];
      rem /= os->dim[i];
      inside = q >= 0 && q < s->dim[i];
      off += q * ist[i];
    }
    if (inside)
      copy_floats(out[0].data + row * olen + lo, in[0].data + off + lo - b,
                  hi - lo);
  }
  return BASE_OK;
}

/* out = x[starts[i]:ends[i]] in every dimension (a.list, a.list2). */
base_status ex_ref_slice(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *os = &out[0].shape;
  int r = os->rank;
  if (r == 0) {
    out[0].data[0] = in[0].data[0];
    return BASE_OK;
  }
  int64_t ist[IR_MAX_RANK], base = 0;
  ex_strides(&in[0].shape, ist);
  for (int i = 0; i < r; i++)
    base += n->a.list[i] * ist[i];
  int64_t len = ex_last_dim(os), rows = ex_rows(os);
  for (int64_t row = 0; row < rows; row++)
    copy_floats(out[0].data + row * len,
                in[0].data + base + ex_row_offset(row, os->dim, ist, r - 1),
                len);
  return BASE_OK;
}

/* ---- constants ------------------------------------------------------------
 */

/* [O,I,kh,kw]: 1 at [o, o mod I, kh/2, kw/2], else 0. */
base_status ex_ref_const_iconv(const ir_node *n, const ex_arg *in,
                               ex_arg *out) {
  (void)n, (void)in;
  const ir_shape *s = &out[0].shape;
  int64_t o = s->dim[0], ci = s->dim[1], kh = s->dim[2], kw = s->dim[3];
  fill_floats(out[0].data, 0.0f, ir_shape_numel(s));
  for (int64_t i = 0; i < o; i++)
    out[0].data[((i * ci + i % ci) * kh + kh / 2) * kw + kw / 2] = 1.0f;
  return BASE_OK;
}

/* [n,n]: the identity matrix. */
base_status ex_ref_const_imm(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n, (void)in;
  int64_t d = out[0].shape.dim[0];
  fill_floats(out[0].data, 0.0f, d * d);
  for (int64_t i = 0; i < d; i++)
    out[0].data[i * d + i] = 1.0f;
  return BASE_OK;
}

base_status ex_ref_const_ones(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n, (void)in;
  fill_floats(out[0].data, 1.0f, ir_shape_numel(&out[0].shape));
  return BASE_OK;
}

/* [C,1,kh,kw] of ones: as a depthwise kernel, an unnormalised sum pool. */
base_status ex_ref_const_pool(const ir_node *n, const ex_arg *in, ex_arg *out) {
  (void)n, (void)in;
  fill_floats(out[0].data, 1.0f, ir_shape_numel(&out[0].shape));
  return BASE_OK;
}

/* ---- gather ----------------------------------------------------------------
 */

/* out[o, i, r] = data[o, idx[i], r] (o: dims before axis, r: after); a
 * negative index counts from the end, one out of range fails the run. */
base_status ex_ref_gather(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_shape *xs = &in[0].shape;
  int axis = n->a.axis;
  int64_t outer = outer_size(xs, axis), inner = inner_size(xs, axis);
  int64_t dim = xs->dim[axis], nidx = ir_shape_numel(&in[1].shape);
  for (int64_t i = 0; i < nidx; i++) {
    float f = in[1].data[i];
    if (!(f >= (float)-dim && f < (float)dim))
      return BASE_ERR_PARAM;
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < nidx; i++) {
      int64_t j = (int64_t)in[1].data[i];
      j = j < 0 ? j + dim : j;
      copy_floats(out[0].data + (o * nidx + i) * inner,
                  in[0].data + (o * dim + j) * inner, inner);
    }
  return BASE_OK;
}
