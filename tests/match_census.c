/* match_census.c: how many rule directions match a model after the
 * optimizer's passes, exactly (as before rule instances) and with proven
 * rule instances (docs/search.md, "Why each generalisation is sound").
 *
 *   match_census RULES MODEL.graph...
 *
 * For each model: the passes srch_optimize runs before the search (common
 * subexpressions, batchnorm folding, activation fusion, sibling merging on
 * the plain H100 estimate), then every direction matched over the whole
 * graph. Prints one line per model: operators, directions matching
 * exactly, directions matching with instances, matches of each, and the
 * instances proven and refused. Not a test: the figures of
 * docs/notes/results.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/pass/pass.h"
#include "../src/rewrite/rewrite_int.h"

static ir_graph *passes(ir_graph *g, base_diag *d) {
  int n;
  ir_graph *h;
  if (!(h = pass_cse(g, &n, d)))
    return NULL;
  ir_graph_free(g);
  if (!(g = pass_fold_batchnorm(h, &n, d)))
    return NULL;
  ir_graph_free(h);
  if (!(h = pass_fuse_activations(g, &n, d)))
    return NULL;
  ir_graph_free(g);
  if (!(g = pass_merge_siblings(h, cd_model_cost, NULL, &n, d)))
    return NULL;
  ir_graph_free(h);
  return g;
}

/* Directions with a match, and matches, in g. */
static base_status census(const rewrite_rules *r, const ir_graph *g, int *dirs,
                          long *matches, base_diag *d) {
  rewrite_index ix;
  base_status st = rewrite_index_build(g, &ix, d);
  *dirs = 0;
  *matches = 0;
  for (int k = 0; !st && k < r->ndirs; k++) {
    if (!rewrite_cpat_may_match(&r->dirs[k].cp, &ix))
      continue;
    rewrite_matches ms = {0};
    st = rewrite_match_cpat(&r->dirs[k].cp, g, &ix, &ms, d);
    *dirs += ms.n > 0;
    *matches += ms.n;
    rewrite_matches_free(&ms);
  }
  rewrite_index_free(&ix);
  return st;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: match_census RULES MODEL.graph...\n");
    return 2;
  }
  base_diag d;
  ir_ruleset rs;
  ir_ruleset_init(&rs);
  if (ir_rules_read_file(argv[1], &rs, &d)) {
    fprintf(stderr, "%s: %s\n", argv[1], d.msg);
    return 1;
  }
  printf("%-24s %6s %12s %12s %14s %14s %8s %8s\n", "model", "ops",
         "dirs exact", "dirs inst", "matches exact", "matches inst", "proven",
         "refused");
  int rc = 0;
  for (int i = 2; i < argc; i++) {
    ir_graph *g = ir_parse_file(argv[i], &d);
    if (!g || !(g = passes(g, &d))) {
      fprintf(stderr, "%s: %s\n", argv[i], d.msg);
      rc = 1;
      continue;
    }
    /* compiled per model: instances proven for one are not reused */
    rewrite_rules *r = rewrite_rules_compile(&rs, REWRITE_BOTH, 1, &d);
    if (!r) {
      fprintf(stderr, "%s: %s\n", argv[1], d.msg);
      return 1;
    }
    int de, di, p0, r0, p1, r1;
    long me, mi;
    rewrite_rules_set_instances(r, 0);
    base_status st = census(r, g, &de, &me, &d);
    rewrite_rules_set_instances(r, 1);
    rewrite_rules_instance_counts(r, &p0, &r0);
    if (!st)
      st = census(r, g, &di, &mi, &d);
    rewrite_rules_instance_counts(r, &p1, &r1);
    if (st) {
      fprintf(stderr, "%s: %s\n", argv[i], d.msg);
      rc = 1;
    } else {
      const char *s = strrchr(argv[i], '/');
      printf("%-24s %6d %12d %12d %14ld %14ld %8d %8d\n", s ? s + 1 : argv[i],
             g->nnodes, de, di, me, mi, p1 - p0, r1 - r0);
    }
    ir_graph_free(g);
    rewrite_rules_free(r);
  }
  ir_ruleset_free(&rs);
  return rc;
}
