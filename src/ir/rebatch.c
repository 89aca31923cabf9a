/* rebatch.c: a graph with another batch size (ir_rebatch).
 *
 * The batch dimension is dim 0 of the graph inputs: the old batch is the
 * first input's dim 0, and the copy gives every input whose dim 0 equals
 * it dim 0 = batch (an input with another dim 0 is a parameter fed as an
 * input, as ONNX exports without weights have them: convnext's biases and
 * layer scales) and re-runs every node's shape rule. The parameters
 * that carry the batch are those ops.def marks '^' (follows the batch):
 * their first entry follows when it equals the node's input's old dim 0
 * and, for an operator with starts, the range starts at 0: reshape's target
 * (the flatten and head-split reshapes of the zoo) and slice's ends (a
 * slice that keeps the whole batch). Anything else that pins the batch (a
 * reshape that folds it into another dimension, a weight combined with an
 * activation along dim 0) fails the shape rules and is reported with the
 * node's line.
 */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "ir.h"

/* The old batch: dim 0 of the first graph input (0 when it has none). */
static int64_t old_batch(const ir_graph *g) {
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind == IR_T_INPUT)
      return g->tensors[t].shape.rank ? g->tensors[t].shape.dim[0] : 0;
  return 0;
}

static int add_leaf(const ir_graph *g, int t, int64_t batch, ir_graph *h,
                    base_diag *d) {
  const ir_tensor *x = &g->tensors[t];
  ir_shape s = x->shape;
  if (x->kind == IR_T_INPUT) {
    if (s.rank < 1) {
      base_diag_set(d, BASE_ERR_SHAPE, x->line, x->col,
                    "cannot rebatch: input '%s' is a scalar", x->name);
      return -1;
    }
    if (s.dim[0] == old_batch(g))
      s.dim[0] = batch;
  }
  int id = ir_add_tensor(h, x->name, x->kind, &s, d);
  if (id >= 0)
    h->tensors[id].dtype = x->dtype;
  if (id >= 0 && x->data) {
    size_t n = sizeof(float) * (size_t)ir_shape_numel(&s);
    float *copy = base_arena_alloc(h->arena, n);
    if (!copy) {
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      return -1;
    }
    memcpy(copy, x->data, n);
    h->tensors[id].data = copy;
  }
  return id;
}

static int add_copy(const ir_graph *g, const ir_node *n, const int32_t *map,
                    ir_graph *h, base_diag *d) {
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++)
    in[k] = map[n->in[k]];
  for (int k = 0; k < n->nout; k++)
    names[k] = g->tensors[n->out[k]].name;
  ir_attrs a = n->a;
  int64_t old = g->tensors[n->in[0]].shape.dim[0];
  int64_t now = h->tensors[in[0]].shape.dim[0];
  /* the parameters that follow the batch ('^' in ops.def): their first
   * entry, where it is the whole batch (from 0, when there are starts) */
  const ir_opinfo *r = ir_op(n->op);
  int whole = ir_op_param_index(n->op, IR_P_STARTS) < 0 ||
              (a.nlist > 0 && a.list[0] == 0);
  for (int i = 0; whole && i < r->nparams; i++) {
    ir_param_kind k = ir_param_kind_of(r->params[i]);
    int32_t cnt = k == IR_PK_LIST ? a.nlist : k == IR_PK_LIST2 ? a.nlist2 : 0;
    int64_t *v = k == IR_PK_LIST ? a.list : a.list2;
    if ((r->ptraits[i] & IR_PT_BATCH) && cnt > 0 && v[0] == old)
      v[0] = now;
  }
  int id = ir_add_node(h, n->op, in, n->nin, &a, names, d);
  if (id < 0 && d) {
    char msg[sizeof d->msg];
    memcpy(msg, d->msg, sizeof msg);
    int k = snprintf(d->msg, sizeof d->msg,
                     "cannot rebatch %s: ", ir_op(n->op)->name);
    if (k > 0 && (size_t)k < sizeof d->msg)
      memcpy(d->msg + k, msg, sizeof d->msg - (size_t)k - 1);
    d->msg[sizeof d->msg - 1] = '\0';
    d->line = n->line;
    d->col = n->col;
  }
  return id;
}

base_status ir_rebatch(const ir_graph *g, int64_t batch, ir_graph **out,
                       base_diag *d) {
  *out = NULL;
  if (batch < 1)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "batch must be positive");
  ir_graph *h = ir_graph_new(g->name);
  int32_t *map = base_calloc((size_t)g->ntensors + 1, sizeof *map);
  base_status st =
      h && map ? BASE_OK
               : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int t = 0; !st && t < g->ntensors; t++)
    if (g->tensors[t].kind != IR_T_VALUE &&
        (map[t] = add_leaf(g, t, batch, h, d)) < 0)
      st = d ? d->code : BASE_ERR_INTERNAL;
  for (int i = 0; !st && i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int id = add_copy(g, n, map, h, d);
    if (id < 0)
      st = d ? d->code : BASE_ERR_INTERNAL;
    for (int k = 0; !st && k < n->nout; k++)
      map[n->out[k]] = h->nodes[id].out[k];
  }
  for (int i = 0; !st && i < g->noutputs; i++)
    st = ir_add_output(h, map[g->outputs[i]], d);
  free(map);
  if (st) {
    ir_graph_free(h);
    return st;
  }
  *out = h;
  return BASE_OK;
}
