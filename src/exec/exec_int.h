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

/* ---- the check's memo of products (memo.c) ---------------------------- */

typedef struct ex_memo ex_memo;
enum { EX_MEMO_OFF, EX_MEMO_RECORD, EX_MEMO_REPLAY };

/* A memo that records products' results up to budget bytes. */
ex_memo *ex_memo_new(size_t budget);
void ex_memo_free(ex_memo *m);
/* This thread's ex_gemm records into m (EX_MEMO_RECORD), reuses m's results
 * (EX_MEMO_REPLAY), or neither (EX_MEMO_OFF or m NULL). */
void ex_memo_use(ex_memo *m, int mode);
/* After each round of the check (memo.c: later rounds memoize only the
 * products reused in the first). */
void ex_memo_round_done(ex_memo *m);
/* Products recorded, and products reused instead of computed. */
void ex_memo_stats(const ex_memo *m, int64_t *recorded, int64_t *reused);

/* A product's hash, between ex_memo_begin and ex_memo_end. */
typedef struct ex_memo_key {
  ex_memo *memo; /* NULL: nothing to record */
  uint64_t lo, hi;
  int64_t at; /* the product's place in its run */
} ex_memo_key;

/* Before C[m,n] = A[m,k] B[k,n]: 1 when C was filled from the memo (the
 * product is done); else 0, and ex_memo_end records C once computed. */
int ex_memo_begin(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                  const float *B, int64_t ldb, float *C, int64_t ldc,
                  ex_memo_key *key);
void ex_memo_end(const ex_memo_key *key, int64_t m, int64_t n, const float *C,
                 int64_t ldc);

#endif
