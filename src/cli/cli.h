/* cli.h: shared pieces of the superopt command-line tool (src/cli/). */
#ifndef SUPEROPT_CLI_H
#define SUPEROPT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../costdb/costdb.h"
#include "../ir/ir.h"
#include "../onnx/onnx.h"

enum { CLI_OK = 0, CLI_USAGE = 1, CLI_BAD_INPUT = 2, CLI_INTERNAL = 3 };

typedef struct cli_command cli_command;
typedef struct cli_opt cli_opt;

/* A command: its name, summary (superopt --help), help text and options,
 * and the function that runs it. `superopt CMD --help` prints
 *   usage: superopt SYNOPSIS
 *   ABOUT
 *   options: (one line or more per row of opts, from the table)
 *   NOTES
 * so the options a command parses and the options its help lists are the
 * same rows (cli_parse_opts, cli_print_usage). */
struct cli_command {
  const char *name, *summary;
  const char *synopsis; /* after "usage: superopt ": operands, options */
  const char *about;    /* what it does: paragraphs, '\n'-terminated */
  const cli_opt *opts;  /* its option table, or NULL: no options */
  const char *notes;    /* text after the options, or NULL */
  /* argv[0] is the command name; returns the exit status */
  int (*run)(const cli_command *c, int argc, char **argv);
};

/* ---- option tables (opts.c) -------------------------------------------- */

/* What a row of an option table does with its option. */
typedef enum cli_opt_kind {
  CLI_OPT_END,     /* ends a table */
  CLI_OPT_HEADING, /* help only: a heading over the rows that follow */
  CLI_OPT_FLAG,    /* no argument: the int field is set to lo */
  CLI_OPT_STR,     /* the argument into a const char * field */
  CLI_OPT_INT,     /* an integer lo..hi into an int field */
  CLI_OPT_U64,     /* a non-negative integer into a uint64_t field */
  CLI_OPT_DOUBLE,  /* a number lo..hi into a double field */
  CLI_OPT_CHOICE,  /* one of choices "a|b|c": its index into an int field */
  CLI_OPT_CALL,    /* the argument (NULL without arg) handed to set() */
} cli_opt_kind;

/* One option of a command. The target is a field of the command's options
 * struct (off, from CLI_FIELD: its type is checked at compile time) or a
 * function. */
struct cli_opt {
  cli_opt_kind kind;
  const char *name;    /* long name, without "--"; the heading's text */
  char letter;         /* short option ('o': -o), or 0 */
  const char *arg;     /* the argument's name in the help ("N"); NULL: none */
  size_t off;          /* the target field's offset in the options struct */
  double lo, hi;       /* a number's range; the value a flag stores (lo) */
  const char *choices; /* CLI_OPT_CHOICE: the names, '|'-separated */
  /* CLI_OPT_CALL: applies arg to the options struct o (CLI_CALL), or to
   * its field at off (CLI_CALL_AT); returns 0, or -1 after writing the
   * whole message (it names the option) into msg */
  int (*set)(void *o, const char *arg, char *msg, size_t n);
  const char *help; /* '\n' separates lines; NULL: an alias, not listed */
};

/* clang-format off */
/* offsetof(T, f), a compile error unless field f of T has type `type`. */
#define CLI_FIELD(T, f, type) \
  (offsetof(T, f) + 0 * sizeof(char[_Generic(((T *)0)->f, type: 1, default: -1)]))

/* Rows of an option table (T: the command's options struct; f: the field). */
#define CLI_FLAG(T, name, f, value, help) \
  {CLI_OPT_FLAG, name, 0, NULL, CLI_FIELD(T, f, int), value, value, NULL, NULL, help}
#define CLI_STR(T, name, letter, f, arg, help) \
  {CLI_OPT_STR, name, letter, arg, CLI_FIELD(T, f, const char *), 0, 0, NULL, NULL, help}
#define CLI_INT(T, name, f, arg, lo, hi, help) \
  {CLI_OPT_INT, name, 0, arg, CLI_FIELD(T, f, int), lo, hi, NULL, NULL, help}
#define CLI_U64(T, name, f, arg, help) \
  {CLI_OPT_U64, name, 0, arg, CLI_FIELD(T, f, uint64_t), 0, 0, NULL, NULL, help}
#define CLI_DOUBLE(T, name, f, arg, lo, hi, help) \
  {CLI_OPT_DOUBLE, name, 0, arg, CLI_FIELD(T, f, double), lo, hi, NULL, NULL, help}
#define CLI_CHOICE(T, name, f, arg, choices, help) \
  {CLI_OPT_CHOICE, name, 0, arg, CLI_FIELD(T, f, int), 0, 0, choices, NULL, help}
#define CLI_CALL(name, arg, fn, help) \
  {CLI_OPT_CALL, name, 0, arg, 0, 0, 0, NULL, fn, help}
#define CLI_CALL_AT(T, f, type, name, arg, fn, help) \
  {CLI_OPT_CALL, name, 0, arg, CLI_FIELD(T, f, type), 0, 0, NULL, fn, help}
/* The ONNX import options (--input-shape, --data-input, --dim) into field
 * f (an ox_options) of T: import, and optimize and run of an .onnx model. */
#define CLI_IMPORT_OPTS(T, f) \
  CLI_CALL_AT(T, f, ox_options, "input-shape", "N=DIMS", cli_set_input_shape, \
              "the shape of input N where the model leaves it\n" \
              "dynamic (repeatable)"), \
  CLI_CALL_AT(T, f, ox_options, "dim", "NAME=SIZE", cli_set_dim, \
              "the size of the model's dynamic dimension NAME\n" \
              "(its dim_param, e.g. seq=128) in every input\n" \
              "(repeatable)"), \
  CLI_CALL_AT(T, f, ox_options, "data-input", "N", cli_set_data_input, \
              "input N is data; every other float input is a\n" \
              "weight (models exported with export_params=False;\n" \
              "repeatable)")
#define CLI_HEADING(text) {CLI_OPT_HEADING, text, 0, NULL, 0, 0, 0, NULL, NULL, NULL}
#define CLI_END {CLI_OPT_END, NULL, 0, NULL, 0, 0, 0, NULL, NULL, NULL}
/* clang-format on */

/* Parses the options of argv[1..argc-1] by c->opts into the options struct
 * o (GNU getopt_long: options and operands in any order, a long name may be
 * abbreviated, --name=value); leaves optind at the first operand. Returns
 * CLI_OK, or a usage error (CLI_USAGE) after one message: an unknown
 * option, a missing value, a value out of its range. */
int cli_parse_opts(const cli_command *c, int argc, char **argv, void *o);
/* Writes c's help: synopsis, about, the option table, notes. */
void cli_print_usage(const cli_command *c, FILE *f);

/* The commands (each defined in its cmd_*.c) and the lookup by name. */
extern const cli_command cli_cmd_run, cli_cmd_check, cli_cmd_print,
    cli_cmd_import, cli_cmd_export, cli_cmd_costdb, cli_cmd_import_rules,
    cli_cmd_export_rules, cli_cmd_gen_rules, cli_cmd_verify_rules,
    cli_cmd_compare_rules, cli_cmd_optimize, cli_cmd_experiment,
    cli_cmd_mutants;
const cli_command *cli_find(const char *name);

/* Prints "superopt <cmd>: msg" and the usage line; returns CLI_USAGE. */
int cli_usage_error(const cli_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints d and returns the exit status for its code. */
int cli_report(const base_diag *d);
/* Prints "superopt: error: out of memory"; returns CLI_INTERNAL. */
int cli_oom(void);
/* Makes folder dir unless it is one already (the --dump folders); else one
 * message naming cmd and opt, and CLI_BAD_INPUT. */
int cli_make_dir(const char *cmd, const char *opt, const char *dir);
/* Parses a non-negative integer option value; -1 if malformed. */
long long cli_parse_count(const char *s);
/* Option values optimize and experiment share: --patience P (0..1e9) into
 * *out, --passes rules|hand|none into *rules (CLI_PASSES_*: none is the
 * default, rules and hand the ablation). 0, or -1 with the message in
 * msg. */
enum { CLI_PASSES_HAND, CLI_PASSES_RULES, CLI_PASSES_NONE };
int cli_parse_patience(const char *s, int *out, char *msg, size_t n);
int cli_parse_passes(const char *s, int *rules, char *msg, size_t n);
/* --dtype f16|bf16 (optimize, run) into *dtype (an ir_dtype). */
int cli_parse_dtype(const char *s, int *dtype, char *msg, size_t n);
/* Converts *g to the half type dtype (ir_graph_to_dtype; nothing for
 * IR_DT_F32). Prints the error and returns its code on failure. */
int cli_to_dtype(ir_graph **g, int dtype);
/* Loads a graph: a .onnx file through the ONNX importer (default options),
 * anything else as .graph text with its weight values from the sidecar
 * beside it (x.graph -> x.safetensors) when there is one. Prints the error
 * and sets *rc on failure. */
ir_graph *cli_load(const char *path, int *rc);
/* cli_load with import options o for an .onnx file (NULL: the defaults);
 * for a .graph, options that set anything are a usage error. */
ir_graph *cli_load_ex(const char *path, const ox_options *o, int *rc);
/* CLI_IMPORT_OPTS's setters (o: an ox_options). */
int cli_set_input_shape(void *o, const char *v, char *msg, size_t n);
int cli_set_dim(void *o, const char *v, char *msg, size_t n);
int cli_set_data_input(void *o, const char *v, char *msg, size_t n);
/* Whether path (may be NULL) names an ONNX file (ends in .onnx). */
int cli_is_onnx(const char *path);
/* Replaces *g by its copy at batch size `batch` (--batch); CLI_OK, or the
 * reported error's exit code. */
int cli_rebatch(ir_graph **g, int batch);

/* Writes g's canonical text atomically to out, and the known weight values
 * to the safetensors sidecar beside it (a stale sidecar is removed when
 * there are none); or to stdout when out is NULL, which refuses (usage
 * error) a graph with weight values unless drop. Returns the exit status. */
int cli_write_graph(const ir_graph *g, const char *out, int drop);
/* Exports g as ONNX to out, a drop-in for the original model `like` (NULL:
 * none: ox_export_file_ex); prints what was done to stderr. */
int cli_export_onnx(const ir_graph *g, const char *out, const char *like);

/* The cost database for commands that cost graphs (cmd_costdb.c): opens
 * path (NULL: the default, cd_default_path) with the checked-in tables of
 * folder tables (NULL: none); prints the error and sets *rc on failure. */
struct cd_db *cli_costdb_open(const char *path, const char *tables, int *rc);
/* `costdb measure`: every distinct operator signature of the graphs
 * (rebatched to `batch` unless 0, converted to dtype (an ir_dtype) by the
 * half-precision policy unless IR_DT_F32), or with sigs of the signature
 * lists (optimize --emit-signatures), timed on the GPU into db under
 * device (NULL: named after the GPU, e.g. h100). */
int cli_costdb_measure(struct cd_db *db, const char *device, int batch,
                       int dtype, int sigs, int n, char **graphs);
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
/* `optimize`: prints `mutants applied:` for the mutants the search took
 * (mutant_optimize; st is a mutant_apply_stats) and the proven/mutant labels
 * (cmd_mutants.c); costs are on device. */
struct mutant_apply_stats;
void cli_print_mutants(const struct mutant_apply_stats *st, const char *device);
/* --rules F of optimize and experiment, repeatable: the files given, in
 * order, as one list of paths separated by ':' (opt_rules_load's; F may be
 * such a list itself). cli_add_rules (util.c) appends F to a cli_rules
 * field; "" when none was given. */
typedef struct cli_rules {
  char list[8192];
} cli_rules;
int cli_add_rules(void *rules, const char *file, char *msg, size_t n);
#define CLI_RULES_OPT(T, f, help)                                              \
  CLI_CALL_AT(T, f, cli_rules, "rules", "F", cli_add_rules, help)
/* optimize and experiment (cmd_optimize.c): the rules files, given
 * (--rules, unless empty), else $SUPEROPT_RULES (one file or several
 * separated by ':', each of which must exist), else the data folder's
 * rules/default.rules and rules/extended.rules, in that order; NULL after
 * printing why, *rc set. The string lives until the next call. */
const char *cli_rules_files(const cli_rules *given, int *rc);
/* Prints "rules read:" for rules read by opt_rules_load: each file's
 * count, and the passes (CLI_PASSES_*; pass_rules the pass rules' file
 * with CLI_PASSES_RULES). */
struct opt_rules;
void cli_print_rules_read(const struct opt_rules *rl, int passes,
                          const char *pass_rules);
/* Prints `cost model:` for a fitted model: its device, why that one (may
 * be NULL), the measured rows it was fitted on or roofline estimates. */
void cli_print_cost_model(const struct cd_model *m, const char *why);

#endif
