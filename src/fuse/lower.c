/* lower.c: lower_graph, the families of lower_int.h run in turn, and
 * lower_emit, the node-adding step they share. */
#include <string.h>

#include "lower_int.h"

typedef ir_graph *(*lower_fn)(const ir_graph *g, lower_stats *st, base_diag *d);

static const lower_fn families[] = {lower_patch, lower_epi,  lower_move,
                                    lower_se,    lower_att,  lower_rows,
                                    lower_seq,   lower_chain};

int lower_emit(ir_graph *h, const ir_graph *g, int n, ir_opcode op,
               const int32_t *in, int nin, const ir_attrs *a, int32_t *map,
               base_diag *d) {
  const ir_node *nd = &g->nodes[n];
  const char *out = g->tensors[nd->out[0]].name;
  int m = ir_add_node(h, op, in, nin, a, &out, d);
  if (m < 0)
    return -1;
  h->nodes[m].line = nd->line;
  h->nodes[m].col = nd->col;
  map[nd->out[0]] = h->nodes[m].out[0];
  return 0;
}

ir_graph *lower_graph(const ir_graph *g, lower_stats *st, base_diag *d) {
  lower_stats local;
  if (!st)
    st = &local;
  memset(st, 0, sizeof *st);
  ir_graph *cur = NULL; /* NULL: g itself */
  for (size_t k = 0; k < sizeof families / sizeof *families; k++) {
    ir_graph *next = families[k](cur ? cur : g, st, d);
    if (!next) {
      ir_graph_free(cur);
      return NULL;
    }
    if (cur && ir_graph_own_data(next, d)) { /* next may share cur's */
      ir_graph_free(next);
      ir_graph_free(cur);
      return NULL;
    }
    ir_graph_free(cur);
    cur = next;
  }
  return cur;
}
