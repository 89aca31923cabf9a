/* device.c: the device models behind the roofline estimate (figures and
 * their sources: docs/costdb.md), and the device estimates are for when
 * none is asked for (the GPU present, read from the NVIDIA driver's /proc
 * files without loading CUDA; else the CPU). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"

static const cd_device devices[] = {
    /* H100 SXM5: 132 SMs x 128 FP32 lanes x 2 (FMA) x 1.98 GHz = 66.9
     * TFLOP/s; TF32 dense 494.7 TFLOP/s; HBM3 3.35 TB/s. */
    {"h100", "NVIDIA H100 SXM5 80GB", 66.9e12, 494.7e12, 3.35e12, 0.004, 0},
    /* H200 SXM: the same GH100 die and clocks, HBM3e at 4.8 TB/s. */
    {"h200", "NVIDIA H200 SXM 141GB", 66.9e12, 494.7e12, 4.8e12, 0.004, 0},
    /* The same GPUs with TF32 tensor cores for conv2d and matmul. */
    {"h100-tf32", "NVIDIA H100 SXM5 80GB, TF32 conv/matmul", 66.9e12, 494.7e12,
     3.35e12, 0.004, 1},
    {"h200-tf32", "NVIDIA H200 SXM 141GB, TF32 conv/matmul", 66.9e12, 494.7e12,
     4.8e12, 0.004, 1},
    /* The same GPUs running graphs converted to bf16 or f16 (optimize
     * --dtype): keys of the rows `costdb measure --dtype` takes, the
     * tables costdb/<device>.tsv the search prefers for that type. */
    {"h100-bf16", "NVIDIA H100 SXM5 80GB, bf16 graphs", 66.9e12, 494.7e12,
     3.35e12, 0.004, 0},
    {"h100-f16", "NVIDIA H100 SXM5 80GB, f16 graphs", 66.9e12, 494.7e12,
     3.35e12, 0.004, 0},
    {"h200-bf16", "NVIDIA H200 SXM 141GB, bf16 graphs", 66.9e12, 494.7e12,
     4.8e12, 0.004, 0},
    {"h200-f16", "NVIDIA H200 SXM 141GB, f16 graphs", 66.9e12, 494.7e12, 4.8e12,
     0.004, 0},
    /* A small x86-64 host: 2 cores x 2 FMA units x 8 lanes x 2 x 3 GHz
     * = 192 GFLOP/s AVX2 peak; ~20 GB/s DRAM; ~5 us OpenMP fork/join. */
    {"cpu", "2-core x86-64 AVX2 host (superopt's CPU executor)", 192e9, 0, 20e9,
     0.005, 0},
};

#define NDEVICES (int)(sizeof devices / sizeof *devices)

int cd_ndevices(void) { return NDEVICES; }

const cd_device *cd_device_at(int i) {
  return i >= 0 && i < NDEVICES ? &devices[i] : NULL;
}

const cd_device *cd_device_find(const char *name, base_diag *d) {
  for (int i = 0; i < NDEVICES; i++)
    if (!strcmp(devices[i].name, name))
      return &devices[i];
  char known[256] = "";
  size_t k = 0;
  for (int i = 0; i < NDEVICES && k < sizeof known; i++)
    k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "",
                          devices[i].name);
  base_diag_set(d, BASE_ERR_PARAM, 0, 0, "unknown device '%.64s' (known: %s)",
                name, known);
  return NULL;
}

void cd_gpu_key(const char *gpu, char *out, size_t n) {
  out[0] = 0;
  for (const char *p = gpu; *p;) {
    p += strspn(p, " \t");
    size_t len = strcspn(p, " \t\n");
    int digit = 0;
    for (size_t i = 0; i < len; i++)
      digit |= isdigit((unsigned char)p[i]) != 0;
    if (digit && len < n) {
      for (size_t i = 0; i < len; i++)
        out[i] = (char)tolower((unsigned char)p[i]);
      out[len] = 0;
      return;
    }
    p += len;
  }
}

const cd_device *cd_device_for_gpu(const char *gpu) {
  char key[32];
  cd_gpu_key(gpu, key, sizeof key);
  for (int i = 0; key[0] && i < NDEVICES; i++)
    if (!strcmp(devices[i].name, key))
      return &devices[i];
  return NULL;
}

/* The "Model:" of the NVIDIA driver's information file path into model
 * (n bytes); 0 when the file has none. */
static int read_model(const char *path, char *model, size_t n) {
  FILE *f = fopen(path, "r");
  char line[256];
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f)) {
    if (strncmp(line, "Model:", 6))
      continue;
    const char *p = line + 6 + strspn(line + 6, " \t");
    snprintf(model, n, "%.*s", (int)strcspn(p, "\r\n"), p);
    found = model[0] != 0;
  }
  if (f)
    fclose(f);
  return found;
}

/* The first GPU (by bus id) the NVIDIA driver lists under proc_root, into
 * model ("an NVIDIA GPU" when its model cannot be read); 0: none. */
static int first_gpu(const char *proc_root, char *model, size_t n) {
  char dir[1024], first[256] = "", path[1400];
  snprintf(dir, sizeof dir, "%s/driver/nvidia/gpus", proc_root);
  DIR *dp = opendir(dir);
  if (!dp)
    return 0;
  for (struct dirent *e; (e = readdir(dp));)
    if (e->d_name[0] != '.' && (!first[0] || strcmp(e->d_name, first) < 0))
      snprintf(first, sizeof first, "%s", e->d_name);
  closedir(dp);
  if (!first[0])
    return 0;
  snprintf(path, sizeof path, "%s/%s/information", dir, first);
  if (!read_model(path, model, n))
    snprintf(model, n, "an NVIDIA GPU");
  return 1;
}

const cd_device *cd_device_default(const char *proc_root, char *why, size_t n) {
  char model[128];
  if (!first_gpu(proc_root ? proc_root : "/proc", model, sizeof model)) {
    snprintf(why, n, "no GPU on this machine");
    return cd_device_find("cpu", NULL);
  }
  const cd_device *dev = cd_device_for_gpu(model);
  if (dev) {
    snprintf(why, n, "the GPU present, %s", model);
    return dev;
  }
  snprintf(why, n, "the GPU present, %s, has no cost model: the H100's", model);
  return &devices[0];
}
