/* clock.c: a monotonic clock in seconds, and the peak resident memory. */
#include <sys/resource.h>
#include <time.h>

#include "base.h"

double base_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double base_peak_rss_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0; /* Linux: ru_maxrss in KiB */
}
