/* lower_move.c: the lower stage's move family (lower.h): activations
 * applied by the concat or split that copies their input, and pads that
 * compute the slice reading them.
 *
 * Conditions (those the CUDA planner used when it made these folds
 * itself):
 *   - a relu reading a concat's result alone: the concat applies it as it
 *     copies (concat act=relu, the relu gone);
 *   - a relu reading part k of a split: the split writes the relu's result
 *     as an output (split act=relu acted=[...]): in place of the part where
 *     the relu alone reads it (acted 1), beside it otherwise (acted 2);
 *     one relu per part;
 *   - neither where the concat or split runs once at load (weight-only), nor
 *     where the relu's result must be NCHW on the GPU (a graph output, a
 *     convolution's filter or a reshape's input, with more than one
 *     spatial position): it would pin the whole concat or split to NCHW
 *     (the planner folded such a split part only where the split ran NCHW
 *     anyway, a layout choice the graph does not know);
 *   - a slice reading a pad's result alone (neither weight-only): one pad
 *     whose pads are the pad's less the slice's cuts (negative where it
 *     crops), the slice gone. The planner folded the pair only where the
 *     pad's input was stored in the pad's layout; the graph folds it
 *     always, and where the layouts differ the GPU converts the input
 *     first, as for any pad.
 */
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

typedef struct plan {
  const ir_graph *g;
  int *reads;
  unsigned char *wonly, *pin; /* per node; per tensor */
  int32_t *relu_of;           /* per tensor: the relu folded into its
                                 producer reading it, or -1 */
  unsigned char *gone;        /* per node: folded into another */
  int32_t *slice_of;          /* per node (a pad): the slice it computes */
} plan;

/* Rank 4 with more than one spatial position (the GPU's layouts differ). */
static int spatial(const ir_shape *s) {
  return s->rank == 4 && s->dim[2] * s->dim[3] > 1;
}

/* Tensors the GPU keeps NCHW (gpu_layout_pins): graph outputs,
 * convolution filters, reshape inputs. */
static void pins(const ir_graph *g, unsigned char *pin) {
  for (int i = 0; i < g->noutputs; i++)
    pin[g->outputs[i]] = 1;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    if (n->op == IR_OP_CONV2D && n->nin > 1)
      pin[n->in[1]] = 1;
    if (n->op == IR_OP_RESHAPE)
      pin[n->in[0]] = 1;
  }
}

/* The relu j into the concat or split producing its input, if it folds. */
static int fold_relu(plan *p, int j) {
  const ir_graph *g = p->g;
  const ir_node *r = &g->nodes[j];
  int x = r->in[0], y = r->out[0];
  if (g->tensors[x].kind != IR_T_VALUE || p->relu_of[x] >= 0)
    return 0;
  int i = g->tensors[x].node;
  const ir_node *m = &g->nodes[i];
  if (p->wonly[i] || (m->op != IR_OP_CONCAT && m->op != IR_OP_SPLIT) ||
      m->a.act != IR_ACT_NONE || (p->pin[y] && spatial(&g->tensors[y].shape)))
    return 0;
  if (m->op == IR_OP_CONCAT && p->reads[x] != 1)
    return 0;
  if (m->op == IR_OP_SPLIT) { /* one output more per part kept beside */
    int nout = m->nout;
    for (int k = 0; k < m->nout; k++)
      nout += p->relu_of[m->out[k]] >= 0 && p->reads[m->out[k]] > 1;
    if (p->reads[x] > 1 && nout + 1 > IR_MAX_LIST)
      return 0;
  }
  p->relu_of[x] = j;
  p->gone[j] = 1;
  return 1;
}

/* The slice i into the pad producing its input, if it folds. */
static int fold_slice(plan *p, int i) {
  const ir_graph *g = p->g;
  const ir_node *s = &g->nodes[i];
  int x = s->in[0];
  if (p->wonly[i] || g->tensors[x].kind != IR_T_VALUE || p->reads[x] != 1)
    return 0;
  int j = g->tensors[x].node;
  if (g->nodes[j].op != IR_OP_PAD || p->wonly[j] || p->slice_of[j] >= 0)
    return 0;
  p->slice_of[j] = i;
  p->gone[i] = 1;
  return 1;
}

/* The pad j with the slice it computes: out[q] = x[q + start - before]. */
static ir_attrs pad_sliced(const ir_graph *g, int j, int i) {
  const ir_node *pd = &g->nodes[j], *sl = &g->nodes[i];
  const ir_shape *padded = &g->tensors[pd->out[0]].shape;
  int r = padded->rank;
  ir_attrs a = pd->a;
  for (int k = 0; k < r; k++) {
    a.list[k] = pd->a.list[k] - sl->a.list[k];
    a.list[k + r] = pd->a.list[k + r] - (padded->dim[k] - sl->a.list2[k]);
  }
  return a;
}

/* Node n of g as it is emitted: its attributes and output names. */
static void emit_form(const plan *p, int n, ir_attrs *a, const char **outs,
                      int32_t *src) {
  const ir_graph *g = p->g;
  const ir_node *nd = &g->nodes[n];
  *a = nd->a;
  int o = 0;
  if (nd->op == IR_OP_PAD && p->slice_of[n] >= 0) {
    int i = p->slice_of[n];
    *a = pad_sliced(g, n, i);
    src[o] = g->nodes[i].out[0];
    outs[o++] = g->tensors[src[0]].name;
    return;
  }
  for (int k = 0; k < nd->nout; k++) {
    int t = nd->out[k], j = p->relu_of[t];
    int y = j >= 0 ? g->nodes[j].out[0] : -1;
    if (j >= 0)
      a->act = IR_ACT_RELU;
    if (nd->op == IR_OP_SPLIT)
      a->list2[k] = j < 0 ? 0 : p->reads[t] > 1 ? 2 : 1;
    if (j < 0 || p->reads[t] > 1) {
      src[o] = t;
      outs[o++] = g->tensors[t].name;
    }
    if (j >= 0) {
      src[o] = y;
      outs[o++] = g->tensors[y].name;
    }
  }
  if (nd->op == IR_OP_SPLIT)
    a->nlist2 = a->act != IR_ACT_NONE ? nd->nout : 0;
}

/* ir_rebuild's step: node n of g in its emitted form, unless gone. */
static int rebuild_node(void *u, ir_graph *h, const ir_graph *g, int n,
                        int32_t *map, base_diag *d) {
  const plan *p = u;
  const ir_node *nd = &g->nodes[n];
  if (p->gone[n])
    return 0;
  ir_attrs a;
  const char *outs[IR_MAX_LIST];
  int32_t src[IR_MAX_LIST], in[IR_MAX_IN];
  emit_form(p, n, &a, outs, src);
  for (int k = 0; k < nd->nin; k++)
    in[k] = map[nd->in[k]];
  int m = ir_add_node(h, nd->op, in, nd->nin, &a, outs, d);
  if (m < 0)
    return -1;
  h->nodes[m].line = nd->line;
  h->nodes[m].col = nd->col;
  for (int k = 0; k < h->nodes[m].nout; k++)
    map[src[k]] = h->nodes[m].out[k];
  return 0;
}

ir_graph *lower_move(const ir_graph *g, lower_stats *st, base_diag *d) {
  size_t nt = (size_t)g->ntensors + 1, nn = (size_t)g->nnodes + 1;
  plan p = {.g = g,
            .reads = ir_read_counts(g),
            .wonly = base_calloc(nn, 1),
            .pin = base_calloc(nt, 1),
            .relu_of = base_malloc(nt * sizeof(int32_t)),
            .gone = base_calloc(nn, 1),
            .slice_of = base_malloc(nn * sizeof(int32_t))};
  ir_graph *h = NULL;
  if (!p.reads || !p.wonly || !p.pin || !p.relu_of || !p.gone || !p.slice_of) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  memset(p.relu_of, 0xff, nt * sizeof(int32_t));
  memset(p.slice_of, 0xff, nn * sizeof(int32_t));
  ir_weight_only(g, p.wonly);
  pins(g, p.pin);
  int folds = 0;
  for (int j = 0; j < g->nnodes; j++) {
    if (g->nodes[j].op == IR_OP_RELU)
      folds += fold_relu(&p, j);
    else if (g->nodes[j].op == IR_OP_SLICE)
      folds += fold_slice(&p, j);
  }
  h = folds ? ir_rebuild(g, rebuild_node, &p, d) : ir_graph_clone_shared(g);
  if (!h && !folds)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (h && st)
    st->moves += folds;
out:
  free(p.reads), free(p.wonly), free(p.pin), free(p.relu_of), free(p.gone);
  free(p.slice_of);
  return h;
}
