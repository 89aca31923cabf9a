/* kmprog.cu: the kernel of a move node (ops.def `move`; kern.h
 * cxk_move_args): each output element, or group of vec elements along the
 * innermost dimension, maps its coordinates back through the program's
 * steps to one source element (or the pad value) in one pass: the chain of
 * slices, pads, transposes, reshapes and rolls it replaces made one round
 * trip through memory each. The walk is a template on the element type
 * (float, or the 2-byte f16 and bf16: copied as they are, the pad value
 * rounded to the type).
 *
 * A program that is one strided walk of its input (ir_move_walk: slices,
 * transposes and reshapes whose index maps stay affine) runs instead as a
 * strided copy
 * (cxk_move_view): its dimensions ordered by output stride and merged;
 * then, where the innermost output dimension is contiguous in the source,
 * a thread per 16, 8, 4 or 2 bytes of it; where it is strided there but
 * some dimensions make a contiguous run of the source, 32 x 32 tiles
 * through shared memory (the tile's rows run along those source
 * dimensions, its columns along the innermost output dimensions, so that
 * reads and writes both coalesce: MaxViT's window partitions, whose
 * source run is 7 x 8 x 7 x 8 pixels and output run the channels); else a
 * thread per element. Index math in 32 bits, divisions by a multiply-high
 * and a shift (fdiv). Elements are moved as bits: the kernels are
 * templated on the unit (uint4 ... uint16_t), the same for any 4- or
 * 2-byte element type.
 */
#include <stdint.h>
#include <string.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

/* Output element i's source offset, or -1 where a pad supplies it (*pv). */
template <typename I>
__device__ I walk(const cxk_move_args &a, I i, float *pv) {
  I c[CXK_RANK], t[CXK_RANK];
  const cxk_mstep *st = &a.step[a.last];
  for (int d = st->rank - 1; d >= 0; d--) {
    c[d] = i % (I)st->odim[d];
    i /= (I)st->odim[d];
  }
  int s = a.last;
  while (s >= 0) {
    st = &a.step[s];
    int next = st->next[0];
    switch (st->kind) {
    case CXK_MV_SLICE:
      for (int d = 0; d < st->rank; d++)
        c[d] += (I)st->a[d];
      break;
    case CXK_MV_PAD:
      for (int d = 0; d < st->rank; d++) {
        c[d] -= (I)st->a[d];
        if (c[d] < 0 || c[d] >= (I)st->idim[d]) {
          *pv = st->value;
          return (I)-1;
        }
      }
      break;
    case CXK_MV_TRANSPOSE:
      for (int d = 0; d < st->rank; d++)
        t[st->a[d]] = c[d];
      for (int d = 0; d < st->rank; d++)
        c[d] = t[d];
      break;
    case CXK_MV_RESHAPE: {
      I lin = 0;
      for (int d = 0; d < st->rank; d++)
        lin = lin * (I)st->odim[d] + c[d];
      for (int d = st->irank - 1; d >= 0; d--) {
        c[d] = lin % (I)st->idim[d];
        lin /= (I)st->idim[d];
      }
      break;
    }
    case CXK_MV_CONCAT: {
      int k = 0;
      while (c[st->axis] >= (I)st->a[k])
        k++;
      if (k > 0)
        c[st->axis] -= (I)st->a[k - 1];
      next = st->next[k];
      break;
    }
    }
    s = next;
  }
  I off = 0;
  for (int d = 0; d < a.srank; d++)
    off += c[d] * (I)a.sst[d];
  return off;
}

template <typename T, typename I, int V>
__global__ void k_move(const T *x, T *y,
                       const __grid_constant__ cxk_move_args a) {
  GRID_LOOP_T(I, g, a.n / V) {
    float pv = 0.0f;
    I o = walk<I>(a, g * V, &pv);
    if (V == 4 && sizeof(T) == sizeof(float)) {
      float4 v = o < 0 ? make_float4(pv, pv, pv, pv)
                       : *(const float4 *)(const void *)(x + o);
      *(float4 *)(void *)(y + g * V) = v;
    } else {
      T p = st<T>(pv);
#pragma unroll
      for (int k = 0; k < V; k++)
        y[g * V + k] = o < 0 ? p : x[o + k];
    }
  }
}

/* k_move on elements of type T: groups of vec, 32-bit indices where
 * small. */
template <typename T>
void move_t(cudaStream_t s, const void *x0, void *y0, const cxk_move_args *a,
            int vec, bool small) {
  const T *x = (const T *)x0;
  T *y = (T *)y0;
  unsigned nb = blocks_for(a->n / vec);
#define MOVE(I, V) k_move<T, I, V><<<nb, kThreads, 0, s>>>(x, y, *a)
  if (small && vec == 4)
    MOVE(int32_t, 4);
  else if (small && vec == 2)
    MOVE(int32_t, 2);
  else if (small)
    MOVE(int32_t, 1);
  else if (vec == 4)
    MOVE(int64_t, 4);
  else if (vec == 2)
    MOVE(int64_t, 2);
  else
    MOVE(int64_t, 1);
#undef MOVE
}

} // namespace

extern "C" {

cudaError_t cxk_move(cudaStream_t s, int dt, const void *x, void *y,
                     const cxk_move_args *a) {
  if (a->nsteps < 1 || a->nsteps > CXK_MSTEPS || a->last < 0 ||
      a->last >= a->nsteps || (a->vec != 1 && a->vec != 2 && a->vec != 4) ||
      a->n % a->vec)
    return cudaErrorInvalidValue;
  if (a->n == 0)
    return cudaSuccess;
  int vec = a->vec == 4 && !(aligned16(x) && aligned16(y)) ? 2 : a->vec;
  bool small = fits32(a->n) && fits32(a->extent);
  if (dt == CXK_F16)
    move_t<__half>(s, x, y, a, vec, small);
  else if (dt == CXK_BF16)
    move_t<__nv_bfloat16>(s, x, y, a, vec, small);
  else
    move_t<float>(s, x, y, a, vec, small);
  return cudaGetLastError();
}

} // extern "C"

/* ---- programs that are one strided walk (cxk_move_view) ---------------- */

namespace {

/* n / d for 0 <= n < 2^31 and 1 <= d < 2^31: (mulhi(n, m) + n) >> s, the
 * magic m and shift s chosen on the host (fdiv_make). */
struct fdiv {
  uint32_t d, m, s;
};

fdiv fdiv_make(int64_t d) {
  uint32_t s = 0;
  while (((uint64_t)1 << s) < (uint64_t)d)
    s++;
  uint64_t m = ((((uint64_t)1 << 32) * (((uint64_t)1 << s) - (uint64_t)d)) /
                (uint64_t)d) +
               1;
  fdiv f = {(uint32_t)d, (uint32_t)m, s};
  return f;
}

__device__ __forceinline__ uint32_t fdiv_q(const fdiv &f, uint32_t n) {
  return (__umulhi(n, f.m) + n) >> f.s;
}

/* A walk whose output is contiguous: unit i (of U) reads
 * x[soff + sum c_d * sst[d]], c the coordinates of i over dim[0..nd),
 * each rolled by wr[d] (mod its size) where wrap is set. */
typedef struct vwalk_args {
  int32_t nd, n, soff;
  fdiv dim[CXK_RANK];
  int32_t sst[CXK_RANK], wr[CXK_RANK];
} vwalk_args;

template <typename U, bool Wrap>
__global__ void k_vwalk(const U *x, U *y,
                        const __grid_constant__ vwalk_args a) {
  GRID_LOOP_T(int32_t, i, a.n) {
    uint32_t rem = (uint32_t)i;
    int32_t o = a.soff;
    for (int d = a.nd - 1; d > 0; d--) {
      uint32_t q = fdiv_q(a.dim[d], rem);
      uint32_t c = rem - q * a.dim[d].d;
      if (Wrap) {
        c += (uint32_t)a.wr[d];
        c -= c >= a.dim[d].d ? a.dim[d].d : 0;
      }
      o += (int32_t)c * a.sst[d];
      rem = q;
    }
    if (Wrap) {
      rem += (uint32_t)a.wr[0];
      rem -= rem >= a.dim[0].d ? a.dim[0].d : 0;
    }
    y[i] = x[o + (int32_t)rem * a.sst[0]];
  }
}

/* A tiled copy: the output's innermost dimensions (the L group, nl
 * elements contiguous in the output; ld/ls: their sizes and source
 * strides, innermost first) against dimensions that make a contiguous run
 * of the source (the K group, nk elements; kd/kdst: their sizes and
 * output strides, source-innermost first), over a batch of the others
 * (bd, bs, bdst). */
typedef struct vtile_args {
  int32_t nlg, nkg, nbg;
  int32_t nl, nk, nbatch, soff;
  fdiv ld[CXK_RANK], kd[CXK_RANK], bd[CXK_RANK];
  int32_t ls[CXK_RANK], kdst[CXK_RANK], bs[CXK_RANK], bdst[CXK_RANK];
} vtile_args;

/* The sum of the coordinates of i over dims f[0..n) (innermost first)
 * times strides st. */
__device__ __forceinline__ int32_t group_off(const fdiv *f, const int32_t *st,
                                             int n, uint32_t i) {
  int32_t o = 0;
  for (int d = 0; d < n; d++) {
    uint32_t q = fdiv_q(f[d], i);
    o += (int32_t)(i - q * f[d].d) * st[d];
    i = q;
  }
  return o;
}

/* Batch b's source and output offsets (its coordinates over bd). */
__device__ __forceinline__ void batch_offsets(const vtile_args &a, int32_t b,
                                              int32_t *sb, int32_t *db) {
  int32_t s = a.soff, o = 0;
  uint32_t rem = (uint32_t)b;
  for (int d = 0; d < a.nbg; d++) {
    uint32_t q = fdiv_q(a.bd[d], rem);
    int32_t c = (int32_t)(rem - q * a.bd[d].d);
    s += c * a.bs[d], o += c * a.bdst[d];
    rem = q;
  }
  *sb = s, *db = o;
}

template <typename T>
__global__ void k_vtile(const T *x, T *y,
                        const __grid_constant__ vtile_args a) {
  __shared__ T tile[32][33];
  __shared__ int32_t lso[32], kdo[32];
  int32_t l0 = (int32_t)blockIdx.x * 32, k0 = (int32_t)blockIdx.y * 32;
  int tx = threadIdx.x;
  if (threadIdx.y == 0) {
    lso[tx] = l0 + tx < a.nl ? group_off(a.ld, a.ls, a.nlg, l0 + tx) : 0;
    kdo[tx] = k0 + tx < a.nk ? group_off(a.kd, a.kdst, a.nkg, k0 + tx) : 0;
  }
  __syncthreads();
  for (int32_t b = blockIdx.z; b < a.nbatch; b += gridDim.z) {
    int32_t sb, db;
    batch_offsets(a, b, &sb, &db);
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
      if (l0 + j < a.nl && k0 + tx < a.nk)
        tile[j][tx] = x[sb + lso[j] + k0 + tx];
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += blockDim.y)
      if (k0 + j < a.nk && l0 + tx < a.nl)
        y[db + kdo[j] + l0 + tx] = tile[tx][j];
    __syncthreads();
  }
}

/* k_vtile for 2-byte elements in pairs: a 64 x 64 tile, each thread
 * reading two neighbours of the source run and writing two of the output
 * row (4-byte accesses; vtile_pairs says when every offset is even). */
__global__ void k_vtile2(const uint16_t *x, uint16_t *y,
                         const __grid_constant__ vtile_args a) {
  __shared__ uint16_t tile[64][65]; /* odd pitch: columns conflict-free */
  __shared__ int32_t lso[64], kdo[64];
  int32_t l0 = (int32_t)blockIdx.x * 64, k0 = (int32_t)blockIdx.y * 64;
  int tx = threadIdx.x;
  if (threadIdx.y < 2) {
    int32_t t = tx + 32 * (int32_t)threadIdx.y;
    lso[t] = l0 + t < a.nl ? group_off(a.ld, a.ls, a.nlg, l0 + t) : 0;
    kdo[t] = k0 + t < a.nk ? group_off(a.kd, a.kdst, a.nkg, k0 + t) : 0;
  }
  __syncthreads();
  for (int32_t b = blockIdx.z; b < a.nbatch; b += gridDim.z) {
    int32_t sb, db;
    batch_offsets(a, b, &sb, &db);
    for (int j = threadIdx.y; j < 64; j += blockDim.y)
      if (l0 + j < a.nl && k0 + 2 * tx < a.nk) {
        uint32_t v = *(const uint32_t *)(x + sb + lso[j] + k0 + 2 * tx);
        tile[j][2 * tx] = (uint16_t)v,
                    tile[j][2 * tx + 1] = (uint16_t)(v >> 16);
      }
    __syncthreads();
    for (int j = threadIdx.y; j < 64; j += blockDim.y)
      if (k0 + j < a.nk && l0 + 2 * tx < a.nl)
        *(uint32_t *)(y + db + kdo[j] + l0 + 2 * tx) =
            (uint32_t)tile[2 * tx][j] | (uint32_t)tile[2 * tx + 1][j] << 16;
    __syncthreads();
  }
}

/* Whether t moves in pairs: both run lengths even and every source and
 * output offset even, the pointers 4-byte aligned. */
bool vtile_pairs(const vtile_args *t, const void *x, const void *y) {
  bool ok = t->nk % 2 == 0 && t->nl % 2 == 0 && t->soff % 2 == 0 &&
            (uintptr_t)x % 4 == 0 && (uintptr_t)y % 4 == 0;
  for (int d = 0; ok && d < t->nlg; d++)
    ok = t->ls[d] % 2 == 0;
  for (int d = 0; ok && d < t->nkg; d++)
    ok = t->kdst[d] % 2 == 0;
  for (int d = 0; ok && d < t->nbg; d++)
    ok = t->bs[d] % 2 == 0 && t->bdst[d] % 2 == 0;
  return ok;
}

/* The elements (of esize bytes) of the widest unit, up to 16 bytes, in
 * which w (simplified, output contiguous) can move: the innermost
 * dimension contiguous in the source, and its size, every other source
 * stride, the offset and both pointers whole units; else 1. */
int unit_elems(const cxk_walk *w, int esize, const void *x, const void *y) {
  int L = w->rank - 1;
  if (w->sst[L] != 1)
    return 1;
  for (int v = 16 / esize; v > 1; v /= 2) {
    bool ok = w->dim[L] % v == 0 && w->soff % v == 0 && w->wrap[L] % v == 0 &&
              (uintptr_t)x % (uintptr_t)(v * esize) == 0 &&
              (uintptr_t)y % (uintptr_t)(v * esize) == 0;
    for (int d = 0; ok && d < L; d++)
      ok = w->sst[d] % v == 0;
    if (ok)
      return v;
  }
  return 1;
}

template <typename U>
cudaError_t vwalk_launch(cudaStream_t s, const void *x, void *y,
                         const cxk_walk *w, int v, int64_t n) {
  vwalk_args a;
  memset(&a, 0, sizeof a);
  a.nd = w->rank, a.n = (int32_t)(n / v), a.soff = (int32_t)(w->soff / v);
  bool wrap = false;
  for (int d = 0; d < w->rank; d++) {
    bool inner = d == w->rank - 1;
    a.dim[d] = fdiv_make(inner ? w->dim[d] / v : w->dim[d]);
    a.sst[d] = (int32_t)(inner ? w->sst[d] : w->sst[d] / v);
    a.wr[d] = (int32_t)(inner ? w->wrap[d] / v : w->wrap[d]);
    wrap = wrap || a.wr[d] != 0;
  }
  if (wrap)
    k_vwalk<U, true>
        <<<blocks_for(a.n), kThreads, 0, s>>>((const U *)x, (U *)y, a);
  else
    k_vwalk<U, false>
        <<<blocks_for(a.n), kThreads, 0, s>>>((const U *)x, (U *)y, a);
  return cudaGetLastError();
}

/* The tile groups of w (simplified, innermost output dimension strided in
 * the source): the source run from stride 1 up, the output's innermost
 * dimensions outside it, the rest a batch. false where either group is
 * shorter than 4 elements or the grid would not fit. */
bool as_vtile(const cxk_walk *w, vtile_args *t) {
  int L = w->rank - 1, grp[CXK_RANK] = {0}; /* 1: K group, 2: L group */
  memset(t, 0, sizeof *t);
  t->nk = 1, t->nl = 1, t->nbatch = 1, t->soff = (int32_t)w->soff;
  for (bool more = true; more;) {
    more = false;
    for (int d = 0; d < L; d++)
      if (!grp[d] && w->sst[d] == t->nk) {
        grp[d] = 1, more = true;
        t->kd[t->nkg] = fdiv_make(w->dim[d]);
        t->kdst[t->nkg++] = (int32_t)w->dst[d];
        t->nk *= (int32_t)w->dim[d];
        break;
      }
  }
  for (int d = L; d >= 0 && !grp[d]; d--) {
    grp[d] = 2;
    t->ld[t->nlg] = fdiv_make(w->dim[d]);
    t->ls[t->nlg++] = (int32_t)w->sst[d];
    t->nl *= (int32_t)w->dim[d];
  }
  for (int d = w->rank - 1; d >= 0; d--)
    if (!grp[d]) {
      t->bd[t->nbg] = fdiv_make(w->dim[d]);
      t->bs[t->nbg] = (int32_t)w->sst[d];
      t->bdst[t->nbg++] = (int32_t)w->dst[d];
      t->nbatch *= (int32_t)w->dim[d];
    }
  return t->nk >= 4 && t->nl >= 4 && (t->nk + 31) / 32 <= 65535;
}

template <typename T>
cudaError_t vtile_launch(cudaStream_t s, const void *x, void *y,
                         const vtile_args *t) {
  int64_t z = t->nbatch < 65535 ? t->nbatch : 65535;
  if (sizeof(T) == 2 && vtile_pairs(t, x, y)) {
    dim3 grid((unsigned)((t->nl + 63) / 64), (unsigned)((t->nk + 63) / 64),
              (unsigned)z);
    k_vtile2<<<grid, dim3(32, 8), 0, s>>>((const uint16_t *)x, (uint16_t *)y,
                                          *t);
    return cudaGetLastError();
  }
  dim3 grid((unsigned)((t->nl + 31) / 32), (unsigned)((t->nk + 31) / 32),
            (unsigned)z);
  k_vtile<T><<<grid, dim3(32, 8), 0, s>>>((const T *)x, (T *)y, *t);
  return cudaGetLastError();
}

} // namespace

extern "C" {

cudaError_t cxk_move_view(cudaStream_t s, int esize, const void *x, void *y,
                          const cxk_walk *w0) {
  if ((esize != 4 && esize != 2) || w0->rank < 1 || w0->rank > CXK_RANK)
    return cudaErrorInvalidValue;
  cxk_walk w = *w0;
  bool wrap = false;
  for (int d = 0; d < w.rank; d++)
    wrap = wrap || w.wrap[d] != 0;
  if (!wrap) /* a wrapped walk stays as ir_move_walk made it */
    cxk_walk_simplify(&w);
  int64_t n = 1, far = w.soff;
  for (int d = 0; d < w.rank; d++) {
    n *= w.dim[d];
    if (w.sst[d] < 0 || w.dst[d] < 0 || w.wrap[d] < 0 || w.wrap[d] >= w.dim[d])
      return cudaErrorNotSupported;
    far += (w.dim[d] - 1) * w.sst[d];
  }
  if (n == 0)
    return cudaSuccess;
  if (w.doff != 0 || w.soff < 0 || !fits32(n) || !fits32(far + 1) ||
      w.dst[w.rank - 1] != 1)
    return cudaErrorNotSupported;
  vtile_args t;
  int v = unit_elems(&w, esize, x, y);
  int bytes = v * esize;
  if (!wrap && w.sst[w.rank - 1] != 1 && as_vtile(&w, &t))
    return esize == 4 ? vtile_launch<uint32_t>(s, x, y, &t)
                      : vtile_launch<uint16_t>(s, x, y, &t);
  switch (bytes) {
  case 16: return vwalk_launch<uint4>(s, x, y, &w, v, n);
  case 8: return vwalk_launch<uint2>(s, x, y, &w, v, n);
  case 4: return vwalk_launch<uint32_t>(s, x, y, &w, v, n);
  default: return vwalk_launch<uint16_t>(s, x, y, &w, v, n);
  }
}

} // extern "C"
