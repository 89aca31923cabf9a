/* ctx.c: the CUDA executor's context (gpu.h's gpu_ctx_*): device, stream,
 * cuDNN and cuBLASLt handles, opened and released with the caches that
 * the lower layers keep in it (the convolution and matmul choices of
 * tune/, the tuning cache saved on release, run/fused.c's kernels).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

int gpu_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

static base_status ctx_open(gpu_ctx *c, base_diag *d) {
  GPU_CUDA(d, cudaSetDevice(c->device));
  GPU_CUDA(d, cudaGetDeviceProperties(&c->prop, c->device));
  GPU_CUDA(d, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  GPU_DNN(d, cudnnCreate(&c->dnn));
  GPU_DNN(d, cudnnSetStream(c->dnn, c->stream));
  GPU_BLAS(d, cublasLtCreate(&c->lt));
  c->tune_log = getenv("SUPEROPT_TUNE_LOG") != NULL;
  GPU_BLAS(d, cublasCreate(&c->blas));
  GPU_BLAS(d, cublasSetStream(c->blas, c->stream));
  GPU_CUDA(d, cudaMalloc(&c->blas_ws, GPU_BLAS_WS));
  GPU_BLAS(d, cublasSetWorkspace(c->blas, c->blas_ws, GPU_BLAS_WS));
  return BASE_OK;
}

base_status gpu_ctx_new(const gpu_options *o, gpu_ctx **out, base_diag *d) {
  *out = NULL;
  if (gpu_device_count() < 1)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "no CUDA device (cudaGetDeviceCount found none)");
  gpu_ctx *c = base_calloc(1, sizeof *c);
  if (!c)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (o)
    c->opt = *o;
  base_status st = ctx_open(c, d);
  if (st) {
    gpu_ctx_free(c);
    return st;
  }
  *out = c;
  return BASE_OK;
}

void gpu_ctx_free(gpu_ctx *c) {
  if (!c)
    return;
  if (c->lt)
    cublasLtDestroy(c->lt);
  if (c->blas)
    cublasDestroy(c->blas);
  cudaFree(c->blas_ws);
  if (c->dnn)
    cudnnDestroy(c->dnn);
  if (c->stream)
    cudaStreamDestroy(c->stream);
  for (int q = 0; q < GPU_STREAMS_MAX - 1; q++)
    if (c->side[q])
      cudaStreamDestroy(c->side[q]);
  for (int i = 0; i < c->nconvs; i++)
    if (c->convs[i].plan)
      cudnnBackendDestroyDescriptor(c->convs[i].plan);
  gpu_tune_save(c);
  free(c->convs);
  free(c->mms);
  free(c->wgs);
  gpu_fused_ctx_free(c);
  free(c);
}

void gpu_ctx_describe(const gpu_ctx *c, char *buf, size_t n) {
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  int graph_api = 0;
  for (int i = 0; i < c->nconvs; i++)
    graph_api += c->convs[i].plan != NULL;
  snprintf(buf, n,
           "%s (sm_%d%d), CUDA runtime %d.%d, driver %d.%d, cuDNN %zu, "
           "cuBLASLt %zu, %s, %d conv geometries (%d via cuDNN graph API)",
           c->prop.name, c->prop.major, c->prop.minor, rt / 1000,
           rt % 1000 / 10, drv / 1000, drv % 1000 / 10, cudnnGetVersion(),
           cublasLtGetVersion(), c->opt.fp32_strict ? "fp32 strict" : "tf32",
           c->nconvs, graph_api);
}
