/* arena.c: bump allocator for memory that lives and dies with one graph.
 *
 * Blocks are chained; base_arena_free releases them all at once. Allocations
 * are zeroed and 16-byte aligned. Large requests get a block of their own.
 * The first block is small (a rule side of a few nodes fits in it: the
 * rule generator keeps millions of such graphs) and each further block
 * doubles, up to ARENA_BLOCK.
 */
#include <stdlib.h>
#include <string.h>

#include "base.h"

#define ARENA_FIRST 1024
#define ARENA_BLOCK (64 * 1024)

typedef struct block {
  struct block *next;
  size_t used, size;
  _Alignas(16) unsigned char mem[];
} block;

struct base_arena {
  block *head;
  size_t next; /* size of the next ordinary block */
};

base_arena *base_arena_new(void) { return base_calloc(1, sizeof(base_arena)); }

base_arena *base_arena_new_sized(size_t first) {
  base_arena *a = base_arena_new();
  if (a)
    a->next = first < 16 ? 16 : (first + 15) & ~(size_t)15;
  return a;
}

static block *block_new(size_t size) {
  block *b = base_malloc(sizeof(block) + size);
  if (!b)
    return NULL;
  b->next = NULL;
  b->used = 0;
  b->size = size;
  return b;
}

void *base_arena_alloc(base_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0)
    n = 16;
  block *b = a->head;
  if (!b || b->size - b->used < n) {
    size_t size = a->next ? a->next : ARENA_FIRST;
    while (size < 2 * n && size < ARENA_BLOCK)
      size *= 2;
    b = block_new(n > ARENA_BLOCK / 4 ? n : size);
    if (!b)
      return NULL;
    if (n <= ARENA_BLOCK / 4)
      a->next = size < ARENA_BLOCK ? 2 * size : ARENA_BLOCK;
    if (n > ARENA_BLOCK / 4 && a->head) {
      /* a big block goes second, so the current block keeps serving */
      b->next = a->head->next;
      a->head->next = b;
    } else {
      b->next = a->head;
      a->head = b;
    }
  }
  void *p = b->mem + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

char *base_arena_strndup(base_arena *a, const char *s, size_t n) {
  char *p = base_arena_alloc(a, n + 1);
  if (p)
    memcpy(p, s, n);
  return p;
}

void base_arena_free(base_arena *a) {
  if (!a)
    return;
  for (block *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}
