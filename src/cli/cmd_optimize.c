/* cmd_optimize.c: `superopt optimize` (rules -> a faster graph, checked end
 * to end on the CPU executor) and `superopt experiment search` (the search
 * over a grid of depth, alpha and budget, as CSV and gnuplot figures). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../costdb/costdb.h"
#include "../exec/exec.h"
#include "../fuse/fuse.h"
#include "../mutant/mutant.h"
#include "../onnx/onnx.h"
#include "../pass/pass.h"
#include "../search/search.h"
#include "cli.h"

#define MAX_GRID 16

typedef struct opt_args {
  const char *model, *rules, *out, *device, *db_path;
  const char *like; /* --like: the original ONNX model of an .onnx output */
  const char *rules_path; /* the rules file read ("" with --no-rules) */
  const char *emit;       /* --emit-signatures: where the unmeasured go */
  int measure;            /* --measure: unmeasured operators timed on the GPU */
  int device_given;       /* --device was given */
  srch_options so;
  cd_db *db;            /* the cost database (measured costs) */
  const cd_device *dev; /* its device model (estimates) */
  cd_model cost;        /* db + dev, fitted on dev's measured rows: the
                           search's (with its mutants) and fusion's cost
                           function */
  int check, allow_unproven;
  int no_mutants, proven_only; /* --no-mutants, --proven-only */
  int mutant_estimates;        /* --mutants-estimated */
  int drop_weights;     /* --drop-weights: write a .graph without values */
  int fuse;             /* group element-wise chains after the search */
  int patience_given;   /* else experiments search without patience */
  int batch;            /* --batch: the model rebatched first (0: as is) */
  int pass_rules;       /* --passes rules (1, default) | hand (0) */
  int no_rules;         /* --no-rules: no rules file (pass rules only) */
  ir_ruleset pass_view; /* the pass rules: the first rules of the set */
  rewrite_rules *cover; /* pass_view compiled forward (o.pass_rules) */
  /* experiment grid */
  int ndepth, nalpha, nbudget;
  int depth[MAX_GRID], budget[MAX_GRID];
  double alpha[MAX_GRID];
} opt_args;

/* "a,b,c" into up to MAX_GRID numbers lo..hi (whole numbers when ints);
 * 0, or -1 after writing the message. */
static int parse_list(const char *opt, const char *s, double lo, double hi,
                      int ints, double *v, int *n, char *msg, size_t len) {
  char buf[512], *save = NULL, *end;
  snprintf(buf, sizeof buf, "%s", s);
  *n = 0;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    double x = *n < MAX_GRID ? (errno = 0, strtod(t, &end)) : 0;
    if (*n == MAX_GRID || errno || end == t || *end || !(x >= lo && x <= hi) ||
        (ints && x != (int)x)) {
      snprintf(msg, len,
               "bad value '%s' for %s: expected up to %d comma-separated %s "
               "%g..%g",
               s, opt, MAX_GRID, ints ? "whole numbers" : "numbers", lo, hi);
      return -1;
    }
    v[(*n)++] = x;
  }
  if (*n)
    return 0;
  snprintf(msg, len, "bad value '%s' for %s: an empty list", s, opt);
  return -1;
}

/* experiment search's grid: --depth, --alpha, --budget lists. */
static int set_depths(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  double v[MAX_GRID];
  if (parse_list("--depth", s, 0, 1e6, 1, v, &a->ndepth, msg, n))
    return -1;
  for (int i = 0; i < a->ndepth; i++)
    a->depth[i] = (int)v[i];
  return 0;
}

static int set_alphas(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  return parse_list("--alpha", s, 0.5, 100, 0, a->alpha, &a->nalpha, msg, n);
}

static int set_budgets(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  double v[MAX_GRID];
  if (parse_list("--budget", s, 0, 1e9, 1, v, &a->nbudget, msg, n))
    return -1;
  for (int i = 0; i < a->nbudget; i++)
    a->budget[i] = (int)v[i];
  return 0;
}

/* --patience P: also remembers that it was given (experiments search
 * without patience unless it is). */
static int set_patience(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  long long v = cli_parse_count(s);
  if (v < 0 || v > 1000000000) {
    snprintf(msg, n, "--patience must be 0..1000000000, not '%s'", s);
    return -1;
  }
  a->so.patience = (int)v;
  a->patience_given = 1;
  return 0;
}

/* --passes rules|hand: the pass rules (1) or the hand-written passes (0). */
static int set_passes(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  if (strcmp(s, "rules") && strcmp(s, "hand")) {
    snprintf(msg, n, "bad value '%s' for --passes: expected rules or hand", s);
    return -1;
  }
  a->pass_rules = !strcmp(s, "rules");
  return 0;
}

#define T opt_args
static const cli_opt optimize_table[] = {
    CLI_STR(T, "rules", 0, rules, "F",
            "rule file (default: rules/default.rules of the\n"
            "data folder, see --version); every rule must be\n"
            "proven"),
    CLI_FLAG(T, "allow-unproven", allow_unproven, 1,
             "also use unproven and unverified rules (the\n"
             "end-to-end check still guards the result)"),
    CLI_STR(T, "output", 'o', out, "OUT",
            "write the optimized graph (.onnx: ONNX; .graph:\n"
            "weight values to OUT.safetensors beside it)"),
    CLI_FLAG(T, "drop-weights", drop_weights, 1,
             "write a .graph without its weights' values"),
    CLI_STR(T, "like", 0, like, "ORIG",
            "an .onnx output is a drop-in for ORIG.onnx (its\n"
            "names and opset; default: MODEL when it is .onnx)"),
    CLI_DOUBLE(T, "alpha", so.alpha, "A", 0.5, 100,
               "expand graphs costing <= A x the best (1.05)"),
    CLI_INT(T, "budget", so.budget, "B", 0, 1000000000,
            "expansions per region (1000)"),
    CLI_CALL("patience", "P", set_patience,
             "stop a region after P expansions that found no\n"
             "cheaper graph (100; 0: never)"),
    CLI_INT(T, "max-depth", so.max_depth, "D", 0, 1000000,
            "rewrites from the input (default: unlimited)"),
    CLI_DOUBLE(T, "time-limit", so.time_limit, "S", 0, 1e6,
               "stop searching after S seconds (default: none)"),
    CLI_INT(T, "batch", batch, "N", 1, 1000000,
            "optimize for batch size N: the model is rebatched\n"
            "first (costs for those shapes; output at N)"),
    CLI_STR(T, "device", 0, device, "D",
            "the device costs are for: h100 (default), h200,\n"
            "h100-tf32, h200-tf32, cpu (docs/costdb.md)"),
    CLI_STR(T, "db", 0, db_path, "PATH",
            "the cost database (default as in 'costdb')"),
    CLI_FLAG(T, "measure", measure, 1,
             "time every operator without a measurement on the\n"
             "GPU as the search proposes it, and store it in\n"
             "the database (CUDA builds, on a GPU; costs for\n"
             "that GPU unless --device; exit 2 without one)"),
    CLI_STR(T, "emit-signatures", 0, emit, "F",
            "write the signatures costed without a\n"
            "measurement to F, for 'costdb measure\n"
            "--signatures F' on a GPU machine"),
    CLI_INT(T, "region-size", so.region_nodes, "N", 1, 100000,
            "operators per search region (48)"),
    CLI_FLAG(T, "no-merge", so.merge, 0,
             "do not merge sibling convolutions/matmuls by hand"),
    CLI_CALL("passes", "rules|hand", set_passes,
             "rules (default): activation fusion and sibling\n"
             "merging as the proven rules of rules/passes.rules,\n"
             "applied by the search (by hand only where no such\n"
             "rule matches); hand: the hand-written passes"),
    CLI_FLAG(T, "no-rules", no_rules, 1,
             "no rules file: the search has only the pass rules"),
    CLI_FLAG(T, "no-mutants", no_mutants, 1, "apply no mutants"),
    CLI_FLAG(T, "mutants-estimated", mutant_estimates, 1,
             "also take mutants whose saving rests on estimated\n"
             "costs (default: measured ones only, e.g. with\n"
             "--measure; docs/mutants.md)"),
    CLI_FLAG(T, "proven-only", proven_only, 1,
             "only proven rewrites: no mutants (verified by the\n"
             "box argument, not proven), no unproven rules"),
    CLI_FLAG(T, "no-fuse", fuse, 0,
             "no fused nodes (element-wise operators stay\n"
             "separate; ONNX output is never fused)"),
    CLI_INT(T, "fuse-candidates", so.fuse_k, "K", 0, 1000,
            "each region's K cheapest graphs are fused and the\n"
            "cheapest fused one kept (8; 0 or 1: the cheapest\n"
            "unfused, fusion a pass after the search)"),
    CLI_FLAG(T, "no-check", check, 0, "skip the end-to-end check"),
    CLI_END};

static const cli_opt experiment_table[] = {
    CLI_CALL("depth", "LIST", set_depths,
             "the max depths to try (rewrites from the input)"),
    CLI_CALL("alpha", "LIST", set_alphas, "the alphas to try (see optimize)"),
    CLI_CALL("budget", "LIST", set_budgets,
             "the budgets to try (expansions per region)"),
    CLI_STR(T, "output", 'o', out, "DIR",
            "the results folder (default experiment-search)"),
    CLI_STR(T, "rules", 0, rules, "F", "rule file (as in optimize)"),
    CLI_FLAG(T, "allow-unproven", allow_unproven, 1,
             "also use unproven and unverified rules"),
    CLI_CALL("patience", "P", set_patience,
             "stop a region after P expansions that found no\n"
             "cheaper graph (default here: 0, never)"),
    CLI_DOUBLE(T, "time-limit", so.time_limit, "S", 0, 1e6,
               "stop each search after S seconds (default: none)"),
    CLI_INT(T, "region-size", so.region_nodes, "N", 1, 100000,
            "operators per search region (48)"),
    CLI_INT(T, "batch", batch, "N", 1, 1000000,
            "the model rebatched to N first"),
    CLI_STR(T, "device", 0, device, "D",
            "the device costs are for (as in optimize)"),
    CLI_STR(T, "db", 0, db_path, "PATH", "the cost database"),
    CLI_FLAG(T, "no-merge", so.merge, 0,
             "do not merge sibling convolutions/matmuls by hand"),
    CLI_CALL("passes", "rules|hand", set_passes,
             "the passes as rules (default) or by hand (as in\n"
             "optimize)"),
    CLI_FLAG(T, "no-rules", no_rules, 1,
             "no rules file: the search has only the pass rules"),
    /* not listed: accepted to say they are optimize's (experiment_search) */
    CLI_FLAG(T, "measure", measure, 1, NULL),
    CLI_STR(T, "emit-signatures", 0, emit, "F", NULL), CLI_END};
#undef T

/* rc, or (in builds that check invariants, ir_check_invariants) the exit
 * status of a graph h the pass broke. */
static int pass_check(int rc, const ir_graph *h, const char *pass) {
  base_diag d;
  if (rc)
    return rc;
  return h && ir_check_invariants(h, pass, &d) ? cli_report(&d) : CLI_OK;
}

/* The fusion pass after the search (fuse.h): replaces *h when it fused
 * anything. */
static int fuse_result(opt_args *a, ir_graph **h) {
  fuse_options fo = {cd_model_cost, &a->cost};
  fuse_stats fs;
  base_diag d;
  ir_graph *f = fuse_graph(*h, &fo, &fs, &d);
  if (!f)
    return cli_report(&d);
  printf("fusion: %d attention node%s, %d fused node%s %s %d operators "
         "(%d recomputed, %d group%s refused by cost); estimated %.2f -> "
         "%.2f us\n",
         fs.attention, fs.attention == 1 ? "" : "s", fs.groups,
         fs.groups == 1 ? "" : "s", fs.groups == 1 ? "replaces" : "replace",
         fs.fused_ops, fs.recomputed, fs.rejected, fs.rejected == 1 ? "" : "s",
         fs.cost_before, fs.cost_after);
  return ir_graph_replace(h, f, &d) ? cli_report(&d) : CLI_OK;
}

/* The executor's node order (pass_order_apply): replaces *h when it
 * moved anything. */
static int order_result(ir_graph **h) {
  base_diag d;
  int n = 0;
  if (pass_order_apply(h, &n, &d))
    return cli_report(&d);
  printf("order: %d shortcut%s moved ahead of the chain%s %s join%s\n", n,
         n == 1 ? "" : "s", n == 1 ? "" : "s", n == 1 ? "it" : "they",
         n == 1 ? "s" : "");
  return CLI_OK;
}

/* Fits the cost model on the device's measured rows (cd_model_fit) and
 * says on what. */
static int fit_model(opt_args *a) {
  base_diag d;
  if (cd_model_fit(&a->cost, &d))
    return cli_report(&d);
  int own = 0;
  for (int o = 0; o < CD_NCLASSES; o++)
    own += a->cost.fit.op[o].from == CD_FIT_OWN;
  if (a->cost.fit.rows)
    printf("cost model: measured costs, else a per-operator fit on %d "
           "measured %s rows (%d classes with their own fit; superopt "
           "costdb fit --device %s)\n",
           a->cost.fit.rows, a->cost.dev->name, own, a->cost.dev->name);
  else
    printf("cost model: no measured %s rows to fit: roofline estimates\n",
           a->cost.dev->name);
  return CLI_OK;
}

/* The model, rebatched when --batch asks (costs are then looked up for the
 * shapes of that batch, and the result is written at that batch). */
static ir_graph *load_model(const opt_args *a, const char *path, int *rc) {
  ir_graph *g = cli_load(path, rc);
  if (g && a->batch && (*rc = cli_rebatch(&g, a->batch))) {
    ir_graph_free(g);
    g = NULL;
  }
  return g;
}

/* Parses the options by c's table, then opens the cost database and
 * device model the search prices with. */
static int parse_args(const cli_command *c, int argc, char **argv,
                      opt_args *a) {
  memset(a, 0, sizeof *a);
  srch_options_default(&a->so);
  a->check = 1;
  a->fuse = 1;
  a->pass_rules = 1;
  a->rules_path = "";
  int rc = cli_parse_opts(c, argc, argv, a);
  if (rc)
    return rc;
  a->device_given = a->device != NULL;
  if (!a->device)
    a->device = "h100";
  if (a->no_rules && a->rules)
    return cli_usage_error(c, "--no-rules and --rules conflict");
  if (a->proven_only && a->allow_unproven)
    return cli_usage_error(c, "--proven-only and --allow-unproven conflict");
  base_diag d;
  if (!(a->dev = cd_device_find(a->device, &d)))
    return cli_usage_error(c, "%s", d.msg);
  const char *tables = cli_data_file("costdb", &rc);
  if (!tables || !(a->db = cli_costdb_open(a->db_path, tables, &rc)))
    return rc;
  cd_model_init(&a->cost, a->db, a->dev);
  a->so.cost = cd_model_cost;
  a->so.cost_u = &a->cost;
  if (!a->fuse || cli_is_onnx(a->out))
    a->so.fuse_k = 0; /* not fused: the cheapest unfused graph wins */
  return CLI_OK;
}

/* Moves the rules of `first` in front of rs's (both read from files: ids
 * are checked unique by neither, and need not be). */
static int prepend_rules(ir_ruleset *rs, ir_ruleset *first) {
  int n = rs->n + first->n;
  ir_rule *r = base_malloc(sizeof *r * ((size_t)n + 1));
  if (!r)
    return 0;
  if (first->n) /* an empty set may have no array (memcpy wants one) */
    memcpy(r, first->rules, sizeof *r * (size_t)first->n);
  if (rs->n)
    memcpy(r + first->n, rs->rules, sizeof *r * (size_t)rs->n);
  free(rs->rules);
  rs->rules = r;
  rs->n = rs->cap = n;
  first->n = 0; /* its rules now belong to rs */
  ir_ruleset_free(first);
  return 1;
}

/* Reads the rules file (--rules, else $SUPEROPT_RULES, else the data
 * folder's rules/default.rules) into rs, unless --no-rules; 0 on error. */
static int read_rules(opt_args *a, ir_ruleset *rs, int *rc) {
  base_diag d;
  if (a->no_rules)
    return 1;
  const char *def = getenv("SUPEROPT_RULES");
  struct stat sb;
  if (!a->rules && def && *def && stat(def, &sb) != 0) {
    fprintf(stderr,
            "superopt: no rules file: the default %s does not exist "
            "($SUPEROPT_RULES); generate it or pass --rules FILE\n",
            def);
    *rc = CLI_BAD_INPUT;
    return 0;
  }
  const char *path = a->rules      ? a->rules
                     : def && *def ? def
                                   : cli_data_file("rules/default.rules", rc);
  if (!path)
    return 0;
  if (ir_rules_read_file(path, rs, &d)) {
    *rc = cli_report(&d);
    return 0;
  }
  a->rules_path = path;
  return 1;
}

/* With --passes rules, puts the data folder's rules/passes.rules (the
 * built-in passes as proven rules) in front of rs and compiles them alone,
 * forward, for the optimizer's rule cover (srch_options.pass_rules). */
static int add_pass_rules(opt_args *a, ir_ruleset *rs, int *rc) {
  base_diag d;
  ir_ruleset ps;
  ir_ruleset_init(&ps);
  if (!a->pass_rules)
    return 1;
  const char *path = cli_data_file("rules/passes.rules", rc);
  if (!path)
    return 0;
  if (ir_rules_read_file(path, &ps, &d)) {
    *rc = cli_report(&d);
    return 0;
  }
  int np = ps.n;
  if (!prepend_rules(rs, &ps)) {
    ir_ruleset_free(&ps);
    base_diag_set(&d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    *rc = cli_report(&d);
    return 0;
  }
  a->pass_view = (ir_ruleset){rs->rules, np, np};
  a->cover = rewrite_rules_compile(&a->pass_view, REWRITE_FORWARD, 0, &d);
  if (!a->cover) {
    snprintf(d.file, sizeof d.file, "%s", path);
    *rc = cli_report(&d);
    return 0;
  }
  a->so.pass_rules = a->cover;
  return 1;
}

/* Loads the rules (read_rules, add_pass_rules) and compiles them. */
static rewrite_rules *load_rules(opt_args *a, ir_ruleset *rs, int *rc) {
  base_diag d;
  if (!read_rules(a, rs, rc) || !add_pass_rules(a, rs, rc))
    return NULL;
  rewrite_rules *r =
      rewrite_rules_compile(rs, REWRITE_BOTH, a->allow_unproven, &d);
  if (!r) { /* a rule not proven: the main file's (pass rules are) */
    snprintf(d.file, sizeof d.file, "%s", a->rules_path);
    *rc = cli_report(&d);
  }
  return r;
}

/* ---- optimize --------------------------------------------------------------
 */

static void print_rules_applied(const ir_ruleset *rs, const srch_stats *st) {
  int any = 0;
  printf("rules applied:");
  for (int i = 0; i < st->nrules; i++) {
    int f = st->applied_fw[i], b = st->applied_bw[i];
    if (f)
      printf("%s %s x%d (%+.2f us)", any++ ? "," : "", rs->rules[i].id, f,
             st->delta_fw[i]);
    if (b)
      printf("%s %s (backward) x%d (%+.2f us)", any++ ? "," : "",
             rs->rules[i].id, b, st->delta_bw[i]);
  }
  printf("%s\n", any ? "" : " none");
}

/* The re-proof of the applied rules (rewrite_reprove): the demoted ones as
 * warnings on stderr (at their line of the rules file), then one line. */
static void print_reproof(const ir_ruleset *rs, const rewrite_reproof *rp,
                          const char *path) {
  for (int i = 0; i < rp->ndemoted; i++) {
    const ir_rule *r = &rs->rules[rp->demoted[i].rule];
    fprintf(stderr,
            "superopt: warning: %s:%d: rule '%s' is labelled proven but the "
            "verifier does not prove it (%s): demoted, the optimization "
            "was run again without it\n",
            *path ? path : "(rules)", r->line, r->id, rp->demoted[i].reason);
  }
  printf("re-proof: re-proved %d applied rule%s with the verifier (%.0f ms)",
         rp->reproved, rp->reproved == 1 ? "" : "s", rp->ms);
  if (rp->unproven)
    printf("; %d applied rule%s not labelled proven (--allow-unproven)",
           rp->unproven, rp->unproven == 1 ? "" : "s");
  if (rp->ndemoted)
    printf("; demoted %d labelled proven but not proven:", rp->ndemoted);
  for (int i = 0; i < rp->ndemoted; i++)
    printf("%s %s", i ? "," : "", rs->rules[rp->demoted[i].rule].id);
  printf("\n");
}

static void print_stats(const ir_ruleset *rs, const srch_stats *st,
                        const char *device) {
  const char *est =
      st->estimated
          ? " (some operators estimated by the fitted model, not measured)"
          : " (all operators measured)";
  double gain =
      st->cost_before > 0
          ? 100.0 * (st->cost_before - st->cost_after) / st->cost_before
          : 0;
  printf("cost before: %.2f us%s\n", st->cost_before, est);
  printf("cost after:  %.2f us%s, %.1f%% lower (device %s)\n", st->cost_after,
         est, gain, device);
  printf("passes: %d common subexpressions, %d batchnorm folded, %d "
         "scales folded, %d activations fused, %d sibling groups merged, %d "
         "nested splits folded\n",
         st->cse, st->bn_folded, st->scales_folded, st->acts_fused, st->merged,
         st->splits_merged);
  print_rules_applied(rs, st);
  printf("search: %d expanded, %d generated, %d duplicates, %d rejected, "
         "queue peak %d, %d regions (%d stopped by patience, %d took a "
         "graph cheaper once fused), %.2f s%s\n",
         st->expanded, st->generated, st->duplicates, st->rejected,
         st->queue_peak, st->regions, st->stopped_by_patience, st->fuse_chosen,
         st->seconds, st->stopped_by_time ? " (time limit reached)" : "");
}

static int check_result(const ir_graph *g, const ir_graph *h) {
  base_diag d;
  ex_check_opts o;
  ex_check_result r;
  ex_check_opts_default(&o);
  if (ex_check_rounds(g, h, &o, &r, &d))
    return cli_report(&d);
  char sc[128];
  size_t n = 0;
  for (int i = 0; i < o.rounds && n < sizeof sc; i++)
    n += (size_t)snprintf(sc + n, sizeof sc - n, "%s%g", i ? ", " : "",
                          o.scale[i]);
  printf("check: max relative error %.3g on the CPU executor; per element "
         "at most %.3g of the tolerance (|a-b| <= %g max|a| + %g |a|) over "
         "%d rounds (seeds from %llu, inputs and weights at scales %s; %lld "
         "elements)\n",
         r.max_err, r.worst, o.atol, o.rtol, r.rounds,
         (unsigned long long)o.seed, sc, (long long)r.compared);
  if (!(r.worst <= 1)) {
    fprintf(stderr,
            "superopt optimize: the optimized graph's outputs differ from "
            "the original's: output %d element %lld is %.9g, not %.9g (seed "
            "%llu, scale %g: %.3g times the tolerance); nothing written\n",
            r.output + 1, (long long)r.index, r.vb, r.va,
            (unsigned long long)r.seed, r.scale, r.worst);
    return CLI_INTERNAL;
  }
  return CLI_OK;
}

/* Writes the result: .onnx as a drop-in for the original model (--like, or
 * the input when it is ONNX), else a .graph with its weights' sidecar. */
static int write_result(const opt_args *a, const ir_graph *h, const char *in) {
  if (cli_is_onnx(a->out))
    return cli_export_onnx(h, a->out,
                           a->like           ? a->like
                           : cli_is_onnx(in) ? in
                                             : NULL);
  return cli_write_graph(h, a->out, a->drop_weights);
}

static int optimize(const cli_command *c, int argc, char **argv) {
  opt_args a;
  int rc = parse_args(c, argc, argv, &a);
  if (rc)
    return rc;
  if (argc - optind != 1) {
    cd_close(a.db);
    return cli_usage_error(c, "expected one MODEL");
  }
  cli_proposed *prop = NULL;
  if ((a.measure || a.emit) &&
      (rc = cli_proposed_open(&a.cost, a.measure, a.emit != NULL,
                              a.device_given ? a.device : NULL, &prop))) {
    cd_close(a.db);
    return rc;
  }
  a.dev = a.cost.dev; /* --measure: the GPU at hand */
  a.device = a.dev->name;
  ir_ruleset rs;
  ir_ruleset_init(&rs);
  rewrite_rules *rules = load_rules(&a, &rs, &rc);
  ir_graph *g = rules ? load_model(&a, argv[optind], &rc) : NULL;
  ir_graph *h = NULL;
  if (g) {
    printf("model: %s (%d operators); %d rules, %d usable directions\n",
           argv[optind], g->nnodes, rs.n, rewrite_rules_count(rules));
    rc = fit_model(&a);
  }
  if (g && !rc) {
    srch_stats st = {0};
    mutant_apply_stats ms = {0};
    base_diag d;
    unsigned mask = a.no_mutants || a.proven_only ? 0 : MUTANT_ALL;
    if (mask && a.mutant_estimates)
      mask |= MUTANT_ESTIMATES;
    rewrite_reproof rp = {0}; /* the applied rules, proven again */
    h = mutant_optimize_reproved(g, rules, a.cover, &a.so, mask, 1, &st, &ms,
                                 &rp, &d);
    if (!h)
      rc = cli_report(&d);
    else {
      int ip, ir;
      print_stats(&rs, &st, a.device);
      print_reproof(&rs, &rp, a.rules_path);
      rewrite_rules_instance_counts(rules, &ip, &ir);
      printf("rule instances (biased, strided, grouped, fused convs): %d "
             "proven, %d refused\n",
             ip, ir);
    }
    if (h && mask)
      cli_print_mutants(&ms);
    srch_stats_free(&st);
    mutant_apply_stats_free(&ms);
    rewrite_reproof_free(&rp);
  }
  if (h && a.fuse && cli_is_onnx(a.out))
    printf("fusion: skipped (ONNX has no fused operator)\n");
  else if (h && a.fuse && !rc) {
    rc = fuse_result(&a, &h); /* may replace h */
    rc = pass_check(rc, h, "fusion");
  }
  if (h && !rc) {
    rc = order_result(&h); /* may replace h: checked after */
    rc = pass_check(rc, h, "order");
  }
  if (h && !rc && a.check)
    rc = check_result(g, h);
  if (h && !rc && a.out && !(rc = write_result(&a, h, argv[optind])))
    printf("wrote %s (%d operators)\n", a.out, h->nnodes);
  if (h && !rc && a.measure)
    printf("measured: %d new operator signatures on the GPU, stored as "
           "device %s (the next run looks them up)\n",
           cli_proposed_measured(prop), a.device);
  if (h && !rc && a.emit)
    rc = cli_proposed_write(prop, a.emit);
  cli_proposed_free(prop);
  ir_graph_free(h);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  rewrite_rules_free(a.cover);
  ir_ruleset_free(&rs);
  cd_close(a.db);
  return rc;
}

const cli_command cli_cmd_optimize = {
    "optimize",
    "rewrite a graph into a cheaper equivalent with proven rules",
    "optimize MODEL.graph|MODEL.onnx [--rules F] [-o OUT.graph|OUT.onnx]\n"
    "       [options]",
    "Folds batchnorms into convolutions, fuses activations, merges sibling\n"
    "convolutions/matmuls where cheaper, then runs a\n"
    "cost-based backtracking search (TASO) with the rules, region by\n"
    "region, groups element-wise chains into fused nodes where cheaper\n"
    "(one kernel each, docs/search.md), applies the partially equivalent\n"
    "mutants that pay (with their corrections; docs/mutants.md), proves\n"
    "again every rule the result used (a rule labelled proven that is not\n"
    "is demoted and the search run again without it), and checks the\n"
    "result against the original on the CPU executor (3 seeds, inputs and\n"
    "weights at scales 1, 10, 1000, every output element within\n"
    "1e-5 max|a| + 1e-4 |a|) before writing it atomically.\n",
    optimize_table,
    NULL,
    optimize};

/* ---- experiment search
 * -------------------------------------------------------- */

/* The figures (scripts/plot-experiment.gp is the same script, reading
 * ORIGINAL, MODEL and DEVICE from results.csv when not given): one series
 * per (alpha, budget), each with its own dash and point type, and the
 * original graph's cost as a black baseline. */
static const char plot_script[] =
    "set datafile separator ','\n"
    "set terminal pngcairo size 1000,600\n"
    "set key outside right box title 'alpha, budget'\n"
    "set grid\n"
    "set termoption noenhanced\n"
    "NA = words(ALPHAS); NB = words(BUDGETS)\n"
    "# series i drawn DODGE depths aside, so that equal series stay visible\n"
    "DODGE = 0.04; X(i, x) = x + (i - (NA * NB - 1) / 2.0) * DODGE\n"
    "A(i) = word(ALPHAS, i / NB + 1); B(i) = word(BUDGETS, i % NB + 1)\n"
    "set output 'cost_vs_depth.png'\n"
    "set title sprintf('%s on %s: search cost vs max depth', MODEL, DEVICE)\n"
    "set xlabel 'max depth (rewrites; series drawn slightly apart)'\n"
    "set ylabel 'cost (us; measured, else the fitted model)'\n"
    "set offsets graph 0.02, graph 0.02, graph 0.05, graph 0.05\n"
    "plot for [i=0:NA*NB-1] 'results.csv' using "
    "(($3==A(i)+0 && $4==B(i)+0) ? X(i, $2) : 1/0):5 with linespoints "
    "dt 1 + i % 5 pt 1 + i % 13 ps 1.5 lw 2 "
    "title sprintf('alpha %s, budget %s', A(i), B(i)), "
    "ORIGINAL with lines dt 2 lw 2 lc rgb 'black' "
    "title sprintf('original graph (%.1f us)', ORIGINAL)\n"
    "set output 'cost_vs_time.png'\n"
    "set title sprintf('%s on %s: search cost vs search time', MODEL, "
    "DEVICE)\n"
    "set xlabel 'search time (s)'\n"
    "plot for [i=0:NA*NB-1] 'results.csv' using "
    "(($3==A(i)+0 && $4==B(i)+0) ? $7 : 1/0):5 with points "
    "pt 1 + i % 13 ps 1.5 "
    "title sprintf('alpha %s, budget %s', A(i), B(i)), "
    "ORIGINAL with lines dt 2 lw 2 lc rgb 'black' "
    "title sprintf('original graph (%.1f us)', ORIGINAL)\n";

static int ensure_dir(const char *dir) {
  if (mkdir(dir, 0777) == 0 || errno == EEXIST)
    return CLI_OK;
  fprintf(stderr, "superopt: cannot create '%s': %s\n", dir, strerror(errno));
  return CLI_BAD_INPUT;
}

/* Appends one CSV row for a run. */
static void csv_row(base_buf *f, const char *model, const char *device,
                    int depth, double alpha, int budget, const srch_stats *st,
                    const ir_ruleset *rs) {
  int applied = 0;
  for (int i = 0; i < st->nrules; i++)
    applied += st->applied_fw[i] + st->applied_bw[i];
  base_buf_printf(f, "%s,%d,%g,%d,%.4f,%d,%.4f,%d,", model, depth, alpha,
                  budget, st->cost_after, st->expanded, st->seconds, applied);
  int any = 0;
  for (int i = 0; i < st->nrules; i++)
    if (st->applied_fw[i] + st->applied_bw[i])
      base_buf_printf(f, "%s%s:%d", any++ ? " " : "", rs->rules[i].id,
                      st->applied_fw[i] + st->applied_bw[i]);
  base_buf_printf(f, ",%.4f,%s\n", st->cost_before, device);
}

static int run_grid(const opt_args *a, const ir_graph *g, const char *model,
                    const rewrite_rules *rules, const ir_ruleset *rs,
                    base_buf *f, double *original) {
  base_buf_printf(f, "model,depth,alpha,budget,cost,expansions,time_s,applied,"
                     "rules,original_cost,device\n");
  int run = 0, runs = a->ndepth * a->nalpha * a->nbudget;
  double spent = 0;
  /* a series (alpha, budget) is contiguous rows: gnuplot joins them */
  for (int j = 0; j < a->nalpha; j++)
    for (int k = 0; k < a->nbudget; k++)
      for (int i = 0; i < a->ndepth; i++) {
        srch_options o = a->so;
        srch_stats st;
        o.fuse_k = 0; /* the grid prices unfused graphs */
        base_diag d;
        o.max_depth = a->depth[i];
        o.alpha = a->alpha[j];
        o.budget = a->budget[k];
        fprintf(stderr,
                "experiment: run %d/%d: depth %d, alpha %g, budget %d "
                "(%.1f s so far)\n",
                ++run, runs, o.max_depth, o.alpha, o.budget, spent);
        ir_graph *h = srch_optimize(g, rules, &o, &st, &d);
        if (!h) {
          srch_stats_free(&st);
          return cli_report(&d);
        }
        *original = st.cost_before;
        spent += st.seconds;
        csv_row(f, model, a->dev->name, o.max_depth, o.alpha, o.budget, &st,
                rs);
        printf("depth %d alpha %g budget %d: cost %.2f us (original %.2f "
               "us), %d expanded, %.2f s\n",
               o.max_depth, o.alpha, o.budget, st.cost_after, st.cost_before,
               st.expanded, st.seconds);
        ir_graph_free(h);
        srch_stats_free(&st);
      }
  return CLI_OK;
}

static void list_words(char *buf, size_t n, const double *v, int k) {
  size_t len = 0;
  for (int i = 0; i < k && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%g", i ? " " : "", v[i]);
}

/* s with every character a gnuplot single-quoted string cannot hold
 * (a quote, a backslash, a control character) replaced by '_'. */
static void plot_safe(char *out, size_t n, const char *s) {
  snprintf(out, n, "%s", s);
  for (char *p = out; *p; p++)
    if (*p == '\'' || *p == '\\' || (unsigned char)*p < 32)
      *p = '_';
}

static int write_plots(const opt_args *a, const char *dir, const char *model,
                       double original) {
  char path[4096], al[256], bl[256], cmd[4400], name[256], dev[256];
  double b[MAX_GRID];
  for (int i = 0; i < a->nbudget; i++)
    b[i] = a->budget[i];
  list_words(al, sizeof al, a->alpha, a->nalpha);
  list_words(bl, sizeof bl, b, a->nbudget);
  plot_safe(name, sizeof name, model);
  plot_safe(dev, sizeof dev, a->dev->name);
  base_buf text = {0};
  base_buf_printf(&text,
                  "# Written by superopt experiment search; run: gnuplot "
                  "plot.gp\nALPHAS = '%s'\nBUDGETS = '%s'\nMODEL = '%s'\n"
                  "DEVICE = '%s'\nORIGINAL = %.4f\n%s",
                  al, bl, name, dev, original, plot_script);
  base_diag d;
  snprintf(path, sizeof path, "%s/plot.gp", dir);
  base_status st =
      text.oom ? base_diag_set(&d, BASE_ERR_NOMEM, 0, 0, "out of memory")
               : base_write_atomic(path, text.s, text.len, &d);
  free(text.s);
  if (st)
    return cli_report(&d);
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    printf("gnuplot not found: no PNG figures (%s written; run it with "
           "gnuplot in %s)\n",
           path, dir);
    return CLI_OK;
  }
  snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plot.gp", dir);
  int ws = system(cmd);
  if (ws != 0) {
    /* system() ignores SIGINT while gnuplot runs: pass an interrupt on */
    int sig = WIFSIGNALED(ws)                          ? WTERMSIG(ws)
              : WIFEXITED(ws) && WEXITSTATUS(ws) > 128 ? WEXITSTATUS(ws) - 128
                                                       : 0;
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
      raise(sig);
    fprintf(stderr, "superopt: gnuplot failed on %s\n", path);
    return CLI_INTERNAL;
  }
  printf("wrote %s/cost_vs_depth.png and %s/cost_vs_time.png\n", dir, dir);
  return CLI_OK;
}

static int experiment_search(const cli_command *c, int argc, char **argv) {
  opt_args a;
  int rc = parse_args(c, argc, argv, &a);
  if (rc)
    return rc;
  const char *bad = argc - optind != 1 ? "expected 'search MODEL'"
                    : !a.ndepth || !a.nalpha || !a.nbudget
                        ? "--depth, --alpha and --budget are required"
                    : strchr(a.out ? a.out : "", '\'')
                        ? "DIR must not contain a quote"
                        : NULL;
  if (!bad && (a.measure || a.emit))
    bad = "--measure and --emit-signatures are for 'optimize'";
  if (bad) {
    cd_close(a.db);
    return cli_usage_error(c, "%s", bad);
  }
  if (!a.patience_given) /* the budget is what the grid varies */
    a.so.patience = 0;
  const char *dir = a.out ? a.out : "experiment-search";
  ir_ruleset rs;
  ir_ruleset_init(&rs);
  rewrite_rules *rules = load_rules(&a, &rs, &rc);
  ir_graph *g = rules ? load_model(&a, argv[optind], &rc) : NULL;
  base_buf csv = {0};
  double original = 0;
  char model[256]; /* the graph's name, else the file's without extension */
  const char *base = strrchr(argv[optind], '/');
  base = base ? base + 1 : argv[optind];
  snprintf(model, sizeof model, "%.*s", (int)strcspn(base, "."), base);
  if (g && g->name[0])
    snprintf(model, sizeof model, "%s", g->name);
  if (g && !(rc = ensure_dir(dir)) && !(rc = fit_model(&a)))
    rc = run_grid(&a, g, model, rules, &rs, &csv, &original);
  if (g && !rc) {
    char path[4096];
    base_diag d;
    snprintf(path, sizeof path, "%s/results.csv", dir);
    if (csv.oom)
      base_diag_set(&d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    rc = csv.oom || base_write_atomic(path, csv.s, csv.len, &d) ? cli_report(&d)
                                                                : CLI_OK;
    if (!rc)
      printf("wrote %s\n", path);
    if (!rc)
      rc = write_plots(&a, dir, model, original);
  }
  free(csv.s);
  ir_graph_free(g);
  rewrite_rules_free(rules);
  rewrite_rules_free(a.cover);
  ir_ruleset_free(&rs);
  cd_close(a.db);
  return rc;
}

static int experiment(const cli_command *c, int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "search") != 0)
    return cli_usage_error(c, "expected 'search' (the only experiment)");
  return experiment_search(c, argc - 1, argv + 1);
}

const cli_command cli_cmd_experiment = {
    "experiment",
    "run an experiment grid (search) and plot it",
    "experiment search MODEL --depth 0,1,2,4,8 --alpha 1.0,1.05,1.2\n"
    "       --budget 100,1000 [-o DIR] [options]",
    "Optimizes MODEL once per combination of the listed depths, alphas\n"
    "and budgets (no end-to-end check; progress on standard error) and\n"
    "writes DIR/results.csv (model, depth, alpha, budget, cost,\n"
    "expansions, time, rules applied, the original's cost, device),\n"
    "DIR/plot.gp and, when gnuplot is installed, DIR/cost_vs_depth.png\n"
    "and DIR/cost_vs_time.png (titled with model and device, the\n"
    "original's cost as a baseline). DIR defaults to experiment-search.\n",
    experiment_table,
    NULL,
    experiment};
