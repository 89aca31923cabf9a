/* measure.c: one operator timed alone, for the cost database.
 *
 * The node is copied into a graph of its own (its inputs become graph
 * inputs or weights under their own names, so seeded values and init hints
 * match the whole graph's), compiled in the caller's context (so the
 * convolution algorithm is the one the whole-graph run chose) and captured
 * as a CUDA graph that runs the node GPU_MEASURE_REPEAT times; one replay's
 * median time over that count is the node's cost, launch overhead
 * amortised as it is inside a whole-graph replay.
 *
 * Layout. A one-node graph planned like any graph has its inputs and
 * outputs as graph inputs and outputs, pinned NCHW (plan/layout.c), so
 * every convolution measured that way runs NCHW, where the whole graph
 * runs most of them channels-last (cuDNN's tensor-core engines, the
 * cuBLASLt 1x1 GEMM, the fused epilogue plans, 16-byte bias kernels):
 * ResNet-50's bf16 convolutions at batch 16 summed 1.03 ms that way, 0.38
 * ms in the network's layout (H200, 2026-11-30). So by default (unless
 * $SUPEROPT_MEASURE_LAYOUT=node, the old way) the node runs in the
 * layout the whole graph runs it: g's layout pass alone (gpu_plan_layout:
 * no kernels, no device memory) gives the node's mode and each of its
 * tensors' layouts, and the one-node graph is planned with those
 * (gpu_plan_new_given): channels-last inputs hold channels-last bytes (the
 * values are random either way), an input the node converts in the whole
 * graph it converts here too.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

#define GPU_MEASURE_REPEAT 10

/* g's node `node` alone: distinct inputs as inputs (graph inputs) or
 * weights (everything else), the node, its outputs. */
static ir_graph *isolate(const ir_graph *g, int node, base_diag *d) {
  const ir_node *n = &g->nodes[node];
  ir_graph *h = ir_graph_new(ir_op(n->op)->name);
  if (!h) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++) {
    const ir_tensor *t = &g->tensors[n->in[k]];
    int have = ir_find_tensor(h, t->name);
    in[k] = have >= 0 ? have
                      : ir_add_tensor(h, t->name,
                                      t->kind == IR_T_INPUT ? IR_T_INPUT
                                                            : IR_T_WEIGHT,
                                      &t->shape, d);
    if (in[k] < 0)
      goto fail;
    h->tensors[in[k]].data = t->kind == IR_T_WEIGHT ? t->data : NULL;
    h->tensors[in[k]].dtype = t->dtype;
  }
  for (int k = 0; k < n->nout; k++)
    names[k] = g->tensors[n->out[k]].name;
  ir_attrs a = n->a;
  int id = ir_add_node(h, n->op, in, n->nin, &a, names, d);
  if (id < 0)
    goto fail;
  for (int k = 0; k < n->nout; k++)
    if (ir_add_output(h, h->nodes[id].out[k], d))
      goto fail;
  return h;
fail:
  ir_graph_free(h);
  return NULL;
}

/* The node in the whole graph's layout, unless
 * $SUPEROPT_MEASURE_LAYOUT=node (alone, NCHW: how the tables were measured
 * before 2026-11-30). */
static int network_layout_on(void) {
  const char *e = getenv("SUPEROPT_MEASURE_LAYOUT");
  return !e || strcmp(e, "node");
}

/* h (isolate(g, node)) planned in the layout g's plan gives node `node`:
 * its mode, and each tensor of h the layout of g's tensor of that name. */
static base_status plan_as_in(gpu_ctx *c, const ir_graph *g, int node,
                              const ir_graph *h, gpu_plan **out, base_diag *d) {
  unsigned char *gcl = base_calloc((size_t)g->ntensors + 1, 1);
  unsigned char *gmode = base_calloc((size_t)g->nnodes + 1, 1);
  unsigned char *hcl = base_calloc((size_t)h->ntensors + 1, 1);
  unsigned char *hmode = base_calloc((size_t)h->nnodes + 1, 1);
  base_status st =
      gcl && gmode && hcl && hmode
          ? gpu_plan_layout(c, g, gcl, gmode, d)
          : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int t = 0; !st && t < h->ntensors; t++) {
    int gt = ir_find_tensor(g, h->tensors[t].name);
    hcl[t] = gt >= 0 && gcl[gt];
  }
  for (int i = 0; !st && i < h->nnodes; i++)
    hmode[i] = gmode[node];
  gpu_layout_given l = {hcl, hmode};
  if (!st)
    st = gpu_plan_new_given(c, h, &l, out, d);
  free(gcl), free(gmode), free(hcl), free(hmode);
  return st;
}

base_status gpu_measure_plan(gpu_ctx *c, const ir_graph *g, int node,
                             ir_graph **hout, gpu_plan **pout, base_diag *d) {
  *hout = NULL;
  *pout = NULL;
  if (node < 0 || node >= g->nnodes)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "gpu_measure_plan: node %d of %d", node, g->nnodes);
  ir_graph *h = isolate(g, node, d);
  if (!h)
    return d ? d->code : BASE_ERR_INTERNAL;
  base_status st = network_layout_on() ? plan_as_in(c, g, node, h, pout, d)
                                       : gpu_plan_new(c, h, pout, d);
  if (st) {
    ir_graph_free(h);
    return st;
  }
  *hout = h;
  return BASE_OK;
}

/* Times p's graph replayed with the node enqueued GPU_MEASURE_REPEAT times. */
static base_status time_repeated(gpu_plan *p, int warmup, int reps, double *ms,
                                 base_diag *d) {
  cudaStream_t s = p->ctx->stream;
  cudaGraph_t graph = NULL;
  GPU_CUDA(d, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  base_status st = BASE_OK;
  for (int r = 0; !st && r < GPU_MEASURE_REPEAT; r++)
    st = gpu_step_enqueue(p, 0, d);
  cudaError_t e = gpu_end_capture(s, &graph);
  if (!st && e != cudaSuccess)
    st = gpu_cuda_fail(d, e, "gpu_end_capture");
  if (!st && (e = cudaGraphInstantiate(&p->exec, graph, 0)) != cudaSuccess)
    st = gpu_cuda_fail(d, e, "cudaGraphInstantiate");
  if (graph)
    cudaGraphDestroy(graph);
  if (st)
    return st;
  p->captured = 1;
  double med = 0;
  st = gpu_plan_time(p, warmup, reps, &med, d);
  *ms = med / GPU_MEASURE_REPEAT;
  return st;
}

base_status gpu_measure_node(gpu_ctx *c, const ir_graph *g, int node,
                             int warmup, int reps, double *median_ms,
                             base_diag *d) {
  if (node < 0 || node >= g->nnodes || reps < 1)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "gpu_measure_node: node %d of %d, reps %d", node,
                         g->nnodes, reps);
  ir_graph *h = NULL;
  gpu_plan *p = NULL;
  base_status st = gpu_measure_plan(c, g, node, &h, &p, d);
  if (st)
    return st;
  ex_values *v = ex_values_new(h);
  st = v ? ex_fill_random(h, v, 1, d)
         : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st)
    st = gpu_plan_upload(p, v, d);
  gpu_options saved = c->opt; /* graph replay, no poisoning */
  c->opt.no_graph = c->opt.poison = 0;
  if (!st)
    st = time_repeated(p, warmup, reps, median_ms, d);
  c->opt = saved;
  gpu_plan_free(p);
  ex_values_free(v);
  ir_graph_free(h);
  return st;
}
