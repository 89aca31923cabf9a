/* data.c: the CLI's side of the data files (rules/default.rules,
 * costdb/<device>.tsv): found through api_data_path (src/api/data.c:
 * $SUPEROPT_DATA, ../share/superopt beside the binary, the build tree),
 * never through a path compiled in. A missing file is a bad-input error
 * listing the paths tried. */
#include <stdio.h>

#include "../api/superopt.h"
#include "cli.h"

const char *cli_data_file(const char *rel, int *rc) {
  static char paths[4][4096];
  static int next;
  char *buf = paths[next++ % 4];
  api_error err;
  if (api_data_path(rel, buf, sizeof paths[0], &err) == API_OK)
    return buf;
  fprintf(stderr, "superopt: %s\n", err.message);
  *rc = CLI_BAD_INPUT;
  return NULL;
}

const char *cli_costdb_tables(void) {
  static char buf[4096];
  return api_data_path("costdb", buf, sizeof buf, NULL) == API_OK ? buf : NULL;
}
