/* micro-layernorm.cu: times the executor's layer norm (cxk_layernorm,
 * src/gpu/kern/kred.cu, compiled in) at BERT-base's and ConvNeXt-T's row
 * shapes, batch 1 and 16, the way the autotuning times kernels (10
 * launches captured in a CUDA graph, median of 21 replays, per launch):
 * the launcher's choice, the scalar one-warp-a-row kernel it used before
 * (k_layernorm_warp) and each float4 shape (k_layernorm4: LANES lanes a
 * row, NV float4s a lane), every result checked against a
 * double-precision reference on the host. A benchmark, not a test: run it on
 * the GPU machine,
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Isrc/gpu/kern -o /tmp/ln \
 *     scripts/micro-layernorm.cu && /tmp/ln
 *
 * Output: one line per shape, "BAD" where a result differs (exit status 1
 * then). */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "micro-time.cuh"

#include "../src/gpu/kern/kred.cu"

static cudaStream_t strm;
static float *X, *XB, *G, *BT, *Y;

/* Largest |y - ref| relative to the reference's largest magnitude. */
static double check(const std::vector<float> &hx, const std::vector<float> &hb,
                    const std::vector<float> &hg, const std::vector<float> &ht,
                    int rows, int len, bool bias) {
  std::vector<float> y((size_t)rows * len);
  CK(cudaMemcpy(y.data(), Y, y.size() * 4, cudaMemcpyDeviceToHost));
  double worst = 0, mag = 0;
  for (int r = 0; r < rows; r++) {
    double s = 0, q = 0;
    for (int i = 0; i < len; i++)
      s += hx[(size_t)r * len + i] + (bias ? hb[i] : 0);
    double m = s / len;
    for (int i = 0; i < len; i++) {
      double d = hx[(size_t)r * len + i] + (bias ? hb[i] : 0) - m;
      q += d * d;
    }
    double inv = 1 / sqrt(q / len + 1e-6);
    for (int i = 0; i < len; i++) {
      double ref =
          (hx[(size_t)r * len + i] + (bias ? hb[i] : 0) - m) * inv * hg[i] +
          ht[i];
      worst = std::max(worst, fabs(ref - y[(size_t)r * len + i]));
      mag = std::max(mag, fabs(ref));
    }
  }
  return mag > 0 ? worst / mag : 1;
}

template <int LANES, int NV>
static void variant(int rows, int len, bool bias, const char *name,
                    const std::vector<float> &hx, const std::vector<float> &hb,
                    const std::vector<float> &hg, const std::vector<float> &ht,
                    int *bad) {
  if (len % 4 || len > 4 * LANES * NV || len <= 4 * LANES * (NV - 1))
    return;
  int threads = 256;
  unsigned blocks = (unsigned)(((size_t)rows * LANES + threads - 1) / threads);
  auto go = [&] {
    k_layernorm4<LANES, NV><<<blocks, threads, 0, strm>>>(
        (const float4 *)X, bias ? (const float4 *)XB : nullptr,
        (const float4 *)G, (const float4 *)BT, (float4 *)Y, rows, len / 4,
        1e-6f, false);
    CK(cudaGetLastError());
  };
  CK(cudaMemset(Y, 0, (size_t)rows * len * 4));
  float t = time_us(strm, go);
  double e = check(hx, hb, hg, ht, rows, len, bias);
  printf("  %s: %.2f%s", name, t, e > 1e-5 ? " BAD" : "");
  *bad |= e > 1e-5;
}

int main() {
  struct {
    int rows, len;
    bool bias;
  } shapes[] = {{128, 768, false},     {2048, 768, false},
                {3136, 96, true},      {784, 192, true},
                {196, 384, true},      {49, 768, true},
                {16 * 3136, 96, true}, {16 * 784, 192, true},
                {16 * 196, 384, true}, {16 * 49, 768, true}};
  size_t most = 16 * 3136 * 96;
  CK(cudaStreamCreate(&strm));
  CK(cudaMalloc(&X, most * 4));
  CK(cudaMalloc(&Y, most * 4));
  for (float **p : {&XB, &G, &BT})
    CK(cudaMalloc(p, 1024 * 4));
  std::vector<float> hx(most), hb(1024), hg(1024), ht(1024);
  srand(1);
  for (auto *v : {&hx, &hb, &hg, &ht})
    for (float &f : *v)
      f = rand() / (float)RAND_MAX - 0.5f;
  CK(cudaMemcpy(X, hx.data(), most * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(XB, hb.data(), 4096, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(G, hg.data(), 4096, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(BT, ht.data(), 4096, cudaMemcpyHostToDevice));
  int bad = 0;
  for (auto &s : shapes) {
    printf("rows %d, len %d%s:", s.rows, s.len, s.bias ? ", bias" : "");
    CK(cudaMemset(Y, 0, (size_t)s.rows * s.len * 4));
    float t = time_us(strm, [&] {
      CK(cxk_layernorm(strm, X, s.bias ? XB : nullptr, G, BT, Y, s.rows, s.len,
                       1e-6f, 0));
    });
    double e = check(hx, hb, hg, ht, s.rows, s.len, s.bias);
    printf("  library: %.2f%s", t, e > 1e-5 ? " BAD" : "");
    bad |= e > 1e-5;
    if (s.len <= 1024) {
      CK(cudaMemset(Y, 0, (size_t)s.rows * s.len * 4));
      t = time_us(strm, [&] {
        unsigned nb = blocks_for((int64_t)s.rows * 32);
        const float *b = s.bias ? XB : nullptr;
        if (s.len <= 128)
          k_layernorm_warp<4><<<nb, kThreads, 0, strm>>>(X, b, G, BT, Y, s.rows,
                                                         s.len, 1e-6f, false);
        else if (s.len <= 256)
          k_layernorm_warp<8><<<nb, kThreads, 0, strm>>>(X, b, G, BT, Y, s.rows,
                                                         s.len, 1e-6f, false);
        else if (s.len <= 512)
          k_layernorm_warp<16><<<nb, kThreads, 0, strm>>>(
              X, b, G, BT, Y, s.rows, s.len, 1e-6f, false);
        else
          k_layernorm_warp<32><<<nb, kThreads, 0, strm>>>(
              X, b, G, BT, Y, s.rows, s.len, 1e-6f, false);
        CK(cudaGetLastError());
      });
      e = check(hx, hb, hg, ht, s.rows, s.len, s.bias);
      printf("  scalar warp: %.2f%s", t, e > 1e-5 ? " BAD" : "");
      bad |= e > 1e-5;
    }
    variant<8, 1>(s.rows, s.len, s.bias, "8x1", hx, hb, hg, ht, &bad);
    variant<8, 2>(s.rows, s.len, s.bias, "8x2", hx, hb, hg, ht, &bad);
    variant<8, 3>(s.rows, s.len, s.bias, "8x3", hx, hb, hg, ht, &bad);
    variant<16, 2>(s.rows, s.len, s.bias, "16x2", hx, hb, hg, ht, &bad);
    variant<16, 3>(s.rows, s.len, s.bias, "16x3", hx, hb, hg, ht, &bad);
    variant<32, 1>(s.rows, s.len, s.bias, "32x1", hx, hb, hg, ht, &bad);
    variant<32, 2>(s.rows, s.len, s.bias, "32x2", hx, hb, hg, ht, &bad);
    variant<32, 3>(s.rows, s.len, s.bias, "32x3", hx, hb, hg, ht, &bad);
    variant<32, 6>(s.rows, s.len, s.bias, "32x6", hx, hb, hg, ht, &bad);
    variant<16, 6>(s.rows, s.len, s.bias, "16x6", hx, hb, hg, ht, &bad);
    variant<16, 12>(s.rows, s.len, s.bias, "16x12", hx, hb, hg, ht, &bad);
    printf("\n");
  }
  return bad;
}
