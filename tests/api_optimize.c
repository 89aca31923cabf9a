/* api_optimize.c: a test driver of the C API's optimize (not a Criterion
 * test: tests/optimize_parity.py runs it beside `superopt optimize` and the
 * Python package and compares what they write and count).
 *
 * usage: api_optimize MODEL OUT.graph [--budget N] [--rules F] [--no-check]
 *                     [--no-fuse] [--passes hand] [--batch N]
 *
 * Writes the optimized graph to OUT and the report's counts to stdout, one
 * "name value" a line; the stages it was told of by the progress callback
 * ("progress STAGE DONE TOTAL") to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/api/superopt.h"

static void progress(void *u, const char *stage, int done, int total,
                     double elapsed) {
  (void)u, (void)elapsed;
  fprintf(stderr, "progress %s %d %d\n", stage, done, total);
}

static int options(int argc, char **argv, api_optimize_options *o) {
  api_optimize_options_default(o);
  o->progress = progress;
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-check"))
      o->check = 0;
    else if (!strcmp(a, "--no-fuse"))
      o->fuse = 0;
    else if (!strcmp(a, "--budget") && v)
      o->budget = atoi(argv[++i]);
    else if (!strcmp(a, "--batch") && v)
      o->batch = atoi(argv[++i]);
    else if (!strcmp(a, "--rules") && v)
      o->rules = argv[++i];
    else if (!strcmp(a, "--passes") && v && !strcmp(v, "hand"))
      o->hand_passes = 1, i++;
    else {
      fprintf(stderr, "api_optimize: unknown option '%s'\n", a);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  api_optimize_options o;
  api_graph *g = NULL, *h = NULL;
  api_report r;
  api_error err;
  if (argc < 3 || options(argc, argv, &o)) {
    fprintf(stderr, "usage: api_optimize MODEL OUT.graph [options]\n");
    return 1;
  }
  if (api_graph_load(argv[1], &g, &err) || api_optimize(g, &o, &h, &r, &err) ||
      api_graph_save(h, argv[2], &err)) {
    fprintf(stderr, "api_optimize: %s\n", err.message);
    api_graph_free(g);
    api_graph_free(h);
    return err.code;
  }
  printf("nodes_after %d\nrules_applied %d\npass_rules_applied %d\n"
         "acts_fused %d\nacts_unfused %d\nmerged %d\nbn_folded %d\n"
         "fused_nodes %d\nattention_nodes %d\nfused_ops %d\nmoved %d\n"
         "mutants_applied %d\n",
         r.nodes_after, r.rules_applied, r.pass_rules_applied, r.acts_fused,
         r.acts_unfused, r.merged, r.bn_folded, r.fused_nodes,
         r.attention_nodes, r.fused_ops, r.moved, r.mutants_applied);
  api_graph_free(g);
  api_graph_free(h);
  return 0;
}
