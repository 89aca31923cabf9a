/* u64set.c: a set of 64-bit hashes (base_u64set), open addressing with
 * linear probing in a power-of-two table kept at most half full; 0 marks
 * an empty slot, so a hash 0 is stored as 1. The search's seen graphs and
 * the rule instances' refused kinds use it. */
#include <stdlib.h>
#include <string.h>

#include "base.h"

/* Puts h (not 0) into the table t of cap slots, which has a free one. */
static int put(uint64_t *t, int cap, uint64_t h) {
  for (int j = (int)(h & (uint64_t)(cap - 1));; j = (j + 1) & (cap - 1)) {
    if (t[j] == h)
      return 0;
    if (!t[j]) {
      t[j] = h;
      return 1;
    }
  }
}

int base_u64set_add(base_u64set *s, uint64_t h, int first_cap) {
  if (!h)
    h = 1;
  if (2 * (s->n + 1) > s->cap) {
    int cap = s->cap ? 2 * s->cap : first_cap;
    uint64_t *t = base_calloc((size_t)cap, sizeof *t);
    if (!t)
      return -1;
    for (int i = 0; i < s->cap; i++)
      if (s->slot[i])
        put(t, cap, s->slot[i]);
    free(s->slot);
    s->slot = t;
    s->cap = cap;
  }
  int added = put(s->slot, s->cap, h);
  s->n += added;
  return added;
}

void base_u64set_clear(base_u64set *s) {
  if (s->slot)
    memset(s->slot, 0, sizeof *s->slot * (size_t)s->cap);
  s->n = 0;
}

void base_u64set_free(base_u64set *s) {
  free(s->slot);
  *s = (base_u64set){0};
}
