/* file.c: whole-file reads and atomic writes (a temporary file beside the
 * target, then rename), with errors as diagnostics naming the path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"

static base_status io_err(base_diag *d, const char *path, const char *what) {
  base_status st = base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot %s '%s': %s",
                                 what, path, strerror(errno));
  if (d)
    d->file[0] = '\0';
  return st;
}

char *base_read_file(const char *path, size_t *len, base_diag *d) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return io_err(d, path, "open"), NULL;
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap);
  while (s) {
    n += fread(s + n, 1, cap - n - 1, f);
    if (ferror(f)) {
      io_err(d, path, "read");
      free(s);
      fclose(f);
      return NULL;
    }
    if (feof(f))
      break;
    char *t = realloc(s, cap *= 2);
    if (!t)
      free(s);
    s = t;
  }
  fclose(f);
  if (!s)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), NULL;
  s[n] = '\0';
  *len = n;
  return s;
}

base_status base_write_atomic(const char *path, const char *data, size_t len,
                              base_diag *d) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
      (int)sizeof tmp)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "path too long: '%s'", path);
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return io_err(d, path, "create a temporary file next to");
  int bad = fwrite(data, 1, len, f) != len;
  bad |= fflush(f) != 0;
  bad |= fsync(fileno(f)) != 0 && errno != EINVAL;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    base_status st = io_err(d, path, "write");
    remove(tmp);
    return st;
  }
  return BASE_OK;
}
