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
 *
 * The conditions are those the executor's planner used when it folded
 * these privately (the add alone reads the product, which has no
 * activation and is not weight-only; the other operand has the add's shape
 * and exists before the product runs; a matmul's rank-4 result with
 * H * W > 1, a channels-last candidate, takes no residual; the bias the
 * matmul's bias epilogue takes is a vector [N]). A residual needs a bias
 * before it (ops.def: optional inputs are trailing), so a product without
 * one keeps its add. A clip folds into a convolution only (its bias
 * kernel clamps), a relu into either.
 */
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
} epi;

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
      e->reads[t] != 1 || e->extra[c] || e->wonly[c] ||
      !ir_shape_eq(&x->shape, o) || (rt->kind == IR_T_VALUE && rt->node > c))
    return 0;
  int64_t nn = o->rank ? o->dim[o->rank - 1] : 1;
  if (cn->op == IR_OP_MATMUL && cn->nin == 2 && rt->shape.rank == 1 &&
      rt->shape.dim[0] == nn && !ir_shape_eq(&rt->shape, o)) {
    *isbias = 1;
    return 1;
  }
  *isbias = 0;
  return cn->nin == 3 && ir_shape_eq(&rt->shape, o) &&
         !(cn->op == IR_OP_MATMUL && o->rank == 4 && o->dim[2] * o->dim[3] > 1);
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
    e->extra[c] = 1 + n->in[1 - k];
    e->last[c] = j;
    e->owner[j] = c;
    return 1;
  }
  return 0;
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

/* Copies g's inputs and weights into h (values shared), map[t] their
 * indices in h. */
static int copy_leaves(ir_graph *h, const ir_graph *g, int32_t *map,
                       base_diag *d) {
  for (int t = 0; t < g->ntensors; t++) {
    const ir_tensor *src = &g->tensors[t];
    if (src->kind == IR_T_VALUE)
      continue;
    if ((map[t] = ir_add_tensor(h, src->name, src->kind, &src->shape, d)) < 0)
      return -1;
    ir_tensor *dst = &h->tensors[map[t]];
    dst->dtype = src->dtype;
    dst->line = src->line;
    dst->col = src->col;
    dst->data = src->data;
  }
  return 0;
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
  if (e->extra[i])
    in[nin++] = map[e->extra[i] - 1];
  const ir_node *w = &g->nodes[e->last[i]]; /* whose result i writes */
  for (int k = 0; k < nd->nout; k++)
    outs[k] = g->tensors[w->out[k]].name;
  ir_attrs a = nd->a;
  if (a.act != e->act[i] && e->act[i] == IR_ACT_CLIP)
    a.lo = e->lo[i], a.hi = e->hi[i];
  a.act = e->act[i];
  int node = ir_add_node(h, nd->op, in, nin, &a, outs, d);
  if (node < 0)
    return -1;
  h->nodes[node].line = nd->line;
  h->nodes[node].col = nd->col;
  for (int k = 0; k < nd->nout; k++)
    map[w->out[k]] = map[nd->out[k]] = h->nodes[node].out[k];
  return 0;
}

static ir_graph *build(const epi *e, base_diag *d) {
  const ir_graph *g = e->g;
  ir_graph *h = ir_graph_new(g->name);
  int32_t *map = base_calloc((size_t)g->ntensors + 1, sizeof *map);
  int ok = h && map && !copy_leaves(h, g, map, d);
  for (int i = 0; ok && i < g->nnodes; i++)
    ok = e->owner[i] >= 0 || !copy_node(h, e, i, map, d);
  for (int i = 0; ok && i < g->noutputs; i++)
    ok = !ir_add_output(h, map[g->outputs[i]], d);
  if (!h || !map)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  free(map);
  if (!ok) {
    ir_graph_free(h);
    return NULL;
  }
  return h;
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
           base_calloc(nn, 1)};
  ir_graph *h = NULL;
  if (!e.reads || !e.wonly || !e.extra || !e.last || !e.owner || !e.act ||
      !e.lo || !e.hi || !e.nobias) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto done;
  }
  ir_weight_only(g, e.wonly);
  int folded = 0;
  for (int i = 0; i < g->nnodes; i++) {
    e.last[i] = i;
    e.owner[i] = -1;
    e.act[i] = g->nodes[i].a.act;
  }
  for (int j = 0; j < g->nnodes; j++)
    folded += fold_add(&e, j) || fold_act(&e, j) || fold_ln_bias(&e, j);
  h = build(&e, d);
  if (h && st)
    st->epilogues += folded;
done:
  free(e.reads), free(e.wonly), free(e.extra), free(e.last), free(e.owner);
  free(e.act), free(e.lo), free(e.hi), free(e.nobias);
  return h;
}
