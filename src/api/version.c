/* version.c: the version, the build (git commit, build type) and the
 * backends this build has (api_version, api_build_info,
 * api_cuda_available). The commit comes from api_version.h, which CMake
 * writes at configure time (cmake/api_version.h.in). */
#include <stdio.h>
#include <string.h>

#include "api_int.h"
#include "api_version.h"
#ifdef SUPEROPT_HAVE_CUDA
#include "../gpu/gpu.h"
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#endif

const char *api_version(void) { return SUPEROPT_VERSION_STRING; }

#ifdef SUPEROPT_HAVE_CUDA
/* "CUDA runtime 12.4, driver 12.4, cuDNN 9.1.0, cuBLASLt 12.4.5, N GPUs". */
static void cuda_line(char *buf, size_t n) {
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  if (cudaDriverGetVersion(&drv) != cudaSuccess)
    drv = 0;
  size_t dnn = cudnnGetVersion(), lt = cublasLtGetVersion();
  int ngpu = gpu_device_count();
  snprintf(buf, n,
           "CUDA: runtime %d.%d, driver %d.%d, cuDNN %zu.%zu.%zu, cuBLASLt "
           "%zu.%zu.%zu; %d GPU%s usable",
           rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10, dnn / 10000,
           dnn % 10000 / 100, dnn % 100, lt / 10000, lt % 10000 / 100, lt % 100,
           ngpu, ngpu == 1 ? "" : "s");
}
#endif

const char *api_build_info(void) {
  static char info[1024];
  char cuda[512];
#ifdef SUPEROPT_HAVE_CUDA
  cuda_line(cuda, sizeof cuda);
#else
  snprintf(cuda, sizeof cuda, "CUDA: not built (CPU-only build)");
#endif
  snprintf(info, sizeof info,
           "superopt %s\ncommit: %s\nbuild: %s\nbackends: CPU (reference "
           "executor, OpenMP)\n%s\n",
           SUPEROPT_VERSION_STRING, SUPEROPT_GIT_COMMIT, SUPEROPT_BUILD_TYPE,
           cuda);
  return info;
}

int api_cuda_available(void) {
#ifdef SUPEROPT_HAVE_CUDA
  return gpu_device_count() > 0;
#else
  return 0;
#endif
}
