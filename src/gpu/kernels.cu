/* kernels.cu: the CUDA executor's own kernels: element-wise maps and
 * activations, broadcast binaries, strided copies (concat, split, slice,
 * transpose), padding (pad, enlarge, asymmetric conv padding), batch norm,
 * pooling, reductions, softmax, layer norm and constants.
 *
 * Memory-bound and simple by design: grid-stride loops, one thread per
 * output element, except the row reductions (softmax, layernorm, reduce),
 * which give each row one warp or block and reduce with shuffles. Every
 * formula follows the CPU reference (src/exec/ref_*.c).
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

/* Padding with rows of at least 32 (the last output dimension): a warp a
 * row, the row's source offset found once, not per element (k_pad's
 * divisions made NASNet-A's padding compute-bound: 50 us for 13M floats on
 * an H200). */
__global__ void k_pad_rows(const float *x, float *y, int rows,
                           const __grid_constant__ cxk_pad p) {
  int L = p.rank - 1, lane = threadIdx.x % 32;
  int ol = (int)p.odim[L], il = (int)p.idim[L], bl = (int)p.before[L];
  int sl = (int)p.ist[L];
  int nw = (int)(gridDim.x * blockDim.x / 32);
  for (int r = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32); r < rows;
       r += nw) {
    int rem = r, off = 0;
    bool inside = true;
    for (int d = L - 1; d >= 0; d--) {
      int od = (int)p.odim[d], q = rem % od, s = q - (int)p.before[d];
      rem /= od;
      inside = inside && s >= 0 && s < (int)p.idim[d];
      off += inside ? s * (int)p.ist[d] : 0;
    }
    float *yr = y + (size_t)r * ol;
    for (int q = lane; q < ol; q += 32) {
      int s = q - bl;
      yr[q] = inside && s >= 0 && s < il ? x[off + s * sl] : p.value;
    }
  }
}

template <typename I>
__global__ void k_pad(const float *x, float *y, I n,
                      const __grid_constant__ cxk_pad p) {
  GRID_LOOP_T(I, i, n) {
    I rem = i, off = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; d--) {
      I od = (I)p.odim[d], id = (I)p.idim[d];
      I q = rem % od;
      rem /= od;
      bool in_d = q >= (I)p.before[d] && q - (I)p.before[d] < id;
      inside = inside && in_d;
      off += (in_d ? q - (I)p.before[d] : 0) * (I)p.ist[d];
    }
    y[i] = inside ? x[off] : p.value;
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

/* K: the window's height and width when known when compiling (3: fully
 * unrolled, so the nine loads are in flight together instead of one after
 * another; a pooling node is latency-bound), 0: p.kh x p.kw. */
template <typename I, int K>
__global__ void k_pool(const float *x, float *y, I n,
                       const __grid_constant__ cxk_pool p) {
  GRID_LOOP_T(I, i, n) {
    I ow = (I)p.ow, oh = (I)p.oh, c = (I)p.c;
    /* NCHW: plane = n * C + c, one plane of h * w; NHWC: element (y, x) of
       image n, channel ch at ((n * h + y) * w + x) * C + ch */
    I ox, oy, plane, ch = 0, cs = 1;
    if (p.cl) {
      ch = i % c;
      ox = (i / c) % ow;
      oy = (i / (c * ow)) % oh;
      plane = i / (c * ow * oh);
      cs = c;
    } else {
      ox = i % ow;
      oy = (i / ow) % oh;
      plane = i / (ow * oh);
    }
    const float *xp = x + (int64_t)plane * p.h * p.w * cs + ch;
    int y0 = (int)oy * p.sh - p.pt, x0 = (int)ox * p.sw - p.pl;
    int h = (int)p.h, w = (int)p.w;
    float best = -INFINITY, sum = 0.0f;
    int cnt = 0;
    const int kh = K ? K : p.kh, kw = K ? K : p.kw;
#pragma unroll
    for (int ky = 0; ky < kh; ky++) {
      int yy = y0 + ky;
      if (yy < 0 || yy >= h)
        continue;
#pragma unroll
      for (int kx = 0; kx < kw; kx++) {
        int xx = x0 + kx;
        if (xx < 0 || xx >= w)
          continue;
        float v = xp[(int64_t)(yy * w + xx) * cs];
        best = v > best ? v : best;
        sum += v;
        cnt++;
      }
    }
    int div = p.count_include_pad ? kh * kw : cnt;
    y[i] = p.is_max ? best : sum / (float)div;
  }
}

/* Channels-last pooling, four channels a thread (C a multiple of 4, p.c
 * counted in 4s); K as for k_pool. */
template <typename I, int K>
__global__ void k_pool_cl4(const float4 *x, float4 *y, I n,
                           const __grid_constant__ cxk_pool p) {
  GRID_LOOP_T(I, i, n) {
    I c = (I)p.c, ow = (I)p.ow, oh = (I)p.oh;
    I ch = i % c, ox = (i / c) % ow, oy = (i / (c * ow)) % oh;
    I img = i / (c * ow * oh);
    const float4 *xp = x + (int64_t)img * p.h * p.w * c + ch;
    int y0 = (int)oy * p.sh - p.pt, x0 = (int)ox * p.sw - p.pl;
    int h = (int)p.h, w = (int)p.w;
    float4 best = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    int cnt = 0;
    const int kh = K ? K : p.kh, kw = K ? K : p.kw;
#pragma unroll
    for (int ky = 0; ky < kh; ky++) {
      int yy = y0 + ky;
      if (yy < 0 || yy >= h)
        continue;
#pragma unroll
      for (int kx = 0; kx < kw; kx++) {
        int xx = x0 + kx;
        if (xx < 0 || xx >= w)
          continue;
        float4 v = xp[(int64_t)(yy * w + xx) * c];
        best.x = v.x > best.x ? v.x : best.x;
        best.y = v.y > best.y ? v.y : best.y;
        best.z = v.z > best.z ? v.z : best.z;
        best.w = v.w > best.w ? v.w : best.w;
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
        cnt++;
      }
    }
    float div = (float)(p.count_include_pad ? kh * kw : cnt);
    y[i] = p.is_max ? best
                    : make_float4(sum.x / div, sum.y / div, sum.z / div,
                                  sum.w / div);
  }
}

/* One warp per output element. */
template <typename I>
__global__ void k_reduce_mean(const float *x, float *y,
                              const __grid_constant__ cxk_reduce r) {
  int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= r.nout)
    return;
  I rem = (I)warp, base = 0;
  for (int d = r.nkeep - 1; d >= 0; d--) {
    base += rem % (I)r.kdim[d] * (I)r.kst[d];
    rem /= (I)r.kdim[d];
  }
  float s = 0.0f;
  for (I e = lane; e < (I)r.count; e += 32) {
    I q = e, off = base;
    for (int d = r.nred - 1; d >= 0; d--) {
      off += q % (I)r.rdim[d] * (I)r.rst[d];
      q /= (I)r.rdim[d];
    }
    s += x[off];
  }
  s = warp_sum(s);
  if (lane == 0)
    y[warp] = s / (float)r.count;
}

/* Offset of output j's first input element over the kept dimensions. */
template <typename I>
__device__ __forceinline__ I kept_base(const cxk_reduce &r, I j, int nkeep) {
  I base = 0;
  for (int d = nkeep - 1; d >= 0; d--) {
    base += j % (I)r.kdim[d] * (I)r.kst[d];
    j /= (I)r.kdim[d];
  }
  return base;
}

/* Contiguous rows (one reduced dimension of stride 1): one warp a row. */
template <typename I>
__global__ void k_reduce_rows(const float *x, float *y,
                              const __grid_constant__ cxk_reduce r) {
  int64_t nw = (int64_t)gridDim.x * blockDim.x / 32;
  int lane = threadIdx.x % 32;
  for (int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
       warp < r.nout; warp += nw) {
    const float *xr = x + kept_base<I>(r, (I)warp, r.nkeep);
    float s = 0.0f;
    for (I e = lane; e < (I)r.count; e += 32)
      s += xr[e];
    s = warp_sum(s);
    if (lane == 0)
      y[warp] = s / (float)r.count;
  }
}

/* A strided reduced dimension (rst[0] apart) and a kept innermost
 * dimension of stride 1 (channels-last global_avgpool): threads x over 32
 * neighbouring outputs, y over rows; blockIdx.z takes one of gridDim.z
 * slices of the rows. With one slice the mean goes to y, else the slice's
 * sum to part[z * nout + j]. */
template <typename I>
__global__ void k_reduce_cols(const float *x, float *y, float *part,
                              const __grid_constant__ cxk_reduce r) {
  __shared__ float acc[8][33];
  I C = (I)r.kdim[r.nkeep - 1], c = (I)blockIdx.x * 32 + threadIdx.x;
  I outer = blockIdx.y, j = outer * C + c;
  I rows = (I)r.count, per = (rows + gridDim.z - 1) / gridDim.z;
  I r0 = (I)blockIdx.z * per, r1 = r0 + per < rows ? r0 + per : rows;
  float s = 0.0f;
  if (c < C) {
    const float *xp = x + kept_base<I>(r, outer, r.nkeep - 1) + c;
    for (I e = r0 + threadIdx.y; e < r1; e += blockDim.y)
      s += xp[e * (I)r.rst[0]];
  }
  acc[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int k = 1; k < (int)blockDim.y; k++)
      s += acc[k][threadIdx.x];
    if (gridDim.z == 1)
      y[j] = s / (float)r.count;
    else
      part[(I)blockIdx.z * (I)r.nout + j] = s;
  }
}

__global__ void k_reduce_parts(const float *part, float *y, int64_t nout,
                               int nparts, int64_t count) {
  GRID_LOOP(j, nout) {
    float s = 0.0f;
    for (int k = 0; k < nparts; k++)
      s += part[k * nout + j];
    y[j] = s / (float)count;
  }
}

/* Block-wide sum or max of v (blockDim.x a multiple of 32, <= 1024). */
__device__ float block_reduce(float v, bool is_max) {
  __shared__ float part[32];
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  v = is_max ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0)
    part[w] = v;
  __syncthreads();
  int nw = blockDim.x / 32;
  v = lane < nw ? part[lane] : (is_max ? -INFINITY : 0.0f);
  return is_max ? warp_max(v) : warp_sum(v);
}

/* Softmax along contiguous rows: one block per row. */
__global__ void k_softmax_rows(const float *x, float *y, int64_t len) {
  const float *xr = x + blockIdx.x * len;
  float *yr = y + blockIdx.x * len;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    mx = fmaxf(mx, xr[i]);
  mx = block_reduce(mx, true);
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    float e = expf(xr[i] - mx);
    yr[i] = e;
    s += e;
  }
  s = block_reduce(s, false);
  float inv = 1.0f / s;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    yr[i] *= inv;
}

/* Softmax along a strided axis: one thread per (outer, inner) line. */
__global__ void k_softmax_cols(const float *x, float *y, int64_t outer,
                               int64_t len, int64_t inner) {
  GRID_LOOP(l, outer * inner) {
    int64_t off = l / inner * len * inner + l % inner;
    float mx = -INFINITY, s = 0.0f;
    for (int64_t i = 0; i < len; i++)
      mx = fmaxf(mx, x[off + i * inner]);
    for (int64_t i = 0; i < len; i++) {
      float e = expf(x[off + i * inner] - mx);
      y[off + i * inner] = e;
      s += e;
    }
    for (int64_t i = 0; i < len; i++)
      y[off + i * inner] /= s;
  }
}

/* Layer norm: one block per row, two passes (mean, then variance); xb
 * (NULL: none) is added to every row as it is loaded (a convolution's
 * bias, moved here: ops.c). */
__global__ void k_layernorm(const float *x, const float *xb, const float *gamma,
                            const float *beta, float *y, int64_t len,
                            float eps) {
  const float *xr = x + blockIdx.x * len;
  float *yr = y + blockIdx.x * len;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    s += xr[i] + (xb ? xb[i] : 0.0f);
  float mean = block_reduce(s, false) / (float)len;
  float v = 0.0f;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    float d = xr[i] + (xb ? xb[i] : 0.0f) - mean;
    v += d * d;
  }
  float inv = rsqrtf(block_reduce(v, false) / (float)len + eps);
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    float o = (xr[i] + (xb ? xb[i] : 0.0f) - mean) * inv;
    if (gamma)
      o *= gamma[i];
    if (beta)
      o += beta[i];
    yr[i] = o;
  }
}

/* Layer norm of short rows (len <= 32 * NV): one warp a row, the row in
 * registers (NV values a lane), read once. */
template <int NV>
__global__ void k_layernorm_warp(const float *x, const float *xb,
                                 const float *gamma, const float *beta,
                                 float *y, int64_t rows, int len, float eps) {
  int64_t nw = (int64_t)gridDim.x * blockDim.x / 32;
  int lane = threadIdx.x % 32;
  for (int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
       row < rows; row += nw) {
    const float *xr = x + row * len;
    float *yr = y + row * len;
    float v[NV], s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      int i = lane + 32 * k;
      v[k] = i < len ? xr[i] + (xb ? xb[i] : 0.0f) : 0.0f;
      s += v[k];
    }
    float mean = warp_sum(s) / (float)len, q = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
      float d = v[k] - mean;
      q += lane + 32 * k < len ? d * d : 0.0f;
    }
    float inv = rsqrtf(warp_sum(q) / (float)len + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
      int i = lane + 32 * k;
      if (i < len) {
        float o = (v[k] - mean) * inv;
        if (gamma)
          o *= gamma[i];
        if (beta)
          o += beta[i];
        yr[i] = o;
      }
    }
  }
}

/* Layer norm of rows of len4 float4s (every pointer 16-byte aligned):
 * LANES lanes a row, NV float4s a lane in registers, read once.
 * scripts/micro-layernorm.cu (H200): BERT-base's 128 rows of 768 floats
 * 3.3 us against k_layernorm_warp's 7.1, its 2048 rows 4.2 against 8.0,
 * ConvNeXt-T's 49 to 50,176 rows of 96 to 768 floats 1.1-2.1x faster. */
template <int LANES, int NV>
__global__ void k_layernorm4(const float4 *x, const float4 *xb,
                             const float4 *gamma, const float4 *beta, float4 *y,
                             int rows, int len4, float eps) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  int row = t / LANES, lane = t % LANES;
  bool live = row < rows; /* dead groups stay for the shuffles */
  const float4 *xr = x + (size_t)(live ? row : 0) * len4;
  float4 v[NV];
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int i = lane + LANES * k;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (live && i < len4) {
      a = xr[i];
      if (xb) {
        float4 b = xb[i];
        a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
      }
    }
    v[k] = a;
    s += (a.x + a.y) + (a.z + a.w);
  }
  float len = 4.0f * (float)len4, mean = group_sum<LANES>(s) / len, q = 0.0f;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    float dx = v[k].x - mean, dy = v[k].y - mean, dz = v[k].z - mean,
          dw = v[k].w - mean;
    if (lane + LANES * k < len4)
      q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
  }
  float inv = rsqrtf(group_sum<LANES>(q) / len + eps);
  if (!live)
    return;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int i = lane + LANES * k;
    if (i < len4) {
      float4 g = gamma ? gamma[i] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
      float4 b = beta ? beta[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      float4 o = v[k];
      o.x = (o.x - mean) * inv * g.x + b.x;
      o.y = (o.y - mean) * inv * g.y + b.y;
      o.z = (o.z - mean) * inv * g.z + b.z;
      o.w = (o.w - mean) * inv * g.w + b.w;
      y[(size_t)row * len4 + i] = o;
    }
  }
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

__global__ void k_gather(const float *x, const float *idx, float *y, int64_t n,
                         int64_t nidx, int64_t dim, int64_t inner) {
  GRID_LOOP(i, n) {
    int64_t r = i % inner, k = i / inner % nidx, q = i / inner / nidx;
    float f = idx[k];
    int64_t j = (int64_t)f;
    j = j < 0 ? j + dim : j;
    y[i] = j >= 0 && j < dim ? x[(q * dim + j) * inner + r]
                             : __int_as_float(0x7fc00000);
  }
}

template <int LANES, int NV>
void launch_ln4(cudaStream_t s, const float *x, const float *xb,
                const float *gamma, const float *beta, float *y, int rows,
                int len4, float eps) {
  k_layernorm4<LANES, NV>
      <<<blocks_for((int64_t)rows * LANES), kThreads, 0, s>>>(
          (const float4 *)x, (const float4 *)xb, (const float4 *)gamma,
          (const float4 *)beta, (float4 *)y, rows, len4, eps);
}

/* The float4 layer norm where it applies (len a multiple of 4 up to 1024,
 * every pointer aligned, at most 2^23 rows: a thread a lane, no grid-stride
 * loop, and blocks_for's 2^20 blocks of 256): 32 lanes a row, or 8 for
 * short rows when there are many (50,176 rows of 96 floats: 8.0 us with
 * 8 lanes, 10.6 with 32; 3,136 rows: 2.6 and 2.3 us). false: not taken. */
bool layernorm4(cudaStream_t s, const float *x, const float *xb,
                const float *gamma, const float *beta, float *y, int64_t rows,
                int64_t len, float eps) {
  if (len % 4 || len > 1024 || rows > (1 << 23) || !aligned16(x) ||
      !aligned16(xb) || !aligned16(gamma) || !aligned16(beta) || !aligned16(y))
    return false;
  int r = (int)rows, l4 = (int)(len / 4);
  if (l4 <= 32 && l4 % 8 == 0 && rows > 8192) {
    switch (l4 / 8) {
    case 1: launch_ln4<8, 1>(s, x, xb, gamma, beta, y, r, l4, eps); break;
    case 2: launch_ln4<8, 2>(s, x, xb, gamma, beta, y, r, l4, eps); break;
    case 3: launch_ln4<8, 3>(s, x, xb, gamma, beta, y, r, l4, eps); break;
    default: launch_ln4<8, 4>(s, x, xb, gamma, beta, y, r, l4, eps); break;
    }
    return true;
  }
  switch ((l4 + 31) / 32) {
  case 1: launch_ln4<32, 1>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  case 2: launch_ln4<32, 2>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  case 3: launch_ln4<32, 3>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  case 4: launch_ln4<32, 4>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  case 5: launch_ln4<32, 5>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  case 6: launch_ln4<32, 6>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  case 7: launch_ln4<32, 7>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  default: launch_ln4<32, 8>(s, x, xb, gamma, beta, y, r, l4, eps); break;
  }
  return true;
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
  k_where<<<blocks_for(n), kThreads, 0, s>>>(c, a, b, o, n, *w);
  return cudaGetLastError();
}

cudaError_t cxk_gather(cudaStream_t s, const float *x, const float *idx,
                       float *y, int64_t outer, int64_t nidx, int64_t dim,
                       int64_t inner) {
  int64_t n = outer * nidx * inner;
  k_gather<<<blocks_for(n), kThreads, 0, s>>>(x, idx, y, n, nidx, dim, inner);
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

/* An operand of inner stride 1 must start rows on float4 boundaries. */
static bool vec4_operand(const float *x, const int64_t *st, int rank) {
  if (st[rank - 1] == 0)
    return true;
  if (st[rank - 1] != 1 || !aligned16(x))
    return false;
  for (int d = 0; d < rank - 1; d++)
    if (st[d] % 4)
      return false;
  return true;
}

cudaError_t cxk_binary(cudaStream_t s, int op, const float *a, const float *b,
                       float *o, int64_t n, const cxk_bcast *bc0, int relu) {
  cxk_bcast bcv, *bc = NULL;
  if (bc0) {
    bcv = *bc0;
    bcast_simplify(&bcv);
    bc = &bcv;
  }
  int scalar_b = bc != NULL; /* b one value, a laid out like o */
  int64_t st = 1;
  for (int d = bc ? bc->rank - 1 : -1; d >= 0; d--) {
    scalar_b &= bc->sb[d] == 0 && (bc->dim[d] == 1 || bc->sa[d] == st);
    st *= bc->dim[d];
  }
  int L = bc ? bc->rank - 1 : 0;
  if (!bc && n % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(o))
    k_binary_flat4<<<blocks_for(n / 4), kThreads, 0, s>>>(
        op, (const float4 *)a, (const float4 *)b, (float4 *)o, n / 4, relu);
  else if (!bc)
    k_binary_flat<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, o, n, relu);
  else if (scalar_b)
    k_binary_scalar<<<blocks_for(n), kThreads, 0, s>>>(op, a, b, o, n, relu);
  else if (bc->dim[L] % 4 == 0 && aligned16(o) &&
           vec4_operand(a, bc->sa, bc->rank) &&
           vec4_operand(b, bc->sb, bc->rank) && fits32(n)) {
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

cudaError_t cxk_pad_nd(cudaStream_t s, const float *x, float *y,
                       const cxk_pad *p) {
  cxk_pad q = *p;
  int64_t n = 1, in = 1, st = 1, zero = 1;
  for (int d = 0; d < q.rank; d++)
    zero = zero && !q.ist[d];
  for (int d = q.rank - 1; d >= 0; d--) {
    if (zero)
      q.ist[d] = st, st *= q.idim[d];
    n *= q.odim[d];
    in += (q.idim[d] - 1) * q.ist[d]; /* past the farthest input offset */
  }
  int64_t ol = q.rank > 1 ? q.odim[q.rank - 1] : 0;
  if (ol >= 32 && fits32(n) && fits32(in))
    k_pad_rows<<<blocks_for(n / ol * 32), kThreads, 0, s>>>(x, y, (int)(n / ol),
                                                            q);
  else if (fits32(n) && fits32(in))
    k_pad<int32_t><<<blocks_for(n), kThreads, 0, s>>>(x, y, (int32_t)n, q);
  else
    k_pad<int64_t><<<blocks_for(n), kThreads, 0, s>>>(x, y, n, q);
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

cudaError_t cxk_pool2d(cudaStream_t s, const float *x, float *y,
                       const cxk_pool *p) {
  int64_t n = p->n * p->c * p->oh * p->ow;
  bool big = !fits32(n) || !fits32(p->n * p->c * p->h * p->w);
  bool k3 = p->kh == 3 && p->kw == 3;
  if (p->cl && p->c % 4 == 0 && aligned16(x) && aligned16(y) && !big) {
    cxk_pool q = *p;
    q.c /= 4;
    if (k3)
      k_pool_cl4<int32_t, 3><<<blocks_for(n / 4), kThreads, 0, s>>>(
          (const float4 *)x, (float4 *)y, (int32_t)(n / 4), q);
    else
      k_pool_cl4<int32_t, 0><<<blocks_for(n / 4), kThreads, 0, s>>>(
          (const float4 *)x, (float4 *)y, (int32_t)(n / 4), q);
  } else if (!big && k3)
    k_pool<int32_t, 3><<<blocks_for(n), kThreads, 0, s>>>(x, y, (int32_t)n, *p);
  else if (!big)
    k_pool<int32_t, 0><<<blocks_for(n), kThreads, 0, s>>>(x, y, (int32_t)n, *p);
  else
    k_pool<int64_t, 0><<<blocks_for(n), kThreads, 0, s>>>(x, y, n, *p);
  return cudaGetLastError();
}

/* Merges neighbouring kept (reduced) dimensions that are contiguous in
 * the input and drops those of size 1. */
static void reduce_simplify(cxk_reduce *r) {
  int64_t *kst[1] = {r->kst}, *rst[1] = {r->rst};
  dims_merge(&r->nkeep, r->kdim, kst, 1, false);
  dims_merge(&r->nred, r->rdim, rst, 1, false);
}

/* The column kernel's grid: 32 outputs a block in x, the other kept
 * dimensions in y, and slices of the rows in z until about four blocks
 * per SM of an H100 are busy (at least 64 rows a slice). 0 when the
 * column kernel does not apply. */
static int cols_slices(const cxk_reduce *r, dim3 *grid) {
  if (r->nred != 1 || r->rst[0] == 1 || r->nkeep < 1 ||
      r->kst[r->nkeep - 1] != 1)
    return 0;
  int64_t C = r->kdim[r->nkeep - 1], outer = r->nout / C;
  if (outer > 65535)
    return 0;
  int64_t gx = (C + 31) / 32, blocks = gx * outer;
  int64_t sl = (528 + blocks - 1) / blocks, most = (r->count + 63) / 64;
  sl = sl > most ? most : sl;
  sl = sl > 64 ? 64 : sl < 1 ? 1 : sl;
  *grid = dim3((unsigned)gx, (unsigned)outer, (unsigned)sl);
  return (int)sl;
}

int64_t cxk_reduce_scratch(const cxk_reduce *r0) {
  cxk_reduce r = *r0;
  reduce_simplify(&r);
  dim3 g;
  int sl = cols_slices(&r, &g);
  return sl > 1 ? sl * r.nout : 0;
}

cudaError_t cxk_reduce_mean(cudaStream_t s, const float *x, float *y,
                            const cxk_reduce *r0, float *scratch) {
  cxk_reduce r = *r0;
  reduce_simplify(&r);
  if (r.nout == 0)
    return cudaSuccess;
  bool small = fits32(r.nout * r.count);
  dim3 g;
  int sl = cols_slices(&r, &g);
  if (sl > 0 && (sl == 1 || scratch) && small) {
    k_reduce_cols<int32_t><<<g, dim3(32, 8), 0, s>>>(x, y, scratch, r);
    if (sl > 1) {
      cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess)
        return e;
      k_reduce_parts<<<blocks_for(r.nout), kThreads, 0, s>>>(scratch, y, r.nout,
                                                             sl, r.count);
    }
  } else if (r.nred == 1 && r.rst[0] == 1 && small)
    k_reduce_rows<int32_t>
        <<<blocks_for(r.nout * 32), kThreads, 0, s>>>(x, y, r);
  else if (small)
    k_reduce_mean<int32_t>
        <<<blocks_for(r.nout * 32), kThreads, 0, s>>>(x, y, r);
  else
    k_reduce_mean<int64_t>
        <<<blocks_for(r.nout * 32), kThreads, 0, s>>>(x, y, r);
  return cudaGetLastError();
}

cudaError_t cxk_softmax(cudaStream_t s, const float *x, float *y, int64_t outer,
                        int64_t len, int64_t inner) {
  if (inner == 1)
    k_softmax_rows<<<(unsigned)outer, kThreads, 0, s>>>(x, y, len);
  else
    k_softmax_cols<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, y, outer,
                                                                  len, inner);
  return cudaGetLastError();
}

cudaError_t cxk_layernorm(cudaStream_t s, const float *x, const float *xb,
                          const float *gamma, const float *beta, float *y,
                          int64_t rows, int64_t len, float eps) {
  if (layernorm4(s, x, xb, gamma, beta, y, rows, len, eps))
    return cudaGetLastError();
  unsigned nb = blocks_for(rows * 32);
  int n = (int)len;
  if (len <= 128)
    k_layernorm_warp<4>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps);
  else if (len <= 256)
    k_layernorm_warp<8>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps);
  else if (len <= 512)
    k_layernorm_warp<16>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps);
  else if (len <= 1024)
    k_layernorm_warp<32>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps);
  else
    k_layernorm<<<(unsigned)rows, kThreads, 0, s>>>(x, xb, gamma, beta, y, len,
                                                    eps);
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
