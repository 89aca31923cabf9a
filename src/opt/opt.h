/* opt.h: the optimize pipeline as one call (module src/opt/, prefix opt_).
 *
 * opt_run is what `superopt optimize`, api_optimize (and through it the
 * Python package and the torch.compile backend) call: one list of stages,
 *
 *   rules -> batch -> costs -> passes -> search -> splits -> prune ->
 *   reprove -> dtype -> fuse -> lower -> check
 *
 * (read and compile the rules and pass rules; rebatch; fit the cost model;
 * the passes before the search; the search region by region with the
 * mutants that pay; nested splits folded; dead code removed; every applied
 * rule proven again, and the stages from costs run again without any that
 * is not; element-wise fusion; the executor's folds as graph nodes and
 * the node order they need (src/fuse/lower.h); the end-to-end
 * check on the CPU executor: seeds and scales, element by element), so that for
 * the same graph and options every entry point gets the same graph and the same
 * report. Callers resolve file paths (the rules, the cost database) and load
 * the model; they write the result. A callback after every stage lets them
 * print or dump the graph as it stands (`optimize --dump-after`), another
 * reports progress. Details: docs/search.md.
 */
#ifndef SUPEROPT_OPT_H
#define SUPEROPT_OPT_H

#include "../costdb/costdb.h"
#include "../exec/exec.h"
#include "../fuse/fuse.h"
#include "../fuse/lower.h"
#include "../ir/ir.h"
#include "../mutant/mutant.h"
#include "../rewrite/rewrite.h"
#include "../search/search.h"

typedef enum opt_stage {
  OPT_RULES,   /* read the rules and pass rules, compile them */
  OPT_BATCH,   /* rebatch the model (opt_options.batch) */
  OPT_COSTS,   /* fit the cost model; the model's cost */
  OPT_PASSES,  /* cse, folds, hand-written passes, the pass rules' search */
  OPT_SEARCH,  /* the search region by region, with mutants */
  OPT_SPLITS,  /* activation fusion (hand-written passes), nested splits */
  OPT_PRUNE,   /* dead code removed; the search's result and its cost */
  OPT_REPROVE, /* the applied rules proven again (rewrite_reprove) */
  OPT_DTYPE,   /* to the half type (opt_options.dtype; docs/half.md) */
  OPT_FUSE,    /* element-wise and attention fusion (opt_options.fuse) */
  OPT_LOWER,   /* the executor's folds as graph nodes (with fuse) */
  OPT_CHECK,   /* the end-to-end check (opt_options.check) */
  OPT_NSTAGES
} opt_stage;

/* A stage's name ("rules", "batch", ...) and a line saying what it does;
 * NULL out of range. */
const char *opt_stage_name(int stage);
const char *opt_stage_about(int stage);
/* The stage named name, or -1. */
int opt_stage_find(const char *name);

/* Where the work stands: stage, and in the search the region being
 * searched (region of nregions in pass of npasses; all 0 elsewhere);
 * seconds since opt_run began. */
typedef struct opt_progress {
  opt_stage stage;
  int pass, npasses, region, nregions;
  double elapsed;
} opt_progress;

/* The rules stage alone, for callers that search several times with one
 * rule set (`experiment search`): reads the rules files of `rules` (NULL:
 * none) lazily (ir_rules_read_file_lazy: a rule's graphs are parsed when
 * the search first meets a graph with every operator of one of its sides;
 * an error in them is the search's then, naming the file and line) and
 * pass_rules (NULL: none) in front of them, compiles them (both
 * directions, unproven ones refused unless allow_unproven; the pass rules
 * alone forward, for srch_options.pass_rules). A file's error names it.
 * Free with opt_rules_free (also after an error).
 *
 * `rules` is one path or several separated by ':' (OPT_RULES_SEP; at most
 * OPT_MAX_RULE_FILES, none empty), read in order into one set as if the
 * files were concatenated: a rule id may appear once in all of them (the
 * default pair, rules/default.rules and rules/extended.rules, number theirs
 * r0... and e0...), and an id in two files is an error naming both. The
 * pass rules' ids are checked against no other file's. */
#define OPT_RULES_SEP ':'
#define OPT_MAX_RULE_FILES 16
typedef struct opt_rules {
  ir_ruleset rs;       /* pass rules first, then each file's in order */
  int npass;           /* pass rules */
  rewrite_rules *all;  /* rs compiled */
  rewrite_rules *pass; /* the pass rules compiled forward; NULL: none */
  ir_ruleset passview; /* rs's first npass rules, what pass was compiled
                          from (it must outlive pass) */
  int nfiles;          /* the rules files read, in order */
  char *files[OPT_MAX_RULE_FILES];    /* their paths (owned) */
  int file_rules[OPT_MAX_RULE_FILES]; /* the rules read from each */
} opt_rules;
base_status opt_rules_load(const char *rules, const char *pass_rules,
                           int allow_unproven, opt_rules *out, base_diag *d);
void opt_rules_free(opt_rules *rules);

typedef struct opt_report opt_report;

typedef struct opt_options {
  /* The search's knobs (srch_options_default). The pipeline sets cost,
   * cost_u, pass_rules, region_fn, move_fn and progress itself; fuse_k is 0
   * unless fuse. */
  srch_options so;
  /* The rules files, one path or several separated by ':' (as
   * opt_rules_load reads them); NULL: none (pass rules only). */
  const char *rules;
  /* rules/passes.rules (`--passes rules`, the ablation); NULL: the
   * hand-written passes, or none at all with so.no_passes (the default of
   * `superopt optimize`: the rules alone) */
  const char *pass_rules;
  int allow_unproven; /* also unproven and unverified rules */
  unsigned mutants;   /* MUTANT_ALL [| MUTANT_ESTIMATES] [| MUTANT_GREEDY];
                         0: none */
  int batch;          /* > 0: the model rebatched to this first */
  int fuse;           /* the fusion stage (1) */
  int check;          /* the end-to-end check (1) */
  /* The result's float type: IR_DT_F16 or IR_DT_BF16 converts a float32
   * model (ir_graph_to_dtype); IR_DT_F32 (0) keeps the model's, and a half
   * model stays half. A half model is searched in float32 (ir_graph_to_f32:
   * the rules are proven over the reals and matched on float32), converted
   * by the dtype stage, and checked against the model in the half type at
   * that type's tolerance (ex_half_tolerance). */
  int dtype;
  /* The cost model: cd_model_init'ed by the caller (who may set its
   * unmeasured hook), fitted by the costs stage. Required. */
  cd_model *cost;
  /* May be NULL: called at every stage's start and before every region
   * search, from the calling thread. */
  void (*progress)(void *u, const opt_progress *p);
  void *progress_u;
  /* May be NULL: called after every stage (also one that had nothing to
   * do: report->ran[stage] is 0) with the graph as it then stands; an
   * error stops the pipeline with it. */
  base_status (*after)(void *u, opt_stage stage, const ir_graph *g,
                       const opt_report *r, base_diag *d);
  void *after_u;
} opt_options;

/* Defaults: srch_options_default, mutants MUTANT_ALL, fuse and check on;
 * no rules, no pass rules, no cost model. */
void opt_options_default(opt_options *o);

/* What the pipeline did. The counts are the same for every entry point. */
struct opt_report {
  opt_rules rules;   /* the rules read (owned) */
  int directions;    /* usable rule directions compiled: the rules file is
                        read lazily (its rules are loaded as the search meets
                        their operators), so after the rules stage those of
                        the pass rules, after the search those it loaded */
  int nodes_before;  /* the model's operators */
  int nodes_after;   /* the result's */
  srch_stats search; /* passes, search, splits, prune */
  mutant_apply_stats mutants;    /* the mutants taken */
  int inst_proven, inst_refused; /* rule instances (rewrite.h) */
  /* Rule uses in the result (forward and backward), of them by pass rules;
   * activations fused into a convolution or matmul by the hand-written
   * pass and by pass rules (forward), taken back out by a pass rule used
   * backward; sibling groups merged by hand and by pass rules. */
  int rules_applied, pass_rules_applied;
  int acts_fused, acts_fused_by_rules, acts_unfused;
  int merged, merged_by_rules;
  fuse_stats fusion;        /* the fusion stage's (zero when it did not run) */
  lower_stats lowering;     /* the lower stage's (zero when it did not run) */
  double max_rel_error;     /* the check's; -1 when it did not run */
  ex_check_opts check_opts; /* the check's rounds, scales and tolerance */
  ex_check_result check;    /* the check's worst element */
  /* A half result over the check's tolerance: its second test, whether it
   * ran (the dtype stage ran in this call) and what it found */
  int half_second_ran;
  ex_half_second half_second;
  /* The re-proof of the applied rules, over every run of the search: a
   * rule labelled proven that the verifier does not prove is demoted
   * (reproof.demoted) and the stages from costs run again without it. */
  rewrite_reproof reproof;
  double seconds[OPT_NSTAGES]; /* wall time per stage */
  int ran[OPT_NSTAGES];        /* 1: the stage had work and did it */
};

/* Runs the pipeline on g (unchanged) into a new graph *out. Fills *r
 * (zeroed first; free with opt_report_free, also after an error). On an
 * error (a bad rules file, a cost error, a failed check: BASE_ERR_INTERNAL
 * "the optimized graph's outputs differ...", naming the element, its
 * values, the seed and the scale) *out is NULL and d says why. */
base_status opt_run(const ir_graph *g, const opt_options *o, ir_graph **out,
                    opt_report *r, base_diag *d);

/* The stages from `from` on (opt_stage_find names them), g taken as the
 * graph as that stage finds it: OPT_RULES is opt_run; a stage from
 * OPT_SPLITS on runs the stages after the search on a searched graph
 * (`experiment candidates`: a whole graph with a candidate in a region's
 * place from 'splits', a region's graph priced from 'fuse'). Then no rules are
 * read (r->rules stays empty, the reprove stage has nothing to prove),
 * o->so.pass_rules is used as given, o->cost must be fitted already, the half
 * type is o->dtype's or g's, and the check compares with g (in the half type
 * for a half result). Another stage is refused (BASE_ERR_PARAM): the stages
 * from batch to search need the rules and the search's state. */
base_status opt_run_from(opt_stage from, const ir_graph *g,
                         const opt_options *o, ir_graph **out, opt_report *r,
                         base_diag *d);
void opt_report_free(opt_report *r);

#endif
