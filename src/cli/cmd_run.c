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
  const char *path, *device, *dump;
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
                                       {"dump", required_argument, 0, 'D'},
                                       {0, 0, 0, 0}};
  *o = (run_opts){NULL, "cpu", NULL, 1, 0, 1};
  int ch;
  long long v;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (ch == '?')
      return cli_usage_error(c, "unknown or incomplete option '%s'",
                             argv[optind - 1]);
    if (ch == 'd' || ch == 'D') {
      *(ch == 'd' ? &o->device : &o->dump) = optarg;
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

/* Writes x (shape s) as a NumPy .npy file (format 1.0, little-endian f4). */
static ir_status write_npy(const char *path, const ir_shape *s, const float *x,
                           ir_diag *d) {
  char hdr[256], dims[160] = "";
  size_t k = 0;
  for (int i = 0; i < s->rank; i++)
    k += (size_t)snprintf(dims + k, sizeof dims - k, "%lld,%s",
                          (long long)s->dim[i], i + 1 < s->rank ? " " : "");
  int n = snprintf(hdr + 10, sizeof hdr - 10,
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }",
                   dims);
  int total = (10 + n + 1 + 63) / 64 * 64; /* header padded to 64 bytes */
  memset(hdr + 10 + n, ' ', (size_t)(total - 10 - n));
  hdr[total - 1] = '\n';
  memcpy(hdr, "\x93NUMPY\x01\x00", 8);
  hdr[8] = (char)((total - 10) & 0xff);
  hdr[9] = (char)((total - 10) >> 8);
  size_t bytes = sizeof(float) * (size_t)ir_shape_numel(s);
  char *buf = malloc((size_t)total + bytes);
  if (!buf)
    return ir_diag_set(d, IR_ERR_NOMEM, 0, 0, "out of memory");
  memcpy(buf, hdr, (size_t)total);
  memcpy(buf + total, x, bytes);
  ir_status st = ir_write_atomic(path, buf, (size_t)total + bytes, d);
  free(buf);
  return st;
}

/* Writes every input, weight and output of g as DIR/<n>.npy and a
 * DIR/manifest.tsv of "kind<TAB>name<TAB>file" lines. */
static int dump_values(const ir_graph *g, const ex_values *v, const char *dir) {
  static const char *kinds[] = {"input", "weight", "value", "output"};
  char path[4096], *man = NULL;
  size_t mlen = 0;
  FILE *m = open_memstream(&man, &mlen);
  ir_diag d;
  ir_status st =
      m ? IR_OK : ir_diag_set(&d, IR_ERR_NOMEM, 0, 0, "out of memory");
  for (int i = 0; !st && i < g->ntensors + g->noutputs; i++) {
    int t = i < g->ntensors ? i : g->outputs[i - g->ntensors];
    int kind = i < g->ntensors ? (int)g->tensors[t].kind : 3; /* output */
    if (kind == IR_T_VALUE)
      continue;
    snprintf(path, sizeof path, "%s/%d.npy", dir, i);
    st = write_npy(path, &g->tensors[t].shape, v->v[t], &d);
    fprintf(m, "%s\t%s\t%d.npy\n", kinds[kind], g->tensors[t].name, i);
  }
  if (m)
    fclose(m);
  snprintf(path, sizeof path, "%s/manifest.tsv", dir);
  if (!st)
    st = ir_write_atomic(path, man, mlen, &d);
  free(man);
  return st ? cli_report(&d) : CLI_OK;
}

/* One timed run from freshly filled inputs; returns ms or -1 on error. */
static double run_once(const ir_graph *g, const run_opts *o, ex_values **keep,
                       int *rc) {
  ir_diag d;
  ex_values *v = ex_values_new(g);
  ex_options eo = {o->threads, 0};
  /* a dump needs the inputs and weights: keep everything */
  eo.keep_all = o->dump != NULL;
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
    if (o.dump)
      rc = dump_values(g, v, o.dump);
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
