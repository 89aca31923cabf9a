// probe.cu: does cuDNN's graph API give matmul + bias + exact (erf) GELU in
// float32 with TF32 at cuBLASLt's matmul speed? Times, for M x K x N:
//  (a) cuBLASLt TF32 matmul + bias epilogue, best of its heuristic's 16, then
//      a float4 erf-GELU kernel (what the executor does now);
//  (b) cuBLASLt GELU_BIAS epilogue (tanh form; reference only);
//  (c) every cuDNN engine config for matmul -> add bias -> GELU_FWD (erf).
// Checks (c)'s output against (a)'s.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define LK(x) do { cublasStatus_t e_ = (x); if (e_) { printf("cublasLt %d line %d\n", (int)e_, __LINE__); exit(1); } } while (0)
#define BK(x) do { cudnnStatus_t e_ = (x); if (e_) { return e_; } } while (0)
typedef cudnnBackendDescriptor_t bd;

__global__ void gelu4(const float4 *x, float4 *y, long n4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  for (; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = 0.5f * v.x * (1.f + erff(v.x * 0.70710678f));
    v.y = 0.5f * v.y * (1.f + erff(v.y * 0.70710678f));
    v.z = 0.5f * v.z * (1.f + erff(v.z * 0.70710678f));
    v.w = 0.5f * v.w * (1.f + erff(v.w * 0.70710678f));
    y[i] = v;
  }
}
__global__ void fill(float *p, long n, unsigned s, float scale) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  for (; i < n; i += (long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ s; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = ((h & 0xffff) / 65536.f - 0.5f) * scale;
  }
}
static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
template <class F> static float timeit(F f, cudaStream_t s) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; i++) f();
  std::vector<float> t;
  for (int r = 0; r < 7; r++) {
    cudaEventRecord(a, s);
    for (int i = 0; i < 20; i++) f();
    cudaEventRecord(b, s); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000.f / 20);
  }
  CK(cudaGetLastError());
  return median(t);
}
static cudnnStatus_t set(bd d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n, const void *v) { return cudnnBackendSetAttribute(d, a, t, n, v); }
static cudnnStatus_t tensor(bd *t, int64_t uid, int64_t b, int64_t r, int64_t c, bool virt) {
  int64_t dim[3] = {b, r, c}, st[3] = {r * c, c, 1}, al = 16; bool v = virt;
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
  BK(set(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f));
  BK(set(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dim));
  BK(set(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, st));
  BK(set(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  BK(set(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al));
  if (virt) BK(set(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
  return cudnnBackendFinalize(*t);
}
static cudnnStatus_t pw(bd *op, cudnnPointwiseMode_t m, bd x, bd b, bd y) {
  bd p; cudnnDataType_t f = CUDNN_DATA_FLOAT;
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &p));
  BK(set(p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &m));
  BK(set(p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f));
  BK(cudnnBackendFinalize(p));
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
  BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p));
  BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  if (b) BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
  BK(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  return cudnnBackendFinalize(*op);
}
static cudnnStatus_t graph(cudnnHandle_t h, int64_t M, int64_t K, int64_t N, int ep, bd *g) {
  bd a, b, c, bias, c2, y, mm, op, ops[3], o2, o3;
  BK(tensor(&a, 1, 1, M, K, false));
  BK(tensor(&b, 2, 1, K, N, false));
  BK(tensor(&c, ep ? 10 : 3, 1, M, N, ep != 0));
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR, &mm));
  BK(set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f));
  BK(cudnnBackendFinalize(mm));
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op));
  BK(set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a));
  BK(set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
  BK(set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
  BK(set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm));
  BK(cudnnBackendFinalize(op));
  int n = 0; ops[n++] = op;
  if (ep) {
    BK(tensor(&bias, 4, 1, 1, N, false));
    BK(tensor(&c2, 11, 1, M, N, true));
    BK(tensor(&y, 3, 1, M, N, false));
    BK(pw(&o2, CUDNN_POINTWISE_ADD, c, bias, c2)); ops[n++] = o2;
    BK(pw(&o3, CUDNN_POINTWISE_GELU_FWD, c2, NULL, y)); ops[n++] = o3;
  }
  BK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, g));
  BK(set(*g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, ops));
  BK(set(*g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  return cudnnBackendFinalize(*g);
}
static void cudnn_try(cudnnHandle_t h, cudaStream_t s, int64_t M, int64_t K, int64_t N, int ep,
                      float *A, float *B, float *bias, float *Y, const float *ref, void *ws, int64_t wsmax) {
  bd g; cudnnStatus_t st = graph(h, M, K, N, ep, &g);
  if (st) { printf("  cudnn graph (ep %d): %s\n", ep, cudnnGetErrorString(st)); return; }
  for (int mode = 0; mode < 2; mode++) {
    cudnnBackendHeurMode_t hm = mode ? CUDNN_HEUR_MODE_FALLBACK : CUDNN_HEUR_MODE_A;
    bd heur; cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
    set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm);
    if ((st = cudnnBackendFinalize(heur))) { printf("  heur %d: %s\n", mode, cudnnGetErrorString(st)); continue; }
    int64_t cnt = 0; cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &cnt, NULL);
    if (cnt > 12) cnt = 12;
    std::vector<bd> cfg(cnt);
    for (auto &c : cfg) cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c);
    int64_t got = 0;
    cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, cnt, &got, cfg.data());
    printf("  heur %s (ep %d): %ld configs\n", mode ? "fallback" : "A", ep, (long)got);
    for (int64_t i = 0; i < got; i++) {
      bd plan; int64_t wsz = 0, nn = 0;
      cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
      if ((st = cudnnBackendFinalize(plan))) { printf("    cfg %ld: finalize %s\n", (long)i, cudnnGetErrorString(st)); continue; }
      cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &nn, &wsz);
      if (wsz > wsmax) { printf("    cfg %ld: ws %ld\n", (long)i, (long)wsz); continue; }
      int64_t uids[4] = {1, 2, 3, 4}; void *ptrs[4] = {A, B, Y, bias};
      bd vp; cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
      set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, ep ? 4 : 3, uids);
      set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ep ? 4 : 3, ptrs);
      set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
      cudnnBackendFinalize(vp);
      int64_t eidx = -1; bd eng; cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng);
      cudnnBackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &nn, &eng);
      cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &nn, &eidx);
      st = cudnnBackendExecute(h, plan, vp);
      if (st) { printf("    cfg %ld (engine %ld): execute %s\n", (long)i, (long)eidx, cudnnGetErrorString(st)); continue; }
      CK(cudaStreamSynchronize(s));
      float us = timeit([&] { cudnnBackendExecute(h, plan, vp); }, s);
      double err = 0;
      if (ref) {
        std::vector<float> y(M * N), r(M * N);
        CK(cudaMemcpy(y.data(), Y, M * N * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(r.data(), ref, M * N * 4, cudaMemcpyDeviceToHost));
        for (long j = 0; j < M * N; j++) err = fmax(err, fabs(y[j] - r[j]) / (1e-3 + fabs(r[j])));
      }
      printf("    cfg %ld (engine %ld): %.2f us, max rel err vs cuBLASLt+gelu %.2e\n", (long)i, (long)eidx, us, err);
    }
  }
}
int main(int argc, char **argv) {
  int64_t M = argc > 1 ? atol(argv[1]) : 2048, K = argc > 2 ? atol(argv[2]) : 768, N = argc > 3 ? atol(argv[3]) : 3072;
  printf("M %ld K %ld N %ld\n", (long)M, (long)K, (long)N);
  cudaStream_t s; CK(cudaStreamCreate(&s));
  float *A, *B, *bias, *C, *Y, *Y2; void *ws; int64_t wsmax = 64 << 20;
  CK(cudaMalloc(&A, M * K * 4)); CK(cudaMalloc(&B, K * N * 4)); CK(cudaMalloc(&bias, N * 4));
  CK(cudaMalloc(&C, M * N * 4)); CK(cudaMalloc(&Y, M * N * 4)); CK(cudaMalloc(&Y2, M * N * 4)); CK(cudaMalloc(&ws, wsmax));
  fill<<<1024, 256, 0, s>>>(A, M * K, 1, 2.f); fill<<<1024, 256, 0, s>>>(B, K * N, 2, 0.2f); fill<<<64, 256, 0, s>>>(bias, N, 3, 1.f);
  CK(cudaStreamSynchronize(s));
  cublasLtHandle_t lt; LK(cublasLtCreate(&lt));
  // row-major C[M,N] = A[M,K] B[K,N]  ==  col-major C^T[N,M] = B^T[N,K] A^T[K,M]
  for (int epi = 0; epi < 2; epi++) {
    cublasLtMatmulDesc_t d; LK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
    cublasLtEpilogue_t e = epi ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    LK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    LK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    cublasLtMatrixLayout_t la, lb, lc;
    LK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, N, K, N)); // B^T as col-major N x K, ld N
    LK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, M, K)); // A^T col-major K x M
    LK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, M, N));
    cublasLtMatmulPreference_t pref; LK(cublasLtMatmulPreferenceCreate(&pref));
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsmax, sizeof wsmax));
    cublasLtMatmulHeuristicResult_t r[16]; int nr = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(lt, d, la, lb, lc, lc, pref, 16, r, &nr));
    float one = 1, zero = 0, best = 1e9; int bi = -1;
    float *out = epi ? Y2 : C;
    for (int i = 0; i < nr; i++) {
      float us = timeit([&] { cublasLtMatmul(lt, d, &one, B, la, A, lb, &zero, out, lc, out, lc, &r[i].algo, ws, wsmax, s); }, s);
      if (us < best) best = us, bi = i;
    }
    cublasLtMatmul(lt, d, &one, B, la, A, lb, &zero, out, lc, out, lc, &r[bi].algo, ws, wsmax, s);
    CK(cudaStreamSynchronize(s));
    printf("cuBLASLt TF32 %s: best of %d %.2f us (%.0f TFLOP/s)\n", epi ? "GELU_BIAS (tanh)" : "BIAS", nr, best, 2.0 * M * N * K / best / 1e6);
  }
  float g = timeit([&] { gelu4<<<132 * 8, 256, 0, s>>>((const float4 *)C, (float4 *)Y2, M * N / 4); }, s);
  printf("erf GELU kernel (float4, separate buffers): %.2f us\n", g);
  gelu4<<<132 * 8, 256, 0, s>>>((const float4 *)C, (float4 *)Y2, M * N / 4); // reference in Y2
  CK(cudaStreamSynchronize(s));
  cudnnHandle_t h; if (cudnnCreate(&h)) { printf("cudnnCreate failed\n"); return 1; }
  cudnnSetStream(h, s);
  printf("cuDNN %zu: matmul alone\n", cudnnGetVersion());
  cudnn_try(h, s, M, K, N, 0, A, B, bias, Y, NULL, ws, wsmax);
  printf("cuDNN: matmul + bias + GELU_FWD\n");
  cudnn_try(h, s, M, K, N, 1, A, B, bias, Y, Y2, ws, wsmax);
  return 0;
}
