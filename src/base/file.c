/* file.c: whole-file reads with a size limit, and atomic writes, with errors
 * as diagnostics naming the path (docs/reliability.md).
 *
 * Reads: a regular file larger than the limit is refused before reading; a
 * device (/dev/zero, /dev/urandom) is read up to the limit and refused past
 * it; a pipe or FIFO is opened without blocking (a FIFO nobody writes to
 * must not hang the open) and read while data comes, failing after
 * base_pipe_wait seconds without any. Directories and sockets are refused.
 *
 * Writes: a new or regular file is replaced atomically (a temporary file
 * beside it, then rename); a symlink is followed and its target replaced; a
 * character device or FIFO (/dev/null, /dev/stdout, a pipe) is written
 * directly, since replacing it would destroy it; anything else is refused.
 * The temporary file's name is recorded so that base_file_abort can remove
 * it from a signal handler (signal.c).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"

static size_t max_input = BASE_MAX_INPUT_DEFAULT;
static int pipe_wait_s = BASE_PIPE_WAIT_DEFAULT;

void base_set_max_input(size_t bytes) { max_input = bytes ? bytes : 1; }
size_t base_max_input(void) { return max_input; }
void base_set_pipe_wait(int seconds) { pipe_wait_s = seconds; }

static base_status io_err(base_diag *d, const char *path, const char *what) {
  base_status st = base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot %s '%s': %s",
                                 what, path, strerror(errno));
  if (d)
    d->file[0] = '\0';
  return st;
}

static base_status too_big(base_diag *d, const char *path) {
  return base_diag_set(d, BASE_ERR_IO, 0, 0,
                       "'%s' is larger than the input limit of %zu bytes "
                       "(raise it with --max-input-size)",
                       path, max_input);
}

/* ---- reading ----------------------------------------------------------- */

/* Waits until fd (a pipe) has data or its end; 0, or -1 with errno. */
static int pipe_ready(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  int ms = pipe_wait_s > 0 ? pipe_wait_s * 1000 : -1;
  for (;;) {
    int r = poll(&p, 1, ms);
    if (r > 0)
      return 0;
    if (r == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    if (errno != EINTR)
      return -1;
  }
}

/* Reads fd to its end into a malloc'd buffer of at most max_input bytes. */
static char *read_fd(int fd, const char *path, int is_pipe, size_t hint,
                     size_t *len, base_diag *d) {
  /* room for one byte more than a regular file holds: EOF without a copy */
  size_t cap = hint < max_input ? hint + 2 : max_input + 2, n = 0;
  if (cap < 4096)
    cap = 4096;
  char *s = base_malloc(cap);
  for (;;) {
    if (!s)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), NULL;
    if (n == cap - 1) { /* full: grow, up to one byte past the limit */
      if (n > max_input)
        break;
      size_t want = cap > (max_input + 2) / 2 ? max_input + 2 : cap * 2;
      char *t = base_realloc(s, want);
      if (!t)
        free(s);
      s = t;
      cap = want;
      continue;
    }
    if (is_pipe && pipe_ready(fd) != 0) {
      if (errno == ETIMEDOUT)
        base_diag_set(d, BASE_ERR_IO, 0, 0,
                      "no data from the pipe '%s' for %d s (is anything "
                      "writing to it?)",
                      path, pipe_wait_s);
      else
        io_err(d, path, "read");
      free(s);
      return NULL;
    }
    ssize_t k = read(fd, s + n, cap - 1 - n);
    if (k < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (k < 0) {
      io_err(d, path, "read");
      free(s);
      return NULL;
    }
    if (k == 0)
      break;
    n += (size_t)k;
  }
  if (n > max_input) {
    free(s);
    too_big(d, path);
    return NULL;
  }
  s[n] = '\0';
  *len = n;
  return s;
}

char *base_read_file(const char *path, size_t *len, base_diag *d) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return io_err(d, path, "open"), NULL;
  struct stat sb;
  char *s = NULL;
  if (fstat(fd, &sb) != 0)
    io_err(d, path, "read");
  else if (S_ISDIR(sb.st_mode))
    base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot read '%s': it is a directory",
                  path);
  else if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > max_input)
    too_big(d, path);
  else if (!S_ISREG(sb.st_mode) && !S_ISCHR(sb.st_mode) &&
           !S_ISFIFO(sb.st_mode))
    base_diag_set(d, BASE_ERR_IO, 0, 0,
                  "cannot read '%s': not a file, device or pipe", path);
  else {
    int is_pipe = S_ISFIFO(sb.st_mode);
    if (!is_pipe) /* devices block like files; pipes are polled */
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    size_t hint = S_ISREG(sb.st_mode) ? (size_t)sb.st_size : 0;
    s = read_fd(fd, path, is_pipe, hint, len, d);
  }
  close(fd);
  return s;
}

/* ---- writing ----------------------------------------------------------- */

/* The temporary file being written, for base_file_abort. */
static char tmp_name[PATH_MAX + 64];
static volatile sig_atomic_t tmp_live;

void base_file_abort(void) {
  if (tmp_live)
    unlink(tmp_name);
}

/* Writes all of data to fd; 0, or -1 with errno. */
static int write_all(int fd, const char *data, size_t len) {
  while (len) {
    ssize_t k = write(fd, data, len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -1;
    data += k;
    len -= (size_t)k;
  }
  return 0;
}

/* path with its symlinks followed (the last component too, even when the
 * link's target does not exist yet) into out; 0, or -1 with errno. */
static int resolve(const char *path, char *out, size_t n) {
  if (snprintf(out, n, "%s", path) >= (int)n)
    return errno = ENAMETOOLONG, -1;
  for (int hops = 0; hops < 40; hops++) {
    struct stat sb;
    if (lstat(out, &sb) != 0 || !S_ISLNK(sb.st_mode))
      return 0; /* absent (to be created) or not a link */
    char link[PATH_MAX];
    ssize_t k = readlink(out, link, sizeof link - 1);
    if (k < 0)
      return -1;
    link[k] = '\0';
    char *slash = strrchr(out, '/');
    if (link[0] == '/' || !slash) {
      if (snprintf(out, n, "%s", link) >= (int)n)
        return errno = ENAMETOOLONG, -1;
    } else if ((size_t)(slash + 1 - out) + (size_t)k >= n) {
      return errno = ENAMETOOLONG, -1;
    } else {
      memcpy(slash + 1, link, (size_t)k + 1);
    }
  }
  return errno = ELOOP, -1;
}

/* Writes to a device or FIFO in place (a FIFO must have a reader). */
static base_status write_direct(const char *path, const struct stat *sb,
                                const char *data, size_t len, base_diag *d) {
  int fd = open(path, O_WRONLY | O_CLOEXEC |
                          (S_ISFIFO(sb->st_mode) ? O_NONBLOCK : 0));
  if (fd < 0 && errno == ENXIO)
    return base_diag_set(d, BASE_ERR_IO, 0, 0,
                         "cannot write '%s': a FIFO that nobody reads", path);
  if (fd < 0)
    return io_err(d, path, "open");
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int bad = write_all(fd, data, len) != 0;
  int err = errno;
  if (close(fd) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  errno = err;
  return bad ? io_err(d, path, "write") : BASE_OK;
}

/* Writes a temporary file beside path, then renames it over path. */
static base_status write_replace(const char *path, const struct stat *old,
                                 const char *data, size_t len, base_diag *d) {
  char tmp[sizeof tmp_name];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
      (int)sizeof tmp)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "path too long: '%s'", path);
  tmp_live = 0;
  memcpy(tmp_name, tmp, sizeof tmp);
  tmp_live = 1; /* from here a signal removes it */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    tmp_live = 0;
    return io_err(d, path, "create a temporary file next to");
  }
  int bad = old && fchmod(fd, old->st_mode & 07777) != 0;
  bad = bad || write_all(fd, data, len) != 0;
  bad = bad || (fsync(fd) != 0 && errno != EINVAL);
  int err = errno;
  if (close(fd) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  errno = err;
  if (bad || rename(tmp, path) != 0) {
    base_status st = io_err(d, path, "write");
    unlink(tmp);
    tmp_live = 0;
    return st;
  }
  tmp_live = 0;
  return BASE_OK;
}

base_status base_write_atomic(const char *path, const char *data, size_t len,
                              base_diag *d) {
  char real[PATH_MAX];
  struct stat sb;
  if (stat(path, &sb) != 0) {
    if (errno != ENOENT)
      return io_err(d, path, "write");
    /* a new file, or a dangling symlink: created where the links lead */
    if (resolve(path, real, sizeof real) != 0)
      return io_err(d, path, "resolve the link");
    return write_replace(real, NULL, data, len, d);
  }
  if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode))
    return write_direct(path, &sb, data, len, d);
  if (!S_ISREG(sb.st_mode))
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot write '%s': %s", path,
                         S_ISDIR(sb.st_mode) ? "it is a directory"
                                             : "not a regular file, character "
                                               "device or FIFO");
  if (!realpath(path, real)) /* replace the file the links lead to */
    return io_err(d, path, "resolve");
  return write_replace(real, &sb, data, len, d);
}
