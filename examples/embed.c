/* embed.c: an example of the embedding API (docs/api.md): loads a model,
 * optimizes it, runs the original and the optimized graph on the CPU with
 * the same inputs, compares their outputs, and exports the optimized graph
 * as ONNX.
 *
 *   cc embed.c $(pkg-config --cflags --libs superopt) -o embed
 *   ./embed MODEL.graph|MODEL.onnx OUT.onnx [BUDGET]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <superopt/superopt.h>

/* Element count of input (is_input) or output i of g. */
static size_t numel(const api_graph *g, int i, int is_input) {
  int64_t dims[16];
  int rank = is_input ? api_graph_input_shape(g, i, dims, 16)
                      : api_graph_output_shape(g, i, dims, 16);
  size_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= (size_t)dims[k];
  return n;
}

/* Allocates one buffer per input (filled with a ramp) or output. */
static float **buffers(const api_graph *g, int is_input) {
  int n = is_input ? api_graph_ninputs(g) : api_graph_noutputs(g);
  float **b = calloc((size_t)n + 1, sizeof *b);
  for (int i = 0; b && i < n; i++) {
    size_t m = numel(g, i, is_input);
    b[i] = malloc(m * sizeof(float));
    for (size_t k = 0; b[i] && is_input && k < m; k++)
      b[i][k] = (float)((int)(k % 17) - 8) / 8.0f; /* int64 ids: -1..0 */
  }
  return b;
}

static void free_buffers(float **b, int n) {
  for (int i = 0; b && i < n; i++)
    free(b[i]);
  free(b);
}

static int fail(const api_error *e) {
  fprintf(stderr, "embed: %s\n", e->message);
  return e->code;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: embed MODEL OUT.onnx [BUDGET]\n");
    return 1;
  }
  api_error err;
  api_graph *g, *h;
  api_report rep;
  api_optimize_options o;
  printf("%s", api_build_info());
  if (api_graph_load(argv[1], &g, &err))
    return fail(&err);
  api_optimize_options_default(&o);
  o.budget = argc > 3 ? atoi(argv[3]) : 100;
  /* an .onnx output: not fused, as `superopt optimize -o OUT.onnx` (ONNX
   * has no fused operator: export writes a fused node as its body, and
   * the estimate would count a fusion the ONNX runtime does not make) */
  size_t n = strlen(argv[2]);
  o.fuse = !(n > 5 && !strcmp(argv[2] + n - 5, ".onnx"));
  if (api_optimize(g, &o, &h, &rep, &err))
    return fail(&err);
  printf("optimized: %d -> %d operators, cost %.2f -> %.2f us, %d rewrites, "
         "check error %.3g\n",
         rep.nodes_before, rep.nodes_after, rep.cost_before_us,
         rep.cost_after_us, rep.rules_applied, rep.max_rel_error);

  /* Both graphs have the same inputs and outputs, in the same order. */
  float **in = buffers(g, 1), **out_g = buffers(g, 0), **out_h = buffers(h, 0);
  if (api_graph_run(g, NULL, (const float *const *)in, out_g, &err) ||
      api_graph_run(h, NULL, (const float *const *)in, out_h, &err))
    return fail(&err);
  double worst = 0;
  for (int i = 0; i < api_graph_noutputs(g); i++)
    for (size_t k = 0; k < numel(g, i, 0); k++) {
      double e = fabs(out_g[i][k] - out_h[i][k]) / (1 + fabs(out_g[i][k]));
      worst = e > worst ? e : worst;
    }
  printf("outputs: %d, first %s = %g, max difference %.3g\n",
         api_graph_noutputs(h), api_graph_output_name(h, 0), out_h[0][0],
         worst);
  if (api_graph_save(h, argv[2], &err))
    return fail(&err);
  printf("wrote %s\n", argv[2]);
  free_buffers(in, api_graph_ninputs(g));
  free_buffers(out_g, api_graph_noutputs(g));
  free_buffers(out_h, api_graph_noutputs(h));
  api_graph_free(g);
  api_graph_free(h);
  return worst <= 1e-4 ? 0 : 3;
}
