/* device.c: the device models behind the roofline estimate (figures and
 * their sources: docs/costdb.md). */
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
