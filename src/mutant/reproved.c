/* reproved.c: the optimizer whose applied rules are proven again
 * (mutant_optimize_reproved): a rule labelled proven that the verifier does
 * not prove is demoted by rewrite_reprove, and the search, which may have
 * built on it, runs again without it (docs/reliability.md). */
#include "mutant_int.h"

ir_graph *mutant_optimize_reproved(const ir_graph *g, rewrite_rules *rules,
                                   rewrite_rules *pass_rules,
                                   const srch_options *o, unsigned mask,
                                   uint64_t seed, srch_stats *st,
                                   mutant_apply_stats *ms, rewrite_reproof *rp,
                                   base_diag *d) {
  for (;;) {
    int demoted = 0;
    ir_graph *h = mutant_optimize(g, rules, o, mask, seed, st, ms, d);
    if (h && rewrite_reprove(rp, rules, pass_rules, st->applied_fw,
                             st->applied_bw, &demoted, d)) {
      ir_graph_free(h);
      srch_stats_free(st);
      mutant_apply_stats_free(ms);
      return NULL;
    }
    if (!h || !demoted)
      return h;
    ir_graph_free(h); /* it applied a demoted rule: again without it */
    srch_stats_free(st);
    mutant_apply_stats_free(ms);
  }
}
