/* cx_int.h: the CUDA executor's private structures (src/exec/cuda/ only).
 *
 * A plan holds one cx_step per graph node: what run needs beyond the graph
 * itself (device pointers of its tensors, cuDNN descriptors and the chosen
 * algorithm for convolutions, a cuBLASLt descriptor set and algorithm for
 * matmuls, a scratch buffer). Pointers are fixed at plan time, so the node
 * sequence can be captured once as a CUDA graph and replayed.
 */
#ifndef SUPEROPT_CX_INT_H
#define SUPEROPT_CX_INT_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cuda_exec.h"
#include "cx_kern.h"

/* A remembered cudnnFind result, keyed by the convolution's geometry. */
typedef struct cx_conv_key {
  int64_t n, c, h, w, o, kh, kw;
  int32_t pad[2], stride[2], dil[2], groups, strict;
} cx_conv_key;

typedef struct cx_conv_choice {
  cx_conv_key key;
  cudnnConvolutionFwdAlgo_t algo; /* legacy API, when plan is NULL */
  cudnnMathType_t math;
  cudnnBackendDescriptor_t plan; /* graph API execution plan, or NULL */
  size_t ws;
} cx_conv_choice;

/* The graph API's best plan for a geometry (cx_dnn.c). */
typedef struct cx_dnn_choice {
  cudnnBackendDescriptor_t plan; /* NULL when no engine worked */
  size_t ws;
  float ms; /* its median time */
  int tried;
} cx_dnn_choice;

/* A remembered matmul algorithm, keyed by shape, epilogue and precision. */
typedef struct cx_mm_key {
  int64_t m, n, k, batch;
  int32_t epilogue, bias, strict, pad_;
} cx_mm_key;

typedef struct cx_mm_choice {
  cx_mm_key key;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
} cx_mm_choice;

struct cx_ctx {
  int device;
  cx_options opt;
  cudaStream_t stream;
  cudnnHandle_t dnn;
  cublasLtHandle_t lt;
  struct cudaDeviceProp prop;
  cx_conv_choice *convs; /* algorithm cache */
  int nconvs, capconvs;
  cx_mm_choice *mms; /* matmul algorithm cache */
  int nmms, capmms;
};

typedef struct cx_conv {
  cudnnTensorDescriptor_t x, y, b;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnActivationDescriptor_t act; /* fused relu, or NULL */
  cudnnConvolutionFwdAlgo_t algo;
  cudnnBackendDescriptor_t plan; /* graph API plan (the context's), or NULL */
  cudnnBackendDescriptor_t vp;   /* its variant pack (this node's pointers) */
  size_t ws;
  int prepad; /* asymmetric padding: x is copied padded into scratch */
  cxk_pad pad;
} cx_conv;

typedef struct cx_mm cx_mm;
struct cx_mm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  size_t ws;
  int post_act;     /* activation left for a separate kernel */
  int post_bias;    /* bias left for a separate kernel */
  int act;          /* the effective activation (ir_act) */
  int64_t n, count; /* columns of the result, its element count */
};

typedef struct cx_step {
  int fuse_relu;  /* the node's only reader is a relu, folded in here */
  int view;       /* the node (reshape, folded relu) only names its input */
  float *scratch; /* node-private scratch in the arena, or NULL */
  size_t scratch_bytes;
  cx_conv *conv;
  cx_mm *mm;
} cx_step;

struct cx_plan {
  cx_ctx *ctx;
  const ir_graph *g;
  float **ptr;   /* device pointer of every tensor */
  int32_t *root; /* the tensor whose bytes a tensor uses (views) */
  int32_t *last; /* last node reading a tensor's bytes (poison), -1 never */
  char *arena;   /* activations */
  char *persist; /* inputs and weights */
  void *ws;      /* cuDNN / cuBLASLt workspace */
  size_t arena_bytes, persist_bytes, ws_bytes, unplanned_bytes;
  cx_step *steps;
  unsigned char *wonly; /* node computes from weights and constants only:
                           run once by cx_plan_upload, not in each replay */
  cudaGraphExec_t exec;
  int captured;
};

/* Sets d from a failed CUDA runtime call; returns IR_ERR_NOMEM for out of
 * memory, else IR_ERR_INTERNAL. */
ir_status cx_cuda_fail(ir_diag *d, cudaError_t e, const char *what);
ir_status cx_dnn_fail(ir_diag *d, cudnnStatus_t e, const char *what);
ir_status cx_blas_fail(ir_diag *d, cublasStatus_t e, const char *what);

#define CX_CUDA(d, call)                                                       \
  do {                                                                         \
    cudaError_t cx_e_ = (call);                                                \
    if (cx_e_ != cudaSuccess)                                                  \
      return cx_cuda_fail(d, cx_e_, #call);                                    \
  } while (0)
#define CX_DNN(d, call)                                                        \
  do {                                                                         \
    cudnnStatus_t cx_e_ = (call);                                              \
    if (cx_e_ != CUDNN_STATUS_SUCCESS)                                         \
      return cx_dnn_fail(d, cx_e_, #call);                                     \
  } while (0)
#define CX_BLAS(d, call)                                                       \
  do {                                                                         \
    cublasStatus_t cx_e_ = (call);                                             \
    if (cx_e_ != CUBLAS_STATUS_SUCCESS)                                        \
      return cx_blas_fail(d, cx_e_, #call);                                    \
  } while (0)

/* The activation node n of step s applies after its bias: its own act, or
 * relu when a following relu was folded into it. */
int cx_effective_act(const ir_node *n, const cx_step *s);

/* Looks up or runs cudnnFind for a convolution; fills algo/math/ws. */
ir_status cx_conv_choose(cx_ctx *c, const cx_conv_key *k,
                         cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                         cudnnConvolutionDescriptor_t conv,
                         cudnnTensorDescriptor_t y, cx_conv_choice *out,
                         ir_diag *d);

/* Autotunes the graph API's engines for k (never fails: out->plan NULL). */
void cx_dnn_autotune(cx_ctx *c, const cx_conv_key *k, cx_dnn_choice *out);
/* Runs plan on x, w -> y (the variant pack *vp is made on first use). */
ir_status cx_dnn_execute(cx_ctx *c, cudnnBackendDescriptor_t plan,
                         cudnnBackendDescriptor_t *vp, const float *x,
                         const float *w, float *y, void *ws, ir_diag *d);

#define CX_MM_WS ((size_t)32 << 20) /* matmul workspace limit */

/* Looks up or times cuBLASLt's candidates for m (descriptors set up). */
ir_status cx_mm_choose(cx_ctx *c, const cx_mm_key *k, cx_mm *m, ir_diag *d);

/* cx_ops.c: prepares node i of p (descriptors, algorithms, scratch size);
 * called before memory is planned. */
ir_status cx_step_prepare(cx_plan *p, int i, ir_diag *d);
void cx_step_release(cx_step *s);
/* Enqueues node i on the context's stream. */
ir_status cx_step_enqueue(cx_plan *p, int i, ir_diag *d);

#endif
