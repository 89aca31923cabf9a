/* lower_epi.c: the lower stage's epilogue family (lower.h): what the CUDA
 * executor's convolution and matmul kernels apply to their result as they
 * store it, made parameters and inputs of those nodes.
 *
 *   conv2d/matmul (with a bias) -> ewadd(., r)   conv2d/matmul(..., r)
 *   matmul without bias -> ewadd(., bias vector)  matmul(a, b, bias)
 *   conv2d/matmul (act=none) -> [either add] -> relu   ... act=relu
 *   conv2d (act=none) -> [residual add] -> clip          ... act=clip min max
 *   conv2d(x, w, b) -> transpose [0,2,3,1] -> layernorm(., g, be)
 *                      conv2d(x, w) -> ... -> layernorm(., g, be, b)
 *   ewadd/ewsub/ewmul/ewdiv/smul/batchnorm -> relu
 *                      fused(...) {op; relu}
 *   conv2d(x, w, b) -> fused(..., c, ...)   (c: the convolution's result)
 *                      conv2d(x, w) -> fused(..., c, ..., reshape(b, [C,1,1]))
 *                      {c + b broadcast over the channels; the body as before}
 *   matmul(a, m, b) -> transpose [0,3,1,2] -> ewadd(., r)   (ConvNeXt)
 *                      matmul(a, m, b, transpose(r, [0,2,3,1]))
 *                      -> transpose [0,3,1,2]
 *
 * The conditions are those the executor's planner used when it folded
 * these privately (the add alone reads the product, which has no
 * activation and is not weight-only; the other operand has the add's shape
 * and exists before the product runs; a matmul's rank-4 result with
 * H * W > 1, a channels-last candidate, takes no residual; the bias the
 * matmul's bias epilogue takes is a vector [N]). A residual needs a bias
 * before it (ops.def: optional inputs are trailing): a matmul without one
 * gets zeros (const_ones minus itself, weight-only: Llama's projections
 * have no bias, and each layer's two residual adds were a kernel each); a
 * convolution without one keeps its add. A clip folds into a convolution
 * only (its bias kernel clamps), a relu into either.
 *
 * A relu after an element-wise operator whose CUDA kernel could apply it
 * (ops.def's IR_OPF_RELU_EPILOGUE; one output, read by the relu alone)
 * becomes a fused node of the two: one kernel, as the executor's fold
 * was. A convolution's bias moves into the fused node that alone reads
 * its result (the body's plain input, not a batch-norm parameter, of the
 * fused node's rank-4 output shape; no row reduction; the convolution
 * with nothing else folded and a bias from weights), which adds it as it
 * loads the value: the bias pass over the result goes. The ConvNeXt
 * residual: a matmul over channels-last rows [N,H,W,C] whose result,
 * permuted back to images, is added to r takes r permuted the other way
 * as its residual input; on the GPU both transposes are views of
 * channels-last bytes (src/gpu/plan/layout.c), so the add is the matmul's
 * epilogue. Lowered only where r is computed by a node that runs
 * channels-last there (a convolution, an element-wise or fused node, a
 * transpose to images), so the transpose of r is no copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

typedef struct epi {
  const ir_graph *g;
  int *reads;
  unsigned char *wonly;
  int32_t *extra; /* per node: 1 + the tensor it now takes as its bias
                     (matmul without one) or residual, or 0 */
  int32_t *last;  /* per node: the node whose result it now writes */
  int32_t *owner; /* per folded node: the product computing it, else -1 */
  int32_t *act;   /* per product: its activation after lowering */
  float *lo, *hi; /* per product with act=clip: the bounds */
  unsigned char *nobias; /* per convolution: its bias moved to its reader */
  unsigned char *relu;   /* per element-wise node: a relu folded, so it
                            becomes fused(op, relu) */
  int32_t *clr;          /* per matmul: 1 + the residual it reads through a
                            transpose [0,2,3,1] (after its bias), or 0 */
  uint64_t *fbias;       /* per fused node: the inputs k (bit k) whose
                            convolution's bias it adds */
  int32_t *after;        /* per node: STAYS, or the node it is moved to
                            follow (-1: the front; fold_shortcut) */
  unsigned char *anchor; /* per node: some node is moved to follow it */
  int shortcuts;         /* nodes moved */
  unsigned char *zbias;  /* per matmul without bias taking a residual: a
                            zero bias before it */
  int32_t *res;          /* per matmul: 1 + the residual it reads after its
                            bias (fold_res, fold_fused_res), or 0 */
  unsigned char *rview;  /* per matmul with res: read through a reshape to
                            its result's shape (its rows) */
  unsigned char *cl;     /* per tensor: may run channels-last on the GPU
                            (maybe_cl) */
} epi;

#define STAYS (-2) /* epi.after: the node keeps its place */

/* Which tensors may be channels-last on the GPU (src/gpu/plan/layout.c),
 * over-approximated: a convolution's rank-4 result with H * W > 1, a
 * transpose [0,3,1,2]'s, and any such result of a node reading one (views
 * too: they share their root's bytes), but for the nodes that always run
 * NCHW (matmul, softmax, layer norm, attention, move, constants,
 * weight-only nodes). The executor reads a matmul's residual as plain
 * rows, unconverted (run/mm.c). */
static void maybe_cl(epi *e) {
  const ir_graph *g = e->g;
  static const int64_t back[4] = {0, 3, 1, 2};
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int c = 0;
    switch (n->op) {
    case IR_OP_CONV2D: c = 1; break;
    case IR_OP_MATMUL:
    case IR_OP_SOFTMAX:
    case IR_OP_LAYERNORM:
    case IR_OP_ATTENTION:
    case IR_OP_MOVE: break;
    default:
      c = n->op == IR_OP_TRANSPOSE && n->a.nlist == 4 &&
          !memcmp(n->a.list, back, sizeof back);
      for (int k = 0; k < n->nin; k++)
        c |= e->cl[n->in[k]];
    }
    for (int k = 0; k < n->nout; k++) {
      const ir_shape *o = &g->tensors[n->out[k]].shape;
      e->cl[n->out[k]] = (unsigned char)(c && !e->wonly[i] && o->rank == 4 &&
                                         o->dim[2] * o->dim[3] > 1);
    }
  }
}

/* May an add's result of shape o, its other operand r, be a matmul's
 * residual output: of rank 1 or more, and not a rank-4 image (H * W > 1)
 * whose r may be channels-last (ConvNeXt's: the add runs channels-last
 * there, where the matmul would read r converted)? */
static int res_shape_ok(const epi *e, const ir_shape *o, int r) {
  return o->rank >= 1 &&
         !(o->rank == 4 && o->dim[2] * o->dim[3] > 1 && e->cl[r]);
}

/* Is tensor t the result of a convolution or matmul that add node j may
 * take as a residual (*isbias 0) or as a bias (*isbias 1) r? */
static int product_of(const epi *e, int j, int t, int r, int *isbias) {
  const ir_graph *g = e->g;
  const ir_tensor *x = &g->tensors[t], *rt = &g->tensors[r];
  const ir_shape *o = &g->tensors[g->nodes[j].out[0]].shape;
  if (x->kind != IR_T_VALUE || e->owner[x->node] >= 0)
    return 0;
  int c = x->node;
  const ir_node *cn = &g->nodes[c];
  if ((cn->op != IR_OP_CONV2D && cn->op != IR_OP_MATMUL) ||
      cn->a.act != IR_ACT_NONE || e->act[c] != IR_ACT_NONE ||
      e->reads[t] != 1 || e->extra[c] || e->res[c] || e->wonly[c] ||
      !ir_shape_eq(&x->shape, o) ||
      (rt->kind == IR_T_VALUE && rt->node > c &&
       !(e->after[rt->node] != STAYS && e->after[rt->node] < c)))
    return 0;
  int64_t nn = o->rank ? o->dim[o->rank - 1] : 1;
  if (cn->op == IR_OP_MATMUL && cn->nin == 2 && rt->shape.rank == 1 &&
      rt->shape.dim[0] == nn && !ir_shape_eq(&rt->shape, o)) {
    *isbias = 1;
    return 1;
  }
  *isbias = 0;
  return (cn->nin == 3 || (cn->op == IR_OP_MATMUL && cn->nin == 2)) &&
         ir_shape_eq(&rt->shape, o) &&
         (cn->op != IR_OP_MATMUL || res_shape_ok(e, o, r));
}

/* The index of the last node computing an input of node i, -1 if none. */
static int last_dep(const ir_graph *g, int i) {
  int m = -1;
  for (int k = 0; k < g->nodes[i].nin; k++) {
    const ir_tensor *t = &g->tensors[g->nodes[i].in[k]];
    if (t->kind == IR_T_VALUE && t->node > m)
      m = t->node;
  }
  return m;
}

/* Where shortcut s may move: right after ds, the node computing its last
 * input (-1: the front), if ds comes before limit, s is a convolution or
 * matmul that no other fold or move involves, ds is not moved itself and
 * a (the node s moves ahead of) stays; else STAYS. */
static int move_target(const epi *e, int s, int a, int limit) {
  const ir_node *sn = &e->g->nodes[s];
  int ds = last_dep(e->g, s);
  if ((sn->op != IR_OP_CONV2D && sn->op != IR_OP_MATMUL) || e->owner[s] >= 0 ||
      e->extra[s] || e->clr[s] || e->res[s] || e->anchor[s] ||
      e->after[s] != STAYS || e->after[a] != STAYS || ds >= limit ||
      (ds >= 0 && e->after[ds] != STAYS))
    return STAYS;
  return ds;
}

/* s moved to follow ds (move_target's). */
static void move_after(epi *e, int s, int ds) {
  e->after[s] = ds;
  if (ds >= 0)
    e->anchor[ds] = 1;
  e->shortcuts++;
}

/* A ResNet block with a projection shortcut ends in ewadd(b, s): b the
 * main chain's last convolution, s the shortcut's convolution of the
 * block's input. Exported graphs (and the search's rebuilds) list s after
 * the chain, where an add folds into s (its residual b exists before s
 * runs): s then waits for the whole chain and nothing runs beside it. So
 * where s's inputs are computed before b's (s could run first), s moves
 * to right after the last of them and the add folds into b: s runs on a
 * second stream beside the chain (src/gpu/plan/streams.c). Only the order
 * changes, every node still after its inputs. Not moved: a node another
 * is moved to follow, nor one that would follow a moved node. */
static int fold_shortcut(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_EWADD || n->nin != 2 || e->wonly[j] ||
      n->in[0] == n->in[1])
    return 0;
  const ir_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->in[1]];
  if (x->kind != IR_T_VALUE || y->kind != IR_T_VALUE)
    return 0;
  int a = x->node < y->node ? x->node : y->node;
  int s = x->node < y->node ? y->node : x->node;
  int ds = move_target(e, s, a, last_dep(g, a)), isbias = 0;
  if (ds == STAYS)
    return 0;
  const ir_node *sn = &g->nodes[s];
  e->after[s] = ds;
  if (!product_of(e, j, g->nodes[a].out[0], sn->out[0], &isbias) || isbias) {
    e->after[s] = STAYS;
    return 0;
  }
  move_after(e, s, ds);
  e->zbias[a] = g->nodes[a].nin == 2;
  e->extra[a] = 1 + sn->out[0];
  e->last[a] = j;
  e->owner[j] = a;
  return 1;
}

/* The same block after a generated rule folded the add (e00581): j, the
 * chain's last convolution, already takes the shortcut's result as its
 * residual r, and the shortcut s is listed after the node computing j's
 * other input a, so no add is left for fold_shortcut to find. Where s's
 * inputs are computed before a, s moves to right after the last of them,
 * as fold_shortcut moves it: only the order changes. */
static void order_shortcut(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_CONV2D || n->nin != 4 || e->wonly[j] ||
      e->after[j] != STAYS)
    return;
  const ir_tensor *r = &g->tensors[n->in[3]];
  int a = -1;
  for (int k = 0; k < 3; k++) {
    const ir_tensor *t = &g->tensors[n->in[k]];
    if (t->kind == IR_T_VALUE && !e->wonly[t->node] && t->node > a)
      a = t->node;
  }
  if (r->kind != IR_T_VALUE || a < 0 || r->node < a)
    return;
  int s = r->node, ds = move_target(e, s, a, a);
  if (ds != STAYS && !e->wonly[s])
    move_after(e, s, ds);
}

/* Folds add node j into the product computing one operand, if any. */
static int fold_add(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_EWADD || n->nin != 2 || e->wonly[j] ||
      n->in[0] == n->in[1])
    return 0;
  for (int k = 0; k < 2; k++) {
    int isbias = 0;
    if (!product_of(e, j, n->in[k], n->in[1 - k], &isbias))
      continue;
    int c = g->tensors[n->in[k]].node;
    e->zbias[c] = !isbias && g->nodes[c].nin == 2;
    e->extra[c] = 1 + n->in[1 - k];
    e->last[c] = j;
    e->owner[j] = c;
    return 1;
  }
  return 0;
}

/* Can node c, not folded, take the relu after it into a fused node
 * (IR_OPF_RELU_EPILOGUE, one output, nothing folded into it)? */
static int relu_epilogue(const epi *e, int c) {
  const ir_node *n = &e->g->nodes[c];
  return (ir_op(n->op)->flags & IR_OPF_RELU_EPILOGUE) && n->nout == 1 &&
         !e->wonly[c] && e->owner[c] < 0 && !e->extra[c] && !e->relu[c] &&
         n->nin <= IR_MAX_FIXED_IN;
}

/* Folds relu node j into the product computing its input (directly or
 * through a folded add), if that product has no activation yet; a clip
 * (ReLU6) likewise into a convolution. */
static int fold_act(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  const ir_tensor *x = &g->tensors[n->in[0]];
  if ((n->op != IR_OP_RELU && n->op != IR_OP_CLIP) || x->kind != IR_T_VALUE ||
      e->reads[n->in[0]] != 1)
    return 0;
  int c = e->owner[x->node] >= 0 ? e->owner[x->node] : x->node;
  const ir_node *cn = &g->nodes[c];
  if (n->op == IR_OP_RELU && c == x->node && relu_epilogue(e, c)) {
    e->relu[c] = 1;
    e->last[c] = j;
    e->owner[j] = c;
    return 1;
  }
  if ((cn->op != IR_OP_CONV2D &&
       (cn->op != IR_OP_MATMUL || n->op == IR_OP_CLIP)) ||
      cn->a.act != IR_ACT_NONE || e->act[c] != IR_ACT_NONE)
    return 0;
  e->act[c] = n->op == IR_OP_CLIP ? IR_ACT_CLIP : IR_ACT_RELU;
  e->lo[c] = n->a.lo;
  e->hi[c] = n->a.hi;
  e->last[c] = j;
  e->owner[j] = c;
  return 1;
}

/* Moves the bias of the convolution that layer norm node j reads through
 * a transpose to channels-last into the layer norm's xb input (ops.def),
 * which adds it as it loads each value (ConvNeXt's depthwise convolutions;
 * the planner's former bias_into_layernorm): the layer norm over the
 * channels (axis 3 of a rank-4 input) with gamma and beta, each link read
 * once and no graph output, nothing else on the convolution, the bias a
 * weight or computed from weights. */
static int fold_ln_bias(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  static const int64_t perm[4] = {0, 2, 3, 1};
  if (n->op != IR_OP_LAYERNORM || n->nin != 3 || e->wonly[j])
    return 0;
  const ir_tensor *t = &g->tensors[n->in[0]];
  if (t->kind != IR_T_VALUE || t->shape.rank != 4 || n->a.axis != 3 ||
      e->reads[n->in[0]] != 1 || e->owner[t->node] >= 0)
    return 0;
  const ir_node *tr = &g->nodes[t->node];
  if (tr->op != IR_OP_TRANSPOSE || tr->a.nlist != 4 ||
      memcmp(tr->a.list, perm, sizeof perm) != 0)
    return 0;
  const ir_tensor *u = &g->tensors[tr->in[0]];
  if (u->kind != IR_T_VALUE || e->reads[tr->in[0]] != 1 || e->wonly[u->node] ||
      e->owner[u->node] >= 0)
    return 0;
  int c = u->node;
  const ir_node *cn = &g->nodes[c];
  if (cn->op != IR_OP_CONV2D || cn->nin != 3 || cn->a.act != IR_ACT_NONE ||
      e->act[c] != IR_ACT_NONE || e->extra[c])
    return 0;
  const ir_tensor *b = &g->tensors[cn->in[2]];
  if (b->kind == IR_T_INPUT || (b->kind == IR_T_VALUE && !e->wonly[b->node]))
    return 0;
  e->nobias[c] = 1;
  e->extra[j] = 1 + cn->in[2];
  return 1;
}

/* Is the bias of convolution c one a fused reader may take: weights, or
 * computed from weights alone (gpu_weight_like's condition)? Nothing
 * else folded into c, its result read once, of shape o. */
static int movable_bias(const epi *e, int c, const ir_shape *o) {
  const ir_graph *g = e->g;
  const ir_node *cn = &g->nodes[c];
  if (cn->op != IR_OP_CONV2D || cn->nin != 3 || cn->a.act != IR_ACT_NONE ||
      e->act[c] != IR_ACT_NONE || e->extra[c] || e->nobias[c] || e->wonly[c] ||
      e->owner[c] >= 0 || e->reads[cn->out[0]] != 1 ||
      !ir_shape_eq(&g->tensors[cn->out[0]].shape, o))
    return 0;
  const ir_tensor *b = &g->tensors[cn->in[2]];
  return b->kind != IR_T_VALUE || e->wonly[b->node];
}

/* Moves into fused node j the bias of each convolution whose result it
 * alone reads (the planner's former bias_into_fused): j's body, not a row
 * reduction, gains an add of the bias seen as [C,1,1] per such input (of
 * the output's rank-4 shape: never a batch norm's parameter). */
static int fold_fused_bias(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  const ir_body *b = n->op == IR_OP_FUSED ? ir_body_get(n->a.body) : NULL;
  const ir_shape *o = &g->tensors[n->out[0]].shape;
  if (!b || ir_body_row(b) || e->wonly[j] || n->nout != 1 || o->rank != 4)
    return 0;
  int nin = n->nin, nops = b->nops, moved = 0;
  for (int k = 0; k < n->nin; k++) {
    const ir_tensor *x = &g->tensors[n->in[k]];
    if (x->kind != IR_T_VALUE || nin == IR_MAX_IN || nops == IR_BODY_MAX_OPS ||
        !movable_bias(e, x->node, o))
      continue;
    e->nobias[x->node] = 1;
    e->fbias[j] |= (uint64_t)1 << k;
    nin++, nops++, moved++;
  }
  return moved;
}

/* The ConvNeXt residual (see the top): ewadd node j = t + r, t the
 * transpose [0,3,1,2] of a matmul's [N,H,W,C] result; the matmul then
 * takes r through a transpose [0,2,3,1] as its residual, and the
 * transpose writes j's result. */
static int cl_producer(const epi *e, int t) {
  const ir_tensor *x = &e->g->tensors[t];
  if (x->kind != IR_T_VALUE || e->wonly[x->node])
    return 0;
  const ir_node *n = &e->g->nodes[x->node];
  static const int64_t back[4] = {0, 3, 1, 2};
  return n->op == IR_OP_CONV2D || n->op == IR_OP_FUSED ||
         (ir_op(n->op)->flags & IR_OPF_BODY) ||
         (n->op == IR_OP_TRANSPOSE && n->a.nlist == 4 &&
          !memcmp(n->a.list, back, sizeof back));
}

static int fold_cl_residual(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  static const int64_t back[4] = {0, 3, 1, 2};
  if (n->op != IR_OP_EWADD || n->nin != 2 || e->wonly[j] ||
      n->in[0] == n->in[1])
    return 0;
  const ir_shape *o = &g->tensors[n->out[0]].shape;
  for (int k = 0; k < 2; k++) {
    int t = n->in[k], r = n->in[1 - k];
    const ir_tensor *tt = &g->tensors[t], *rt = &g->tensors[r];
    if (tt->kind != IR_T_VALUE || e->reads[t] != 1 || e->owner[tt->node] >= 0 ||
        !ir_shape_eq(&rt->shape, o) || o->rank != 4 || !cl_producer(e, r))
      continue;
    const ir_node *tn = &g->nodes[tt->node];
    if (tn->op != IR_OP_TRANSPOSE || tn->a.nlist != 4 ||
        memcmp(tn->a.list, back, sizeof back) || e->wonly[tt->node])
      continue;
    const ir_tensor *x = &g->tensors[tn->in[0]];
    if (x->kind != IR_T_VALUE || e->reads[tn->in[0]] != 1)
      continue;
    /* the matmul, or the one a bias add was folded into */
    int m = e->owner[x->node] >= 0 ? e->owner[x->node] : x->node;
    const ir_node *mn = &g->nodes[m];
    int biased = mn->nin == 3 ? !e->extra[m] : mn->nin == 2 && e->extra[m];
    if (mn->op != IR_OP_MATMUL || !biased || mn->a.act != IR_ACT_NONE ||
        e->act[m] != IR_ACT_NONE || e->clr[m] || e->res[m] || e->wonly[m] ||
        e->owner[m] >= 0 || x->shape.dim[1] * x->shape.dim[2] <= 1 ||
        g->tensors[r].node > m)
      continue;
    e->clr[m] = 1 + r;
    e->last[tt->node] = j;
    e->owner[j] = tt->node;
    return 1;
  }
  return 0;
}

/* The matmul whose result (or whose folded bias add's result) tensor t
 * is, free to take a residual of shape o after its bias: read once, no
 * activation, nothing else folded but a bias, not weight-only, its rows
 * those of o; -1 if none. */
static int res_matmul(const epi *e, int t, const ir_shape *o) {
  const ir_graph *g = e->g;
  const ir_tensor *x = &g->tensors[t];
  if (x->kind != IR_T_VALUE || e->reads[t] != 1 || e->wonly[x->node])
    return -1;
  int p = x->node, m = e->owner[p] >= 0 ? e->owner[p] : p;
  const ir_node *mn = &g->nodes[m];
  const ir_shape *ms = &g->tensors[mn->out[0]].shape;
  if (mn->op != IR_OP_MATMUL || e->last[m] != p || e->owner[m] >= 0 ||
      e->wonly[m] || mn->a.act != IR_ACT_NONE || e->act[m] != IR_ACT_NONE ||
      e->clr[m] || e->res[m] || e->zbias[m] || e->after[m] != STAYS ||
      (mn->nin == 3 && e->extra[m]) ||
      ms->dim[ms->rank - 1] != o->dim[o->rank - 1])
    return -1;
  return m;
}

/* Is tensor r, of shape o and node m's type, computed before node m (a
 * weight or input, or a node that keeps its place before m)? */
static int before(const epi *e, int r, int m, const ir_shape *o) {
  const ir_tensor *rt = &e->g->tensors[r];
  return ir_shape_eq(&rt->shape, o) &&
         rt->dtype == e->g->tensors[e->g->nodes[m].out[0]].dtype &&
         (rt->kind != IR_T_VALUE ||
          (rt->node < m && e->after[rt->node] == STAYS));
}

/* Records matmul m taking residual r (through a reshape when rv), the
 * product's bias (a zero one if none) before it. */
static void take_res(epi *e, int m, int r, int rv) {
  e->zbias[m] = e->g->nodes[m].nin == 2 && !e->extra[m];
  e->res[m] = 1 + r;
  e->rview[m] = (unsigned char)rv;
}

/* Residual add node j whose other operand is a matmul's result after its
 * folded bias add (matmul(x, w) -> ewadd(., b) -> ewadd(., r): the bias
 * add took the product's extra input), or reached through a reshape that
 * keeps its rows (ViT's out_proj: matmul [B*S,C] -> reshape [B,S,C] ->
 * ewadd): the matmul takes r (reshaped to its rows) after its bias; the
 * reshape, if any, then writes j's result. */
static int fold_res(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_EWADD || n->nin != 2 || e->wonly[j] ||
      n->in[0] == n->in[1])
    return 0;
  const ir_shape *o = &g->tensors[n->out[0]].shape;
  for (int k = 0; k < 2; k++) {
    int t = n->in[k], r = n->in[1 - k], v = -1;
    const ir_tensor *tt = &g->tensors[t];
    if (tt->kind != IR_T_VALUE || !res_shape_ok(e, o, r) ||
        !ir_shape_eq(&tt->shape, o))
      continue;
    if (g->nodes[tt->node].op == IR_OP_RESHAPE) {
      v = tt->node;
      if (e->reads[t] != 1 || e->wonly[v] || e->owner[v] >= 0 ||
          e->after[v] != STAYS)
        continue;
      t = g->nodes[v].in[0];
    }
    int m = res_matmul(e, t, o);
    if (m < 0 || !before(e, r, m, o) || (v < 0 && !e->extra[m]))
      continue; /* without a reshape, fold_add takes a plain product's */
    take_res(e, m, r, v >= 0);
    e->last[v >= 0 ? v : m] = j;
    e->owner[j] = v >= 0 ? v : m;
    return 1;
  }
  return 0;
}

/* Fused node j that only sums the bias vector and a residual into a
 * matmul's result ({t0 = ewadd(a, b); t1 = ewadd(t0, c)}, the fusion
 * pass's group of the two adds, in any order of operands): the matmul
 * without bias takes the vector as its bias and the other as its
 * residual, and writes j's result. */
static int fold_fused_res(epi *e, int j) {
  const ir_graph *g = e->g;
  const ir_node *n = &g->nodes[j];
  const ir_body *b = n->op == IR_OP_FUSED ? ir_body_get(n->a.body) : NULL;
  if (!b || b->nops != 2 || n->nin != 3 || n->nout != 1 || e->wonly[j] ||
      b->ops[0].op != IR_OP_EWADD || b->ops[1].op != IR_OP_EWADD ||
      b->ops[0].in[0] >= 0 || b->ops[0].in[1] >= 0 ||
      (b->ops[1].in[0] == 0) == (b->ops[1].in[1] == 0))
    return 0;
  int32_t u = b->ops[1].in[b->ops[1].in[0] == 0];
  int32_t a = -1 - b->ops[0].in[0], c = -1 - b->ops[0].in[1];
  if (u >= 0 || a == c || -1 - u == a || -1 - u == c)
    return 0;
  const ir_shape *o = &g->tensors[n->out[0]].shape;
  int32_t in3[3] = {n->in[a], n->in[c], n->in[-1 - u]};
  for (int p = 0; p < 3; p++) {
    int m = res_matmul(e, in3[p], o);
    if (m < 0 || g->nodes[m].nin != 2 || e->extra[m] ||
        !ir_shape_eq(&g->tensors[in3[p]].shape, o))
      continue;
    int x = in3[(p + 1) % 3], y = in3[(p + 2) % 3];
    const ir_shape *xs = &g->tensors[x].shape;
    if (xs->rank != 1 || xs->dim[0] != o->dim[o->rank - 1])
      x = in3[(p + 2) % 3], y = in3[(p + 1) % 3]; /* x: the bias vector */
    xs = &g->tensors[x].shape;
    if (xs->rank != 1 || xs->dim[0] != o->dim[o->rank - 1] ||
        ir_shape_eq(xs, o) || !before(e, y, m, o) || !res_shape_ok(e, o, y) ||
        g->tensors[x].dtype != g->tensors[in3[p]].dtype ||
        (g->tensors[x].kind == IR_T_VALUE && g->tensors[x].node > m))
      continue;
    e->extra[m] = 1 + x;
    take_res(e, m, y, 0);
    e->last[m] = j;
    e->owner[j] = m;
    return 1;
  }
  return 0;
}

/* A name for a new tensor, "<base>.<what>", numbered where g or h has
 * it already. */
static const char *fresh_name(const ir_graph *g, const ir_graph *h,
                              const char *base, const char *what, char *buf,
                              size_t n) {
  snprintf(buf, n, "%s.%s", base, what);
  for (int k = 2; ir_find_tensor(g, buf) >= 0 || ir_find_tensor(h, buf) >= 0;
       k++)
    snprintf(buf, n, "%s.%s%d", base, what, k);
  return buf;
}

/* Adds op(in) with output `name` to h: its output tensor, or -1. */
static int add1(ir_graph *h, const ir_node *at, ir_opcode op, int32_t in,
                const ir_attrs *a, const char *name, base_diag *d) {
  int k = ir_add_node(h, op, &in, 1, a, &name, d);
  if (k < 0)
    return -1;
  h->nodes[k].line = at->line;
  h->nodes[k].col = at->col;
  return h->nodes[k].out[0];
}

/* Zeros [N] for matmul node nd's bias (N its output's last dimension),
 * computed from constants alone: ewsub(ones, ones), cast to the matmul's
 * type in a half graph. */
static int zero_bias(ir_graph *h, const epi *e, const ir_node *nd,
                     base_diag *d) {
  char buf[300];
  const ir_shape *o = &e->g->tensors[nd->out[0]].shape;
  ir_attrs a;
  ir_attrs_default(IR_OP_CONST_ONES, &a);
  a.nlist = 1, a.list[0] = o->rank ? o->dim[o->rank - 1] : 1;
  const char *base = e->g->tensors[nd->out[0]].name;
  const char *name = fresh_name(e->g, h, base, "ones", buf, sizeof buf);
  int k = ir_add_node(h, IR_OP_CONST_ONES, NULL, 0, &a, &name, d);
  if (k < 0)
    return -1;
  int32_t one[2] = {h->nodes[k].out[0], h->nodes[k].out[0]};
  ir_attrs_default(IR_OP_EWSUB, &a);
  int32_t dt = e->g->tensors[nd->out[0]].dtype; /* a half graph's type */
  name = fresh_name(e->g, h, base, dt == IR_DT_F32 ? "zero_bias" : "zero", buf,
                    sizeof buf);
  k = ir_add_node(h, IR_OP_EWSUB, one, 2, &a, &name, d);
  if (k < 0 || dt == IR_DT_F32)
    return k < 0 ? -1 : h->nodes[k].out[0];
  int32_t z = h->nodes[k].out[0];
  ir_attrs_default(IR_OP_CAST, &a);
  a.groups = dt; /* to= */
  name = fresh_name(e->g, h, base, "zero_bias", buf, sizeof buf);
  k = ir_add_node(h, IR_OP_CAST, &z, 1, &a, &name, d);
  return k < 0 ? -1 : h->nodes[k].out[0];
}

/* transpose [0,2,3,1] of h's tensor r, for matmul node nd's residual. */
static int residual_view(ir_graph *h, const epi *e, const ir_node *nd,
                         int32_t r, base_diag *d) {
  char buf[300];
  ir_attrs a;
  ir_attrs_default(IR_OP_TRANSPOSE, &a);
  a.nlist = 4;
  a.list[0] = 0, a.list[1] = 2, a.list[2] = 3, a.list[3] = 1;
  const char *base = e->g->tensors[nd->out[0]].name;
  return add1(h, nd, IR_OP_TRANSPOSE, r, &a,
              fresh_name(e->g, h, base, "r", buf, sizeof buf), d);
}

/* reshape of h's tensor r to matmul node nd's result shape (its rows),
 * for its residual. */
static int residual_rows(ir_graph *h, const epi *e, const ir_node *nd,
                         int32_t r, base_diag *d) {
  char buf[300];
  const ir_shape *o = &e->g->tensors[nd->out[0]].shape;
  ir_attrs a;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = o->rank;
  for (int k = 0; k < o->rank; k++)
    a.list[k] = o->dim[k];
  const char *base = e->g->tensors[nd->out[0]].name;
  return add1(h, nd, IR_OP_RESHAPE, r, &a,
              fresh_name(e->g, h, base, "r", buf, sizeof buf), d);
}

/* The body of fused node nd (body b, whose bits `bias` name the inputs
 * whose convolution's bias it adds as its extra inputs nd->nin...): the
 * adds first, then b's operators reading them. */
static const ir_body *biased_body(const ir_body *b, uint64_t bias, int nin,
                                  base_diag *d) {
  ir_body_op ops[IR_BODY_MAX_OPS];
  int32_t ref[IR_MAX_IN]; /* input k: its add's index, or -1 - k */
  int m = 0;
  for (int k = 0; k < nin; k++) {
    ref[k] = -1 - k;
    if (!(bias >> k & 1))
      continue;
    memset(&ops[m], 0, sizeof ops[m]);
    ops[m].op = IR_OP_EWADD;
    ops[m].nin = 2;
    ops[m].in[0] = -1 - k;
    ops[m].in[1] = -1 - (nin + m);
    ir_attrs_default(IR_OP_EWADD, &ops[m].a);
    ref[k] = m++;
  }
  for (int i = 0; i < b->nops; i++) {
    ops[m + i] = b->ops[i];
    for (int q = 0; q < b->ops[i].nin; q++) {
      int32_t r = b->ops[i].in[q];
      ops[m + i].in[q] = r < 0 ? ref[-1 - r] : r + m;
    }
  }
  return ir_body_intern(nin + m, m + b->nops, ops, d);
}

/* Adds fused node i of g to h with the biases moved into it: in[] gains
 * each bias reshaped to [C,1,1], *a the new body. */
static int bias_inputs(ir_graph *h, const epi *e, int i, int32_t *in, int *nin,
                       ir_attrs *a, const int32_t *map, base_diag *d) {
  const ir_graph *g = e->g;
  const ir_node *nd = &g->nodes[i];
  char buf[300];
  for (int k = 0; k < nd->nin; k++) {
    if (!(e->fbias[i] >> k & 1))
      continue;
    const ir_node *c = &g->nodes[g->tensors[nd->in[k]].node];
    ir_attrs r;
    ir_attrs_default(IR_OP_RESHAPE, &r);
    r.nlist = 3;
    r.list[0] = g->tensors[c->in[2]].shape.dim[0];
    r.list[1] = r.list[2] = 1;
    const char *base = g->tensors[c->in[2]].name;
    int t = add1(h, nd, IR_OP_RESHAPE, map[c->in[2]], &r,
                 fresh_name(g, h, base, "c11", buf, sizeof buf), d);
    if (t < 0)
      return -1;
    in[(*nin)++] = t;
  }
  const ir_body *b =
      biased_body(ir_body_get(nd->a.body), e->fbias[i], nd->nin, d);
  if (!b)
    return -1;
  a->body = b->id;
  return 0;
}

/* fused(op(in...), relu) for element-wise node nd and the relu after it. */
static const ir_body *relu_body(const ir_node *nd, base_diag *d) {
  ir_body_op ops[2];
  memset(ops, 0, sizeof ops);
  ops[0].op = nd->op;
  ops[0].nin = nd->nin;
  ops[0].a = nd->a;
  for (int k = 0; k < nd->nin; k++)
    ops[0].in[k] = -1 - k;
  ops[1].op = IR_OP_RELU;
  ops[1].nin = 1;
  ops[1].in[0] = 0;
  ir_attrs_default(IR_OP_RELU, &ops[1].a);
  return ir_body_intern(nd->nin, 2, ops, d);
}

/* Adds node i of g to h, with what was folded into it. */
static int copy_node(ir_graph *h, const epi *e, int i, int32_t *map,
                     base_diag *d) {
  const ir_graph *g = e->g;
  const ir_node *nd = &g->nodes[i];
  int32_t in[IR_MAX_IN];
  const char *outs[IR_MAX_LIST];
  for (int k = 0; k < nd->nin; k++)
    in[k] = map[nd->in[k]];
  int nin = e->nobias[i] ? 2 : nd->nin;
  if (e->zbias[i] && (in[nin++] = zero_bias(h, e, nd, d)) < 0)
    return -1;
  if (e->extra[i])
    in[nin++] = map[e->extra[i] - 1];
  if (e->clr[i] &&
      (in[nin++] = residual_view(h, e, nd, map[e->clr[i] - 1], d)) < 0)
    return -1;
  if (e->res[i] &&
      (in[nin++] = e->rview[i] ? residual_rows(h, e, nd, map[e->res[i] - 1], d)
                               : map[e->res[i] - 1]) < 0)
    return -1;
  const ir_node *w = &g->nodes[e->last[i]]; /* whose result i writes */
  for (int k = 0; k < nd->nout; k++)
    outs[k] = g->tensors[w->out[k]].name;
  ir_attrs a = nd->a;
  ir_opcode op = nd->op;
  if (e->fbias[i] && bias_inputs(h, e, i, in, &nin, &a, map, d))
    return -1;
  if (e->relu[i]) {
    const ir_body *b = relu_body(nd, d);
    if (!b)
      return -1;
    ir_attrs_default(IR_OP_FUSED, &a);
    a.body = b->id;
    op = IR_OP_FUSED;
  } else {
    if (a.act != e->act[i] && e->act[i] == IR_ACT_CLIP)
      a.lo = e->lo[i], a.hi = e->hi[i];
    a.act = e->act[i];
  }
  int node = ir_add_node(h, op, in, nin, &a, outs, d);
  if (node < 0)
    return -1;
  h->nodes[node].line = nd->line;
  h->nodes[node].col = nd->col;
  for (int k = 0; k < nd->nout; k++)
    map[w->out[k]] = map[nd->out[k]] = h->nodes[node].out[k];
  return 0;
}

/* Copies the nodes moved to follow node i (-1: the front), in order. */
static int copy_moved(ir_graph *h, const epi *e, int i, int32_t *map,
                      base_diag *d) {
  for (int k = i + 1; k < e->g->nnodes; k++)
    if (e->after[k] == i && copy_node(h, e, k, map, d))
      return -1;
  return 0;
}

/* ir_rebuild's step: node i of g, unless folded into another or moved,
 * then the nodes moved to follow it. */
static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int i,
                        int32_t *map, base_diag *d) {
  const epi *e = u;
  (void)g;
  if (i == 0 && copy_moved(h, e, -1, map, d))
    return -1;
  if (e->owner[i] < 0 && e->after[i] == STAYS && copy_node(h, e, i, map, d))
    return -1;
  return e->anchor[i] ? copy_moved(h, e, i, map, d) : 0;
}

ir_graph *lower_epi(const ir_graph *g, lower_stats *st, base_diag *d) {
  size_t nn = (size_t)g->nnodes + 1;
  epi e = {g,
           ir_read_counts(g),
           base_calloc(nn, 1),
           base_calloc(nn, sizeof(int32_t)),
           base_calloc(nn, sizeof(int32_t)),
           base_calloc(nn, sizeof(int32_t)),
           base_calloc(nn, sizeof(int32_t)),
           base_calloc(nn, sizeof(float)),
           base_calloc(nn, sizeof(float)),
           base_calloc(nn, 1),
           base_calloc(nn, 1),
           base_calloc(nn, sizeof(int32_t)),
           base_calloc(nn, sizeof(uint64_t)),
           base_calloc(nn, sizeof(int32_t)),
           base_calloc(nn, 1),
           0,
           base_calloc(nn, 1),
           base_calloc(nn, sizeof(int32_t)),
           base_calloc(nn, 1),
           base_calloc((size_t)g->ntensors + 1, 1)};
  ir_graph *h = NULL;
  if (!e.reads || !e.wonly || !e.extra || !e.last || !e.owner || !e.act ||
      !e.lo || !e.hi || !e.nobias || !e.relu || !e.clr || !e.fbias ||
      !e.after || !e.anchor || !e.zbias || !e.res || !e.rview || !e.cl) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto done;
  }
  ir_weight_only(g, e.wonly);
  maybe_cl(&e);
  int folded = 0;
  for (int i = 0; i < g->nnodes; i++) {
    e.last[i] = i;
    e.owner[i] = -1;
    e.act[i] = g->nodes[i].a.act;
    e.after[i] = STAYS;
  }
  for (int j = 0; j < g->nnodes; j++) {
    order_shortcut(&e, j); /* an order, not a fold */
    folded += fold_shortcut(&e, j) || fold_add(&e, j) || fold_act(&e, j) ||
              fold_ln_bias(&e, j) || fold_cl_residual(&e, j) ||
              fold_res(&e, j) || fold_fused_res(&e, j);
  }
  for (int j = 0; j < g->nnodes; j++) /* the convolutions settled */
    folded += fold_fused_bias(&e, j);
  h = ir_rebuild(g, rebuild_node, &e, d);
  if (h && st)
    st->epilogues += folded, st->shortcuts += e.shortcuts;
done:
  free(e.reads), free(e.wonly), free(e.extra), free(e.last), free(e.owner);
  free(e.act), free(e.lo), free(e.hi), free(e.nobias), free(e.relu);
  free(e.clr), free(e.fbias), free(e.after), free(e.anchor), free(e.zbias);
  free(e.res), free(e.rview), free(e.cl);
  return h;
}
