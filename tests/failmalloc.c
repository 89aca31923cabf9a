/* failmalloc.c: an LD_PRELOAD shim that makes libc's malloc, calloc and
 * realloc fail, for tests/z3oom.sh. superopt's own fault injection
 * ($SUPEROPT_FAIL_ALLOC, base_malloc) cannot reach the allocations of
 * libraries such as Z3 (its allocator and libstdc++'s operator new call
 * malloc directly); this reaches every one.
 *
 *   FAILMALLOC_AT=N       the Nth call (1-based, counted over the process)
 *                         fails, returning NULL with errno ENOMEM
 *   FAILMALLOC_PERSIST=1  and every call after it (memory that ran out)
 *   FAILMALLOC_COUNT=1    print "failmalloc: K calls" to stderr at exit
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static atomic_long calls;
static long fail_at = -1; /* -1: not read yet */
static int persist;

static int fail_now(void) {
  if (fail_at < 0) { /* getenv allocates nothing */
    const char *s = getenv("FAILMALLOC_AT");
    const char *p = getenv("FAILMALLOC_PERSIST");
    persist = p && *p == '1';
    fail_at = s ? atol(s) : 0;
  }
  long n = atomic_fetch_add(&calls, 1) + 1;
  if (fail_at <= 0 || (persist ? n < fail_at : n != fail_at))
    return 0;
  errno = ENOMEM;
  return 1;
}

void *malloc(size_t n) { return fail_now() ? NULL : __libc_malloc(n); }

void *calloc(size_t n, size_t size) {
  return fail_now() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
  return fail_now() ? NULL : __libc_realloc(p, n);
}

__attribute__((destructor)) static void report(void) {
  if (getenv("FAILMALLOC_COUNT"))
    fprintf(stderr, "failmalloc: %ld calls\n", (long)atomic_load(&calls));
}
