/* lower_int.h: the lower stage's families (lower.h), one file each.
 *
 * Each takes a graph and returns a new one with its family lowered (it may
 * share g's weight values: lower_graph keeps g alive until the end), or
 * NULL with d set. A family with nothing to do returns a clone. */
#ifndef SUPEROPT_LOWER_INT_H
#define SUPEROPT_LOWER_INT_H

#include "lower.h"

ir_graph *lower_patch(const ir_graph *g, lower_stats *st, base_diag *d);
ir_graph *lower_epi(const ir_graph *g, lower_stats *st, base_diag *d);
ir_graph *lower_move(const ir_graph *g, lower_stats *st, base_diag *d);
ir_graph *lower_se(const ir_graph *g, lower_stats *st, base_diag *d);
ir_graph *lower_att(const ir_graph *g, lower_stats *st, base_diag *d);
/* (lower_att.c) row-layout nodes reading a split's parts in place */
ir_graph *lower_rows(const ir_graph *g, lower_stats *st, base_diag *d);
ir_graph *lower_seq(const ir_graph *g, lower_stats *st, base_diag *d);
ir_graph *lower_chain(const ir_graph *g, lower_stats *st, base_diag *d);

/* ir_rebuild's step for a family: node n of g added to h as one op reading
 * in[0..nin) with attributes a, under n's output name and at n's line:col,
 * map taking n's output to its. 0, or -1 with d set. */
int lower_emit(ir_graph *h, const ir_graph *g, int n, ir_opcode op,
               const int32_t *in, int nin, const ir_attrs *a, int32_t *map,
               base_diag *d);

#endif
