/* kred.cu: the CUDA executor's reduction kernels: pooling, mean
 * reductions, softmax and layer norm, in float32 and, for softmax and
 * layer norm, on half elements (16-byte loads, float32 inside).
 *
 * The row reductions (softmax, layernorm, reduce) give each row one warp
 * or block and reduce with shuffles; pooling is one thread per output
 * element. Every formula follows the CPU reference (src/exec/ref_*.c).
 */
#include <math.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

/* K: the window's height and width when known when compiling (3: fully
 * unrolled, so the nine loads are in flight together instead of one after
 * another; a pooling node is latency-bound), 0: p.kh x p.kw. */
template <typename I, int K, typename T = float>
__global__ void k_pool(const T *x, T *y, I n,
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
    const T *xp = x + (int64_t)plane * p.h * p.w * cs + ch;
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
        float v = ld(xp[(int64_t)(yy * w + xx) * cs]);
        best = v > best ? v : best;
        sum += v;
        cnt++;
      }
    }
    int div = p.count_include_pad ? kh * kw : cnt;
    y[i] = st<T>(p.is_max ? best : sum / (float)div);
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

/* Channels-last pooling on half elements, eight channels a thread (one
 * 16-byte load a window position; C a multiple of 8, p.c counted in 8s),
 * float32 inside, each result rounded once; K as for k_pool. */
template <typename I, int K, typename T>
__global__ void k_pool_cl8(const uint4 *x, uint4 *y, I n,
                           const __grid_constant__ cxk_pool p) {
  GRID_LOOP_T(I, i, n) {
    I c = (I)p.c, ow = (I)p.ow, oh = (I)p.oh;
    I ch = i % c, ox = (i / c) % ow, oy = (i / (c * ow)) % oh;
    I img = i / (c * ow * oh);
    const uint4 *xp = x + (int64_t)img * p.h * p.w * c + ch;
    int y0 = (int)oy * p.sh - p.pt, x0 = (int)ox * p.sw - p.pl;
    int h = (int)p.h, w = (int)p.w;
    float best[8], sum[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
      best[j] = -INFINITY, sum[j] = 0.0f;
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
        uint4 v = xp[(int64_t)(yy * w + xx) * c];
        const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
        for (int j = 0; j < 8; j++) {
          float f = ld(e[j]);
          best[j] = f > best[j] ? f : best[j];
          sum[j] += f;
        }
        cnt++;
      }
    }
    float div = (float)(p.count_include_pad ? kh * kw : cnt);
    uint4 out;
    T *o = reinterpret_cast<T *>(&out);
#pragma unroll
    for (int j = 0; j < 8; j++)
      o[j] = st<T>(p.is_max ? best[j] : sum[j] / div);
    y[i] = out;
  }
}

/* One warp per output element. */
template <typename I, typename T = float>
__global__ void k_reduce_mean(const T *x, T *y,
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
    s += ld(x[off]);
  }
  s = warp_sum(s);
  if (lane == 0)
    y[warp] = st<T>(s / (float)r.count);
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
template <typename I, typename T = float>
__global__ void k_reduce_rows(const T *x, T *y,
                              const __grid_constant__ cxk_reduce r) {
  int64_t nw = (int64_t)gridDim.x * blockDim.x / 32;
  int lane = threadIdx.x % 32;
  for (int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
       warp < r.nout; warp += nw) {
    const T *xr = x + kept_base<I>(r, (I)warp, r.nkeep);
    float s = 0.0f;
    for (I e = lane; e < (I)r.count; e += 32)
      s += ld(xr[e]);
    s = warp_sum(s);
    if (lane == 0)
      y[warp] = st<T>(s / (float)r.count);
  }
}

/* A strided reduced dimension (rst[0] apart) and a kept innermost
 * dimension of stride 1 (channels-last global_avgpool): threads x over 32
 * neighbouring outputs, y over rows; blockIdx.z takes one of gridDim.z
 * slices of the rows. With one slice the mean goes to y, else the slice's
 * sum to part[z * nout + j]. */
template <typename I, typename T = float>
__global__ void k_reduce_cols(const T *x, T *y, float *part,
                              const __grid_constant__ cxk_reduce r) {
  __shared__ float acc[8][33];
  I C = (I)r.kdim[r.nkeep - 1], c = (I)blockIdx.x * 32 + threadIdx.x;
  I outer = blockIdx.y, j = outer * C + c;
  I rows = (I)r.count, per = (rows + gridDim.z - 1) / gridDim.z;
  I r0 = (I)blockIdx.z * per, r1 = r0 + per < rows ? r0 + per : rows;
  float s = 0.0f;
  if (c < C) {
    const T *xp = x + kept_base<I>(r, outer, r.nkeep - 1) + c;
    for (I e = r0 + threadIdx.y; e < r1; e += blockDim.y)
      s += ld(xp[e * (I)r.rst[0]]);
  }
  acc[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int k = 1; k < (int)blockDim.y; k++)
      s += acc[k][threadIdx.x];
    if (gridDim.z == 1)
      y[j] = st<T>(s / (float)r.count);
    else
      part[(I)blockIdx.z * (I)r.nout + j] = s;
  }
}

template <typename T = float>
__global__ void k_reduce_parts(const float *part, T *y, int64_t nout,
                               int nparts, int64_t count) {
  GRID_LOOP(j, nout) {
    float s = 0.0f;
    for (int k = 0; k < nparts; k++)
      s += part[k * nout + j];
    y[j] = st<T>(s / (float)count);
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
 * bias, moved here: run/step.c). rms: the mean taken as 0 (RMSNorm); every
 * variant below takes it the same way. */
__global__ void k_layernorm(const float *x, const float *xb, const float *gamma,
                            const float *beta, float *y, int64_t len, float eps,
                            bool rms) {
  const float *xr = x + blockIdx.x * len;
  float *yr = y + blockIdx.x * len;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    s += xr[i] + (xb ? xb[i] : 0.0f);
  float mean = rms ? 0.0f : block_reduce(s, false) / (float)len;
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
                                 float *y, int64_t rows, int len, float eps,
                                 bool rms) {
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
    float mean = rms ? 0.0f : warp_sum(s) / (float)len, q = 0.0f;
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
                             int rows, int len4, float eps, bool rms) {
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
  float len = 4.0f * (float)len4, q = 0.0f;
  float mean = rms ? 0.0f : group_sum<LANES>(s) / len;
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

/* Threads a block for n threads of a row kernel whose rows are few: 256,
 * halved (to 32 at least) while that gives fewer than two blocks an SM of
 * an H200 (132 SMs). The profile of BERT-base at batch 1 (128 rows of 768
 * floats, 4,096 threads: 16 blocks of 256 on 16 SMs) timed this kernel at
 * 3.3 us against 2.0 us for the NVRTC row kernel that adds a bias and a
 * residual before the same layer norm. */
inline int row_threads(int64_t n) {
  int t = kThreads;
  while (t > 32 && (n + t - 1) / t < 2 * 132)
    t /= 2;
  return t;
}

template <int LANES, int NV>
void launch_ln4(cudaStream_t s, const float *x, const float *xb,
                const float *gamma, const float *beta, float *y, int rows,
                int len4, float eps, bool rms) {
  int64_t n = (int64_t)rows * LANES;
  int tb = row_threads(n);
  k_layernorm4<LANES, NV><<<blocks_for(n, tb), tb, 0, s>>>(
      (const float4 *)x, (const float4 *)xb, (const float4 *)gamma,
      (const float4 *)beta, (float4 *)y, rows, len4, eps, rms);
}

/* The float4 layer norm where it applies (len a multiple of 4 up to 1024,
 * every pointer aligned, at most 2^23 rows: a thread a lane, no grid-stride
 * loop, and blocks_for's 2^20 blocks of 256): 32 lanes a row, or 8 for
 * short rows when there are many (50,176 rows of 96 floats: 8.0 us with
 * 8 lanes, 10.6 with 32; 3,136 rows: 2.6 and 2.3 us). false: not taken. */
bool layernorm4(cudaStream_t s, const float *x, const float *xb,
                const float *gamma, const float *beta, float *y, int64_t rows,
                int64_t len, float eps, bool rms) {
  if (len % 4 || len > 1024 || rows > (1 << 23) || !aligned16(x) ||
      !aligned16(xb) || !aligned16(gamma) || !aligned16(beta) || !aligned16(y))
    return false;
  int r = (int)rows, l4 = (int)(len / 4);
  if (l4 <= 32 && l4 % 8 == 0 && rows > 8192) {
    switch (l4 / 8) {
    case 1: launch_ln4<8, 1>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
    case 2: launch_ln4<8, 2>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
    case 3: launch_ln4<8, 3>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
    default: launch_ln4<8, 4>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
    }
    return true;
  }
  switch ((l4 + 31) / 32) {
  case 1: launch_ln4<32, 1>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  case 2: launch_ln4<32, 2>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  case 3: launch_ln4<32, 3>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  case 4: launch_ln4<32, 4>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  case 5: launch_ln4<32, 5>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  case 6: launch_ln4<32, 6>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  case 7: launch_ln4<32, 7>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  default: launch_ln4<32, 8>(s, x, xb, gamma, beta, y, r, l4, eps, rms); break;
  }
  return true;
}

/* ---- half elements T (__half, __nv_bfloat16; docs/half.md): read as
 * float32, sums, maxima and statistics in float32, one rounding at the
 * store. Rows whose length is a multiple of 8 (every pointer 16-byte
 * aligned) move 16 bytes (8 elements) a load; others take the scalar
 * kernels. */

template <typename T> union pack8 {
  uint4 u;
  T e[8];
};

/* Softmax of rows of len8 * 8 elements: LANES lanes a row, NV packs of 8
 * a lane in registers, the row read once. */
template <typename T, int LANES, int NV>
__global__ void k_softmax8(const uint4 *x, uint4 *y, int rows, int len8) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  int row = t / LANES, lane = t % LANES;
  bool live = row < rows; /* dead groups stay for the shuffles */
  const uint4 *xr = x + (size_t)(live ? row : 0) * len8;
  float v[NV][8], mx = -INFINITY;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int i = lane + LANES * k;
    pack8<T> p;
    bool in = live && i < len8;
    p.u = in ? xr[i] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < 8; j++) {
      v[k][j] = in ? ld(p.e[j]) : -INFINITY;
      mx = fmaxf(mx, v[k][j]);
    }
  }
  mx = group_max<LANES>(mx);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < NV; k++)
#pragma unroll
    for (int j = 0; j < 8; j++) {
      bool in = lane + LANES * k < len8;
      v[k][j] = in ? expf(v[k][j] - mx) : 0.0f;
      s += v[k][j];
    }
  float inv = 1.0f / group_sum<LANES>(s);
  if (!live)
    return;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int i = lane + LANES * k;
    if (i < len8) {
      pack8<T> p;
#pragma unroll
      for (int j = 0; j < 8; j++)
        p.e[j] = st<T>(v[k][j] * inv);
      y[(size_t)row * len8 + i] = p.u;
    }
  }
}

/* Softmax along contiguous rows, one block a row (any length). */
template <typename T>
__global__ void k_softmax_rows_h(const T *x, T *y, int64_t len) {
  const T *xr = x + blockIdx.x * len;
  T *yr = y + blockIdx.x * len;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    mx = fmaxf(mx, ld(xr[i]));
  mx = block_reduce(mx, true);
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    s += expf(ld(xr[i]) - mx);
  float inv = 1.0f / block_reduce(s, false);
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    yr[i] = st<T>(expf(ld(xr[i]) - mx) * inv);
}

/* Softmax along a strided axis: one thread per (outer, inner) line. */
template <typename T>
__global__ void k_softmax_cols_h(const T *x, T *y, int64_t outer, int64_t len,
                                 int64_t inner) {
  GRID_LOOP(l, outer * inner) {
    int64_t off = l / inner * len * inner + l % inner;
    float mx = -INFINITY, s = 0.0f;
    for (int64_t i = 0; i < len; i++)
      mx = fmaxf(mx, ld(x[off + i * inner]));
    for (int64_t i = 0; i < len; i++)
      s += expf(ld(x[off + i * inner]) - mx);
    for (int64_t i = 0; i < len; i++)
      y[off + i * inner] = st<T>(expf(ld(x[off + i * inner]) - mx) / s);
  }
}

template <typename T, int LANES, int NV>
void launch_sm8(cudaStream_t s, const void *x, void *y, int rows, int len8) {
  k_softmax8<T, LANES, NV>
      <<<blocks_for((int64_t)rows * LANES), kThreads, 0, s>>>(
          (const uint4 *)x, (uint4 *)y, rows, len8);
}

/* The 16-byte softmax where it applies (rows of a multiple of 8 up to 2048
 * elements, aligned, at most 2^23 rows): 8, 16 or 32 lanes a row. */
template <typename T>
bool softmax8(cudaStream_t s, const void *x, void *y, int64_t rows,
              int64_t len) {
  if (len % 8 || len > 2048 || rows > (1 << 23) || !aligned16(x) ||
      !aligned16(y))
    return false;
  int r = (int)rows, l8 = (int)(len / 8);
  if (l8 <= 8)
    launch_sm8<T, 8, 1>(s, x, y, r, l8);
  else if (l8 <= 16)
    launch_sm8<T, 16, 1>(s, x, y, r, l8);
  else if (l8 <= 32)
    launch_sm8<T, 32, 1>(s, x, y, r, l8);
  else if (l8 <= 64)
    launch_sm8<T, 32, 2>(s, x, y, r, l8);
  else if (l8 <= 128)
    launch_sm8<T, 32, 4>(s, x, y, r, l8);
  else
    launch_sm8<T, 32, 8>(s, x, y, r, l8);
  return true;
}

template <typename T>
cudaError_t softmax_h(cudaStream_t s, const void *x, void *y, int64_t outer,
                      int64_t len, int64_t inner) {
  if (inner == 1 && softmax8<T>(s, x, y, outer, len))
    return cudaGetLastError();
  if (inner == 1)
    k_softmax_rows_h<T>
        <<<(unsigned)outer, kThreads, 0, s>>>((const T *)x, (T *)y, len);
  else
    k_softmax_cols_h<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(
        (const T *)x, (T *)y, outer, len, inner);
  return cudaGetLastError();
}

/* Loads pack i of a row (plus xb's where given) into v as floats. */
template <typename T>
__device__ __forceinline__ void ld8(const uint4 *xr, const uint4 *xb, int i,
                                    float *v) {
  pack8<T> p, b;
  p.u = xr[i];
  b.u = xb ? xb[i] : make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int j = 0; j < 8; j++)
    v[j] = ld(p.e[j]) + (xb ? ld(b.e[j]) : 0.0f);
}

/* Layer norm of rows of len8 packs of 8 elements: LANES lanes a row, NV
 * packs a lane in registers, read once (k_layernorm4's scheme); xb, gamma,
 * beta: NULL or rows of len8 packs. */
template <typename T, int LANES, int NV>
__global__ void k_layernorm8(const uint4 *x, const uint4 *xb,
                             const uint4 *gamma, const uint4 *beta, uint4 *y,
                             int rows, int len8, float eps, bool rms) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  int row = t / LANES, lane = t % LANES;
  bool live = row < rows;
  const uint4 *xr = x + (size_t)(live ? row : 0) * len8;
  float v[NV][8], s = 0.0f;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int i = lane + LANES * k;
#pragma unroll
    for (int j = 0; j < 8; j++)
      v[k][j] = 0.0f;
    if (live && i < len8)
      ld8<T>(xr, xb, i, v[k]);
#pragma unroll
    for (int j = 0; j < 8; j++)
      s += v[k][j];
  }
  float len = 8.0f * (float)len8, q = 0.0f;
  float mean = rms ? 0.0f : group_sum<LANES>(s) / len;
#pragma unroll
  for (int k = 0; k < NV; k++)
#pragma unroll
    for (int j = 0; j < 8; j++) {
      float d = v[k][j] - mean;
      q += lane + LANES * k < len8 ? d * d : 0.0f;
    }
  float inv = rsqrtf(group_sum<LANES>(q) / len + eps);
  if (!live)
    return;
#pragma unroll
  for (int k = 0; k < NV; k++) {
    int i = lane + LANES * k;
    if (i < len8) {
      pack8<T> g, b, o;
      g.u = gamma ? gamma[i] : make_uint4(0, 0, 0, 0);
      b.u = beta ? beta[i] : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int j = 0; j < 8; j++) {
        float r = (v[k][j] - mean) * inv;
        if (gamma)
          r *= ld(g.e[j]);
        if (beta)
          r += ld(b.e[j]);
        o.e[j] = st<T>(r);
      }
      y[(size_t)row * len8 + i] = o.u;
    }
  }
}

/* Layer norm, one block a row (any length), two passes as k_layernorm. */
template <typename T>
__global__ void k_layernorm_h(const T *x, const T *xb, const T *gamma,
                              const T *beta, T *y, int64_t len, float eps,
                              bool rms) {
  const T *xr = x + blockIdx.x * len;
  T *yr = y + blockIdx.x * len;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    s += ld(xr[i]) + (xb ? ld(xb[i]) : 0.0f);
  float mean = rms ? 0.0f : block_reduce(s, false) / (float)len;
  float v = 0.0f;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    float d = ld(xr[i]) + (xb ? ld(xb[i]) : 0.0f) - mean;
    v += d * d;
  }
  float inv = rsqrtf(block_reduce(v, false) / (float)len + eps);
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    float o = (ld(xr[i]) + (xb ? ld(xb[i]) : 0.0f) - mean) * inv;
    if (gamma)
      o *= ld(gamma[i]);
    if (beta)
      o += ld(beta[i]);
    yr[i] = st<T>(o);
  }
}

template <typename T, int LANES, int NV>
void launch_ln8(cudaStream_t s, const void *x, const void *xb,
                const void *gamma, const void *beta, void *y, int rows,
                int len8, float eps, bool rms) {
  int64_t n = (int64_t)rows * LANES;
  int tb = row_threads(n);
  k_layernorm8<T, LANES, NV><<<blocks_for(n, tb), tb, 0, s>>>(
      (const uint4 *)x, (const uint4 *)xb, (const uint4 *)gamma,
      (const uint4 *)beta, (uint4 *)y, rows, len8, eps, rms);
}

/* The 16-byte layer norm where it applies (len a multiple of 8 up to
 * 2048, every pointer aligned, at most 2^23 rows): 32 lanes a row, or 8
 * for short rows when there are many (ConvNeXt's 96 channels at 56 x 56:
 * 50,176 rows of 12 packs). false: not taken. */
template <typename T>
bool layernorm8(cudaStream_t s, const void *x, const void *xb,
                const void *gamma, const void *beta, void *y, int64_t rows,
                int64_t len, float eps, bool rms) {
  if (len % 8 || len > 2048 || rows > (1 << 23) || !aligned16(x) ||
      !aligned16(xb) || !aligned16(gamma) || !aligned16(beta) || !aligned16(y))
    return false;
  int r = (int)rows, l8 = (int)(len / 8);
  if (l8 <= 16 && rows > 8192) {
    if (l8 <= 8)
      launch_ln8<T, 8, 1>(s, x, xb, gamma, beta, y, r, l8, eps, rms);
    else
      launch_ln8<T, 8, 2>(s, x, xb, gamma, beta, y, r, l8, eps, rms);
    return true;
  }
  switch ((l8 + 31) / 32) {
  case 1:
    launch_ln8<T, 32, 1>(s, x, xb, gamma, beta, y, r, l8, eps, rms);
    break;
  case 2:
    launch_ln8<T, 32, 2>(s, x, xb, gamma, beta, y, r, l8, eps, rms);
    break;
  case 3:
    launch_ln8<T, 32, 3>(s, x, xb, gamma, beta, y, r, l8, eps, rms);
    break;
  case 4:
    launch_ln8<T, 32, 4>(s, x, xb, gamma, beta, y, r, l8, eps, rms);
    break;
  default:
    launch_ln8<T, 32, 8>(s, x, xb, gamma, beta, y, r, l8, eps, rms);
    break;
  }
  return true;
}

template <typename T>
cudaError_t layernorm_h(cudaStream_t s, const void *x, const void *xb,
                        const void *gamma, const void *beta, void *y,
                        int64_t rows, int64_t len, float eps, bool rms) {
  if (!layernorm8<T>(s, x, xb, gamma, beta, y, rows, len, eps, rms))
    k_layernorm_h<T><<<(unsigned)rows, kThreads, 0, s>>>(
        (const T *)x, (const T *)xb, (const T *)gamma, (const T *)beta, (T *)y,
        len, eps, rms);
  return cudaGetLastError();
}

} // namespace

extern "C" {

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

} // extern "C"

/* cxk_reduce_mean on elements of type T (float32 sums). */
template <typename T>
static cudaError_t reduce_mean_t(cudaStream_t s, const T *x, T *y,
                                 const cxk_reduce *r0, float *scratch) {
  cxk_reduce r = *r0;
  reduce_simplify(&r);
  if (r.nout == 0)
    return cudaSuccess;
  bool small = fits32(r.nout * r.count);
  dim3 g;
  int sl = cols_slices(&r, &g);
  if (sl > 0 && (sl == 1 || scratch) && small) {
    k_reduce_cols<int32_t, T><<<g, dim3(32, 8), 0, s>>>(x, y, scratch, r);
    if (sl > 1) {
      cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess)
        return e;
      k_reduce_parts<T><<<blocks_for(r.nout), kThreads, 0, s>>>(
          scratch, y, r.nout, sl, r.count);
    }
  } else if (r.nred == 1 && r.rst[0] == 1 && small)
    k_reduce_rows<int32_t, T>
        <<<blocks_for(r.nout * 32), kThreads, 0, s>>>(x, y, r);
  else if (small)
    k_reduce_mean<int32_t, T>
        <<<blocks_for(r.nout * 32), kThreads, 0, s>>>(x, y, r);
  else
    k_reduce_mean<int64_t, T>
        <<<blocks_for(r.nout * 32), kThreads, 0, s>>>(x, y, r);
  return cudaGetLastError();
}

/* cxk_pool2d on half elements: channels-last with C a multiple of 8,
 * eight channels a thread (VGG-16's 2x2 and ResNets' 3x3 windows
 * unrolled); else the scalar form (NCHW or channels-last). */
template <typename T>
static cudaError_t pool_t(cudaStream_t s, const T *x, T *y, const cxk_pool *p) {
  int64_t n = p->n * p->c * p->oh * p->ow;
  bool big = !fits32(n) || !fits32(p->n * p->c * p->h * p->w);
  int k = p->kh == p->kw && (p->kh == 2 || p->kh == 3) ? p->kh : 0;
  if (p->cl && p->c % 8 == 0 && aligned16(x) && aligned16(y) && !big) {
    cxk_pool q = *p;
    q.c /= 8;
    const uint4 *xv = (const uint4 *)x;
    uint4 *yv = (uint4 *)y;
    int32_t m = (int32_t)(n / 8);
    if (k == 2)
      k_pool_cl8<int32_t, 2, T>
          <<<blocks_for(m), kThreads, 0, s>>>(xv, yv, m, q);
    else if (k == 3)
      k_pool_cl8<int32_t, 3, T>
          <<<blocks_for(m), kThreads, 0, s>>>(xv, yv, m, q);
    else
      k_pool_cl8<int32_t, 0, T>
          <<<blocks_for(m), kThreads, 0, s>>>(xv, yv, m, q);
  } else if (!big && p->kh == 3 && p->kw == 3)
    k_pool<int32_t, 3, T>
        <<<blocks_for(n), kThreads, 0, s>>>(x, y, (int32_t)n, *p);
  else if (!big)
    k_pool<int32_t, 0, T>
        <<<blocks_for(n), kThreads, 0, s>>>(x, y, (int32_t)n, *p);
  else
    k_pool<int64_t, 0, T><<<blocks_for(n), kThreads, 0, s>>>(x, y, n, *p);
  return cudaGetLastError();
}

extern "C" {

cudaError_t cxk_reduce_mean(cudaStream_t s, const float *x, float *y,
                            const cxk_reduce *r0, float *scratch) {
  return reduce_mean_t<float>(s, x, y, r0, scratch);
}

cudaError_t cxk_reduce_mean_dt(cudaStream_t s, int dt, const void *x, void *y,
                               const cxk_reduce *r, float *scratch) {
  if (dt == CXK_F16)
    return reduce_mean_t<__half>(s, (const __half *)x, (__half *)y, r, scratch);
  if (dt == CXK_BF16)
    return reduce_mean_t<__nv_bfloat16>(s, (const __nv_bfloat16 *)x,
                                        (__nv_bfloat16 *)y, r, scratch);
  return reduce_mean_t<float>(s, (const float *)x, (float *)y, r, scratch);
}

cudaError_t cxk_pool2d_dt(cudaStream_t s, int dt, const void *x, void *y,
                          const cxk_pool *p) {
  if (dt == CXK_F16)
    return pool_t<__half>(s, (const __half *)x, (__half *)y, p);
  if (dt == CXK_BF16)
    return pool_t<__nv_bfloat16>(s, (const __nv_bfloat16 *)x,
                                 (__nv_bfloat16 *)y, p);
  return cxk_pool2d(s, (const float *)x, (float *)y, p);
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
                          int64_t rows, int64_t len, float eps, int rms) {
  if (layernorm4(s, x, xb, gamma, beta, y, rows, len, eps, rms != 0))
    return cudaGetLastError();
  unsigned nb = blocks_for(rows * 32);
  int n = (int)len;
  if (len <= 128)
    k_layernorm_warp<4>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps, rms);
  else if (len <= 256)
    k_layernorm_warp<8>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps, rms);
  else if (len <= 512)
    k_layernorm_warp<16>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps, rms);
  else if (len <= 1024)
    k_layernorm_warp<32>
        <<<nb, kThreads, 0, s>>>(x, xb, gamma, beta, y, rows, n, eps, rms);
  else
    k_layernorm<<<(unsigned)rows, kThreads, 0, s>>>(x, xb, gamma, beta, y, len,
                                                    eps, rms != 0);
  return cudaGetLastError();
}

cudaError_t cxk_softmax_dt(cudaStream_t s, int dt, const void *x, void *y,
                           int64_t outer, int64_t len, int64_t inner) {
  if (outer * len * inner <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    return softmax_h<__half>(s, x, y, outer, len, inner);
  if (dt == CXK_BF16)
    return softmax_h<__nv_bfloat16>(s, x, y, outer, len, inner);
  return cxk_softmax(s, (const float *)x, (float *)y, outer, len, inner);
}

cudaError_t cxk_layernorm_dt(cudaStream_t s, int dt, const void *x,
                             const void *xb, const void *gamma,
                             const void *beta, void *y, int64_t rows,
                             int64_t len, float eps, int rms) {
  if (rows * len <= 0)
    return cudaSuccess;
  if (dt == CXK_F16)
    return layernorm_h<__half>(s, x, xb, gamma, beta, y, rows, len, eps,
                               rms != 0);
  if (dt == CXK_BF16)
    return layernorm_h<__nv_bfloat16>(s, x, xb, gamma, beta, y, rows, len, eps,
                                      rms != 0);
  return cxk_layernorm(s, (const float *)x, (const float *)xb,
                       (const float *)gamma, (const float *)beta, (float *)y,
                       rows, len, eps, rms);
}

} // extern "C"
