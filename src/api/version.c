/* version.c: the version, the build (git commit, build type) and the
 * backends this build has (api_version, api_build_info,
 * api_cuda_available). The version comes from api_version.h (configure
 * time, cmake/api_version.h.in), the commit from api_commit.h (every build,
 * cmake/git_commit.cmake). The CUDA libraries
 * are asked through the executor, which this loads (src/gpu/lazy.c). */
#include <stdio.h>
#include <string.h>

#include "api_commit.h"
#include "api_int.h"
#include "api_version.h"
#ifdef SUPEROPT_HAVE_CUDA
#include "../gpu/gpu.h"
#endif

const char *api_version(void) { return SUPEROPT_VERSION_STRING; }

#ifdef SUPEROPT_HAVE_CUDA
/* "CUDA: runtime 13.0, driver 13.0, cuDNN ..., cuBLASLt ...; 1 GPU usable"
 * (loads the executor, src/gpu/lazy.c). */
static void cuda_line(char *buf, size_t n) {
  char libs[400];
  gpu_lib_versions(libs, sizeof libs);
  int ngpu = gpu_device_count();
  snprintf(buf, n, "CUDA: %s; %d GPU%s usable", libs, ngpu,
           ngpu == 1 ? "" : "s");
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
