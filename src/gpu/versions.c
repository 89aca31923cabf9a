/* versions.c: the CUDA libraries this executor runs with, for
 * `superopt --version` (gpu_lib_versions), and the loader's hand-over of
 * the host's fused-body registry and allocator (gpu_attach_host). */
#include <stdio.h>

#include "gpu_int.h"

void gpu_attach_host(const ir_body *(*body_get)(uint64_t id),
                     const base_allocator *alloc) {
  base_alloc_use_host(alloc);
  ir_body_use_host(body_get);
}

void gpu_lib_versions(char *buf, size_t n) {
  int rt = 0, drv = 0;
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess)
    rt = 0;
  if (cudaDriverGetVersion(&drv) != cudaSuccess)
    drv = 0;
  size_t dnn = cudnnGetVersion(), lt = cublasLtGetVersion();
  char dv[32] = "none";
  if (drv)
    snprintf(dv, sizeof dv, "%d.%d", drv / 1000, drv % 1000 / 10);
  snprintf(buf, n,
           "runtime %d.%d, driver %s, cuDNN %zu.%zu.%zu, cuBLASLt "
           "%zu.%zu.%zu",
           rt / 1000, rt % 1000 / 10, dv, dnn / 10000, dnn % 10000 / 100,
           dnn % 100, lt / 10000, lt % 10000 / 100, lt % 100);
}
