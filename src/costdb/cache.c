/* cache.c: the in-memory map from a node's byte key to its cost (see
 * cd_cache in cd_int.h): open addressing over entries, keys in one blob. */
#include <stdlib.h>
#include <string.h>

#include "cd_int.h"

const cd_centry *cd_cache_get(const cd_cache *c, const void *key, size_t len,
                              uint64_t hash) {
  if (!c->capslot)
    return NULL;
  uint32_t mask = (uint32_t)c->capslot - 1;
  for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
    int32_t s = c->slot[i];
    if (!s)
      return NULL;
    const cd_centry *e = &c->e[s - 1];
    if (e->hash == hash && e->len == len && !memcmp(c->keys + e->off, key, len))
      return e;
  }
}

static void place(cd_cache *c, int32_t idx) {
  uint32_t mask = (uint32_t)c->capslot - 1;
  uint32_t i = (uint32_t)c->e[idx].hash & mask;
  while (c->slot[i])
    i = (i + 1) & mask;
  c->slot[i] = idx + 1;
}

static int grow_slots(cd_cache *c) {
  int32_t cap = c->capslot ? c->capslot * 2 : 256;
  int32_t *s = base_calloc((size_t)cap, sizeof *s);
  if (!s)
    return -1;
  free(c->slot);
  c->slot = s;
  c->capslot = cap;
  for (int32_t i = 0; i < c->n; i++)
    place(c, i);
  return 0;
}

static int reserve(cd_cache *c, size_t len) {
  if (c->n == c->cap) {
    int32_t cap = c->cap ? c->cap * 2 : 128;
    cd_centry *e = base_realloc(c->e, (size_t)cap * sizeof *e);
    if (!e)
      return -1;
    c->e = e;
    c->cap = cap;
  }
  if (c->nkeys + len > c->capkeys) {
    size_t cap = (c->capkeys + len) * 2;
    unsigned char *k = base_realloc(c->keys, cap);
    if (!k)
      return -1;
    c->keys = k;
    c->capkeys = cap;
  }
  if (2 * (c->n + 1) >= c->capslot)
    return grow_slots(c);
  return 0;
}

int cd_cache_put(cd_cache *c, const void *key, size_t len, uint64_t hash,
                 double ms, int estimated) {
  if (reserve(c, len))
    return -1;
  cd_centry *e = &c->e[c->n];
  e->hash = hash;
  e->off = c->nkeys;
  e->len = len;
  e->ms = ms;
  e->estimated = estimated;
  memcpy(c->keys + c->nkeys, key, len);
  c->nkeys += len;
  place(c, c->n++);
  return 0;
}

void cd_cache_clear(cd_cache *c) {
  c->n = 0;
  c->nkeys = 0;
  if (c->capslot)
    memset(c->slot, 0, (size_t)c->capslot * sizeof *c->slot);
}

void cd_cache_free(cd_cache *c) {
  free(c->e);
  free(c->slot);
  free(c->keys);
  memset(c, 0, sizeof *c);
}
