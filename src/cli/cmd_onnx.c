/* cmd_onnx.c: `superopt import` (ONNX -> .graph) and `superopt export`
 * (.graph -> ONNX). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../onnx/onnx.h"
#include "cli.h"

int cli_import(const cli_command *c, int argc, char **argv) {
  static const struct option opts[] = {
      {"output", required_argument, 0, 'o'},
      {"input-shape", required_argument, 0, 's'},
      {"drop-weights", no_argument, 0, 'D'},
      {0, 0, 0, 0}};
  ox_options o;
  memset(&o, 0, sizeof o);
  const char *out = NULL;
  int ch, drop = 0;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
    if (ch == 'o')
      out = optarg;
    else if (ch == 'D')
      drop = 1;
    else if (ch == 's' && o.nshapes < OX_MAX_SHAPES &&
             ox_parse_shape_arg(optarg, &o.shapes[o.nshapes]) == 0)
      o.nshapes++;
    else if (ch == 's')
      return cli_usage_error(
          c, "bad --input-shape '%s' (expected NAME=1x3x224x224)", optarg);
    else
      return cli_usage_error(c, "unknown or incomplete option '%s'",
                             argv[optind - 1]);
  }
  if (argc - optind != 1)
    return cli_usage_error(c, "expected one MODEL.onnx");
  base_diag d;
  ir_graph *g = ox_import_file(argv[optind], &o, &d);
  if (!g)
    return cli_report(&d);
  int rc = cli_write_graph(g, out, drop);
  ir_graph_free(g);
  return rc;
}

int cli_export(const cli_command *c, int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                       {"like", required_argument, 0, 'L'},
                                       {0, 0, 0, 0}};
  const char *out = NULL, *like = NULL;
  int ch, rc;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
    if (ch == 'o')
      out = optarg;
    else if (ch == 'L')
      like = optarg;
    else
      return cli_usage_error(c, "unknown or incomplete option '%s'",
                             argv[optind - 1]);
  }
  if (argc - optind != 1 || !out)
    return cli_usage_error(c, "expected GRAPH and -o OUT.onnx");
  ir_graph *g = cli_load(argv[optind], &rc);
  if (!g)
    return rc;
  rc = cli_export_onnx(g, out, like);
  ir_graph_free(g);
  return rc;
}
