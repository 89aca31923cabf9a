/* kse.cu: squeeze-and-excitation's squeeze in one kernel.
 *
 * RegNet's, MobileNet-V3's and EfficientNet's blocks compute a per-channel
 * scale from the whole image: global average pool, a 1x1 convolution to r
 * channels with a relu, a 1x1 convolution back to c channels with a
 * sigmoid. Node by node that is five launches of almost no work at batch
 * 1 (the channels-last pool's partial sums and their sum, two GEMMs, the
 * bias and sigmoid), and in a CUDA-graph replay each costs 1 to 2 us
 * whatever it does (RegNet-Y-800MF: 0.534 ms, 0.441 ms with the two
 * convolutions of its 14 blocks left out, H200).
 *
 * Here one launch does it, a thread block cluster (Hopper) a sample: each
 * block sums a slice of the sample's pixels; through distributed shared
 * memory each block adds the slices' sums and computes its share of the
 * first convolution's outputs, gathers them all and computes its share of
 * the second's, a warp per output. The weights are read by 8 SMs a sample,
 * not one. Tried first and dropped (H200): a cooperative kernel with
 * grid-wide barriers (each barrier cost 1.2 to 1.5 us, more than a kernel
 * boundary in a graph replay, 1.0 us), and the last block to finish doing
 * both convolutions alone (latency-bound: RegNet batch 1 0.54 -> 0.59 ms).
 * Plain fp32 sums and FMAs in a fixed order: the same result every run, in
 * strict mode too.
 */
#include <cooperative_groups.h>
#include <stdlib.h>

#include "kern.h"
#include "kutil.cuh"

namespace cg = cooperative_groups;

namespace {

const int kMaxCluster = 16; /* blocks a cluster (16: non-portable) */

/* The kernel needs sm_90 (clusters); the sm_75 pass compiles it empty. */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define SE_HOPPER 1
#endif

#ifdef SE_HOPPER
/* Sum of x[q * st] for q = lo, lo + step, ... < hi, eight loads in flight
 * (the loop is latency-bound otherwise), added in a fixed order. */
__device__ __forceinline__ float strided_sum(const float *x, size_t st, int lo,
                                             int hi, int step) {
  float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int q = lo;
  for (; q + 7 * step < hi; q += 8 * step) {
#pragma unroll
    for (int u = 0; u < 8; u++)
      a[u] += x[(size_t)(q + u * step) * st];
  }
  for (; q < hi; q += step)
    a[0] += x[(size_t)q * st];
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* The block's slice [lo, hi) of the pixels of x (one sample), summed per
 * channel into out[c] (shared memory). Channels-last: thread t takes
 * channel t % c and every f-th pixel from t / c (f = threads / c, at least
 * 1), their f partial sums are added in tmp in a fixed order; NCHW: a warp
 * a channel, the lanes along the pixels. */
__device__ void se_pool(const float *x, float *out, const cxk_se &p, int lo,
                        int hi, float *tmp) {
  int c = (int)p.c, hw = (int)p.hw, t = threadIdx.x, nt = blockDim.x;
  if (p.cl && nt / c > 1) { /* f rows of c threads */
    int f = nt / c, ch = t % c, row = t / c;
    if (row < f)
      tmp[row * c + ch] = strided_sum(x + ch, (size_t)c, lo + row, hi, f);
    __syncthreads();
    if (t < c) {
      float a = 0.0f;
      for (int k = 0; k < f; k++)
        a += tmp[k * c + t];
      out[t] = a;
    }
    return;
  }
  if (p.cl) { /* a thread a channel */
    for (int ch = t; ch < c; ch += nt)
      out[ch] = strided_sum(x + ch, (size_t)c, lo, hi, 1);
    return;
  }
  int lane = t % 32, warps = nt / 32;
  for (int ch = t / 32; ch < c; ch += warps) {
    float a = warp_sum(strided_sum(x + (size_t)ch * hw, 1, lo + lane, hi, 32));
    if (lane == 0)
      out[ch] = a;
  }
}

/* Rows k = rank, rank + cs, ... of act(b + w v) (w [rows, len], v in shared
 * memory) into o[k]: a warp a row, eight loads in flight a lane. */
__device__ void se_fc(const float *w, const float *b, const float *v, int rows,
                      int len, int act, float lo, float hi, float *o, int rank,
                      int cs) {
  int lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int k = rank + cs * (int)(threadIdx.x / 32); k < rows; k += cs * warps) {
    const float *wr = w + (size_t)k * len;
    float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int j = lane;
    for (; j + 7 * 32 < len; j += 8 * 32) {
#pragma unroll
      for (int u = 0; u < 8; u++)
        a[u] = fmaf(wr[j + 32 * u], v[j + 32 * u], a[u]);
    }
    for (; j < len; j += 32)
      a[0] = fmaf(wr[j], v[j], a[0]);
    float s = warp_sum(((a[0] + a[1]) + (a[2] + a[3])) +
                       ((a[4] + a[5]) + (a[6] + a[7])));
    if (lane == 0)
      o[k] = act_fn(act, s + (b ? b[k] : 0.0f), lo, hi);
  }
}

#endif

/* A cluster of cs blocks a sample (grid [cs, n]): each block sums a slice
 * of the pixels; through distributed shared memory every block adds the
 * cs partial sums, computes its share of h's rows, gathers all of h and
 * computes its share of y's rows. Shared memory: part[c], pooled[c],
 * hmine[r], hall[r], then the pool's temporary. */
__global__ void __launch_bounds__(1024)
    k_se(const float *x, const float *w1, const float *b1, const float *w2,
         const float *b2, float *y, const __grid_constant__ cxk_se p) {
#ifdef SE_HOPPER /* else never launched: se_plan checks the code's version */
  extern __shared__ float sm[];
  cg::cluster_group cl = cg::this_cluster();
  int rank = (int)cl.block_rank(), cs = (int)cl.num_blocks();
  int img = blockIdx.y, c = (int)p.c, r = (int)p.r;
  float *part = sm, *pooled = sm + c, *hmine = pooled + c, *hall = hmine + r;
  int chunk = ((int)p.hw + cs - 1) / cs, lo = rank * chunk;
  int hi = min((int)p.hw, lo + chunk);
  se_pool(x + (size_t)img * p.c * p.hw, part, p, lo < hi ? lo : hi, hi,
          hall + r);
  cl.sync();
  float inv = 1.0f / (float)p.hw;
  for (int ch = threadIdx.x; ch < c; ch += blockDim.x) {
    float v[kMaxCluster];
#pragma unroll
    for (int b = 0; b < kMaxCluster; b++) /* all remote loads in flight */
      v[b] = b < cs ? cl.map_shared_rank(part, b)[ch] : 0.0f;
    float a = 0.0f;
#pragma unroll
    for (int b = 0; b < kMaxCluster; b++)
      a += v[b];
    pooled[ch] = a * inv;
  }
  __syncthreads();
  se_fc(w1, b1, pooled, r, c, p.act1, 0.0f, 0.0f, hmine, rank, cs);
  cl.sync();
  for (int k = threadIdx.x; k < r; k += blockDim.x)
    hall[k] = cl.map_shared_rank(hmine, k % cs)[k];
  cl.sync(); /* no block leaves while another reads its shared memory */
  se_fc(w2, b2, hall, (int)p.c2, r, p.act2, p.lo2, p.hi2,
        y + (size_t)img * p.c2, rank, cs);
#else
  __trap(); /* a launch of the empty sm_75 body must not pass for a result */
#endif
}

/* The same without clusters (GPUs before sm_90, builds without sm_90
 * code, $SUPEROPT_SE_CLUSTER=0): a block a sample (grid [n]) pools, then
 * computes h and y, a warp a row, in its own shared memory (pooled[c],
 * h[r]). Slower on large images (one block reads the whole sample), but
 * the same sums in the same fixed order per row. */
__global__ void __launch_bounds__(512)
    k_se_block(const float *x, const float *w1, const float *b1,
               const float *w2, const float *b2, float *y,
               const __grid_constant__ cxk_se p) {
  extern __shared__ float sm[];
  float *pooled = sm, *h = sm + p.c;
  int c = (int)p.c, hw = (int)p.hw, t = threadIdx.x, nt = blockDim.x;
  const float *xs = x + (size_t)blockIdx.x * p.c * p.hw;
  float inv = 1.0f / (float)p.hw;
  for (int ch = t; ch < c; ch += nt) {
    float a = 0.0f;
    for (int q = 0; q < hw; q++)
      a += p.cl ? xs[(size_t)q * c + ch] : xs[(size_t)ch * hw + q];
    pooled[ch] = a * inv;
  }
  __syncthreads();
  int lane = t % 32, warps = nt / 32;
  for (int k = t / 32; k < (int)p.r; k += warps) {
    float a = 0.0f;
    for (int j = lane; j < c; j += 32)
      a = fmaf(w1[(size_t)k * c + j], pooled[j], a);
    a = warp_sum(a);
    if (lane == 0)
      h[k] = act_fn(p.act1, a + (b1 ? b1[k] : 0.0f), 0.0f, 0.0f);
  }
  __syncthreads();
  for (int k = t / 32; k < (int)p.c2; k += warps) {
    float a = 0.0f;
    for (int j = lane; j < (int)p.r; j += 32)
      a = fmaf(w2[(size_t)k * p.r + j], h[j], a);
    a = warp_sum(a);
    if (lane == 0)
      y[(size_t)blockIdx.x * p.c2 + k] =
          act_fn(p.act2, a + (b2 ? b2[k] : 0.0f), p.lo2, p.hi2);
  }
}

/* k_se_block's shared memory, or 0 where it does not fit. */
size_t se_block_smem(const cxk_se *p) {
  size_t b = sizeof(float) * (size_t)(p->c + p->r);
  return b <= 48 * 1024 ? b : 0;
}

int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

/* The launch: threads a block, blocks a cluster (a sample), shared memory
 * bytes. 0 where the device has no clusters or the sizes do not fit. */
struct se_shape {
  int threads, cluster;
  size_t smem;
};

int se_plan(const cxk_se *p, se_shape *s) {
  int dev = 0, clusters = 0, major = 0;
  const char *force = getenv("SUPEROPT_SE_CLUSTER");
  if (force && *force && atoi(force) == 0)
    return 0; /* k_se_block (tests) */
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) !=
          cudaSuccess ||
      !clusters || major < 9)
    return 0;
  /* the kernel's code for this device must be the sm_90 one: a build for
   * older architectures only has the empty body (cuda.cmake) */
  cudaFuncAttributes fa;
  if (cudaFuncGetAttributes(&fa, k_se) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (fa.ptxVersion < 90)
    return 0;
  /* a cluster of up to 16 blocks a sample, about one block an SM over all
   * samples (wider clusters measured faster at batch 1, narrower ones at
   * 16); 1024 threads a block while at most half the SMs are busy, else
   * 512 (H200: RegNet-Y batch 1 0.534 -> 0.488 ms with 16 x 1024, batch 16
   * 1.112 -> 1.018 ms with 8 x 512, 1.176 ms with 16 x 1024) */
  int sms = 0, cs = 1;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
      cudaSuccess)
    return 0;
  while (cs < kMaxCluster && 2 * cs * p->n <= sms)
    cs *= 2;
  s->cluster = env_int("SUPEROPT_SE_CLUSTER", cs);
  s->threads =
      env_int("SUPEROPT_SE_THREADS", 2 * s->cluster * p->n <= sms ? 1024 : 512);
  if (s->threads < 32 || s->threads > 1024 || s->threads % 32 ||
      s->cluster < 1 || s->cluster > kMaxCluster)
    return 0;
  int64_t f = p->cl && s->threads / p->c > 1 ? s->threads / p->c : 1;
  int64_t tmp = p->cl && f > 1 ? f * p->c : 0;
  s->smem = sizeof(float) * (size_t)(2 * p->c + 2 * p->r + tmp);
  if (s->smem > 48 * 1024)
    return 0;
  if (cudaFuncSetAttribute(k_se, cudaFuncAttributeNonPortableClusterSizeAllowed,
                           1) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  for (; s->cluster >= 1; s->cluster /= 2) { /* the largest that fits */
    cudaLaunchConfig_t c = {};
    cudaLaunchAttribute a[1];
    a[0].id = cudaLaunchAttributeClusterDimension;
    a[0].val.clusterDim.x = (unsigned)s->cluster;
    a[0].val.clusterDim.y = a[0].val.clusterDim.z = 1;
    c.gridDim = dim3((unsigned)s->cluster);
    c.blockDim = dim3((unsigned)s->threads);
    c.dynamicSmemBytes = s->smem;
    c.attrs = a;
    c.numAttrs = 1;
    int count = 0;
    if (cudaOccupancyMaxActiveClusters(&count, k_se, &c) == cudaSuccess &&
        count > 0)
      return 1;
    (void)cudaGetLastError();
  }
  return 0;
}

bool se_act_ok(int a) {
  return a == CXK_ID || a == CXK_RELU || a == CXK_SIGMOID || a == CXK_CLIP;
}

} // namespace

int cxk_se_ok(const cxk_se *p) {
  se_shape s;
  return p->n >= 1 && p->n <= 65535 && p->c >= 1 && p->hw >= 1 && p->r >= 1 &&
         p->c2 >= 1 && fits32(p->n * p->c * p->hw) && fits32(p->n * p->c2) &&
         fits32(p->r * p->c) && fits32(p->c2 * p->r) && se_act_ok(p->act1) &&
         p->act1 != CXK_CLIP && se_act_ok(p->act2) &&
         (se_plan(p, &s) || se_block_smem(p) > 0);
}

cudaError_t cxk_se_run(cudaStream_t st, const float *x, const float *w1,
                       const float *b1, const float *w2, const float *b2,
                       float *y, const cxk_se *p) {
  se_shape s;
  if (!se_plan(p, &s)) {
    size_t smem = se_block_smem(p);
    if (!smem)
      return cudaErrorNotSupported;
    k_se_block<<<(unsigned)p->n, 512, smem, st>>>(x, w1, b1, w2, b2, y, *p);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t c = {};
  cudaLaunchAttribute a[1];
  a[0].id = cudaLaunchAttributeClusterDimension;
  a[0].val.clusterDim.x = (unsigned)s.cluster;
  a[0].val.clusterDim.y = 1;
  a[0].val.clusterDim.z = 1;
  c.gridDim = dim3((unsigned)s.cluster, (unsigned)p->n);
  c.blockDim = dim3((unsigned)s.threads);
  c.dynamicSmemBytes = s.smem;
  c.stream = st;
  c.attrs = a;
  c.numAttrs = 1;
  return cudaLaunchKernelEx(&c, k_se, x, w1, b1, w2, b2, y, *p);
}
