/* rebuild.c: ir_rebuild, a graph rebuilt node by node into a new one
 * through a tensor map (the lower stage's families and ir_graph_unfuse),
 * and ir_rebuild_copy, a node copied as it is. */
#include <stdlib.h>

#include "ir_int.h"

int ir_rebuild_copy(ir_graph *h, const ir_graph *g, int n, int32_t *map,
                    base_diag *d) {
  const ir_node *nd = &g->nodes[n];
  int32_t in[IR_MAX_IN];
  const char *outs[IR_MAX_LIST];
  for (int k = 0; k < nd->nin; k++)
    in[k] = map[nd->in[k]];
  for (int k = 0; k < nd->nout; k++)
    outs[k] = g->tensors[nd->out[k]].name;
  int node = ir_add_node(h, nd->op, in, nd->nin, &nd->a, outs, d);
  if (node < 0)
    return -1;
  h->nodes[node].line = nd->line;
  h->nodes[node].col = nd->col;
  for (int k = 0; k < nd->nout; k++)
    map[nd->out[k]] = h->nodes[node].out[k];
  return node;
}

/* g's inputs and weights into h, values shared. */
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

ir_graph *ir_rebuild(const ir_graph *g, ir_rebuild_fn fn, void *u,
                     base_diag *d) {
  ir_graph *h = ir_graph_new(g->name);
  int32_t *map = base_calloc((size_t)g->ntensors + 1, sizeof *map);
  int ok = h && map;
  if (!ok)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  ok = ok && !copy_leaves(h, g, map, d);
  for (int n = 0; ok && n < g->nnodes; n++)
    ok = fn(u, h, g, n, map, d) >= 0;
  for (int i = 0; ok && i < g->noutputs; i++)
    ok = !ir_add_output(h, map[g->outputs[i]], d);
  free(map);
  if (!ok) {
    ir_graph_free(h);
    return NULL;
  }
  return h;
}
