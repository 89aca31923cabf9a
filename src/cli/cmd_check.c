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

int cli_check(const cli_command *c, int argc, char **argv) {
  if (argc < 2)
    return cli_usage_error(c, "expected at least one GRAPH");
  int rc = CLI_OK;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-')
      return cli_usage_error(c, "unknown option '%s'", argv[i]);
  }
  for (int i = 1; i < argc; i++) {
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

int cli_print(const cli_command *c, int argc, char **argv) {
  const char *out = NULL;
  int drop = 0;
  int rc = cli_output_opt(c, argc, argv, &out, &drop);
  if (rc)
    return rc;
  if (argc - optind != 1)
    return cli_usage_error(c, "expected one GRAPH");
  ir_graph *g = cli_load(argv[optind], &rc);
  if (!g)
    return rc;
  rc = cli_write_graph(g, out, drop);
  ir_graph_free(g);
  return rc;
}
