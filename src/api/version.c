/* version.c: the version, the build (git commit, build type) and the
 * backends this build has (api_version, api_build_info,
 * api_build_info_brief, api_cuda_available). The version comes from
 * api_version.h (configure time, cmake/api_version.h.in), the commit from
 * api_commit.h (every build, cmake/git_commit.cmake). The CUDA libraries
 * are asked through the executor, which api_build_info loads
 * (src/gpu/lazy.c) and api_build_info_brief does not. */
#include <limits.h>
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
/* "CUDA: runtime 13.0, driver 13.0, cuDNN ..., cuBLASLt ... (path of
 * libsuperopt_gpu.so); 1 GPU usable" (loads the executor, src/gpu/lazy.c),
 * or without loading it, "CUDA: built (executor not loaded)". */
static void cuda_line(int load, char *buf, size_t n) {
  char libs[PATH_MAX + 400];
  if (!load) {
    snprintf(buf, n, "CUDA: built (executor not loaded)");
    return;
  }
  gpu_lib_versions(libs, sizeof libs);
  int ngpu = gpu_device_count();
  snprintf(buf, n, "CUDA: %s; %d GPU%s usable", libs, ngpu,
           ngpu == 1 ? "" : "s");
}
#endif

static const char *build_info(int load_gpu) {
  static char info[PATH_MAX + 1024];
  char cuda[PATH_MAX + 512];
#ifdef SUPEROPT_HAVE_CUDA
  cuda_line(load_gpu, cuda, sizeof cuda);
#else
  (void)load_gpu;
  snprintf(cuda, sizeof cuda, "CUDA: not built (CPU-only build)");
#endif
  snprintf(info, sizeof info,
           "superopt %s\ncommit: %s\nbuild: %s\nbackends: CPU (reference "
           "executor, OpenMP)\n%s\n",
           SUPEROPT_VERSION_STRING, SUPEROPT_GIT_COMMIT, SUPEROPT_BUILD_TYPE,
           cuda);
  return info;
}

const char *api_build_info(void) { return build_info(1); }

const char *api_build_info_brief(void) { return build_info(0); }

int api_cuda_available(void) {
#ifdef SUPEROPT_HAVE_CUDA
  return gpu_device_count() > 0;
#else
  return 0;
#endif
}
