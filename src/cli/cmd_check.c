/* cmd_check.c: `superopt check` (parse, shape-check, counts) and
 * `superopt print` (canonical form). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Prints g's summary; CLI_OK, or the out-of-memory status. */
static int report(const char *path, const ir_graph *g) {
  int counts[IR_NOPS], nin = 0, nw = 0;
  int64_t params = 0;
  uint64_t hash;
  if (ir_graph_hash(g, &hash))
    return cli_oom();
  ir_op_counts(g, counts);
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *t = &g->tensors[i];
    nin += t->kind == IR_T_INPUT;
    nw += t->kind == IR_T_WEIGHT;
    if (t->kind == IR_T_WEIGHT)
      params += ir_shape_numel(&t->shape);
  }
  printf("%s: ok: graph '%s': %d operators, %d inputs, %d weights "
         "(%" PRId64 " parameters), %d outputs, hash %016" PRIx64 "\n",
         path, g->name, g->nnodes, nin, nw, params, g->noutputs, hash);
  for (int op = 0; op < IR_NOPS; op++)
    if (counts[op])
      printf("  %-16s %d\n", ir_op((ir_opcode)op)->name, counts[op]);
  return CLI_OK;
}

static int check(const cli_command *c, int argc, char **argv) {
  int rc = cli_parse_opts(c, argc, argv, NULL);
  if (rc)
    return rc;
  if (optind == argc)
    return cli_usage_error(c, "expected at least one GRAPH");
  for (int i = optind; i < argc; i++) {
    int r = CLI_OK;
    ir_graph *g = cli_load(argv[i], &r);
    if (g)
      r = report(argv[i], g);
    if (r && rc == CLI_OK)
      rc = r;
    ir_graph_free(g);
  }
  return rc;
}

const cli_command cli_cmd_check = {
    "check",
    "parse and shape-check a graph, report its operator counts",
    "check GRAPH...",
    "Parses each GRAPH, checks every shape, and prints its operator counts,\n"
    "inputs, weights, parameter count and structural hash.\n",
    NULL,
    NULL,
    check};

typedef struct print_opts {
  const char *out;
  int drop;
} print_opts;

#define T print_opts
static const cli_opt print_table[] = {
    CLI_STR(T, "output", 'o', out, "OUT",
            "write the graph here, atomically (weight values to\n"
            "OUT's .safetensors sidecar)"),
    CLI_FLAG(T, "drop-weights", drop, 1,
             "print a graph with weight values without them"),
    CLI_END};
#undef T

static int print(const cli_command *c, int argc, char **argv) {
  print_opts o = {0};
  int rc = cli_parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  if (argc - optind != 1)
    return cli_usage_error(c, "expected one GRAPH");
  ir_graph *g = cli_load(argv[optind], &rc);
  if (!g)
    return rc;
  rc = cli_write_graph(g, o.out, o.drop);
  ir_graph_free(g);
  return rc;
}

const cli_command cli_cmd_print = {
    "print",
    "print a graph in canonical form",
    "print GRAPH [-o OUT] [options]",
    "Parses GRAPH and prints it in canonical .graph form to standard output\n"
    "or, with -o, atomically to OUT (weight values to OUT's .safetensors\n"
    "sidecar). A graph with weight values is not printed to standard output\n"
    "(they would be lost) unless --drop-weights.\n",
    print_table,
    NULL,
    print};
