/* buf.c: a growable, always NUL-terminated text buffer (base_buf), shared by
 * every printer and exporter. Out of memory sets b->oom and makes every
 * later call a no-op, so callers check once at the end. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static int grow(base_buf *b, size_t need) {
  if (b->oom)
    return 0;
  if (b->len + need + 1 <= b->cap)
    return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + need + 1)
    cap *= 2;
  char *s = base_realloc(b->s, cap);
  if (!s) {
    b->oom = 1;
    return 0;
  }
  b->s = s;
  b->cap = cap;
  return 1;
}

void base_buf_put(base_buf *b, const char *s, size_t n) {
  if (!grow(b, n))
    return;
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void base_buf_puts(base_buf *b, const char *s) {
  base_buf_put(b, s, strlen(s));
}

void base_buf_printf(base_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !grow(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

base_status base_buf_write(const base_buf *b, const char *path, base_diag *d) {
  return b->oom ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                : base_write_atomic(path, b->s, b->len, d);
}
