/* roofline.c: floating-point operations and memory traffic of every
 * operator, and the roofline estimate of its time on a device.
 *
 * Counts are for a straightforward kernel: each input read once, each
 * output written once (4 bytes an element, 2 for f16 and bf16), a
 * multiply-add counted as 2
 * operations, transcendental functions as a few: the kind and flops per
 * element of the operator's row in ops.def. Views (ir_node_is_view:
 * reshape, and transposes that keep their input's order) and constants
 * launch nothing and cost 0; split and slice are copies even where the IR
 * calls their blocks views (the CUDA executor copies them), but for a
 * split that fused nodes read in place (ir_split_read_in_place). A
 * concat_shuffle is one copy of its inputs into its outputs; a move
 * (a program of movement operators, one kernel) writes its output and
 * reads at most as many input elements; se is priced by se_work.
 */
#include <math.h>

#include "costdb.h"

static double numel(const ir_graph *g, int t) {
  return (double)ir_shape_numel(&g->tensors[t].shape);
}

/* Bytes of tensor t: 2 an element for f16 and bf16, else 4 (the
 * executors' float32 slots). */
static double tensor_bytes(const ir_graph *g, int t) {
  return (ir_dtype_is_half((ir_dtype)g->tensors[t].dtype) ? 2 : 4) *
         numel(g, t);
}

static double io_bytes(const ir_graph *g, const ir_node *nd) {
  double b = 0;
  for (int i = 0; i < nd->nin; i++)
    b += tensor_bytes(g, nd->in[i]);
  for (int i = 0; i < nd->nout; i++)
    b += tensor_bytes(g, nd->out[i]);
  return b;
}

/* Operations per element of an activation: those of its operator. */
static double act_flops(ir_act act) {
  int op = ir_act_op(act);
  return op < 0 ? 0 : ir_op((ir_opcode)op)->flops;
}

/* Attention: both products, the scale, the bias, the softmax (its row of
 * ops.def) and the guard on every score; the scores stay on chip. */
static cd_work attention_work(const ir_graph *g, const ir_node *nd) {
  cd_work w = {0, io_bytes(g, nd), 1, 1};
  ir_att_geom a;
  if (ir_att_geom_of(&nd->a, &g->tensors[nd->in[0]].shape,
                     &g->tensors[nd->in[1]].shape, &g->tensors[nd->in[2]].shape,
                     &a))
    return w;
  double d = (double)a.d, e = (double)a.e, t = (double)a.t;
  double bh = (double)a.b * (double)a.h, scores = bh * (double)a.s * t;
  if (nd->a.groups > 0) { /* row layout: the heads' columns read, not the
                             whole rows (ViT's q, k and v in one tensor) */
    double el = tensor_bytes(g, nd->out[0]) / numel(g, nd->out[0]);
    w.bytes = el * bh * ((double)a.s * d + t * d + t * e + (double)a.s * e);
    for (int i = 3; i < nd->nin; i++)
      w.bytes += tensor_bytes(g, nd->in[i]);
  }
  w.flops = scores * (2 * d + 2 * e + (nd->nin > 3) + (nd->nin > 4) +
                      ir_op(IR_OP_SOFTMAX)->flops + nd->a.keepdims);
  return w;
}

static cd_work matrix_work(const ir_graph *g, const ir_node *nd) {
  if (nd->op == IR_OP_ATTENTION)
    return attention_work(g, nd);
  cd_work w = {0, io_bytes(g, nd), 1, 1};
  const ir_shape *x = &g->tensors[nd->in[0]].shape;
  const ir_shape *wt = &g->tensors[nd->in[1]].shape;
  double out = numel(g, nd->out[0]);
  double reduce = nd->op == IR_OP_CONV2D
                      ? (double)wt->dim[1] * wt->dim[2] * wt->dim[3]
                      : (double)x->dim[x->rank - 1];
  /* a bias and a residual input: one add per output element each (the
   * residual's bytes are among the inputs read once) */
  w.flops =
      out * (2 * reduce + (nd->nin > 2) + (nd->nin > 3) + act_flops(nd->a.act));
  return w;
}

static cd_work kernel(const ir_graph *g, const ir_node *nd, double per_elem,
                      int of_input) {
  double n = numel(g, of_input ? nd->in[0] : nd->out[0]);
  cd_work w = {n * per_elem, io_bytes(g, nd), 1, 0};
  return w;
}

/* Squeeze-and-excitation (se): one launch reading x and the filters once,
 * the pool's sums and both products with their biases and activations;
 * the pooled and hidden vectors stay on chip. */
static cd_work se_work(const ir_graph *g, const ir_node *nd) {
  cd_work w = kernel(g, nd, ir_op(nd->op)->flops, 1);
  const ir_shape *w1 = &g->tensors[nd->in[1]].shape,
                 *w2 = &g->tensors[nd->in[2]].shape;
  double n = (double)g->tensors[nd->in[0]].shape.dim[0];
  double r = (double)w1->dim[0], c = (double)w1->dim[1],
         c2 = (double)w2->dim[0];
  int clip = !isinf(nd->a.lo) || !isinf(nd->a.hi);
  w.flops += n * r * (2 * c + 1 + act_flops((ir_act)nd->a.groups)) +
             n * c2 *
                 (2 * r + 1 + act_flops((ir_act)nd->a.axis) +
                  (clip ? ir_op(IR_OP_CLIP)->flops : 0));
  return w;
}

static const cd_work view = {0, 0, 0, 0};

/* A fused node: one launch, its inputs read once and its output written
 * once; the flops of the body's operators (ops.def) on every element. */
static cd_work fused(const ir_graph *g, const ir_node *nd) {
  const ir_body *b = ir_body_get(nd->a.body);
  double per = 0;
  for (int i = 0; b && i < b->nops; i++)
    per += ir_op(b->ops[i].op)->flops;
  return kernel(g, nd, per, 0);
}

/* Data movement: bytes in and out; a concat's or split's activation
 * (act=, lower_move.c) on the elements it is applied to; a pad reads the
 * part of its input it shows (a negative pad crops). */
static cd_work move(const ir_graph *g, const ir_node *nd) {
  cd_work w = kernel(g, nd, 0, 0);
  double per = act_flops((ir_act)nd->a.act);
  if (nd->op == IR_OP_CONCAT)
    w.flops = numel(g, nd->out[0]) * per;
  for (int k = 0, o = 0; nd->op == IR_OP_SPLIT && k < nd->a.nlist; k++, o++) {
    int mode = nd->a.nlist2 ? (int)nd->a.list2[k] : nd->a.act != IR_ACT_NONE;
    o += mode == 2;
    w.flops += mode ? numel(g, nd->out[o]) * per : 0;
  }
  if (nd->op == IR_OP_PAD) {
    const ir_shape *x = &g->tensors[nd->in[0]].shape;
    double shown = 1;
    for (int i = 0; i < x->rank; i++) {
      int64_t b = nd->a.list[i], e = nd->a.list[i + x->rank];
      int64_t q = x->dim[i] + (b < 0 ? b : 0) + (e < 0 ? e : 0);
      shown *= q > 0 ? (double)q : 0;
    }
    double n = numel(g, nd->in[0]);
    w.bytes -= n > 0 ? tensor_bytes(g, nd->in[0]) / n * (n - shown) : 0;
  }
  return w;
}

/* A move node: one kernel writing its output, each output element read
 * from one input element (or the pad value): at most the smaller of the
 * two tensors read (a crop or slice reads only what it shows). */
static cd_work move_program(const ir_graph *g, const ir_node *nd) {
  cd_work w = kernel(g, nd, 0, 0);
  double in = tensor_bytes(g, nd->in[0]), out = tensor_bytes(g, nd->out[0]);
  w.bytes = out + (in < out ? in : out);
  return w;
}

static cd_work window(const ir_graph *g, const ir_node *nd) {
  return kernel(g, nd, (double)nd->a.kernel[0] * nd->a.kernel[1], 0);
}

/* By the operator's kind and flops per element (ops.def). */
cd_work cd_node_work(const ir_graph *g, int node) {
  const ir_node *nd = &g->nodes[node];
  const ir_opinfo *r = ir_op(nd->op);
  if (nd->op == IR_OP_SPLIT && ir_split_read_in_place(g, node, NULL, NULL))
    return view; /* the fused kernels read its column blocks in place */
  switch (r->kind) {
  case IR_OPK_MATRIX: return matrix_work(g, nd);
  case IR_OPK_WINDOW: return window(g, nd);
  case IR_OPK_CONST: return view;
  case IR_OPK_REDUCE:
    return nd->op == IR_OP_SE ? se_work(g, nd) : kernel(g, nd, r->flops, 1);
  case IR_OPK_EW:
  case IR_OPK_NORM: break;
  case IR_OPK_MOVE:
    if (nd->op == IR_OP_CONCAT || nd->op == IR_OP_SPLIT || nd->op == IR_OP_PAD)
      return move(g, nd);
    if (nd->op == IR_OP_MOVE)
      return move_program(g, nd);
    break;
  case IR_OPK_FUSED: return fused(g, nd);
  }
  /* split and slice results that are blocks of their input (a view to
   * the IR) are still copies on the CUDA executor, which runs 4-D
   * activations channels-last, where a channel block is strided */
  unsigned f = r->flags;
  int copies = (f & IR_OPF_VIEW_BLOCKS) && !(f & IR_OPF_VIEW);
  return !copies && ir_node_is_view(g, nd) ? view : kernel(g, nd, r->flops, 0);
}

double cd_estimate(const cd_device *dev, const ir_graph *g, int node) {
  cd_work w = cd_node_work(g, node);
  if (!w.launches)
    return 0;
  double peak = w.matrix && dev->use_tf32 ? dev->tf32_flops : dev->fp32_flops;
  double t = fmax(w.flops / peak, w.bytes / dev->mem_bw);
  return w.launches * dev->launch_ms + t * 1e3;
}
