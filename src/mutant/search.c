/* search.c: mutants join the optimizer's search (mutant_optimize).
 *
 * srch_optimize cuts the graph into regions and searches each with the
 * proven rules; in its last pass it hands every region's best graph to
 * srch_options.region_fn. Here that hook is mutant_apply on the region under
 * the search's own cost model (cd_cost_fn): a mutant is taken only when g
 * plus its correction costs less than f there, so mutants, corrections and
 * rules compete under one cost model, one region (partition) at a time, as
 * PET does. Working per region keeps every splice and box analysis local,
 * and the result deterministic for a seed (regions in order, mutants in
 * generation order).
 */
#include <stdlib.h>
#include <string.h>

#include "mutant_int.h"

/* Adds one region's stats to the total. */
static base_status merge_stats(mutant_apply_stats *t, mutant_apply_stats *r,
                               base_diag *d) {
  t->considered += r->considered;
  t->overlapping += r->overlapping;
  t->not_cheaper += r->not_cheaper;
  t->refused += r->refused;
  t->unmeasured += r->unmeasured;
  if (!r->napplied)
    return BASE_OK;
  mutant_applied *v =
      base_realloc(t->applied, sizeof *v * (size_t)(t->napplied + r->napplied));
  if (!v)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  memcpy(v + t->napplied, r->applied, sizeof *v * (size_t)r->napplied);
  t->applied = v;
  t->napplied += r->napplied;
  return BASE_OK;
}

static base_status region_hook(void *u, const ir_graph *best, ir_graph **out,
                               base_diag *d) {
  mutant_search *m = u;
  mutant_apply_stats rs;
  ir_graph *h = NULL;
  /* the search's cost model as is: a cost error fails the region, and so
   * the search, with its message */
  base_status st =
      mutant_apply(best, m->mask, m->seed, m->cost, m->cost_u, &h, &rs, d);
  if (st)
    return st;
  st = merge_stats(m->total, &rs, d);
  if (!st && rs.napplied)
    *out = h, h = NULL;
  ir_graph_free(h);
  mutant_apply_stats_free(&rs);
  return st;
}

void mutant_search_attach(srch_options *so, mutant_search *m, unsigned mask,
                          uint64_t seed, mutant_apply_stats *ms) {
  memset(ms, 0, sizeof *ms);
  *m = (mutant_search){so->cost, so->cost_u, mask, seed, ms};
  if (mask) {
    so->region_fn = region_hook;
    so->region_u = m;
  }
}

ir_graph *mutant_optimize(const ir_graph *g, const rewrite_rules *rules,
                          const srch_options *o, unsigned mask, uint64_t seed,
                          srch_stats *st, mutant_apply_stats *ms,
                          base_diag *d) {
  mutant_search m;
  srch_options so = *o;
  mutant_search_attach(&so, &m, mask, seed, ms);
  ir_graph *h = srch_optimize(g, rules, &so, st, d);
  if (!h)
    mutant_apply_stats_free(ms);
  return h;
}
