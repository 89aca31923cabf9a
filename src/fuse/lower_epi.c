/* lower_epi.c: the lower stage's epi family (lower.h). Not written yet:
 * returns the graph unchanged. */
#include "lower_int.h"

ir_graph *lower_epi(const ir_graph *g, lower_stats *st, base_diag *d) {
  (void)st;
  ir_graph *h = ir_graph_clone_shared(g);
  if (!h)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return h;
}
