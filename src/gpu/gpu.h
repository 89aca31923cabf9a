/* gpu.h: the CUDA executor (prefix gpu_).
 *
 * Runs an ir_graph on one NVIDIA GPU with the same semantics as the CPU
 * reference executor (src/exec/exec.h). A gpu_ctx owns the device, a stream,
 * the cuDNN and cuBLASLt handles and a cache of convolution algorithm
 * choices (cudnnFind, once per convolution configuration). A gpu_plan is a
 * graph compiled for that context: every intermediate tensor gets an offset
 * in one activation arena planned by tensor lifetimes (two tensors share
 * bytes only when their lifetimes are disjoint; reshape is a view), inputs
 * and weights are uploaded once, and gpu_plan_run replays the whole graph as
 * one CUDA graph.
 *
 * Every CUDA, cuDNN and cuBLASLt status is checked; a failure comes back as
 * an base_status with an base_diag naming the call (out of device memory is
 * BASE_ERR_NOMEM, anything else BASE_ERR_INTERNAL). Nothing here prints.
 */
#ifndef SUPEROPT_CUDA_EXEC_H
#define SUPEROPT_CUDA_EXEC_H

#include "../exec/exec.h"

typedef struct gpu_ctx gpu_ctx;
typedef struct gpu_plan gpu_plan;

typedef struct gpu_options {
  int fp32_strict; /* 1: no TF32 in conv/matmul (default 0: TF32 allowed) */
  int poison;      /* debug: fill every released activation buffer with NaN
                      right after its last reader (catches planner bugs) */
  int no_graph;    /* 1: launch node by node instead of a CUDA graph */
  int no_fold;     /* 1: none of the executor's own fusion (cuDNN's plans
                      with an epilogue, matmuls reading transposes in
                      place; run --no-fold): the graph's folds (lower
                      stage) still run as the graph says */
  int legacy_conv; /* 1: legacy cuDNN algorithms only (no graph API) */
  int nchw;        /* 1: every tensor NCHW (default 0: convolutions and the
                      element-wise, pooling and concat nodes between them
                      run channels-last, NHWC) */
  int fast_gelu;   /* 1: a matmul's gelu in cuBLASLt's epilogue (its tanh
                      approximation, up to 4.7e-4 from the exact erf form;
                      default 0: exact, by a separate kernel) */
  int streams;     /* independent branches side by side on up to this many
                      streams (1: one stream; default 0: up to 8, and the
                      graph is captured both ways and the faster replay
                      kept; 2-8: up to that many, untimed) */
} gpu_options;

/* The executor lives in libsuperopt_gpu.so, loaded on first use (lazy.c);
 * NULL when it is loaded, else why it could not be. */
const char *gpu_load_error(void);
/* CUDA runtime, driver, cuDNN and cuBLASLt versions, one line. */
void gpu_lib_versions(char *buf, size_t n);
/* Called by the loader (lazy.c) once libsuperopt_gpu.so is loaded, before
 * anything else: the executor's copy of libsuperopt reads fused bodies
 * from the host's registry (ir_body_use_host) and allocates through the
 * host's allocator (base_alloc_use_host: its failure switch reaches the
 * executor's host code). Not for library users. */
void gpu_attach_host(const ir_body *(*body_get)(uint64_t id),
                     const base_allocator *alloc);

/* Number of usable CUDA devices; 0 when there is no driver or no device
 * (or the executor cannot be loaded). */
int gpu_device_count(void);

/* Opens device 0. o may be NULL (defaults). Fails cleanly without a GPU. */
base_status gpu_ctx_new(const gpu_options *o, gpu_ctx **out, base_diag *d);
void gpu_ctx_free(gpu_ctx *c);
/* Device name, compute capability and library versions, one line. */
void gpu_ctx_describe(const gpu_ctx *c, char *buf, size_t n);

/* Generated kernels of fused nodes so far in c: compiled by NVRTC, loaded
 * from the disk cache, reused from c's own cache. */
void gpu_kernel_stats(const gpu_ctx *c, int *compiled, int *from_disk,
                      int *reused);
/* cuDNN plans whose engines compile when finalised (the residual add in a
 * convolution's plan) so far in c: compiled, or finalised from the disk
 * cache's serialised plans (docs/cuda.md). */
void gpu_dnn_plan_stats(const gpu_ctx *c, int *compiled, int *from_disk);
/* Autotuning choices (a convolution's engine, a matmul's algorithm) so far
 * in c: timed, or taken from the disk cache's earlier choices on this GPU
 * with these library versions (docs/cuda.md). */
void gpu_tune_stats(const gpu_ctx *c, int *timed, int *from_disk);

/* Code generation for fused nodes (needs no GPU): the CUDA source of node
 * n's kernel (*src, malloc'd), its function name and cache key (hash of
 * the source, arch "sm_90" and the NVRTC version), and whether it takes
 * its vector form (*vec: float4, or 8 halves, a thread; a row kernel's
 * 16-byte chunks of a row). ptrs (the node's input pointers, then its
 * output's) are checked for 16-byte alignment; NULL assumes aligned.
 * phys: the memory strides of each input, then of the output
 * (channels-last tensors); NULL: row-major. sms: the GPU's
 * multiprocessors, which set a row kernel's rows a block (0: 8). */
base_status gpu_fused_source(const ir_graph *g, const ir_node *n,
                             const float *const *ptrs,
                             const int64_t (*phys)[IR_MAX_RANK],
                             const char *arch, int sms, char **src,
                             char name[40], uint64_t *key, int *vec,
                             base_diag *d);
/* Compiles a generated source with NVRTC for arch ("sm_90") into a cubin
 * (*cubin malloc'd, *len bytes). Needs no GPU. */
base_status gpu_fused_compile(const char *src, const char *name,
                              const char *arch, char **cubin, size_t *len,
                              base_diag *d);

/* Compiles g for c: plans memory, allocates it, prepares every node
 * (descriptors, algorithms). g must outlive the plan. */
base_status gpu_plan_new(gpu_ctx *c, const ir_graph *g, gpu_plan **out,
                         base_diag *d);
void gpu_plan_free(gpu_plan *p);
/* Uploads every input and weight of g from v (all must be filled). */
base_status gpu_plan_upload(gpu_plan *p, const ex_values *v, base_diag *d);
/* Runs the graph once (CUDA graph replay; captured on first use) and waits
 * for it. */
base_status gpu_plan_run(gpu_plan *p, base_diag *d);
/* Copies tensor t (an output, input or weight) to host memory dst. */
base_status gpu_plan_download(gpu_plan *p, int t, float *dst, base_diag *d);
/* After gpu_plan_upload: input t written from src (host memory, or device
 * memory when on_device), ordered before the next run; tensor t read into
 * dst likewise, waiting for the copy (io.c). */
base_status gpu_plan_write(gpu_plan *p, int t, const void *src, int on_device,
                           base_diag *d);
base_status gpu_plan_read(gpu_plan *p, int t, void *dst, int on_device,
                          base_diag *d);
/* Median latency of `iters` whole-graph runs after `warmup` runs, timed
 * with CUDA events around each replay. */
base_status gpu_plan_time(gpu_plan *p, int warmup, int iters, double *median_ms,
                          base_diag *d);
/* Per-node device time: each node's kernels alone, back to back in a CUDA
 * graph and replayed (as the autotuning times them), `reps` times;
 * node_ms[i] (g->nnodes entries) gets node i's median in ms per run, 0 for
 * views and weight-only nodes. */
base_status gpu_plan_profile(gpu_plan *p, int reps, double *node_ms,
                             base_diag *d);
/* After the first run: how many streams its CUDA graph uses (1: one), and
 * where both were captured and timed (gpu_options.streams 0), one
 * replay's time on one stream and on several (ms; 0 when not timed). */
void gpu_plan_streams(const gpu_plan *p, int *streams, double *ms_one,
                      double *ms_multi);
/* Where *p (a plan of g, given v's values) runs branches side by side,
 * the node order decides which stream each node takes and what runs
 * beside what (plan/sched.c: greedy, in order): tries - 1 other orders
 * of g (ir_graph_reordered, seeds 1, 2, ...) are planned, given v,
 * captured and timed as *p was, and the fastest replay's plan is kept in
 * *p (*kept: its seed, 0 for g's own order); the others are freed. A
 * kept plan runs its own copy of g (gpu_plan_graph): the same tensors,
 * node indices of its order. Nothing is tried where the plan's streams
 * were forced (gpu_options.streams > 0: its replay untimed). `run` plans
 * g's canonical order (ir_graph_canonical) and tries orders of that, so
 * one program's files are scheduled alike. */
base_status gpu_plan_reorder(gpu_ctx *c, const ir_graph *g, const ex_values *v,
                             int tries, gpu_plan **p, int *kept, base_diag *d);
/* The graph p runs: the one given to gpu_plan_new, or the order
 * gpu_plan_reorder kept. */
const ir_graph *gpu_plan_graph(const gpu_plan *p);
/* Bytes of the activation arena, of inputs+weights and of workspace. */
void gpu_plan_memory(const gpu_plan *p, size_t *arena, size_t *persist,
                     size_t *workspace);
/* Sum of the sizes of all activations and of the nodes' scratch buffers
 * (what the arena would be without reuse). */
size_t gpu_plan_unplanned_bytes(const gpu_plan *p);
/* The node whose kernels compute node i's result: i itself, -1 for a view
 * (the executor folds no node into another's kernel: the lower stage,
 * src/fuse/lower.h, made each such fold a node of the graph). */
int gpu_plan_computed_by(const gpu_plan *p, int i);
/* Whether tensor t's bytes are channels-last (NHWC) in the plan
 * (plan/layout.c): rank 4 with H * W > 1 only. */
int gpu_plan_channels_last(const gpu_plan *p, int t);
/* What runs node i of a plan, in words: for a convolution "kconv
 * depthwise" (the executor's kernel), "cuBLASLt GEMM" (on x itself) or
 * "cuBLASLt GEMM on im2col patches", "cuDNN graph API" or "cuDNN"; "cuBLASLt"
 * for a matmul ("cuBLAS batched GEMM" for one read through its transposes),
 * "NVRTC" for a fused node, "attention kernel" or "cuBLAS batched GEMMs and
 * softmax" for attention, "view" for a node that names its input's bytes
 * and does no work (a reshape, a split or transpose read in place),
 * "float32 kernels on copies" for a node of a half graph staged through
 * float32 copies, "kernel" otherwise. */
const char *gpu_plan_engine(const gpu_plan *p, int i);

/* Measures node `node` of g alone: a one-node graph with the node's inputs
 * as inputs/weights (seeded random, same init hints), the same algorithm
 * choices as run (c's cache), timed as a CUDA graph replay; median of reps
 * after warmup. Its layout: the layout the whole of g runs the node in
 * (src/gpu/measure.c), or with $SUPEROPT_MEASURE_LAYOUT=node the one-node
 * graph's own (inputs and outputs NCHW). */
base_status gpu_measure_node(gpu_ctx *c, const ir_graph *g, int node,
                             int warmup, int reps, double *median_ms,
                             base_diag *d);
/* The plan gpu_measure_node times for node `node` of g, planned, not
 * uploaded: *h the one-node graph (ir_graph_free it after
 * gpu_plan_free(*p)), *p its plan, in the layout gpu_measure_node uses. */
base_status gpu_measure_plan(gpu_ctx *c, const ir_graph *g, int node,
                             ir_graph **h, gpu_plan **p, base_diag *d);

/* The memory planner (no GPU needed): block k of sizes[k] bytes is live
 * from step first[k] to step last[k] inclusive; off[k] gets a 256-aligned
 * offset such that blocks whose lives overlap never overlap in bytes.
 * Largest blocks first, each at the lowest gap that fits. Returns the arena
 * size, or (size_t)-1 when out of host memory. */
size_t gpu_memplan(int n, const size_t *sizes, const int32_t *first,
                   const int32_t *last, size_t *off);

/* The multi-stream schedule (plan/sched.c; no GPU needed). Node v runs when
 * runs[v]; it reads what the running nodes dep_on[dep_at[v] ..
 * dep_at[v+1]) write (n + 1 offsets); pin0[v] (pin0 may be NULL) keeps it
 * on stream 0. Up to k streams (at most GPU_STREAMS_MAX). */
#define GPU_STREAMS_MAX 8
#define GPU_STREAMS_AUTO 8 /* gpu_options.streams 0 */
typedef struct gpu_sched {
  int nstreams;     /* streams used (1: nothing runs side by side) */
  int32_t *stream;  /* per node: its stream, -1 when it does not run */
  int32_t *wait_at; /* n + 1 offsets into wait_on: before node v its stream
                       waits for the events of nodes wait_on[wait_at[v] ..
                       wait_at[v+1]) */
  int32_t *wait_on;
  int32_t *ev;   /* per node: 1 when an event is recorded after it */
  int32_t *sync; /* per node a: every running node from index sync[a] on is
                    ordered after a (a + 1 for nodes that do not run) */
} gpu_sched;
/* Fills s (0), or -1 when out of memory (s then empty). */
int gpu_sched_build(int n, const unsigned char *runs, const int32_t *dep_at,
                    const int32_t *dep_on, const unsigned char *pin0, int k,
                    gpu_sched *s);
void gpu_sched_free(gpu_sched *s);

#endif
