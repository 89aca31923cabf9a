/* plan.c: a graph compiled for the GPU: tensor lifetimes and the
 * activation arena, weight upload, CUDA-graph capture and replay, timing,
 * per-node profiling and the debug poisoning of released buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "../gpu_int.h"

#define GPU_ALIGN ((size_t)256)

static size_t round_up(size_t x) {
  return (x + GPU_ALIGN - 1) / GPU_ALIGN * GPU_ALIGN;
}

/* Bytes of t's elements: 4 (float32, and int64 and bool held as
 * floats), 2 for f16 and bf16. */
static size_t tensor_bytes(const ir_graph *g, int t) {
  return gpu_tensor_bytes(g, t);
}

/* The tensor whose bytes t uses: outputs of views (a reshape, a transpose
 * of channels-last bytes) share their input's. */
static int root_of(const gpu_plan *p, const int32_t *root, int t) {
  const ir_tensor *x = &p->g->tensors[t];
  if (x->kind == IR_T_VALUE && p->steps[x->node].view)
    return root[p->g->nodes[x->node].in[0]];
  return t;
}

/* Lifetimes: first[t] = producing node, last[t] = last node reading t or
 * any view of it (g->nnodes for graph outputs). */
static void lifetimes(const gpu_plan *p, int32_t *root, int32_t *first,
                      int32_t *last) {
  const ir_graph *g = p->g;
  for (int t = 0; t < g->ntensors; t++) {
    root[t] = t;
    first[t] = g->tensors[t].kind == IR_T_VALUE ? g->tensors[t].node : -1;
    last[t] = first[t];
  }
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    for (int k = 0; k < n->nout; k++)
      root[n->out[k]] = root_of(p, root, n->out[k]);
    for (int k = 0; k < n->nin; k++)
      if (last[root[n->in[k]]] < i)
        last[root[n->in[k]]] = i;
  }
  for (int i = 0; i < g->noutputs; i++)
    last[root[g->outputs[i]]] = g->nnodes;
}

/* Marks views (reshapes: IR_OPF_VIEW) and what the graph's own inputs and
 * parameters ask of a step: a convolution's or matmul's residual input and
 * a convolution's act=clip (ops.def, src/fuse/lower_epi.c) are its step's
 * res and fuse_clip, a layer norm's xb input its ln_bias. The executor
 * folds nothing of its own: the lower stage (src/fuse/lower.h) made each
 * fold a node or a parameter of the graph. */
static void plan_steps(gpu_plan *p) {
  const ir_graph *g = p->g;
  for (int j = 0; j < g->nnodes; j++) {
    const ir_node *n = &g->nodes[j];
    p->steps[j].view = (ir_op(n->op)->flags & IR_OPF_VIEW) != 0;
    if ((n->op == IR_OP_CONV2D || n->op == IR_OP_MATMUL) && n->nin == 4)
      p->steps[j].res = 1 + n->in[3]; /* the graph's residual input */
    if (n->op == IR_OP_LAYERNORM && n->nin == 4) /* xb: a conv's bias */
      p->steps[j].ln_bias = 1 + n->in[3];
    if (n->op == IR_OP_CONV2D && n->a.act == IR_ACT_CLIP) { /* act=clip */
      p->steps[j].fuse_clip = 1;
      p->steps[j].clip_lo = n->a.lo;
      p->steps[j].clip_hi = n->a.hi;
    }
  }
}

/* Blocks to plan: every root value, then every node's scratch. */
static base_status plan_arena(gpu_plan *p, const int32_t *root,
                              const int32_t *first, base_diag *d) {
  const ir_graph *g = p->g;
  int nb = g->ntensors + g->nnodes;
  size_t *sz = base_calloc((size_t)nb, sizeof *sz),
         *off = base_calloc((size_t)nb, sizeof *off);
  int32_t *f = base_calloc((size_t)nb, sizeof *f),
          *l = base_calloc((size_t)nb, sizeof *l);
  base_status st = BASE_OK;
  if (!sz || !off || !f || !l)
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  p->unplanned_bytes = 0;
  for (int t = 0; !st && t < g->ntensors; t++) {
    int planned = g->tensors[t].kind == IR_T_VALUE && root[t] == t;
    sz[t] = planned ? tensor_bytes(g, t) : 0;
    f[t] = first[t];
    l[t] = p->last[t] < 0 ? first[t] : p->last[t];
    if (p->last[t] == -1 && planned)
      l[t] = g->nnodes; /* outputs */
    p->unplanned_bytes += sz[t];
  }
  for (int i = 0; !st && i < g->nnodes; i++) {
    sz[g->ntensors + i] = p->steps[i].scratch_bytes;
    p->unplanned_bytes += sz[g->ntensors + i];
    f[g->ntensors + i] = l[g->ntensors + i] = i;
  }
  if (!st) /* nodes side by side: bytes free once all users are ordered */
    gpu_streams_extend(p, nb, f, l);
  size_t total = st ? 0 : gpu_memplan(nb, sz, f, l, off);
  if (!st && total == (size_t)-1)
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  /* $SUPEROPT_STREAMS_OOM (tests): a multi-stream arena does not fit */
  const char *oom = p->sched.nstreams > 1 ? getenv("SUPEROPT_STREAMS_OOM") : 0;
  if (!st && total)
    st = !(oom && *oom) && cudaMalloc((void **)&p->arena, total) == cudaSuccess
             ? BASE_OK
             : gpu_cuda_fail(d, cudaErrorMemoryAllocation,
                             "cudaMalloc of the activation arena");
  p->arena_bytes = total;
  for (int t = 0; !st && t < g->ntensors; t++)
    if (sz[t])
      p->ptr[t] = (float *)(p->arena + off[t]);
  for (int i = 0; !st && i < g->nnodes; i++)
    if (sz[g->ntensors + i])
      p->steps[i].scratch = (float *)(p->arena + off[g->ntensors + i]);
  free(sz), free(off), free(f), free(l);
  return st;
}

/* The arena and the workspaces for the schedule; on failure neither is
 * left allocated (a retry on one stream plans both again). */
static base_status plan_device_memory(gpu_plan *p, const int32_t *root,
                                      const int32_t *first, base_diag *d) {
  base_status st = plan_arena(p, root, first, d);
  if (!st)
    st = gpu_streams_workspaces(p, d);
  if (st) {
    cudaFree(p->arena);
    p->arena = NULL;
    gpu_streams_free_workspaces(p);
  }
  return st;
}

/* Inputs and weights: one allocation, uploaded by gpu_plan_upload. */
static base_status plan_persist(gpu_plan *p, base_diag *d) {
  const ir_graph *g = p->g;
  size_t total = 0;
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind != IR_T_VALUE)
      total += round_up(tensor_bytes(g, t));
  p->persist_bytes = total;
  if (total && cudaMalloc((void **)&p->persist, total) != cudaSuccess)
    return gpu_cuda_fail(d, cudaErrorMemoryAllocation,
                         "cudaMalloc of the inputs and weights");
  size_t at = 0;
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind != IR_T_VALUE) {
      p->ptr[t] = (float *)(p->persist + at);
      at += round_up(tensor_bytes(g, t));
    }
  return BASE_OK;
}

/* Weight-only nodes (TASO's preprocess_weights: folded batch norms,
 * transposed weights) run once when the weights are uploaded; their
 * results live for the whole plan, like weights. */
static void mark_weight_only(gpu_plan *p, int32_t *first) {
  const ir_graph *g = p->g;
  ir_weight_only(g, p->wonly);
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind == IR_T_VALUE && p->wonly[g->tensors[t].node]) {
      first[t] = 0;
      p->last[t] = -1;
    }
}

/* Roots, lifetimes and weight-only values, after the views are known. */
static void plan_lifetimes(gpu_plan *p, int32_t *first) {
  const ir_graph *g = p->g;
  lifetimes(p, p->root, first, p->last);
  for (int t = 0; t < g->ntensors; t++) /* outputs: never released */
    if (p->last[t] == g->nnodes)
      p->last[t] = -1;
  mark_weight_only(p, first);
}

/* A fused node's kernel, generated for its pointers (a staged one's: its
 * float32 copies, run/half.c). */
static base_status fused_prepare(gpu_plan *p, int i, base_diag *d) {
  gpu_half_swap(p, i);
  base_status st = gpu_fused_prepare(p, &p->g->nodes[i], &p->steps[i], d);
  gpu_half_unswap(p, i);
  return st;
}

/* plan_build's first stage, which gpu_plan_layout runs alone: steps,
 * lifetimes (first: per tensor), weight-only nodes, and the layout. */
static base_status plan_layout(gpu_plan *p, int32_t *first, base_diag *d) {
  plan_steps(p);
  plan_lifetimes(p, first);
  return gpu_layout_assign(p, d);
}

static base_status plan_build(gpu_plan *p, base_diag *d) {
  const ir_graph *g = p->g;
  int32_t *root = p->root;
  int32_t *first = base_calloc((size_t)g->ntensors + 1, sizeof *first);
  int *reads = ir_read_counts(g);
  if (!first || !reads) {
    free(first), free(reads);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  base_status st = plan_layout(p, first, d);
  if (!st) { /* transposes that only rename bytes, and reads through them */
    int views = gpu_layout_views(p); /* first: strided matmuls need these */
    if (!p->half)                    /* cuBLAS's float32 pointer arrays */
      st = gpu_layout_strided_matmuls(p, reads, &views, d);
    if (!st) /* splits the fused kernels read in place */
      st = gpu_layout_fused_splits(p, &views, d);
    if (!st && views)
      plan_lifetimes(p, first);
  }
  free(reads);
  for (int i = 0; !st && i < g->nnodes; i++)
    st = gpu_step_prepare(p, i, d);
  for (int i = 0; !st && p->half && i < g->nnodes; i++)
    st = gpu_half_stage_prepare(p, i, d); /* staged nodes' float32 copies */
  if (!st)
    st = gpu_layout_conversions(p, d);
  if (!st)
    st = plan_persist(p, d);
  if (!st)
    st = gpu_streams_plan(p, 0, d);
  if (!st)
    st = plan_device_memory(p, root, first, d);
  if (st == BASE_ERR_NOMEM && p->sched.nstreams > 1 && !p->ctx->opt.streams) {
    /* branches side by side keep bytes longer, and need a workspace per
     * stream, than the device has room for: one stream, as before */
    cudaGetLastError();
    gpu_sched_free(&p->sched);
    st = gpu_streams_plan(p, 1, d);
    if (!st)
      st = plan_device_memory(p, root, first, d);
  }
  for (int t = 0; !st && t < g->ntensors; t++) /* views */
    if (root[t] != t)
      p->ptr[t] = p->ptr[root[t]];
  for (int t = 0; !st && p->blk && t < g->ntensors; t++) /* column blocks */
    if (p->blk[t].w)
      p->ptr[t] =
          (float *)((char *)p->ptr[t] +
                    p->blk[t].off * (int64_t)cxk_dt_size(gpu_dt_of(g, t)));
  for (int i = 0; !st && i < g->nnodes; i++) /* needs the pointers */
    if (p->steps[i].smm)
      st = gpu_smm_bind(p, i, d);
    else if (p->steps[i].mm && p->steps[i].mm->wg_var >= 0)
      st = gpu_mm_bind(p, i, d);
    else if (p->steps[i].att) { /* a staged one on its float32 copies */
      gpu_half_swap(p, i);
      st = gpu_att_bind(p, i, d);
      gpu_half_unswap(p, i);
    }
  for (int i = 0; !st && i < g->nnodes; i++) /* needs the pointers */
    if (g->nodes[i].op == IR_OP_FUSED && (st = fused_prepare(p, i, d)) && d &&
        d->line == 0) {
      d->line = g->nodes[i].line;
      d->col = g->nodes[i].col;
    }
  free(first);
  return st;
}

/* A half-precision graph (f16, bf16 tensors: docs/half.md) runs each
 * node natively in its type or staged through float32 copies
 * (run/half.c); a node it can run neither way is refused, named, before
 * anything is prepared. */
static base_status check_half(gpu_plan *p, base_diag *d) {
  const ir_graph *g = p->g;
  for (int t = 0; t < g->ntensors; t++)
    if (ir_dtype_is_half(g->tensors[t].dtype))
      p->half = 1;
  for (int i = 0; p->half && i < g->nnodes; i++)
    if (!gpu_half_mode(p, i, d))
      return BASE_ERR_PARAM;
  return BASE_OK;
}

/* A plan's host arrays, zeroed (p->ctx and p->g set). */
static base_status plan_alloc(gpu_plan *p, base_diag *d) {
  const ir_graph *g = p->g;
  p->ptr = base_calloc((size_t)g->ntensors + 1, sizeof *p->ptr);
  p->last = base_calloc((size_t)g->ntensors + 1, sizeof *p->last);
  p->root = base_calloc((size_t)g->ntensors + 1, sizeof *p->root);
  p->steps = base_calloc((size_t)g->nnodes + 1, sizeof *p->steps);
  p->wonly = base_calloc((size_t)g->nnodes + 1, 1);
  return p->ptr && p->last && p->root && p->steps && p->wonly
             ? BASE_OK
             : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
}

base_status gpu_plan_new_given(gpu_ctx *c, const ir_graph *g,
                               const gpu_layout_given *l, gpu_plan **out,
                               base_diag *d) {
  *out = NULL;
  gpu_plan *p = base_calloc(1, sizeof *p);
  if (!p)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  p->ctx = c;
  p->g = g;
  p->given = l;
  base_status hs = check_half(p, d);
  if (hs) {
    free(p);
    return hs;
  }
  base_status st = plan_alloc(p, d);
  if (!st)
    st = plan_build(p, d);
  p->given = NULL;
  if (st) {
    gpu_plan_free(p);
    return st;
  }
  *out = p;
  return BASE_OK;
}

base_status gpu_plan_new(gpu_ctx *c, const ir_graph *g, gpu_plan **out,
                         base_diag *d) {
  return gpu_plan_new_given(c, g, NULL, out, d);
}

/* plan_build's steps up to the layout (plan_layout; the transposes
 * gpu_layout_views makes views later change no tensor's layout). */
base_status gpu_plan_layout(gpu_ctx *c, const ir_graph *g, unsigned char *cl,
                            unsigned char *mode, base_diag *d) {
  gpu_plan *p = base_calloc(1, sizeof *p);
  int32_t *first = base_calloc((size_t)g->ntensors + 1, sizeof *first);
  base_status st =
      p && first ? BASE_OK
                 : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st) {
    p->ctx = c;
    p->g = g;
    st = plan_alloc(p, d);
  }
  if (!st)
    st = plan_layout(p, first, d);
  for (int t = 0; !st && t < g->ntensors; t++)
    cl[t] = (unsigned char)gpu_is_cl(p, t);
  for (int i = 0; !st && i < g->nnodes; i++)
    mode[i] = (unsigned char)p->steps[i].cl;
  if (p)
    gpu_plan_free(p);
  free(first);
  return st;
}

void gpu_plan_free(gpu_plan *p) {
  if (!p)
    return;
  if (p->captured)
    cudaGraphExecDestroy(p->exec);
  for (int i = 0; p->steps && i < p->g->nnodes; i++)
    gpu_step_release(&p->steps[i]);
  cudaFree(p->arena);
  cudaFree(p->persist);
  gpu_streams_free_workspaces(p);
  gpu_sched_free(&p->sched);
  free(p->steps), free(p->ptr), free(p->last), free(p->root);
  free(p->wonly), free(p->cl), free(p->blk);
  ir_graph_free(p->own_g);
  free(p);
}

void gpu_plan_memory(const gpu_plan *p, size_t *arena, size_t *persist,
                     size_t *workspace) {
  *arena = p->arena_bytes;
  *persist = p->persist_bytes;
  *workspace = p->ws_bytes;
}

size_t gpu_plan_unplanned_bytes(const gpu_plan *p) {
  return p->unplanned_bytes;
}

const char *gpu_plan_engine(const gpu_plan *p, int i) {
  const gpu_step *s = &p->steps[i];
  if (gpu_plan_computed_by(p, i) != i) /* a view names bytes, no work */
    return "view";
  if (s->stage_off) /* half, on float32 copies (run/half.c) */
    return "float32 kernels on copies";
  if (s->conv)
    return s->conv->own       ? "kconv depthwise"
           : s->conv->sk      ? "ksmallk tensor cores"
           : s->conv->patches ? "cuBLASLt GEMM on im2col patches"
           : s->conv->gemm    ? "cuBLASLt GEMM"
           : s->conv->fused   ? "cuDNN graph API with epilogue"
           : s->conv->plan    ? "cuDNN graph API"
                              : "cuDNN";
  if (s->smm)
    return "cuBLAS batched GEMM";
  if (s->att)
    return s->att->form == GPU_ATT_SPLIT   ? "cuBLAS batched GEMMs and softmax"
           : s->att->form == GPU_ATT_FLASH ? "flash attention kernel"
                                           : "attention kernel";
  if (s->mm)
    return s->mm->wg_var >= 0 ? "wgmma kernel" : "cuBLASLt";
  if (p->g->nodes[i].op == IR_OP_MOVE)
    return gpu_move_engine(p, i);
  return s->fused ? "NVRTC" : "kernel";
}

base_status gpu_plan_upload(gpu_plan *p, const ex_values *v, base_diag *d) {
  const ir_graph *g = p->g;
  for (int t = 0; t < g->ntensors; t++) {
    if (g->tensors[t].kind == IR_T_VALUE)
      continue;
    if (!v->v[t])
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "'%s' has no value",
                           g->tensors[t].name);
    base_status st = gpu_write_values(p, t, v->v[t], 0, 0, d);
    if (st)
      return st;
  }
  for (int i = 0; i < g->nnodes; i++) /* weight preprocessing, once */
    if (p->wonly[i]) {
      base_status st = gpu_step_enqueue(p, i, d);
      if (st)
        return st;
    }
  for (int i = 0; i < g->nnodes; i++) /* transposed weights, once */
    if (p->steps[i].mm && p->steps[i].mm->wt)
      GPU_CUDA(d, gpu_mm_fill_wt(p, i));
  for (int i = 0; i < g->nnodes; i++) { /* channels-last filters, once */
    const gpu_conv *cv = p->steps[i].conv;
    if (cv && cv->wcl && cv->wcl_static) {
      int w = g->nodes[i].in[1];
      GPU_CUDA(d, gpu_convert_dt(p->ctx->stream, &cv->wcl_as, p->ptr[w],
                                 cv->wcl, 1, gpu_dt_of(g, w)));
    }
  }
  GPU_CUDA(d, cudaStreamSynchronize(p->ctx->stream));
  return BASE_OK;
}

base_status gpu_plan_download(gpu_plan *p, int t, float *dst, base_diag *d) {
  return gpu_read_values(p, t, dst, 0, 0, d);
}

/* ---- running ----------------------------------------------------------------
 */

/* Debug: NaN over every block whose last reader is node i. */
static base_status poison_after(gpu_plan *p, int i, base_diag *d) {
  const ir_graph *g = p->g;
  cudaStream_t s = p->ctx->stream;
  for (int t = 0; t < g->ntensors; t++)
    if (p->last[t] == i && g->tensors[t].kind == IR_T_VALUE && p->ptr[t] &&
        (char *)p->ptr[t] >= p->arena &&
        (char *)p->ptr[t] < p->arena + p->arena_bytes && p->root[t] == t)
      GPU_CUDA(d, cxk_unary_dt(s, gpu_dt_of(g, t), CXK_NAN, NULL, p->ptr[t],
                               ir_shape_numel(&g->tensors[t].shape), 0, 0));
  if (p->steps[i].scratch)
    GPU_CUDA(d, cxk_unary(s, CXK_NAN, NULL, p->steps[i].scratch,
                          (int64_t)(p->steps[i].scratch_bytes / sizeof(float)),
                          0, 0));
  return BASE_OK;
}

static base_status enqueue_all(gpu_plan *p, int repeat, base_diag *d) {
  for (int r = 0; r < repeat; r++)
    for (int i = 0; i < p->g->nnodes; i++) {
      if (p->wonly[i]) /* computed by gpu_plan_upload */
        continue;
      base_status st = gpu_step_enqueue(p, i, d);
      if (!st && p->ctx->opt.poison)
        st = poison_after(p, i, d);
      if (st)
        return st;
    }
  return BASE_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One run captured as a CUDA graph: node after node on the context's
 * stream, or on the schedule's streams (multi). */
static base_status capture_as(gpu_plan *p, int multi, cudaGraphExec_t *out,
                              base_diag *d) {
  cudaStream_t s = p->ctx->stream;
  cudaGraph_t graph = NULL;
  cudaEvent_t *ev = NULL;
  GPU_DNN(d, cudnnSetStream(p->ctx->dnn, s)); /* after a failed capture */
  if (multi) {
    base_status st = gpu_streams_prepare(p, &ev, d);
    if (st)
      return st;
  }
  cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    gpu_streams_release(p, ev);
    return gpu_cuda_fail(d, e, "cudaStreamBeginCapture");
  }
  base_status st = multi ? gpu_streams_enqueue(p, ev, d) : enqueue_all(p, 1, d);
  e = gpu_end_capture(s, &graph);
  gpu_streams_release(p, ev);
  if (st) {
    if (graph)
      cudaGraphDestroy(graph);
    return st;
  }
  if (e != cudaSuccess) {
    if (graph)
      cudaGraphDestroy(graph);
    return gpu_cuda_fail(d, e, "gpu_end_capture");
  }
  e = cudaGraphInstantiate(out, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess)
    return gpu_cuda_fail(d, e, "cudaGraphInstantiate");
  return BASE_OK;
}

static base_status launch(gpu_plan *p, base_diag *d);

/* Median time in ms of one run over `rounds` rounds of k runs each, timed
 * with events after `warmup` such rounds: replays of x, or where x is NULL
 * runs as launch() enqueues them. */
static base_status time_rounds(gpu_plan *p, cudaGraphExec_t x, int warmup,
                               int rounds, int k, double *med, base_diag *d) {
  cudaStream_t s = p->ctx->stream;
  cudaEvent_t a = NULL, b = NULL;
  double *ms = base_calloc((size_t)rounds, sizeof *ms);
  base_status st =
      ms ? BASE_OK : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st && (cudaEventCreate(&a) != cudaSuccess ||
              cudaEventCreate(&b) != cudaSuccess))
    st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cudaEventCreate failed");
  for (int i = 0; !st && i < warmup + rounds; i++) {
    float t = 0;
    cudaError_t e = cudaEventRecord(a, s);
    for (int j = 0; !st && e == cudaSuccess && j < k; j++)
      if (x)
        e = cudaGraphLaunch(x, s);
      else
        st = launch(p, d);
    if (!st && e == cudaSuccess)
      e = cudaEventRecord(b, s);
    if (!st && e == cudaSuccess)
      e = cudaEventSynchronize(b);
    if (!st && e == cudaSuccess)
      e = cudaEventElapsedTime(&t, a, b);
    if (!st && e != cudaSuccess)
      st = gpu_cuda_fail(d, e, "timing events");
    if (!st && i >= warmup)
      ms[i - warmup] = t / k;
  }
  if (!st) {
    qsort(ms, (size_t)rounds, sizeof *ms, cmp_double);
    *med = ms[rounds / 2];
  }
  if (a)
    cudaEventDestroy(a);
  if (b)
    cudaEventDestroy(b);
  free(ms);
  return st;
}

/* The one-stream and the multi-stream replay timed, alternating, twice
 * (the lower median of each kept), in rounds of as many replays as take
 * about 1 ms (1 to 10): some 50 ms of replays for a 1 ms graph. */
static base_status time_both(gpu_plan *p, cudaGraphExec_t one,
                             cudaGraphExec_t many, base_diag *d) {
  double first = 0;
  base_status st = time_rounds(p, many, 1, 7, 1, &first, d);
  int k = first > 0.1 ? (int)(1.0 / first) : 10;
  k = k < 1 ? 1 : k;
  for (int r = 0; !st && r < 2; r++) {
    double a = 0, b = 0;
    st = time_rounds(p, one, 1, 7, k, &a, d);
    if (!st)
      st = time_rounds(p, many, 1, 7, k, &b, d);
    p->ms_one = r && p->ms_one < a ? p->ms_one : a;
    p->ms_multi = r && p->ms_multi < b ? p->ms_multi : b;
  }
  return st;
}

/* Captures the run. Where the schedule has branches side by side, both
 * the one-stream and the multi-stream graph are captured and timed (auto,
 * opt.streams 0), and the faster kept (a multi-stream capture that fails
 * then falls back to one stream); opt.streams > 1 takes the multi-stream
 * graph untimed. */
static base_status capture(gpu_plan *p, base_diag *d) {
  int ns = p->sched.nstreams, aut = p->ctx->opt.streams == 0;
  cudaGraphExec_t one = NULL, many = NULL;
  base_status st = BASE_OK;
  int want_many = ns > 1 && p->ctx->opt.streams != 1;
  if (want_many && (st = capture_as(p, 1, &many, d)) && aut) {
    cudaGetLastError(); /* clear it: one stream below */
    st = BASE_OK;
    many = NULL;
  }
  if (!st && (!many || aut))
    st = capture_as(p, 0, &one, d);
  if (!st && one && many)
    st = time_both(p, one, many, d);
  if (!st) {
    p->multi = many && (!one || p->ms_multi < p->ms_one);
    p->exec = p->multi ? many : one;
    p->captured = 1;
    if (p->multi ? one : many)
      cudaGraphExecDestroy(p->multi ? one : many);
  } else {
    if (one)
      cudaGraphExecDestroy(one);
    if (many)
      cudaGraphExecDestroy(many);
  }
  return st;
}

/* The fastest replay of p's capture (ms), of the one-stream and the
 * multi-stream graphs where both were timed. */
static double best_ms(const gpu_plan *p) {
  return p->multi ? p->ms_multi : p->ms_one;
}

/* One more order of g (seed): planned, given v, captured and timed; into
 * *q when it ran on several streams and faster than ms, else freed. A
 * plan that cannot be made (memory) is skipped, not an error. */
static base_status try_order(gpu_ctx *c, const ir_graph *g, const ex_values *v,
                             uint64_t seed, double ms, gpu_plan **q,
                             base_diag *d) {
  *q = NULL;
  ir_graph *h = ir_graph_reordered(g, seed);
  gpu_plan *p = NULL;
  base_diag e;
  if (!h)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (gpu_plan_new(c, h, &p, &e) || gpu_plan_upload(p, v, &e) ||
      gpu_plan_run(p, &e)) {
    cudaGetLastError(); /* clear it: the order is left out */
    gpu_plan_free(p);
    ir_graph_free(h);
    return BASE_OK;
  }
  p->own_g = h;
  if (p->multi && best_ms(p) < ms)
    *q = p;
  else
    gpu_plan_free(p);
  return BASE_OK;
}

base_status gpu_plan_reorder(gpu_ctx *c, const ir_graph *g, const ex_values *v,
                             int tries, gpu_plan **p, int *kept, base_diag *d) {
  *kept = 0;
  base_status st = (*p)->captured ? BASE_OK : gpu_plan_run(*p, d);
  if (!st && best_ms(*p) <= 0) /* streams forced: nothing was timed */
    return st;
  for (int k = 1; !st && (*p)->multi && k < tries; k++) {
    gpu_plan *q;
    st = try_order(c, g, v, (uint64_t)k, best_ms(*p), &q, d);
    if (q) {
      gpu_plan_free(*p);
      *p = q;
      *kept = k;
    }
  }
  return st;
}

const ir_graph *gpu_plan_graph(const gpu_plan *p) { return p->g; }

void gpu_plan_streams(const gpu_plan *p, int *streams, double *ms_one,
                      double *ms_multi) {
  *streams = p->captured && p->multi ? p->sched.nstreams : 1;
  *ms_one = p->ms_one;
  *ms_multi = p->ms_multi;
}

/* Enqueues one whole run (graph replay, or node by node). */
static base_status launch(gpu_plan *p, base_diag *d) {
  if (p->ctx->opt.no_graph)
    return enqueue_all(p, 1, d);
  if (!p->captured) {
    base_status st = capture(p, d);
    if (st)
      return st;
  }
  GPU_CUDA(d, cudaGraphLaunch(p->exec, p->ctx->stream));
  return BASE_OK;
}

base_status gpu_plan_run(gpu_plan *p, base_diag *d) {
  base_status st = launch(p, d);
  if (st)
    return st;
  GPU_CUDA(d, cudaStreamSynchronize(p->ctx->stream));
  return BASE_OK;
}

base_status gpu_plan_time(gpu_plan *p, int warmup, int iters, double *median_ms,
                          base_diag *d) {
  if (iters < 1)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "iters must be positive");
  return time_rounds(p, NULL, warmup, iters, 1, median_ms, d);
}

/* Node i's kernels, enqueued once (u: step_run; gpu_tune_time). */
typedef struct step_run {
  gpu_plan *p;
  int i;
} step_run;

static int run_step(gpu_ctx *c, const void *u) {
  (void)c;
  const step_run *r = u;
  base_diag d;
  return gpu_step_enqueue(r->p, r->i, &d) != BASE_OK;
}

/* Each node that runs kernels of its own is timed alone, as the autotuning
 * times candidates (gpu_tune_time: its kernels captured back to back in a
 * CUDA graph and replayed), reps times, the median kept: its kernels' time
 * without the gaps between nodes that a replay of the whole plan has (the
 * event-between-nodes profile this replaced added about 1.3 us to every
 * node, kernels or not). Re-running a node alone is sound: a step reads
 * its inputs and writes its outputs (in-place epilogues recompute from the
 * step's own first kernel), but the arena bytes it writes may belong to
 * tensors computed later as well, graph outputs among them: download
 * outputs before profiling, or run the plan again. Views, folded nodes and
 * weight-only nodes get 0. */
base_status gpu_plan_profile(gpu_plan *p, int reps, double *node_ms,
                             base_diag *d) {
  const ir_graph *g = p->g;
  cudaEvent_t e0 = NULL, e1 = NULL;
  double *t = base_calloc((size_t)(reps > 0 ? reps : 1), sizeof *t);
  base_status st =
      t ? BASE_OK : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st && reps < 1)
    st = base_diag_set(d, BASE_ERR_PARAM, 0, 0, "profile: reps must be >= 1");
  if (!st && (cudaEventCreate(&e0) != cudaSuccess ||
              cudaEventCreate(&e1) != cudaSuccess))
    st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "cudaEventCreate failed");
  for (int i = 0; !st && i < g->nnodes; i++) {
    node_ms[i] = 0;
    if (!gpu_plan_runs(p, i))
      continue;
    step_run r = {p, i};
    for (int k = 0; k < reps; k++)
      t[k] = gpu_tune_time(p->ctx, run_step, &r, e0, e1);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    if (t[reps / 2] >= 1e29)
      st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "profile: node '%s' did not run alone",
                         g->tensors[g->nodes[i].out[0]].name);
    node_ms[i] = t[reps / 2];
  }
  if (e0)
    cudaEventDestroy(e0);
  if (e1)
    cudaEventDestroy(e1);
  free(t);
  return st;
}
