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

typedef struct msearch {
  const srch_options *o; /* the search's options (cost model) */
  unsigned mask;
  uint64_t seed;
  mutant_apply_stats *total;
  base_status cost_st; /* the cost model's first error */
  base_diag cost_d;
} msearch;

/* mutant_apply prices with a plain double; the cost model's first error is
 * kept (the node priced out of reach) and returned after the region. */
static double region_cost(void *u, const ir_graph *g, int node) {
  msearch *m = u;
  double c = 0;
  base_diag d;
  base_status st = m->o->cost(m->o->cost_u, g, node, &c, NULL, &d);
  if (st && !m->cost_st) {
    m->cost_st = st;
    m->cost_d = d;
  }
  return st ? 1e12 : c;
}

/* Adds one region's stats to the total. */
static base_status merge_stats(mutant_apply_stats *t, mutant_apply_stats *r,
                               base_diag *d) {
  t->considered += r->considered;
  t->overlapping += r->overlapping;
  t->not_cheaper += r->not_cheaper;
  t->refused += r->refused;
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
  msearch *m = u;
  mutant_apply_stats rs;
  ir_graph *h = NULL;
  base_status st =
      mutant_apply(best, m->mask, m->seed, region_cost, m, &h, &rs, d);
  if (st)
    return st;
  if (m->cost_st) {
    *d = m->cost_d;
    st = m->cost_st;
  }
  if (!st)
    st = merge_stats(m->total, &rs, d);
  if (!st && rs.napplied)
    *out = h, h = NULL;
  ir_graph_free(h);
  mutant_apply_stats_free(&rs);
  return st;
}

ir_graph *mutant_optimize(const ir_graph *g, const rewrite_rules *rules,
                          const srch_options *o, unsigned mask, uint64_t seed,
                          srch_stats *st, mutant_apply_stats *ms,
                          base_diag *d) {
  memset(ms, 0, sizeof *ms);
  msearch m = {o, mask, seed, ms, BASE_OK, {0}};
  srch_options so = *o;
  if (mask) {
    so.region_fn = region_hook;
    so.region_u = &m;
  }
  ir_graph *h = srch_optimize(g, rules, &so, st, d);
  if (!h)
    mutant_apply_stats_free(ms);
  return h;
}
