/* cmd_onnx.c: `superopt import` (ONNX -> .graph) and `superopt export`
 * (.graph -> ONNX). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../onnx/onnx.h"
#include "cli.h"

typedef struct import_opts {
  const char *out;
  int drop;
  ox_options ox;
} import_opts;

#define T import_opts
static const cli_opt import_table[] = {
    CLI_STR(T, "output", 'o', out, "OUT", "write the graph here"),
    CLI_FLAG(T, "drop-weights", drop, 1,
             "leave the weights' values out (else a model\n"
             "with values is not written to standard output)"),
    CLI_IMPORT_OPTS(T, ox), CLI_END};
#undef T

static int import(const cli_command *c, int argc, char **argv) {
  import_opts o;
  memset(&o, 0, sizeof o);
  int rc = cli_parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  if (argc - optind != 1)
    return cli_usage_error(c, "expected one MODEL.onnx");
  base_diag d;
  ir_graph *g = ox_import_file(argv[optind], &o.ox, &d);
  if (!g)
    return cli_report(&d);
  rc = cli_write_graph(g, o.out, o.drop);
  ir_graph_free(g);
  return rc;
}

const cli_command cli_cmd_import = {
    "import",
    "import an ONNX model as a .graph",
    "import MODEL.onnx [-o OUT.graph] [options]",
    "Converts an ONNX model to a .graph (to standard output, or atomically\n"
    "to OUT) and its initializers' values to OUT's sidecar (OUT.graph ->\n"
    "OUT.safetensors, docs/graph-format.md). Weights without values (graph\n"
    "inputs that only feed parameter slots) become weights with seeded\n"
    "random values when run.\n",
    import_table,
    "Supported ONNX operators: see docs/onnx.md.\n",
    import};

typedef struct export_opts {
  const char *out, *like;
} export_opts;

#define T export_opts
static const cli_opt export_table[] = {
    CLI_STR(T, "output", 'o', out, "OUT", "the ONNX file to write (required)"),
    CLI_STR(T, "like", 0, like, "ORIG",
            "a drop-in for the original model ORIG.onnx: its\n"
            "input, output and initializer names and its opset\n"
            "(docs/onnx.md)"),
    CLI_END};
#undef T

static int export(const cli_command *c, int argc, char **argv) {
  export_opts o = {0};
  int rc = cli_parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  if (argc - optind != 1 || !o.out)
    return cli_usage_error(c, "expected GRAPH and -o OUT.onnx");
  ir_graph *g = cli_load(argv[optind], &rc);
  if (!g)
    return rc;
  rc = cli_export_onnx(g, o.out, o.like);
  ir_graph_free(g);
  return rc;
}

const cli_command cli_cmd_export = {
    "export",
    "export a graph as an ONNX model",
    "export GRAPH -o OUT.onnx [options]",
    "Writes GRAPH as an ONNX model (opset 17), atomically. Weights with\n"
    "values become initializers; weights without stay graph inputs.\n",
    export_table,
    NULL,
    export};
