/* gpu_int.h: the CUDA executor's private structures (src/gpu/ only).
 *
 * A plan holds one gpu_step per graph node: what run needs beyond the graph
 * itself (device pointers of its tensors, cuDNN descriptors and the chosen
 * algorithm for convolutions, a cuBLASLt descriptor set and algorithm for
 * matmuls, a scratch buffer). Pointers are fixed at plan time, so the node
 * sequence can be captured once as a CUDA graph and replayed.
 */
#ifndef SUPEROPT_CX_INT_H
#define SUPEROPT_CX_INT_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "gpu.h"
#include "kern/kdwt.h"
#include "kern/kern.h"

_Static_assert(CXK_RANK == IR_MAX_RANK, "the kernels' rank is the IR's");
_Static_assert(CXK_MSTEPS >= IR_MOVE_MAX_OPS && CXK_RANK >= IR_MAX_FIXED_IN,
               "a move program fits the kernel's steps and parts");

/* A remembered cudnnFind result, keyed by the convolution's geometry. */
typedef struct gpu_conv_key {
  int64_t n, c, h, w, o, kh, kw;
  int32_t pad[2], stride[2], dil[2], groups, strict;
  int16_t cl;    /* channels-last tensors */
  int16_t dtype; /* x's, w's and y's element type (CXK_F32: 0, so a
                    float32 key's bytes are those of the int32 cl before) */
  /* the convolution's epilogue (bias, relu or clip, no residual) is one
   * kconv.cu adds in the kernel: 1 bias and relu (the legacy cuDNN path
   * fuses them, the graph API's plain plan does not), 2 any other; 0 none
   * or not. A geometry ksmallk.cu may run (a half stem or low-K pointwise
   * convolution, groups 1): GPU_SK_ON with its epilogue's GPU_FEP_* bits
   * (a clip of any bounds as GPU_FEP_CLIP) and GPU_SK_NCHW where it reads
   * an NCHW x as it is */
  int32_t ep;
  /* the epilogue a graph-API plan may compute with the convolution
   * (GPU_FEP_*: cuDNN's fusion engines), 0 for the convolution
   * alone; hi: the upper bound of a clip from 0 (GPU_FEP_CLIP) */
  int32_t fep;
  float hi;
} gpu_conv_key;
_Static_assert(sizeof(gpu_conv_key) == 7 * 8 + 12 * 4,
               "no padding bytes: find_choice compares keys with memcmp");

enum {
  GPU_FEP_BIAS = 1, /* + bias[c] */
  GPU_FEP_ADD = 2,  /* then + a residual of y's shape and layout */
  GPU_FEP_RELU = 4, /* then relu */
  GPU_FEP_CLIP = 8  /* or then min(max(v, 0), hi) */
};

enum { GPU_SK_ON = 16, GPU_SK_NCHW = 32 }; /* gpu_conv_key.ep */
/* gpu_conv_choice.own at and past this: ksmallk.cu's kernel, own -
 * GPU_OWN_SK its tile (cxk_sk.var); below: kconv.cu's, 1 + its shape */
#define GPU_OWN_SK 1000

/* $SUPEROPT_CONV_FUSE, for tests and comparisons: a number M offers
 * cuDNN's fused plan only for epilogues within the GPU_FEP_* bits M (0:
 * never); returns that mask, else all bits. *always (where not NULL): 1
 * for "always", the fused plan wherever cuDNN has one, not only where it
 * is faster (tune/conv.c). */
long gpu_conv_fuse_env(int *always);

typedef struct gpu_conv_choice {
  gpu_conv_key key;
  cudnnConvolutionFwdAlgo_t algo; /* legacy API, when plan is NULL */
  cudnnMathType_t math;
  cudnnBackendDescriptor_t plan; /* graph API execution plan, or NULL */
  size_t ws;
  int own;     /* the executor's depthwise kernel (kconv.cu, kdwt.cu) was
                  faster: 1 + its variant (gpu_dw_ok); or ksmallk.cu's,
                  GPU_OWN_SK + its tile */
  float ms;    /* the chosen engine's median time */
  int fused;   /* plan computes key.fep's epilogue too */
  float ep_ms; /* the epilogue kernel's time where it was timed (key.fep
                  set and a fused plan found), else 0 (also where the
                  legacy engine adds bias and relu itself) */
  int rank;    /* plan's rank in cuDNN's heuristics and its engine's
                  global index (the tuning cache) */
  int engine;
  float patch_ms; /* the input's patches for a GEMM (cxk_im2col_rows), where
                     timed (gpu_conv_patch_time), else 0 */
} gpu_conv_choice;

/* The graph API's best plan for a geometry (tune/dnn.c). */
typedef struct gpu_dnn_choice {
  cudnnBackendDescriptor_t plan; /* NULL when no engine worked */
  size_t ws;
  float ms; /* its median time */
  int tried;
  int rank;   /* plan's rank in cuDNN's heuristics */
  int engine; /* and the global index of its engine */
} gpu_dnn_choice;

/* A remembered matmul algorithm, keyed by shape, epilogue and precision. */
typedef struct gpu_mm_key {
  int64_t m, n, k, batch;
  int32_t epilogue, bias, strict;
  int32_t transa; /* cuBLASLt's A transposed (a convolution's filter) */
  int32_t beta;   /* 1: C is read, D = A B + C (a folded residual) */
  int32_t dtype;  /* the operands' element type, CXK_F32 (0), CXK_F16 or
                     CXK_BF16 (in the place of a zero padding field: float32
                     keys keep their bytes; keys are compared with memcmp) */
} gpu_mm_key;

typedef struct gpu_mm_choice {
  gpu_mm_key key;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
  float ms; /* its median time (0: not timed, the only candidate) */
} gpu_mm_choice;

/* A kernel generated for fused nodes (run/fused.c). */
typedef struct gpu_fk gpu_fk;
/* The autotuners' choices on disk (tune/store.c). */
typedef struct gpu_tune gpu_tune;

struct gpu_ctx {
  int device;
  gpu_options opt;
  cudaStream_t stream;
  cudaStream_t side[GPU_STREAMS_MAX - 1]; /* for multi-stream captures (made
                                             on first use) */
  cudnnHandle_t dnn;
  cublasLtHandle_t lt;
  cublasHandle_t blas; /* pointer-array batched GEMMs (gpu_smm) */
  void *blas_ws;       /* its workspace, GPU_BLAS_WS bytes (so that a graph
                          capture allocates nothing) */
  struct cudaDeviceProp prop;
  int tune_log;           /* $SUPEROPT_TUNE_LOG: the autotuners' candidates and
                             choices on standard error (a diagnostic) */
  gpu_conv_choice *convs; /* algorithm cache */
  int nconvs, capconvs;
  gpu_mm_choice *mms; /* matmul algorithm cache */
  int nmms, capmms;
  struct gpu_wg_choice *wgs; /* kwg.cu's choices (gpu_wg_choose) */
  int nwgs, capwgs;
  gpu_fk *fks; /* generated kernels (run/fused.c) */
  int nfks, capfks;
  int fk_compiled, fk_disk, fk_reused; /* NVRTC runs, disk and memory hits */
  int dp_compiled, dp_disk;    /* runtime-compiled cuDNN plans (tune/dnn.c) */
  gpu_tune *tune;              /* the tuning cache, opened on first use */
  int tune_timed, tune_loaded; /* choices timed, taken from it (tune/store.c) */
};

typedef struct gpu_mm gpu_mm;

/* A graph-API plan's variant pack and the pointers it was made with. */
typedef struct gpu_dnn_pack {
  cudnnBackendDescriptor_t vp;
  const void *ptr[6]; /* x, w, y, bias, residual, workspace */
} gpu_dnn_pack;

typedef struct gpu_conv {
  cudnnTensorDescriptor_t x, y, b;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnActivationDescriptor_t act; /* fused relu, or NULL */
  cudnnConvolutionFwdAlgo_t algo;
  cudnnBackendDescriptor_t plan; /* graph API plan (the context's), or NULL */
  gpu_dnn_pack vp;               /* its variant pack (this node's pointers) */
  int fused; /* plan adds the bias and activation itself (key.fep) */
  size_t ws;
  int prepad; /* asymmetric padding: x is copied padded into scratch
                 (not for a GEMM on patches: im2col pads as it copies) */
  int own;    /* runs kconv.cu's depthwise kernel with dw (not cuDNN) */
  struct gpu_mm *gemm; /* a channels-last convolution run as a cuBLASLt
                          GEMM (faster than cuDNN), or NULL */
  int gemm_ep;         /* its epilogue adds the bias and the activation
                          (and a folded residual, as C with beta 1) */
  int patches;         /* the GEMM's x: the input's patches, copied into
                          scratch by cxk_im2col_rows(im2col); else x itself
                          (1x1, stride 1, unpadded) */
  cxk_im2col im2col;
  cxk_dw dw;
  int sk;         /* runs ksmallk.cu's kernel with skp (not cuDNN) */
  int sk_x_as_is; /* and reads x in its own layout (NCHW): no conversion
                     (plan/layout.c) */
  cxk_sk skp;
  cxk_pad pad;
  ir_shape wcl_as; /* the shape wcl is converted as: the filter's (KRSC),
                      or [1, C, kh, kw] for the own kernel ([kh, kw, C]) */
  float *wcl;      /* channels-last: the filter as KRSC (own allocation), or
                      NULL when w serves as is (1x1 kernels, NCHW) */
  int wcl_static;  /* w is a weight or weight-only: wcl filled at upload */
} gpu_conv;

struct gpu_mm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
  int post_act;     /* activation left for a separate kernel */
  int post_bias;    /* bias left for a separate kernel */
  int act;          /* the effective activation (ir_act) */
  int64_t n, count; /* columns of the result, its element count */
  int dt;           /* the operands' element type (CXK_*; set before
                       gpu_mm_setup) */
  float ms;         /* the chosen algorithm's median time (0: not timed) */
  /* kwg.cu's matmul in place of cuBLASLt and the epilogue kernel
   * (gpu_wg_choose): wg_var its tiling (-1: not taken), wt the weight
   * transposed ([n, k], filled at upload), wg its TMA descriptors (bound
   * once the pointers are placed), wg_fn the whole epilogue's function. */
  int wg_var, wg_fn;
  float *wt;
  cxk_wg wg;
};

/* A rank-4 batched matmul that reads an operand through a transpose, or
 * writes its result through one, without the copy (plan/layout.c,
 * gpu_layout_strided_matmuls): BERT's attention heads. Each of a, b and c
 * has strides st[k] over its logical [d0, d1, rows, cols] in the bytes it
 * lives in; cuBLAS's pointer-array batched GEMM takes one matrix per
 * (d0, d1), pointers filled once the arena is placed. */
typedef struct gpu_smm {
  int64_t st[3][4];  /* a, b, c */
  int64_t off[2];    /* a's and b's first element in their bytes: the
                        column block of a split's input they read in place
                        (plan/layout.c, split_block), else 0 */
  int64_t d0, d1;    /* batch dimensions */
  int64_t m, n, k;   /* per batch: c[m,n] = a[m,k] b[k,n] (row-major view) */
  const void **parr; /* device: 3 * d0 * d1 pointers (cuBLAS A, B, C) */
} gpu_smm;

/* An attention node's arguments (katt.cu, kflash.cu): strides of q, k, v
 * and y, packed or, where plan/layout.c reads BERT's heads in place,
 * through the transposes and the split (off: q's, k's and v's first
 * element). It runs in one of three forms (GPU_ATT_*): katt.cu's kernel;
 * split, cuBLAS's batched GEMM for the scores into the node's scratch, the
 * scaled softmax in place and a batched GEMM with v (float32 only);
 * kflash.cu's flash kernel (TF32, or f16/bf16 operands). The fastest of those
 * it may run in, timed once the arena is placed (gpu_att_bind;
 * $SUPEROPT_ATTENTION=kernel, split or flash takes that one). */
enum { GPU_ATT_KERNEL, GPU_ATT_SPLIT, GPU_ATT_FLASH, GPU_ATT_FORMS };
typedef struct gpu_att {
  cxk_att a;
  int64_t off[3];
  int rw;       /* 0: the tensor-core kernel, else the fp32 one */
  int split_ok; /* cuBLAS takes every operand's layout */
  int flash_ok; /* the flash kernel may run it (TF32, sm_80 on) */
  int form;     /* GPU_ATT_*: the form it runs in (the fastest timed) */
  float ms[GPU_ATT_FORMS]; /* each form's time, 0 where not timed */
  gpu_smm mm[2];           /* scores = q k, y = p v */
} gpu_att;

typedef struct gpu_step {
  int fuse_clip; /* a convolution's act=clip (ReLU6: ops.def), applied by
                    its bias kernel, with these bounds */
  float clip_lo, clip_hi;
  int res;        /* 1 + the residual a convolution or matmul adds (the
                     bias kernel; cuBLASLt's C with beta = 1): its input r
                     (ops.def) */
  int ln_bias;    /* a layer norm's xb input (ops.def: a convolution's bias
                     moved into it by src/fuse/lower_epi.c): 1 + that */
  int view;       /* the node only names its input's bytes: a reshape, a
                     transpose of channels-last bytes (plan/layout.c), a
                     transpose or split a matmul reads in place */
  float *scratch; /* node-private scratch in the arena, or NULL */
  size_t scratch_bytes;
  gpu_conv *conv;
  gpu_mm *mm;
  gpu_smm *smm;         /* a matmul through transposes (then mm is NULL) */
  gpu_att *att;         /* an attention node's arguments */
  int fused;            /* fused node: 1 + its kernel's index in ctx->fks */
  int64_t fused_blocks; /* its grid */
  int fused_threads;    /* its block */
  int cl;               /* runs channels-last (plan/layout.c) */
  size_t *cin_off;      /* per input: offset in scratch of its copy converted to
                           the node's layout, (size_t)-1 when read as is; NULL
                           when no input is converted */
  size_t *stage_off;    /* a node of a half graph run by the float32 kernels
                           (gpu_half_mode 2): per input, then per output, the
                           offset in scratch of its float32 copy, (size_t)-1
                           for a tensor that is not half; NULL otherwise */
  float **stage_keep;   /* the tensors' own pointers while swapped */
} gpu_step;

/* A layout handed to gpu_plan_new_given in place of the layout pass's
 * own choice (measure.c: a node alone in the layout the whole graph runs
 * it). */
typedef struct gpu_layout_given {
  const unsigned char *cl;   /* per tensor: its bytes channels-last (rank 4
                                with H * W > 1 only; never a convolution's
                                filter or a reshape's input) */
  const unsigned char *mode; /* per node: it runs channels-last */
} gpu_layout_given;

/* A tensor that is a column block of the rows of a split's input: an
 * output of a split made a view, or a reshape of one that splits its last
 * dimension alone (plan/layout.c, gpu_layout_fused_splits). Its element
 * at (i_0, ..., i_r-1) lies in the input's bytes at off + the row index of
 * its first lead dimensions times w + its offset within the block
 * (row-major over the rest): gpu_strides gives those strides, and its
 * pointer (plan/plan.c) points at off. w == 0: not a block. */
typedef struct gpu_colblk {
  int64_t w, off; /* the input's row width and the block's first column */
  int lead;       /* the dimensions that index rows: the input's rank - 1 */
} gpu_colblk;

struct gpu_plan {
  gpu_ctx *ctx;
  const gpu_layout_given *given; /* during gpu_plan_new_given only */
  const ir_graph *g;
  ir_graph *own_g; /* g when the plan owns it (gpu_plan_reorder's orders) */
  float **ptr;     /* device pointer of every tensor */
  int32_t *root;   /* the tensor whose bytes a tensor uses (views) */
  int32_t *last;   /* last node reading a tensor's bytes (poison), -1 never */
  char *arena;     /* activations */
  char *persist;   /* inputs and weights */
  void *ws[GPU_STREAMS_MAX]; /* cuDNN / cuBLASLt workspace, one per stream
                                (a node uses its stream's, gpu_step_ws) */
  size_t arena_bytes, persist_bytes, ws_bytes, unplanned_bytes;
  gpu_sched sched; /* streams of the multi-stream replay (plan/sched.c) */
  int multi;       /* the captured graph runs on sched.nstreams streams */
  double ms_one, ms_multi; /* both replays' times where both were timed */
  gpu_step *steps;
  unsigned char *wonly; /* node computes from weights and constants only:
                           run once by gpu_plan_upload, not in each replay */
  unsigned char *cl;    /* tensor stored channels-last (NHWC): rank 4 with
                           H * W > 1 only (plan/layout.c) */
  gpu_colblk *blk;      /* per tensor: a column block of a split's input
                           read in place (plan/layout.c,
                           gpu_layout_fused_splits), or NULL: none */
  cudaGraphExec_t exec;
  int captured;
  int half; /* the graph has f16 or bf16 tensors (docs/half.md): each
               node natively in half or staged through float32 copies
               (run/half.c), in the layouts plan/layout.c chose */
};

/* The element type of tensor t's bytes (CXK_F32 for float32, int64 and
 * bool, all held as floats; CXK_F16, CXK_BF16). */
static inline int gpu_dt_of(const ir_graph *g, int t) {
  int dt = g->tensors[t].dtype;
  return dt == IR_DT_F16 ? CXK_F16 : dt == IR_DT_BF16 ? CXK_BF16 : CXK_F32;
}
/* Bytes of tensor t's elements on the device. */
static inline size_t gpu_tensor_bytes(const ir_graph *g, int t) {
  return cxk_dt_size(gpu_dt_of(g, t)) *
         (size_t)ir_shape_numel(&g->tensors[t].shape);
}

/* run/half.c. Whether node i of a half graph runs on the GPU, and how: 1
 * natively in its type (cuBLASLt, cuDNN, NVRTC, khalf.cu), 2 staged:
 * its half inputs converted to float32 copies, the float32 kernels run,
 * its outputs converted back (the same values: the kernels compute in
 * float32 and the result is rounded once), 0 not at all (d says why,
 * naming the node). */
int gpu_half_mode(const gpu_plan *p, int i, base_diag *d);
/* At plan time, after gpu_step_prepare: a staged node's float32 copies
 * in its scratch (stage_off). */
base_status gpu_half_stage_prepare(gpu_plan *p, int i, base_diag *d);
/* Around a staged node's enqueue: its half inputs converted into their
 * copies and every half tensor's pointer swapped for its copy's, then
 * the pointers restored and the outputs converted back. gpu_half_swap
 * and gpu_half_unswap swap them alone (binding pointer arrays, plan
 * time); both no-ops for a node that is not staged. */
cudaError_t gpu_half_stage_in(gpu_plan *p, int i);
cudaError_t gpu_half_stage_out(gpu_plan *p, int i);
void gpu_half_swap(gpu_plan *p, int i);
void gpu_half_unswap(gpu_plan *p, int i);

/* Sets d from a failed CUDA runtime call; returns BASE_ERR_NOMEM for out of
 * memory, else BASE_ERR_INTERNAL. */
base_status gpu_cuda_fail(base_diag *d, cudaError_t e, const char *what);
base_status gpu_dnn_fail(base_diag *d, cudnnStatus_t e, const char *what);
/* cudaStreamEndCapture, then every programmatic edge of the graph made a
 * plain dependency (see rt/err.c); *g is the graph (or NULL) either way, for
 * the caller to destroy. Every capture of the executor's steps ends here. */
cudaError_t gpu_end_capture(cudaStream_t s, cudaGraph_t *g);
base_status gpu_blas_fail(base_diag *d, cublasStatus_t e, const char *what);

#define GPU_CUDA(d, call)                                                      \
  do {                                                                         \
    cudaError_t gpu_e_ = (call);                                               \
    if (gpu_e_ != cudaSuccess)                                                 \
      return gpu_cuda_fail(d, gpu_e_, #call);                                  \
  } while (0)
#define GPU_DNN(d, call)                                                       \
  do {                                                                         \
    cudnnStatus_t gpu_e_ = (call);                                             \
    if (gpu_e_ != CUDNN_STATUS_SUCCESS)                                        \
      return gpu_dnn_fail(d, gpu_e_, #call);                                   \
  } while (0)
#define GPU_BLAS(d, call)                                                      \
  do {                                                                         \
    cublasStatus_t gpu_e_ = (call);                                            \
    if (gpu_e_ != CUBLAS_STATUS_SUCCESS)                                       \
      return gpu_blas_fail(d, gpu_e_, #call);                                  \
  } while (0)

/* Fused nodes (run/fused.c): generates, compiles (or finds cached) and loads
 * node n's kernel once the plan's pointers are known; launches it. */
base_status gpu_fused_prepare(gpu_plan *p, const ir_node *n, gpu_step *s,
                              base_diag *d);
base_status gpu_fused_enqueue(gpu_plan *p, const ir_node *n, const gpu_step *s,
                              base_diag *d);
/* Unloads the context's generated kernels. */
void gpu_fused_ctx_free(gpu_ctx *c);
/* The tuning cache (tune/store.c): a convolution's or matmul's choice made by
 * an earlier process on this GPU with these libraries, rebuilt into *out
 * (1), or 0 (none, the cache off, or a plan that no longer rebuilds);
 * *_add keeps a new choice, gpu_tune_save writes the new ones to disk and
 * frees the cache (gpu_ctx_free). */
int gpu_tune_conv_find(gpu_ctx *c, const gpu_conv_key *k, gpu_conv_choice *out);
void gpu_tune_conv_add(gpu_ctx *c, const gpu_conv_choice *ch);
/* Adds the patches' time to k's record (not counted as a choice). */
void gpu_tune_conv_patches(gpu_ctx *c, const gpu_conv_key *k, float ms);
int gpu_tune_mm_find(gpu_ctx *c, const gpu_mm_key *k, gpu_mm_choice *out);
void gpu_tune_mm_add(gpu_ctx *c, const gpu_mm_choice *ch);
void gpu_tune_save(gpu_ctx *c);
/* The graph-API plan of rank `rank` in heuristics mode A for k (fused:
 * with k->fep's epilogue), finalised or read from the runtime-compiled
 * plan cache, and its workspace; 0 where it does not build, is not of
 * engine `engine` (a global engine index) or needs more than the
 * workspace limit (tune/dnn.c). */
int gpu_dnn_plan_at(gpu_ctx *c, const gpu_conv_key *k, int fused, int rank,
                    int engine, cudnnBackendDescriptor_t *plan, size_t *ws);
/* The disk cache's folder: $SUPEROPT_KERNEL_CACHE ("off": *off set), else
 * $XDG_CACHE_HOME/superopt/kernels, else ~/.cache/superopt/kernels; *off
 * also where there is none. gpu_mkdirs makes path and its parents (errors
 * ignored: a cache that cannot be written is no error). Fused kernels
 * (<key>.cubin, run/fused.c) and cuDNN's runtime-compiled plans
 * (<key>.plan.json, tune/dnn.c) live there. */
base_status gpu_cache_dir(char *buf, size_t n, int *off);
void gpu_mkdirs(char *path);

/* Looks up or runs cudnnFind for a convolution; fills algo/math/ws. */
base_status
gpu_conv_choose(gpu_ctx *c, const gpu_conv_key *k, cudnnTensorDescriptor_t x,
                cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                cudnnTensorDescriptor_t y, gpu_conv_choice *out, base_diag *d);

/* The executor's own depthwise kernel's geometry for k; 0 when k is not a
 * depthwise convolution it runs (tune/dnn.c). */
int gpu_dw_args(const gpu_conv_key *k, cxk_dw *a);
/* Its variants (cxk_dw.var): kconv.cu's thread shapes, then kdwt.cu's
 * tiles (half, stride 1; not with $SUPEROPT_DWT=0); whether variant a->var runs
 * a's geometry; the launch (tune/dnn.c). */
int gpu_dw_variants(void);
int gpu_dw_ok(const cxk_dw *a);
cudaError_t gpu_dw_run(cudaStream_t s, const void *x, const void *w,
                       const void *bias, void *y, const cxk_dw *a);
/* One run of what an autotuner times (0: it ran). */
typedef int (*gpu_timed_run)(gpu_ctx *c, const void *u);
/* Median time in ms of one run(c, u) as inside a graph replay (tune/time.c):
 * up to GPU_TUNE_BATCH runs captured into a CUDA graph, the graph timed
 * between events e0 and e1 over several replays, divided by the runs.
 * Timing single launches measured the launch (6 to 10 us on an H100) as
 * much as the kernel, and every batch-1 candidate looked alike. Where the
 * capture fails: single launches. Huge where run fails. */
#define GPU_TUNE_BATCH 10
float gpu_tune_time(gpu_ctx *c, gpu_timed_run run, const void *u,
                    cudaEvent_t e0, cudaEvent_t e1);
/* Median time in ms of cxk_im2col_rows for a (tune/dnn.c); a huge value where
 * it cannot be timed. */
float gpu_im2col_time(gpu_ctx *c, const cxk_im2col *a);
/* The same for the convolution of key k, timed once per key and kept with
 * its choice (made first: gpu_conv_choose) and in the tuning cache, so
 * that the GEMM-or-cuDNN decision is the same for every node of k and
 * every process (tune/conv.c). */
float gpu_conv_patch_time(gpu_ctx *c, const gpu_conv_key *k,
                          const cxk_im2col *a);
/* Its median time on scratch buffers (ms), or a huge value; *var: its
 * fastest shape. ep_ms (or NULL): the time of the bias + relu kernel
 * (cxk_bias_act) over k's output, timed alike: what the own kernel saves
 * where it adds the epilogue itself (k->ep). */
float gpu_dw_time(gpu_ctx *c, const gpu_conv_key *k, int *var, float *ep_ms);
/* ksmallk.cu's geometry for k (GPU_SK_ON in k->ep); 0 when it does not
 * run k (tune/dnn.c). */
int gpu_sk_args(const gpu_conv_key *k, cxk_sk *a);
/* Its median time on scratch buffers with k's whole epilogue (ms), or a
 * huge value (also where the device or the build lacks sm_80's mma);
 * *var: its fastest tile (or the one $SUPEROPT_SK=K names); *ep_ms: the
 * executor's epilogue kernel over k's output, which the other engines
 * need (0 where there is no epilogue). */
float gpu_sk_time(gpu_ctx *c, const gpu_conv_key *k, int *var, float *ep_ms);
/* Relative L2 distance between ksmallk.cu's result in tile var and the
 * graph API's plain plan's plus the executor's epilogue kernel, on the
 * same deterministic random inputs (k's epilogue; an NCHW x converted
 * for cuDNN); huge where either does not run (tune/dnn.c). */
double gpu_sk_verify(gpu_ctx *c, const gpu_conv_key *k, int var,
                     cudnnBackendDescriptor_t plain, size_t plain_ws);
/* The same for the own depthwise kernel's variant var (the convolution
 * alone; the filter converted to its [k, k, c]). */
double gpu_dw_verify(gpu_ctx *c, const gpu_conv_key *k, int var,
                     cudnnBackendDescriptor_t plain, size_t plain_ws);
/* Autotunes the graph API's engines for k (never fails: out->plan NULL):
 * the convolution alone, or where fused, with k->fep's epilogue in the
 * same operation graph (cuDNN's fusion engines). */
void gpu_dnn_autotune(gpu_ctx *c, const gpu_conv_key *k, int fused,
                      gpu_dnn_choice *out);
/* Median time in ms of the executor's epilogue kernel for k->fep
 * (cxk_bias_act over k's output, cxk_bias_res_act with a residual), timed
 * like the engines; a huge value where it cannot be timed. */
float gpu_ep_time(gpu_ctx *c, const gpu_conv_key *k);
/* Relative L2 distance between the fused plan's result (k->fep's epilogue
 * in cuDNN's plan) and the plain plan's plus the executor's epilogue
 * kernel, on the same deterministic random inputs; huge where either does
 * not run. Fused engines that compute a different result are refused. */
#define GPU_DNN_VERIFY_TOL 1e-2
double gpu_dnn_verify(gpu_ctx *c, const gpu_conv_key *k,
                      cudnnBackendDescriptor_t plain, size_t plain_ws,
                      cudnnBackendDescriptor_t fused, size_t fused_ws);
/* Runs plan on x, w (b: bias, r: residual, NULL where the plan has none)
 * -> y; the
 * variant pack is made on first use and again when a pointer
 * changed (another arena or stream workspace). */
base_status gpu_dnn_execute(gpu_ctx *c, cudnnBackendDescriptor_t plan,
                            gpu_dnn_pack *vp, const float *x, const float *w,
                            float *y, const float *b, const float *r, void *ws,
                            base_diag *d);

#define GPU_MM_WS ((size_t)32 << 20) /* matmul workspace limit */
/* Workspace a convolution algorithm may ask for (tune/conv.c). */
#define GPU_CONV_WS_MAX ((size_t)256 << 20)
#define GPU_BLAS_WS ((size_t)4 << 20) /* cuBLAS's (gpu_smm) */

/* Looks up or times cuBLASLt's candidates for m (descriptors set up). */
base_status gpu_mm_choose(gpu_ctx *c, const gpu_mm_key *k, gpu_mm *m,
                          base_diag *d);
/* kwg.cu's tiling for the float32 product of key k with the epilogue
 * function fn (CXK_ID, CXK_RELU, CXK_GELU; bias and residual as k says)
 * where, timed on scratch buffers, it beats cuBLASLt's chosen algorithm
 * (m's, key k) plus the epilogue kernel the executor would add, and its
 * result agrees with theirs (relative L2 within GPU_WG_VERIFY_TOL); else
 * -1, also where the device or the build lacks it. $SUPEROPT_WG: 0 never,
 * 1 always where it runs (tiling 0, untimed: tests), unset by time. Kept
 * per key and fn in the context. */
#define GPU_WG_VERIFY_TOL 1e-2
int gpu_wg_choose(gpu_ctx *c, const gpu_mm_key *k, gpu_mm *m, int fn);
/* tune/dnn.c: deterministic values in [-1, 1) of type dt, complete on
 * return; the relative L2 distance between two device arrays. */
int gpu_fill_random(cudaStream_t st, float *d, int64_t n, uint32_t seed,
                    int dt);
double gpu_rel_l2(const float *a, const float *b, int64_t n, int dt);

/* run/shuffle.c: enqueues concat_shuffle node j's kernel (kmove.cu). */
cudaError_t gpu_shuffle_enqueue(gpu_plan *p, int j);

/* run/move.c: enqueues move node j's kernel (kmprog.cu). */
cudaError_t gpu_move_enqueue(gpu_plan *p, int j);
/* What runs move node j, in words (gpu_plan_engine): "kmprog strided
 * copy" (a program that is one strided walk of its input) or "kmprog step
 * walk". */
const char *gpu_move_engine(const gpu_plan *p, int j);

/* Is tensor t a weight or computed from weights alone (wonly: weight-only
 * nodes)? A bias moved into a later reader, or a filter read before its
 * node's turn, must be. (plan/query.c) */
int gpu_weight_like(const ir_graph *g, const unsigned char *wonly, int t);
/* The node that alone reads tensor t (reads: readers of each tensor, graph
 * outputs counted, so an output has none), or -1. (plan/query.c) */
int gpu_sole_reader(const gpu_plan *p, const int *reads, int t);

/* run/se.c: an se node (ops.def) as kse.cu's kernel: its arguments, the
 * check that the kernel runs it on this device (at prepare), the launch. */
cxk_se gpu_se_args(const gpu_plan *p, int i);
base_status gpu_se_prepare(gpu_plan *p, int i, base_diag *d);
cudaError_t gpu_se_enqueue(gpu_plan *p, int i);

/* plan/layout.c: chooses each node's layout (channels-last or NCHW) and each
 * tensor's (or takes p->given's); called before the steps are prepared. */
base_status gpu_layout_assign(gpu_plan *p, base_diag *d);
/* plan/plan.c: gpu_plan_new with the layout l (NULL: the layout pass's
 * own); l need not outlive the call. */
base_status gpu_plan_new_given(gpu_ctx *c, const ir_graph *g,
                               const gpu_layout_given *l, gpu_plan **out,
                               base_diag *d);
/* plan/plan.c: the layout gpu_plan_new would give g (the layout pass alone:
 * no kernels prepared, nothing allocated on the device): cl[t] for each of
 * g's tensors, mode[i] for each node, as gpu_layout_given has them. */
base_status gpu_plan_layout(gpu_ctx *c, const ir_graph *g, unsigned char *cl,
                            unsigned char *mode, base_diag *d);
/* pin[t] = 1 for each tensor whose bytes stay NCHW whatever its
 * producer's layout: graph outputs, convolution filters (read as KCRS),
 * reshapes' inputs (but a folded shuffle's). The layout pass pins their
 * roots (a view's bytes are its root's). */
void gpu_layout_pins(const gpu_plan *p, unsigned char *pin);
/* plan/layout.c: after the steps are prepared: which inputs each node converts
 * to its own layout, in its scratch (grows scratch_bytes). */
base_status gpu_layout_conversions(gpu_plan *p, base_diag *d);
/* Marks the transposes that only rename their input's bytes (after
 * gpu_layout_assign) as views; returns how many. */
int gpu_layout_views(gpu_plan *p);
/* After gpu_layout_views: rank-4 batched matmuls (no bias, no activation)
 * whose operands come through transposes read by them alone, or whose
 * result alone goes through one, read or write the transposes' bytes
 * directly (step smm, the transposes views); an operand that is the
 * reshape of a split's output (BERT's merged Q, K and V) reads the split's
 * input in place where every output of the split can be, and the split
 * becomes a view too. *views grows by the views made. */
base_status gpu_layout_strided_matmuls(gpu_plan *p, const int *reads,
                                       int *views, base_diag *d);
/* After gpu_layout_strided_matmuls: a split along the last axis whose
 * every output is read only by fused nodes, directly or through reshapes
 * (views) that split only its last dimension (Llama's merged projections
 * read by the rotary sums and the SwiGLU product), becomes a view: its
 * outputs and those reshapes column blocks of its input (p->blk), which
 * the fused kernels read in place (run/fused.c reads any strides). *views
 * grows by the splits made views. */
base_status gpu_layout_fused_splits(gpu_plan *p, int *views, base_diag *d);
/* How cuBLAS reads a rows x cols matrix of strides st[2], st[3] (run/mm.c):
 * 1 as is (cols contiguous, *ld = st[2] >= cols), 2 transposed (rows
 * contiguous, *ld = st[3] >= rows), 0 not at all (ld may be NULL). */
int gpu_smm_layout(const int64_t *st, int64_t rows, int64_t cols, int *ld);
/* run/att.c: attention node i's pointer arrays once p->ptr is final, and its
 * mode: split or the kernel, the faster timed on the node's own buffers
 * (their values do not matter to the time). */
base_status gpu_att_bind(gpu_plan *p, int i, base_diag *d);
/* run/mm.c: node i's gpu_smm pointer arrays, once p->ptr is final. */
base_status gpu_smm_bind(gpu_plan *p, int i, base_diag *d);
/* run/mm.c: node i's kwg.cu descriptors once p->ptr is final (cuBLASLt
 * after all where its pointers do not suit); its weight's transposed copy
 * filled (at upload, after the weight-only nodes). */
base_status gpu_mm_bind(gpu_plan *p, int i, base_diag *d);
cudaError_t gpu_mm_fill_wt(gpu_plan *p, int i);
/* run/tensor.c: float32 values (host memory, or device memory when
 * on_device) written into tensor t's bytes, converted to its type (f16,
 * bf16), or read back as float32. async: a float32 tensor's copy is
 * cudaMemcpyAsync on the plan's stream (a read then waits for it; io.c),
 * else cudaMemcpy (gpu_plan_upload, gpu_plan_download); a half tensor's
 * copy is always complete on return. */
base_status gpu_write_values(gpu_plan *p, int t, const void *src, int on_device,
                             int async, base_diag *d);
base_status gpu_read_values(gpu_plan *p, int t, void *dst, int on_device,
                            int async, base_diag *d);
/* Whether t's bytes are NHWC. */
int gpu_is_cl(const gpu_plan *p, int t);
/* Strides of t's logical (N, C, H, W, ...) coordinates in its bytes. */
void gpu_strides(const gpu_plan *p, int t, int64_t st[CXK_RANK]);
/* Enqueues a copy of t's bytes (shape s) from src to dst in the other
 * layout: to NHWC when to_cl, else to NCHW. */
cudaError_t gpu_convert(cudaStream_t st, const ir_shape *s, const float *src,
                        float *dst, int to_cl);
/* The same for elements of type dt (CXK_*). */
cudaError_t gpu_convert_dt(cudaStream_t st, const ir_shape *s, const void *src,
                           void *dst, int to_cl, int dt);
/* Enqueues dst [cols, rows] = the transpose of src [rows, cols] (float32,
 * both row-major). */
cudaError_t gpu_transpose2(cudaStream_t st, const float *src, float *dst,
                           int64_t rows, int64_t cols);
/* The pointer node i reads its input k from (converted copy or tensor). */
const float *gpu_in(const gpu_plan *p, int i, int k);

/* run/step.c: prepares node i of p (descriptors, algorithms, scratch size);
 * called before memory is planned. */
base_status gpu_step_prepare(gpu_plan *p, int i, base_diag *d);
void gpu_step_release(gpu_step *s);
/* Does node i run kernels of its own in a replay (not a view, not folded
 * into another node, not weight-only)? (plan/query.c) */
int gpu_plan_runs(const gpu_plan *p, int i);
/* plan/streams.c: the schedule of p's nodes over up to k streams (k 0: as
 * opt.streams says; no_graph and poison limit it to one), after the steps
 * are prepared and before the arena is planned. */
base_status gpu_streams_plan(gpu_plan *p, int k, base_diag *d);
/* Extends the inclusive lifetimes [f[b], l[b]] of nb arena blocks (node
 * indices; f < 0 unplanned, l >= nnodes never released) so that a block's
 * bytes go to a later block only once every node that may touch it is
 * ordered before that block's first node. No change on one stream. */
void gpu_streams_extend(const gpu_plan *p, int nb, const int32_t *f,
                        int32_t *l);
/* One workspace per stream used, as large as its nodes need; freed (and
 * the pointers cleared) by gpu_streams_free_workspaces. */
base_status gpu_streams_workspaces(gpu_plan *p, base_diag *d);
void gpu_streams_free_workspaces(gpu_plan *p);
/* Before a multi-stream capture: the side streams (made once per
 * context) and the events of the schedule (*ev, for gpu_streams_release
 * after the capture has ended). */
base_status gpu_streams_prepare(gpu_plan *p, cudaEvent_t **ev, base_diag *d);
/* Inside a capture on the context's stream: the side streams fork from
 * it, every running node is enqueued on its stream after waiting for its
 * dependencies' events, and the side streams join it again (also after a
 * failure, so the capture can end). The context's stream and cuDNN's are
 * restored on return. */
base_status gpu_streams_enqueue(gpu_plan *p, cudaEvent_t *ev, base_diag *d);
void gpu_streams_release(gpu_plan *p, cudaEvent_t *ev);
/* Node i's stream: 0 before the schedule exists and for nodes that do not
 * run (run/tensor.c). */
int gpu_stream_of(const gpu_plan *p, int i);
/* The workspace node n of p uses (its stream's). */
void *gpu_step_ws(const gpu_plan *p, const ir_node *n);
/* Enqueues node i on the context's stream. */
base_status gpu_step_enqueue(gpu_plan *p, int i, base_diag *d);

#endif
