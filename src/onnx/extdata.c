/* extdata.c: tensors whose bytes live outside the model (ONNX external
 * data).
 *
 * A TensorProto with data_location EXTERNAL names its bytes by key/value
 * entries: `location` (a path relative to the model file's folder),
 * `offset` and `length` (bytes; default 0 and the rest of the file). This
 * is what torch.onnx.export writes by default for large models
 * (`model.onnx.data` beside `model.onnx`). Each file is mapped once per
 * import (read-only, private) and unmapped at its end; a tensor's bytes are
 * read in place, as raw little-endian data. A location that is absolute or
 * climbs out of the model's folder ("..") is refused, as onnx.checker does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ox_int.h"

struct ox_extfile {
  char *location; /* as the model names it */
  const uint8_t *p;
  size_t n;
};

int ox_ext_is_external(const Onnx__TensorProto *t) {
  return t->n_external_data ||
         (t->has_data_location &&
          t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL);
}

/* Whether location stays inside the model's folder. */
static int location_ok(const char *loc) {
  if (!loc[0] || loc[0] == '/')
    return 0;
  for (const char *p = loc; *p;) {
    size_t n = strcspn(p, "/\\");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return 0;
    p += n;
    p += *p != '\0';
  }
  return 1;
}

/* Parses a non-negative decimal entry value; -1 when malformed. */
static int64_t entry_int(const char *s) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  return errno || end == s || *end || v < 0 ? -1 : (int64_t)v;
}

/* The mapping of location (relative to the folder of model), opened on
 * first use. */
static base_status ext_file(ox_extdata *x, const char *loc,
                            const struct ox_extfile **f, char *err,
                            size_t errn) {
  for (int i = 0; i < x->n; i++)
    if (!strcmp(x->files[i].location, loc))
      return *f = &x->files[i], BASE_OK;
  const char *slash = strrchr(x->model, '/');
  int dirlen = slash ? (int)(slash - x->model) + 1 : 0;
  char path[4096];
  if (snprintf(path, sizeof path, "%.*s%s", dirlen, x->model, loc) >=
      (int)sizeof path)
    return snprintf(err, errn, "external data path too long"), BASE_ERR_PARAM;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    int e = fd < 0 ? errno : EINVAL;
    if (fd >= 0)
      close(fd);
    return snprintf(err, errn, "cannot read external data file '%s': %s", path,
                    fd < 0 ? strerror(e) : "not a regular file"),
           BASE_ERR_IO;
  }
  struct ox_extfile *nf =
      base_realloc(x->files, sizeof *nf * (size_t)(x->n + 1));
  char *copy = nf ? base_strdup(loc) : NULL;
  if (nf)
    x->files = nf;
  if (!copy) {
    close(fd);
    return snprintf(err, errn, "out of memory"), BASE_ERR_NOMEM;
  }
  size_t n = (size_t)st.st_size;
  void *p = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (p == MAP_FAILED) {
    free(copy);
    return snprintf(err, errn, "cannot map external data file '%s': %s", path,
                    strerror(errno)),
           BASE_ERR_IO;
  }
  x->files[x->n] = (struct ox_extfile){copy, p, n};
  *f = &x->files[x->n++];
  return BASE_OK;
}

base_status ox_ext_bytes(ox_extdata *x, const Onnx__TensorProto *t,
                         const uint8_t **p, size_t *len, char *err,
                         size_t errn) {
  const char *loc = NULL;
  int64_t off = 0, n = -1;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    if (!e->key || !e->value)
      continue;
    if (!strcmp(e->key, "location"))
      loc = e->value;
    else if (!strcmp(e->key, "offset") && (off = entry_int(e->value)) < 0)
      return snprintf(err, errn, "bad external data offset '%s'", e->value),
             BASE_ERR_PARAM;
    else if (!strcmp(e->key, "length") && (n = entry_int(e->value)) < 0)
      return snprintf(err, errn, "bad external data length '%s'", e->value),
             BASE_ERR_PARAM;
  }
  if (!loc)
    return snprintf(err, errn, "external data without a location"),
           BASE_ERR_PARAM;
  if (!location_ok(loc))
    return snprintf(err, errn,
                    "external data location '%s' is outside the model's "
                    "folder (absolute or with '..')",
                    loc),
           BASE_ERR_PARAM;
  if (!x->model)
    return snprintf(err, errn,
                    "external data ('%s') needs the model's path: import "
                    "the model from its file",
                    loc),
           BASE_ERR_PARAM;
  const struct ox_extfile *f;
  base_status st = ext_file(x, loc, &f, err, errn);
  if (st)
    return st;
  if ((uint64_t)off > f->n || (n >= 0 && (uint64_t)n > f->n - (uint64_t)off))
    return snprintf(err, errn,
                    "external data range %lld+%lld is past the end of '%s' "
                    "(%zu bytes)",
                    (long long)off, (long long)(n < 0 ? 0 : n), loc, f->n),
           BASE_ERR_PARAM;
  *p = f->p + off;
  *len = n < 0 ? f->n - (size_t)off : (size_t)n;
  return BASE_OK;
}

void ox_ext_close(ox_extdata *x) {
  for (int i = 0; i < x->n; i++) {
    if (x->files[i].n)
      munmap((void *)x->files[i].p, x->files[i].n);
    free(x->files[i].location);
  }
  free(x->files);
  x->files = NULL;
  x->n = 0;
}
