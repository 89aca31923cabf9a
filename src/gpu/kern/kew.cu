/* kew.cu: the CUDA executor's element-wise kernels: unary maps and
 * activations, a bias with an activation (and a residual) over a
 * convolution's or matmul's output, broadcast binaries, where, batch
 * norm and constants (fill, identity filter, eye); gather is khalf.cu's
 * template on any element type.
 *
 * Memory-bound and simple by design: grid-stride loops, one thread per
 * output element. Every formula follows the CPU reference
 * (src/exec/ref_*.c).
 */
#include <math.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

__global__ void k_unary(int fn, const float *x, float *y, int64_t n, float lo,
                        float hi) {
  GRID_LOOP(i, n) { y[i] = act_fn(fn, x ? x[i] : 0.0f, lo, hi); }
}

__global__ void k_unary4(int fn, const float4 *x, float4 *y, int64_t n4,
                         float lo, float hi) {
  GRID_LOOP(i, n4) {
    float4 v = x[i];
    v.x = act_fn(fn, v.x, lo, hi), v.y = act_fn(fn, v.y, lo, hi);
    v.z = act_fn(fn, v.z, lo, hi), v.w = act_fn(fn, v.w, lo, hi);
    y[i] = v;
  }
}

/* y[i] = act(y[i] + bias[(i / inner) % c]) for small inner. */
template <typename I>
__global__ void k_bias_act(float *y, const float *bias, I n, I c, I inner,
                           int act, float lo, float hi) {
  GRID_LOOP_T(I, i, n) {
    float v = y[i];
    if (bias)
      v += bias[(i / inner) % c];
    y[i] = act_fn(act, v, lo, hi);
  }
}

/* The same four elements at a time (inner a multiple of 4, n4 = n / 4). */
template <typename I>
__global__ void k_bias_act4(float4 *y, const float *bias, I n4, I c, I inner4,
                            int act, float lo, float hi) {
  GRID_LOOP_T(I, i, n4) {
    float4 v = y[i];
    float b = bias ? bias[(i / inner4) % c] : 0.0f;
    v.x = act_fn(act, v.x + b, lo, hi);
    v.y = act_fn(act, v.y + b, lo, hi);
    v.z = act_fn(act, v.z + b, lo, hi);
    v.w = act_fn(act, v.w + b, lo, hi);
    y[i] = v;
  }
}

/* Residual epilogue: y[i] = act(y[i] + bias[(i / inner) % c] + res[i]) with
 * res in y's layout, four elements at a time: inner a multiple of 4 (NCHW:
 * one channel per float4), or inner 1 and c a multiple of 4 (NHWC: four
 * consecutive channels). The sum is taken in the unfused order: (conv +
 * bias) + residual. */
template <typename I>
__global__ void k_bias_res_act4(float4 *y, const float *bias, const float4 *res,
                                I n4, I c, I inner, int act, float lo,
                                float hi) {
  GRID_LOOP_T(I, i, n4) {
    float4 v = y[i];
    I ch = (i * 4 / inner) % c;
    float b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
    if (bias && inner == 1) {
      b0 = bias[ch], b1 = bias[ch + 1], b2 = bias[ch + 2], b3 = bias[ch + 3];
    } else if (bias) {
      b0 = b1 = b2 = b3 = bias[ch];
    }
    float4 r = res ? res[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (res) {
      v.x = (v.x + b0) + r.x, v.y = (v.y + b1) + r.y;
      v.z = (v.z + b2) + r.z, v.w = (v.w + b3) + r.w;
    } else {
      v.x += b0, v.y += b1, v.z += b2, v.w += b3;
    }
    v.x = act_fn(act, v.x, lo, hi);
    v.y = act_fn(act, v.y, lo, hi);
    v.z = act_fn(act, v.z, lo, hi);
    v.w = act_fn(act, v.w, lo, hi);
    y[i] = v;
  }
}

/* One element at a time; rmode 0: res in y's layout; 1: y NHWC, res NCHW;
 * 2: y NCHW, res NHWC (rank-4 y of dims (nb, c, h, w)). */
template <typename I>
__global__ void k_bias_res_act(float *y, const float *bias, const float *res,
                               I n, I c, I inner, int act, float lo, float hi,
                               int rmode, I h, I w) {
  GRID_LOOP_T(I, i, n) {
    float v = y[i];
    if (bias)
      v += bias[(i / inner) % c];
    if (res) {
      I j = i;
      if (rmode == 1) { /* i = ((b*h + y)*w + x)*c + ch */
        I ch = i % c, x = (i / c) % w, yy = (i / (c * w)) % h,
          b = i / (c * w * h);
        j = ((b * c + ch) * h + yy) * w + x;
      } else if (rmode == 2) { /* i = ((b*c + ch)*h + y)*w + x */
        I x = i % w, yy = (i / w) % h, ch = (i / (w * h)) % c,
          b = i / (w * h * c);
        j = ((b * h + yy) * w + x) * c + ch;
      }
      v += res[j];
    }
    y[i] = act_fn(act, v, lo, hi);
  }
}

__global__ void k_fill(float *y, int64_t n, float v) {
  GRID_LOOP(i, n) { y[i] = v; }
}

__device__ __forceinline__ float bin_fn(int op, float a, float b) {
  switch (op) {
  case CXK_ADD: return a + b;
  case CXK_SUB: return a - b;
  case CXK_MUL: return a * b;
  case CXK_EQ: return a == b ? 1.0f : 0.0f;
  default: return a / b;
  }
}

__device__ __forceinline__ float relu_if(int relu, float v) {
  return relu ? (v > 0.0f ? v : 0.0f) : v;
}

__global__ void k_binary_flat(int op, const float *a, const float *b, float *o,
                              int64_t n, int relu) {
  GRID_LOOP(i, n) { o[i] = relu_if(relu, bin_fn(op, a[i], b[i])); }
}

__global__ void k_binary_flat4(int op, const float4 *a, const float4 *b,
                               float4 *o, int64_t n4, int relu) {
  GRID_LOOP(i, n4) {
    float4 x = a[i], y = b[i];
    x.x = relu_if(relu, bin_fn(op, x.x, y.x));
    x.y = relu_if(relu, bin_fn(op, x.y, y.y));
    x.z = relu_if(relu, bin_fn(op, x.z, y.z));
    x.w = relu_if(relu, bin_fn(op, x.w, y.w));
    o[i] = x;
  }
}

/* b a single value broadcast over a (smul, bias-like scalars). */
__global__ void k_binary_scalar(int op, const float *a, const float *b,
                                float *o, int64_t n, int relu) {
  float bv = *b;
  GRID_LOOP(i, n) { o[i] = relu_if(relu, bin_fn(op, a[i], bv)); }
}

template <typename I>
__global__ void k_binary_bcast(int op, const float *a, const float *b, float *o,
                               I n, const __grid_constant__ cxk_bcast bc,
                               int relu) {
  GRID_LOOP_T(I, i, n) {
    I rem = i, oa = 0, ob = 0;
    for (int d = bc.rank - 1; d >= 0; d--) {
      I c = rem % (I)bc.dim[d];
      rem /= (I)bc.dim[d];
      oa += c * (I)bc.sa[d];
      ob += c * (I)bc.sb[d];
    }
    o[i] = relu_if(relu, bin_fn(op, a[oa], b[ob]));
  }
}

/* Broadcast binary, four output elements a thread along the innermost
 * dimension (its length a multiple of 4, counted in 4s in bc.dim); an
 * operand of inner stride 1 is read as float4, one of stride 0 as one
 * value. */
template <typename I>
__global__ void
k_binary_bcast4(int op, const float *a, const float *b, float4 *o, I n4,
                const __grid_constant__ cxk_bcast bc, int relu) {
  int L = bc.rank - 1;
  GRID_LOOP_T(I, i, n4) {
    I rem = i / (I)bc.dim[L], c = i % (I)bc.dim[L];
    I oa = c * 4 * (I)bc.sa[L], ob = c * 4 * (I)bc.sb[L];
    for (int d = L - 1; d >= 0; d--) {
      I q = rem % (I)bc.dim[d];
      rem /= (I)bc.dim[d];
      oa += q * (I)bc.sa[d];
      ob += q * (I)bc.sb[d];
    }
    float4 x = bc.sa[L] ? *(const float4 *)(a + oa)
                        : make_float4(a[oa], a[oa], a[oa], a[oa]);
    float4 y = bc.sb[L] ? *(const float4 *)(b + ob)
                        : make_float4(b[ob], b[ob], b[ob], b[ob]);
    x.x = relu_if(relu, bin_fn(op, x.x, y.x));
    x.y = relu_if(relu, bin_fn(op, x.y, y.y));
    x.z = relu_if(relu, bin_fn(op, x.z, y.z));
    x.w = relu_if(relu, bin_fn(op, x.w, y.w));
    o[i] = x;
  }
}

__device__ __forceinline__ float bn_fn(float x, const float *scale,
                                       const float *bias, const float *mean,
                                       const float *var, int64_t ch, float eps,
                                       int relu) {
  return relu_if(relu,
                 (x - mean[ch]) / sqrtf(var[ch] + eps) * scale[ch] + bias[ch]);
}

/* Batch norm, elements of a channel `inner` apart in runs; VEC = 4 loads
 * and stores float4 (inner a multiple of 4, n and inner counted in 4s). */
template <typename I, int VEC>
__global__ void k_batchnorm(const float *x, const float *scale,
                            const float *bias, const float *mean,
                            const float *var, float *y, I n, I c, I inner,
                            float eps, int relu) {
  GRID_LOOP_T(I, i, n) {
    I ch = (i / inner) % c;
    if (VEC == 4) {
      float4 v = ((const float4 *)x)[i];
      v.x = bn_fn(v.x, scale, bias, mean, var, ch, eps, relu);
      v.y = bn_fn(v.y, scale, bias, mean, var, ch, eps, relu);
      v.z = bn_fn(v.z, scale, bias, mean, var, ch, eps, relu);
      v.w = bn_fn(v.w, scale, bias, mean, var, ch, eps, relu);
      ((float4 *)y)[i] = v;
    } else {
      y[i] = bn_fn(x[i], scale, bias, mean, var, ch, eps, relu);
    }
  }
}

/* Batch norm on half elements T (docs/half.md: statistics and parameters
 * read as float32, one rounding at the store); VEC = 8 loads and stores 16
 * bytes (inner a multiple of 8, n and inner counted in 8s). */
template <typename I, int VEC, typename T>
__global__ void k_batchnorm_h(const T *x, const T *scale, const T *bias,
                              const T *mean, const T *var, T *y, I n, I c,
                              I inner, float eps, int relu) {
  GRID_LOOP_T(I, i, n) {
    I ch = (i / inner) % c;
    float m = ld(mean[ch]), b = ld(bias[ch]), k = ld(scale[ch]);
    float r = sqrtf(ld(var[ch]) + eps); /* bn_fn's formula */
    if (VEC == 8) {
      union {
        uint4 u;
        T e[8];
      } v;
      v.u = ((const uint4 *)x)[i];
#pragma unroll
      for (int j = 0; j < 8; j++)
        v.e[j] = st<T>(relu_if(relu, (ld(v.e[j]) - m) / r * k + b));
      ((uint4 *)y)[i] = v.u;
    } else {
      y[i] = st<T>(relu_if(relu, (ld(x[i]) - m) / r * k + b));
    }
  }
}

template <typename T>
void batchnorm_h(cudaStream_t s, const void *x, const void *const *p, void *y,
                 int64_t n, int64_t c, int64_t inner, float eps, int relu) {
  const T *sc = (const T *)p[0], *bi = (const T *)p[1], *mu = (const T *)p[2],
          *va = (const T *)p[3];
  if (inner % 8 == 0 && fits32(n) && aligned16(x) && aligned16(y))
    k_batchnorm_h<int32_t, 8, T><<<blocks_for(n / 8), kThreads, 0, s>>>(
        (const T *)x, sc, bi, mu, va, (T *)y, (int32_t)(n / 8), (int32_t)c,
        (int32_t)(inner / 8), eps, relu);
  else if (fits32(n))
    k_batchnorm_h<int32_t, 1, T><<<blocks_for(n), kThreads, 0, s>>>(
        (const T *)x, sc, bi, mu, va, (T *)y, (int32_t)n, (int32_t)c,
        (int32_t)inner, eps, relu);
  else
    k_batchnorm_h<int64_t, 1, T><<<blocks_for(n), kThreads, 0, s>>>(
        (const T *)x, sc, bi, mu, va, (T *)y, n, c, inner, eps, relu);
}

__global__ void k_iconv(float *y, int64_t n, int64_t ci, int64_t kh,
                        int64_t kw) {
  GRID_LOOP(i, n) {
    int64_t x = i % kw, r = i / kw, yy = r % kh, q = r / kh;
    int64_t in = q % ci, o = q / ci;
    y[i] = (in == o % ci && yy == kh / 2 && x == kw / 2) ? 1.0f : 0.0f;
  }
}

__global__ void k_eye(float *y, int64_t n, int64_t d) {
  GRID_LOOP(i, n) { y[i] = (i / d == i % d) ? 1.0f : 0.0f; }
}

__global__ void k_where(const float *c, const float *a, const float *b,
                        float *o, int64_t n,
                        const __grid_constant__ cxk_where_args w) {
  GRID_LOOP(i, n) {
    int64_t rem = i, oc = 0, oa = 0, ob = 0;
    for (int d = w.rank - 1; d >= 0; d--) {
      int64_t k = rem % w.dim[d];
      rem /= w.dim[d];
      oc += k * w.sc[d], oa += k * w.sa[d], ob += k * w.sb[d];
    }
    o[i] = c[oc] != 0.0f ? a[oa] : b[ob];
  }
}

/* where with each operand contiguous or broadcast along the last
 * dimension (stride 1 or 0 there; T5's position bias [1,H,S,S] under its
 * padding mask [B,1,S,S], the other value a scalar): four outputs of one
 * row a thread, 32-bit index arithmetic once for the four (the generic
 * kernel's 64-bit divisions per element took T5's b16 where 23 us,
 * 2026-12-01). */
__global__ void k_where_row4(const float *c, const float *a, const float *b,
                             float4 *o, int32_t n4,
                             const __grid_constant__ cxk_where_args w) {
  int r = w.rank;
  int32_t lc = (int32_t)w.sc[r - 1], la = (int32_t)w.sa[r - 1],
          lb = (int32_t)w.sb[r - 1];
  GRID_LOOP_T(int32_t, i, n4) {
    int32_t rem = i * 4, oc = 0, oa = 0, ob = 0;
    for (int d = r - 1; d >= 0; d--) {
      int32_t dd = (int32_t)w.dim[d], k = rem % dd;
      rem /= dd;
      oc += k * (int32_t)w.sc[d], oa += k * (int32_t)w.sa[d],
          ob += k * (int32_t)w.sb[d];
    }
    float v[4];
    for (int j = 0; j < 4; j++)
      v[j] = c[oc + j * lc] != 0.0f ? a[oa + j * la] : b[ob + j * lb];
    o[i] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

/* where with scalar a and b and c laid out like the output (BERT's mask,
 * masked_fill's form): four elements a thread, no index arithmetic */
__global__ void k_where_scalar4(const float4 *c, const float *a, const float *b,
                                float4 *o, int64_t n4) {
  float va = *a, vb = *b;
  GRID_LOOP(i, n4) {
    float4 x = c[i];
    o[i] = make_float4(x.x != 0.0f ? va : vb, x.y != 0.0f ? va : vb,
                       x.z != 0.0f ? va : vb, x.w != 0.0f ? va : vb);
  }
}

/* Whether strides s over dims dim (rank r) lay an operand out like the
 * output (contiguous; size-1 dimensions aside). */
static int like_out(const int64_t *dim, const int64_t *s, int r) {
  int64_t st = 1;
  for (int d = r - 1; d >= 0; d--) {
    if (dim[d] != 1 && s[d] != st)
      return 0;
    st *= dim[d];
  }
  return 1;
}

/* Whether strides s (rank r) step 0 or 1 along the last dimension. */
static int row_step(const int64_t *s, int r) {
  return s[r - 1] == 0 || s[r - 1] == 1;
}

/* Whether strides s (rank r) make an operand a single value. */
static int one_value(const int64_t *s, int r) {
  for (int d = 0; d < r; d++)
    if (s[d])
      return 0;
  return 1;
}

} // namespace

extern "C" {

cudaError_t cxk_unary(cudaStream_t s, int fn, const float *x, float *y,
                      int64_t n, float lo, float hi) {
  if (x && n % 4 == 0 && aligned16(x) && aligned16(y))
    k_unary4<<<blocks_for(n / 4), kThreads, 0, s>>>(fn, (const float4 *)x,
                                                    (float4 *)y, n / 4, lo, hi);
  else
    k_unary<<<blocks_for(n), kThreads, 0, s>>>(fn, x, y, n, lo, hi);
  return cudaGetLastError();
}

cudaError_t cxk_bias_act(cudaStream_t s, float *y, const float *bias, int64_t n,
                         int64_t c, int64_t inner, int act, float lo,
                         float hi) {
  if (inner == 1 && c % 4 == 0 && c > 1) /* channels-last: float4 too */
    return cxk_bias_res_act(s, y, bias, NULL, n, c, inner, act, lo, hi, 0, 1,
                            1);
  if (inner % 4 == 0 && fits32(n))
    k_bias_act4<int32_t><<<blocks_for(n / 4), kThreads, 0, s>>>(
        (float4 *)y, bias, (int32_t)(n / 4), (int32_t)c, (int32_t)(inner / 4),
        act, lo, hi);
  else if (fits32(n))
    k_bias_act<int32_t><<<blocks_for(n), kThreads, 0, s>>>(
        y, bias, (int32_t)n, (int32_t)c, (int32_t)inner, act, lo, hi);
  else
    k_bias_act<int64_t>
        <<<blocks_for(n), kThreads, 0, s>>>(y, bias, n, c, inner, act, lo, hi);
  return cudaGetLastError();
}

cudaError_t cxk_where(cudaStream_t s, const float *c, const float *a,
                      const float *b, float *o, int64_t n,
                      const cxk_where_args *w) {
  if (n % 4 == 0 && aligned16(c) && aligned16(o) && one_value(w->sa, w->rank) &&
      one_value(w->sb, w->rank) && like_out(w->dim, w->sc, w->rank))
    k_where_scalar4<<<blocks_for(n / 4), kThreads, 0, s>>>(
        (const float4 *)c, a, b, (float4 *)o, n / 4);
  else if (w->rank >= 1 && w->dim[w->rank - 1] % 4 == 0 && fits32(n) &&
           aligned16(o) && row_step(w->sc, w->rank) &&
           row_step(w->sa, w->rank) && row_step(w->sb, w->rank))
    k_where_row4<<<blocks_for(n / 4), kThreads, 0, s>>>(c, a, b, (float4 *)o,
                                                        (int32_t)(n / 4), *w);
  else
    k_where<<<blocks_for(n), kThreads, 0, s>>>(c, a, b, o, n, *w);
  return cudaGetLastError();
}

cudaError_t cxk_bias_res_act(cudaStream_t s, float *y, const float *bias,
                             const float *res, int64_t n, int64_t c,
                             int64_t inner, int act, float lo, float hi,
                             int rmode, int64_t h, int64_t w) {
  int vec = rmode == 0 && (inner % 4 == 0 || (inner == 1 && c % 4 == 0)) &&
            n % 4 == 0 && ((uintptr_t)y & 15) == 0 &&
            ((uintptr_t)res & 15) == 0;
  if (vec && fits32(n))
    k_bias_res_act4<int32_t><<<blocks_for(n / 4), kThreads, 0, s>>>(
        (float4 *)y, bias, (const float4 *)res, (int32_t)(n / 4), (int32_t)c,
        (int32_t)inner, act, lo, hi);
  else if (vec)
    k_bias_res_act4<int64_t><<<blocks_for(n / 4), kThreads, 0, s>>>(
        (float4 *)y, bias, (const float4 *)res, n / 4, c, inner, act, lo, hi);
  else if (fits32(n))
    k_bias_res_act<int32_t><<<blocks_for(n), kThreads, 0, s>>>(
        y, bias, res, (int32_t)n, (int32_t)c, (int32_t)inner, act, lo, hi,
        rmode, (int32_t)h, (int32_t)w);
  else
    k_bias_res_act<int64_t><<<blocks_for(n), kThreads, 0, s>>>(
        y, bias, res, n, c, inner, act, lo, hi, rmode, h, w);
  return cudaGetLastError();
}

cudaError_t cxk_fill(cudaStream_t s, float *y, int64_t n, float v) {
  k_fill<<<blocks_for(n), kThreads, 0, s>>>(y, n, v);
  return cudaGetLastError();
}

/* Drops size-1 dimensions and merges neighbours along which both operands
 * are contiguous or both broadcast (the output is contiguous). */
static void bcast_simplify(cxk_bcast *bc) {
  int64_t *st[2] = {bc->sa, bc->sb};
  dims_merge(&bc->rank, bc->dim, st, 2, true);
}

cudaError_t cxk_binary(cudaStream_t s, int op, const float *a, const float *b,
                       float *o, int64_t n, const cxk_bcast *bc0, int relu) {
  cxk_bcast bcv, *bc = NULL;
  if (bc0) {
    bcv = *bc0;
    bcast_simplify(&bcv);
    bc = &bcv;
  }
  /* b one value, a laid out like o */
  int scalar_b =
      bc && one_value(bc->sb, bc->rank) && like_out(bc->dim, bc->sa, bc->rank);
  int L = bc ? bc->rank - 1 : 0;
  if (!bc && n % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(o))
    k_binary_flat4<<<blocks_for(n / 4), kThreads, 0, s>>>(
        op, (const float4 *)a, (const float4 *)b, (float4 *)o, n / 4, relu);
  else if (!bc)
    k_binary_flat<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, o, n, relu);
  else if (scalar_b)
    k_binary_scalar<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, o, n, relu);
  else if (bc->dim[L] % 4 == 0 && aligned16(o) &&
           vec16_operand(a, bc->sa, bc->rank, 4) &&
           vec16_operand(b, bc->sb, bc->rank, 4) && fits32(n)) {
    bc->dim[L] /= 4;
    k_binary_bcast4<int32_t><<<blocks_for(n / 4), kThreads, 0, s>>>(
        op, a, b, (float4 *)o, (int32_t)(n / 4), *bc, relu);
  } else if (fits32(n))
    k_binary_bcast<int32_t>
        <<<blocks_for(n), kThreads, 0, s>>>(op, a, b, o, (int32_t)n, *bc, relu);
  else
    k_binary_bcast<int64_t>
        <<<blocks_for(n), kThreads, 0, s>>>(op, a, b, o, n, *bc, relu);
  return cudaGetLastError();
}

cudaError_t cxk_batchnorm(cudaStream_t s, const float *x, const float *scale,
                          const float *bias, const float *mean,
                          const float *var, float *y, int64_t n, int64_t c,
                          int64_t inner, float eps, int relu) {
  if (inner % 4 == 0 && fits32(n))
    k_batchnorm<int32_t, 4><<<blocks_for(n / 4), kThreads, 0, s>>>(
        x, scale, bias, mean, var, y, (int32_t)(n / 4), (int32_t)c,
        (int32_t)(inner / 4), eps, relu);
  else if (fits32(n))
    k_batchnorm<int32_t, 1><<<blocks_for(n), kThreads, 0, s>>>(
        x, scale, bias, mean, var, y, (int32_t)n, (int32_t)c, (int32_t)inner,
        eps, relu);
  else
    k_batchnorm<int64_t, 1><<<blocks_for(n), kThreads, 0, s>>>(
        x, scale, bias, mean, var, y, n, c, inner, eps, relu);
  return cudaGetLastError();
}

cudaError_t cxk_batchnorm_dt(cudaStream_t s, int dt, const void *x,
                             const void *const *p, void *y, int64_t n,
                             int64_t c, int64_t inner, float eps, int relu) {
  if (n <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    batchnorm_h<__half>(s, x, p, y, n, c, inner, eps, relu);
  else if (dt == CXK_BF16)
    batchnorm_h<__nv_bfloat16>(s, x, p, y, n, c, inner, eps, relu);
  else
    return cxk_batchnorm(s, (const float *)x, (const float *)p[0],
                         (const float *)p[1], (const float *)p[2],
                         (const float *)p[3], (float *)y, n, c, inner, eps,
                         relu);
  return cudaGetLastError();
}

cudaError_t cxk_iconv(cudaStream_t s, float *y, int64_t o, int64_t i,
                      int64_t kh, int64_t kw) {
  int64_t n = o * i * kh * kw;
  k_iconv<<<blocks_for(n), kThreads, 0, s>>>(y, n, i, kh, kw);
  return cudaGetLastError();
}

cudaError_t cxk_eye(cudaStream_t s, float *y, int64_t n) {
  k_eye<<<blocks_for(n * n), kThreads, 0, s>>>(y, n * n, n);
  return cudaGetLastError();
}

} // extern "C"
