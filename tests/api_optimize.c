/* api_optimize.c: a test driver of the C API's optimize (not a Criterion
 * test: tests/optimize_parity.py runs it beside `superopt optimize` and the
 * Python package and compares what they write and count).
 *
 * usage: api_optimize MODEL OUT.graph|OUT.onnx [--budget N] [--rules F]...
 *                     [--no-check] [--no-fuse] [--passes none|hand|rules]
 *                     [--batch N]
 *                     [--input-shape N=DIMS]... [--dim NAME=SIZE]...
 *                     [--like ORIG.onnx]
 *
 * Writes the optimized graph to OUT (.onnx: api_graph_save_onnx, with
 * --like) and the report's counts to stdout, one "name value" a line; the
 * stages it was told of by the progress callback ("progress STAGE DONE
 * TOTAL") to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/api/superopt.h"

static void progress(void *u, const char *stage, int done, int total,
                     double elapsed) {
  (void)u, (void)elapsed;
  fprintf(stderr, "progress %s %d %d\n", stage, done, total);
}

/* --input-shape and --dim (import) and --like (export). */
static const char *shapes[16], *dims[16], *like;
static int nshapes, ndims;

/* --rules F, repeatable: the files so far, separated by ':' (the API's
 * list of rules files). */
static const char *add_rules(const char *f) {
  static char list[8192];
  size_t n = strlen(list);
  snprintf(list + n, sizeof list - n, "%s%s", n ? ":" : "", f);
  return list;
}

/* --passes none|hand|rules: an api_passes, or -1. */
static int passes(const char *v) {
  return !strcmp(v, "none")    ? API_PASSES_NONE
         : !strcmp(v, "hand")  ? API_PASSES_HAND
         : !strcmp(v, "rules") ? API_PASSES_RULES
                               : -1;
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
      o->rules = add_rules(argv[++i]);
    else if (!strcmp(a, "--input-shape") && v && nshapes < 16)
      shapes[nshapes++] = argv[++i];
    else if (!strcmp(a, "--dim") && v && ndims < 16)
      dims[ndims++] = argv[++i];
    else if (!strcmp(a, "--like") && v)
      like = argv[++i];
    else if (!strcmp(a, "--passes") && v && passes(v) >= 0)
      o->passes = passes(argv[++i]);
    else {
      fprintf(stderr, "api_optimize: unknown option '%s'\n", a);
      return 1;
    }
  }
  return 0;
}

/* Every count of the report, "name value" a line (costs as optimize
 * prints them, %.2f). */
static void print_counts(const api_report *r) {
#define I(f) printf(#f " %lld\n", (long long)r->f)
#define C(f) printf(#f " %.2f\n", r->f)
  I(nodes_before), I(nodes_after), I(rules), I(rules_read);
  I(rules_applied), I(pass_rules_applied), I(acts_fused), I(acts_unfused);
  I(acts_fused_by_rules), I(merged), I(merged_by_rules), I(bn_folded);
  I(cse), I(scales_folded), I(splits_merged), I(fused_nodes);
  I(attention_nodes), I(fused_ops), I(fuse_recomputed), I(fuse_rejected);
  I(moved), I(mutants_applied), I(mutants_considered), I(mutants_not_cheaper);
  I(mutants_overlapping), I(mutants_refused), I(mutants_unmeasured);
  I(expanded), I(generated), I(duplicates), I(rejected), I(queue_peak);
  I(regions), I(stopped_by_patience), I(fuse_chosen), I(inst_proven);
  I(inst_refused), I(rules_reproved), I(rules_unproven), I(rules_demoted);
  I(check_rounds), I(check_compared), I(moves_removed), I(rmsnorms);
  I(rotates_folded), I(identities_dropped), I(lower_epilogues);
  I(lower_moves), I(lower_se), I(lower_shuffles), I(row_attention);
  I(move_nodes), I(move_node_ops), I(patch_embeddings), I(fuse_peeled);
  C(cost_before_us), C(cost_unfused_us), C(fuse_cost_before_us);
  C(fuse_cost_after_us);
#undef I
#undef C
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
  api_import_options io = {.input_shapes = shapes,
                           .ninput_shapes = nshapes,
                           .dims = dims,
                           .ndims = ndims};
  api_export_options eo = {like};
  size_t n = strlen(argv[2]);
  int onnx = n > 5 && !strcmp(argv[2] + n - 5, ".onnx");
  if (api_graph_load_ex(argv[1], nshapes || ndims ? &io : NULL, &g, &err) ||
      api_optimize(g, &o, &h, &r, &err) ||
      (onnx ? api_graph_save_onnx(h, argv[2], &eo, NULL, &err)
            : api_graph_save(h, argv[2], &err))) {
    fprintf(stderr, "api_optimize: %s\n", err.message);
    api_graph_free(g);
    api_graph_free(h);
    return err.code;
  }
  print_counts(&r);
  api_graph_free(g);
  api_graph_free(h);
  return 0;
}
