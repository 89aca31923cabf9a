/* cli.h: shared pieces of the superopt command-line tool (src/cli/). */
#ifndef SUPEROPT_CLI_H
#define SUPEROPT_CLI_H

#include "../ir/ir.h"

enum { CLI_OK = 0, CLI_USAGE = 1, CLI_BAD_INPUT = 2, CLI_INTERNAL = 3 };

typedef struct cli_command cli_command;
struct cli_command {
  const char *name, *summary, *usage;
  /* argv[0] is the command name; returns the exit status */
  int (*run)(const cli_command *c, int argc, char **argv);
};

const cli_command *cli_find(const char *name);

/* Prints "superopt <cmd>: msg" and the usage line; returns CLI_USAGE. */
int cli_usage_error(const cli_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints d and returns the exit status for its code. */
int cli_report(const base_diag *d);
/* Prints "superopt: error: out of memory"; returns CLI_INTERNAL. */
int cli_oom(void);
/* Parses a non-negative integer option value; -1 if malformed. */
long long cli_parse_count(const char *s);
/* Loads a graph: a .onnx file through the ONNX importer (default options),
 * anything else as .graph text with its weight values from the sidecar
 * beside it (x.graph -> x.safetensors) when there is one. Prints the error
 * and sets *rc on failure. */
ir_graph *cli_load(const char *path, int *rc);
/* Replaces *g by its copy at batch size `batch` (--batch); CLI_OK, or the
 * reported error's exit code. */
int cli_rebatch(ir_graph **g, int batch);

/* Parses the options "-o/--output OUT" (OUT may stay NULL) and, when drop
 * is not NULL, "--drop-weights"; returns CLI_OK, or a usage error. Leaves
 * optind at the first operand. */
int cli_output_opt(const cli_command *c, int argc, char **argv,
                   const char **out, int *drop);
/* Writes g's canonical text atomically to out, and the known weight values
 * to the safetensors sidecar beside it (a stale sidecar is removed when
 * there are none); or to stdout when out is NULL, which refuses (usage
 * error) a graph with weight values unless drop. Returns the exit status. */
int cli_write_graph(const ir_graph *g, const char *out, int drop);
/* Exports g as ONNX to out, a drop-in for the original model `like` (NULL:
 * none: ox_export_file_ex); prints what was done to stderr. */
int cli_export_onnx(const ir_graph *g, const char *out, const char *like);

int cli_run(const cli_command *c, int argc, char **argv);
int cli_check(const cli_command *c, int argc, char **argv);
int cli_print(const cli_command *c, int argc, char **argv);
int cli_import(const cli_command *c, int argc, char **argv);
int cli_export(const cli_command *c, int argc, char **argv);
int cli_costdb(const cli_command *c, int argc, char **argv);

/* The cost database for commands that cost graphs (cmd_costdb.c): opens
 * path (NULL: the default, cd_default_path) with the checked-in tables of
 * folder tables (NULL: none); prints the error and sets *rc on failure. */
struct cd_db *cli_costdb_open(const char *path, const char *tables, int *rc);
/* `costdb measure`: every distinct operator signature of the graphs
 * (rebatched to `batch` unless 0), or with sigs of the signature lists
 * (optimize --emit-signatures), timed on the GPU into db under device
 * (NULL: named after the GPU, e.g. h100). */
int cli_costdb_measure(struct cd_db *db, const char *device, int batch,
                       int sigs, int n, char **graphs);
/* optimize --measure / --emit-signatures (cmd_measure.c): sets m's
 * unmeasured hook to measure each unmeasured node on the GPU now and store
 * it in m's database (measure; without a GPU: an error, exit 2; the costs
 * are for the GPU at hand unless device_given names its device) and/or
 * note its signature (emit). CLI_OK or the exit status. */
typedef struct cli_proposed cli_proposed;
struct cd_model;
int cli_proposed_open(struct cd_model *m, int measure, int emit,
                      const char *device_given, cli_proposed **out);
/* Signatures measured on the spot so far. */
int cli_proposed_measured(const cli_proposed *p);
/* Writes the noted signatures, sorted, atomically to path. */
int cli_proposed_write(cli_proposed *p, const char *path);
void cli_proposed_free(cli_proposed *p);
/* The installed costdb/ folder (data.c, api_data_path), or NULL. */
const char *cli_costdb_tables(void);
/* The path of data file rel (e.g. "rules/default.rules") from
 * api_data_path; NULL after printing the paths tried, *rc = CLI_BAD_INPUT.
 * The string lives until four more calls. */
const char *cli_data_file(const char *rel, int *rc);
int cli_import_rules(const cli_command *c, int argc, char **argv);
int cli_export_rules(const cli_command *c, int argc, char **argv);
int cli_optimize(const cli_command *c, int argc, char **argv);
int cli_experiment(const cli_command *c, int argc, char **argv);
int cli_gen_rules(const cli_command *c, int argc, char **argv);
int cli_verify_rules(const cli_command *c, int argc, char **argv);
int cli_compare_rules(const cli_command *c, int argc, char **argv);
int cli_mutants(const cli_command *c, int argc, char **argv);
/* `optimize`: prints `mutants applied:` for the mutants the search took
 * (mutant_optimize; st is a mutant_apply_stats) and the proven/mutant labels
 * (cmd_mutants.c). */
struct mutant_apply_stats;
void cli_print_mutants(const struct mutant_apply_stats *st);

#endif
