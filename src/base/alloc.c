/* alloc.c: the one place superopt allocates heap memory, with a switch that
 * makes the Nth allocation fail.
 *
 * Every malloc/calloc/realloc/strdup of src/ goes through base_malloc and its
 * siblings (scripts/check-alloc keeps it so). Tests use the switch (Lua's and
 * SQLite's idea) to reach each out-of-memory branch: with the switch at N the
 * Nth allocation after it was set returns NULL, once; the run must then end
 * with the out-of-memory error or behave exactly as without the failure.
 * The counter is atomic because OpenMP threads allocate too; with the switch
 * off (the default) an allocation costs one relaxed load more than libc's.
 * A second copy of this file in a shared object (the GPU executor) forwards
 * to the host's copy (base_alloc_use_host), so one counter sees both.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <execinfo.h>
#include <unistd.h>
#endif

#include "base.h"

static const base_allocator *host; /* the host's (base_alloc_use_host) */
static atomic_long fail_at;        /* 0: off; else the allocation to fail */
static atomic_long count;          /* allocations since the switch was set */
static int trace; /* print the failing allocation's call stack */

void base_alloc_fail_at(long n) {
  atomic_store(&count, 0);
  atomic_store(&fail_at, n > 0 ? n : 0);
}

long base_alloc_fail_from_env(void) {
  const char *s = getenv("SUPEROPT_FAIL_ALLOC");
  char *end;
  long n = s ? strtol(s, &end, 10) : 0;
  if (!s || end == s || *end || n <= 0)
    return 0;
  trace = getenv("SUPEROPT_FAIL_ALLOC_TRACE") != NULL;
  base_alloc_fail_at(n);
  return n;
}

long base_alloc_count(void) { return atomic_load(&count); }

/* 1 when this allocation is the one to fail. */
static int injected_failure(void) {
  long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
  if (!at || atomic_fetch_add(&count, 1) + 1 != at)
    return 0;
#ifdef __GLIBC__
  if (trace) { /* a debugging aid: where the walk's failure struck */
    void *frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
  }
#endif
  return 1;
}

void *base_malloc(size_t n) {
  if (host)
    return host->malloc_fn(n);
  return injected_failure() ? NULL : malloc(n);
}

void *base_calloc(size_t n, size_t size) {
  if (host)
    return host->calloc_fn(n, size);
  return injected_failure() ? NULL : calloc(n, size);
}

void *base_realloc(void *p, size_t n) {
  if (host)
    return host->realloc_fn(p, n);
  return injected_failure() ? NULL : realloc(p, n);
}

const base_allocator *base_alloc_host(void) {
  static const base_allocator mine = {base_malloc, base_calloc, base_realloc};
  return &mine;
}

void base_alloc_use_host(const base_allocator *a) {
  host = a != base_alloc_host() ? a : NULL; /* never itself: no loop */
}

char *base_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = base_malloc(n);
  return d ? memcpy(d, s, n) : NULL;
}

void *base_hook_alloc(void *data, size_t n) {
  void *p = base_malloc(n);
  if (!p && data)
    *(int *)data = 1;
  return p;
}

void base_hook_free(void *data, void *p) {
  (void)data;
  free(p);
}
