/* eval.c: evaluates a whole ir_graph in arithmetic modulo FP_P on seeded
 * random residues, for the box analysis.
 *
 * Compute operators go through the fingerprint kernels (fp_kernel); this
 * file adds what those lack and mutants need: pad (value 0), slice, reshape
 * and transpose of any rank, and conv2d with a bias (the bias is added
 * before the activation, which stays fp_act's random function).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../fingerprint/fp.h"
#include "mutant_int.h"

void mutant_unravel(const ir_shape *s, int64_t j, int64_t *idx) {
  for (int k = s->rank - 1; k >= 0; k--) {
    idx[k] = j % s->dim[k];
    j /= s->dim[k];
  }
}

static int64_t ravel(const ir_shape *s, const int64_t *idx) {
  int64_t j = 0;
  for (int k = 0; k < s->rank; k++)
    j = j * s->dim[k] + idx[k];
  return j;
}

static void k_pad(const ir_attrs *a, const ir_shape *xs, const uint32_t *x,
                  const ir_shape *ys, uint32_t *y) {
  int64_t idx[IR_MAX_RANK], n = ir_shape_numel(xs);
  memset(y, 0, (size_t)ir_shape_numel(ys) * sizeof *y);
  for (int64_t j = 0; j < n; j++) {
    mutant_unravel(xs, j, idx);
    int inside = 1; /* a negative pad crops */
    for (int k = 0; k < xs->rank; k++) {
      idx[k] += a->list[k];
      inside &= idx[k] >= 0 && idx[k] < ys->dim[k];
    }
    if (inside)
      y[ravel(ys, idx)] = x[j];
  }
}

static void k_slice(const ir_attrs *a, const ir_shape *xs, const uint32_t *x,
                    const ir_shape *ys, uint32_t *y) {
  int64_t idx[IR_MAX_RANK], n = ir_shape_numel(ys);
  for (int64_t j = 0; j < n; j++) {
    mutant_unravel(ys, j, idx);
    for (int k = 0; k < ys->rank; k++)
      idx[k] += a->list[k];
    y[j] = x[ravel(xs, idx)];
  }
}

static void k_transpose(const ir_attrs *a, const ir_shape *xs,
                        const uint32_t *x, const ir_shape *ys, uint32_t *y) {
  int64_t idx[IR_MAX_RANK], src[IR_MAX_RANK], n = ir_shape_numel(ys);
  for (int64_t j = 0; j < n; j++) {
    mutant_unravel(ys, j, idx);
    for (int k = 0; k < ys->rank; k++)
      src[a->list[k]] = idx[k];
    y[j] = x[ravel(xs, src)];
  }
}

/* conv2d with a bias: the convolution without its activation, plus the
 * bias per output channel, then the activation. */
static base_status k_conv_bias(const ir_node *nd, const ir_shape *const *ins,
                               const uint32_t *const *in, const ir_shape *ys,
                               uint32_t *y, uint64_t key) {
  ir_attrs a = nd->a;
  a.act = IR_ACT_NONE;
  base_status st = fp_kernel(IR_OP_CONV2D, &a, ins, in, 2, ys, &y, key);
  if (st)
    return st;
  int64_t planes = ys->dim[0] * ys->dim[1], hw = ys->dim[2] * ys->dim[3];
  for (int64_t p = 0; p < planes; p++)
    for (int64_t i = 0; i < hw; i++) {
      uint32_t *v = &y[p * hw + i];
      uint64_t s = (uint64_t)*v + in[2][p % ys->dim[1]];
      *v = fp_act(nd->a.act, key, (uint32_t)(s % FP_P));
    }
  return BASE_OK;
}

static base_status eval_node(const ir_graph *g, int k, uint32_t **val,
                             uint64_t key, base_diag *d) {
  const ir_node *nd = &g->nodes[k];
  const ir_shape *ins[IR_MAX_IN];
  const uint32_t *in[IR_MAX_IN];
  ir_shape outs[IR_MAX_LIST];
  uint32_t *out[IR_MAX_LIST];
  for (int j = 0; j < nd->nin; j++) {
    ins[j] = &g->tensors[nd->in[j]].shape;
    in[j] = val[nd->in[j]];
  }
  for (int j = 0; j < nd->nout; j++) {
    outs[j] = g->tensors[nd->out[j]].shape;
    int64_t m = ir_shape_numel(&outs[j]);
    if (!(val[nd->out[j]] = base_malloc((size_t)m * sizeof(uint32_t) + 4)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    out[j] = val[nd->out[j]];
  }
  base_status st = BASE_OK;
  switch (nd->op) {
  case IR_OP_PAD:
    if (nd->a.value != 0.0f)
      return base_diag_set(d, BASE_ERR_PARAM, nd->line, nd->col,
                           "mutant: pad with a non-zero value has no modular "
                           "kernel");
    k_pad(&nd->a, ins[0], in[0], &outs[0], out[0]);
    break;
  case IR_OP_SLICE: k_slice(&nd->a, ins[0], in[0], &outs[0], out[0]); break;
  case IR_OP_TRANSPOSE:
    k_transpose(&nd->a, ins[0], in[0], &outs[0], out[0]);
    break;
  case IR_OP_RESHAPE:
    memcpy(out[0], in[0], (size_t)ir_shape_numel(ins[0]) * sizeof(uint32_t));
    break;
  case IR_OP_CONV2D:
    if (nd->nin == 3) {
      st = k_conv_bias(nd, ins, in, &outs[0], out[0], key);
      break;
    }
    /* fall through */
  case IR_OP_MATMUL:
  case IR_OP_EWADD:
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
#include "../ir/ew_cases.h"
  case IR_OP_CLIP:
  case IR_OP_CONCAT:
  case IR_OP_SPLIT:
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_ENLARGE:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL:
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED:
    st = fp_kernel(nd->op, &nd->a, ins, in, nd->nin, outs, out, key);
    break;
  }
  if (st)
    return base_diag_set(d, BASE_ERR_PARAM, nd->line, nd->col,
                         "mutant: no modular kernel for %s with these "
                         "parameters",
                         ir_op(nd->op)->name);
  return BASE_OK;
}

void mutant_vals_free(const ir_graph *g, uint32_t **v) {
  if (!v)
    return;
  for (int i = 0; i < g->ntensors; i++)
    free(v[i]);
  free(v);
}

base_status mutant_eval(const ir_graph *g, uint64_t seed, uint32_t ***out,
                        base_diag *d) {
  uint32_t **v = base_calloc((size_t)g->ntensors + 1, sizeof *v);
  if (!v)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind == IR_T_VALUE)
      continue;
    int64_t m = ir_shape_numel(&t->shape);
    if (!(v[i] = base_malloc((size_t)m * sizeof(uint32_t) + 4))) {
      mutant_vals_free(g, v);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    fp_random(v[i], m, seed, XXH3_64bits(t->name, strlen(t->name)));
  }
  uint64_t key = XXH3_64bits_withSeed("act", 3, seed);
  for (int k = 0; k < g->nnodes; k++) {
    base_status st = eval_node(g, k, v, key, d);
    if (st) {
      mutant_vals_free(g, v);
      return st;
    }
  }
  *out = v;
  return BASE_OK;
}
