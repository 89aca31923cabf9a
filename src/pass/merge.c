/* merge.c: the sibling-merging pass (TASO's best-known rewrite): conv2d or
 * matmul nodes that read the same input with the same parameters become one
 * node on concatenated weights, followed by a split.
 *
 *   y_i = conv(x, w_i, b_i)  ->  y = conv(x, concat0(w_1..w_k),
 *                                          concat0(b_1..b_k));
 *                                y_1..y_k = split(y, axis 1)
 *   y_i = matmul(x, w_i, b_i) -> the same with w concatenated on axis 1
 *                                and y split on its last axis.
 *
 * The concatenations read only weights, so they are weight-only (free:
 * computed once when the weights are loaded). Convolutions must have
 * groups = 1 (each output channel then depends on all of x, so the channels
 * of the merged node are those of the siblings, in order); matmul weights
 * must be rank 2. Convolutions with smaller kernels (stride and dilation 1,
 * padding half the size difference smaller on every side, as SqueezeNet's
 * 1x1 and 3x3 expands) get their weights enlarged (zero-padded, centred:
 * TASO's enlarge) to the largest kernel first. Biases and activations are per
 * output channel / column, so they carry over. A group is merged only when the
 * cost function says the merged node and its split are cheaper than the
 * siblings. Like batch-norm folding, the pass is exact algebra checked by the
 * end-to-end check and by tests on the executor, not a Z3-proven rule.
 */
#include <stdlib.h>
#include <string.h>

#include "../rewrite/rewrite_int.h"
#include "pass.h"

#define MAX_GROUP IR_MAX_LIST /* split outputs */

typedef struct group {
  int n, anchor;           /* anchor: its parameters and kernel size */
  int32_t node[MAX_GROUP]; /* in graph order; node[0] is the first */
} group;

/* Is tensor t a weight or computed from weights only? */
static int weightish(const ir_graph *g, const uint8_t *wmask, int t) {
  const ir_tensor *x = &g->tensors[t];
  return x->kind == IR_T_WEIGHT || (x->kind == IR_T_VALUE && wmask[x->node]);
}

/* Can node i be merged with siblings at all? */
static int mergeable(const ir_graph *g, const uint8_t *wmask, int i) {
  const ir_node *n = &g->nodes[i];
  if (wmask[i] || n->nout != 1 || n->nin < 2 || n->nin > 3)
    return 0;
  for (int k = 1; k < n->nin; k++)
    if (!weightish(g, wmask, n->in[k]))
      return 0;
  if (n->op == IR_OP_CONV2D)
    return n->a.groups == 1;
  return n->op == IR_OP_MATMUL && g->tensors[n->in[1]].shape.rank == 2;
}

/* Parameters that must be equal in a group (the padding and the kernel
 * may differ between convolutions whose kernels are enlarged). */
static ir_attrs group_attrs(const ir_node *n) {
  ir_attrs a = n->a;
  if (n->op == IR_OP_CONV2D) {
    memset(a.pad, 0, sizeof a.pad);
    memset(a.kernel, 0, sizeof a.kernel);
    a.padmode = 0;
  }
  return a;
}

/* Can the kernel of conv a be enlarged (zero-padded, centred) to conv b's
 * with the same result? Stride and dilation 1, even size differences, and
 * padding that grows by half the difference on every side. */
static int enlargeable(const ir_graph *g, const ir_node *a, const ir_node *b) {
  const ir_shape *wa = &g->tensors[a->in[1]].shape,
                 *wb = &g->tensors[b->in[1]].shape;
  int64_t dh = wb->dim[2] - wa->dim[2], dw = wb->dim[3] - wa->dim[3];
  if (dh < 0 || dw < 0 || dh % 2 || dw % 2 || a->a.stride[0] != 1 ||
      a->a.stride[1] != 1 || a->a.dilation[0] != 1 || a->a.dilation[1] != 1)
    return 0;
  int64_t grow[4] = {dh / 2, dw / 2, dh / 2, dw / 2};
  for (int k = 0; k < 4; k++)
    if (a->a.pad[k] + grow[k] != b->a.pad[k])
      return 0;
  return 1;
}

/* Do i and j (both mergeable) fit in one group? For convolutions with
 * different kernels, one must be enlargeable to the other. */
static int siblings(const ir_graph *g, int i, int j) {
  const ir_node *a = &g->nodes[i], *b = &g->nodes[j];
  ir_attrs ka = group_attrs(a), kb = group_attrs(b);
  if (a->op != b->op || a->nin != b->nin || a->in[0] != b->in[0] ||
      memcmp(&ka, &kb, sizeof ka) != 0)
    return 0;
  const ir_shape *wa = &g->tensors[a->in[1]].shape,
                 *wb = &g->tensors[b->in[1]].shape;
  if (wa->rank != wb->rank)
    return 0;
  if (a->op == IR_OP_MATMUL)
    return wa->dim[0] == wb->dim[0];
  if (wa->dim[1] != wb->dim[1])
    return 0;
  if (wa->dim[2] == wb->dim[2] && wa->dim[3] == wb->dim[3])
    return memcmp(&a->a, &b->a, sizeof a->a) == 0;
  return enlargeable(g, a, b) || enlargeable(g, b, a);
}

/* The member whose kernel every other member's enlarges to (its
 * parameters become the merged node's); -1 when there is none. */
static int group_anchor(const ir_graph *g, const int32_t *node, int n) {
  for (int c = 0; c < n; c++) {
    const ir_node *x = &g->nodes[node[c]];
    int all = 1;
    for (int m = 0; all && m < n; m++) {
      const ir_node *y = &g->nodes[node[m]];
      const ir_shape *wx = &g->tensors[x->in[1]].shape,
                     *wy = &g->tensors[y->in[1]].shape;
      all = x->op == IR_OP_MATMUL ||
            (wx->dim[2] == wy->dim[2] && wx->dim[3] == wy->dim[3]) ||
            enlargeable(g, y, x);
    }
    if (all)
      return c;
  }
  return -1;
}

/* Groups of >= 2 siblings, each node in at most one. */
static int find_groups(const ir_graph *g, const uint8_t *wmask, group **out,
                       base_diag *d) {
  uint8_t *ok = base_calloc((size_t)g->nnodes + 1, 1);
  group *gr = base_malloc(sizeof *gr * ((size_t)g->nnodes / 2 + 1));
  if (!ok || !gr) {
    free(ok);
    free(gr);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return -1;
  }
  for (int i = 0; i < g->nnodes; i++)
    ok[i] = (uint8_t)mergeable(g, wmask, i);
  int ng = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (!ok[i])
      continue;
    group c = {1, 0, {i}};
    for (int j = i + 1; j < g->nnodes && c.n < MAX_GROUP; j++)
      if (ok[j] && siblings(g, i, j))
        c.node[c.n++] = j;
    if (c.n < 2 || (c.anchor = group_anchor(g, c.node, c.n)) < 0)
      continue; /* (kernels that do not nest: left alone) */
    for (int m = 1; m < c.n; m++)
      ok[c.node[m]] = 0;
    gr[ng++] = c;
  }
  free(ok);
  *out = gr;
  return ng;
}

/* ---- emitting
 * ------------------------------------------------------------------- */

/* Input slot k of the group's node m, its kernel enlarged to the anchor's
 * when it is a smaller convolution weight. */
static int member_input(rewrite_builder *b, const group *c, int m, int k,
                        const char *base) {
  const ir_graph *g = b->g;
  const ir_node *n = &g->nodes[c->node[m]], *a = &g->nodes[c->node[c->anchor]];
  int32_t t = b->map[n->in[k]];
  if (n->op != IR_OP_CONV2D || k != 1)
    return t;
  const ir_shape *w = &g->tensors[n->in[1]].shape,
                 *wa = &g->tensors[a->in[1]].shape;
  if (w->dim[2] == wa->dim[2] && w->dim[3] == wa->dim[3])
    return t;
  ir_attrs e;
  ir_attrs_default(IR_OP_ENLARGE, &e);
  e.kernel[0] = (int32_t)wa->dim[2];
  e.kernel[1] = (int32_t)wa->dim[3];
  int x = rewrite_build_node(b, IR_OP_ENLARGE, &t, 1, &e, base);
  return x < 0 ? -1 : b->h->nodes[x].out[0];
}

/* Concatenation of input slot k of the group's nodes along axis. */
static int emit_concat(rewrite_builder *b, const group *c, int k, int axis,
                       const char *base) {
  int32_t in[MAX_GROUP];
  for (int m = 0; m < c->n; m++)
    if ((in[m] = member_input(b, c, m, k, base)) < 0)
      return -1;
  ir_attrs a;
  ir_attrs_default(IR_OP_CONCAT, &a);
  a.axis = axis;
  int n = rewrite_build_node(b, IR_OP_CONCAT, in, c->n, &a, base);
  return n < 0 ? -1 : b->h->nodes[n].out[0];
}

/* The merged node and its split, the split's outputs taking the siblings'
 * output names. */
static base_status emit_group(rewrite_builder *b, const group *c) {
  const ir_graph *g = b->g;
  const ir_node *first = &g->nodes[c->node[0]];
  const ir_node *anchor = &g->nodes[c->node[c->anchor]];
  int conv = first->op == IR_OP_CONV2D;
  char base[300];
  snprintf(base, sizeof base, "%.200s.merged", g->tensors[first->out[0]].name);
  int32_t in[3] = {b->map[first->in[0]], -1, -1};
  in[1] = emit_concat(b, c, 1, conv ? 0 : 1, base);
  if (first->nin > 2 && in[1] >= 0)
    in[2] = emit_concat(b, c, 2, 0, base);
  if (in[1] < 0 || (first->nin > 2 && in[2] < 0))
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  char name[300];
  rewrite_fresh_name(g, b->h, base, &b->fresh, name, sizeof name);
  const char *np = name;
  int k = ir_add_node(b->h, first->op, in, first->nin, &anchor->a, &np, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  int32_t y = b->h->nodes[k].out[0];
  ir_attrs sa;
  ir_attrs_default(IR_OP_SPLIT, &sa);
  sa.axis = conv ? 1 : b->h->tensors[y].shape.rank - 1;
  sa.nlist = c->n;
  const char *outs[MAX_GROUP];
  for (int m = 0; m < c->n; m++) {
    const ir_tensor *t = &g->tensors[g->nodes[c->node[m]].out[0]];
    sa.list[m] = t->shape.dim[sa.axis];
    outs[m] = t->name;
  }
  k = ir_add_node(b->h, IR_OP_SPLIT, &y, 1, &sa, outs, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  for (int m = 0; m < c->n; m++)
    b->map[g->nodes[c->node[m]].out[0]] = b->h->nodes[k].out[m];
  return BASE_OK;
}

/* g with the groups whose take[] is set merged: weight-only nodes first,
 * then the others in order, each group emitted at its first node. */
static ir_graph *rebuild(const ir_graph *g, const uint8_t *wmask,
                         const group *gr, int ng, const uint8_t *take,
                         base_diag *d) {
  rewrite_builder b;
  int32_t *grp = base_malloc(sizeof(int32_t) * ((size_t)g->nnodes + 1));
  if (!grp || rewrite_build_begin(&b, g, NULL, d)) {
    free(grp);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  b.fresh = g->ntensors;
  for (int i = 0; i < g->nnodes; i++)
    grp[i] = -1;
  for (int k = 0; k < ng; k++)
    for (int m = 0; take[k] && m < gr[k].n; m++)
      grp[gr[k].node[m]] = m == 0 ? k : ng; /* ng: emitted with its group */
  int any = 0; /* with no group taken, g's order is kept */
  for (int k = 0; k < ng; k++)
    any |= take[k];
  base_status st = BASE_OK;
  for (int i = 0; any && !st && i < g->nnodes; i++)
    if (wmask[i])
      st = rewrite_build_copy(&b, i, NULL);
  for (int i = 0; !st && i < g->nnodes; i++) {
    if ((any && wmask[i]) || grp[i] == ng)
      continue;
    st = grp[i] >= 0 ? emit_group(&b, &gr[grp[i]])
                     : rewrite_build_copy(&b, i, NULL);
  }
  free(grp);
  return rewrite_build_finish(&b, st);
}

ir_graph *pass_merge_siblings(const ir_graph *g, cd_cost_fn f, void *u,
                              int *count, base_diag *d) {
  return pass_merge_siblings_except(g, NULL, f, u, count, d);
}

static int touches(const group *c, const uint8_t *skip) {
  for (int m = 0; skip && m < c->n; m++)
    if (skip[c->node[m]])
      return 1;
  return 0;
}

ir_graph *pass_merge_siblings_except(const ir_graph *g, const uint8_t *skip,
                                     cd_cost_fn f, void *u, int *count,
                                     base_diag *d) {
  *count = 0;
  uint8_t *wmask = base_calloc((size_t)g->nnodes + 1, 1);
  group *gr = NULL;
  if (!wmask) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  ir_weight_only(g, wmask);
  int ng = find_groups(g, wmask, &gr, d);
  uint8_t *take = ng >= 0 ? base_calloc((size_t)ng + 1, 1) : NULL;
  ir_graph *h = NULL;
  if (ng >= 0 && !take)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (take) {
    /* groups are disjoint and costs are per node: decide each alone, its
     * graph (with the groups taken before) against the graph before it */
    double c0, c1;
    int ok = !cd_sum_cost(g, f, u, &c0, NULL, d);
    for (int k = 0; ok && k < ng; k++) {
      if (touches(&gr[k], skip))
        continue; /* left to the search's rules */
      take[k] = 1;
      ir_graph *one = rebuild(g, wmask, gr, ng, take, d);
      take[k] = 0;
      ok = one && !cd_sum_cost(one, f, u, &c1, NULL, d);
      if (ok && c1 < c0 * (1 - 1e-9))
        take[k] = 1, ++*count, c0 = c1;
      ir_graph_free(one);
    }
    if (ok)
      h = rebuild(g, wmask, gr, ng, take, d);
    if (!ok)
      *count = 0;
  }
  free(take);
  free(gr);
  free(wmask);
  return h;
}
