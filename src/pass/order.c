/* order.c: node order for the executor: short branches first.
 *
 * A ResNet block with a projection shortcut ends in ewadd(b, s): b the
 * last convolution of the main chain, s the shortcut's one convolution
 * of the block's input. Exported graphs (and the search's rebuilds) list s
 * after the chain, so the lower stage, which folds the add into the operand
 * whose other operand is already computed (src/fuse/lower_epi.c: a residual
 * input), folds it into s: s then waits for the whole chain and nothing runs
 * side by side. With s moved to right after its inputs, the add folds into b
 * and s runs on a second stream beside the chain (src/gpu/sched.c).
 *
 * Only the order changes (every node still after its inputs): the graph
 * computes the same values. A node moved is a convolution or matmul that
 * an add reads beside another one A, A with no activation and read by the
 * add alone (so the add can fold into A), whose last input is computed
 * before A's last input is (so it can move ahead of A's chain).
 */
#include <stdlib.h>

#include "../rewrite/rewrite.h"
#include "pass.h"

static int is_mm(const ir_node *n) {
  return n->op == IR_OP_CONV2D || n->op == IR_OP_MATMUL;
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

#define STAYS (-2) /* after[i]: node i is not moved */

/* after[i] = the node the moved node i follows (-1: the first nodes). A
 * node some node is moved to follow (anchor[]) is not moved itself, nor is
 * a node moved to follow a moved one: each stays after all its inputs. */
static int plan_moves(const ir_graph *g, const int *reads, int32_t *after,
                      uint8_t *anchor) {
  int moved = 0;
  for (int i = 0; i < g->nnodes; i++)
    after[i] = STAYS;
  for (int j = 0; j < g->nnodes; j++) {
    const ir_node *n = &g->nodes[j];
    if (n->op != IR_OP_EWADD || n->nin != 2 || n->in[0] == n->in[1])
      continue;
    const ir_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->in[1]];
    if (x->kind != IR_T_VALUE || y->kind != IR_T_VALUE)
      continue;
    int a = x->node < y->node ? x->node : y->node;
    int s = x->node < y->node ? y->node : x->node;
    const ir_node *an = &g->nodes[a], *sn = &g->nodes[s];
    int ds = last_dep(g, s);
    if (!is_mm(an) || !is_mm(sn) || an->a.act != IR_ACT_NONE || an->nout != 1 ||
        reads[an->out[0]] != 1 || after[s] != STAYS || after[a] != STAYS ||
        ds >= last_dep(g, a) || anchor[s] || (ds >= 0 && after[ds] != STAYS))
      continue;
    after[s] = ds;
    if (ds >= 0)
      anchor[ds] = 1;
    moved++;
  }
  return moved;
}

/* Copies node i (unless i is -1), then the nodes moved to follow it
 * (first[i + 1], then next[k] after k). */
static base_status emit(rewrite_builder *b, const int32_t *first,
                        const int32_t *next, int i) {
  base_status st = i >= 0 ? rewrite_build_copy(b, i, NULL) : BASE_OK;
  for (int k = first[i + 1]; !st && k >= 0; k = next[k])
    st = rewrite_build_copy(b, k, NULL);
  return st;
}

ir_graph *pass_order_branches(const ir_graph *g, int *count, base_diag *d) {
  int n = g->nnodes;
  int *reads = ir_read_counts(g);
  int32_t *after = base_malloc(sizeof *after * ((size_t)n + 1));
  int32_t *first = base_malloc(sizeof *first * ((size_t)n + 2));
  int32_t *next = base_malloc(sizeof *next * ((size_t)n + 1));
  uint8_t *anchor = base_calloc((size_t)n + 1, 1);
  rewrite_builder b;
  ir_graph *h = NULL;
  *count = 0;
  if (!reads || !after || !first || !next || !anchor) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  *count = plan_moves(g, reads, after, anchor);
  for (int i = 0; i <= n; i++)
    first[i] = -1;
  for (int k = n - 1; k >= 0; k--) /* each list in graph order */
    if (after[k] != STAYS) {
      next[k] = first[after[k] + 1];
      first[after[k] + 1] = k;
    }
  if (rewrite_build_begin(&b, g, NULL, d))
    goto out;
  base_status st = emit(&b, first, next, -1);
  for (int i = 0; !st && i < n; i++)
    if (after[i] == STAYS)
      st = emit(&b, first, next, i);
  h = rewrite_build_finish(&b, st);
out:
  free(reads), free(after), free(first), free(next), free(anchor);
  return h;
}

base_status pass_order_apply(ir_graph **g, int *count, base_diag *d) {
  ir_graph *h = pass_order_branches(*g, count, d);
  if (!h) /* d says why (NULL d: the only failure left is memory) */
    return d ? d->code : BASE_ERR_NOMEM;
  if (!*count) { /* nothing moved: keep *g */
    ir_graph_free(h);
    return BASE_OK;
  }
  return ir_graph_replace(g, h, d);
}
