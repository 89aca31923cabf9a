/* cmd_optimize.c: `superopt optimize` (rules -> a faster graph, checked end
 * to end on the CPU executor): the options, then the optimize pipeline of
 * src/opt (opt_run) with a callback that prints each stage's report line,
 * dumps the graphs --dump-after asks for and shows progress on a terminal,
 * then the write. The pipeline is the library's: api_optimize runs the same.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../costdb/costdb.h"
#include "../onnx/onnx.h"
#include "../opt/opt.h"
#include "cli.h"

typedef struct opt_args {
  const char *model, *out, *device, *db_path;
  cli_rules rules;  /* --rules F...: the files given ("": the default) */
  const char *like; /* --like: the original ONNX model of an .onnx output */
  const char *emit; /* --emit-signatures: where the unmeasured go */
  const char *dump_prefix;     /* --dump-prefix (else from -o) */
  int dump[OPT_NSTAGES];       /* --dump-after: the stages to dump after */
  int list_stages;             /* --list-stages */
  int measure;                 /* --measure: unmeasured operators timed */
  int device_given;            /* --device was given */
  char device_why[256];        /* why this device: "--device", the GPU... */
  opt_options oo;              /* the pipeline's options */
  cd_db *db;                   /* the cost database (measured costs) */
  cd_model cost;               /* db + device, fitted by the pipeline */
  int allow_unproven;          /* --allow-unproven */
  int no_mutants, proven_only; /* --no-mutants, --proven-only */
  int mutant_estimates;        /* --mutants-estimated */
  int mutants_greedy;          /* --mutants-greedy */
  int drop_weights; /* --drop-weights: write a .graph without values */
  int no_fuse;      /* --no-fuse */
  int no_check;     /* --no-check */
  int pass_rules;   /* --passes none (default) | rules | hand: CLI_PASSES_* */
  int no_rules;     /* --no-rules: no rules file (pass rules only) */
  ox_options ox;    /* an .onnx model's import options */
} opt_args;

/* --patience P. */
static int set_patience(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  return cli_parse_patience(s, &a->oo.so.patience, msg, n);
}

/* --dtype f16|bf16. */
static int set_dtype(void *u, const char *s, char *msg, size_t n) {
  return cli_parse_dtype(s, &((opt_args *)u)->oo.dtype, msg, n);
}

/* --passes none|rules|hand (CLI_PASSES_*). */
static int set_passes(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  return cli_parse_passes(s, &a->pass_rules, msg, n);
}

/* --dump-after STAGE[,STAGE...] or all. */
static int set_dump(void *u, const char *s, char *msg, size_t n) {
  opt_args *a = u;
  char buf[512], *save = NULL;
  snprintf(buf, sizeof buf, "%s", s);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k = opt_stage_find(t);
    if (k < 0 && strcmp(t, "all")) {
      snprintf(msg, n,
               "unknown stage '%s' for --dump-after (superopt optimize "
               "--list-stages names them)",
               t);
      return -1;
    }
    for (int j = 0; j < OPT_NSTAGES; j++)
      a->dump[j] |= k < 0 || j == k;
  }
  return 0;
}

#define T opt_args
static const cli_opt optimize_table[] = {
    CLI_RULES_OPT(T, rules,
                  "a rule file; repeatable (or F1:F2...): the files\n"
                  "read in order as one set, a rule id once in all\n"
                  "(default: $SUPEROPT_RULES, else rules/default.rules\n"
                  "and rules/extended.rules of the data folder, see\n"
                  "--version); every rule must be proven"),
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
            "names, opset and dynamic axes; default: MODEL\n"
            "when it is .onnx)"),
    CLI_DOUBLE(T, "alpha", oo.so.alpha, "A", 0.5, 100,
               "expand graphs costing <= A x the best (1.05)"),
    CLI_INT(T, "budget", oo.so.budget, "B", 0, 1000000000,
            "expansions per region (1000)"),
    CLI_CALL("patience", "P", set_patience,
             "stop a region after P expansions that found no\n"
             "cheaper graph (100; 0: never)"),
    CLI_INT(T, "max-depth", oo.so.max_depth, "D", 0, 1000000,
            "rewrites from the input (default: unlimited)"),
    CLI_DOUBLE(T, "time-limit", oo.so.time_limit, "S", 0, 1e6,
               "stop searching after S seconds (default: none)"),
    CLI_INT(T, "batch", oo.batch, "N", 1, 1000000,
            "optimize for batch size N: the model is rebatched\n"
            "first (costs for those shapes; output at N); an\n"
            ".onnx model's dynamic first dimensions: import at N"),
    CLI_IMPORT_OPTS(T, ox),
    CLI_CALL("dtype", "T", set_dtype,
             "f16 or bf16: the result in that type (reductions,\n"
             "softmax and normalisation in float32; docs/half.md);\n"
             "a half model stays in its type; costs: the rows of\n"
             "costdb/<device>-T.tsv first (h200-bf16)"),
    CLI_STR(T, "device", 0, device, "D",
            "the device costs are for: h100, h200, h100-tf32,\n"
            "h200-tf32, cpu (default: $SUPEROPT_DEVICE, else\n"
            "the GPU present, else cpu; docs/costdb.md)"),
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
    CLI_INT(T, "region-size", oo.so.region_nodes, "N", 1, 100000,
            "operators per search region (56)"),
    CLI_FLAG(T, "no-merge", oo.so.merge, 0,
             "do not merge sibling convolutions/matmuls by hand"),
    CLI_CALL("passes", "none|rules|hand", set_passes,
             "none (default): no pass before the search (common\n"
             "subexpressions merged: the canonical form); the\n"
             "rules fold batchnorms, fuse activations and merge\n"
             "siblings. The ablation: rules: activation fusion\n"
             "and sibling merging as the proven rules of\n"
             "rules/passes.rules searched first, batchnorm\n"
             "folding and the rest by hand (by hand too where no\n"
             "pass rule matches), the old default; hand: the\n"
             "hand-written passes"),
    CLI_FLAG(T, "no-rules", no_rules, 1,
             "no rules file: the search has only the pass rules\n"
             "(--passes rules), or none"),
    CLI_FLAG(T, "no-mutants", no_mutants, 1, "apply no mutants"),
    CLI_FLAG(T, "mutants-estimated", mutant_estimates, 1,
             "also take mutants whose saving rests on estimated\n"
             "costs (default: measured ones only, e.g. with\n"
             "--measure; docs/mutants.md)"),
    CLI_FLAG(T, "mutants-greedy", mutants_greedy, 1,
             "the ablation: mutants applied greedily to each\n"
             "region's best graph after the rule search, not\n"
             "searched jointly with the rules (docs/mutants.md)"),
    CLI_FLAG(T, "proven-only", proven_only, 1,
             "only proven rewrites: no mutants (verified by the\n"
             "box argument, not proven), no unproven rules"),
    CLI_FLAG(T, "no-fuse", no_fuse, 1,
             "no fused nodes (element-wise operators stay\n"
             "separate; ONNX output is never fused)"),
    CLI_INT(T, "fuse-candidates", oo.so.fuse_k, "K", 0, 1000,
            "each region's K cheapest graphs are fused and the\n"
            "cheapest fused one kept (8; 0 or 1: the cheapest\n"
            "unfused, fusion a pass after the search)"),
    CLI_FLAG(T, "no-check", no_check, 1, "skip the end-to-end check"),
    CLI_CALL("dump-after", "STAGE", set_dump,
             "also write the graph as it stands after STAGE\n"
             "(a comma-separated list, or all) to\n"
             "PREFIX.STAGE.graph, without weight values"),
    CLI_STR(T, "dump-prefix", 0, dump_prefix, "PREFIX",
            "where --dump-after writes (default: OUT without\n"
            "its extension)"),
    CLI_FLAG(T, "list-stages", list_stages, 1,
             "name the pipeline's stages and exit"),
    CLI_END};
#undef T

/* ---- shared with experiment (cli.h) ---------------------------------- */

/* $SUPEROPT_RULES, one file or several separated by ':': NULL after
 * naming the first that does not exist. */
static const char *env_rules(const char *env, int *rc) {
  static const char sep[] = {OPT_RULES_SEP, '\0'};
  char path[4096];
  struct stat sb;
  for (const char *p = env;; p += strcspn(p, sep) + 1) {
    snprintf(path, sizeof path, "%.*s", (int)strcspn(p, sep), p);
    if (!*path) {
      fprintf(stderr,
              "superopt: an empty path in $SUPEROPT_RULES '%s' "
              "(rules files separated by ':')\n",
              env);
      *rc = CLI_BAD_INPUT;
      return NULL;
    }
    if (stat(path, &sb) != 0) {
      fprintf(stderr,
              "superopt: no rules file: the default %s does not exist "
              "($SUPEROPT_RULES%s); generate it or pass --rules FILE\n",
              path,
              strchr(env, OPT_RULES_SEP) ? ", files separated by ':'" : "");
      *rc = CLI_BAD_INPUT;
      return NULL;
    }
    if (!p[strcspn(p, sep)])
      return env;
  }
}

/* The data folder's rules/default.rules and rules/extended.rules, as one
 * list. */
static const char *default_rules(int *rc) {
  static char list[sizeof((cli_rules *)0)->list];
  const char *def = cli_data_file("rules/default.rules", rc);
  const char *ext = def ? cli_data_file("rules/extended.rules", rc) : NULL;
  if (!ext)
    return NULL;
  if (strchr(def, OPT_RULES_SEP) || strchr(ext, OPT_RULES_SEP)) {
    fprintf(stderr,
            "superopt: the data folder's path %s has a ':', which separates "
            "rules files; pass --rules FILE, or set $SUPEROPT_DATA\n",
            strchr(def, OPT_RULES_SEP) ? def : ext);
    *rc = CLI_BAD_INPUT;
    return NULL;
  }
  snprintf(list, sizeof list, "%s%c%s", def, OPT_RULES_SEP, ext);
  return list;
}

const char *cli_rules_files(const cli_rules *given, int *rc) {
  const char *env = getenv("SUPEROPT_RULES");
  if (given && given->list[0])
    return given->list;
  if (env && *env)
    return env_rules(env, rc);
  return default_rules(rc);
}

void cli_print_rules_read(const opt_rules *rl, int passes,
                          const char *pass_rules) {
  int all = 0;
  printf("rules read:");
  for (int k = 0; k < rl->nfiles; k++) {
    printf("%s %d from %s", k ? "," : "", rl->file_rules[k], rl->files[k]);
    all += rl->file_rules[k];
  }
  if (!rl->nfiles)
    printf(" none (--no-rules)");
  else if (rl->nfiles > 1)
    printf(" (%d in all)", all);
  if (passes == CLI_PASSES_NONE)
    printf("; passes: none (the default: no pass before the search, the "
           "rules alone)\n");
  else if (passes == CLI_PASSES_RULES)
    printf("; passes: rules (the ablation: the %d pass rules of %s searched "
           "first, the hand-written passes where none matches)\n",
           rl->npass, pass_rules);
  else
    printf("; passes: hand (the ablation: the hand-written passes)\n");
}

void cli_print_cost_model(const cd_model *m, const char *why) {
  int own = 0;
  for (int o = 0; o < CD_NCLASSES; o++)
    own += m->fit.op[o].from == CD_FIT_OWN;
  printf("cost model: device %s (%s%s%s): ", m->dev->name, m->dev->desc,
         why ? "; " : "", why ? why : "");
  if (m->fit.rows)
    printf("measured costs, else a per-operator fit on %d measured %s rows "
           "(costdb/%s.tsv and any local measurements; %d classes "
           "with their own fit; superopt costdb fit --device %s)\n",
           m->fit.rows, m->dev->name, m->dev->name, own, m->dev->name);
  else
    printf("no measured %s rows to fit (no table costdb/%s.tsv, nothing "
           "measured here): roofline estimates\n",
           m->dev->name, m->dev->name);
  if (m->half_dev)
    printf("cost model: %s graphs: a node's row of device %s (costdb/%s.tsv, "
           "by its %s signature%s) comes first",
           ir_dtype_name(m->half), m->half_dev->name, m->half_dev->name,
           ir_dtype_name(m->half_as),
           m->half_as != m->half
               ? ": no rows of the graph's own type; f16 and bf16 kernels "
                 "run at one tensor-core rate and move the same bytes"
               : "");
  if (m->half_dev && m->half_fitted)
    printf("; a node without one is priced as %s by the fit on %d %s rows\n",
           ir_dtype_name(m->half), m->half_fit.rows, m->half_dev->name);
  else if (m->half_dev)
    printf("\n");
}

/* What a cost on a's device rests on, for the cost lines: "on cpu
 * (roofline estimates)". */
static const char *cost_basis(const opt_args *a, int estimated, char *buf,
                              size_t n) {
  const cd_model *m = &a->cost;
  if (!estimated)
    snprintf(buf, n, "on %s (all operators measured)", m->dev->name);
  else if (m->fit.rows)
    snprintf(buf, n,
             "on %s (some operators estimated by the model fitted on %d "
             "measured rows, not measured)",
             m->dev->name, m->fit.rows);
  else
    snprintf(buf, n, "on %s (roofline estimates, nothing measured)",
             m->dev->name);
  return buf;
}

/* For an .onnx output priced on a GPU's model: says plainly that the
 * estimates are not for what runs the file. */
static void print_onnx_device_note(const opt_args *a) {
  if (!cli_is_onnx(a->out) || !strcmp(a->cost.dev->name, "cpu"))
    return;
  printf("note: these estimates are for superopt's CUDA kernels on %s, not "
         "for what runs the ONNX written (onnxruntime or another runtime, "
         "with its own kernels and fusions); --device cpu prices it for a "
         "CPU\n",
         a->cost.dev->name);
}

/* ---- the report, stage by stage --------------------------------------- */

/* What the stage callback needs. */
typedef struct shown {
  const opt_args *a;
  const char *model;
  int model_nodes;
  const char *prefix;      /* of the dumps */
  int tty;                 /* progress on stderr */
  int progress_shown;      /* a progress line is on stderr */
  int demoted_shown;       /* demoted rules already warned about */
  double cpu_mark;         /* process CPU seconds when the last stage ended */
  double cpu[OPT_NSTAGES]; /* CPU seconds per stage, all threads */
} shown;

/* The process's CPU seconds so far (user + system, all its threads). */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void print_rules_applied(const opt_report *r, const char *device) {
  const srch_stats *st = &r->search;
  const ir_ruleset *rs = &r->rules.rs;
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
  printf("%s%s\n", any ? "; costs on " : " none", any ? device : "");
}

/* "12.4% lower", "no change", "3.0% higher": after against before ("no
 * change" up to rounding in the sums). */
static const char *change(double before, double after, char *buf, size_t n) {
  double gain = before > 0 ? 100.0 * (before - after) / before : 0;
  if (fabs(gain) < 1e-7)
    snprintf(buf, n, "no change");
  else
    snprintf(buf, n, fabs(gain) < 0.1 ? "%.3f%% %s" : "%.1f%% %s", fabs(gain),
             gain > 0 ? "lower" : "higher");
  return buf;
}

/* The search's costs. With an .onnx output the search's graph is not what
 * is written (ONNX has no convolution with a fused activation: the export
 * writes it as two nodes), so its cost is "cost after search", and "cost
 * after" is the ONNX written's, once written (print_onnx_cost). */
static void print_search(const opt_report *r, const opt_args *a) {
  const srch_stats *st = &r->search;
  const char *device = a->cost.dev->name;
  char basis[192], ch[64];
  cost_basis(a, st->estimated, basis, sizeof basis);
  printf("cost before: %.2f us %s\n", st->cost_before, basis);
  if (cli_is_onnx(a->out))
    printf("cost after search: %.2f us %s, %s in superopt's graph; the ONNX "
           "written is priced once written (what ONNX cannot carry, such as "
           "activations fused into convolutions, is written unfused)\n",
           st->cost_after, basis,
           change(st->cost_before, st->cost_after, ch, sizeof ch));
  else /* before fusion and lowering: where that is dearer, say so */
    printf("cost after:  %.2f us %s, %s%s\n", st->cost_after, basis,
           change(st->cost_before, st->cost_after, ch, sizeof ch),
           st->cost_after > st->cost_before
               ? " (unfused; the fusion line below has the estimate once "
                 "fused and lowered)"
               : "");
  printf("passes: %d common subexpressions, %d batchnorm folded, %d "
         "scales folded, %d activations fused (%d by pass rules, %d taken "
         "back out by them), %d sibling groups merged (%d by pass rules), %d "
         "nested splits folded, %d movement operators removed, %d RMSNorms "
         "formed, %d rotate_halves folded into projections, %d identities "
         "dropped after the search\n",
         st->cse, st->bn_folded, st->scales_folded, r->acts_fused,
         r->acts_fused_by_rules, r->acts_unfused, r->merged, r->merged_by_rules,
         st->splits_merged, st->moves_removed, st->rmsnorms, st->rotates_folded,
         st->identities);
  print_rules_applied(r, device);
  printf("rules applied in all: %d (%d of them pass rules)\n", r->rules_applied,
         r->pass_rules_applied);
  printf("search: %d expanded, %d generated, %d duplicates, %d rejected, "
         "queue peak %d, %d regions (%d stopped by patience, %d took a "
         "graph cheaper once fused), %.2f s%s",
         st->expanded, st->generated, st->duplicates, st->rejected,
         st->queue_peak, st->regions, st->stopped_by_patience, st->fuse_chosen,
         st->seconds, st->stopped_by_time ? " (time limit reached)" : "");
  if (st->fuse_bounded)
    printf("; %d graphs cheaper once fused left by the fuse bound",
           st->fuse_bounded);
  if (st->removal_looks)
    printf("; %d looks past patience at fewer operators", st->removal_looks);
  if (st->descents)
    printf("; %d second descents from a region's start", st->descents);
  printf("\n");
  printf("rule instances (biased, strided, grouped, fused convs; reshapes and "
         "slices of other sizes): %d "
         "proven, %d refused\n",
         r->inst_proven, r->inst_refused);
}

static void print_fusion(const fuse_stats *fs, const char *device) {
  printf("fusion: %d attention node%s, %d fused node%s %s %d operators "
         "(%d recomputed, %d group%s refused by cost; %d %s bias and "
         "residual moved into the layer norm after it); estimated %.2f -> "
         "%.2f us on %s\n",
         fs->attention, fs->attention == 1 ? "" : "s", fs->groups,
         fs->groups == 1 ? "" : "s", fs->groups == 1 ? "replaces" : "replace",
         fs->fused_ops, fs->recomputed, fs->rejected,
         fs->rejected == 1 ? "" : "s", fs->peeled,
         fs->peeled == 1 ? "product's" : "products'", fs->cost_before,
         fs->cost_after, device);
}

/* The re-proof of the applied rules (rewrite_reprove): each rule demoted
 * since the last call as a warning on stderr (at its line of its rules
 * file), then one line; "again" when the stages from costs run again. */
static void print_reproof(shown *s, const opt_report *r) {
  const rewrite_reproof *rp = &r->reproof;
  const ir_ruleset *rs = &r->rules.rs;
  for (; s->demoted_shown < rp->ndemoted; s->demoted_shown++) {
    const rewrite_demotion *dm = &rp->demoted[s->demoted_shown];
    const ir_rule *rule = &rs->rules[dm->rule];
    const char *file =
        dm->rule < r->rules.npass ? s->a->oo.pass_rules : s->a->oo.rules;
    fprintf(stderr,
            "superopt: warning: %s:%d: rule '%s' is labelled proven but the "
            "verifier does not prove it (%s): demoted, the optimization "
            "runs again without it\n",
            file ? file : "(rules)", rule->line, rule->id, dm->reason);
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

/* The check's batch line (batch > 1 and several rounds): the rounds after
 * the first on copies at a smaller batch, or why not. */
static void print_check_batch(const ex_check_result *c, int rounds) {
  if (rounds < 2 || c->batch < 2)
    return;
  if (c->late_batch < c->batch)
    printf("check batch: round 1 on the graphs as written, batch %lld; "
           "rounds 2-%d on both rebatched to %lld (no operator computes "
           "across the batch's rows)\n",
           (long long)c->batch, rounds, (long long)c->late_batch);
  else
    printf("check batch: every round at batch %lld%s%s%s\n",
           (long long)c->batch, c->late_refused[0] ? " (not rebatched: " : "",
           c->late_refused, c->late_refused[0] ? ")" : "");
}

/* The half check's second test, taken (ex_check_half_second): the rounds'
 * errors of the result and of the model's half copy against float32. */
static void print_half_second(const opt_report *r) {
  const ex_half_second *h = &r->half_second;
  char e[200];
  ex_half_second_rounds(h, e, sizeof e);
  printf("check, second test: over the half tolerance, but the graph before "
         "its dtype stage matches the float32 model at float32's tolerance "
         "(at most %.3g of it), and its relative L2 error against the "
         "float32 model per round is %s, the model's own half copy's in "
         "brackets: within %g times the largest of those so far, or %.3g "
         "(docs/half.md)\n",
         h->wide.worst, e, EX_HALF_REF_K, h->tol);
}

/* The check's line: its error, its worst element against the tolerance,
 * its rounds. */
static void print_check(const opt_report *r) {
  const ex_check_opts *o = &r->check_opts;
  if (r->check.same) {
    printf("check: max relative error 0 on the CPU executor over 0 rounds "
           "(not run: the optimized graph is the original, the same text and "
           "weight values, whose outputs are the same bits; 0 elements)\n");
    return;
  }
  char sc[128];
  size_t n = 0;
  for (int i = 0; i < o->rounds && n < sizeof sc; i++)
    n += (size_t)snprintf(sc + n, sizeof sc - n, "%s%g", i ? ", " : "",
                          o->scale[i]);
  printf("check: max relative error %.3g on the CPU executor; per element "
         "at most %.3g of the tolerance (|a-b| <= %g max|a| + %g |a|) over "
         "%d rounds (seeds from %llu, inputs and weights at scales %s; %lld "
         "elements); %lld products of the optimized graph reused from the "
         "original's on the same values\n",
         r->check.max_err, r->check.worst, r->check.atol, r->check.rtol,
         r->check.rounds, (unsigned long long)o->seed, sc,
         (long long)r->check.compared, (long long)r->check.products_reused);
  print_check_batch(&r->check, o->rounds);
  if (r->check.redrawn)
    printf("check: on the graph's own weight values every output of the "
           "original was zero in every round (it would show no error), so "
           "these rounds drew the convolution kernels' and matmul weights' "
           "values too (seeded)%s\n",
           r->check.blind == r->check.rounds ? ": still all zero" : "");
  if (r->check.rounds && r->check.blind == r->check.rounds)
    fprintf(stderr,
            "superopt: warning: every output of the original was zero in "
            "every round of the check: it could show no error%s\n",
            r->check.redrawn ? ""
                             : " (the optimized graph has weight "
                               "values of its own, so they were not "
                               "drawn instead)");
  if (r->half_second_ran && r->half_second.pass)
    print_half_second(r);
}

/* The stage's lines on standard output. */
static void print_stage(shown *s, opt_stage k, const opt_report *r) {
  const opt_args *a = s->a;
  switch (k) {
  case OPT_RULES:
    printf("model: %s (%d operators); %d rules (a rule's graphs are read "
           "when the search meets its operators)\n",
           s->model, s->model_nodes, r->rules.rs.n);
    cli_print_rules_read(&r->rules, a->pass_rules, a->oo.pass_rules);
    break;
  case OPT_COSTS:
    cli_print_cost_model(&a->cost, a->device_why);
    print_onnx_device_note(a);
    break;
  case OPT_PRUNE:
    printf("rules: %d usable directions read for this model\n", r->directions);
    print_search(r, a);
    if (a->oo.mutants)
      cli_print_mutants(&r->mutants, a->cost.dev->name);
    break;
  case OPT_FUSE:
    if (r->ran[OPT_FUSE])
      print_fusion(&r->fusion, a->cost.dev->name);
    else if (!a->no_fuse)
      printf("fusion: skipped (ONNX has no fused operator)\n");
    break;
  case OPT_LOWER:
    if (r->ran[OPT_LOWER])
      printf("lower: %d epilogues (residual, bias, clip, relu), %d moves (act "
             "on concat/split parts, pad+slice), %d squeeze-and-excitation, "
             "%d channel shuffles made graph nodes, %d shortcut%s moved "
             "ahead of the chain%s %s join%s, %d attention in row layout, %d "
             "move nodes "
             "replace %d movement operators, %d patch embedding%s as "
             "matmul%s\n",
             r->lowering.epilogues, r->lowering.moves, r->lowering.se,
             r->lowering.shuffles, r->lowering.shortcuts,
             r->lowering.shortcuts == 1 ? "" : "s",
             r->lowering.shortcuts == 1 ? "" : "s",
             r->lowering.shortcuts == 1 ? "it" : "they",
             r->lowering.shortcuts == 1 ? "s" : "", r->lowering.attention,
             r->lowering.chains, r->lowering.chain_ops, r->lowering.patches,
             r->lowering.patches == 1 ? "" : "s",
             r->lowering.patches == 1 ? "" : "s");
    break;
  case OPT_REPROVE:
    if (r->ran[OPT_REPROVE])
      print_reproof(s, r);
    break;
  case OPT_CHECK:
    if (r->ran[OPT_CHECK])
      print_check(r);
    break;
  default: break;
  }
  fflush(stdout);
}

/* Erases the progress line, if one is shown. */
static void clear_progress(shown *s) {
  if (s->progress_shown)
    fputs("\r\033[K", stderr);
  s->progress_shown = 0;
}

static void progress(void *u, const opt_progress *p) {
  shown *s = u;
  fprintf(stderr, "\r\033[K[%6.1f s] %s", p->elapsed, opt_stage_name(p->stage));
  if (p->stage == OPT_SEARCH && p->nregions)
    fprintf(stderr, ": region %d of %d (pass %d of %d)", p->region + 1,
            p->nregions, p->pass + 1, p->npasses);
  fflush(stderr);
  s->progress_shown = 1;
}

static base_status after_stage(void *u, opt_stage k, const ir_graph *g,
                               const opt_report *r, base_diag *d) {
  shown *s = u;
  s->cpu[k] += cpu_now() - s->cpu_mark;
  clear_progress(s);
  print_stage(s, k, r);
  s->cpu_mark = cpu_now(); /* the report and a dump are no stage's */
  if (!s->a->dump[k])
    return BASE_OK;
  char path[4096];
  snprintf(path, sizeof path, "%s.%s.graph", s->prefix, opt_stage_name(k));
  base_status st = ir_write_file(g, path, d);
  if (!st)
    printf("dumped the graph after %s to %s (%d operators)\n",
           opt_stage_name(k), path, g->nnodes);
  return st;
}

/* ---- the command ------------------------------------------------------ */

static int list_stages(void) {
  for (int k = 0; k < OPT_NSTAGES; k++)
    printf("%-7s %s\n", opt_stage_name(k), opt_stage_about(k));
  return CLI_OK;
}

/* Parses the options by c's table, then opens the cost database and
 * device model the search prices with. */
static int parse_args(const cli_command *c, int argc, char **argv,
                      opt_args *a) {
  memset(a, 0, sizeof *a);
  opt_options_default(&a->oo);
  a->pass_rules = CLI_PASSES_NONE;
  int rc = cli_parse_opts(c, argc, argv, a);
  if (rc || a->list_stages)
    return rc;
  a->device_given = a->device != NULL;
  if (a->no_rules && a->rules.list[0])
    return cli_usage_error(c, "--no-rules and --rules conflict");
  if (a->proven_only && a->allow_unproven)
    return cli_usage_error(c, "--proven-only and --allow-unproven conflict");
  int dumps = 0;
  for (int k = 0; k < OPT_NSTAGES; k++)
    dumps += a->dump[k];
  if (dumps && !a->out && !a->dump_prefix)
    return cli_usage_error(c, "--dump-after needs -o OUT or --dump-prefix");
  base_diag d;
  char why[160];
  const char *env = getenv("SUPEROPT_DEVICE");
  if (!a->device && env && *env)
    a->device = env;
  const cd_device *dev = a->device ? cd_device_find(a->device, &d)
                                   : cd_device_default(NULL, why, sizeof why);
  if (!dev)
    return cli_usage_error(c, "%s%s", d.msg,
                           a->device_given ? "" : " ($SUPEROPT_DEVICE)");
  if (a->device_given)
    snprintf(a->device_why, sizeof a->device_why, "--device %s", a->device);
  else if (a->device)
    snprintf(a->device_why, sizeof a->device_why, "$SUPEROPT_DEVICE");
  else
    snprintf(a->device_why, sizeof a->device_why,
             "the default: %s; --device to choose", why);
  a->device = dev->name;
  const char *tables = cli_data_file("costdb", &rc);
  if (!tables || !(a->db = cli_costdb_open(a->db_path, tables, &rc)))
    return rc;
  cd_model_init(&a->cost, a->db, dev);
  char half[64]; /* --dtype T: the rows measured in T first */
  cd_model_set_half(&a->cost, (ir_dtype)a->oo.dtype, half, sizeof half);
  return CLI_OK;
}

/* The pipeline's options from the command's. */
static int pipeline_options(opt_args *a, const char **rules, int *rc) {
  opt_options *o = &a->oo;
  *rules = NULL;
  if (!a->no_rules && !(*rules = cli_rules_files(&a->rules, rc)))
    return 0;
  o->rules = *rules;
  if (a->pass_rules == CLI_PASSES_RULES &&
      !(o->pass_rules = cli_data_file("rules/passes.rules", rc)))
    return 0;
  o->so.no_passes = a->pass_rules == CLI_PASSES_NONE;
  o->allow_unproven = a->allow_unproven;
  o->mutants = a->no_mutants || a->proven_only ? 0 : MUTANT_ALL;
  if (o->mutants && a->mutant_estimates)
    o->mutants |= MUTANT_ESTIMATES;
  if (o->mutants && a->mutants_greedy)
    o->mutants |= MUTANT_GREEDY;
  o->fuse = !a->no_fuse && !cli_is_onnx(a->out);
  o->check = !a->no_check;
  o->cost = &a->cost;
  return 1;
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

/* g's cost as an ONNX runtime runs it (cd_sum_cost_runtime), rebatched
 * first with --batch; non-zero with d set on an error. */
static int runtime_cost(opt_args *a, const ir_graph *g, double *cost, int *est,
                        int *kept, base_diag *d) {
  ir_graph *h = NULL;
  if (a->oo.batch > 0 && ir_rebatch(g, a->oo.batch, &h, d))
    return 1;
  int s = cd_sum_cost_runtime(h ? h : g, cd_model_cost, &a->cost, cost, est,
                              kept, d);
  ir_graph_free(h);
  return s != BASE_OK;
}

/* After an .onnx output is written, "cost after:" is the file's: it read
 * back and priced as a runtime runs it (activations, biases and fused
 * bodies as the separate nodes the export wrote; weight preprocessing over
 * weights without values priced, as it runs on every inference), against
 * the model priced the same way. */
static void print_onnx_cost(opt_args *a, const ir_graph *model) {
  base_diag d;
  /* the dynamic dimensions the export kept, at the model's sizes (batch:
   * --batch): its inputs by IR name and by the name the export gave back
   * to "t_117" */
  ox_options o;
  memset(&o, 0, sizeof o);
  for (int i = 0; i < model->ntensors && o.nshapes + 2 <= OX_MAX_SHAPES; i++) {
    const ir_tensor *t = &model->tensors[i];
    if (t->kind != IR_T_INPUT)
      continue;
    for (int k = 0; k < 1 + !strncmp(t->name, "t_", 2); k++) {
      snprintf(o.shapes[o.nshapes].name, sizeof o.shapes[0].name, "%s",
               t->name + 2 * k);
      o.shapes[o.nshapes].shape = t->shape;
      if (a->oo.batch > 0 && t->shape.rank)
        o.shapes[o.nshapes].shape.dim[0] = a->oo.batch;
      o.nshapes++;
    }
  }
  ir_graph *w = ox_import_file(a->out, &o, &d);
  double before = 0, after = 0;
  int est0 = 0, est1 = 0, kept = 0;
  if (!w || runtime_cost(a, model, &before, &est0, NULL, &d) ||
      cd_sum_cost_runtime(w, cd_model_cost, &a->cost, &after, &est1, &kept,
                          &d)) {
    fprintf(stderr, "superopt: warning: cannot price the ONNX written: %s\n",
            d.msg);
    ir_graph_free(w);
    return;
  }
  char basis[192], ch[64], k[128] = "";
  if (kept)
    snprintf(k, sizeof k,
             ", its %d weight-preprocessing operators over graph-input "
             "weights included",
             kept);
  change(before, after, ch, sizeof ch);
  printf("cost after:  %.2f us %s for the ONNX written, as a runtime runs "
         "it%s: %s%s (%.2f us priced the same way)\n",
         after, cost_basis(a, est0 || est1, basis, sizeof basis), k, ch,
         strcmp(ch, "no change") ? " than the model" : " from the model",
         before);
  ir_graph_free(w);
}

/* "load 0.10 s, rules 1.20 s, ..., write 0.02 s; 3.40 s in all" */
static void print_times(const opt_report *r, double load, double write) {
  double all = load + write;
  printf("time: load %.2f s", load);
  for (int k = 0; k < OPT_NSTAGES; k++) {
    all += r->seconds[k];
    if (r->ran[k])
      printf(", %s %.2f s", opt_stage_name(k), r->seconds[k]);
  }
  printf(", write %.2f s; %.2f s in all\n", write, all);
}

/* "cpu: load 0.10 s, rules 1.10 s, ..., check 60.20 s, write 0.01 s;
 * 70.00 s in all": CPU seconds (user + system, all threads) of the stages
 * that ran; with the wall seconds above, how well each used the cores. */
static void print_cpu(const opt_report *r, const shown *s, double load,
                      double write) {
  double all = load + write;
  printf("cpu: load %.2f s", load);
  for (int k = 0; k < OPT_NSTAGES; k++) {
    all += s->cpu[k];
    if (r->ran[k])
      printf(", %s %.2f s", opt_stage_name(k), s->cpu[k]);
  }
  printf(", write %.2f s; %.2f s in all\n", write, all);
}

/* The pipeline's error: a failed check says so and that nothing is
 * written; anything else is reported as it is. */
static int pipeline_error(const opt_report *r, const base_diag *d) {
  if (r->max_rel_error >= 0 && r->ran[OPT_CHECK]) {
    fprintf(stderr, "superopt optimize: %s; nothing written\n", d->msg);
    return CLI_INTERNAL;
  }
  return cli_report(d);
}

/* Runs the pipeline on the model and writes the result. */
static int run_pipeline(opt_args *a, const char *path, cli_proposed *prop) {
  int rc = CLI_OK;
  double t0 = base_now(), c0 = cpu_now();
  a->ox.batch = a->oo.batch;
  ir_graph *g = cli_load_ex(path, &a->ox, &rc);
  if (!g)
    return rc;
  double load = base_now() - t0, load_cpu = cpu_now() - c0;
  char prefix[4096];
  snprintf(prefix, sizeof prefix, "%s", a->dump_prefix ? a->dump_prefix : "");
  if (!a->dump_prefix && a->out) {
    const char *dot = strrchr(a->out, '.'), *slash = strrchr(a->out, '/');
    int n = dot && (!slash || dot > slash) ? (int)(dot - a->out)
                                           : (int)strlen(a->out);
    snprintf(prefix, sizeof prefix, "%.*s", n, a->out);
  }
  shown s = {a, path, g->nnodes, prefix, isatty(2), 0, 0, cpu_now(), {0}};
  a->oo.after = after_stage;
  a->oo.after_u = &s;
  a->oo.progress = s.tty ? progress : NULL;
  a->oo.progress_u = &s;
  opt_report r;
  ir_graph *h = NULL;
  base_diag d;
  if (opt_run(g, &a->oo, &h, &r, &d)) {
    clear_progress(&s);
    rc = pipeline_error(&r, &d);
  }
  double write = 0, write_cpu = 0;
  if (!rc && a->out) {
    t0 = base_now();
    c0 = cpu_now();
    if (!(rc = write_result(a, h, path)))
      printf("wrote %s (%d operators)\n", a->out, h->nnodes);
    write = base_now() - t0;
    write_cpu = cpu_now() - c0;
    if (!rc && cli_is_onnx(a->out))
      print_onnx_cost(a, g);
  }
  if (!rc) {
    print_times(&r, load, write);
    print_cpu(&r, &s, load_cpu, write_cpu);
  }
  if (!rc && a->measure)
    printf("measured: %d new operator signatures on the GPU, stored as "
           "device %s (the next run looks them up)\n",
           cli_proposed_measured(prop), a->cost.dev->name);
  if (!rc && a->emit)
    rc = cli_proposed_write(prop, a->emit);
  opt_report_free(&r);
  ir_graph_free(h);
  ir_graph_free(g);
  return rc;
}

static int optimize(const cli_command *c, int argc, char **argv) {
  opt_args a;
  int rc = parse_args(c, argc, argv, &a);
  if (rc || a.list_stages)
    return rc ? rc : list_stages();
  if (argc - optind != 1) {
    cd_close(a.db);
    return cli_usage_error(c, "expected one MODEL");
  }
  cli_proposed *prop = NULL;
  const char *rules;
  if ((a.measure || a.emit) &&
      (rc = cli_proposed_open(&a.cost, a.measure, a.emit != NULL,
                              a.device_given ? a.device : NULL, &prop))) {
    cd_close(a.db);
    return rc;
  }
  if (pipeline_options(&a, &rules, &rc))
    rc = run_pipeline(&a, argv[optind], prop);
  cli_proposed_free(prop);
  cd_close(a.db);
  return rc;
}

const cli_command cli_cmd_optimize = {
    "optimize",
    "rewrite a graph into a cheaper equivalent with proven rules",
    "optimize MODEL.graph|MODEL.onnx [--rules F]...\n"
    "       [-o OUT.graph|OUT.onnx] [options]",
    "Runs a cost-based backtracking search (TASO) with the rules and the\n"
    "partially equivalent mutants (with their corrections, as candidates\n"
    "beside the rule rewrites; docs/mutants.md), region by region; the\n"
    "rules (by default rules/default.rules and rules/extended.rules) also\n"
    "fold batchnorms into convolutions, fuse activations and merge sibling\n"
    "convolutions/matmuls where cheaper (--passes rules|hand, the\n"
    "ablation: passes do that before the search). Then it groups\n"
    "element-wise chains into fused nodes where cheaper (one kernel each,\n"
    "docs/search.md), and checks the result against the original on the\n"
    "CPU executor (max relative error 1e-4) before writing it atomically.\n"
    "The stages are the library's (--list-stages; api_optimize runs the\n"
    "same ones); on a terminal, standard error shows the stage and the\n"
    "region searched.\n",
    optimize_table,
    NULL,
    optimize};
