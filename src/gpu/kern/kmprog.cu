/* kmprog.cu: the kernel of a move node (ops.def `move`; kern.h
 * cxk_move_args): each output element, or group of vec elements along the
 * innermost dimension, maps its coordinates back through the program's
 * steps to one source element (or the pad value) in one pass: the chain of
 * slices, pads, transposes, reshapes and rolls it replaces made one round
 * trip through memory each. A template on the element type (float, or
 * the 2-byte f16 and bf16: copied as they are, the pad value rounded to
 * the type).
 */
#include <stdint.h>

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
