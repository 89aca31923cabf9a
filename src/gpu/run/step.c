/* step.c: each node on the GPU: preparation at plan time (descriptors,
 * algorithm choice, scratch size) and enqueueing at run time (one or a few
 * launches on the context's stream), dispatched by operator: convolution
 * (conv.c), matmul (mm.c), attention (att.c), fused nodes (fused.c), the
 * SE and shuffle folds (se.c, shuffle.c), and here the element-wise,
 * data-movement, pooling, normalisation, reduction and constant launchers
 * (kernels of kern/kew.cu, kmove.cu, kpad.cu, kred.cu).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* ---- element-wise ---------------------------------------------------------
 */

/* Strides of input t over the output's logical coordinates (0 where t
 * is broadcast), in either layout. */
static void bcast_strides(const gpu_plan *p, int t, const ir_shape *o,
                          int64_t *st) {
  const ir_shape *x = shp(p, t);
  int64_t xs[CXK_RANK];
  gpu_strides(p, t, xs);
  int shift = o->rank - x->rank;
  for (int i = 0; i < o->rank; i++) {
    int xi = i - shift;
    st[i] = xi >= 0 && x->dim[xi] != 1 ? xs[xi] : 0;
  }
}

/* A channels-last output is walked in its bytes' order (n, h, w, c). */
static void to_cl_order(int64_t *v) {
  int64_t c = v[1];
  v[1] = v[2], v[2] = v[3], v[3] = c;
}

static cudaError_t binary(gpu_plan *p, const ir_node *n, int op) {
  const ir_shape *a = shp(p, n->in[0]), *b = shp(p, n->in[1]);
  const ir_shape *o = shp(p, n->out[0]);
  int64_t cnt = ir_shape_numel(o);
  const float *pa = p->ptr[n->in[0]], *pb = p->ptr[n->in[1]];
  float *po = p->ptr[n->out[0]];
  int ocl = gpu_is_cl(p, n->out[0]), dt = gpu_dt_of(p->g, n->out[0]);
  if (ir_shape_eq(a, o) && ir_shape_eq(b, o) && gpu_is_cl(p, n->in[0]) == ocl &&
      gpu_is_cl(p, n->in[1]) == ocl)
    return dt != CXK_F32 /* half: khalf.cu (NCHW) */
               ? cxk_binary_dt(p->ctx->stream, dt, op, pa, pb, po, cnt, NULL, 0)
               : cxk_binary(p->ctx->stream, op, pa, pb, po, cnt, NULL, 0);
  cxk_bcast bc = {.rank = o->rank};
  memcpy(bc.dim, o->dim, sizeof(int64_t) * (size_t)o->rank);
  bcast_strides(p, n->in[0], o, bc.sa);
  bcast_strides(p, n->in[1], o, bc.sb);
  if (ocl) {
    to_cl_order(bc.dim), to_cl_order(bc.sa), to_cl_order(bc.sb);
  }
  if (dt != CXK_F32)
    return cxk_binary_dt(p->ctx->stream, dt, op, pa, pb, po, cnt, &bc, 0);
  return cxk_binary(p->ctx->stream, op, pa, pb, po, cnt, &bc, 0);
}

/* where and gather run in the standard layout (not channels-last). */
static void plain_bcast(const ir_shape *x, const ir_shape *o, int64_t *st) {
  int64_t xs[CXK_RANK];
  strides_of(x, xs);
  for (int i = 0; i < o->rank; i++) {
    int xi = i - (o->rank - x->rank);
    st[i] = xi >= 0 && x->dim[xi] != 1 ? xs[xi] : 0;
  }
}

static cudaError_t where(gpu_plan *p, const ir_node *n) {
  const ir_shape *o = shp(p, n->out[0]);
  cxk_where_args w = {.rank = o->rank};
  memcpy(w.dim, o->dim, sizeof(int64_t) * (size_t)o->rank);
  plain_bcast(shp(p, n->in[0]), o, w.sc);
  plain_bcast(shp(p, n->in[1]), o, w.sa);
  plain_bcast(shp(p, n->in[2]), o, w.sb);
  return cxk_where(p->ctx->stream, IN(p, n, 0), IN(p, n, 1), IN(p, n, 2),
                   p->ptr[n->out[0]], ir_shape_numel(o), &w);
}

static cudaError_t gather_idx(gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < n->a.axis; i++)
    outer *= x->dim[i];
  for (int i = n->a.axis + 1; i < x->rank; i++)
    inner *= x->dim[i];
  return cxk_gather_dt(p->ctx->stream, gpu_dt_of(p->g, n->out[0]), IN(p, n, 0),
                       IN(p, n, 1), p->ptr[n->out[0]], outer,
                       ir_shape_numel(shp(p, n->in[1])), x->dim[n->a.axis],
                       inner);
}

static cudaError_t cast(gpu_plan *p, const ir_node *n) {
  int sdt = gpu_dt_of(p->g, n->in[0]), ddt = gpu_dt_of(p->g, n->out[0]);
  if ((sdt != CXK_F32 || ddt != CXK_F32) && /* between float types; to */
      ir_dtype_is_float(p->g->tensors[n->out[0]].dtype)) /* int64 or bool:
                                                 staged (run/half.c) */
    return cxk_convert(p->ctx->stream, IN(p, n, 0), sdt, p->ptr[n->out[0]], ddt,
                       ir_shape_numel(shp(p, n->out[0])));
  int fn = n->a.groups == IR_DT_I64    ? CXK_TRUNC
           : n->a.groups == IR_DT_BOOL ? CXK_NONZERO
                                       : CXK_ID;
  return cxk_unary(p->ctx->stream, fn, IN(p, n, 0), p->ptr[n->out[0]],
                   ir_shape_numel(shp(p, n->out[0])), 0, 0);
}

static cudaError_t unary(gpu_plan *p, const ir_node *n, int fn) {
  int dt = gpu_dt_of(p->g, n->out[0]);
  if (dt != CXK_F32)
    return cxk_unary_dt(p->ctx->stream, dt, fn, IN(p, n, 0), p->ptr[n->out[0]],
                        ir_shape_numel(shp(p, n->out[0])), n->a.lo, n->a.hi);
  return cxk_unary(p->ctx->stream, fn, IN(p, n, 0), p->ptr[n->out[0]],
                   ir_shape_numel(shp(p, n->out[0])), n->a.lo, n->a.hi);
}

/* ---- data movement --------------------------------------------------------
 */

/* Concat and split move blocks of rows: along `axis`, part k of w[k]
 * positions is `outer` rows of w[k] * inner floats of the whole's rows
 * (kmove.cu: one launch for up to CXK_PARTS parts, float4 where every
 * part allows; cudaMemcpy2DAsync ran far below the bandwidth on the short
 * rows of channels-last tensors). */
static int64_t outer_rows(const ir_shape *s, int axis, int64_t *inner) {
  int64_t outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; i++)
    outer *= s->dim[i];
  for (int i = axis + 1; i < s->rank; i++)
    *inner *= s->dim[i];
  return outer;
}

/* Shape and axis over the bytes' order: (n, h, w, c) when channels-last. */
static ir_shape bytes_order(const gpu_plan *p, const ir_node *n, int t,
                            int *axis) {
  ir_shape s = *shp(p, t);
  if (STEP(p, n)->cl && s.rank == 4) {
    to_cl_order(s.dim);
    static const int pos[4] = {0, 3, 1, 2};
    *axis = pos[n->a.axis];
  }
  return s;
}

/* Half concat and split (NCHW): part k's rows of w[k] elements copied
 * to or from column off of the whole's rows of ww, one 2-byte walk a
 * part. */
static cudaError_t part_copy(cudaStream_t st, const void *src, void *dst,
                             int64_t rows, int64_t w, int64_t ww, int64_t off,
                             int to_whole) {
  cxk_walk k = {.rank = 2, .dim = {rows, w}, .extent = rows * ww};
  k.sst[1] = k.dst[1] = 1;
  k.sst[0] = to_whole ? w : ww;
  k.dst[0] = to_whole ? ww : w;
  *(to_whole ? &k.doff : &k.soff) = off;
  return cxk_copy16(st, src, dst, &k);
}

/* Every width even and every part 4-byte aligned: the halves move in
 * pairs, one float32 concat or split launch for all parts (bytes copied
 * as they are) instead of a walk a part. */
static int in_pairs(const int64_t *w, const void *const *ptr, int np,
                    const void *whole) {
  int ok = ((uintptr_t)whole & 3) == 0;
  for (int k = 0; ok && k < np; k++)
    ok = w[k] % 2 == 0 && ((uintptr_t)ptr[k] & 3) == 0;
  return ok;
}

static cudaError_t concat_half(gpu_plan *p, const ir_node *n, int dt,
                               const int64_t *w, int64_t rows) {
  int64_t ww = 0, off = 0, hw[IR_MAX_IN];
  const void *src[IR_MAX_IN];
  for (int k = 0; k < n->nin; k++) {
    ww += w[k];
    hw[k] = w[k] / 2;
    src[k] = IN(p, n, k);
  }
  void *y = p->ptr[n->out[0]];
  cudaError_t e = cudaSuccess;
  if (in_pairs(w, src, n->nin, y))
    e = cxk_concat(p->ctx->stream, y, (const float *const *)src, hw, n->nin, 0,
                   rows);
  else
    for (int k = 0; e == cudaSuccess && k < n->nin; off += w[k++])
      e = part_copy(p->ctx->stream, src[k], y, rows, w[k], ww, off, 1);
  if (e == cudaSuccess && n->a.act != IR_ACT_NONE) /* act= (lower_move.c) */
    e = cxk_unary_dt(p->ctx->stream, dt, act_fn(n->a.act), y, y, rows * ww, 0,
                     0);
  return e;
}

static cudaError_t concat(gpu_plan *p, const ir_node *n) {
  int axis = n->a.axis;
  ir_shape os = bytes_order(p, n, n->out[0], &axis);
  int64_t inner, outer = outer_rows(&os, axis, &inner);
  int64_t w[IR_MAX_IN];
  const float *src[IR_MAX_IN];
  for (int k = 0; k < n->nin; k++) {
    w[k] = shp(p, n->in[k])->dim[n->a.axis] * inner;
    src[k] = IN(p, n, k);
  }
  int dt = gpu_dt_of(p->g, n->out[0]);
  if (dt != CXK_F32)
    return concat_half(p, n, dt, w, outer);
  int relu = n->a.act == IR_ACT_RELU; /* act= (lower_move.c) */
  float *y = p->ptr[n->out[0]];
  cudaError_t e = cxk_concat(p->ctx->stream, y, src, w, n->nin, relu, outer);
  if (e == cudaSuccess && n->a.act != IR_ACT_NONE && !relu) /* in place */
    e = cxk_unary(p->ctx->stream, act_fn(n->a.act), y, y,
                  ir_shape_numel(shp(p, n->out[0])), 0, 0);
  return e;
}

/* Part k goes to its output, or its activation (act=, acted=[...]:
 * lower_move.c) to the next, or both: a relu in the copy (rdst), another
 * activation in place after it. */
static cudaError_t split(gpu_plan *p, const ir_node *n) {
  int axis = n->a.axis, np = n->a.nlist, relu = n->a.act == IR_ACT_RELU;
  ir_shape xs = bytes_order(p, n, n->in[0], &axis);
  int64_t inner, outer = outer_rows(&xs, axis, &inner);
  int64_t w[IR_MAX_LIST]; /* split's sizes: one list parameter */
  float *dst[IR_MAX_LIST], *rdst[IR_MAX_LIST], *act[IR_MAX_LIST];
  if (n->nout > IR_MAX_LIST)
    return cudaErrorInvalidValue;
  for (int k = 0, o = 0; k < np; k++) {
    int mode = n->a.nlist2 ? (int)n->a.list2[k] : n->a.act != IR_ACT_NONE;
    w[k] = n->a.list[k] * inner;
    dst[k] = mode == 1 && relu ? NULL : p->ptr[n->out[o]];
    o += mode == 2;
    act[k] = mode ? p->ptr[n->out[o]] : NULL;
    rdst[k] = relu ? act[k] : NULL;
    o++;
  }
  int dt = gpu_dt_of(p->g, n->in[0]);
  if (dt != CXK_F32) { /* half: the parts copied, then their activations */
    int64_t ww = 0, off = 0, hw[IR_MAX_LIST];
    float *to[IR_MAX_LIST];
    for (int k = 0; k < np; k++) {
      ww += w[k];
      hw[k] = w[k] / 2;
      to[k] = dst[k] ? dst[k] : act[k];
    }
    cudaError_t e = cudaSuccess;
    int pairs = in_pairs(w, (const void *const *)to, np, IN(p, n, 0));
    if (pairs)
      e = cxk_split(p->ctx->stream, IN(p, n, 0), to, NULL, hw, np, outer);
    for (int k = 0; e == cudaSuccess && k < np; off += w[k++]) {
      if (!pairs)
        e = part_copy(p->ctx->stream, IN(p, n, 0), to[k], outer, w[k], ww, off,
                      0);
      if (e == cudaSuccess && act[k])
        e = cxk_unary_dt(p->ctx->stream, dt, act_fn(n->a.act), to[k], act[k],
                         outer * w[k], 0, 0);
    }
    return e;
  }
  cudaError_t e =
      cxk_split(p->ctx->stream, IN(p, n, 0), dst, rdst, w, np, outer);
  for (int k = 0; e == cudaSuccess && !relu && k < np; k++)
    if (act[k]) /* from the part as written (itself, when acted 1) */
      e = cxk_unary(p->ctx->stream, act_fn(n->a.act), dst[k], act[k],
                    outer * w[k], 0, 0);
  return e;
}

/* transpose (perm in a.list) or slice (starts in a.list) as one strided
 * copy, input and output in whatever layout they have. */
static cudaError_t gather(gpu_plan *p, const ir_node *n, int is_slice) {
  const ir_shape *x = shp(p, n->in[0]), *o = shp(p, n->out[0]);
  int64_t ist[CXK_RANK];
  gpu_strides(p, n->in[0], ist); /* either layout, in and out (plan/layout.c) */
  cxk_walk w = {.rank = o->rank, .extent = ir_shape_numel(x)};
  memcpy(w.dim, o->dim, sizeof(int64_t) * (size_t)o->rank);
  gpu_strides(p, n->out[0], w.dst);
  for (int i = 0; i < o->rank; i++) {
    w.sst[i] = is_slice ? ist[i] : ist[n->a.list[i]];
    if (is_slice)
      w.soff += n->a.list[i] * ist[i];
  }
  int dt = gpu_dt_of(p->g, n->out[0]), es = cxk_dt_size(dt);
  /* from 2^19 elements the move node's strided copy first (fast
   * divisions, tiles over runs of dimensions: MaxViT's NCHW ->
   * window-partition transposes, whose contiguous source dimension of 7
   * the copy's tiles refuse, ran a thread an element: [16,8,8,7,7,64] in
   * bf16 31 -> 6.0 us, [16,2,2,7,7,256] 9.2 -> 4.5 us; its tiles are too
   * few below: [16,1,1,7,7,512] 3.0 -> 3.4 us, b1's 2.5 -> 4.0 us; H200,
   * 17:18 and 17:32 UTC); it declines what it cannot run */
  if ((es == 2 || es == 4) && w.rank >= 1 &&
      ir_shape_numel(o) >= ((int64_t)1 << 19)) {
    cudaError_t e =
        cxk_move_view(p->ctx->stream, es, IN(p, n, 0), p->ptr[n->out[0]], &w);
    if (e != cudaErrorNotSupported)
      return e;
  }
  if (dt != CXK_F32) /* half: 2-byte elements */
    return cxk_copy16(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &w);
  return cxk_copy(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &w);
}

/* pad (before-pads in a.list; a negative one crops: a pad that computes
 * the slice reading it, lower_move.c) or enlarge (centred zero padding),
 * out[q] = x[q - before], in the step's layout (x converted to it where
 * stored in the other). */
static cudaError_t pad(gpu_plan *p, const ir_node *n, int is_enlarge) {
  const gpu_step *s = STEP(p, n);
  const ir_shape *x = shp(p, n->in[0]), *o = shp(p, n->out[0]);
  cxk_pad q = {.rank = o->rank, .value = is_enlarge ? 0.0f : n->a.value};
  for (int i = 0; i < o->rank; i++) {
    q.odim[i] = o->dim[i];
    q.idim[i] = x->dim[i];
    q.before[i] = is_enlarge ? (o->dim[i] - x->dim[i]) / 2 : n->a.list[i];
  }
  if (s->cl && o->rank == 4) { /* NHWC out */
    to_cl_order(q.odim), to_cl_order(q.idim), to_cl_order(q.before);
  }
  int dt = gpu_dt_of(p->g, n->out[0]);
  if (dt != CXK_F32) /* half (NCHW): fill, then the copy */
    return gpu_pad_half(p->ctx->stream, dt, IN(p, n, 0), p->ptr[n->out[0]], &q);
  return cxk_pad_nd(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &q);
}

/* ---- pooling, normalisation, reduction ------------------------------------
 */

static cudaError_t pool(gpu_plan *p, const ir_node *n, int is_max) {
  const ir_shape *x = shp(p, n->in[0]), *o = shp(p, n->out[0]);
  cxk_pool q = {x->dim[0],      x->dim[1],
                x->dim[2],      x->dim[3],
                o->dim[2],      o->dim[3],
                n->a.kernel[0], n->a.kernel[1],
                n->a.stride[0], n->a.stride[1],
                n->a.pad[0],    n->a.pad[1],
                is_max,         n->a.count_include_pad,
                STEP(p, n)->cl};
  int dt = gpu_dt_of(p->g, n->out[0]);
  if (dt != CXK_F32) /* half: kred.cu's kernel on its type */
    return cxk_pool2d_dt(p->ctx->stream, dt, IN(p, n, 0), p->ptr[n->out[0]],
                         &q);
  return cxk_pool2d(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &q);
}

/* The reduction's walk: mean over the axes of a.list (global_avgpool: H
 * and W), in the input's layout. */
static cxk_reduce reduce_args(const gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int red[CXK_RANK] = {0};
  if (n->op == IR_OP_GLOBAL_AVGPOOL)
    red[2] = red[3] = 1;
  else
    for (int i = 0; i < n->a.nlist; i++)
      red[n->a.list[i]] = 1;
  int64_t ist[CXK_RANK];
  gpu_strides(p, n->in[0], ist);
  cxk_reduce r = {.nout = 1, .count = 1};
  for (int i = 0; i < x->rank; i++) {
    if (red[i]) {
      r.rdim[r.nred] = x->dim[i];
      r.rst[r.nred++] = ist[i];
      r.count *= x->dim[i];
    } else {
      r.kdim[r.nkeep] = x->dim[i];
      r.kst[r.nkeep++] = ist[i];
      r.nout *= x->dim[i];
    }
  }
  return r;
}

static cudaError_t reduce_node(gpu_plan *p, const ir_node *n) {
  cxk_reduce r = reduce_args(p, n);
  int dt = gpu_dt_of(p->g, n->out[0]);
  if (dt != CXK_F32) /* half: float32 sums, one rounding */
    return cxk_reduce_mean_dt(p->ctx->stream, dt, IN(p, n, 0),
                              p->ptr[n->out[0]], &r, STEP(p, n)->scratch);
  return cxk_reduce_mean(p->ctx->stream, IN(p, n, 0), p->ptr[n->out[0]], &r,
                         STEP(p, n)->scratch);
}

static cudaError_t batchnorm(gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t cnt = ir_shape_numel(x), c = x->dim[1];
  int64_t inner = STEP(p, n)->cl ? 1 : cnt / (x->dim[0] * c);
  const void *par[4] = {p->ptr[n->in[1]], p->ptr[n->in[2]], p->ptr[n->in[3]],
                        p->ptr[n->in[4]]};
  return cxk_batchnorm_dt(p->ctx->stream, gpu_dt_of(p->g, n->out[0]),
                          IN(p, n, 0), par, p->ptr[n->out[0]], cnt, c, inner,
                          n->a.eps, 0);
}

static cudaError_t softmax(gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < n->a.axis; i++)
    outer *= x->dim[i];
  for (int i = n->a.axis + 1; i < x->rank; i++)
    inner *= x->dim[i];
  return cxk_softmax_dt(p->ctx->stream, gpu_dt_of(p->g, n->out[0]), IN(p, n, 0),
                        p->ptr[n->out[0]], outer, x->dim[n->a.axis], inner);
}

static cudaError_t layernorm(gpu_plan *p, const ir_node *n) {
  const ir_shape *x = shp(p, n->in[0]);
  int64_t rows = 1, len = 1;
  for (int i = 0; i < x->rank; i++)
    *(i < n->a.axis ? &rows : &len) *= x->dim[i];
  int xb = STEP(p, n)->ln_bias; /* a convolution's bias, moved here */
  return cxk_layernorm_dt(
      p->ctx->stream, gpu_dt_of(p->g, n->out[0]), IN(p, n, 0),
      xb ? p->ptr[xb - 1] : NULL, n->nin > 1 ? p->ptr[n->in[1]] : NULL,
      n->nin > 2 ? p->ptr[n->in[2]] : NULL, p->ptr[n->out[0]], rows, len,
      n->a.eps, ir_ln_rms(&n->a));
}

static cudaError_t constant(gpu_plan *p, const ir_node *n) {
  const ir_shape *o = shp(p, n->out[0]);
  float *y = p->ptr[n->out[0]];
  cudaStream_t s = p->ctx->stream;
  if (n->op == IR_OP_CONST_ICONV)
    return cxk_iconv(s, y, o->dim[0], o->dim[1], o->dim[2], o->dim[3]);
  if (n->op == IR_OP_CONST_IMM)
    return cxk_eye(s, y, o->dim[0]);
  return cxk_fill(s, y, ir_shape_numel(o), 1.0f);
}

/* ---- dispatch
 * ---------------------------------------------------------------- */

base_status gpu_step_prepare(gpu_plan *p, int i, base_diag *d) {
  const ir_node *n = &p->g->nodes[i];
  if (n->op == IR_OP_SE) /* one kernel (run/se.c) */
    return gpu_se_prepare(p, i, d);
  if (n->op == IR_OP_CONCAT_SHUFFLE &&
      (n->nin > CXK_PARTS || n->nout > CXK_PARTS))
    return base_diag_set(d, BASE_ERR_PARAM, n->line, n->col,
                         "concat_shuffle: the GPU kernel takes at most %d "
                         "inputs and %d outputs, not %d and %d",
                         CXK_PARTS, CXK_PARTS, n->nin, n->nout);
  if (n->op == IR_OP_MOVE &&
      (!ir_body_get(n->a.body) || ir_body_get(n->a.body)->nops > CXK_MSTEPS))
    return base_diag_set(d, BASE_ERR_PARAM, n->line, n->col,
                         "move: the GPU kernel takes at most %d steps",
                         CXK_MSTEPS);
  if (n->op == IR_OP_CONV2D)
    return gpu_conv_prepare(p, n, &p->steps[i], d);
  if (n->op == IR_OP_MATMUL)
    return gpu_mm_prepare(p, n, &p->steps[i], d);
  if (n->op == IR_OP_ATTENTION)
    return gpu_att_prepare(p, n, &p->steps[i], d);
  if (n->op == IR_OP_GLOBAL_AVGPOOL || n->op == IR_OP_REDUCE_MEAN) {
    cxk_reduce r = reduce_args(p, n); /* partial sums of row slices */
    p->steps[i].scratch_bytes = sizeof(float) * (size_t)cxk_reduce_scratch(&r);
  }
  return BASE_OK;
}

void gpu_step_release(gpu_step *s) {
  if (s->conv) {
    gpu_conv *c = s->conv;
    if (c->x)
      cudnnDestroyTensorDescriptor(c->x);
    if (c->y)
      cudnnDestroyTensorDescriptor(c->y);
    if (c->b)
      cudnnDestroyTensorDescriptor(c->b);
    if (c->w)
      cudnnDestroyFilterDescriptor(c->w);
    if (c->conv)
      cudnnDestroyConvolutionDescriptor(c->conv);
    if (c->act)
      cudnnDestroyActivationDescriptor(c->act);
    if (c->vp.vp)
      cudnnBackendDestroyDescriptor(c->vp.vp);
    cudaFree(c->wcl);
    gpu_mm_free(c->gemm);
    free(c);
  }
  gpu_mm_free(s->mm);
  if (s->smm) {
    cudaFree(s->smm->parr);
    free(s->smm);
  }
  if (s->att) {
    cudaFree(s->att->mm[0].parr);
    cudaFree(s->att->mm[1].parr);
    free(s->att);
  }
  free(s->cin_off);
  free(s->stage_off);
  free(s->stage_keep);
  memset(s, 0, sizeof *s);
}

/* Enqueues the kernels of a node that is not conv2d or matmul; *none = 1
 * when there is no kernel for its operator. */
static cudaError_t simple(gpu_plan *p, const ir_node *n, const gpu_step *s,
                          int *none) {
  if (s->view)
    return cudaSuccess; /* a reshape; a transpose or split read in place */
  switch (n->op) {
  case IR_OP_EWADD: return binary(p, n, CXK_ADD);
  case IR_OP_EWSUB: return binary(p, n, CXK_SUB);
  case IR_OP_EWMUL:
  case IR_OP_SMUL: return binary(p, n, CXK_MUL);
  case IR_OP_EWDIV: return binary(p, n, CXK_DIV);
#include "../../ir/ew_cases.h"
  case IR_OP_CLIP: return unary(p, n, unary_fn[n->op]);
  case IR_OP_CONCAT: return concat(p, n);
  case IR_OP_GATHER: return gather_idx(p, n);
  case IR_OP_WHERE: return where(p, n);
  case IR_OP_EQUAL: return binary(p, n, CXK_EQ);
  case IR_OP_NOT: return unary(p, n, CXK_NOT);
  case IR_OP_CAST: return cast(p, n);
  case IR_OP_SPLIT: return split(p, n);
  case IR_OP_TRANSPOSE: return gather(p, n, 0);
  case IR_OP_SLICE: return gather(p, n, 1);
  case IR_OP_PAD: return pad(p, n, 0);
  case IR_OP_ENLARGE: return pad(p, n, 1);
  case IR_OP_AVGPOOL: return pool(p, n, 0);
  case IR_OP_MAXPOOL: return pool(p, n, 1);
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_REDUCE_MEAN: return reduce_node(p, n);
  case IR_OP_BATCHNORM: return batchnorm(p, n);
  case IR_OP_SOFTMAX: return softmax(p, n);
  case IR_OP_LAYERNORM: return layernorm(p, n);
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL: return constant(p, n);
  case IR_OP_RESHAPE: return cudaSuccess; /* a view: its input's bytes */
  case IR_OP_SE: return gpu_se_enqueue(p, (int)(n - p->g->nodes));
  case IR_OP_CONV2D:
  case IR_OP_MATMUL:
  case IR_OP_ATTENTION:    /* cuDNN, cuBLASLt, katt.cu: gpu_step_enqueue */
  case IR_OP_FUSED: break; /* generated kernels: gpu_fused_enqueue */
  case IR_OP_CONCAT_SHUFFLE:
    return gpu_shuffle_enqueue(p, (int)(n - p->g->nodes));
  case IR_OP_MOVE: return gpu_move_enqueue(p, (int)(n - p->g->nodes));
  }
  *none = 1; /* an operator with no kernel here */
  return cudaSuccess;
}

base_status gpu_step_enqueue(gpu_plan *p, int i, base_diag *d) {
  const ir_node *n = &p->g->nodes[i];
  const gpu_step *s = &p->steps[i];
  base_status st = BASE_OK;
  if (s->stage_off) /* half, staged (run/half.c) */
    GPU_CUDA(d, gpu_half_stage_in(p, i));
  for (int k = 0; !st && s->cin_off && k < n->nin; k++)
    if (s->cin_off[k] != (size_t)-1) {
      /* the input's type; a staged one's float32 copy (swapped in) */
      int dt = s->stage_off && s->stage_off[k] != (size_t)-1
                   ? CXK_F32
                   : gpu_dt_of(p->g, n->in[k]);
      cudaError_t e =
          gpu_convert_dt(p->ctx->stream, shp(p, n->in[k]), p->ptr[n->in[k]],
                         (float *)gpu_in(p, i, k), s->cl, dt);
      if (e != cudaSuccess)
        st = gpu_cuda_fail(d, e, "layout conversion");
    }
  if (st) {
    /* nothing enqueued; the staged pointers are restored below */
  } else if (n->op == IR_OP_CONV2D)
    st = gpu_conv_enqueue(p, n, &p->steps[i], d);
  else if (n->op == IR_OP_MATMUL)
    st = gpu_mm_enqueue(p, n, &p->steps[i], d);
  else if (n->op == IR_OP_FUSED)
    st = gpu_fused_enqueue(p, n, &p->steps[i], d);
  else if (n->op == IR_OP_ATTENTION)
    st = ir_shape_numel(shp(p, n->out[0])) == 0
             ? BASE_OK
             : gpu_att_run(p, n, s->att, s->att->form, d);
  else {
    int none = 0;
    cudaError_t e = simple(p, n, &p->steps[i], &none);
    if (none)
      st = base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "unsupported operator %s on the GPU executor",
                         ir_op(n->op)->name);
    else if (e != cudaSuccess)
      st = gpu_cuda_fail(d, e, ir_op(n->op)->name);
  }
  if (s->stage_off) { /* the pointers back, the outputs to their type */
    cudaError_t e = gpu_half_stage_out(p, i);
    if (!st && e != cudaSuccess)
      st = gpu_cuda_fail(d, e, "half-precision staging");
  }
  if (st && d && d->line == 0) {
    d->line = n->line;
    d->col = n->col;
  }
  return st;
}
