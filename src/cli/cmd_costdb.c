/* cmd_costdb.c: `superopt costdb stats|import|export|estimate`: the cost
 * database's contents, importing and exporting TSV tables, and a graph's
 * per-operator estimated and measured costs (src/costdb/, docs/costdb.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "cli.h"

typedef struct opts {
  const char *db, *device, *tables, *out;
  int no_tables;
  int batch; /* measure: rebatch the graphs first (0: as they are) */
} opts;

cd_db *cli_costdb_open(const char *path, const char *tables, int *rc) {
  char def[4096];
  base_diag d;
  if (!path) {
    if (cd_default_path(def, sizeof def, &d)) {
      *rc = cli_report(&d);
      return NULL;
    }
    path = def;
  }
  cd_db *db = cd_open(path, &d);
  if (db && tables && cd_set_tables(db, tables, &d)) {
    cd_close(db);
    db = NULL;
  }
  if (!db)
    *rc = cli_report(&d);
  return db;
}

#define T opts
static const cli_opt costdb_table[] = {
    CLI_STR(T, "db", 0, db, "PATH",
            "the database (default $SUPEROPT_COSTDB, else\n"
            "$XDG_CACHE_HOME/superopt/costdb.sqlite, else\n"
            "~/.cache/superopt/costdb.sqlite)"),
    CLI_STR(T, "device", 0, device, "D",
            "h100 (default), h200, h100-tf32, h200-tf32, cpu"),
    CLI_STR(T, "tables", 0, tables, "DIR",
            "checked-in tables DIR/<device>.tsv imported on first\n"
            "use (default: the data folder's costdb/, see\n"
            "--version)"),
    CLI_FLAG(T, "no-tables", no_tables, 1, "import no tables"),
    CLI_INT(T, "batch", batch, "N", 1, 1000000,
            "measure: the graphs rebatched to N first"),
    CLI_STR(T, "output", 'o', out, "OUT", "export to OUT"),
    CLI_END};
#undef T

static int parse_opts(const cli_command *c, int argc, char **argv, opts *o) {
  int rc = cli_parse_opts(c, argc, argv, o);
  if (rc)
    return rc;
  if (!o->tables && !o->no_tables)
    o->tables = cli_costdb_tables();
  if (o->no_tables)
    o->tables = NULL;
  return CLI_OK;
}

static const cd_device *device_opt(const char *name, const char *dflt,
                                   int *rc) {
  base_diag d;
  const cd_device *dev = cd_device_find(name ? name : dflt, &d);
  if (!dev) {
    fprintf(stderr, "superopt costdb: %s\n", d.msg);
    *rc = CLI_USAGE;
  }
  return dev;
}

/* ---- stats ----------------------------------------------------------------
 */

static int stats(cd_db *db, const char *device) {
  cd_stat st[64];
  int n;
  base_diag d;
  if (cd_stats(db, st, 64, &n, &d) || cd_check(db, &d))
    return cli_report(&d);
  printf("schema version %d, integrity ok\n", CD_SCHEMA_VERSION);
  printf("%-10s %8s %8s %8s  %s\n", "device", "rows", "imported", "local",
         "table imported (xxh3)");
  for (int i = 0; i < n; i++)
    if (!device || !strcmp(device, st[i].device))
      printf("%-10s %8ld %8ld %8ld  %s%s%s%s\n", st[i].device, st[i].rows,
             st[i].imported, st[i].rows - st[i].imported,
             st[i].table[0] ? st[i].table : "-", st[i].hash[0] ? " (" : "",
             st[i].hash, st[i].hash[0] ? ")" : "");
  if (!n)
    printf("(no costs)\n");
  return CLI_OK;
}

/* ---- import / export ------------------------------------------------------
 */

static int import(cd_db *db, int n, char **files) {
  base_diag d;
  int rows = 0;
  if (cd_import_tsv(db, (const char *const *)files, n, &rows, &d))
    return cli_report(&d);
  printf("imported %d rows from %d file%s\n", rows, n, n == 1 ? "" : "s");
  return CLI_OK;
}

static int export(cd_db *db, const opts *o) {
  base_diag d;
  if (o->out)
    return cd_export_tsv(db, o->device, o->out, &d) ? cli_report(&d) : CLI_OK;
  char *t = cd_export_text(db, o->device, &d);
  if (!t)
    return cli_report(&d);
  fputs(t, stdout);
  free(t);
  return CLI_OK;
}

/* ---- estimate -------------------------------------------------------------
 */

static int node_line(cd_db *db, const cd_device *dev, const ir_graph *g, int i,
                     int folded) {
  const ir_node *nd = &g->nodes[i];
  double ms = 0;
  int est = 1;
  base_diag d;
  if (!folded && cd_node_cost(db, dev, g, i, &ms, &est, &d))
    return cli_report(&d);
  char measured[32] = "-";
  if (folded)
    snprintf(measured, sizeof measured, "folded");
  else if (!est)
    snprintf(measured, sizeof measured, "%.6f", ms);
  printf("%5d  %-14s %-28s %12.6f %12s\n", i, ir_op(nd->op)->name,
         g->tensors[nd->out[0]].name, cd_estimate(dev, g, i), measured);
  return CLI_OK;
}

static int estimate(cd_db *db, const cd_device *dev, const char *path) {
  int rc = CLI_OK;
  ir_graph *g = cli_load(path, &rc);
  if (!g)
    return rc;
  unsigned char *folded = base_malloc((size_t)g->nnodes + 1);
  if (!folded) {
    ir_graph_free(g);
    return cli_oom();
  }
  ir_weight_only(g, folded);
  printf("%s on %s (%s)\n%5s  %-14s %-28s %12s %12s\n", g->name, dev->name,
         dev->desc, "node", "operator", "output", "estimate_ms", "measured_ms");
  for (int i = 0; i < g->nnodes && !rc; i++)
    rc = node_line(db, dev, g, i, folded[i]);
  cd_cost c;
  base_diag d;
  if (!rc && cd_graph_cost(db, dev, g, &c, &d))
    rc = cli_report(&d);
  if (!rc)
    printf("total: %.6f ms (%d operators: %d measured, %d estimated, %d "
           "folded)\n",
           c.ms, g->nnodes, c.nmeasured, c.nestimated, c.nfolded);
  free(folded);
  ir_graph_free(g);
  return rc;
}

/* ---- dispatch -------------------------------------------------------------
 */

static int run_sub(const cli_command *c, const char *sub, int n, char **args,
                   const opts *o) {
  int rc = CLI_OK;
  int measure = !strcmp(sub, "measure");
  int want = !strcmp(sub, "import") || measure ? -1
             : !strcmp(sub, "estimate")        ? 1
                                               : 0;
  if (want < 0 ? n < 1 : n != want)
    return cli_usage_error(c, "%s: expected %s", sub,
                           measure    ? "one or more GRAPHs"
                           : want < 0 ? "one or more TSV files"
                           : want > 0 ? "one GRAPH"
                                      : "no operands");
  const cd_device *dev = NULL;
  if ((!strcmp(sub, "estimate") || o->device) &&
      !(dev = device_opt(o->device, "h100", &rc)))
    return rc;
  int use_tables = !strcmp(sub, "estimate");
  cd_db *db = cli_costdb_open(o->db, use_tables ? o->tables : NULL, &rc);
  if (!db)
    return rc;
  if (!strcmp(sub, "stats"))
    rc = stats(db, o->device);
  else if (!strcmp(sub, "import"))
    rc = import(db, n, args);
  else if (!strcmp(sub, "export"))
    rc = export(db, o);
  else if (measure)
    rc = cli_costdb_measure(db, o->device, o->batch, n, args);
  else
    rc = estimate(db, dev, args[0]);
  cd_close(db);
  return rc;
}

static int costdb(const cli_command *c, int argc, char **argv) {
  static const char *const subs[] = {"stats", "import", "export", "estimate",
                                     "measure"};
  if (argc < 2)
    return cli_usage_error(
        c, "expected stats, import, export, estimate or measure");
  int known = 0;
  for (int i = 0; i < 5; i++)
    known |= !strcmp(argv[1], subs[i]);
  if (!known)
    return cli_usage_error(c, "unknown subcommand '%s'", argv[1]);
  opts o = {0};
  int rc = parse_opts(c, argc - 1, argv + 1, &o);
  if (rc)
    return rc;
  return run_sub(c, argv[1], argc - 1 - optind, argv + 1 + optind, &o);
}

const cli_command cli_cmd_costdb = {
    "costdb",
    "inspect, import, export the cost database; estimate a graph",
    "costdb stats [--db PATH] [--device D]\n"
    "       superopt costdb import TABLE.tsv... [--db PATH]\n"
    "       superopt costdb export [--db PATH] [--device D] [-o OUT.tsv]\n"
    "       superopt costdb estimate GRAPH [--device D] [--db PATH]\n"
    "       superopt costdb measure GRAPH... [--device D] [--db PATH]\n"
    "                                [--batch N] [--tables DIR | "
    "--no-tables]",
    "Operator costs per device (docs/costdb.md). stats: rows per device\n"
    "(from checked-in tables vs measured locally) and an integrity check.\n"
    "import: TSV tables, all in one transaction (a bad line imports\n"
    "nothing). export: rows sorted by device and signature, to standard\n"
    "output or atomically to OUT. estimate: each operator's roofline\n"
    "estimate and measured cost, and the graph's total. measure (CUDA\n"
    "builds, on a GPU): times each distinct operator of the graphs alone\n"
    "(warm-up 5, median of 20) under the GPU's name (h100, h200) or D.\n",
    costdb_table,
    NULL,
    costdb};
