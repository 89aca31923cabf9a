/* memo.c: the end-to-end check's memo of matrix products (ex_memo).
 *
 * In a round of the check the optimized graph often computes products the
 * original computed already, on the same bits: a matmul whose bias or
 * activation moved into an epilogue, a convolution that took its relu, a
 * layer that no rewrite touched. The executor is deterministic (a product's
 * result depends on its operands' values and sizes alone, never on the
 * thread count: gemm.c), so such a product's result is the original's, bit
 * for bit. While the original runs, ex_gemm records each large product's
 * result under a 128-bit hash (XXH3) of its sizes and both operands' values;
 * while the optimized graph runs, a product found there is copied instead of
 * computed. The outputs compared are the same bits as without the memo.
 *
 * Rounds: every round runs the same graphs on values of the same shapes, so
 * their products come in the same order. The first round records every
 * product's result up to a quarter of the byte budget and every product's
 * key, and notes which of them the optimized graph computes again, by their
 * place in each run's order; later rounds record (up to the whole budget)
 * and look up only those (a product missed that way is computed, as without
 * the memo), reusing the first round's buffers. So a graph that shares no
 * product with the original (ViT-B/16 optimized: its first attention block
 * differs) costs a quarter of the budget in the first round only.
 *
 * The memo is per thread (ex_memo_use) and only the thread that set it uses
 * it, outside parallel regions (products inside one, per attention head or
 * batch, are computed as before).
 */
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "exec_int.h"

typedef struct memo_entry {
  XXH128_hash_t key;
  int64_t m, n;
  int64_t at; /* its place in the original's order of products */
  float *c;   /* m x n, packed; NULL: the key alone (the first round) */
  int used;   /* 0: an empty slot */
} memo_entry;

/* Places in a run's order of products (a growable set of flags). */
typedef struct memo_marks {
  unsigned char *on;
  int64_t n;
} memo_marks;

struct ex_memo {
  memo_entry *e; /* open addressing, cap a power of 2 */
  int64_t cap, count;
  size_t bytes, budget;
  int mode;           /* EX_MEMO_RECORD or EX_MEMO_REPLAY */
  int64_t seq;        /* products met so far in this run */
  int learned;        /* a round is done: only marked places are memoized */
  memo_marks mark[2]; /* [0] the original's places, [1] the optimized's */
  float **spare;      /* the last round's buffers, for reuse */
  int64_t *spare_n, nspare;
  int64_t recorded, reused;
};

static _Thread_local ex_memo *current;

ex_memo *ex_memo_new(size_t budget) {
  ex_memo *m = base_calloc(1, sizeof *m);
  if (m)
    m->budget = budget;
  return m;
}

/* Moves the entries' buffers to the spares (freeing the older spares) and
 * empties the table. */
static void retire(ex_memo *m) {
  for (int64_t i = 0; i < m->nspare; i++)
    free(m->spare[i]);
  free(m->spare);
  free(m->spare_n);
  m->nspare = 0;
  m->spare = base_malloc(sizeof *m->spare * (size_t)(m->count + 1));
  m->spare_n = base_malloc(sizeof *m->spare_n * (size_t)(m->count + 1));
  for (int64_t i = 0; i < m->cap; i++) {
    memo_entry *e = &m->e[i];
    if (e->c && m->spare && m->spare_n) {
      m->spare[m->nspare] = e->c;
      m->spare_n[m->nspare++] = e->m * e->n;
    } else {
      free(e->c);
    }
    e->c = NULL;
    e->used = 0;
  }
  m->count = 0;
  m->bytes = 0;
}

void ex_memo_free(ex_memo *m) {
  if (!m)
    return;
  retire(m);
  retire(m); /* the spares too */
  free(m->spare);
  free(m->spare_n);
  free(m->e);
  free(m->mark[0].on);
  free(m->mark[1].on);
  if (current == m)
    current = NULL;
  free(m);
}

void ex_memo_use(ex_memo *m, int mode) {
  if (m) {
    m->mode = mode;
    m->seq = 0;
  }
  current = m && mode ? m : NULL;
}

void ex_memo_round_done(ex_memo *m) {
  if (!m)
    return;
  m->learned = 1;
  retire(m);
}

void ex_memo_stats(const ex_memo *m, int64_t *recorded, int64_t *reused) {
  *recorded = m ? m->recorded : 0;
  *reused = m ? m->reused : 0;
}

/* Flags place i of s (growing it); silently not when out of memory (the
 * product is then computed in later rounds). */
static void mark_set(memo_marks *s, int64_t i) {
  if (i >= s->n) {
    int64_t n = s->n ? s->n : 64;
    while (n <= i)
      n *= 2;
    unsigned char *on = base_realloc(s->on, (size_t)n);
    if (!on)
      return;
    memset(on + s->n, 0, (size_t)(n - s->n));
    s->on = on;
    s->n = n;
  }
  s->on[i] = 1;
}

static int mark_get(const memo_marks *s, int64_t i) {
  return i < s->n && s->on[i];
}

/* The hash of a product: its sizes, then A's m rows of k and B's k rows of
 * n (strided), as values. */
static XXH128_hash_t product_key(int64_t m, int64_t n, int64_t k,
                                 const float *A, int64_t lda, const float *B,
                                 int64_t ldb) {
  XXH3_state_t st;
  int64_t dims[3] = {m, n, k};
  XXH3_128bits_reset(&st);
  XXH3_128bits_update(&st, dims, sizeof dims);
  if (lda == k)
    XXH3_128bits_update(&st, A, sizeof(float) * (size_t)(m * k));
  else
    for (int64_t i = 0; i < m; i++)
      XXH3_128bits_update(&st, A + i * lda, sizeof(float) * (size_t)k);
  if (ldb == n)
    XXH3_128bits_update(&st, B, sizeof(float) * (size_t)(k * n));
  else
    for (int64_t i = 0; i < k; i++)
      XXH3_128bits_update(&st, B + i * ldb, sizeof(float) * (size_t)n);
  return XXH3_128bits_digest(&st);
}

/* The slot of key: its entry, or the empty slot where it would go. */
static memo_entry *slot(const ex_memo *m, XXH128_hash_t key) {
  int64_t i = (int64_t)(key.low64 & (uint64_t)(m->cap - 1));
  while (m->e[i].used && !XXH128_isEqual(m->e[i].key, key))
    i = (i + 1) & (m->cap - 1);
  return &m->e[i];
}

/* Doubles the table (at least 64 slots): 0, or -1 out of memory. */
static int grow(ex_memo *m) {
  int64_t cap = m->cap ? 2 * m->cap : 64;
  memo_entry *old = m->e, *e = base_calloc((size_t)cap, sizeof *e);
  if (!e)
    return -1;
  int64_t ocap = m->cap;
  m->e = e;
  m->cap = cap;
  for (int64_t i = 0; i < ocap; i++)
    if (old[i].used)
      *slot(m, old[i].key) = old[i];
  free(old);
  return 0;
}

/* A buffer of n floats: a spare of that size, else a new one. */
static float *buffer(ex_memo *m, int64_t n) {
  for (int64_t i = 0; i < m->nspare; i++)
    if (m->spare_n[i] == n) {
      float *c = m->spare[i];
      m->spare[i] = m->spare[--m->nspare];
      m->spare_n[i] = m->spare_n[m->nspare];
      return c;
    }
  return base_malloc(sizeof(float) * (size_t)n);
}

/* The memo in use on this thread, outside parallel regions: NULL if none. */
static ex_memo *active(void) {
#ifdef _OPENMP
  if (current && omp_in_parallel())
    return NULL;
#endif
  return current;
}

int ex_memo_begin(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                  const float *B, int64_t ldb, float *C, int64_t ldc,
                  ex_memo_key *key) {
  ex_memo *mo = active();
  key->memo = NULL;
  if (!mo)
    return 0;
  int replay = mo->mode == EX_MEMO_REPLAY;
  int64_t at = mo->seq++;
  if (mo->learned && !mark_get(&mo->mark[replay], at))
    return 0;
  XXH128_hash_t h = product_key(m, n, k, A, lda, B, ldb);
  key->lo = h.low64;
  key->hi = h.high64;
  key->at = at;
  if (!replay) {
    key->memo = mo;
    return 0;
  }
  memo_entry *e = mo->cap ? slot(mo, h) : NULL;
  if (!e || !e->used || e->m != m || e->n != n)
    return 0;
  if (!mo->learned) {
    mark_set(&mo->mark[0], e->at);
    mark_set(&mo->mark[1], at);
  }
  if (!e->c)
    return 0; /* its key alone: computed this round, reused in later ones */
  for (int64_t i = 0; i < m; i++)
    memcpy(C + i * ldc, e->c + i * n, sizeof(float) * (size_t)n);
  mo->reused++;
  return 1;
}

void ex_memo_end(const ex_memo_key *key, int64_t m, int64_t n, const float *C,
                 int64_t ldc) {
  ex_memo *mo = key->memo;
  size_t bytes = sizeof(float) * (size_t)(m * n);
  XXH128_hash_t h = {key->lo, key->hi};
  if (!mo || (2 * (mo->count + 1) > mo->cap && grow(mo)))
    return;
  memo_entry *e = slot(mo, h);
  if (e->used)
    return; /* the same product again: recorded already */
  size_t budget = mo->learned ? mo->budget : mo->budget / 4;
  float *c = mo->bytes + bytes <= budget ? buffer(mo, m * n) : NULL;
  if (!c && mo->learned)
    return;
  for (int64_t i = 0; c && i < m; i++)
    memcpy(c + i * n, C + i * ldc, sizeof(float) * (size_t)n);
  *e = (memo_entry){h, m, n, key->at, c, 1};
  mo->count++;
  if (c) {
    mo->bytes += bytes;
    mo->recorded++;
  }
}
