/* kwg.cu: a float32 matmul with its whole epilogue on Hopper's warpgroup
 * tensor cores (wgmma, TF32 operands, float32 sums): y = fn(a b + bias +
 * res), a [m, k] row-major, b given transposed (bt [n, k] row-major: the
 * executor keeps such a copy of a constant weight, filled at upload).
 *
 * Why: cuBLASLt's epilogues have no exact (erf) GELU, so a product with
 * act=gelu ran as cuBLASLt's GEMM then a GELU pass over its output; and
 * for the transformers' plain products at batch 16 cuBLASLt's heuristic
 * picks kernels this one beats by up to 30% (run/mm.c keeps whichever is
 * faster per shape, timed: tune/blas.c, gpu_wg_choose).
 *
 * Plan (persistent, warp-specialized): one block an SM, three warpgroups.
 * Warpgroup 0's first thread issues TMA copies (cp.async.bulk.tensor) of
 * a's and bt's k-tiles of WG_BK (32) floats into ST shared-memory stages,
 * each in the K-major layout with the 128-byte swizzle that the TMA
 * descriptor writes and the wgmma descriptor reads (rows of 128 bytes,
 * 16-byte chunk c of row r at c ^ (r % 8), 1024-byte atoms: the
 * descriptor's stride); full[s] completes when a stage's bytes have
 * landed. Warpgroups 1 and 2 each multiply half of the BM x BN output
 * tile's rows by wgmma m64nBNk8 (the four k8 steps of a stage advance the
 * descriptors' start by 32 bytes) and release a stage (empty[s]) once
 * the products reading it are done; then they apply the epilogue to the
 * accumulators and store pairs. The producer runs ahead into the block's
 * next tile meanwhile.
 *
 * Accumulator fragment of m64nN (PTX ISA, wgmma .f32 D): thread l of warp
 * w holds rows 16 w + l / 4 (+ 8) and columns 8 i + 2 (l % 4) (+ 1) in
 * d[4 i .. 4 i + 3].
 *
 * Needs sm_90a (wgmma, arch-specific): cmake/cuda.cmake compiles this file
 * for it too; where the loaded machine code lacks it, cxk_wg_runs_here
 * says 0 and the executor keeps cuBLASLt. Measured on an H200
 * (docs/notes/device-2026-12-01d): BERT-base's FFN-up at b16 with bias
 * and exact GELU 46.9 us against cuBLASLt's 36.6 and the GELU pass's
 * 13.7; the products are L2-bandwidth bound at 128 x 128 tiles (6.5
 * TB/s of k-tiles).
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <string.h>

#include "kern.h"

namespace {

const int WG_BK = 32, WG_THREADS = 384;

template <int BM, int BN, int ST> struct wg_cfg {
  static const int ASZ = BM * WG_BK; /* floats of a's stage */
  static const int BSZ = BN * WG_BK;
  static const size_t SMEM = (size_t)ST * (ASZ + BSZ) * 4 + 1024 + 2 * ST * 8;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_ON 1
#include "kwg_mma.inc"

__device__ __forceinline__ uint32_t wg_sm(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mb_init(uint64_t *b, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(wg_sm(b)),
               "r"(count)
               : "memory");
}
__device__ __forceinline__ void mb_expect(uint64_t *b, uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(wg_sm(b)),
      "r"(bytes)
      : "memory");
}
__device__ __forceinline__ void mb_arrive(uint64_t *b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(wg_sm(b))
               : "memory");
}
/* Until the phase of parity ph of b has completed. */
__device__ __forceinline__ void mb_wait(uint64_t *b, int ph) {
  asm volatile("{\n.reg .pred p;\nWG_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra WG_WAIT;\n}\n" ::"r"(wg_sm(b)),
               "r"(ph)
               : "memory");
}
/* The box of tm at (c0 inner, c1 outer) into dst, counted on bar. */
__device__ __forceinline__ void wg_tma(float *dst, const CUtensorMap *tm,
                                       int c0, int c1, uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
      "complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(wg_sm(dst)),
      "l"((uint64_t)tm), "r"(c0), "r"(c1), "r"(wg_sm(bar))
      : "memory");
}
__device__ __forceinline__ void wg_fence(void) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wg_arrive(void) {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait(void) {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/* The K-major, 128-byte-swizzled descriptor of a tile at p (1024-aligned
 * atoms): leading offset unused (1), stride 1024 bytes, swizzle mode 1. */
__device__ __forceinline__ uint64_t wg_desc(const float *p) {
  uint64_t a = wg_sm(p);
  return ((a & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

template <int BN>
__device__ __forceinline__ void wg_mma(float *d, uint64_t da, uint64_t db);
template <>
__device__ __forceinline__ void wg_mma<128>(float *d, uint64_t da,
                                            uint64_t db) {
  wg_mma_n128(d, da, db);
}
template <>
__device__ __forceinline__ void wg_mma<192>(float *d, uint64_t da,
                                            uint64_t db) {
  wg_mma_n192(d, da, db);
}

/* The exact GELU, x (1 + erf(x / sqrt 2)) / 2, without erff's branches:
 * erfc(z) for z = |x| / sqrt 2 >= 0 as t exp(-z^2 + P(t)), t = 1 / (1 +
 * z / 2), P of degree 9 (Numerical Recipes' erfcc, Chebyshev fitted:
 * relative error below 1.2e-7 for every z), so erf(x / sqrt 2) is within
 * 2.4e-7 of its value: a float's rounding, far below the TF32 products'
 * 1e-3. Then gelu = x - x erfc / 2 for x >= 0, x erfc / 2 below. erff
 * (a polynomial below 0.9, an exponential above, both where a warp's
 * values straddle it) made the epilogue cost 17 of BERT-base's FFN-up 49
 * us (H200). */
__device__ __forceinline__ float wg_gelu(float x) {
  float z = fabsf(x) * 0.70710678118654752f;
  float t = __fdividef(1.0f, 1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = fmaf(p, t, -0.82215223f), p = fmaf(p, t, 1.48851587f);
  p = fmaf(p, t, -1.13520398f), p = fmaf(p, t, 0.27886807f);
  p = fmaf(p, t, -0.18628806f), p = fmaf(p, t, 0.09678418f);
  p = fmaf(p, t, 0.37409196f), p = fmaf(p, t, 1.00002368f);
  p = fmaf(p, t, -1.26551223f);
  float h = 0.5f * x * t * __expf(p - z * z); /* x erfc(z) / 2 */
  return x >= 0.0f ? x - h : h;
}

/* The epilogue's function, fixed at compile time (EP: 0 none, 1 relu, 2
 * gelu): act_fn's switch over every function, expanded for each of a
 * thread's accumulators, cost the kernel more than its products. */
template <int EP> __device__ __forceinline__ float wg_ep(float x) {
  return EP == 1 ? fmaxf(x, 0.0f) : EP == 2 ? wg_gelu(x) : x;
}

#endif

/* Persistent: block b takes the output tiles b, b + grid, ... (its i-th
 * tile t = b + i grid; row-major over the n-tiles: neighbours share a's
 * rows). Warpgroup 0 feeds the stages: one thread issues the TMA copies
 * of a's and bt's k-tiles, tile after tile (full[s] completes when their
 * bytes have landed). g = i kt_n + kt counts the k-tiles in that order:
 * stage g % ST, phase (g / ST) & 1.
 *
 * Warpgroups 1 and 2 share each tile, BM / 2 rows each (BM / 128 m64
 * products a k-step); each warp's lane 0 arrives on empty[s] once the
 * products that read stage s are done (8 arrivals). A ping-pong variant
 * (each warpgroup a whole tile, one's products beside the other's
 * epilogue) measured slower: 67 against 49 us on BERT-base's FFN-up.
 * MODE (the probe's diagnostics, probe-wg.cu): 1 no products, 2 no copies
 * after the first ST k-tiles. */
template <int BM, int BN, int ST, int EP, int MODE = 0>
__global__ void __launch_bounds__(WG_THREADS, 1)
    k_wg(const __grid_constant__ CUtensorMap ta,
         const __grid_constant__ CUtensorMap tb, const float *__restrict__ bias,
         const float *__restrict__ res, float *__restrict__ y, int m, int n,
         int k) {
#ifdef WG_ON
  typedef wg_cfg<BM, BN, ST> C;
  const int RH = BM / 128; /* m64 parts a warpgroup takes */
  extern __shared__ unsigned char wg_raw[];
  float *sa = (float *)(((uintptr_t)wg_raw + 1023) & ~(uintptr_t)1023);
  float *sb = sa + ST * C::ASZ;
  uint64_t *full = (uint64_t *)(sb + ST * C::BSZ), *empty = full + ST;
  const int tid = threadIdx.x, wg = tid >> 7;
  const int kt_n = k / WG_BK, tn = (n + BN - 1) / BN;
  const int tiles = ((m + BM - 1) / BM) * tn;
  if (tid == 0) {
    for (int s = 0; s < ST; s++)
      mb_init(&full[s], 1), mb_init(&empty[s], 8);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (wg == 0) {
    if (tid == 0) {
      unsigned g = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int m0 = t / tn * BM, n0 = t % tn * BN;
        for (int kt = 0; kt < kt_n; kt++, g++) {
          int s = g % ST, ph = (g / ST) & 1;
          if (MODE == 2 && g >= ST)
            break;
          mb_wait(&empty[s], ph ^ 1);
          mb_expect(&full[s], (C::ASZ + C::BSZ) * 4);
          wg_tma(sa + s * C::ASZ, &ta, kt * WG_BK, m0, &full[s]);
          wg_tma(sb + s * C::BSZ, &tb, kt * WG_BK, n0, &full[s]);
        }
      }
    }
    return;
  }
  const int cw = wg - 1, lane = tid & 31, w = (tid >> 5) & 3;
  for (int i = 0;; i++) {
    const int t = blockIdx.x + i * gridDim.x;
    if (t >= tiles)
      break;
    const int m0 = t / tn * BM, n0 = t % tn * BN;
    unsigned g = (unsigned)i * kt_n;
    float d[RH][BN / 2];
#pragma unroll
    for (int h = 0; h < RH; h++)
#pragma unroll
      for (int j = 0; j < BN / 2; j++)
        d[h][j] = 0.0f;
    for (int kt = 0; kt < kt_n; kt++, g++) {
      int s = g % ST;
      if (MODE != 2 || g < ST)
        mb_wait(&full[s], (g / ST) & 1);
      uint64_t da = wg_desc(sa + s * C::ASZ + cw * 64 * RH * WG_BK);
      uint64_t db = wg_desc(sb + s * C::BSZ);
      wg_fence();
      if (MODE != 1)
#pragma unroll
        for (int j = 0; j < 4; j++) /* k8 steps: 32 bytes further each */
#pragma unroll
          for (int h = 0; h < RH; h++) /* rows 64 h on: 8 KB further */
            wg_mma<BN>(d[h], da + 2 * j + 512 * h, db + 2 * j);
      wg_arrive();
      wg_wait<1>();
      if (kt > 0 && lane == 0)
        mb_arrive(&empty[(g - 1) % ST]);
    }
    wg_wait<0>();
    if (lane == 0)
      mb_arrive(&empty[(g - 1) % ST]);

#pragma unroll
    for (int hh = 0; hh < RH; hh++) {
      const int r0 = m0 + (cw * RH + hh) * 64 + w * 16 + (lane >> 2);
#pragma unroll
      for (int q = 0; q < BN / 8; q++) {
        int c = n0 + q * 8 + 2 * (lane & 3);
        if (c >= n)
          continue;
        float b0 = bias ? bias[c] : 0.0f, b1 = bias ? bias[c + 1] : 0.0f;
#pragma unroll
        for (int h = 0; h < 2; h++) {
          int r = r0 + 8 * h;
          if (r >= m)
            continue;
          float v0 = d[hh][4 * q + 2 * h] + b0;
          float v1 = d[hh][4 * q + 2 * h + 1] + b1;
          size_t o = (size_t)r * n + c;
          if (res) {
            float2 x = *(const float2 *)(res + o);
            v0 += x.x, v1 += x.y;
          }
          *(float2 *)(y + o) = make_float2(wg_ep<EP>(v0), wg_ep<EP>(v1));
        }
      }
    }
  }
#else
  (void)ta, (void)tb, (void)bias, (void)res, (void)y, (void)m, (void)n;
  (void)k;
  __trap();
#endif
}

/* Writes 1 where this file's loaded machine code has the wgmma path. */
__global__ void k_wg_probe(int *on) {
#ifdef WG_ON
  *on = 1;
#else
  *on = 0;
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 wg_encode_fn(void) {
  static PFN_cuTensorMapEncodeTiled_v12000 f;
  static int tried;
  if (!tried) {
    tried = 1;
    void *p = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                         cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      f = (PFN_cuTensorMapEncodeTiled_v12000)p;
  }
  return f;
}

/* rows x cols row-major float32 at p, boxes of box_rows x 32 with the
 * 128-byte swizzle, zeros past the edges. */
int wg_map(uint64_t *out, const float *p, int64_t rows, int64_t cols,
           int box_rows) {
  CUtensorMap tm;
  PFN_cuTensorMapEncodeTiled_v12000 f = wg_encode_fn();
  if (!f)
    return 0;
  cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  cuuint64_t st[1] = {(cuuint64_t)cols * 4};
  cuuint32_t box[2] = {(cuuint32_t)WG_BK, (cuuint32_t)box_rows};
  cuuint32_t es[2] = {1, 1};
  if (f(&tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)p, dim, st, box, es,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return 0;
  memcpy(out, &tm, sizeof tm);
  return 1;
}

template <int BM, int BN, int ST, int EP, int MODE>
cudaError_t wg_go(cudaStream_t s, const cxk_wg *w, const float *bias,
                  const float *res, float *y) {
  typedef wg_cfg<BM, BN, ST> C;
  static int attr_set; /* per instance, once a process */
  if (!attr_set) {
    cudaError_t e = cudaFuncSetAttribute(
        k_wg<BM, BN, ST, EP, MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)C::SMEM);
    if (e != cudaSuccess)
      return e;
    attr_set = 1;
  }
  CUtensorMap ta, tb;
  memcpy(&ta, w->map[0], sizeof ta);
  memcpy(&tb, w->map[1], sizeof tb);
  int64_t tiles = ((w->m + BM - 1) / BM) * ((w->n + BN - 1) / BN);
  /* persistent: a block an SM at most (a block a tile ran BERT-base's
   * default graph at b16 1% slower: 1.898 against 1.879 ms, loan-1218) */
  unsigned grid = (unsigned)(tiles < w->sms ? tiles : w->sms);
  k_wg<BM, BN, ST, EP, MODE><<<grid, WG_THREADS, C::SMEM, s>>>(
      ta, tb, bias, res, y, (int)w->m, (int)w->n, (int)w->k);
  return cudaGetLastError();
}

template <int BM, int BN, int ST, int MODE = 0>
cudaError_t wg_launch(cudaStream_t s, const cxk_wg *w, const float *bias,
                      const float *res, float *y, int ep) {
  return ep == 2   ? wg_go<BM, BN, ST, 2, MODE>(s, w, bias, res, y)
         : ep == 1 ? wg_go<BM, BN, ST, 1, MODE>(s, w, bias, res, y)
                   : wg_go<BM, BN, ST, 0, MODE>(s, w, bias, res, y);
}

/* Tilings (k_wg): m-tile, n-tile (stages, ping-pong: cxk_wg_mm). */
#ifdef WG_PROBE
const int WG_BMV[] = {128, 256, 256, 128, 128, 128};
const int WG_BNV[] = {128, 128, 128, 192, 128, 128};
#else
const int WG_BMV[] = {128, 256, 256, 128};
const int WG_BNV[] = {128, 128, 128, 192};
#endif

} // namespace

extern "C" int cxk_wg_variants(void) {
  return (int)(sizeof WG_BNV / sizeof *WG_BNV);
}

extern "C" int cxk_wg_fn_ok(int fn) {
  return fn == CXK_ID || fn == CXK_RELU || fn == CXK_GELU;
}

extern "C" int cxk_wg_ok(int64_t m, int64_t n, int64_t k) {
  return m > 0 && n > 0 && k > 0 && n % 4 == 0 && k % WG_BK == 0 &&
         m < (1 << 30) && n < (1 << 30) && k < (1 << 30) &&
         m * n < ((int64_t)1 << 40);
}

extern "C" int cxk_wg_runs_here(void) {
  static int known = -1;
  if (known >= 0)
    return known;
  int dev = 0, maj = 0, min = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&maj, cudaDevAttrComputeCapabilityMajor, dev) ||
      cudaDeviceGetAttribute(&min, cudaDevAttrComputeCapabilityMinor, dev) ||
      maj != 9 || min != 0 || !wg_encode_fn())
    return known = 0;
  int *p = NULL, on = 0;
  if (cudaMalloc((void **)&p, sizeof(int)) != cudaSuccess)
    return known = 0;
  k_wg_probe<<<1, 1>>>(p);
  int ok = cudaGetLastError() == cudaSuccess &&
           cudaMemcpy(&on, p, sizeof on, cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(p);
  return known = ok && on;
}

extern "C" int cxk_wg_prepare(cxk_wg *w, const float *a, const float *bt,
                              int64_t m, int64_t n, int64_t k, int var) {
  static_assert(sizeof(CUtensorMap) <= sizeof w->map[0], "cxk_wg.map");
  if (var < 0 || var >= cxk_wg_variants() || !cxk_wg_ok(m, n, k))
    return 0;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
          cudaSuccess)
    return 0;
  w->m = m, w->n = n, w->k = k, w->var = var, w->sms = sms;
  return wg_map(w->map[0], a, m, k, WG_BMV[var]) &&
         wg_map(w->map[1], bt, n, k, WG_BNV[var]);
}

extern "C" cudaError_t cxk_wg_mm(cudaStream_t s, const cxk_wg *w,
                                 const float *bias, const float *res, float *y,
                                 int fn) {
  int ep = fn == CXK_GELU ? 2 : fn == CXK_RELU ? 1 : 0;
  if (!cxk_wg_fn_ok(fn))
    return cudaErrorInvalidValue;
  switch (w->var) {
  case 0: return wg_launch<128, 128, 4>(s, w, bias, res, y, ep);
  case 1: return wg_launch<256, 128, 4>(s, w, bias, res, y, ep);
  case 2: return wg_launch<256, 128, 3>(s, w, bias, res, y, ep);
  case 3: return wg_launch<128, 192, 4>(s, w, bias, res, y, ep);
#ifdef WG_PROBE
  case 4: return wg_launch<128, 128, 4, 1>(s, w, bias, res, y, ep);
  case 5: return wg_launch<128, 128, 4, 2>(s, w, bias, res, y, ep);
#endif
  default: return cudaErrorInvalidValue;
  }
}
