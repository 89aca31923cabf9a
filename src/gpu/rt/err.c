/* err.c: the CUDA executor's runtime errors and captures: a failed CUDA,
 * cuDNN or cuBLAS call as a diagnostic (gpu_*_fail, the GPU_CUDA, GPU_DNN
 * and GPU_BLAS macros of gpu_int.h), and the end of every stream capture
 * (gpu_end_capture), which makes programmatic edges plain dependencies.
 */
#include <stdlib.h>
#include <string.h>

#include "../gpu_int.h"

base_status gpu_cuda_fail(base_diag *d, cudaError_t e, const char *what) {
  base_status st =
      e == cudaErrorMemoryAllocation ? BASE_ERR_NOMEM : BASE_ERR_INTERNAL;
  cudaGetLastError(); /* clear a sticky launch error where possible */
  return base_diag_set(d, st, 0, 0, "CUDA error %s (%s) in %s",
                       cudaGetErrorName(e), cudaGetErrorString(e), what);
}

/* Edges from a kernel's programmatic launch port (CUDA's programmatic
 * dependent launch, which cuDNN's runtime-compiled engines use) let the
 * next kernel start before this one ends. cuDNN 9.14's fusion engines that
 * add a residual read it before they wait for the kernel in front (Wide
 * ResNet-50 at batch 16 on an H200: relative error 0.02, docs/cuda.md), so
 * every such edge becomes a plain dependency: each kernel waits for the
 * whole of the one before (dropped where a plain edge joins the same two
 * nodes already). The executor's graphs have no memory alloc/free nodes,
 * in whose graphs edges could not be removed. CUDA 13's cudaGraphGetEdges
 * (with edge data). $SUPEROPT_PDL_KEEP=1 keeps the edges: for tests and to
 * see whether a later cuDNN still needs this. */
#if CUDART_VERSION < 13000
#error "the executor needs CUDA 13's graph edge API (cudaGraphGetEdges)"
#endif
static int is_plain(const cudaGraphEdgeData *e) {
  return e->type == cudaGraphDependencyTypeDefault && e->from_port == 0 &&
         e->to_port == 0;
}

/* Does edge i's pair of nodes have a plain edge besides i: one that was
 * plain, or one before i that full_edges has made plain? */
static int has_plain_edge(const cudaGraphNode_t *from,
                          const cudaGraphNode_t *to,
                          const cudaGraphEdgeData *ed, size_t n, size_t i) {
  for (size_t j = 0; j < n; j++)
    if (j != i && from[j] == from[i] && to[j] == to[i] &&
        (j < i || is_plain(&ed[j])))
      return 1;
  return 0;
}

static cudaError_t full_edges(cudaGraph_t g) {
  const char *keep = getenv("SUPEROPT_PDL_KEEP");
  if (keep && !strcmp(keep, "1"))
    return cudaSuccess;
  size_t n = 0;
  cudaError_t e = cudaGraphGetEdges(g, NULL, NULL, NULL, &n);
  if (e != cudaSuccess || n == 0)
    return e;
  cudaGraphNode_t *from = base_malloc(n * sizeof *from);
  cudaGraphNode_t *to = base_malloc(n * sizeof *to);
  cudaGraphEdgeData *ed = base_calloc(n, sizeof *ed);
  if (!from || !to || !ed)
    e = cudaErrorMemoryAllocation;
  if (e == cudaSuccess)
    e = cudaGraphGetEdges(g, from, to, ed, &n);
  for (size_t i = 0; e == cudaSuccess && i < n; i++) {
    if (is_plain(&ed[i]))
      continue;
    e = cudaGraphRemoveDependencies(g, &from[i], &to[i], &ed[i], 1);
    if (e == cudaSuccess && !has_plain_edge(from, to, ed, n, i))
      e = cudaGraphAddDependencies(g, &from[i], &to[i], NULL, 1);
  }
  free(from), free(to), free(ed);
  return e;
}

cudaError_t gpu_end_capture(cudaStream_t s, cudaGraph_t *g) {
  *g = NULL;
  cudaError_t e = cudaStreamEndCapture(s, g);
  if (e == cudaSuccess && !*g)
    e = cudaErrorStreamCaptureInvalidated;
  if (e == cudaSuccess)
    e = full_edges(*g);
  return e;
}

base_status gpu_dnn_fail(base_diag *d, cudnnStatus_t e, const char *what) {
  base_status st =
      e == CUDNN_STATUS_ALLOC_FAILED ? BASE_ERR_NOMEM : BASE_ERR_INTERNAL;
  return base_diag_set(d, st, 0, 0, "cuDNN error %s in %s",
                       cudnnGetErrorString(e), what);
}

base_status gpu_blas_fail(base_diag *d, cublasStatus_t e, const char *what) {
  base_status st =
      e == CUBLAS_STATUS_ALLOC_FAILED ? BASE_ERR_NOMEM : BASE_ERR_INTERNAL;
  return base_diag_set(d, st, 0, 0, "cuBLAS error %d in %s", (int)e, what);
}
