/* roofline.c: floating-point operations and memory traffic of every
 * operator, and the roofline estimate of its time on a device.
 *
 * Counts are for a straightforward kernel: each input read once, each
 * output written once (float32, 4 bytes), a multiply-add counted as 2
 * operations, transcendental functions as a few. Views (reshape, and
 * split/slice/transpose results that are a contiguous block of their
 * input in the same order) and constants launch nothing and cost 0.
 */
#include <math.h>

#include "costdb.h"

static double numel(const ir_graph *g, int t) {
  return (double)ir_shape_numel(&g->tensors[t].shape);
}

static double io_bytes(const ir_graph *g, const ir_node *nd) {
  double b = 0;
  for (int i = 0; i < nd->nin; i++)
    b += numel(g, nd->in[i]);
  for (int i = 0; i < nd->nout; i++)
    b += numel(g, nd->out[i]);
  return 4 * b;
}

/* Operations per element of an activation. */
static double act_flops(int act) {
  switch (act) {
  case IR_ACT_NONE: return 0;
  case IR_ACT_RELU: return 1;
  case IR_ACT_SIGMOID:
  case IR_ACT_TANH: return 4;
  default: return 8; /* gelu: erf and 4 more */
  }
}

/* Whether out is a contiguous block of in (same rank): the first
 * dimension that differs has only dimensions of size 1 before it and whole
 * ones after it. */
static int is_block(const ir_shape *in, const ir_shape *out) {
  int i = 0;
  if (in->rank != out->rank)
    return 0;
  while (i < in->rank && in->dim[i] == out->dim[i])
    i++;
  if (i == in->rank)
    return 1; /* the whole input */
  for (int j = 0; j < i; j++)
    if (out->dim[j] != 1)
      return 0;
  for (int j = i + 1; j < in->rank; j++)
    if (in->dim[j] != out->dim[j])
      return 0;
  return 1;
}

static int outputs_are_blocks(const ir_graph *g, const ir_node *nd) {
  const ir_shape *in = &g->tensors[nd->in[0]].shape;
  for (int k = 0; k < nd->nout; k++) {
    if (!is_block(in, &g->tensors[nd->out[k]].shape))
      return 0;
  }
  return 1;
}

/* A transpose that keeps the order of the dimensions larger than 1 moves
 * no data. */
static int transpose_is_view(const ir_graph *g, const ir_node *nd) {
  const ir_shape *in = &g->tensors[nd->in[0]].shape;
  int last = -1;
  for (int i = 0; i < nd->a.nlist; i++) {
    int p = (int)nd->a.list[i];
    if (in->dim[p] == 1)
      continue;
    if (p < last)
      return 0;
    last = p;
  }
  return 1;
}

static cd_work matrix_work(const ir_graph *g, const ir_node *nd) {
  cd_work w = {0, io_bytes(g, nd), 1, 1};
  const ir_shape *x = &g->tensors[nd->in[0]].shape;
  const ir_shape *wt = &g->tensors[nd->in[1]].shape;
  double out = numel(g, nd->out[0]);
  double reduce = nd->op == IR_OP_CONV2D
                      ? (double)wt->dim[1] * wt->dim[2] * wt->dim[3]
                      : (double)x->dim[x->rank - 1];
  w.flops = out * (2 * reduce + (nd->nin > 2) + act_flops(nd->a.act));
  return w;
}

static cd_work kernel(const ir_graph *g, const ir_node *nd, double per_elem,
                      int of_input) {
  double n = numel(g, of_input ? nd->in[0] : nd->out[0]);
  cd_work w = {n * per_elem, io_bytes(g, nd), 1, 0};
  return w;
}

static const cd_work view = {0, 0, 0, 0};

static cd_work elementwise(const ir_graph *g, const ir_node *nd) {
  switch (nd->op) {
  case IR_OP_SIGMOID:
  case IR_OP_TANH: return kernel(g, nd, 4, 0);
  case IR_OP_GELU:
  case IR_OP_ERF: return kernel(g, nd, 8, 0);
  case IR_OP_CLIP: return kernel(g, nd, 2, 0);
  default: return kernel(g, nd, 1, 0); /* ew*, smul, relu, sqrt */
  }
}

/* A fused node: one launch, its inputs read once and its output written
 * once; the body's operations on every output element. */
static cd_work fused(const ir_graph *g, const ir_node *nd) {
  const ir_body *b = ir_body_get(nd->a.body);
  double per = 0;
  for (int i = 0; b && i < b->nops; i++)
    switch (b->ops[i].op) {
    case IR_OP_SIGMOID:
    case IR_OP_TANH: per += 4; break;
    case IR_OP_GELU:
    case IR_OP_ERF: per += 8; break;
    case IR_OP_CLIP:
    case IR_OP_BATCHNORM: per += 2; break;
    default: per += 1; break;
    }
  return kernel(g, nd, per, 0);
}

static cd_work window(const ir_graph *g, const ir_node *nd) {
  return kernel(g, nd, (double)nd->a.kernel[0] * nd->a.kernel[1], 0);
}

cd_work cd_node_work(const ir_graph *g, int node) {
  const ir_node *nd = &g->nodes[node];
  switch (nd->op) {
  case IR_OP_CONV2D:
  case IR_OP_MATMUL: return matrix_work(g, nd);
  case IR_OP_RESHAPE: return view;
  case IR_OP_SPLIT:
  case IR_OP_SLICE:
    return outputs_are_blocks(g, nd) ? view : kernel(g, nd, 0, 0);
  case IR_OP_TRANSPOSE:
    return transpose_is_view(g, nd) ? view : kernel(g, nd, 0, 0);
  case IR_OP_CONCAT:
  case IR_OP_PAD:
  case IR_OP_ENLARGE: return kernel(g, nd, 0, 0);
  case IR_OP_AVGPOOL:
  case IR_OP_MAXPOOL: return window(g, nd);
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_REDUCE_MEAN: return kernel(g, nd, 1, 1);
  case IR_OP_BATCHNORM: return kernel(g, nd, 2, 0);
  case IR_OP_SOFTMAX: return kernel(g, nd, 5, 0);
  case IR_OP_LAYERNORM: return kernel(g, nd, 8, 0);
  case IR_OP_CONST_ICONV:
  case IR_OP_CONST_IMM:
  case IR_OP_CONST_ONES:
  case IR_OP_CONST_POOL: return view;
  case IR_OP_FUSED: return fused(g, nd);
  default: return elementwise(g, nd);
  }
}

double cd_estimate(const cd_device *dev, const ir_graph *g, int node) {
  cd_work w = cd_node_work(g, node);
  if (!w.launches)
    return 0;
  double peak = w.matrix && dev->use_tf32 ? dev->tf32_flops : dev->fp32_flops;
  double t = fmax(w.flops / peak, w.bytes / dev->mem_bw);
  return w.launches * dev->launch_ms + t * 1e3;
}
