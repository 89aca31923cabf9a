/* micro-dwconv.cu: times each thread shape of the executor's depthwise
 * kernel (src/gpu/kconv.cu, compiled in) at ConvNeXt-T's 7x7 layers and at
 * MobileNet-V2-like 3x3 layers (stride 1 and 2), batch 1 and 16, the way
 * the autotuning does (10 launches captured in a CUDA graph, median of 21
 * replays, per launch), and checks every result against a plain reference
 * kernel. A benchmark, not a test: run it on the GPU machine,
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Isrc/gpu/kern -o /tmp/dw \
 *     scripts/micro-dwconv.cu && /tmp/dw
 *
 * Output: one line per layer and shape, "BAD" where a result differs (exit
 * status 1 then). docs/notes/benchmarks.md ("Ninth session") has the figures of
 * its first version, which also timed the prototypes. */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "micro-time.cuh"

#include "../src/gpu/kern/kconv.cu"

/* y[n, oy, ox, c] = bias[c] + sum x[n, oy*s - p + ky, ox*s - p + kx, c] *
 * w[ky*k + kx, c], channels-last, one thread an output. */
__global__ void k_ref(const float *x, const float *w, const float *bias,
                      float *y, int n, int h, int wd, int c, int k, int s,
                      int p, int oh, int ow) {
  size_t total = (size_t)n * oh * ow * c;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    int ch = (int)(i % c);
    size_t r = i / c;
    int ox = (int)(r % ow);
    r /= ow;
    int oy = (int)(r % oh), img = (int)(r / oh);
    float a = 0;
    for (int ky = 0; ky < k; ky++)
      for (int kx = 0; kx < k; kx++) {
        int iy = oy * s - p + ky, ix = ox * s - p + kx;
        if (iy >= 0 && iy < h && ix >= 0 && ix < wd)
          a += x[(((size_t)img * h + iy) * wd + ix) * c + ch] *
               w[(ky * k + kx) * c + ch];
      }
    y[i] = a + bias[ch];
  }
}

static cudaStream_t st;
static float *X, *W, *B, *Y, *R;

/* Largest |y - ref| over n outputs, or -1 where the reference is all
 * zero (a run on zeros proves nothing). */
static double max_err(size_t n) {
  std::vector<float> a(n), b(n);
  CK(cudaMemcpy(a.data(), Y, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), R, n * 4, cudaMemcpyDeviceToHost));
  double m = 0, mag = 0;
  for (size_t i = 0; i < n; i++) {
    m = std::max(m, (double)fabsf(a[i] - b[i]));
    mag += fabsf(b[i]);
  }
  return mag > 0 ? m : -1;
}

int main() {
  struct {
    int n, h, c, k, s;
  } layers[] = {{1, 56, 96, 7, 1},   {1, 28, 192, 7, 1}, {1, 14, 384, 7, 1},
                {1, 7, 768, 7, 1},   {16, 56, 96, 7, 1}, {16, 28, 192, 7, 1},
                {16, 14, 384, 7, 1}, {16, 7, 768, 7, 1}, {1, 56, 144, 3, 1},
                {1, 56, 144, 3, 2},  {1, 14, 576, 3, 1}, {16, 56, 144, 3, 1},
                {16, 56, 144, 3, 2}, {16, 14, 576, 3, 1}};
  size_t most = 0;
  for (auto &l : layers)
    most = std::max(most, (size_t)l.n * l.h * l.h * l.c);
  CK(cudaStreamCreate(&st));
  CK(cudaMalloc(&X, most * 4));
  CK(cudaMalloc(&Y, most * 4));
  CK(cudaMalloc(&R, most * 4));
  CK(cudaMalloc(&W, 49 * 1024 * 4));
  CK(cudaMalloc(&B, 1024 * 4));
  std::vector<float> hx(most), hw(49 * 1024), hb(1024);
  srand(1);
  for (auto *v : {&hx, &hw, &hb})
    for (float &f : *v)
      f = rand() / (float)RAND_MAX - 0.5f;
  CK(cudaMemcpy(X, hx.data(), most * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(W, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
  int bad = 0;
  for (auto &l : layers) {
    int p = l.k / 2, o = (l.h + 2 * p - l.k) / l.s + 1;
    size_t n = (size_t)l.n * o * o * l.c;
    k_ref<<<1024, 256, 0, st>>>(X, W, B, R, l.n, l.h, l.h, l.c, l.k, l.s, p, o,
                                o);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
    printf("batch %d, %dx%dx%d, kernel %dx%d, stride %d:", l.n, l.h, l.h, l.c,
           l.k, l.k, l.s);
    float best = 1e30f;
    int bv = -1;
    for (int v = 0; v < cxk_dwconv_variants(); v++) {
      cxk_dw a = {l.n, l.c, l.h, l.h, o,      o, l.k, l.k,
                  p,   p,   l.s, v,   CXK_ID, 0, 0};
      if (!cxk_dwconv_ok(&a))
        continue;
      CK(cudaMemset(Y, 0, n * 4));
      float t = time_us(st, [&] { CK(cxk_dwconv(st, X, W, B, Y, &a)); });
      double e = max_err(n);
      printf(" %d: %.2f%s", v, t, e < 0 || e > 1e-3 ? " BAD" : "");
      bad |= e < 0 || e > 1e-3;
      if (t < best)
        best = t, bv = v;
    }
    printf("; fastest %d, %.2f us\n", bv, best);
  }
  return bad;
}
