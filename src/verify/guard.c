/* guard.c: what keeps the verifier alive when memory runs out (issue 40).
 *
 * - Z3 errors: the error handler records the first error of the calling
 *   thread; code that builds terms checks verify_z3_bad() before handing a
 *   result of an earlier call to Z3 again (Z3 returns NULL on an error, and a
 *   NULL argument crashes it). Z3's "out of memory" becomes BASE_ERR_NOMEM.
 * - Memory: under an address-space limit (ulimit -v, RLIMIT_AS) a context is
 *   refused when too little is left, and Z3's own allocator is capped below
 *   what is left (its global memory_max_size), so that Z3 reports running
 *   out (an error we can catch) before malloc fails inside C++ code that
 *   cannot report it (the process aborted).
 * - The timeout: Z3 enforces its "timeout" parameter with a timer thread it
 *   starts inside the check, and aborts the process when that thread cannot
 *   be started. Each context has its own watchdog thread instead, started
 *   with the context (a failure is an error), which interrupts an overdue
 *   check with Z3_interrupt: the same cancellation, reported the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"

/* ---- errors ------------------------------------------------------------- */

static _Thread_local Z3_error_code first_error;

void verify_z3_on_error(Z3_context z, Z3_error_code e) {
  (void)z;
  if (first_error == Z3_OK)
    first_error = e;
}

void verify_z3_reset(void) { first_error = Z3_OK; }

int verify_z3_bad(void) { return first_error != Z3_OK; }

base_status verify_z3_failed(verify_ctx *c, base_diag *d, const char *what) {
  Z3_error_code e = first_error != Z3_OK ? first_error
                    : c && c->z          ? Z3_get_error_code(c->z)
                                         : Z3_MEMOUT_FAIL;
  if (e == Z3_MEMOUT_FAIL)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                         "out of memory (in the prover, Z3, %s)", what);
  return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "Z3 failed %s: %s", what,
                       c && c->z ? Z3_get_error_msg(c->z, e) : "?");
}

/* ---- memory ------------------------------------------------------------- */

#define MIB ((uint64_t)1 << 20)

/* Bytes of address space left under RLIMIT_AS; UINT64_MAX when there is no
 * limit (or the size in use cannot be read). Reads /proc/self/statm with
 * read(2): no allocation. */
static uint64_t address_space_left(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY)
    return UINT64_MAX;
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return UINT64_MAX;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return UINT64_MAX;
  buf[n] = 0;
  uint64_t used = strtoull(buf, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
  return used < rl.rlim_cur ? rl.rlim_cur - used : 0;
}

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;

base_status verify_mem_check(base_diag *d) {
  uint64_t left = address_space_left();
  if (left == UINT64_MAX)
    return BASE_OK;
  if (left < VERIFY_MIN_MEM)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                         "out of memory (%llu MiB of address space left under "
                         "the limit, ulimit -v; the prover needs %llu)",
                         (unsigned long long)(left / MIB),
                         (unsigned long long)(VERIFY_MIN_MEM / MIB));
  /* what Z3 holds now plus 3/4 of what is left: the rest is for superopt,
   * thread stacks and what Z3 allocates outside its accounting */
  char mb[32];
  snprintf(mb, sizeof mb, "%llu",
           (unsigned long long)((Z3_get_estimated_alloc_size() + left / 4 * 3) /
                                MIB));
  pthread_mutex_lock(&cap_lock);
  Z3_global_param_set("memory_max_size", mb);
  pthread_mutex_unlock(&cap_lock);
  return BASE_OK;
}

/* ---- the watchdog ------------------------------------------------------- */

struct verify_watch {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  Z3_context z;
  struct timespec deadline; /* CLOCK_MONOTONIC */
  int armed, stop;
};

static int before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec ||
         (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *watch_main(void *arg) {
  verify_watch *w = arg;
  pthread_mutex_lock(&w->mu);
  while (!w->stop) {
    if (!w->armed) {
      pthread_cond_wait(&w->cv, &w->mu);
      continue;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (before(&now, &w->deadline)) {
      pthread_cond_timedwait(&w->cv, &w->mu, &w->deadline);
      continue;
    }
    /* still armed under the lock: the check is still running (disarm
     * takes the lock after it returns) */
    Z3_interrupt(w->z);
    w->armed = 0;
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

verify_watch *verify_watch_start(Z3_context z, base_diag *d) {
  verify_watch *w = base_calloc(1, sizeof *w);
  if (!w) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  w->z = z;
  pthread_condattr_t ca;
  pthread_attr_t ta;
  int err = pthread_condattr_init(&ca);
  if (!err) {
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    err = pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
  }
  if (!err && !(err = pthread_mutex_init(&w->mu, NULL))) {
    /* it only waits and calls Z3_interrupt: a small stack is plenty and
     * keeps it cheap under an address-space limit */
    pthread_attr_init(&ta);
    pthread_attr_setstacksize(&ta, 256 * 1024);
    err = pthread_create(&w->th, &ta, watch_main, w);
    pthread_attr_destroy(&ta);
    if (err) {
      pthread_mutex_destroy(&w->mu);
      pthread_cond_destroy(&w->cv);
    }
  }
  if (err) {
    free(w);
    if (err == EAGAIN || err == ENOMEM)
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                    "out of memory (cannot start the prover's timer: %s)",
                    strerror(err));
    else
      base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                    "cannot start the prover's timer: %s", strerror(err));
    return NULL;
  }
  return w;
}

void verify_watch_arm(verify_watch *w, unsigned ms) {
  pthread_mutex_lock(&w->mu);
  clock_gettime(CLOCK_MONOTONIC, &w->deadline);
  w->deadline.tv_sec += ms / 1000;
  w->deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (w->deadline.tv_nsec >= 1000000000L) {
    w->deadline.tv_sec++;
    w->deadline.tv_nsec -= 1000000000L;
  }
  w->armed = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void verify_watch_disarm(verify_watch *w) {
  pthread_mutex_lock(&w->mu);
  w->armed = 0;
  pthread_mutex_unlock(&w->mu);
}

void verify_watch_stop(verify_watch *w) {
  if (!w)
    return;
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->th, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
}
