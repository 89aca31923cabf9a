/* micro-convfuse.cu: would cuDNN's fused convolution engines save the
 * executor's bias/activation pass? For channels-last fp32 convolutions
 * (TF32 allowed) of ResNet-50, ResNeXt-50 and VGG-16 at batch 1 and 16 it
 * times, the way the executor's autotuning does (micro-time.cuh):
 *
 *   plain  the fastest of heuristics mode A's first 10 plans for the
 *          convolution alone, plus a float4 bias + relu kernel over its
 *          output (the executor's extra pass), and with a residual add;
 *   fused  the fastest plan of every engine cuDNN offers (heuristics A and
 *          the fallback list, and every global engine index) for the
 *          operation graph conv -> add bias -> relu, and
 *          conv -> add bias -> add residual -> relu.
 *
 * Each fused result is compared with the plain one (relative error, TF32
 * rounding allowed). A benchmark, not a test: on the GPU machine,
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cf scripts/micro-convfuse.cu \
 *     -lcudnn && /tmp/cf
 *
 * Output: one line per shape and graph: the times in us, how many engine
 * configurations finalised, the winner's global index, and "BAD" where a
 * result differs (exit 1). Slow: the global engines include ones compiled
 * at run time (the first 8 shapes took 200 s on an H200, 2026-11-26; the
 * figures are in docs/cuda.md, "Epilogues in cuDNN's plan"). */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "micro-time.cuh"

typedef cudnnBackendDescriptor_t bd;

#define DK(x)                                                                  \
  do {                                                                         \
    cudnnStatus_t s_ = (x);                                                    \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                          \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,               \
              cudnnGetErrorString(s_));                                        \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

static bd mk(cudnnBackendDescriptorType_t t) {
  bd d;
  DK(cudnnBackendCreateDescriptor(t, &d));
  return d;
}

static void set(bd d, cudnnBackendAttributeName_t a,
                cudnnBackendAttributeType_t t, int64_t n, const void *v) {
  DK(cudnnBackendSetAttribute(d, a, t, n, v));
}

/* NHWC tensor of logical dims (n, c, h, w). */
static bd tensor(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w,
                 bool virt) {
  int64_t dim[4] = {n, c, h, w}, st[4] = {h * w * c, 1, w * c, c}, al = 16;
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  bd t = mk(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al);
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
  DK(cudnnBackendFinalize(t));
  return t;
}

struct Shape {
  const char *name;
  int n, c, h, w, o, k, s, p, g;
  int oh() const { return (h + 2 * p - k) / s + 1; }
  int ow() const { return (w + 2 * p - k) / s + 1; }
};

enum { X = 1, W = 2, Y = 3, B = 4, R = 5, V0 = 10 };

static bd pw_op(cudnnPointwiseMode_t m, bd x, bd b, bd y) {
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  bd pw = mk(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &m);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f);
  DK(cudnnBackendFinalize(pw));
  bd op = mk(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      1, &x);
  if (b)
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        1, &b);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      1, &y);
  DK(cudnnBackendFinalize(op));
  return op;
}

/* The operation graph: conv alone (mode 0), conv+bias+relu (1),
 * conv+bias+residual+relu (2). */
static bd op_graph(cudnnHandle_t h, const Shape &s, int mode) {
  bool no = false, yes = true;
  bd x = tensor(X, s.n, s.c, s.h, s.w, no);
  bd w = tensor(W, s.o, s.c / s.g, s.k, s.k, no);
  int64_t oh = s.oh(), ow = s.ow();
  bd y = tensor(mode ? V0 : Y, s.n, s.o, oh, ow, mode != 0);
  int64_t two = 2, pad[2] = {s.p, s.p}, st[2] = {s.s, s.s}, dil[2] = {1, 1};
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t cm = CUDNN_CROSS_CORRELATION;
  bd cv = mk(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  set(cv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f);
  set(cv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
      &cm);
  set(cv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two);
  set(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
  set(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, st);
  set(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(cv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  DK(cudnnBackendFinalize(cv));
  float one = 1.0f, zero = 0.0f;
  bd op = mk(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
      &one);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1,
      &zero);
  DK(cudnnBackendFinalize(op));
  std::vector<bd> ops = {op};
  if (mode) {
    bd b = tensor(B, 1, s.o, 1, 1, no);
    bd t1 = tensor(V0 + 1, s.n, s.o, oh, ow, yes);
    ops.push_back(pw_op(CUDNN_POINTWISE_ADD, y, b, t1));
    bd in = t1;
    if (mode == 2) {
      bd r = tensor(R, s.n, s.o, oh, ow, no);
      bd t2 = tensor(V0 + 2, s.n, s.o, oh, ow, yes);
      ops.push_back(pw_op(CUDNN_POINTWISE_ADD, t1, r, t2));
      in = t2;
    }
    bd out = tensor(Y, s.n, s.o, oh, ow, no);
    ops.push_back(pw_op(CUDNN_POINTWISE_RELU_FWD, in, nullptr, out));
  }
  bd g = mk(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      (int64_t)ops.size(), ops.data());
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  DK(cudnnBackendFinalize(g));
  return g;
}

/* Engine configurations: heuristics mode `m`, up to want. */
static std::vector<bd> heur(bd g, cudnnBackendHeurMode_t m, int want) {
  std::vector<bd> cfg(want);
  for (auto &c : cfg)
    c = mk(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  bd hd = mk(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set(hd, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      1, &g);
  set(hd, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m);
  int64_t n = 0;
  if (cudnnBackendFinalize(hd) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(hd, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, want, &n,
                               cfg.data()) != CUDNN_STATUS_SUCCESS)
    n = 0;
  cfg.resize(n);
  return cfg;
}

/* Every engine index as a default configuration. */
static std::vector<bd> every(bd g) {
  int64_t count = 0, n = 0;
  DK(cudnnBackendGetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                              CUDNN_TYPE_INT64, 1, &n, &count));
  std::vector<bd> out;
  for (int64_t i = 0; i < count; i++) {
    bd e = mk(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    set(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &g);
    set(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i);
    if (cudnnBackendFinalize(e) != CUDNN_STATUS_SUCCESS)
      continue;
    bd c = mk(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    set(c, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e);
    if (cudnnBackendFinalize(c) == CUDNN_STATUS_SUCCESS)
      out.push_back(c);
  }
  return out;
}

static int64_t engine_index(bd cfg) {
  bd e = mk(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0, idx = -1;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                               &e) == CUDNN_STATUS_SUCCESS)
    cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                             CUDNN_TYPE_INT64, 1, &n, &idx);
  return idx;
}

struct Bufs {
  float *x, *w, *y, *b, *r;
  void *ws;
  size_t wsn;
};

struct Best {
  float us = 1e30f;
  int64_t eng = -1;
  int tried = 0;
};

/* The variant pack of bf for graph `mode` (op_graph's). */
static bd pack(Bufs &bf, int mode) {
  int64_t uids[5] = {X, W, Y, B, R};
  void *ptrs[5] = {bf.x, bf.w, bf.y, bf.b, bf.r};
  int nu = mode == 0 ? 3 : mode == 1 ? 4 : 5;
  bd vp = mk(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, nu, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, nu, ptrs);
  set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &bf.ws);
  DK(cudnnBackendFinalize(vp));
  return vp;
}

/* Times every configuration's plan, keeps the fastest, leaves its result
 * in bf.y. */
static Best time_cfgs(cudnnHandle_t h, cudaStream_t st,
                      const std::vector<bd> &cfgs, Bufs &bf, int mode) {
  Best best;
  bd bestp = nullptr;
  for (bd c : cfgs) {
    bd p;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                                     &p) != CUDNN_STATUS_SUCCESS)
      continue;
    set(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    int64_t ws = 0, n = 0;
    if (cudnnBackendFinalize(p) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                 CUDNN_TYPE_INT64, 1, &n,
                                 &ws) != CUDNN_STATUS_SUCCESS ||
        (size_t)ws > bf.wsn) {
      cudnnBackendDestroyDescriptor(p);
      continue;
    }
    bd vp = pack(bf, mode);
    if (cudnnBackendExecute(h, p, vp) != CUDNN_STATUS_SUCCESS ||
        cudaStreamSynchronize(st) != cudaSuccess) {
      cudaGetLastError();
      cudnnBackendDestroyDescriptor(p);
      cudnnBackendDestroyDescriptor(vp);
      continue;
    }
    best.tried++;
    float us = time_us(st, [&] { DK(cudnnBackendExecute(h, p, vp)); });
    if (us < best.us) {
      best.us = us;
      best.eng = engine_index(c);
      if (bestp)
        cudnnBackendDestroyDescriptor(bestp);
      bestp = p;
    } else {
      cudnnBackendDestroyDescriptor(p);
    }
    cudnnBackendDestroyDescriptor(vp);
  }
  if (bestp) { /* rerun the winner: its result stays in bf.y */
    bd vp = pack(bf, mode);
    DK(cudnnBackendExecute(h, bestp, vp));
    CK(cudaStreamSynchronize(st));
    cudnnBackendDestroyDescriptor(vp);
    cudnnBackendDestroyDescriptor(bestp);
  }
  return best;
}

/* y = relu(y + b[c] (+ r)), channels-last, float4. */
__global__ void bias_act(float4 *y, const float4 *b, const float4 *r,
                         int64_t n4, int c4) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n4)
    return;
  float4 v = y[i], bb = b[i % c4];
  v.x += bb.x, v.y += bb.y, v.z += bb.z, v.w += bb.w;
  if (r) {
    float4 q = r[i];
    v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
  }
  v.x = fmaxf(v.x, 0.f), v.y = fmaxf(v.y, 0.f), v.z = fmaxf(v.z, 0.f),
  v.w = fmaxf(v.w, 0.f);
  y[i] = v;
}

__global__ void fill(float *p, int64_t n, uint32_t seed, float scale) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t v = (uint32_t)i * 2654435761u ^ seed;
    v ^= v >> 13, v *= 0x5bd1e995u, v ^= v >> 15;
    p[i] = scale * ((float)(v & 0xffff) / 32768.0f - 1.0f);
  }
}

static float *alloc_fill(int64_t n, uint32_t seed, float scale) {
  float *p;
  CK(cudaMalloc(&p, n * 4));
  fill<<<(unsigned)((n + 255) / 256), 256>>>(p, n, seed, scale);
  CK(cudaGetLastError());
  return p;
}

int main() {
  const Shape shapes[] = {
      {"r50 s1 1x1 256>64", 16, 256, 56, 56, 64, 1, 1, 0, 1},
      {"r50 s1 3x3 64", 16, 64, 56, 56, 64, 3, 1, 1, 1},
      {"r50 s1 1x1 64>256", 16, 64, 56, 56, 256, 1, 1, 0, 1},
      {"r50 s2 3x3 128", 16, 128, 28, 28, 128, 3, 1, 1, 1},
      {"r50 s3 3x3 256", 16, 256, 14, 14, 256, 3, 1, 1, 1},
      {"r50 s4 3x3 512", 16, 512, 7, 7, 512, 3, 1, 1, 1},
      {"r50 stem 7x7/2", 16, 4, 224, 224, 64, 7, 2, 3, 1},
      {"rx50 s1 3x3 g32", 16, 128, 56, 56, 128, 3, 1, 1, 32},
      {"vgg 3x3 64 224", 16, 64, 224, 224, 64, 3, 1, 1, 1},
      {"vgg 3x3 128 112", 16, 128, 112, 112, 128, 3, 1, 1, 1},
      {"vgg 3x3 256 56", 16, 256, 56, 56, 256, 3, 1, 1, 1},
      {"vgg 3x3 512 28", 16, 512, 28, 28, 512, 3, 1, 1, 1},
      {"b1 r50 s1 3x3 64", 1, 64, 56, 56, 64, 3, 1, 1, 1},
      {"b1 r50 s3 3x3 256", 1, 256, 14, 14, 256, 3, 1, 1, 1},
      {"b1 r50 s1 1x1 64>256", 1, 64, 56, 56, 256, 1, 1, 0, 1},
      {"b1 vgg 3x3 128 112", 1, 128, 112, 112, 128, 3, 1, 1, 1},
  };
  cudnnHandle_t h;
  DK(cudnnCreate(&h));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  DK(cudnnSetStream(h, st));
  printf("cuDNN %zu\n", cudnnGetVersion());
  printf("%-22s %9s %8s %9s | %9s %5s %6s | %9s %9s %5s %6s\n", "shape", "conv",
         "ep", "conv+ep", "fused", "cfgs", "eng", "conv+epR", "fusedR", "cfgs",
         "eng");
  int bad = 0;
  for (const Shape &s : shapes) {
    int64_t nx = (int64_t)s.n * s.c * s.h * s.w;
    int64_t nw = (int64_t)s.o * (s.c / s.g) * s.k * s.k;
    int64_t ny = (int64_t)s.n * s.o * s.oh() * s.ow();
    Bufs bf;
    bf.x = alloc_fill(nx, 1, 1.0f);
    bf.w = alloc_fill(nw, 2, 0.05f);
    bf.b = alloc_fill(s.o, 3, 0.5f);
    bf.r = alloc_fill(ny, 4, 0.5f);
    CK(cudaMalloc(&bf.y, ny * 4));
    bf.wsn = (size_t)256 << 20;
    CK(cudaMalloc(&bf.ws, bf.wsn));
    CK(cudaDeviceSynchronize());
    std::vector<float> ref(ny), got(ny);
    /* plain: the convolution, then the bias pass */
    bd g0 = op_graph(h, s, 0);
    Best p = time_cfgs(h, st, heur(g0, CUDNN_HEUR_MODE_A, 10), bf, 0);
    float *conv_out;
    CK(cudaMalloc(&conv_out, ny * 4));
    CK(cudaMemcpy(conv_out, bf.y, ny * 4, cudaMemcpyDeviceToDevice));
    unsigned blocks = (unsigned)((ny / 4 + 255) / 256);
    float ep[2], fu[2];
    int64_t feng[2];
    int fcfg[2];
    for (int res = 0; res < 2; res++) {
      const float4 *r4 = res ? (const float4 *)bf.r : nullptr;
      ep[res] = time_us(st, [&] {
        bias_act<<<blocks, 256, 0, st>>>((float4 *)bf.y, (const float4 *)bf.b,
                                         r4, ny / 4, s.o / 4);
      });
      CK(cudaMemcpy(bf.y, conv_out, ny * 4, cudaMemcpyDeviceToDevice));
      bias_act<<<blocks, 256, 0, st>>>((float4 *)bf.y, (const float4 *)bf.b, r4,
                                       ny / 4, s.o / 4);
      CK(cudaStreamSynchronize(st));
      CK(cudaMemcpy(ref.data(), bf.y, ny * 4, cudaMemcpyDeviceToHost));
      bd g = op_graph(h, s, 1 + res);
      std::vector<bd> cfgs = heur(g, CUDNN_HEUR_MODE_A, 20);
      for (bd c : heur(g, CUDNN_HEUR_MODE_FALLBACK, 20))
        cfgs.push_back(c);
      for (bd c : every(g))
        cfgs.push_back(c);
      CK(cudaMemset(bf.y, 0, ny * 4));
      Best f = time_cfgs(h, st, cfgs, bf, 1 + res);
      fu[res] = f.us, feng[res] = f.eng, fcfg[res] = f.tried;
      if (f.tried) {
        CK(cudaMemcpy(got.data(), bf.y, ny * 4, cudaMemcpyDeviceToHost));
        double num = 0, den = 0;
        for (int64_t i = 0; i < ny; i++)
          num += fabs(got[i] - ref[i]), den += fabs(ref[i]);
        if (!(num <= 2e-3 * den)) {
          printf("BAD %s res=%d rel %.3g\n", s.name, res, num / den);
          bad = 1;
        }
      }
    }
    printf(
        "%-22s %9.2f %8.2f %9.2f | %9.2f %5d %6lld | %9.2f %9.2f %5d %6lld\n",
        s.name, p.us, ep[0], p.us + ep[0], fu[0], fcfg[0], (long long)feng[0],
        p.us + ep[1], fu[1], fcfg[1], (long long)feng[1]);
    fflush(stdout);
    cudaFree(bf.x), cudaFree(bf.w), cudaFree(bf.b), cudaFree(bf.r);
    cudaFree(bf.y), cudaFree(bf.ws), cudaFree(conv_out);
  }
  return bad;
}
