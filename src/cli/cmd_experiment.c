/* cmd_experiment.c: `superopt experiment search`: the optimizer's search
 * (srch_optimize, no mutants, no fusion, no check) over a grid of depth,
 * alpha and budget, as CSV and gnuplot figures, each search's cost
 * trajectory (srch_options.trace) and, with --graphs, the graphs found. The
 * figures' script is scripts/plot-experiment.gp, carried in the binary
 * (cmake/embed.cmake). The command's options and set-up, which `experiment
 * candidates` (cmd_candidates.c) shares.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../costdb/costdb.h"
#include "../opt/opt.h"
#include "cli.h"
#include "experiment.h"
#include "plot_experiment.h"

/* "a,b,c" into up to MAX_GRID numbers lo..hi (whole numbers when ints);
 * 0, or -1 after writing the message. */
static int parse_list(const char *opt, const char *s, double lo, double hi,
                      int ints, double *v, int *n, char *msg, size_t len) {
  char buf[512], *save = NULL, *end;
  snprintf(buf, sizeof buf, "%s", s);
  *n = 0;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    double x = *n < MAX_GRID ? (errno = 0, strtod(t, &end)) : 0;
    if (*n == MAX_GRID || errno || end == t || *end || !(x >= lo && x <= hi) ||
        (ints && x != (int)x)) {
      snprintf(msg, len,
               "bad value '%s' for %s: expected up to %d comma-separated %s "
               "%g..%g",
               s, opt, MAX_GRID, ints ? "whole numbers" : "numbers", lo, hi);
      return -1;
    }
    v[(*n)++] = x;
  }
  if (*n)
    return 0;
  snprintf(msg, len, "bad value '%s' for %s: an empty list", s, opt);
  return -1;
}

/* experiment search's grid: --depth, --alpha, --budget lists. */
static int set_depths(void *u, const char *s, char *msg, size_t n) {
  exp_args *a = u;
  double v[MAX_GRID];
  if (parse_list("--depth", s, 0, 1e6, 1, v, &a->ndepth, msg, n))
    return -1;
  for (int i = 0; i < a->ndepth; i++)
    a->depth[i] = (int)v[i];
  return 0;
}

static int set_alphas(void *u, const char *s, char *msg, size_t n) {
  exp_args *a = u;
  return parse_list("--alpha", s, 0.5, 100, 0, a->alpha, &a->nalpha, msg, n);
}

static int set_budgets(void *u, const char *s, char *msg, size_t n) {
  exp_args *a = u;
  double v[MAX_GRID];
  if (parse_list("--budget", s, 0, 1e9, 1, v, &a->nbudget, msg, n))
    return -1;
  for (int i = 0; i < a->nbudget; i++)
    a->budget[i] = (int)v[i];
  return 0;
}

/* --patience P: also remembers that it was given (the grid searches
 * without patience unless it is). */
static int set_patience(void *u, const char *s, char *msg, size_t n) {
  exp_args *a = u;
  if (cli_parse_patience(s, &a->so.patience, msg, n))
    return -1;
  a->patience_given = 1;
  return 0;
}

/* --passes none|rules|hand. */
static int set_passes(void *u, const char *s, char *msg, size_t n) {
  exp_args *a = u;
  return cli_parse_passes(s, &a->pass_rules, msg, n);
}

#define T exp_args
static const cli_opt experiment_table[] = {
    CLI_CALL("depth", "LIST", set_depths,
             "the max depths to try (rewrites from the input;\n"
             "candidates: one, default unlimited)"),
    CLI_CALL("alpha", "LIST", set_alphas,
             "the alphas to try (see optimize; candidates: one,\n"
             "default 1.05)"),
    CLI_CALL("budget", "LIST", set_budgets,
             "the budgets to try (expansions per region;\n"
             "candidates: one, default 100)"),
    CLI_STR(T, "output", 'o', out, "DIR",
            "the results folder (default experiment-search,\n"
            "experiment-candidates)"),
    CLI_RULES_OPT(T, rules,
                  "a rule file, repeatable (as in optimize; default:\n"
                  "rules/default.rules and rules/extended.rules)"),
    CLI_FLAG(T, "allow-unproven", allow_unproven, 1,
             "also use unproven and unverified rules"),
    CLI_CALL("patience", "P", set_patience,
             "stop a region after P expansions that found no\n"
             "cheaper graph (default here: 0, never)"),
    CLI_DOUBLE(T, "time-limit", so.time_limit, "S", 0, 1e6,
               "stop each search after S seconds (default: none)"),
    CLI_INT(T, "region-size", so.region_nodes, "N", 1, 100000,
            "operators per search region (48)"),
    CLI_INT(T, "batch", batch, "N", 1, 1000000,
            "the model rebatched to N first"),
    CLI_STR(T, "device", 0, device, "D",
            "the device costs are for (as in optimize)"),
    CLI_STR(T, "db", 0, db_path, "PATH", "the cost database"),
    CLI_FLAG(T, "no-merge", so.merge, 0,
             "do not merge sibling convolutions/matmuls by hand"),
    CLI_CALL("passes", "none|rules|hand", set_passes,
             "no pass (default), or the ablation: the passes as\n"
             "rules or by hand (as in optimize)"),
    CLI_FLAG(T, "no-rules", no_rules, 1,
             "no rules file: the search has only the pass rules\n"
             "(--passes rules), or none"),
    CLI_FLAG(T, "graphs", graphs, 1,
             "search: also write each grid point's graph (no weight\n"
             "values) to DIR/graphs/, listed in DIR/graphs.tsv\n"
             "(scripts/gpu-rankcorr DIR times them)"),
    CLI_HEADING("experiment candidates:"),
    CLI_INT(T, "regions", regions, "K", 1, 100000,
            "the K costliest regions (default 4)"),
    CLI_INT(T, "per-region", per_region, "N", 2, 100000,
            "up to N candidates per region, the original and\n"
            "the search's pick among them (default 8)"),
    CLI_U64(T, "seed", seed, "S",
            "seed of the choice among the candidates and of\n"
            "the mutants (default 1)"),
    CLI_INT(T, "max-seen", max_seen, "M", 1, 10000000,
            "choose among a seeded sample of M of the distinct\n"
            "graphs a region's search builds (default 2000)"),
    CLI_FLAG(T, "check", check, 1,
             "check each candidate against the model on the CPU\n"
             "executor (as optimize does)"),
    /* not listed: accepted to say they are optimize's (experiment_search) */
    CLI_FLAG(T, "measure", measure, 1, NULL),
    CLI_STR(T, "emit-signatures", 0, emit, "F", NULL), CLI_END};
#undef T

/* Appends one CSV row for a run. */
static void csv_row(base_buf *f, const char *model, const char *device,
                    int depth, double alpha, int budget, const srch_stats *st,
                    const ir_ruleset *rs) {
  int applied = 0;
  for (int i = 0; i < st->nrules; i++)
    applied += st->applied_fw[i] + st->applied_bw[i];
  base_buf_printf(f, "%s,%d,%g,%d,%.4f,%d,%.4f,%d,", model, depth, alpha,
                  budget, st->cost_after, st->expanded, st->seconds, applied);
  int any = 0;
  for (int i = 0; i < st->nrules; i++)
    if (st->applied_fw[i] + st->applied_bw[i])
      base_buf_printf(f, "%s%s:%d", any++ ? " " : "", rs->rules[i].id,
                      st->applied_fw[i] + st->applied_bw[i]);
  base_buf_printf(f, ",%.4f,%s\n", st->cost_before, device);
}

/* The largest of n ints / doubles. */
static int max_int(const int *v, int n) {
  int m = v[0];
  for (int i = 1; i < n; i++)
    m = v[i] > m ? v[i] : m;
  return m;
}

static double max_double(const double *v, int n) {
  double m = v[0];
  for (int i = 1; i < n; i++)
    m = v[i] > m ? v[i] : m;
  return m;
}

/* A grid point's trajectory (trajectory.csv): the whole graph's cost
 * after each stage of srch_optimize, kept between stages as the running
 * sum of the regions' improvements as each region's search ends. The time
 * its own costing takes (over) is left out of the rows' times and of the
 * search's time in results.csv. */
typedef struct traj {
  base_buf *f; /* NULL: not recorded (the warm-up) */
  const srch_options *o;
  int run, depth, budget;
  double alpha, t0, cost, over;
  const char *model;
  base_status st; /* the first costing error */
} traj;

static void traj_row(traj *t, const char *event) {
  base_buf_printf(t->f, "%d,%s,%d,%g,%d,%.4f,%.4f,%s\n", t->run, t->model,
                  t->depth, t->alpha, t->budget, base_now() - t->t0 - t->over,
                  t->cost, event);
}

static double traj_cost(traj *t, const ir_graph *g) {
  double c = 0;
  int est = 0;
  base_diag d;
  base_status st = cd_sum_cost(g, t->o->cost, t->o->cost_u, &c, &est, &d);
  if (st && !t->st)
    t->st = st;
  return c;
}

static void traj_trace(void *u, const ir_graph *before, const ir_graph *after,
                       int whole) {
  traj *t = u;
  double t1 = base_now();
  if (whole) {
    t->cost = traj_cost(t, after);
    t->over += base_now() - t1;
    traj_row(t, "stage");
    return;
  }
  double delta = traj_cost(t, after) - traj_cost(t, before);
  t->over += base_now() - t1;
  if (delta < 0) { /* a region that found nothing adds no point */
    t->cost += delta;
    traj_row(t, "region");
  }
}

/* One search of the grid (st filled); its trajectory into t->f and, with
 * --graphs, its graph into DIR/graphs/ (listed in gl), else dropped. */
static int search_once(const exp_args *a, const ir_graph *g,
                       const opt_rules *rl, traj *t, srch_stats *st,
                       const char *dir, base_buf *gl) {
  srch_options o = a->so;
  base_diag d;
  o.fuse_k = 0; /* the grid prices unfused graphs */
  o.max_depth = t->depth;
  o.alpha = t->alpha;
  o.budget = t->budget;
  t->o = &o;
  if (t->f) {
    o.trace = traj_trace;
    o.trace_u = t;
    t->t0 = base_now();
    t->cost = traj_cost(t, g);
    traj_row(t, "start");
  }
  ir_graph *h = srch_optimize(g, rl->all, &o, st, &d);
  if (!h) {
    srch_stats_free(st);
    return cli_report(&d);
  }
  int rc = CLI_OK;
  st->seconds -= t->over; /* the search's own time */
  if (t->f && !t->st) {
    t->cost = st->cost_after;
    traj_row(t, "end");
  } else if (t->st) {
    fprintf(stderr, "superopt: experiment: a trajectory cost failed\n");
    rc = CLI_INTERNAL;
  }
  if (!rc && gl) {
    char path[4096], name[128];
    snprintf(name, sizeof name, "d%d_a%g_b%d.graph", t->depth, t->alpha,
             t->budget);
    snprintf(path, sizeof path, "%s/graphs/%s", dir, name);
    if (!(rc = cli_write_graph(h, path, 1)))
      base_buf_printf(gl, "%s\t0\t%d\tgraphs/%s\t%.4f\td%d/a%g/b%d\n", t->model,
                      t->run, name, st->cost_after, t->depth, t->alpha,
                      t->budget);
  }
  if (rc)
    srch_stats_free(st);
  ir_graph_free(h);
  return rc;
}

/* A first search at the grid's largest depth, alpha and budget, not
 * timed: the first search of a process proves the rule instances it meets
 * and looks costs up in the database, which later ones find done; without
 * it, the first row's time (the smallest budget's) carried that work. */
static int warm_up(const exp_args *a, const ir_graph *g, const opt_rules *rl) {
  srch_stats st;
  int depth = max_int(a->depth, a->ndepth),
      budget = max_int(a->budget, a->nbudget);
  double alpha = max_double(a->alpha, a->nalpha);
  fprintf(stderr,
          "experiment: warm-up: depth %d, alpha %g, budget %d (not timed)\n",
          depth, alpha, budget);
  traj t = {.depth = depth, .alpha = alpha, .budget = budget};
  int rc = search_once(a, g, rl, &t, &st, NULL, NULL);
  if (!rc)
    srch_stats_free(&st);
  return rc;
}

/* The grid's runs: rows of results.csv into f, of trajectory.csv into tf,
 * of graphs.tsv into gl (--graphs; the graphs written into dir). */
static int run_grid(const exp_args *a, const ir_graph *g, const char *model,
                    const opt_rules *rl, base_buf *f, base_buf *tf,
                    const char *dir, base_buf *gl, double *original) {
  base_buf_printf(f, "model,depth,alpha,budget,cost,expansions,time_s,applied,"
                     "rules,original_cost,device\n");
  base_buf_printf(tf, "run,model,depth,alpha,budget,time_s,cost,event\n");
  if (gl)
    base_buf_printf(gl, "network\tregion\tcand\tfile\test_us\thow\n");
  int run = 0, runs = a->ndepth * a->nalpha * a->nbudget;
  double spent = 0;
  int rc = warm_up(a, g, rl);
  /* a series (alpha, budget) is contiguous rows: gnuplot joins them */
  for (int j = 0; !rc && j < a->nalpha; j++)
    for (int k = 0; !rc && k < a->nbudget; k++)
      for (int i = 0; !rc && i < a->ndepth; i++) {
        srch_stats st;
        fprintf(stderr,
                "experiment: run %d/%d: depth %d, alpha %g, budget %d "
                "(%.1f s so far)\n",
                ++run, runs, a->depth[i], a->alpha[j], a->budget[k], spent);
        traj t = {.f = tf,
                  .run = run,
                  .depth = a->depth[i],
                  .budget = a->budget[k],
                  .alpha = a->alpha[j],
                  .model = model};
        if ((rc = search_once(a, g, rl, &t, &st, dir, gl)))
          break;
        *original = st.cost_before;
        spent += st.seconds;
        csv_row(f, model, a->cost.dev->name, a->depth[i], a->alpha[j],
                a->budget[k], &st, &rl->rs);
        printf("depth %d alpha %g budget %d: cost %.2f us (original %.2f "
               "us), %d expanded, %.2f s\n",
               a->depth[i], a->alpha[j], a->budget[k], st.cost_after,
               st.cost_before, st.expanded, st.seconds);
        srch_stats_free(&st);
      }
  return rc;
}

int cli_exp_ensure_dir(const char *dir) {
  if (mkdir(dir, 0777) == 0 || errno == EEXIST)
    return CLI_OK;
  fprintf(stderr, "superopt: cannot create '%s': %s\n", dir, strerror(errno));
  return CLI_BAD_INPUT;
}

static void list_words(char *buf, size_t n, const double *v, int k) {
  size_t len = 0;
  for (int i = 0; i < k && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%g", i ? " " : "", v[i]);
}

/* s with every character a gnuplot single-quoted string cannot hold
 * (a quote, a backslash, a control character) replaced by '_'. */
static void plot_safe(char *out, size_t n, const char *s) {
  snprintf(out, n, "%s", s);
  for (char *p = out; *p; p++)
    if (*p == '\'' || *p == '\\' || (unsigned char)*p < 32)
      *p = '_';
}

static int write_plots(const exp_args *a, const char *dir, const char *model,
                       double original) {
  char path[4096], al[256], bl[256], cmd[4400], name[256], dev[256];
  double b[MAX_GRID];
  for (int i = 0; i < a->nbudget; i++)
    b[i] = a->budget[i];
  list_words(al, sizeof al, a->alpha, a->nalpha);
  list_words(bl, sizeof bl, b, a->nbudget);
  plot_safe(name, sizeof name, model);
  plot_safe(dev, sizeof dev, a->cost.dev->name);
  base_buf text = {0};
  base_buf_printf(&text,
                  "# Written by superopt experiment search; run: gnuplot "
                  "plot.gp\nALPHAS = '%s'\nBUDGETS = '%s'\nMODEL = '%s'\n"
                  "DEVICE = '%s'\nORIGINAL = %.4f\nRUNLABELS = '",
                  al, bl, name, dev, original);
  /* run_grid's order: alpha, budget, depth */
  for (int j = 0; j < a->nalpha; j++)
    for (int k = 0; k < a->nbudget; k++)
      for (int i = 0; i < a->ndepth; i++)
        base_buf_printf(&text, "%sd%d/a%g/b%d", i + j + k ? " " : "",
                        a->depth[i], a->alpha[j], a->budget[k]);
  base_buf_printf(&text, "'\n%s", plot_script);
  base_diag d;
  snprintf(path, sizeof path, "%s/plot.gp", dir);
  base_status st = base_buf_write(&text, path, &d);
  free(text.s);
  if (st)
    return cli_report(&d);
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    printf("gnuplot not found: no PNG figures (%s written; run it with "
           "gnuplot in %s)\n",
           path, dir);
    return CLI_OK;
  }
  snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plot.gp", dir);
  int ws = system(cmd);
  if (ws != 0) {
    /* system() ignores SIGINT while gnuplot runs: pass an interrupt on */
    int sig = WIFSIGNALED(ws)                          ? WTERMSIG(ws)
              : WIFEXITED(ws) && WEXITSTATUS(ws) > 128 ? WEXITSTATUS(ws) - 128
                                                       : 0;
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
      raise(sig);
    fprintf(stderr, "superopt: gnuplot failed on %s\n", path);
    return CLI_INTERNAL;
  }
  printf("wrote %s/cost_vs_depth.png, %s/cost_vs_time.png and "
         "%s/trajectory.png\n",
         dir, dir, dir);
  return CLI_OK;
}

/* What is wrong with the operands and options of `experiment search`
 * (cands 0) or `experiment candidates` (1), or NULL. */
static const char *bad_options(const exp_args *a, int nargs, int cands) {
  int cand_opts =
      a->regions || a->per_region || a->seed || a->max_seen || a->check;
  return nargs != 1 ? (cands ? "expected 'candidates MODEL'"
                             : "expected 'search MODEL'")
         : !cands && (!a->ndepth || !a->nalpha || !a->nbudget)
             ? "--depth, --alpha and --budget are required"
         : !cands && cand_opts
             ? "--regions, --per-region, --seed, --max-seen and --check are "
               "for 'experiment candidates'"
         : cands && (a->ndepth > 1 || a->nalpha > 1 || a->nbudget > 1)
             ? "candidates takes one --depth, --alpha and --budget"
         : strchr(a->out ? a->out : "", '\'') ? "DIR must not contain a quote"
         : a->measure || a->emit
             ? "--measure and --emit-signatures are for 'optimize'"
         : a->no_rules && a->rules.list[0] ? "--no-rules and --rules conflict"
                                           : NULL;
}

/* The search's knobs from the options: search's grid searches without
 * patience unless it is given; candidates takes optimize's defaults but
 * for the budget (100: every new graph is built and kept). */
static void search_knobs(exp_args *a, int cands) {
  if (!cands) {
    if (!a->patience_given) /* the budget is what the grid varies */
      a->so.patience = 0;
    return;
  }
  a->so.budget = a->nbudget ? a->budget[0] : 100;
  if (a->nalpha)
    a->so.alpha = a->alpha[0];
  if (a->ndepth)
    a->so.max_depth = a->depth[0];
  a->regions = a->regions ? a->regions : 4;
  a->per_region = a->per_region ? a->per_region : 8;
  a->max_seen = a->max_seen ? a->max_seen : 2000;
  a->seed = a->seed ? a->seed : 1;
}

/* The options, the cost database and model, the rules (opt_rules_load,
 * as optimize reads them), the model; CLI_OK or the exit status. */
static int setup(const cli_command *c, int argc, char **argv, int cands,
                 exp_args *a, opt_rules *rl, ir_graph **g) {
  memset(a, 0, sizeof *a);
  srch_options_default(&a->so);
  a->pass_rules = CLI_PASSES_NONE;
  int rc = cli_parse_opts(c, argc, argv, a);
  if (rc)
    return rc;
  const char *bad = bad_options(a, argc - optind, cands);
  if (bad)
    return cli_usage_error(c, "%s", bad);
  search_knobs(a, cands);
  base_diag d;
  const cd_device *dev = cd_device_find(a->device ? a->device : "h100", &d);
  if (!dev)
    return cli_usage_error(c, "%s", d.msg);
  const char *tables = cli_data_file("costdb", &rc);
  if (!tables || !(a->db = cli_costdb_open(a->db_path, tables, &rc)))
    return rc;
  cd_model_init(&a->cost, a->db, dev);
  const char *rules = a->no_rules ? NULL : cli_rules_files(&a->rules, &rc);
  int want = a->pass_rules == CLI_PASSES_RULES;
  const char *passes = want ? cli_data_file("rules/passes.rules", &rc) : NULL;
  if ((!a->no_rules && !rules) || (want && !passes))
    return rc;
  a->so.no_passes = a->pass_rules == CLI_PASSES_NONE;
  if (opt_rules_load(rules, passes, a->allow_unproven, rl, &d))
    return cli_report(&d);
  cli_print_rules_read(rl, a->pass_rules, passes);
  a->so.pass_rules = rl->pass;
  a->so.cost = cd_model_cost;
  a->so.cost_u = &a->cost;
  a->so.fuse_bound = cd_model_cost_bound; /* as optimize's */
  if (!(*g = cli_load(argv[optind], &rc)))
    return rc;
  if (a->batch && (rc = cli_rebatch(g, a->batch)))
    return rc;
  if (cd_model_fit(&a->cost, &d))
    return cli_report(&d);
  cli_print_cost_model(&a->cost, NULL);
  return CLI_OK;
}

/* results.csv, then plot.gp and its figures. */
static int write_results(const exp_args *a, const char *dir, const char *model,
                         const base_buf *csv, const base_buf *tf,
                         const base_buf *gl, double original) {
  const base_buf *bufs[3] = {csv, tf, gl};
  const char *names[3] = {"results.csv", "trajectory.csv", "graphs.tsv"};
  for (int i = 0; i < 3; i++) {
    char path[4096];
    base_diag d;
    if (!bufs[i]->s)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (base_buf_write(bufs[i], path, &d))
      return cli_report(&d);
    printf("wrote %s\n", path);
  }
  return write_plots(a, dir, model, original);
}

/* The model's name: the graph's, else the file's without extension. */
static void model_name(const ir_graph *g, const char *path, char *out,
                       size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(out, n, "%.*s", (int)strcspn(base, "."), base);
  if (g->name[0])
    snprintf(out, n, "%s", g->name);
}

static int experiment_search(const cli_command *c, int argc, char **argv) {
  exp_args a;
  opt_rules rl;
  ir_graph *g = NULL;
  memset(&rl, 0, sizeof rl);
  int rc = setup(c, argc, argv, 0, &a, &rl, &g);
  const char *dir = a.out ? a.out : "experiment-search";
  base_buf csv = {0}, tf = {0}, gl = {0};
  double original = 0;
  char model[256], gdir[4096];
  if (!rc) {
    model_name(g, argv[optind], model, sizeof model);
    snprintf(gdir, sizeof gdir, "%s/graphs", dir);
    if (!(rc = cli_exp_ensure_dir(dir)) &&
        !(rc = a.graphs ? cli_exp_ensure_dir(gdir) : CLI_OK))
      rc = run_grid(&a, g, model, &rl, &csv, &tf, dir, a.graphs ? &gl : NULL,
                    &original);
  }
  if (!rc)
    rc = write_results(&a, dir, model, &csv, &tf, &gl, original);
  free(csv.s);
  free(tf.s);
  free(gl.s);
  ir_graph_free(g);
  opt_rules_free(&rl);
  cd_close(a.db);
  return rc;
}

static int experiment_candidates(const cli_command *c, int argc, char **argv) {
  exp_args a;
  opt_rules rl;
  ir_graph *g = NULL;
  memset(&rl, 0, sizeof rl);
  int rc = setup(c, argc, argv, 1, &a, &rl, &g);
  char model[256];
  if (!rc) {
    model_name(g, argv[optind], model, sizeof model);
    a.out = a.out ? a.out : "experiment-candidates";
    if (!(rc = cli_exp_ensure_dir(a.out)))
      rc = cli_experiment_candidates(&a, &rl, g, model);
  }
  ir_graph_free(g);
  opt_rules_free(&rl);
  cd_close(a.db);
  return rc;
}

static int experiment(const cli_command *c, int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "search"))
    return experiment_search(c, argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "candidates"))
    return experiment_candidates(c, argc - 1, argv + 1);
  return cli_usage_error(c, "expected 'search' or 'candidates'");
}

const cli_command cli_cmd_experiment = {
    "experiment",
    "run an experiment: a search grid, or a region's candidates",
    "experiment search MODEL --depth 0,1,2,4,8 --alpha 1.0,1.05,1.2\n"
    "       --budget 100,1000 [-o DIR] [options]\n"
    "   or: superopt experiment candidates MODEL [-o DIR] [--regions K]\n"
    "       [--per-region N] [--device D] [--seed S] [options]",
    "search: optimizes MODEL once per combination of the listed depths,\n"
    "alphas and budgets (no end-to-end check; progress on standard error)\n"
    "and writes DIR/results.csv (model, depth, alpha, budget, cost,\n"
    "expansions, time, rules applied, the original's cost, device),\n"
    "DIR/plot.gp and, when gnuplot is installed, DIR/cost_vs_depth.png\n"
    "and DIR/cost_vs_time.png (titled with model and device, the\n"
    "original's cost as a baseline), DIR/trajectory.csv and .png (each\n"
    "search's cost over its time: after each stage and each region).\n"
    "--graphs: each grid point's graph into DIR/graphs/ (graphs.tsv;\n"
    "scripts/gpu-rankcorr DIR times them on a GPU). DIR defaults to\n"
    "experiment-search.\n"
    "\n"
    "candidates: after optimize's passes, searches each of the K costliest\n"
    "regions (by estimated cost) on its own, keeping a seeded sample of\n"
    "the distinct graphs the search builds, and writes up to N of them\n"
    "per region (the original, the search's pick, a mutant that pays\n"
    "under estimates, the rest drawn across the range of their fused\n"
    "cost, distinct once fused)\n"
    "as whole networks: the model with that region replaced, then split\n"
    "folding, dead code removal, fusion, order and lowering as optimize\n"
    "runs them (DIR/original.graph, DIR/rK_cJ.graph), and\n"
    "DIR/candidates.tsv: network, region, candidate, file, the whole\n"
    "graph's estimated cost (us), the region's (unfused, and fused and\n"
    "lowered), the pick, distinct graphs seen, how it was made (rule ids\n"
    "with > forward or < backward, mutant, original). Deterministic for a\n"
    "seed. DIR defaults to experiment-candidates; scripts/gpu-rankcorr\n"
    "measures the files (docs/search.md).\n",
    experiment_table,
    NULL,
    experiment};
