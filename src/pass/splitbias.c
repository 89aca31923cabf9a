/* splitbias.c: a merged projection's biases into its matmul.
 *
 * Sibling merging (merge.c) makes BERT's query, key and value projections
 * one matmul on concatenated weights and a split along the last axis; the
 * exported bias adds stay after the split, one ewadd(b_i, part_i) a part:
 * three element-wise launches a layer. Where every part of such a split is
 * read by one bias add alone (b_i a vector [n_i] of the part's width, a
 * weight or computed from weights only before the matmul) and the matmul (no
 * bias, no activation, no residual) is read by the split alone, the biases are
 * concatenated by a weight-only node and become the matmul's bias; the split's
 * outputs take the adds' names. The same sums in the same order (the matmul
 * adds its bias to each finished product).
 */
#include <stdlib.h>

#include "../rewrite/rewrite_int.h"
#include "pass.h"

/* Split node j's site: its parts' bias adds into add[] (by part) and each
 * bias into bias[]; 1 when it folds. */
static int site(const ir_graph *g, const rewrite_index *ix,
                const uint8_t *wonly, int j, int *add, int32_t *bias) {
  const ir_node *s = &g->nodes[j];
  if (s->op != IR_OP_SPLIT || s->a.act != IR_ACT_NONE || s->nout < 2)
    return 0;
  const ir_tensor *x = &g->tensors[s->in[0]];
  int r = x->shape.rank;
  if (x->kind != IR_T_VALUE || s->a.axis != r - 1 ||
      rewrite_sole_reader(ix, s->in[0]) != j)
    return 0;
  const ir_node *m = &g->nodes[x->node];
  if (m->op != IR_OP_MATMUL || m->nin != 2 || m->a.act != IR_ACT_NONE ||
      wonly[x->node])
    return 0;
  for (int k = 0; k < s->nout; k++) {
    int a = rewrite_sole_reader(ix, s->out[k]);
    if (a < 0 || g->nodes[a].op != IR_OP_EWADD)
      return 0;
    const ir_node *an = &g->nodes[a];
    int32_t b = an->in[0] == s->out[k] ? an->in[1] : an->in[0];
    const ir_tensor *bt = &g->tensors[b];
    if (an->in[0] == an->in[1] || bt->shape.rank != 1 ||
        bt->shape.dim[0] != s->a.list[k] || bt->dtype != IR_DT_F32 ||
        bt->kind == IR_T_INPUT ||
        (bt->kind == IR_T_VALUE && (!wonly[bt->node] || bt->node > x->node)))
      return 0;
    add[k] = a, bias[k] = b;
  }
  return 1;
}

/* Emits site j's matmul (node i) with the concatenated bias, and the split
 * writing the adds' outputs. */
static base_status emit(rewrite_builder *b, int i, int j, const int *add,
                        const int32_t *bias) {
  const ir_graph *g = b->g;
  const ir_node *s = &g->nodes[j], *m = &g->nodes[i];
  int32_t in[IR_MAX_LIST];
  for (int k = 0; k < s->nout; k++)
    in[k] = b->map[bias[k]];
  ir_attrs a;
  ir_attrs_default(IR_OP_CONCAT, &a);
  a.axis = 0;
  int c = rewrite_build_node(b, IR_OP_CONCAT, in, s->nout, &a,
                             g->tensors[m->out[0]].name);
  if (c < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  int32_t mi[3] = {b->map[m->in[0]], b->map[m->in[1]], b->h->nodes[c].out[0]};
  const char *mo = g->tensors[m->out[0]].name;
  int k = ir_add_node(b->h, IR_OP_MATMUL, mi, 3, &m->a, &mo, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  b->h->nodes[k].line = m->line, b->h->nodes[k].col = m->col;
  b->map[m->out[0]] = b->h->nodes[k].out[0];
  const char *names[IR_MAX_LIST];
  for (int u = 0; u < s->nout; u++)
    names[u] = g->tensors[g->nodes[add[u]].out[0]].name;
  int32_t x = b->map[s->in[0]];
  k = ir_add_node(b->h, IR_OP_SPLIT, &x, 1, &s->a, names, b->d);
  if (k < 0)
    return b->d ? b->d->code : BASE_ERR_INTERNAL;
  b->h->nodes[k].line = s->line, b->h->nodes[k].col = s->col;
  for (int u = 0; u < s->nout; u++)
    b->map[g->nodes[add[u]].out[0]] = b->h->nodes[k].out[u];
  return BASE_OK;
}

ir_graph *pass_split_bias(const ir_graph *g, int *count, base_diag *d) {
  rewrite_index ix;
  int *role = base_malloc(sizeof(int) * ((size_t)g->nnodes + 1));
  int *adds = base_malloc(sizeof(int) * ((size_t)g->nnodes + 1) * IR_MAX_LIST);
  int32_t *bias =
      base_malloc(sizeof(int32_t) * ((size_t)g->nnodes + 1) * IR_MAX_LIST);
  uint8_t *wonly = base_calloc((size_t)g->nnodes + 1, 1);
  rewrite_builder b;
  *count = 0;
  if (!role || !adds || !bias || !wonly || rewrite_index_build(g, &ix, d)) {
    free(role), free(adds), free(bias), free(wonly);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  ir_weight_only(g, wonly);
  /* role: -1 copied, -2 dropped (a folded add), >= 0 a matmul whose site
   * is that split, -3 that split (emitted with its matmul) */
  for (int i = 0; i < g->nnodes; i++)
    role[i] = -1;
  for (int j = 0; j < g->nnodes; j++) {
    int *a = adds + (size_t)j * IR_MAX_LIST;
    int32_t *bs = bias + (size_t)j * IR_MAX_LIST;
    if (!site(g, &ix, wonly, j, a, bs))
      continue;
    int mm = g->tensors[g->nodes[j].in[0]].node;
    role[mm] = j, role[j] = -3;
    for (int k = 0; k < g->nodes[j].nout; k++)
      role[a[k]] = -2;
    ++*count;
  }
  rewrite_index_free(&ix);
  base_status st = rewrite_build_begin(&b, g, NULL, d);
  if (st) {
    free(role), free(adds), free(bias), free(wonly);
    return NULL;
  }
  for (int i = 0; i < g->nnodes && !st; i++) {
    if (role[i] >= 0)
      st = emit(&b, i, role[i], adds + (size_t)role[i] * IR_MAX_LIST,
                bias + (size_t)role[i] * IR_MAX_LIST);
    else if (role[i] == -1)
      st = rewrite_build_copy(&b, i, NULL);
  }
  free(role), free(adds), free(bias), free(wonly);
  return rewrite_build_finish(&b, st);
}
