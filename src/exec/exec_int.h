/* exec_int.h: helpers shared by the reference kernels (private to exec/).
 *
 * Many kernels walk a tensor as "rows": every dimension but the last picks a
 * row, the last runs along it. ex_row_offset turns a row number into an
 * element offset through a stride vector, which is how broadcasting (stride
 * 0), transposition (permuted strides), slicing and padding are written.
 */
#ifndef SUPEROPT_EXEC_INT_H
#define SUPEROPT_EXEC_INT_H

#include "exec.h"

/* Loops with fewer elements than this stay single-threaded. */
#define EX_PAR_MIN ((int64_t)1 << 16)

/* Row-major strides of s: st[i] = product of s->dim[i+1..rank-1]. */
static inline void ex_strides(const ir_shape *s, int64_t st[IR_MAX_RANK]) {
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s->dim[i];
  }
}

/* Length of the last dimension (1 for a scalar). */
static inline int64_t ex_last_dim(const ir_shape *s) {
  return s->rank > 0 ? s->dim[s->rank - 1] : 1;
}

/* Number of rows: elements over the length of the last dimension. */
static inline int64_t ex_rows(const ir_shape *s) {
  int64_t n = 1;
  for (int i = 0; i + 1 < s->rank; i++)
    n *= s->dim[i];
  return n;
}

/* Offset of row `row` of a shape whose leading dims are dim[0..nd-1]: the
 * row's coordinates in those dims times st[0..nd-1], summed. */
static inline int64_t ex_row_offset(int64_t row, const int64_t *dim,
                                    const int64_t *st, int nd) {
  int64_t off = 0;
  for (int i = nd - 1; i >= 0; i--) {
    off += row % dim[i] * st[i];
    row /= dim[i];
  }
  return off;
}

#endif
