/* cmd_run.c: `superopt run`: execute a graph on seeded random data and
 * print each output's shape, checksums and the run time. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../exec/exec.h"
#include "cli.h"

typedef struct run_opts {
  const char *path, *device;
  uint64_t seed;
  int threads, iters;
} run_opts;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int parse_opts(const cli_command *c, int argc, char **argv,
                      run_opts *o) {
  static const struct option opts[] = {{"device", required_argument, 0, 'd'},
                                       {"seed", required_argument, 0, 's'},
                                       {"threads", required_argument, 0, 't'},
                                       {"iters", required_argument, 0, 'i'},
                                       {0, 0, 0, 0}};
  *o = (run_opts){NULL, "cpu", 1, 0, 1};
  int ch;
  long long v;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (ch == '?')
      return cli_usage_error(c, "unknown or incomplete option '%s'",
                             argv[optind - 1]);
    if (ch == 'd') {
      o->device = optarg;
      continue;
    }
    if ((v = cli_parse_count(optarg)) < 0)
      return cli_usage_error(c, "bad value '%s' for --%s", optarg,
                             ch == 's'   ? "seed"
                             : ch == 't' ? "threads"
                                         : "iters");
    if (ch == 's')
      o->seed = (uint64_t)v;
    else if (ch == 't' && v <= 1024)
      o->threads = (int)v;
    else if (ch == 'i' && v >= 1 && v <= 100000)
      o->iters = (int)v;
    else
      return cli_usage_error(c, "value '%s' out of range", optarg);
  }
  if (argc - optind != 1)
    return cli_usage_error(c, "expected one GRAPH");
  o->path = argv[optind];
  if (strcmp(o->device, "cpu") != 0)
    return cli_usage_error(c, "unknown device '%s' (this build has: cpu)",
                           o->device);
  return CLI_OK;
}

static void print_output(const ir_graph *g, int t, const float *x) {
  const ir_tensor *o = &g->tensors[t];
  int64_t n = ir_shape_numel(&o->shape);
  double sum = 0, abs = 0;
  int finite = 1;
  for (int64_t i = 0; i < n; i++) {
    sum += x[i];
    abs += fabs(x[i]);
    finite &= isfinite(x[i]) != 0;
  }
  char sh[96];
  printf("output %s %s: sum=%.6e mean_abs=%.6e xxh3=%016" PRIx64 "%s\n",
         o->name, ir_shape_str(&o->shape, sh, sizeof sh), sum, abs / (double)n,
         XXH3_64bits(x, sizeof(float) * (size_t)n),
         finite ? "" : " (contains inf/nan)");
}

/* One timed run from freshly filled inputs; returns ms or -1 on error. */
static double run_once(const ir_graph *g, const run_opts *o, ex_values **keep,
                       int *rc) {
  ir_diag d;
  ex_values *v = ex_values_new(g);
  ex_options eo = {o->threads, 0};
  if (!v || ex_fill_random(g, v, o->seed, &d)) {
    ex_values_free(v);
    *rc = v ? cli_report(&d) : CLI_INTERNAL;
    return -1;
  }
  double t0 = now_ms();
  ir_status st = ex_run(g, v, &eo, &d);
  double ms = now_ms() - t0;
  if (st) {
    ex_values_free(v);
    *rc = cli_report(&d);
    return -1;
  }
  ex_values_free(*keep);
  *keep = v;
  return ms;
}

int cli_run(const cli_command *c, int argc, char **argv) {
  run_opts o;
  int rc = parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  ir_graph *g = cli_load(o.path, &rc);
  if (!g)
    return rc;
  double *ms = calloc((size_t)o.iters, sizeof *ms);
  ex_values *v = NULL;
  for (int i = 0; ms && i < o.iters && rc == CLI_OK; i++)
    ms[i] = run_once(g, &o, &v, &rc);
  if (!ms)
    rc = CLI_INTERNAL;
  if (rc == CLI_OK) {
    for (int i = 0; i < g->noutputs; i++)
      print_output(g, g->outputs[i], v->v[g->outputs[i]]);
    qsort(ms, (size_t)o.iters, sizeof *ms, cmp_double);
    int threads = o.threads;
#ifdef _OPENMP
    if (!threads)
      threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    printf("time: %.1f ms (median of %d run%s; min %.1f ms; device cpu, %d "
           "thread%s, seed %" PRIu64 ")\n",
           ms[o.iters / 2], o.iters, o.iters == 1 ? "" : "s", ms[0], threads,
           threads == 1 ? "" : "s", o.seed);
  }
  free(ms);
  ex_values_free(v);
  ir_graph_free(g);
  return rc;
}
