/* ref_fused.c: reference kernels of `fused` and `move`: run the body operator
 * by operator with the reference kernels of those operators, so a fused node
 * computes exactly what its unfused subgraph computes (same kernels, same
 * order of float operations). A body may end with a row reduction
 * (softmax, layernorm, reduce_mean over the last axis): its kernel too.
 * Large outputs go chunk by chunk along a leading axis (run_chunks), with
 * the same results.
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* The temporaries of one thread's body runs, kept from chunk to chunk. */
typedef struct body_tmp {
  float *buf[IR_BODY_MAX_OPS];
  size_t cap[IR_BODY_MAX_OPS]; /* elements */
} body_tmp;

static void body_tmp_free(body_tmp *t) {
  for (int i = 0; i < IR_BODY_MAX_OPS; i++)
    free(t->buf[i]);
}

/* Runs body b on nin inputs in into out (whole tensors or one chunk), the
 * intermediates in t's buffers (grown as needed). */
static base_status run_body(const ir_body *b, int nin, const ex_arg *in,
                            ex_arg *out, body_tmp *t) {
  const ir_shape *ins[IR_MAX_IN];
  for (int k = 0; k < nin; k++)
    ins[k] = &in[k].shape;
  ir_shape shapes[IR_BODY_MAX_OPS];
  if (ir_body_shapes(b, ins, shapes, NULL))
    return BASE_ERR_INTERNAL;
  float **tmp = t->buf;
  base_status st = BASE_OK;
  for (int i = 0; i < b->nops && !st; i++) {
    const ir_body_op *o = &b->ops[i];
    ex_arg a[IR_MAX_FIXED_IN], r;
    for (int k = 0; k < o->nin; k++)
      a[k] = o->in[k] < 0 ? in[-1 - o->in[k]]
                          : (ex_arg){shapes[o->in[k]], tmp[o->in[k]]};
    r.shape = shapes[i];
    if (i + 1 == b->nops) {
      r.data = out[0].data;
    } else {
      size_t need = (size_t)ir_shape_numel(&shapes[i]);
      if (t->cap[i] < need) {
        free(tmp[i]);
        tmp[i] = base_malloc(sizeof(float) * (need > 0 ? need : 1));
        t->cap[i] = tmp[i] ? need : 0;
      }
      if (!tmp[i]) {
        st = BASE_ERR_NOMEM;
        break;
      }
      r.data = tmp[i];
    }
    ir_node bn;
    memset(&bn, 0, sizeof bn);
    bn.op = o->op;
    bn.nin = o->nin;
    bn.nout = 1;
    bn.a = o->a;
    const ir_shape *as[IR_MAX_FIXED_IN];
    for (int k = 0; k < o->nin; k++)
      as[k] = &a[k].shape;
    ir_shape chk; /* normalised parameters (a row reduction's axis) */
    if (ir_infer(o->op, &bn.a, as, o->nin, &chk, NULL)) {
      st = BASE_ERR_INTERNAL;
      break;
    }
    st = ex_kernel_of(o->op)(&bn, a, &r);
  }
  return st;
}

/* The axis the output o is cut along: the first one of size > 1 when all
 * before it are 1, and not the last (a row reduction's); -1: none, or an
 * input of higher rank than o (a reduction that drops its axis). Inputs
 * broadcast from the right, except a batchnorm's per-channel ones (axis 1):
 * with a batchnorm, only axis 0 is cut. */
static int chunk_axis(const ir_body *b, const ir_shape *o, const ex_arg *in,
                      int nin) {
  int bn = 0;
  for (int i = 0; i < b->nops; i++)
    bn |= b->ops[i].op == IR_OP_BATCHNORM;
  for (int i = 0; i < nin; i++)
    if (in[i].shape.rank > o->rank)
      return -1;
  for (int k = 0; k + 1 < o->rank; k++)
    if (o->dim[k] > 1)
      return bn && k > 0 ? -1 : k;
  return -1;
}

/* x's share of chunk [c0, c0 + len) of the output's axis k: x itself when
 * it broadcasts along k, else its slice (contiguous: the axes before k are
 * all 1). */
static ex_arg chunk_of(const ex_arg *x, const ir_shape *o, int k, int64_t c0,
                       int64_t len) {
  ex_arg r = *x;
  int xk = k - (o->rank - x->shape.rank);
  if (xk < 0 || x->shape.dim[xk] != o->dim[k])
    return r;
  int64_t inner = 1;
  for (int i = xk + 1; i < x->shape.rank; i++)
    inner *= x->shape.dim[i];
  r.shape.dim[xk] = len;
  r.data = x->data + c0 * inner;
  return r;
}

/* Large outputs are computed chunk by chunk (about FUSED_CHUNK output
 * elements each), the chunks spread over the threads, each thread reusing
 * its temporaries: they stay in cache instead of going through memory (and,
 * being large, through fresh pages) once per body operator (ViT-B/16's gelu
 * at batch 16: 5 temporaries of 39 MB). Every element is computed by the
 * same operations either way (element-wise, or a reduction along the last
 * axis, which no chunk cuts), so the results are the same. */
enum { FUSED_CHUNK = 1 << 16 };

/* Whether the body's shapes work out on the first chunk of `step` along k
 * (its result the output's chunk); else the body runs whole. */
static int chunks_fit(const ir_body *b, const ir_node *n, const ex_arg *in,
                      const ex_arg *out, int k, int64_t step) {
  const ir_shape *os = &out[0].shape;
  ex_arg co = chunk_of(&out[0], os, k, 0, step), ci[IR_MAX_IN];
  const ir_shape *ins[IR_MAX_IN];
  for (int i = 0; i < n->nin; i++) {
    ci[i] = chunk_of(&in[i], os, k, 0, step);
    ins[i] = &ci[i].shape;
  }
  ir_shape shapes[IR_BODY_MAX_OPS];
  return !ir_body_shapes(b, ins, shapes, NULL) &&
         ir_shape_eq(&shapes[b->nops - 1], &co.shape);
}

static base_status run_chunks(const ir_body *b, const ir_node *n,
                              const ex_arg *in, ex_arg *out, int k) {
  const ir_shape *os = &out[0].shape;
  int64_t inner = ir_shape_numel(os) / os->dim[k];
  int64_t step = inner >= FUSED_CHUNK ? 1 : FUSED_CHUNK / inner;
  int64_t nchunks = (os->dim[k] + step - 1) / step;
  if (!chunks_fit(b, n, in, out, k, step)) {
    body_tmp t = {{0}, {0}};
    base_status st = run_body(b, n->nin, in, out, &t);
    body_tmp_free(&t);
    return st;
  }
  base_status st = BASE_OK;
#ifdef _OPENMP
#pragma omp parallel
#endif
  {
    body_tmp t = {{0}, {0}};
#ifdef _OPENMP
#pragma omp for schedule(dynamic)
#endif
    for (int64_t c = 0; c < nchunks; c++) {
      int64_t c0 = c * step;
      int64_t len = os->dim[k] - c0 < step ? os->dim[k] - c0 : step;
      ex_arg ci[IR_MAX_IN], co = chunk_of(&out[0], os, k, c0, len);
      for (int i = 0; i < n->nin; i++)
        ci[i] = chunk_of(&in[i], os, k, c0, len);
      base_status cs = run_body(b, n->nin, ci, &co, &t);
      if (cs) {
#ifdef _OPENMP
#pragma omp critical(ex_fused_status)
#endif
        st = cs;
      }
    }
    body_tmp_free(&t);
  }
  return st;
}

base_status ex_ref_fused(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_body *b = ir_body_get(n->a.body);
  if (!b || b->nin != n->nin)
    return BASE_ERR_INTERNAL;
  int k = chunk_axis(b, &out[0].shape, in, n->nin);
  if (k >= 0 && ir_shape_numel(&out[0].shape) >= 2 * FUSED_CHUNK)
    return run_chunks(b, n, in, out, k);
  body_tmp t = {{0}, {0}};
  base_status st = run_body(b, n->nin, in, out, &t);
  body_tmp_free(&t);
  return st;
}

/* move: the program operator by operator, with their reference kernels
 * (what the chain of nodes it replaces computed, element for element). */
base_status ex_ref_move(const ir_node *n, const ex_arg *in, ex_arg *out) {
  const ir_body *b = ir_body_get(n->a.body);
  if (!b || b->nin != 1 || n->nin != 1)
    return BASE_ERR_INTERNAL;
  body_tmp t = {{0}, {0}};
  base_status st = run_body(b, 1, in, out, &t);
  body_tmp_free(&t);
  return st;
}
