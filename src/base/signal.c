/* signal.c: interrupts as policy. SIGINT, SIGTERM and SIGHUP end any
 * command at any stage the same way: the temporary file of an atomic write
 * in progress is removed (so the old file stays and nothing half-written is
 * left) and the process dies by the signal it got, so that its parent sees
 * status 128 + signal (130 for Ctrl-C, 143 for kill) and a shell running it
 * in a loop stops too. A signal that was ignored when the process started
 * (nohup, a background job of a non-interactive shell) stays ignored. One
 * that comes while several files are renamed as one unit (a graph and its
 * weights, base_write_unit) waits until they are all renamed. */
#include <signal.h>
#include <string.h>

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
