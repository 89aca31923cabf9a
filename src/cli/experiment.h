/* experiment.h: `superopt experiment`'s options, shared by its
 * subcommands (private to src/cli): search (cmd_experiment.c) and
 * candidates (cmd_candidates.c). */
#ifndef SUPEROPT_CLI_EXPERIMENT_H
#define SUPEROPT_CLI_EXPERIMENT_H

#include "../costdb/costdb.h"
#include "../opt/opt.h"
#include "cli.h"

#define MAX_GRID 16

typedef struct exp_args {
  const char *out, *device, *db_path, *emit;
  cli_rules rules; /* --rules F...: the files given ("": the default) */
  int allow_unproven, measure, batch, no_rules, patience_given;
  int graphs; /* search --graphs: each grid point's graph into DIR/graphs/ */
  int pass_rules; /* --passes none (default) | rules | hand: CLI_PASSES_* */
  srch_options so;
  cd_db *db;
  cd_model cost; /* db + the device, fitted on its measured rows */
  int ndepth, nalpha, nbudget;
  int depth[MAX_GRID], budget[MAX_GRID];
  double alpha[MAX_GRID];
  /* candidates */
  int regions, per_region, check, max_seen;
  uint64_t seed;
} exp_args;

/* `experiment candidates`: a set up (options, rules, the fitted cost
 * model), g the model (rebatched), model its name; writes a->out. Returns
 * the exit status. */
int cli_experiment_candidates(exp_args *a, const opt_rules *rl,
                              const ir_graph *g, const char *model);

/* mkdir dir unless it exists; CLI_OK or CLI_BAD_INPUT (message printed). */
int cli_exp_ensure_dir(const char *dir);

#endif
