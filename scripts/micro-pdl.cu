/* micro-pdl.cu: what programmatic dependent launch (PDL) would save between
 * the executor's own kernels in a CUDA graph. A chain of 50 dependent
 * element-wise kernels (y = x * a + b, ping-ponging two buffers), captured
 * into one CUDA graph and replayed; per kernel: plain launches, and
 * launches with cudaLaunchAttributeProgrammaticStreamSerialization where
 * each kernel first triggers its dependant's launch and then waits for its
 * own predecessor (cudaGridDependencySynchronize) before reading. Sizes
 * from 4K floats (launch bound, as at batch 1) to 4M (bandwidth bound). The
 * result is checked against the host. A benchmark, not a test: on the GPU
 * machine,
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/pdl scripts/micro-pdl.cu && \
 *     /tmp/pdl
 *
 * Output: one line per size, "BAD" where a result differs (exit 1). */
#include <cmath>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "micro-time.cuh"

enum { CHAIN = 50 };

__global__ void step(const float *x, float *y, int n, float a, float b,
                     int pdl) {
  if (pdl) {
    cudaTriggerProgrammaticLaunchCompletion(); /* let the next one launch */
    cudaGridDependencySynchronize();           /* wait for x to be written */
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x)
    y[i] = x[i] * a + b;
}

static void chain(cudaStream_t st, float *p, float *q, int n, int pdl) {
  int threads = 256, blocks = (n + threads - 1) / threads;
  blocks = blocks > 132 * 8 ? 132 * 8 : blocks;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  for (int k = 0; k < CHAIN; k++) {
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3(blocks);
    c.blockDim = dim3(threads);
    c.stream = st;
    c.attrs = pdl ? at : nullptr;
    c.numAttrs = pdl ? 1 : 0;
    const float *x = k % 2 ? q : p;
    float *y = k % 2 ? p : q;
    CK(cudaLaunchKernelEx(&c, step, x, y, n, 0.5f, 1.0f, pdl));
  }
}

int main() {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  int bad = 0;
  for (int n : {4096, 65536, 262144, 1048576, 4194304}) {
    float *p, *q;
    CK(cudaMalloc(&p, sizeof(float) * n));
    CK(cudaMalloc(&q, sizeof(float) * n));
    float us[2];
    double err[2];
    for (int pdl = 0; pdl < 2; pdl++) {
      std::vector<float> h(n, 3.0f);
      CK(cudaMemcpy(p, h.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
      chain(st, p, q, n, pdl); /* once, checked: CHAIN steps from 3 */
      CK(cudaStreamSynchronize(st));
      float *last = CHAIN % 2 ? q : p;
      CK(cudaMemcpy(h.data(), last, sizeof(float) * n, cudaMemcpyDeviceToHost));
      double want = 3.0;
      for (int k = 0; k < CHAIN; k++)
        want = want * 0.5 + 1.0;
      err[pdl] = 0;
      for (int i = 0; i < n; i++)
        err[pdl] = std::fmax(err[pdl], std::fabs(h[i] - want));
      /* time_us times 10 calls of chain per replay: per kernel below */
      us[pdl] = time_us(st, [&] { chain(st, p, q, n, pdl); }) / CHAIN;
    }
    int ok = err[0] < 1e-5 && err[1] < 1e-5;
    bad |= !ok;
    printf("%8d floats: %.2f us a kernel plain, %.2f with PDL (%.0f%%)%s\n", n,
           us[0], us[1], 100.0 * (us[1] - us[0]) / us[0], ok ? "" : "  BAD");
    CK(cudaFree(p));
    CK(cudaFree(q));
  }
  return bad;
}
