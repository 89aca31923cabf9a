/* memplan.c: offsets for the activation arena from tensor lifetimes.
 *
 * Greedy by size: blocks are placed largest first; each goes to the lowest
 * offset where it overlaps no already placed block whose lifetime overlaps
 * its own. Lifetimes are inclusive node ranges, so a node's inputs and
 * outputs never share bytes (kernels need not be in-place safe).
 */
#include <stdlib.h>

#include "../gpu.h"

#define GPU_ALIGN ((size_t)256)

typedef struct span {
  size_t lo, hi;
} span;

typedef struct block {
  size_t size;
  int id;
} block;

static int by_size_desc(const void *a, const void *b) {
  const block *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return x->id - y->id;
}

static int by_lo(const void *a, const void *b) {
  size_t x = ((const span *)a)->lo, y = ((const span *)b)->lo;
  return (x > y) - (x < y);
}

/* Lowest offset >= 0 of `size` bytes clear of the sorted spans. */
static size_t first_fit(const span *s, int n, size_t size) {
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    if (s[i].lo >= at + size)
      break;
    if (s[i].hi > at)
      at = (s[i].hi + GPU_ALIGN - 1) / GPU_ALIGN * GPU_ALIGN;
  }
  return at;
}

size_t gpu_memplan(int n, const size_t *sizes, const int32_t *first,
                   const int32_t *last, size_t *off) {
  block *order = base_malloc(sizeof(block) * (size_t)(n ? n : 1));
  span *busy = base_malloc(sizeof(span) * (size_t)(n ? n : 1));
  if (!order || !busy) {
    free(order);
    free(busy);
    return (size_t)-1;
  }
  for (int i = 0; i < n; i++)
    order[i] = (block){sizes[i], i};
  qsort(order, (size_t)n, sizeof *order, by_size_desc);
  size_t total = 0;
  for (int k = 0; k < n; k++) {
    int b = order[k].id, nb = 0;
    for (int j = 0; j < k; j++) {
      int o = order[j].id;
      if (first[o] <= last[b] && first[b] <= last[o] && sizes[o])
        busy[nb++] = (span){off[o], off[o] + sizes[o]};
    }
    qsort(busy, (size_t)nb, sizeof *busy, by_lo);
    off[b] = first_fit(busy, nb, sizes[b]);
    if (off[b] + sizes[b] > total)
      total = off[b] + sizes[b];
  }
  free(order);
  free(busy);
  return (total + GPU_ALIGN - 1) / GPU_ALIGN * GPU_ALIGN;
}
