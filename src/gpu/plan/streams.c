/* streams.c: a plan's nodes on several streams of one CUDA graph.
 *
 * What each node reads and writes after the executor's folds (a residual
 * add read by its convolution, views sharing their input's bytes) gives the
 * dependencies between the nodes that run kernels; sched.c assigns streams from
 * them. The capture (plan.c) then forks the side streams from the context's
 * stream, makes each node's stream wait for the events of its dependencies on
 * other streams, and joins them back, so the captured graph has the branches
 * side by side. The arena's lifetimes are extended to each node's sync
 * point (gpu_streams_extend), so bytes are reused only after every node
 * that may touch them is ordered before the reuse. Nodes that use cuBLAS's
 * handle (batched GEMMs through transposes) stay on the context's stream:
 * the handle's workspace is one.
 */
#include <stdlib.h>
#include <string.h>

#include "../gpu_int.h"

/* The node whose kernels do node i's work in a replay (itself, or the
 * node it is folded into), -1 for views and weight-only nodes. */
static int doer(const gpu_plan *p, int i) {
  return p->wonly[i] ? -1 : gpu_plan_computed_by(p, i);
}

/* The running node that writes each tensor's bytes, -1 for inputs,
 * weights and weight-only values: the producer, the node it is folded
 * into, or for a view the writer of the input it names. */
static void writers(const gpu_plan *p, int32_t *w) {
  const ir_graph *g = p->g;
  for (int t = 0; t < g->ntensors; t++)
    w[t] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    if (p->wonly[i])
      continue;
    int k = gpu_plan_computed_by(p, i);
    for (int o = 0; o < n->nout; o++)
      w[n->out[o]] = k >= 0 ? k : w[n->in[0]];
  }
}

base_status gpu_streams_plan(gpu_plan *p, int k, base_diag *d) {
  const ir_graph *g = p->g;
  int n = g->nnodes;
  if (k <= 0)
    k = p->ctx->opt.streams;
  if (k <= 0)
    k = GPU_STREAMS_AUTO;
  if (k > GPU_STREAMS_MAX)
    k = GPU_STREAMS_MAX;
  if (p->ctx->opt.no_graph || p->ctx->opt.poison)
    k = 1; /* launched node by node, or released bytes poisoned in order */
  int ndep = 0;
  for (int i = 0; i < n; i++)
    ndep += g->nodes[i].nin;
  int32_t *w = base_malloc(sizeof *w * ((size_t)g->ntensors + 1));
  int32_t *at = base_calloc((size_t)n + 2, sizeof *at);
  int32_t *on = base_malloc(sizeof *on * ((size_t)ndep + 1));
  unsigned char *run = base_calloc((size_t)n + 1, 1),
                *pin = base_calloc((size_t)n + 1, 1);
  base_status st =
      w && at && on && run && pin
          ? BASE_OK
          : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st) {
    writers(p, w);
    for (int i = 0; i < n; i++) { /* count, by the node that does the reads */
      run[i] = (unsigned char)gpu_plan_runs(p, i);
      pin[i] = p->steps[i].smm != NULL || /* cuBLAS's handle */
               (p->steps[i].att && p->steps[i].att->split_ok);
      int e = doer(p, i);
      if (e >= 0)
        at[e + 2] += g->nodes[i].nin;
    }
    for (int i = 0; i < n; i++)
      at[i + 2] += at[i + 1];
    for (int i = 0; i < n; i++) { /* fill: at[e + 1] is e's next slot */
      int e = doer(p, i);
      for (int q = 0; e >= 0 && q < g->nodes[i].nin; q++) {
        int u = w[g->nodes[i].in[q]];
        on[at[e + 1]++] = u == e ? -1 : u;
      }
    }
    if (gpu_sched_build(n, run, at, on, pin, k, &p->sched))
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  free(w), free(at), free(on), free(run), free(pin);
  return st;
}

void gpu_streams_extend(const gpu_plan *p, int nb, const int32_t *f,
                        int32_t *l) {
  const ir_graph *g = p->g;
  int n = g->nnodes;
  if (p->sched.nstreams < 2)
    return;
  int32_t *so = base_malloc(sizeof *so * ((size_t)n + 1));
  if (!so) { /* keep every block for the whole run: no reuse, still sound */
    for (int b = 0; b < nb; b++)
      if (f[b] >= 0)
        l[b] = n;
    return;
  }
  for (int a = 0; a < n; a++) { /* a's own sync, or the node doing its work */
    int e = doer(p, a);
    so[a] = a + 1;
    if (e >= 0 && p->sched.sync[e] > so[a])
      so[a] = p->sched.sync[e];
  }
  for (int b = 0; b < nb; b++) {
    if (f[b] < 0 || l[b] >= n)
      continue;
    int32_t end = l[b];
    for (int a = f[b]; a <= l[b]; a++)
      if (so[a] - 1 > end)
        end = so[a] - 1;
    l[b] = end < n ? end : n;
  }
  free(so);
}

base_status gpu_streams_workspaces(gpu_plan *p, base_diag *d) {
  size_t need[GPU_STREAMS_MAX] = {0};
  for (int i = 0; i < p->g->nnodes; i++) {
    const gpu_step *s = &p->steps[i];
    size_t ws = s->conv ? s->conv->ws : s->mm ? s->mm->ws : 0;
    int q = gpu_stream_of(p, i);
    if (ws > need[q])
      need[q] = ws;
  }
  int ns = p->sched.nstreams > 1 ? p->sched.nstreams : 1;
  p->ws_bytes = 0;
  for (int q = 0; q < ns; q++) {
    if (cudaMalloc(&p->ws[q], need[q] ? need[q] : 256) != cudaSuccess)
      return gpu_cuda_fail(d, cudaErrorMemoryAllocation,
                           "cudaMalloc of the workspace");
    p->ws_bytes += need[q];
  }
  return BASE_OK;
}

void gpu_streams_free_workspaces(gpu_plan *p) {
  for (int q = 0; q < GPU_STREAMS_MAX; q++) {
    cudaFree(p->ws[q]);
    p->ws[q] = NULL;
  }
}

/* Points the context (cuDNN's stream, then its own) at stream s. */
static base_status use_stream(gpu_ctx *c, cudaStream_t s, base_diag *d) {
  GPU_DNN(d, cudnnSetStream(c->dnn, s));
  c->stream = s;
  return BASE_OK;
}

void gpu_streams_release(gpu_plan *p, cudaEvent_t *ev) {
  for (int i = 0; ev && i < p->g->nnodes + GPU_STREAMS_MAX; i++)
    if (ev[i])
      cudaEventDestroy(ev[i]);
  free(ev);
}

base_status gpu_streams_prepare(gpu_plan *p, cudaEvent_t **out, base_diag *d) {
  gpu_ctx *c = p->ctx;
  const gpu_sched *s = &p->sched;
  int n = p->g->nnodes, ns = s->nstreams;
  cudaEvent_t *ev = base_calloc((size_t)n + GPU_STREAMS_MAX, sizeof *ev);
  *out = NULL;
  if (!ev)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status st = BASE_OK;
  for (int q = 1; !st && q < ns; q++) {
    cudaError_t e = cudaSuccess;
    if (!c->side[q - 1])
      e = cudaStreamCreateWithFlags(&c->side[q - 1], cudaStreamNonBlocking);
    if (e != cudaSuccess)
      st = gpu_cuda_fail(d, e, "cudaStreamCreateWithFlags");
  }
  for (int i = 0; !st && i < n + ns; i++) /* per node, then fork and joins */
    if ((i < n && s->ev[i]) || i >= n)
      if (cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming))
        st =
            base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cudaEventCreate failed");
  if (st)
    gpu_streams_release(p, ev);
  else
    *out = ev;
  return st;
}

base_status gpu_streams_enqueue(gpu_plan *p, cudaEvent_t *ev, base_diag *d) {
  gpu_ctx *c = p->ctx;
  const gpu_sched *s = &p->sched;
  int n = p->g->nnodes, ns = s->nstreams;
  cudaStream_t home = c->stream, on[GPU_STREAMS_MAX] = {home};
  base_status st = BASE_OK;
  for (int q = 1; q < ns; q++)
    on[q] = c->side[q - 1];
  if (cudaEventRecord(ev[n], home)) /* the fork */
    st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cudaEventRecord failed");
  for (int q = 1; !st && q < ns; q++)
    if (cudaStreamWaitEvent(on[q], ev[n], 0))
      st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cudaStreamWaitEvent");
  for (int i = 0; !st && i < n; i++) {
    if (s->stream[i] < 0)
      continue; /* computes nothing in a replay */
    cudaStream_t x = on[s->stream[i]];
    for (int j = s->wait_at[i]; !st && j < s->wait_at[i + 1]; j++)
      if (cudaStreamWaitEvent(x, ev[s->wait_on[j]], 0))
        st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cudaStreamWaitEvent");
    if (!st)
      st = use_stream(c, x, d);
    if (!st)
      st = gpu_step_enqueue(p, i, d);
    if (!st && s->ev[i] && cudaEventRecord(ev[i], x))
      st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cudaEventRecord failed");
  }
  base_diag scratch;
  base_status back = use_stream(c, home, st ? &scratch : d);
  if (back) /* cuDNN's stream is not home: at least the context's is */
    c->stream = home;
  for (int q = 1; q < ns; q++) /* the joins, also after a failure */
    if (cudaEventRecord(ev[n + q], on[q]) == cudaSuccess)
      cudaStreamWaitEvent(home, ev[n + q], 0);
  return st ? st : back;
}
