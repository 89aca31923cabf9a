/* cmd_costdb.c: `superopt costdb stats|import|export|estimate|fit`: the
 * cost database's contents, importing and exporting TSV tables, a graph's
 * per-operator estimated and measured costs, and the fitted cost model
 * with its held-out error (src/costdb/, docs/costdb.md).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../costdb/costdb.h"
#include "cli.h"

typedef struct opts {
  const char *db, *device, *tables, *out;
  int no_tables;
  int sigs;      /* measure: the operands are signature lists */
  int batch;     /* measure: rebatch the graphs first (0: as they are) */
  int dtype;     /* measure --dtype: an ir_dtype (IR_DT_F32: as they are) */
  double beyond; /* fit --beyond R: list the rows missed by more than R */
} opts;

/* --dtype f16|bf16. */
static int set_dtype(void *u, const char *s, char *msg, size_t n) {
  return cli_parse_dtype(s, &((opts *)u)->dtype, msg, n);
}

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
    CLI_CALL("dtype", "T", set_dtype,
             "measure: the graphs converted to f16 or bf16 first\n"
             "(as run --dtype; their signatures carry the type),\n"
             "stored as device <gpu>-T (h200-bf16) unless --device"),
    CLI_FLAG(T, "signatures", sigs, 1,
             "measure: the operands are signature lists (optimize\n"
             "--emit-signatures), not graphs"),
    CLI_DOUBLE(T, "beyond", beyond, "R", 1, 1e6,
               "fit: also list the rows the model misses by more\n"
               "than R times (predicted / measured or measured /\n"
               "predicted), in signature order"),
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

static int node_line(cd_db *db, const cd_device *dev, cd_model *m,
                     const ir_graph *g, int i, int folded, double *sum) {
  const ir_node *nd = &g->nodes[i];
  double ms = 0, us = 0;
  int est = 1;
  base_diag d;
  if (!folded && (cd_node_cost(db, dev, g, i, &ms, &est, &d) ||
                  cd_model_cost(m, g, i, &us, NULL, &d)))
    return cli_report(&d);
  char measured[32] = "-", model[32] = "folded";
  if (folded)
    snprintf(measured, sizeof measured, "folded");
  else if (!est)
    snprintf(measured, sizeof measured, "%.6f", ms);
  if (!folded)
    snprintf(model, sizeof model, "%.6f", us / 1000);
  *sum += us;
  printf("%5d  %-14s %-28s %12.6f %12s %12s\n", i, ir_op(nd->op)->name,
         g->tensors[nd->out[0]].name, cd_estimate(dev, g, i), measured, model);
  return CLI_OK;
}

/* The "model total:" line: g priced as `optimize` prices it (cd_model:
 * a node's row, else a lowered node's plain form, else the model fitted
 * on dev's rows; the model_ms column), beside "total:"'s rows-else-roofline
 * sum. us: the model_ms column's sum (weight-only nodes folded: free). */
static void model_total(const cd_device *dev, double us) {
  printf("model total: %.6f ms (as optimize prices it: a row, else a lowered "
         "node's plain form, else the model fitted on %s's rows)\n",
         us / 1000, dev->name);
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
  cd_model m;
  base_diag d;
  double us = 0;
  cd_model_init(&m, db, dev);
  if (cd_model_fit(&m, &d))
    rc = cli_report(&d);
  if (!rc)
    printf("%s on %s (%s)\n%5s  %-14s %-28s %12s %12s %12s\n", g->name,
           dev->name, dev->desc, "node", "operator", "output", "estimate_ms",
           "measured_ms", "model_ms");
  for (int i = 0; i < g->nnodes && !rc; i++)
    rc = node_line(db, dev, &m, g, i, folded[i], &us);
  cd_cost c;
  if (!rc && cd_graph_cost(db, dev, g, &c, &d))
    rc = cli_report(&d);
  if (!rc)
    printf("total: %.6f ms (%d operators: %d measured, %d estimated, %d "
           "folded)\n",
           c.ms, g->nnodes, c.nmeasured, c.nestimated, c.nfolded);
  if (!rc)
    model_total(dev, us);
  free(folded);
  ir_graph_free(g);
  return rc;
}

/* ---- fit ------------------------------------------------------------------
 */

#define FIT_FOLDS 5

static const char *fit_from(cd_fit_from f) {
  return f == CD_FIT_OWN ? "own" : f == CD_FIT_KIND ? "kind" : "all";
}

/* Whether dev's rows are of half graphs (h200-bf16, h200-f16), whose
 * conv2d/1x1 irregular term is bytes (fit.c, unaligned_rows). */
static int half_device(const cd_device *dev) {
  size_t n = strlen(dev->name);
  return (n > 5 && !strcmp(dev->name + n - 5, "-bf16")) ||
         (n > 4 && !strcmp(dev->name + n - 4, "-f16"));
}

/* One row the model misses (cd_fit_beyond). */
static void print_miss(void *u, const char *sig, int cls, double ms, double p) {
  (void)u;
  printf("%-16s %6.2f %-5s %10.2f %10.2f  %s\n", cd_class_name(cls),
         fmax(p / ms, ms / p), p < ms ? "under" : "over", 1000 * ms, 1000 * p,
         sig);
}

/* The rows the model f misses by more than factor (--beyond). */
static int misses(cd_db *db, const cd_device *dev, const cd_fit *f,
                  double factor) {
  base_diag d;
  int n;
  printf("rows beyond %gx of their measurement:\n%-16s %6s %-5s %10s %10s  "
         "%s\n",
         factor, "class", "ratio", "", "meas_us", "pred_us", "signature");
  if (cd_fit_beyond(db, dev, f, factor, print_miss, NULL, &n, &d))
    return cli_report(&d);
  printf("%d rows beyond %gx\n", n, factor);
  return CLI_OK;
}

/* The model fitted on all rows (its parameters), then its error and the
 * old single factor's on rows held out of the fit (cd_fit_crossval); with
 * factor > 0, the rows it misses by more than that. */
static int fit(cd_db *db, const cd_device *dev, double factor) {
  cd_sample *s = NULL;
  int n = 0, skipped = 0;
  base_diag d;
  cd_fit f;
  cd_fit_report r;
  if (cd_samples(db, dev, &s, &n, &skipped, &d) ||
      cd_fit_samples(s, n, NULL, &f, &d) ||
      cd_fit_crossval(s, n, FIT_FOLDS, &r, &d)) {
    free(s);
    return cli_report(&d);
  }
  free(s);
  printf("cost model of %s (%s): %d measured rows (%d views, constants or "
         "fused left out)\n",
         dev->name, dev->desc, n, skipped);
  if (!n) {
    printf("no rows to fit: every operator keeps the roofline estimate\n");
    return CLI_OK;
  }
  printf("ms = fixed (x launches of 8 inputs for concat) + bytes / bandwidth + "
         "flops / "
         "rate (conv2d/matmul: TF32; conv2d: the flops of whole waves of "
         "output tiles)"
         " or + bytes beyond the 50 MB L2 / the GB/s of TFLOP/s|L2 (other "
         "operators); irregular_GB/s: the bandwidth of "
         "bytes moved through an irregular path (unaligned broadcasts, "
         "slices, transposes, concats; for conv2d: TFLOP/s on the CUDA "
         "cores, input channels not 16-byte runs; for attention: TFLOP/s "
         "where q, k or v rows are not contiguous; for pools: GB/s of "
         "window reads one element at a time; for a half conv2d/1x1: GB/s "
         "of rows not 16 bytes long); wave|scalar: a softmax's "
         "time per wave of one block a row on every SM (us), attention's "
         "per block an SM and key tile (us), conv2d/kxk's per main-loop "
         "step (us), conv2d/depthwise's per tap (us), the fixed cost of a "
         "conv2d/1x1 that is no plain GEMM and of a matmul of more than "
         "one row (us), a float32 pad's per step of its rows' warps (us), "
         "or the GB/s of "
         "a float32 binary operator with a scalar operand; side_us: each "
         "launch of a kernel the executor adds (a convolution's asymmetric "
         "pad or float32 epilogue, an activation pass)\n");
  printf("%-16s %5s %5s %9s %11s %11s %14s %12s %8s %15s %15s\n", "operator",
         "rows", "fit", "fixed_us", "GB/s", "TFLOP/s|L2", "irregular_GB/s",
         "wave|scalar", "side_us", "heldout_med", "heldout_p90");
  for (int o = 0; o < CD_NCLASSES; o++) {
    const cd_fit_op *p = &f.op[o];
    if (p->from == CD_FIT_NONE || (!p->rows && o != IR_OP_FUSED))
      continue;
    const cd_fit_err *e = &r.fit_op[o], *e1 = &r.single_op[o];
    char bw[32] = "-", tf[32] = "-", ir[32] = "-", med[40] = "-", p90[40] = "-";
    if (p->c[1] > 0)
      snprintf(bw, sizeof bw, "%.0f", dev->mem_bw / p->c[1] / 1e9);
    int matrix = ir_op(o >= IR_NOPS ? IR_OP_CONV2D : (ir_opcode)o)->kind ==
                 IR_OPK_MATRIX;
    if (p->c[2] > 0 && matrix)
      snprintf(tf, sizeof tf, "%.1f",
               (dev->tf32_flops > 0 ? dev->tf32_flops : dev->fp32_flops) /
                   p->c[2] / 1e12);
    else if (p->c[2] > 0) /* beyond the L2: GB/s */
      snprintf(tf, sizeof tf, "%.0f GB/s", dev->mem_bw / p->c[2] / 1e9);
    int pool = o == IR_OP_AVGPOOL || o == IR_OP_MAXPOOL;
    if (p->c[3] > 0 && o == CD_CLASS_CONV_1X1 && half_device(dev))
      snprintf(ir, sizeof ir, "%.0f", dev->mem_bw / (p->c[1] + p->c[3]) / 1e9);
    else if (p->c[3] > 0 && (o == IR_OP_CONV2D || o == CD_CLASS_CONV_1X1 ||
                             o == CD_CLASS_CONV_DEPTHWISE))
      snprintf(ir, sizeof ir, "%.1f TF/s", dev->fp32_flops / p->c[3] / 1e12);
    else if (p->c[3] > 0 && o == IR_OP_ATTENTION) /* rows gathered */
      snprintf(ir, sizeof ir, "%.1f TF/s",
               (dev->tf32_flops > 0 ? dev->tf32_flops : dev->fp32_flops) /
                   (p->c[2] + p->c[3]) / 1e12);
    else if (p->c[3] > 0 && pool) /* window reads, apart */
      snprintf(ir, sizeof ir, "%.0f win", dev->mem_bw / p->c[3] / 1e9);
    else if (p->c[3] > 0) /* the whole bytes' rate on an irregular row */
      snprintf(ir, sizeof ir, "%.0f", dev->mem_bw / (p->c[1] + p->c[3]) / 1e9);
    char wv[32] = "-", sd[32] = "-";
    if (p->c[4] > 0 &&
        (o == IR_OP_SOFTMAX || o == IR_OP_ATTENTION || o == IR_OP_MATMUL ||
         o >= IR_NOPS || o == IR_OP_CONV2D || o == IR_OP_PAD ||
         o == IR_OP_ENLARGE))
      snprintf(wv, sizeof wv, "%.2f us", p->c[4]);
    else if (p->c[4] > 0) /* the whole bytes' rate on a scalar-operand row */
      snprintf(wv, sizeof wv, "%.0f GB/s",
               dev->mem_bw / (p->c[1] + p->c[4]) / 1e9);
    if (p->c[5] > 0)
      snprintf(sd, sizeof sd, "%.2f", 1000 * p->c[5]);
    if (e->n) {
      snprintf(med, sizeof med, "%.1f%% (%.1f%%)", 100 * e->median,
               100 * e1->median);
      snprintf(p90, sizeof p90, "%.1f%% (%.1f%%)", 100 * e->p90, 100 * e1->p90);
    }
    printf("%-16s %5d %5s %9.2f %11s %11s %14s %12s %8s %15s %15s\n",
           cd_class_name(o), p->rows, fit_from(p->from), 1000 * p->c[0], bw, tf,
           ir, wv, sd, med, p90);
  }
  printf("held out (%d-fold, %d rows): fitted model median %.1f%%, 90th "
         "percentile %.1f%%; single factor per operator median %.1f%%, "
         "90th percentile %.1f%%\n",
         FIT_FOLDS, r.fit.n, 100 * r.fit.median, 100 * r.fit.p90,
         100 * r.single.median, 100 * r.single.p90);
  return factor > 0 ? misses(db, dev, &f, factor) : CLI_OK;
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
  int fitting = !strcmp(sub, "fit");
  if (want < 0 ? n < 1 : n != want)
    return cli_usage_error(c, "%s: expected %s", sub,
                           measure    ? "one or more GRAPHs (or signature "
                                        "lists with --signatures)"
                           : want < 0 ? "one or more TSV files"
                           : want > 0 ? "one GRAPH"
                                      : "no operands");
  const cd_device *dev = NULL;
  if ((!strcmp(sub, "estimate") || fitting || o->device) &&
      !(dev = device_opt(o->device, "h100", &rc)))
    return rc;
  int use_tables = !strcmp(sub, "estimate") || fitting;
  cd_db *db = cli_costdb_open(o->db, use_tables ? o->tables : NULL, &rc);
  if (!db)
    return rc;
  if (!strcmp(sub, "stats"))
    rc = stats(db, o->device);
  else if (!strcmp(sub, "import"))
    rc = import(db, n, args);
  else if (!strcmp(sub, "export"))
    rc = export(db, o);
  else if (fitting)
    rc = fit(db, dev, o->beyond);
  else if (measure)
    rc =
        cli_costdb_measure(db, o->device, o->batch, o->dtype, o->sigs, n, args);
  else
    rc = estimate(db, dev, args[0]);
  cd_close(db);
  return rc;
}

static int costdb(const cli_command *c, int argc, char **argv) {
  static const char *const subs[] = {"stats",    "import",  "export",
                                     "estimate", "measure", "fit"};
  if (argc < 2)
    return cli_usage_error(
        c, "expected stats, import, export, estimate, measure or fit");
  int known = 0;
  for (int i = 0; i < 6; i++)
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
    "inspect, import, export, fit the cost database; estimate a graph",
    "costdb stats [--db PATH] [--device D]\n"
    "       superopt costdb import TABLE.tsv... [--db PATH]\n"
    "       superopt costdb export [--db PATH] [--device D] [-o OUT.tsv]\n"
    "       superopt costdb estimate GRAPH [--device D] [--db PATH]\n"
    "       superopt costdb measure GRAPH... [--device D] [--db PATH]\n"
    "                                [--batch N] [--tables DIR | "
    "--no-tables]\n"
    "       superopt costdb measure --signatures FILE... [--device D] "
    "[--db PATH]\n"
    "       superopt costdb fit [--device D] [--db PATH] [--beyond R]",
    "Operator costs per device (docs/costdb.md). stats: rows per device\n"
    "(from checked-in tables vs measured locally) and an integrity check.\n"
    "import: TSV tables, all in one transaction (a bad line imports\n"
    "nothing). export: rows sorted by device and signature, to standard\n"
    "output or atomically to OUT. estimate: each operator's roofline\n"
    "estimate and measured cost, and the graph's total. measure (CUDA\n"
    "builds, on a GPU): times each distinct operator of the graphs alone\n"
    "(warm-up 5, median of 20) under the GPU's name (h100, h200) or D;\n"
    "with --signatures, the signatures listed (optimize\n"
    "--emit-signatures). fit: the per-operator cost model fitted on D's\n"
    "measured rows, its parameters and its error on rows held out of the\n"
    "fit (5-fold), next to the single scale factor it replaced; with\n"
    "--beyond R, each row it misses by more than R times.\n",
    costdb_table,
    NULL,
    costdb};
