/* cache.c: the folder of the executor's disk caches (gpu_cache_dir):
 * generated kernels (<key>.cubin, run/fused.c) and cuDNN's
 * runtime-compiled plans (<key>.plan.json, tune/dnn.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../gpu_int.h"

base_status gpu_cache_dir(char *buf, size_t n, int *off) {
  const char *env = getenv("SUPEROPT_KERNEL_CACHE"),
             *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  *off = 0;
  int k;
  if (env && !strcmp(env, "off")) {
    *off = 1;
    return BASE_OK;
  }
  if (env && *env)
    k = snprintf(buf, n, "%s", env);
  else if (xdg && *xdg)
    k = snprintf(buf, n, "%s/superopt/kernels", xdg);
  else if (home && *home)
    k = snprintf(buf, n, "%s/.cache/superopt/kernels", home);
  else {
    *off = 1;
    return BASE_OK;
  }
  if (k < 0 || (size_t)k >= n)
    *off = 1;
  return BASE_OK;
}

void gpu_mkdirs(char *path) {
  for (char *p = path + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  mkdir(path, 0755);
}
