/* khalf.cu: the CUDA executor's kernels on half-precision tensors (f16,
 * bf16: docs/half.md): conversion between the float types, unary and
 * binary element-wise maps, a bias with an activation and a residual over
 * a convolution's or matmul's output, gather (float32's too) and fill
 * (the strided copy that
 * transposes, slices, concatenations and splits run as, cxk_copy16, is
 * kmove.cu's walk on 2-byte elements). Every kernel is a
 * template on its element type T (float, __half, __nv_bfloat16), loads
 * each element as a float, computes in float32 and rounds once as it
 * stores, as the CPU reference does (src/exec: float32 arithmetic, each
 * half tensor rounded as it is written). Flat maps read and write 16
 * bytes at a time (8 halves) where the pointers and the count allow.
 */
#include <math.h>
#include <string.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

/* 16 bytes of T: 4 floats or 8 halves. */
template <typename T> struct vec16 {
  static const int n = 16 / sizeof(T);
  union {
    uint4 u;
    T e[16 / sizeof(T)];
  };
};

template <typename S, typename D>
__global__ void k_convert(const S *x, D *y, int64_t n) {
  GRID_LOOP(i, n) { y[i] = st<D>(ld(x[i])); }
}

template <typename T>
__global__ void k_unary_h(int fn, const T *x, T *y, int64_t n, float lo,
                          float hi) {
  GRID_LOOP(i, n) { y[i] = st<T>(act_fn(fn, x ? ld(x[i]) : 0.0f, lo, hi)); }
}

template <typename T>
__global__ void k_unary_v(int fn, const uint4 *x, uint4 *y, int64_t nv,
                          float lo, float hi) {
  GRID_LOOP(i, nv) {
    vec16<T> v;
    v.u = x[i];
#pragma unroll
    for (int j = 0; j < vec16<T>::n; j++)
      v.e[j] = st<T>(act_fn(fn, ld(v.e[j]), lo, hi));
    y[i] = v.u;
  }
}

__device__ __forceinline__ float bin_h(int op, float a, float b) {
  switch (op) {
  case CXK_ADD: return a + b;
  case CXK_SUB: return a - b;
  case CXK_MUL: return a * b;
  case CXK_EQ: return a == b ? 1.0f : 0.0f;
  default: return a / b;
  }
}

__device__ __forceinline__ float relu_h(int relu, float v) {
  return relu ? (v > 0.0f ? v : 0.0f) : v;
}

template <typename T>
__global__ void k_binary_v(int op, const uint4 *a, const uint4 *b, uint4 *o,
                           int64_t nv, int relu) {
  GRID_LOOP(i, nv) {
    vec16<T> x, y;
    x.u = a[i], y.u = b[i];
#pragma unroll
    for (int j = 0; j < vec16<T>::n; j++)
      x.e[j] = st<T>(relu_h(relu, bin_h(op, ld(x.e[j]), ld(y.e[j]))));
    o[i] = x.u;
  }
}

/* Any broadcast (bc.rank 0: a, b and o all flat). */
template <typename T>
__global__ void k_binary_h(int op, const T *a, const T *b, T *o, int64_t n,
                           const __grid_constant__ cxk_bcast bc, int relu) {
  GRID_LOOP(i, n) {
    int64_t rem = i, oa = bc.rank ? 0 : i, ob = bc.rank ? 0 : i;
    for (int d = bc.rank - 1; d >= 0; d--) {
      int64_t c = rem % bc.dim[d];
      rem /= bc.dim[d];
      oa += c * bc.sa[d];
      ob += c * bc.sb[d];
    }
    o[i] = st<T>(relu_h(relu, bin_h(op, ld(a[oa]), ld(b[ob]))));
  }
}

/* A broadcast whose last dimension is a multiple of 8: eight outputs a
 * thread (one 16-byte store), each operand read 16 bytes at a time where
 * it runs along that dimension (stride 1, rows on 16-byte boundaries:
 * kutil.cuh's vec16_operand) or one element repeated where it is broadcast
 * along it (stride 0): squeeze-and-excitation's x * s[n, c] channels-last, a
 * bias over rows. The index walk once per eight outputs. */
template <typename T, typename I>
__global__ void k_binary_bv8(int op, const T *a, const T *b, T *o, I nv,
                             const __grid_constant__ cxk_bcast bc, int relu) {
  const int L = bc.rank - 1;
  GRID_LOOP_T(I, i, nv) {
    I rem = i * 8, oa = 0, ob = 0;
    for (int d = L; d >= 0; d--) {
      I c = rem % (I)bc.dim[d];
      rem /= (I)bc.dim[d];
      oa += c * (I)bc.sa[d];
      ob += c * (I)bc.sb[d];
    }
    vec16<T> x, y;
    if (bc.sa[L])
      x.u = *(const uint4 *)(a + oa);
    else
#pragma unroll
      for (int j = 0; j < 8; j++)
        x.e[j] = a[oa];
    if (bc.sb[L])
      y.u = *(const uint4 *)(b + ob);
    else
#pragma unroll
      for (int j = 0; j < 8; j++)
        y.e[j] = b[ob];
#pragma unroll
    for (int j = 0; j < 8; j++)
      x.e[j] = st<T>(relu_h(relu, bin_h(op, ld(x.e[j]), ld(y.e[j]))));
    *(uint4 *)(o + (int64_t)i * 8) = x.u;
  }
}

/* y[i] = act(y[i] + bias[(i / inner) % c] + res[j]), in place; j as
 * kew.cu's k_bias_res_act finds it (rmode 0: i; 1: y NHWC, res NCHW; 2: y
 * NCHW, res NHWC). */
template <typename T>
__global__ void k_bias_res_act_h(T *y, const T *bias, const T *res, int64_t n,
                                 int64_t c, int64_t inner, int act, float lo,
                                 float hi, int rmode, int64_t h, int64_t w) {
  GRID_LOOP(i, n) {
    float v = ld(y[i]);
    if (bias) /* the sums in float32, rounded once (ref_conv: bias, then
                 residual, then activation) */
      v += ld(bias[(i / inner) % c]);
    if (res) {
      int64_t j = i;
      if (rmode == 1) { /* i = ((b*h + y)*w + x)*c + ch */
        int64_t ch = i % c, x = (i / c) % w, yy = (i / (c * w)) % h,
                b = i / (c * w * h);
        j = ((b * c + ch) * h + yy) * w + x;
      } else if (rmode == 2) { /* i = ((b*c + ch)*h + y)*w + x */
        int64_t x = i % w, yy = (i / w) % h, ch = (i / (w * h)) % c,
                b = i / (w * h * c);
        j = ((b * h + yy) * w + x) * c + ch;
      }
      v += ld(res[j]);
    }
    y[i] = st<T>(act_fn(act, v, lo, hi));
  }
}

/* y = x gathered along one axis by float32-held indices (negative ones
 * from the end; out of range: NaN), on elements of type T. */
template <typename T>
__global__ void k_gather_h(const T *x, const float *idx, T *y, int64_t n,
                           int64_t nidx, int64_t dim, int64_t inner) {
  GRID_LOOP(i, n) {
    int64_t r = i % inner, k = i / inner % nidx, q = i / inner / nidx;
    int64_t j = (int64_t)idx[k];
    j = j < 0 ? j + dim : j;
    y[i] = j >= 0 && j < dim ? x[(q * dim + j) * inner + r]
                             : st<T>(__int_as_float(0x7fc00000));
  }
}

/* float32 rows of a multiple of 4 elements (an embedding's [V, 512]): four
 * elements a thread, 16-byte loads and stores, 32-bit index arithmetic
 * (the generic kernel's 64-bit divisions per element took T5's and
 * Llama's b16 embeddings 8.2 us, about three times their memory bound,
 * 2026-12-01). */
__global__ void k_gather4(const float4 *x, const float *idx, float4 *y,
                          int32_t n4, int32_t nidx, int32_t dim,
                          int32_t inner4) {
  GRID_LOOP_T(int32_t, i, n4) {
    int32_t r = i % inner4, t = i / inner4, k = t % nidx, q = t / nidx;
    float f = idx[k];
    /* out of int32's range (or NaN): out of range, a NaN row */
    int32_t j =
        f >= -2147483648.0f && f < 2147483648.0f ? (int32_t)f : INT32_MIN;
    j = j < 0 && j >= -dim ? j + dim : j;
    float nan = __int_as_float(0x7fc00000);
    y[i] = j >= 0 && j < dim ? x[(q * dim + j) * inner4 + r]
                             : make_float4(nan, nan, nan, nan);
  }
}

template <typename T> __global__ void k_fill_h(T *y, int64_t n, float v) {
  T t = st<T>(v);
  GRID_LOOP(i, n) { y[i] = t; }
}

template <typename S>
cudaError_t convert_from(cudaStream_t s, const S *x, void *y, int ddt,
                         int64_t n) {
  unsigned b = blocks_for(n);
  if (ddt == CXK_F16)
    k_convert<<<b, kThreads, 0, s>>>(x, (__half *)y, n);
  else if (ddt == CXK_BF16)
    k_convert<<<b, kThreads, 0, s>>>(x, (__nv_bfloat16 *)y, n);
  else
    k_convert<<<b, kThreads, 0, s>>>(x, (float *)y, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t unary_t(cudaStream_t s, int fn, const void *x, void *y, int64_t n,
                    float lo, float hi) {
  const int per = vec16<T>::n;
  if (x && n % per == 0 && aligned16(x) && aligned16(y))
    k_unary_v<T><<<blocks_for(n / per), kThreads, 0, s>>>(
        fn, (const uint4 *)x, (uint4 *)y, n / per, lo, hi);
  else
    k_unary_h<T><<<blocks_for(n), kThreads, 0, s>>>(fn, (const T *)x, (T *)y, n,
                                                    lo, hi);
  return cudaGetLastError();
}

template <typename T>
cudaError_t binary_t(cudaStream_t s, int op, const void *a, const void *b,
                     void *o, int64_t n, const cxk_bcast *bc0, int relu) {
  const int per = vec16<T>::n;
  cxk_bcast bc;
  memset(&bc, 0, sizeof bc); /* rank 0: flat */
  if (bc0) {                 /* merged as kew.cu merges them */
    bc = *bc0;
    int64_t *st2[2] = {bc.sa, bc.sb};
    dims_merge(&bc.rank, bc.dim, st2, 2, true);
  }
  bool v8 = bc0 && bc.rank >= 1 && bc.dim[bc.rank - 1] % 8 == 0 &&
            aligned16(o) && vec16_operand(a, bc.sa, bc.rank, 8) &&
            vec16_operand(b, bc.sb, bc.rank, 8);
  if (!bc0 && n % per == 0 && aligned16(a) && aligned16(b) && aligned16(o))
    k_binary_v<T><<<blocks_for(n / per), kThreads, 0, s>>>(
        op, (const uint4 *)a, (const uint4 *)b, (uint4 *)o, n / per, relu);
  else if (v8 && fits32(n))
    k_binary_bv8<T, int32_t><<<blocks_for(n / 8), kThreads, 0, s>>>(
        op, (const T *)a, (const T *)b, (T *)o, (int32_t)(n / 8), bc, relu);
  else if (v8)
    k_binary_bv8<T, int64_t><<<blocks_for(n / 8), kThreads, 0, s>>>(
        op, (const T *)a, (const T *)b, (T *)o, n / 8, bc, relu);
  else
    k_binary_h<T><<<blocks_for(n), kThreads, 0, s>>>(
        op, (const T *)a, (const T *)b, (T *)o, n, bc, relu);
  return cudaGetLastError();
}

} // namespace

extern "C" {

size_t cxk_dt_size(int dt) { return dt == CXK_F32 ? 4 : 2; }

cudaError_t cxk_convert(cudaStream_t s, const void *x, int sdt, void *y,
                        int ddt, int64_t n) {
  if (n <= 0)
    return cudaSuccess;
  if (sdt == CXK_F16)
    return convert_from(s, (const __half *)x, y, ddt, n);
  if (sdt == CXK_BF16)
    return convert_from(s, (const __nv_bfloat16 *)x, y, ddt, n);
  return convert_from(s, (const float *)x, y, ddt, n);
}

cudaError_t cxk_unary_dt(cudaStream_t s, int dt, int fn, const void *x, void *y,
                         int64_t n, float lo, float hi) {
  if (n <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    return unary_t<__half>(s, fn, x, y, n, lo, hi);
  if (dt == CXK_BF16)
    return unary_t<__nv_bfloat16>(s, fn, x, y, n, lo, hi);
  return cxk_unary(s, fn, (const float *)x, (float *)y, n, lo, hi);
}

cudaError_t cxk_gather_dt(cudaStream_t s, int dt, const void *x,
                          const float *idx, void *y, int64_t outer,
                          int64_t nidx, int64_t dim, int64_t inner) {
  int64_t n = outer * nidx * inner;
  if (n <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    k_gather_h<<<blocks_for(n), kThreads, 0, s>>>(
        (const __half *)x, idx, (__half *)y, n, nidx, dim, inner);
  else if (dt == CXK_BF16)
    k_gather_h<<<blocks_for(n), kThreads, 0, s>>>(
        (const __nv_bfloat16 *)x, idx, (__nv_bfloat16 *)y, n, nidx, dim, inner);
  else if (inner % 4 == 0 && fits32(n) && fits32(outer * dim * inner) &&
           aligned16(x) && aligned16(y))
    k_gather4<<<blocks_for(n / 4), kThreads, 0, s>>>(
        (const float4 *)x, idx, (float4 *)y, (int32_t)(n / 4), (int32_t)nidx,
        (int32_t)dim, (int32_t)(inner / 4));
  else
    k_gather_h<<<blocks_for(n), kThreads, 0, s>>>(
        (const float *)x, idx, (float *)y, n, nidx, dim, inner);
  return cudaGetLastError();
}

cudaError_t cxk_gather(cudaStream_t s, const float *x, const float *idx,
                       float *y, int64_t outer, int64_t nidx, int64_t dim,
                       int64_t inner) {
  return cxk_gather_dt(s, CXK_F32, x, idx, y, outer, nidx, dim, inner);
}

cudaError_t cxk_binary_dt(cudaStream_t s, int dt, int op, const void *a,
                          const void *b, void *o, int64_t n,
                          const cxk_bcast *bc, int relu) {
  if (n <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    return binary_t<__half>(s, op, a, b, o, n, bc, relu);
  if (dt == CXK_BF16)
    return binary_t<__nv_bfloat16>(s, op, a, b, o, n, bc, relu);
  return cxk_binary(s, op, (const float *)a, (const float *)b, (float *)o, n,
                    bc, relu);
}

cudaError_t cxk_bias_res_act_dt(cudaStream_t s, int dt, void *y,
                                const void *bias, const void *res, int64_t n,
                                int64_t c, int64_t inner, int act, float lo,
                                float hi, int rmode, int64_t h, int64_t w) {
  unsigned b = blocks_for(n);
  if (n <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    k_bias_res_act_h<<<b, kThreads, 0, s>>>((__half *)y, (const __half *)bias,
                                            (const __half *)res, n, c, inner,
                                            act, lo, hi, rmode, h, w);
  else if (dt == CXK_BF16)
    k_bias_res_act_h<<<b, kThreads, 0, s>>>(
        (__nv_bfloat16 *)y, (const __nv_bfloat16 *)bias,
        (const __nv_bfloat16 *)res, n, c, inner, act, lo, hi, rmode, h, w);
  else
    return cudaErrorInvalidValue; /* float32: kew.cu's cxk_bias_res_act */
  return cudaGetLastError();
}

cudaError_t cxk_fill_dt(cudaStream_t s, int dt, void *y, int64_t n, float v) {
  if (n <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    k_fill_h<<<blocks_for(n), kThreads, 0, s>>>((__half *)y, n, v);
  else if (dt == CXK_BF16)
    k_fill_h<<<blocks_for(n), kThreads, 0, s>>>((__nv_bfloat16 *)y, n, v);
  else
    return cxk_fill(s, (float *)y, n, v);
  return cudaGetLastError();
}

} // extern "C"
