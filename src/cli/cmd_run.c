/* cmd_run.c: `superopt run`: execute a graph on seeded random data (or
 * inputs from a file) and print each output's shape, checksums and the run
 * time (and write the outputs to a file); on the CPU
 * reference executor or, in a CUDA build, on the GPU (--device cuda), with
 * an optional check against the CPU and a per-operator profile. */
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
#ifdef SUPEROPT_HAVE_CUDA
#include "../gpu/gpu.h"
#define RUN_DEVICES "cpu, cuda"
#else
#define RUN_DEVICES "cpu"
#endif

#define RUN_ORDERS 8 /* node orders timed by default (--orders) */

typedef struct run_opts {
  const char *path, *device, *dump, *profile_tsv, *inputs, *outputs;
  uint64_t seed;
  int threads, iters, warmup, batch, streams, orders;
  int dtype; /* --dtype: an ir_dtype (IR_DT_F32: as the model is) */
  int check, strict, profile, poison, no_fold, legacy_conv, nchw, fast_gelu;
  ox_options ox; /* an .onnx model's import options */
} run_opts;

/* --dtype f16|bf16. */
static int set_dtype(void *u, const char *s, char *msg, size_t n) {
  return cli_parse_dtype(s, &((run_opts *)u)->dtype, msg, n);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define T run_opts
static const cli_opt run_table[] = {
    CLI_STR(T, "device", 0, device, "D",
            "where to run: cpu (default) or cuda (CUDA builds)"),
    CLI_U64(T, "seed", seed, "S",
            "seed of the random inputs and weights (default 1)"),
    CLI_INT(T, "threads", threads, "N", 0, 1024,
            "CPU threads (default: all cores)"),
    CLI_INT(T, "iters", iters, "K", 1, 100000,
            "time K runs and report the median (default 1)"),
    CLI_INT(T, "batch", batch, "N", 1, 65536,
            "rescale the batch (dim 0 of the inputs) to N (an\n"
            ".onnx model's dynamic first dimensions: import at N)"),
    CLI_IMPORT_OPTS(T, ox),
    CLI_CALL("dtype", "T", set_dtype,
             "f16 or bf16: run the model converted to that type\n"
             "(reductions, softmax and normalisation in float32;\n"
             "docs/half.md)"),
    CLI_STR(T, "inputs", 0, inputs, "FILE",
            "take the inputs named in FILE (safetensors: F32, or\n"
            "the input's type) instead of drawing them"),
    CLI_STR(T, "outputs", 0, outputs, "FILE",
            "write every output to FILE (safetensors, F32)"),
    CLI_STR(T, "dump", 0, dump, "DIR",
            "write inputs, weights and outputs as DIR/*.npy and\n"
            "DIR/manifest.tsv (kind, name, file), for checks\n"
            "against other runtimes (cpu)"),
    CLI_HEADING("With --device cuda (docs/cuda.md):"),
    CLI_INT(T, "warmup", warmup, "W", 0, 100000,
            "untimed runs before timing (default 10)"),
    CLI_FLAG(T, "check", check, 1,
             "compare every output with the CPU reference executor\n"
             "(relative L2 error <= 1e-3 with TF32, 1e-5 strict; a\n"
             "half graph element-wise at its type's tolerance)"),
    CLI_FLAG(T, "fp32-strict", strict, 1,
             "no TF32 in convolutions and matmuls"),
    CLI_FLAG(T, "profile", profile, 1,
             "per-operator time breakdown and the 10 slowest nodes"),
    CLI_STR(T, "profile-tsv", 0, profile_tsv, "FILE",
            "with the profile, every node's time as a table:\n"
            "node, line, operator, engine, output, shape, ms"),
    CLI_FLAG(T, "poison", poison, 1,
             "debug: fill every released buffer with NaN"),
    CLI_FLAG(T, "no-fold", no_fold, 1,
             "none of the executor's own fusion: no cuDNN plans with an\n"
             "epilogue, no matmuls reading transposes in place (the\n"
             "graph's lowered folds still run as the graph says)"),
    CLI_FLAG(T, "legacy-conv", legacy_conv, 1,
             "legacy cuDNN convolution algorithms only"),
    CLI_FLAG(T, "nchw", nchw, 1,
             "keep every tensor NCHW (default: convolution chains\n"
             "run channels-last, NHWC)"),
    CLI_INT(T, "streams", streams, "N", 0, 8,
            "run independent branches side by side on up to N\n"
            "streams (1: one stream; default 0: up to 8 when the\n"
            "timed replay is faster than on one stream)"),
    CLI_INT(T, "orders", orders, "N", 0, 64,
            "where branches run side by side, time N orders of the\n"
            "graph's nodes (a canonical one, the same for every file\n"
            "of one program, and N - 1 random ones drawn from it) and\n"
            "keep the fastest (default 0: 8; 1: the file's own order)"),
    CLI_FLAG(T, "fast-gelu", fast_gelu, 1,
             "a matmul's gelu in cuBLASLt's epilogue: its tanh\n"
             "approximation (at most 4.7e-4 from the exact gelu)"),
    CLI_END};
#undef T

static int parse_opts(const cli_command *c, int argc, char **argv,
                      run_opts *o) {
  *o = (run_opts){.device = "cpu", .seed = 1, .iters = 1, .warmup = -1};
  int rc = cli_parse_opts(c, argc, argv, o);
  if (rc)
    return rc;
  if (argc - optind != 1)
    return cli_usage_error(c, "expected one GRAPH");
  o->path = argv[optind];
  if (o->profile_tsv)
    o->profile = 1;
  int cuda = !strcmp(o->device, "cuda");
#ifndef SUPEROPT_HAVE_CUDA
  cuda = 0;
#endif
  if (strcmp(o->device, "cpu") != 0 && !cuda)
    return cli_usage_error(c, "unknown device '%s' (this build has: %s)",
                           o->device, RUN_DEVICES);
  if (!cuda && (o->check || o->strict || o->profile || o->poison ||
                o->no_fold || o->legacy_conv || o->nchw || o->fast_gelu ||
                o->warmup >= 0 || o->streams || o->orders))
    return cli_usage_error(c, "--check, --fp32-strict, --profile(-tsv), "
                              "--poison, "
                              "--no-fold, --legacy-conv, --nchw, --fast-gelu, "
                              "--streams, --orders and --warmup need --device "
                              "cuda");
  if (cuda && o->dump)
    return cli_usage_error(c, "--dump is for --device cpu");
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
static base_status write_npy(const char *path, const ir_shape *s,
                             const float *x, base_diag *d) {
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
  char *buf = base_malloc((size_t)total + bytes);
  if (!buf)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  memcpy(buf, hdr, (size_t)total);
  memcpy(buf + total, x, bytes);
  base_status st = base_write_atomic(path, buf, (size_t)total + bytes, d);
  free(buf);
  return st;
}

/* Writes every input, weight and output of g as DIR/<n>.npy (DIR made if
 * absent) and a DIR/manifest.tsv of "kind<TAB>name<TAB>file" lines. */
static int dump_values(const ir_graph *g, const ex_values *v, const char *dir) {
  static const char *kinds[] = {"input", "weight", "value", "output"};
  char path[4096];
  base_buf man = {0};
  base_diag d;
  base_status st = BASE_OK;
  int rc = cli_make_dir("run", "--dump", dir);
  if (rc)
    return rc;
  for (int i = 0; !st && i < g->ntensors + g->noutputs; i++) {
    int t = i < g->ntensors ? i : g->outputs[i - g->ntensors];
    int kind = i < g->ntensors ? (int)g->tensors[t].kind : 3; /* output */
    if (kind == IR_T_VALUE)
      continue;
    snprintf(path, sizeof path, "%s/%d.npy", dir, i);
    st = write_npy(path, &g->tensors[t].shape, v->v[t], &d);
    base_buf_printf(&man, "%s\t%s\t%d.npy\n", kinds[kind], g->tensors[t].name,
                    i);
  }
  snprintf(path, sizeof path, "%s/manifest.tsv", dir);
  if (!st)
    st = base_buf_write(&man, path, &d);
  free(man.s);
  return st ? cli_report(&d) : CLI_OK;
}

/* Writes the outputs of g (values vals[i] of g->outputs[i]) to path as
 * safetensors, each tensor once. */
static int write_outputs(const ir_graph *g, float *const *vals,
                         const char *path) {
  int n = 0, k = g->noutputs ? g->noutputs : 1;
  const char **names = base_calloc((size_t)k, sizeof *names);
  const ir_shape **shapes = base_calloc((size_t)k, sizeof *shapes);
  const float **v = base_calloc((size_t)k, sizeof *v);
  int rc = names && shapes && v ? CLI_OK : cli_oom();
  for (int i = 0; !rc && i < g->noutputs; i++) {
    const ir_tensor *t = &g->tensors[g->outputs[i]];
    int seen = 0;
    for (int j = 0; j < n; j++)
      seen |= !strcmp(names[j], t->name);
    if (seen)
      continue;
    names[n] = t->name, shapes[n] = &t->shape, v[n++] = vals[i];
  }
  base_diag d;
  if (!rc && ir_values_write(path, n, names, shapes, v, &d))
    rc = cli_report(&d);
  free(names), free(shapes), free(v);
  return rc;
}

/* One timed run from freshly filled inputs; returns ms or -1 on error. */
static double run_once(const ir_graph *g, const run_opts *o, ex_values **keep,
                       int *rc) {
  base_diag d;
  ex_values *v = ex_values_new(g);
  ex_options eo = {o->threads, 0};
  /* a dump needs the inputs and weights: keep everything */
  eo.keep_all = o->dump != NULL;
  if (!v || ex_fill_random(g, v, o->seed, &d)) {
    ex_values_free(v);
    *rc = v ? cli_report(&d) : cli_oom();
    return -1;
  }
  double t0 = (base_now() * 1e3);
  base_status st = ex_run(g, v, &eo, &d);
  double ms = (base_now() * 1e3) - t0;
  if (st) {
    ex_values_free(v);
    *rc = cli_report(&d);
    return -1;
  }
  ex_values_free(*keep);
  *keep = v;
  return ms;
}

#ifdef SUPEROPT_HAVE_CUDA
/* ---- --device cuda ----------------------------------------------------------
 */

/* ||gpu - cpu||_2 / ||cpu||_2 (0 when both are zero; inf on NaN). */
static double rel_error(const float *gpu, const float *cpu, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = (double)gpu[i] - (double)cpu[i];
    num += e * e;
    den += (double)cpu[i] * cpu[i];
  }
  if (!isfinite(num))
    return INFINITY;
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* A half graph's outputs (docs/half.md): the largest |gpu - cpu| / (tol *
 * (max|cpu| + |cpu|)) over the elements of each, at most 1 (the end-to-end
 * check's criterion, tol = ex_half_tolerance of the graph's type and
 * depth); inf on NaN. */
static int check_half(const ir_graph *g, ex_values *v, float **gpu) {
  ir_dtype ty = ir_graph_float_type(g);
  int depth = ex_graph_depth(g);
  double tol = ex_half_tolerance(ty, depth < 1 ? 1 : depth);
  int bad = 0;
  for (int i = 0; i < g->noutputs; i++) {
    int t = g->outputs[i];
    int64_t n = ir_shape_numel(&g->tensors[t].shape);
    const float *c = v->v[t];
    double mx = 0, worst = 0;
    for (int64_t k = 0; k < n; k++)
      mx = fmax(mx, fabs(c[k]));
    for (int64_t k = 0; k < n; k++) {
      double lim = tol * (mx + fabs(c[k]));
      double e = fabs((double)gpu[i][k] - c[k]);
      double r = e <= lim      ? (lim > 0 ? e / lim : 0)
                 : isfinite(e) ? e / lim
                               : INFINITY;
      worst = r > worst || isnan(r) ? r : worst;
    }
    bad |= !(worst <= 1.0);
    printf("check %s: worst element at %.3f of the %s tolerance %.3g "
           "(depth %d) %s\n",
           g->tensors[t].name, worst, ir_dtype_name(ty), tol, depth,
           worst <= 1.0 ? "ok" : "FAIL");
  }
  return bad;
}

/* Runs the CPU reference on v (inputs, weights already there) and compares
 * every output with the GPU's; returns CLI_OK or CLI_INTERNAL. */
static int check_outputs(const ir_graph *g, ex_values *v, float **gpu,
                         const run_opts *o) {
  base_diag d;
  ex_options eo = {o->threads, 0};
  if (ex_run(g, v, &eo, &d))
    return cli_report(&d);
  if (ir_dtype_is_half(ir_graph_float_type(g))) {
    if (!check_half(g, v, gpu))
      return CLI_OK;
    fprintf(stderr, "superopt: error: the GPU's outputs differ from the CPU "
                    "reference executor's\n");
    return CLI_INTERNAL;
  }
  double tol = o->strict ? 1e-5 : 1e-3;
  int bad = 0;
  for (int i = 0; i < g->noutputs; i++) {
    int t = g->outputs[i];
    double e = rel_error(gpu[i], v->v[t], ir_shape_numel(&g->tensors[t].shape));
    bad |= !(e <= tol);
    printf("check %s: rel_err=%.3e (tolerance %.0e) %s\n", g->tensors[t].name,
           e, tol, e <= tol ? "ok" : "FAIL");
  }
  if (bad)
    fprintf(stderr, "superopt: error: the GPU's outputs differ from the CPU "
                    "reference executor's\n");
  return bad ? CLI_INTERNAL : CLI_OK;
}

typedef struct op_total {
  double ms;
  int count, op;
} op_total;

static int cmp_total(const void *a, const void *b) {
  double x = ((const op_total *)a)->ms, y = ((const op_total *)b)->ms;
  return (x < y) - (x > y);
}

/* Time per operator type over the nodes i with on[i] (all when on is
 * NULL), sorted, into tot[IR_NOPS]; returns the sum. */
static double op_totals(const ir_graph *g, const double *ms,
                        const unsigned char *on, op_total *tot) {
  double sum = 0;
  for (int k = 0; k < IR_NOPS; k++)
    tot[k] = (op_total){0, 0, k};
  for (int i = 0; i < g->nnodes; i++) {
    if (on && !on[i])
      continue;
    tot[g->nodes[i].op].ms += ms[i];
    tot[g->nodes[i].op].count++;
    sum += ms[i];
  }
  qsort(tot, IR_NOPS, sizeof *tot, cmp_total);
  return sum;
}

static void print_op_totals(const op_total *tot, double sum) {
  printf("%-16s %6s %10s %6s\n", "operator", "nodes", "ms", "share");
  for (int k = 0; k < IR_NOPS && tot[k].count; k++)
    printf("%-16s %6d %10.4f %5.1f%%\n", ir_op((ir_opcode)tot[k].op)->name,
           tot[k].count, tot[k].ms, sum > 0 ? 100 * tot[k].ms / sum : 0);
}

/* Time per operator type, over all nodes and along the critical path (on,
 * of length cp), and the 10 slowest nodes, with what runs them. */
static void print_profile(const ir_graph *g, const gpu_plan *p,
                          const double *ms, const unsigned char *on, double cp,
                          double whole) {
  op_total tot[IR_NOPS];
  double sum = op_totals(g, ms, NULL, tot);
  int ns;
  double one, many;
  gpu_plan_streams(p, &ns, &one, &many);
  printf("profile: %d nodes, %.3f ms summed over the nodes, each node's "
         "kernels replayed alone (the whole graph's replay: %.3f ms%s)\n",
         g->nnodes, sum, whole,
         ns > 1 ? ", branches side by side: less than the sum" : "");
  print_op_totals(tot, sum);
  int npath = 0;
  for (int i = 0; i < g->nnodes; i++)
    npath += on[i];
  printf("critical path: %.3f ms over %d nodes (the heaviest chain of nodes "
         "each reading the one before, by the times above: what branches "
         "side by side cannot hide)\n",
         cp, npath);
  print_op_totals(tot, op_totals(g, ms, on, tot));
  op_total *top =
      base_malloc(sizeof *top * (size_t)(g->nnodes ? g->nnodes : 1));
  if (!top)
    return;
  for (int i = 0; i < g->nnodes; i++)
    top[i] = (op_total){ms[i], 1, i}; /* .op holds the node index here */
  qsort(top, (size_t)g->nnodes, sizeof *top, cmp_total);
  printf("slowest nodes:\n");
  for (int k = 0; k < g->nnodes && k < 10; k++) {
    const ir_node *n = &g->nodes[top[k].op];
    char sh[96];
    printf("  %10.4f ms  %-14s %-16s %s %s (line %d)\n", top[k].ms,
           ir_op(n->op)->name, gpu_plan_engine(p, top[k].op),
           g->tensors[n->out[0]].name,
           ir_shape_str(&g->tensors[n->out[0]].shape, sh, sizeof sh), n->line);
  }
  free(top);
}

/* Every node's time as a tab-separated table (written atomically). */
static int write_profile_tsv(const char *path, const ir_graph *g,
                             const gpu_plan *p, const double *ms,
                             const unsigned char *on) {
  base_buf b = {0};
  base_buf_puts(&b,
                "node\tline\toperator\tengine\toutput\tshape\tms\tcritical\n");
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    char sh[96];
    base_buf_printf(&b, "%d\t%d\t%s\t%s\t%s\t%s\t%.5f\t%d\n", i, n->line,
                    ir_op(n->op)->name, gpu_plan_engine(p, i),
                    g->tensors[n->out[0]].name,
                    ir_shape_str(&g->tensors[n->out[0]].shape, sh, sizeof sh),
                    ms[i], on[i]);
  }
  if (b.oom) {
    free(b.s);
    return cli_oom();
  }
  base_diag d;
  base_status st = base_write_atomic(path, b.s, b.len, &d);
  free(b.s);
  return st ? cli_report(&d) : CLI_OK;
}

/* Node orders gpu_plan_reorder timed (tried) and the seed of the one kept
 * (0: the canonical order, ir_graph_canonical). */
typedef struct run_orders {
  int tried, kept;
} run_orders;

static int report_memory_and_time(gpu_ctx *cx, gpu_plan *p, const run_opts *o,
                                  const run_orders *ro, double *med) {
  base_diag d;
  if (gpu_plan_time(p, o->warmup < 0 ? 10 : o->warmup, o->iters, med, &d))
    return cli_report(&d);
  size_t arena, persist, ws;
  gpu_plan_memory(p, &arena, &persist, &ws);
  char dev[256];
  gpu_ctx_describe(cx, dev, sizeof dev);
  printf("memory: activations %.1f MiB (%.1f MiB without reuse), inputs and "
         "weights %.1f MiB, workspace %.1f MiB\n",
         arena / 1048576.0, gpu_plan_unplanned_bytes(p) / 1048576.0,
         persist / 1048576.0, ws / 1048576.0);
  int kc, kd, kr;
  gpu_kernel_stats(cx, &kc, &kd, &kr);
  if (kc + kd + kr)
    printf("fused kernels: %d compiled by NVRTC, %d from the disk cache, %d "
           "reused\n",
           kc, kd, kr);
  int pc, pd;
  gpu_dnn_plan_stats(cx, &pc, &pd);
  if (pc + pd)
    printf("cuDNN plans compiled at plan time: %d compiled, %d from the disk "
           "cache\n",
           pc, pd);
  int tt, td;
  gpu_tune_stats(cx, &tt, &td);
  if (tt + td)
    printf("autotuning: %d choices timed, %d from the disk cache\n", tt, td);
  int ns;
  double one, many;
  gpu_plan_streams(p, &ns, &one, &many);
  if (one > 0 && many > 0)
    printf("streams: %d (one replay %.4f ms on one stream, %.4f ms with "
           "branches side by side: the faster kept)\n",
           ns, one, many);
  else
    printf("streams: %d\n", ns);
  if (ns > 1 && ro->tried > 1)
    printf("orders: %d of the nodes timed, %s kept\n", ro->tried,
           ro->kept ? "a random one" : "the canonical one");
  printf("time: %.4f ms (median of %d run%s after %d warm-up; device cuda: "
         "%s; seed %" PRIu64 ")\n",
         *med, o->iters, o->iters == 1 ? "" : "s",
         o->warmup < 0 ? 10 : o->warmup, dev, o->seed);
  return CLI_OK;
}

/* Downloads and prints every output into gpu[i] (malloc'd). */
static int fetch_outputs(const ir_graph *g, gpu_plan *p, float **gpu) {
  base_diag d;
  for (int i = 0; i < g->noutputs; i++) {
    int t = g->outputs[i];
    gpu[i] = base_malloc(sizeof(float) *
                         (size_t)ir_shape_numel(&g->tensors[t].shape));
    if (!gpu[i])
      return cli_oom();
    if (gpu_plan_download(p, t, gpu[i], &d))
      return cli_report(&d);
    print_output(g, t, gpu[i]);
  }
  return CLI_OK;
}

static int cuda_steps(const ir_graph *g, gpu_ctx *cx, gpu_plan *p, ex_values *v,
                      const run_opts *o, const run_orders *ro) {
  base_diag d;
  if (gpu_plan_run(p, &d)) /* p holds v's values (run_cuda) */
    return cli_report(&d);
  float **gpu = base_calloc((size_t)g->noutputs, sizeof *gpu);
  int rc = gpu ? fetch_outputs(g, p, gpu) : cli_oom();
  if (!rc && o->outputs)
    rc = write_outputs(g, gpu, o->outputs);
  double med = 0;
  if (!rc)
    rc = report_memory_and_time(cx, p, o, ro, &med);
  double *ms =
      o->profile ? base_calloc((size_t)g->nnodes + 1, sizeof *ms) : NULL;
  if (!rc && o->profile && !ms)
    rc = cli_oom();
  unsigned char *on = ms ? base_calloc((size_t)g->nnodes + 1, 1) : NULL;
  double cp = 0;
  if (!rc && ms && gpu_plan_profile(p, 3, ms, &d))
    rc = cli_report(&d);
  if (!rc && ms && (!on || ir_critical_path(g, ms, on, &cp)))
    rc = cli_oom();
  if (!rc && ms)
    print_profile(g, p, ms, on, cp, med);
  if (!rc && ms && o->profile_tsv)
    rc = write_profile_tsv(o->profile_tsv, g, p, ms, on);
  free(on);
  if (!rc && o->check)
    rc = check_outputs(g, v, gpu, o);
  for (int i = 0; gpu && i < g->noutputs; i++)
    free(gpu[i]);
  free(gpu), free(ms);
  return rc;
}

static int run_cuda(const ir_graph *g, const run_opts *o) {
  base_diag d;
  gpu_options co = {.fp32_strict = o->strict,
                    .poison = o->poison,
                    .no_fold = o->no_fold,
                    .legacy_conv = o->legacy_conv,
                    .nchw = o->nchw,
                    .fast_gelu = o->fast_gelu,
                    .streams = o->streams};
  gpu_ctx *cx = NULL;
  gpu_plan *p = NULL;
  ex_values *v = ex_values_new(g);
  if (!v)
    return cli_oom();
  int rc = CLI_OK;
  /* the node order decides the streams: from the canonical order (one
   * program, one schedule, however its file lists the nodes), several
   * timed and the fastest kept, each order's plan given v's values as it
   * is made; --orders 1: the file's own order alone */
  run_orders ro = {o->orders ? o->orders : RUN_ORDERS, 0};
  int tries = ro.tried > 1 && o->streams == 0;
  ir_graph *canon = tries ? ir_graph_canonical(g) : NULL;
  const ir_graph *rg = tries ? canon : g;
  if (!rg)
    rc = cli_oom();
  else if (ex_fill_random(g, v, o->seed, &d) || gpu_ctx_new(&co, &cx, &d) ||
           gpu_plan_new(cx, rg, &p, &d) || gpu_plan_upload(p, v, &d))
    rc = cli_report(&d);
  if (!rc && tries && gpu_plan_reorder(cx, rg, v, ro.tried, &p, &ro.kept, &d))
    rc = cli_report(&d);
  if (!rc) /* node indices (the profile) are those of the order kept */
    rc = cuda_steps(gpu_plan_graph(p), cx, p, v, o, &ro);
  gpu_plan_free(p);
  ir_graph_free(canon);
  gpu_ctx_free(cx);
  ex_values_free(v);
  return rc;
}

#endif

static int run_cpu(const ir_graph *g, const run_opts *o) {
  int rc = CLI_OK;
  double *ms = base_calloc((size_t)o->iters, sizeof *ms);
  ex_values *v = NULL;
  for (int i = 0; ms && i < o->iters && rc == CLI_OK; i++)
    ms[i] = run_once(g, o, &v, &rc);
  if (!ms)
    rc = cli_oom();
  if (rc == CLI_OK) {
    for (int i = 0; i < g->noutputs; i++)
      print_output(g, g->outputs[i], v->v[g->outputs[i]]);
    if (o->dump)
      rc = dump_values(g, v, o->dump);
    float **outs = base_calloc((size_t)g->noutputs + 1, sizeof *outs);
    for (int i = 0; outs && i < g->noutputs; i++)
      outs[i] = v->v[g->outputs[i]];
    if (!rc && o->outputs)
      rc = outs ? write_outputs(g, outs, o->outputs) : cli_oom();
    free(outs);
    qsort(ms, (size_t)o->iters, sizeof *ms, cmp_double);
    int threads = o->threads;
#ifdef _OPENMP
    if (!threads)
      threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    printf("time: %.1f ms (median of %d run%s; min %.1f ms; device cpu, %d "
           "thread%s, seed %" PRIu64 ")\n",
           ms[o->iters / 2], o->iters, o->iters == 1 ? "" : "s", ms[0], threads,
           threads == 1 ? "" : "s", o->seed);
  }
  free(ms);
  ex_values_free(v);
  return rc;
}

static int run(const cli_command *c, int argc, char **argv) {
  run_opts o;
  int rc = parse_opts(c, argc, argv, &o);
  if (rc)
    return rc;
  o.ox.batch = o.batch;
  ir_graph *g = cli_load_ex(o.path, &o.ox, &rc);
  if (!g)
    return rc;
  if (o.batch)
    rc = cli_rebatch(&g, o.batch);
  if (!rc)
    rc = cli_to_dtype(&g, o.dtype);
  base_diag d;
  if (!rc && o.inputs && ir_inputs_read(g, o.inputs, &d))
    rc = cli_report(&d);
#ifdef SUPEROPT_HAVE_CUDA
  if (!rc)
    rc = strcmp(o.device, "cuda") ? run_cpu(g, &o) : run_cuda(g, &o);
#else
  if (!rc)
    rc = run_cpu(g, &o);
#endif
  ir_graph_free(g);
  return rc;
}

const cli_command cli_cmd_run = {
    "run",
    "execute a graph and print its outputs' checksums and time",
    "run GRAPH|MODEL.onnx [options]",
    "Runs GRAPH (a .graph file) on seeded random inputs and weights and\n"
    "prints each output's shape and checksums and the run time.\n",
    run_table,
    NULL,
    run};
