/* signal.c: interrupts as policy. SIGINT, SIGTERM and SIGHUP end any
 * command at any stage the same way: the temporary file of an atomic write
 * in progress is removed (so the old file stays and nothing half-written is
 * left) and the process dies by the signal it got, so that its parent sees
 * status 128 + signal (130 for Ctrl-C, 143 for kill) and a shell running it
 * in a loop stops too. A signal that was ignored when the process started
 * (nohup, a background job of a non-interactive shell) stays ignored. One
 * that comes while several files are renamed as one unit (a graph and its
 * weights, base_write_unit) waits until they are all renamed.
 *
 * The crash guard (base_guard_enter) turns a crash inside a library that
 * cannot report running out of memory into the out-of-memory exit, 3. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"

static void on_signal(int sig) {
  if (base_file_defer(sig))
    return; /* a graph and its weights being renamed: after that */
  base_file_abort();
  /* SA_RESETHAND restored the default action; the signal is blocked while
   * this handler runs, so it is delivered, fatally, when it returns */
  raise(sig);
}

void base_signals_install(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    struct sigaction old, sa;
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
      continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sigs[i], &sa, NULL);
  }
}

/* ---- the crash guard ---------------------------------------------------- */

static const int crash_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGABRT};
#define NCRASH (sizeof crash_sigs / sizeof *crash_sigs)
static atomic_int guard_enabled, guard_depth;
static const char *_Atomic guard_name;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction guard_old[NCRASH];

static void put(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

/* Async-signal-safe: write(2) and _exit only. */
static void guard_fail(const char *what) {
  base_file_abort();
  const char *name = atomic_load(&guard_name);
  put("superopt: error: ");
  put(name ? name : "a library");
  put(what);
  put("; most likely out of memory\n");
  _exit(3);
}

static void on_crash(int sig) {
  guard_fail(sig == SIGSEGV  ? " crashed (SIGSEGV)"
             : sig == SIGBUS ? " crashed (SIGBUS)"
             : sig == SIGFPE ? " crashed (SIGFPE)"
                             : " aborted (SIGABRT)");
}

/* exit() called while a section is open came from inside the library (Z3
 * exits with its own status on an internal error after a failed
 * allocation). */
static void on_exit_in_guard(void) {
  if (atomic_load(&guard_depth) > 0)
    guard_fail(" ended the process");
}

void base_crash_guard_enable(void) {
  if (!atomic_exchange(&guard_enabled, 1))
    atexit(on_exit_in_guard);
}

void base_guard_enter(const char *name) {
  if (!atomic_load(&guard_enabled))
    return;
  pthread_mutex_lock(&guard_lock);
  atomic_store(&guard_name, name);
  if (atomic_fetch_add(&guard_depth, 1) == 0)
    for (size_t i = 0; i < NCRASH; i++) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_crash;
      sigemptyset(&sa.sa_mask);
      sigaction(crash_sigs[i], &sa, &guard_old[i]);
    }
  pthread_mutex_unlock(&guard_lock);
}

void base_guard_leave(void) {
  if (!atomic_load(&guard_enabled))
    return;
  pthread_mutex_lock(&guard_lock);
  if (atomic_fetch_sub(&guard_depth, 1) == 1)
    for (size_t i = 0; i < NCRASH; i++)
      sigaction(crash_sigs[i], &guard_old[i], NULL);
  pthread_mutex_unlock(&guard_lock);
}
