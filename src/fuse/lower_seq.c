/* lower_seq.c: the lower stage's seq-first family (lower.h): the transpose
 * to torch's sequence-first layout before a projection that only a
 * seq-first attention reads, gone.
 *
 *   t = transpose(x [B,S,C]) perm=[1,0,2]      (torch MHA, ViT-B/16)
 *   p = matmul(t, w, b?)  [S,B,N]               p = matmul(x, w, b?) [B,S,N]
 *   attention(p, p, p, ...) seqfirst=1    ->    attention(p, p, p, ...)
 *
 * A matmul with a shared [C,N] weight is row-wise: transposing its input's
 * rows transposes its result's, so the projection runs on x's rows and the
 * attention (lower_att.c's row layout, heads=) reads them batch-first; its
 * result [B,S,H*E] is the same either way. Lowered where the transpose is
 * read by the matmul alone, the matmul (no residual input) by the
 * attention alone as its q, k and v, nothing of them weight-only.
 */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

typedef struct seq {
  const ir_graph *g;
  int *reads;
  unsigned char *wonly;
  unsigned char *gone; /* per node: the transpose dropped */
  unsigned char *flip; /* per node: the matmul reading x, or the attention
                          reading batch-first */
} seq;

/* The transpose [1,0,2] node matmul node m reads (m row-wise: a shared
 * [C,N] weight, no residual), read by m alone; -1 if none. */
static int seq_transpose(const seq *s, int m) {
  const ir_graph *g = s->g;
  const ir_node *mn = &g->nodes[m];
  if (mn->op != IR_OP_MATMUL || mn->nin > 3 || s->wonly[m] ||
      g->tensors[mn->in[1]].shape.rank != 2)
    return -1;
  const ir_tensor *t = &g->tensors[mn->in[0]];
  if (t->kind != IR_T_VALUE || s->reads[mn->in[0]] != 1 || t->shape.rank != 3)
    return -1;
  const ir_node *tn = &g->nodes[t->node];
  if (tn->op != IR_OP_TRANSPOSE || s->wonly[t->node] || tn->a.nlist != 3 ||
      tn->a.list[0] != 1 || tn->a.list[1] != 0 || tn->a.list[2] != 2)
    return -1;
  return t->node;
}

/* Attention node j, seq-first, reading one projection p as q, k and v. */
static int fold_seq(seq *s, int j) {
  const ir_graph *g = s->g;
  const ir_node *n = &g->nodes[j];
  if (n->op != IR_OP_ATTENTION || n->a.groups <= 0 || !n->a.axis ||
      n->in[1] != n->in[0] || n->in[2] != n->in[0] || s->wonly[j])
    return 0;
  const ir_tensor *p = &g->tensors[n->in[0]];
  if (p->kind != IR_T_VALUE || s->reads[n->in[0]] != 3)
    return 0;
  int t = seq_transpose(s, p->node);
  if (t < 0)
    return 0;
  s->gone[t] = 1;
  s->flip[p->node] = s->flip[j] = 1;
  return 1;
}

static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int i,
                        int32_t *map, base_diag *d) {
  const seq *s = u;
  const ir_node *nd = &g->nodes[i];
  if (s->gone[i])
    return 0;
  if (!s->flip[i])
    return ir_rebuild_copy(h, g, i, map, d) < 0 ? -1 : 0;
  int32_t in[IR_MAX_IN];
  for (int k = 0; k < nd->nin; k++)
    in[k] = map[nd->in[k]];
  ir_attrs a = nd->a;
  if (nd->op == IR_OP_MATMUL) /* x: the transpose's input */
    in[0] = map[g->nodes[g->tensors[nd->in[0]].node].in[0]];
  else
    a.axis = 0; /* seqfirst */
  return lower_emit(h, g, i, nd->op, in, nd->nin, &a, map, d);
}

ir_graph *lower_seq(const ir_graph *g, lower_stats *st, base_diag *d) {
  size_t nn = (size_t)g->nnodes + 1;
  seq s = {g, ir_read_counts(g), base_calloc(nn, 1), base_calloc(nn, 1),
           base_calloc(nn, 1)};
  ir_graph *h = NULL;
  if (!s.reads || !s.wonly || !s.gone || !s.flip) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  ir_weight_only(g, s.wonly);
  int folds = 0;
  for (int j = 0; j < g->nnodes; j++)
    folds += fold_seq(&s, j);
  h = folds ? ir_rebuild(g, rebuild_node, &s, d) : ir_graph_clone_shared(g);
  if (!h && !folds)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st)
    st->moves += folds;
out:
  free(s.reads), free(s.wonly), free(s.gone), free(s.flip);
  return h;
}
