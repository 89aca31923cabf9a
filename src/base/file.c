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
 *
 * Units (base_write_unit): several files that belong together (a graph and
 * its weights) are written as one. Every destination is resolved (symlinks
 * followed) and checked (absent or a regular file) before anything is
 * written; each file goes to a temporary file beside it, fsync'd; then,
 * holding an exclusive flock on the first destination's directory and with
 * SIGINT, SIGTERM and SIGHUP blocked, the temporaries are renamed over (or
 * the files named without data removed) in the given order and the
 * directory is fsync'd. Readers take the same lock shared (base_lock_dir).
 * What a SIGKILL between two renames leaves is for the caller to detect
 * (the IR's weights carry their graph's hash: ir/weights.c).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* The temporary files being written, for base_file_abort: slot 0 for
 * base_write_atomic, the others for the parts of a unit. */
enum { TMP_SLOTS = 1 + BASE_UNIT_MAX };
static char tmp_names[TMP_SLOTS][PATH_MAX + 64];
static volatile sig_atomic_t tmp_lives[TMP_SLOTS];
#define tmp_name tmp_names[0]
#define tmp_live tmp_lives[0]

void base_file_abort(void) {
  for (int i = 0; i < TMP_SLOTS; i++)
    if (tmp_lives[i])
      unlink(tmp_names[i]);
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

/* ---- units: several files as one --------------------------------------- */

base_status base_resolve_out(const char *path, char *out, size_t n,
                             base_diag *d) {
  char real[PATH_MAX];
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (!realpath(path, real))
      return io_err(d, path, "resolve");
  } else if (errno != ENOENT) {
    return io_err(d, path, "write");
  } else if (resolve(path, real, sizeof real) != 0) {
    return io_err(d, path, "resolve the link");
  }
  if (snprintf(out, n, "%s", real) >= (int)n)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "path too long: '%s'", path);
  return BASE_OK;
}

int base_lock_dir(const char *path, int exclusive) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else if (snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path) >=
           (int)sizeof dir)
    return -1;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0)
    if (errno != EINTR) { /* a file system without locks: go on unlocked */
      close(fd);
      return -1;
    }
  return fd;
}

void base_unlock_dir(int fd) {
  if (fd >= 0)
    close(fd); /* closing the last descriptor releases the flock */
}

/* A destination of a unit must be absent or a regular file. */
static base_status check_dest(const char *path, base_diag *d) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return errno == ENOENT ? BASE_OK : io_err(d, path, "write");
  if (S_ISREG(sb.st_mode))
    return BASE_OK;
  return base_diag_set(
      d, BASE_ERR_IO, 0, 0, "cannot write '%s': %s; nothing was written", path,
      S_ISDIR(sb.st_mode) ? "it is a directory" : "not a regular file");
}

/* Writes part data to a fresh temporary file beside real (slot's name). */
static base_status write_temp(int slot, const char *real, const char *data,
                              size_t len, base_diag *d) {
  static unsigned seq;
  char tmp[sizeof tmp_names[0]];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", real, (long)getpid(),
               __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED)) >=
      (int)sizeof tmp)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "path too long: '%s'", real);
  tmp_lives[slot] = 0;
  memcpy(tmp_names[slot], tmp, sizeof tmp);
  tmp_lives[slot] = 1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    tmp_lives[slot] = 0;
    return io_err(d, real, "create a temporary file next to");
  }
  struct stat old;
  int bad = stat(real, &old) == 0 && fchmod(fd, old.st_mode & 07777) != 0;
  bad = bad || write_all(fd, data, len) != 0;
  bad = bad || (fsync(fd) != 0 && errno != EINVAL);
  int err = errno;
  if (close(fd) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  errno = err;
  return bad ? io_err(d, real, "write") : BASE_OK;
}

static void drop_temps(int n) {
  for (int i = 1; i <= n; i++)
    if (tmp_lives[i]) {
      unlink(tmp_names[i]);
      tmp_lives[i] = 0;
    }
}

/* Test hook: SUPEROPT_TEST_KILL_IN_COMMIT=K kills the process (SIGKILL)
 * after the K-th rename of a unit, for tests of what a crash leaves;
 * K:term sends SIGTERM instead (which must wait for the last rename). */
static void test_kill_hook(int done) {
  const char *s = getenv("SUPEROPT_TEST_KILL_IN_COMMIT");
  if (s && atoi(s) == done)
    kill(getpid(), strstr(s, ":term") ? SIGTERM : SIGKILL);
}

/* Renames the temporaries over (or removes) the destinations, in order. */
static base_status commit(const base_file_part *p, int n, char real[][PATH_MAX],
                          int dirfd, base_diag *d) {
  for (int i = 0; i < n; i++) {
    if (p[i].data) {
      if (rename(tmp_names[1 + i], real[i]) != 0)
        return io_err(d, real[i], "replace");
      tmp_lives[1 + i] = 0;
    } else if (unlink(real[i]) != 0 && errno != ENOENT) {
      return io_err(d, real[i], "remove the stale");
    }
    test_kill_hook(i + 1);
  }
  if (dirfd >= 0)
    fsync(dirfd); /* the directory's new entries to disk */
  return BASE_OK;
}

/* While a unit's renames run, a signal handler on any thread (OpenMP's
 * workers do not block the signals this thread blocks) defers its signal
 * to base_write_unit, which raises it once the renames are done. */
static volatile sig_atomic_t committing, deferred;

int base_file_defer(int sig) {
  if (!committing)
    return 0;
  deferred = sig;
  return 1;
}

base_status base_write_unit(const base_file_part *p, int n, base_diag *d) {
  static char real[BASE_UNIT_MAX][PATH_MAX];
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  if (n < 1 || n > BASE_UNIT_MAX)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "base_write_unit: %d files", n);
  pthread_mutex_lock(&mu);
  base_status st = BASE_OK;
  for (int i = 0; i < n && !st; i++)
    if (!(st = base_resolve_out(p[i].path, real[i], PATH_MAX, d)))
      st = check_dest(real[i], d);
  for (int i = 0; i < n && !st; i++)
    if (p[i].data)
      st = write_temp(1 + i, real[i], p[i].data, p[i].len, d);
  int lock = st ? -1 : base_lock_dir(real[0], 1);
  for (int i = 0; i < n && !st; i++) /* again, now that others wait */
    st = check_dest(real[i], d);
  if (!st) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    committing = 1;
    st = commit(p, n, real, lock, d);
    drop_temps(n);
    committing = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (deferred) /* the handler's default action is back: this ends us */
      raise(deferred);
  }
  drop_temps(n);
  base_unlock_dir(lock);
  pthread_mutex_unlock(&mu);
  return st;
}
