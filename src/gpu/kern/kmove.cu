/* kmove.cu: the CUDA executor's data-movement kernels: strided copies
 * (transpose, slice, layout conversions), concat / split, and the rows
 * of a convolution's GEMM (im2col).
 *
 * A strided walk is first simplified on the host: its dimensions are
 * ordered by destination stride, dimensions of size 1 are dropped and
 * neighbours that are contiguous in both source and destination are merged (a
 * channel slice of NCHW becomes rows of C' * H * W floats; a [B,S,H,D] ->
 * [B,H,S,D] transpose becomes rows of D floats). Then:
 *   - rows contiguous in both: a copy of 16-byte units where every offset
 *     allows (4 floats, 8 halves), else (halves) of pairs, else of
 *     elements;
 *   - the destination's innermost dimension strided in the source, and
 *     another dimension contiguous there (NCHW <-> NHWC, matrix
 *     transposes): 32 x 32 tiles through shared memory, so that reads and
 *     writes both coalesce;
 *   - anything else: one thread per element.
 * The walk runs on float32 elements (cxk_copy) and on the 2-byte elements
 * of half tensors, moved as bits (cxk_copy16), with 32-bit indices where
 * every offset fits.
 * Concat and split move the parts of up to CXK_PARTS inputs (outputs) in
 * one launch, float4 where every part's row allows. A concat with its
 * channel shuffle folded in (plan/shuffle.c) writes the shuffled channels
 * straight into the slices that read them.
 */
#include <stdint.h>
#include <string.h>

#include "kern.h"
#include "kutil.cuh"

namespace {

/* One thread per element of T (float, or float4 with strides in 4s). */
template <typename I, typename T>
__global__ void k_walk(const T *src, T *dst, I n,
                       const __grid_constant__ cxk_walk w) {
  GRID_LOOP_T(I, i, n) {
    I rem = i, so = (I)w.soff, dof = (I)w.doff;
    for (int d = w.rank - 1; d >= 0; d--) {
      I c = rem % (I)w.dim[d];
      rem /= (I)w.dim[d];
      so += c * (I)w.sst[d];
      dof += c * (I)w.dst[d];
    }
    dst[dof] = src[so];
  }
}

/* A tiled transpose: dimension L contiguous in dst (stride 1) with source
 * stride sl, dimension K contiguous in src with destination stride dk,
 * over a batch of the remaining dimensions. */
typedef struct tr_args {
  int nb;
  int64_t bdim[CXK_RANK], bs[CXK_RANK], bd[CXK_RANK];
  int64_t nbatch, nl, nk, sl, dk, soff, doff;
} tr_args;

template <typename I, typename E>
__global__ void k_transpose(const E *src, E *dst,
                            const __grid_constant__ tr_args t) {
  __shared__ E tile[32][33];
  I l0 = (I)blockIdx.x * 32, k0 = (I)blockIdx.y * 32;
  for (I b = blockIdx.z; b < (I)t.nbatch; b += gridDim.z) {
    I so = (I)t.soff, dof = (I)t.doff, rem = b;
    for (int d = t.nb - 1; d >= 0; d--) {
      I c = rem % (I)t.bdim[d];
      rem /= (I)t.bdim[d];
      so += c * (I)t.bs[d];
      dof += c * (I)t.bd[d];
    }
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
      I l = l0 + j, k = k0 + threadIdx.x;
      if (l < (I)t.nl && k < (I)t.nk)
        tile[j][threadIdx.x] = src[so + k + l * (I)t.sl];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += blockDim.y) {
      I k = k0 + j, l = l0 + threadIdx.x;
      if (l < (I)t.nl && k < (I)t.nk)
        dst[dof + l + k * (I)t.dk] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

/* Parts of one concat (split) launch, in units of T: whole row `pitch`,
 * part k is columns [at[k], at[k+1]) of it, `width` = at[np] - at[0].
 * A concat's values go through a relu when `relu` is set; a split writes
 * part k to dst[k] and its relu to rdst[k], each where not NULL. */
typedef struct cat_args {
  int np;
  int relu;
  const float *src[CXK_PARTS];
  float *dst[CXK_PARTS], *rdst[CXK_PARTS];
  int64_t at[CXK_PARTS + 1];
  int64_t pitch, rows;
} cat_args;

__device__ __forceinline__ float relu_t(int r, float v) {
  return r && !(v > 0.0f) ? 0.0f : v;
}
__device__ __forceinline__ float4 relu_t(int r, float4 v) {
  if (r)
    v.x = relu_t(1, v.x), v.y = relu_t(1, v.y), v.z = relu_t(1, v.z),
    v.w = relu_t(1, v.w);
  return v;
}

template <typename I, typename T, bool SPLIT>
__global__ void k_cat(const __grid_constant__ cat_args a) {
  I width = (I)(a.at[a.np] - a.at[0]);
  GRID_LOOP_T(I, i, (I)a.rows * width) {
    I row = i / width, col = (I)a.at[0] + i % width;
    int k = 0;
    while (k + 1 < a.np && col >= (I)a.at[k + 1])
      k++;
    I w = (I)(a.at[k + 1] - a.at[k]), part = row * w + col - (I)a.at[k];
    I whole = row * (I)a.pitch + col;
    if (SPLIT) {
      T v = ((const T *)a.src[0])[whole];
      if (a.dst[k])
        ((T *)a.dst[k])[part] = v;
      if (a.rdst[k])
        ((T *)a.rdst[k])[part] = relu_t(1, v);
    } else {
      ((T *)a.dst[0])[whole] = relu_t(a.relu, ((const T *)a.src[k])[part]);
    }
  }
}

/* Channel shuffle of a concat: a thread per pixel and concat channel j of
 * each group (C / g of them), moving concat channels i * (C / g) + j, i < g,
 * to result channels j * g + i: neighbouring threads read neighbouring
 * channels of one input (the input a thread reads is the same across a warp
 * but at part boundaries) and write to one output. Strided reads and
 * writes in either layout. G: g known at compile time (2), else 0. FLAT:
 * every tensor's pixels (n, y, x) are one stride apart (channels-last), so
 * a pixel's offset needs no division. T: the element (float, or uint16_t
 * for f16 and bf16: a move copies their bits). */
template <typename T, typename I, int G, bool FLAT>
__global__ void k_shuffle(const __grid_constant__ cxk_shuffle_args a) {
  const I g = G ? (I)G : (I)a.g;
  I hw = (I)a.h * (I)a.w, cg = (I)a.c / g;
  GRID_LOOP_T(I, t, (I)a.n * hw * cg) {
    I p = t / cg, j = t - p * cg, nn = 0, y = 0, x = p;
    if (!FLAT) {
      nn = p / hw;
      I r = p - nn * hw;
      y = r / (I)a.w;
      x = r - y * (I)a.w;
    }
#pragma unroll
    for (I i = 0; i < g; i++) {
      I cc = i * cg + j, oc = j * g + i;
      int k = 0;
      while (k + 1 < a.nin && cc >= (I)a.in_c0[k + 1])
        k++;
      const int64_t *is = a.in_st[k];
      T v =
          ((const T *)a.in[k])[nn * (I)is[0] + (cc - (I)a.in_c0[k]) * (I)is[1] +
                               y * (I)is[2] + x * (I)is[3]];
      for (int o = 0; o < a.nout; o++)
        if (oc >= (I)a.out_lo[o] && oc < (I)a.out_hi[o]) {
          const int64_t *os = a.out_st[o];
          ((T *)a.out[o])[nn * (I)os[0] + (oc - (I)a.out_lo[o]) * (I)os[1] +
                          y * (I)os[2] + x * (I)os[3]] = v;
        }
    }
  }
}

/* im2col (cxk_im2col): a thread per column of the kcols = kh * kw * c / V
 * columns in units of T (V floats: float4 where c allows), over the rows
 * threadIdx.y + blockDim.y * blockIdx.y, + gridDim.y * blockDim.y, ...:
 * several rows a block where the columns are fewer than its threads
 * (ConvNeXt's stem: 48). Its column divided once, each row once; I:
 * int32_t where every index fits. */
template <typename I, typename T>
__global__ void k_im2col(const T *x, T *y, const __grid_constant__ cxk_im2col a,
                         I cv, I kcols, I rows) {
  I col = (I)(blockIdx.x * blockDim.x + threadIdx.x);
  if (col >= kcols)
    return;
  I ch = col % cv, t = col / cv, q = t % a.kw, p = t / a.kw;
  I oh = (I)a.oh, ow = (I)a.ow, h = (I)a.h, w = (I)a.w;
  for (I r = (I)(blockIdx.y * blockDim.y + threadIdx.y); r < rows;
       r += (I)(gridDim.y * blockDim.y)) {
    I j = r % ow, rest = r / ow, i = rest % oh, b = rest / oh;
    I hh = i * a.sh - a.pt + p * a.dh, ww = j * a.sw - a.pl + q * a.dw;
    T v = {};
    if (hh >= 0 && hh < h && ww >= 0 && ww < w)
      v = x[((b * h + hh) * w + ww) * cv + ch];
    y[r * kcols + col] = v;
  }
}

template <typename T>
cudaError_t im2col_launch(cudaStream_t s, const T *x, T *y, const cxk_im2col *a,
                          int64_t cv) {
  int64_t kcols = a->kh * a->kw * cv, rows = a->n * a->oh * a->ow;
  int bx = kcols >= kThreads ? kThreads : (int)((kcols + 31) / 32 * 32);
  int by = kThreads / bx;
  int64_t gy = (rows + by - 1) / by;
  dim3 grid((unsigned)((kcols + bx - 1) / bx),
            (unsigned)(gy < 65535 ? gy : 65535)),
      block((unsigned)bx, (unsigned)by);
  if (fits32(a->n * a->h * a->w * cv) && fits32(rows * kcols))
    k_im2col<int32_t, T><<<grid, block, 0, s>>>(x, y, *a, (int32_t)cv,
                                                (int32_t)kcols, (int32_t)rows);
  else
    k_im2col<int64_t, T><<<grid, block, 0, s>>>(x, y, *a, cv, kcols, rows);
  return cudaGetLastError();
}

} // namespace

extern "C" {

void cxk_walk_simplify(cxk_walk *w) {
  /* the walk's dimensions in any order: the destination's largest stride
   * first, so that neighbouring threads write neighbouring floats */
  for (int i = 1; i < w->rank; i++)
    for (int j = i; j > 0 && w->dst[j - 1] < w->dst[j]; j--) {
      int64_t t = w->dim[j];
      w->dim[j] = w->dim[j - 1], w->dim[j - 1] = t;
      t = w->sst[j], w->sst[j] = w->sst[j - 1], w->sst[j - 1] = t;
      t = w->dst[j], w->dst[j] = w->dst[j - 1], w->dst[j - 1] = t;
    }
  int64_t *st[2] = {w->sst, w->dst};
  dims_merge(&w->rank, w->dim, st, 2, true);
}

/* The tiled transpose applies: the innermost destination dimension has
 * destination stride 1 and is strided in the source, another dimension
 * has source stride 1, and both are long enough to fill tiles. */
static bool as_transpose(const cxk_walk *w, tr_args *t) {
  int L = w->rank - 1, K = -1;
  if (w->rank < 2 || w->dst[L] != 1 || w->sst[L] == 1)
    return false;
  for (int d = 0; d < L; d++)
    if (w->sst[d] == 1)
      K = d;
  if (K < 0 || w->dim[L] < 8 || w->dim[K] < 8 || (w->dim[K] + 31) / 32 > 65535)
    return false;
  memset(t, 0, sizeof *t);
  t->nl = w->dim[L], t->sl = w->sst[L];
  t->nk = w->dim[K], t->dk = w->dst[K];
  t->soff = w->soff, t->doff = w->doff, t->nbatch = 1;
  for (int d = 0; d < L; d++)
    if (d != K) {
      t->bdim[t->nb] = w->dim[d];
      t->bs[t->nb] = w->sst[d];
      t->bd[t->nb++] = w->dst[d];
      t->nbatch *= w->dim[d];
    }
  return true;
}

} // extern "C"

namespace {

/* Rows contiguous in both, every stride and offset a multiple of f
 * elements of esize bytes and both pointers aligned to f * esize bytes:
 * the walk in units of f elements. */
static bool as_vec(const cxk_walk *w, int esize, int f, const void *src,
                   const void *dst, cxk_walk *v) {
  int L = w->rank - 1;
  uintptr_t al = (uintptr_t)(f * esize) - 1;
  if (w->sst[L] != 1 || w->dst[L] != 1 || w->dim[L] % f || w->soff % f ||
      w->doff % f || ((uintptr_t)src & al) || ((uintptr_t)dst & al))
    return false;
  for (int d = 0; d < L; d++)
    if (w->sst[d] % f || w->dst[d] % f)
      return false;
  *v = *w;
  v->dim[L] /= f;
  for (int d = 0; d < L; d++)
    v->sst[d] /= f, v->dst[d] /= f;
  v->soff /= f, v->doff /= f, v->extent /= f;
  return true;
}

/* One thread per unit U (an element, or a vector of them) of the walk. */
template <typename U>
void walk_launch(cudaStream_t s, const void *src, void *dst, int64_t n,
                 const cxk_walk *w, bool small) {
  if (small)
    k_walk<int32_t, U><<<blocks_for(n), kThreads, 0, s>>>(
        (const U *)src, (U *)dst, (int32_t)n, *w);
  else
    k_walk<int64_t, U>
        <<<blocks_for(n), kThreads, 0, s>>>((const U *)src, (U *)dst, n, *w);
}

/* The strided copy of elements E (float, or uint16_t for the half types:
 * moved as bits): 16-byte units where rows and offsets allow (4 floats, 8
 * halves), else 4-byte pairs of halves, else the tiled transpose, else one
 * thread an element; 32-bit indices where every offset fits. */
template <typename E>
cudaError_t copy_walk(cudaStream_t s, const E *src, E *dst,
                      const cxk_walk *w0) {
  cxk_walk w = *w0, v;
  cxk_walk_simplify(&w);
  int64_t n = 1;
  for (int d = 0; d < w.rank; d++)
    n *= w.dim[d];
  if (n <= 0)
    return cudaSuccess;
  bool small = fits32(w.extent + w.soff + w.doff + 1) && fits32(n);
  const int es = (int)sizeof(E), f16 = 16 / es;
  tr_args t;
  if (as_vec(&w, es, f16, src, dst, &v))
    walk_launch<uint4>(s, src, dst, n / f16, &v, small);
  else if (es == 2 && as_vec(&w, es, 2, src, dst, &v))
    walk_launch<uint32_t>(s, src, dst, n / 2, &v, small);
  else if (as_transpose(&w, &t)) {
    int64_t z = t.nbatch < 65535 ? t.nbatch : 65535;
    dim3 grid((unsigned)((t.nl + 31) / 32), (unsigned)((t.nk + 31) / 32),
              (unsigned)z);
    if (small)
      k_transpose<int32_t, E><<<grid, dim3(32, 8), 0, s>>>(src, dst, t);
    else
      k_transpose<int64_t, E><<<grid, dim3(32, 8), 0, s>>>(src, dst, t);
  } else
    walk_launch<E>(s, src, dst, n, &w, small);
  return cudaGetLastError();
}

} // namespace

template <typename T>
static void shuffle_launch(cudaStream_t s, const cxk_shuffle_args *a,
                           unsigned nb, bool small, bool flat) {
#define SHUF(I, G, F) k_shuffle<T, I, G, F><<<nb, kThreads, 0, s>>>(*a)
  if (small && a->g == 2 && flat)
    SHUF(int32_t, 2, true);
  else if (small && a->g == 2)
    SHUF(int32_t, 2, false);
  else if (small)
    SHUF(int32_t, 0, false);
  else
    SHUF(int64_t, 0, false);
#undef SHUF
}

extern "C" {

cudaError_t cxk_copy(cudaStream_t s, const float *src, float *dst,
                     const cxk_walk *w0) {
  return copy_walk<float>(s, src, dst, w0);
}

/* Half tensors (kern.h: khalf.cu's family, here for the walk's kernels). */
cudaError_t cxk_copy16(cudaStream_t s, const void *src, void *dst,
                       const cxk_walk *w0) {
  return copy_walk<uint16_t>(s, (const uint16_t *)src, (uint16_t *)dst, w0);
}

cudaError_t cxk_im2col_rows(cudaStream_t s, const float *x, float *y,
                            const cxk_im2col *a) {
  bool al = aligned16(x) && aligned16(y);
  if (a->c % 4 == 0 && al)
    return im2col_launch(s, (const float4 *)x, (float4 *)y, a, a->c / 4);
  /* Few channels (ConvNeXt's stem: 3), no dilation across, no padding on
   * the left and no window past the right edge: a kernel row's kw * c
   * floats are one run of x, always inside it across. The image seen as
   * rows of w * c / V units of V floats (float4 where the runs and their
   * starts allow), the run as kw * c / V one-unit "channels" of a window
   * that steps sw * c / V units. */
  if (a->dw == 1 && a->pl == 0 && (a->ow - 1) * a->sw + a->kw <= a->w) {
    int v = al && (a->kw * a->c) % 4 == 0 && (a->sw * a->c) % 4 == 0 &&
                    (a->w * a->c) % 4 == 0
                ? 4
                : 1;
    cxk_im2col r = *a;
    r.w = a->w * a->c / v, r.c = v;
    r.kw = (int)(a->kw * a->c / v), r.sw = (int)(a->sw * a->c / v);
    if (v == 4)
      return im2col_launch(s, (const float4 *)x, (float4 *)y, &r, 1);
    return im2col_launch(s, x, y, &r, 1);
  }
  return im2col_launch(s, x, y, a, a->c);
}

/* Concat (split) of parts along one axis: `rows` rows of the whole, part k
 * w[k] floats of each. At most CXK_PARTS parts per launch. */
static cudaError_t cat_launch(cudaStream_t s, bool split, const float *whole,
                              float *wdst, float *const *parts_out,
                              float *const *relu_out,
                              const float *const *parts_in, const int64_t *w,
                              int np, int relu, int64_t first, int64_t pitch,
                              int64_t rows) {
  cat_args a;
  memset(&a, 0, sizeof a);
  a.np = np, a.pitch = pitch, a.rows = rows, a.relu = relu;
  bool vec = pitch % 4 == 0 && first % 4 == 0 &&
             aligned16(split ? (const void *)whole : (const void *)wdst);
  a.at[0] = first;
  for (int k = 0; k < np; k++) {
    a.at[k + 1] = a.at[k] + w[k];
    vec = vec && w[k] % 4 == 0 &&
          aligned16(split ? (const void *)parts_out[k]
                          : (const void *)parts_in[k]);
    if (split) {
      a.dst[k] = parts_out[k];
      a.rdst[k] = relu_out ? relu_out[k] : NULL;
      vec = vec && aligned16(a.rdst[k]);
    } else
      a.src[k] = parts_in[k];
  }
  if (split)
    a.src[0] = whole;
  else
    a.dst[0] = wdst;
  int q = vec ? 4 : 1;
  if (vec) {
    a.pitch /= 4;
    for (int k = 0; k <= np; k++)
      a.at[k] /= 4;
  }
  int64_t n = rows * (a.at[np] - a.at[0]);
  if (n == 0)
    return cudaSuccess;
  bool small = fits32(rows * pitch / q + 1);
#define CAT(I, T)                                                              \
  (split ? k_cat<I, T, true>                                                   \
         : k_cat<I, T, false>)<<<blocks_for(n), kThreads, 0, s>>>(a)
  if (vec && small)
    CAT(int32_t, float4);
  else if (vec)
    CAT(int64_t, float4);
  else if (small)
    CAT(int32_t, float);
  else
    CAT(int64_t, float);
#undef CAT
  return cudaGetLastError();
}

/* Parts of a concat (split) in launches of up to CXK_PARTS. */
static cudaError_t parts(cudaStream_t s, bool split, const float *whole_in,
                         float *whole_out, float *const *out,
                         float *const *rout, const float *const *in,
                         const int64_t *w, int np, int relu, int64_t rows) {
  int64_t pitch = 0, first = 0;
  for (int k = 0; k < np; k++)
    pitch += w[k];
  for (int k = 0; k < np; k += CXK_PARTS) {
    int m = np - k < CXK_PARTS ? np - k : CXK_PARTS;
    cudaError_t e =
        cat_launch(s, split, whole_in, whole_out, split ? out + k : NULL,
                   rout ? rout + k : NULL, split ? NULL : in + k, w + k, m,
                   relu, first, pitch, rows);
    if (e != cudaSuccess)
      return e;
    for (int j = 0; j < m; j++)
      first += w[k + j];
  }
  return cudaSuccess;
}

cudaError_t cxk_concat(cudaStream_t s, float *dst, const float *const *src,
                       const int64_t *w, int np, int relu, int64_t rows) {
  return parts(s, false, NULL, dst, NULL, NULL, src, w, np, relu != 0, rows);
}

cudaError_t cxk_split(cudaStream_t s, const float *src, float *const *dst,
                      float *const *rdst, const int64_t *w, int np,
                      int64_t rows) {
  return parts(s, true, src, NULL, dst, rdst, NULL, w, np, 0, rows);
}

cudaError_t cxk_shuffle(cudaStream_t s, const cxk_shuffle_args *a) {
  if (a->nin < 1 || a->nin > CXK_PARTS || a->nout < 1 || a->nout > CXK_PARTS ||
      a->g < 1 || a->c % a->g != 0)
    return cudaErrorInvalidValue;
  int64_t npix = a->n * a->h * a->w;
  if (npix == 0 || a->c == 0)
    return cudaSuccess;
  /* pixels one stride apart in every tensor: n's stride h times y's, y's
   * w times x's */
  bool flat = true;
  for (int k = 0; k < a->nin + a->nout; k++) {
    const int64_t *st = k < a->nin ? a->in_st[k] : a->out_st[k - a->nin];
    flat = flat && st[0] == a->h * st[2] && st[2] == a->w * st[3];
  }
  int64_t n = npix * (a->c / a->g);
  bool small = fits32(npix * a->c);
  unsigned nb = blocks_for(n);
  if (a->half)
    shuffle_launch<uint16_t>(s, a, nb, small, flat);
  else
    shuffle_launch<float>(s, a, nb, small, flat);
  return cudaGetLastError();
}

} // extern "C"
