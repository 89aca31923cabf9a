/* ckpt.c: checkpoints of a resumable enumeration (gen-rules --checkpoint
 * DIR). Each finished first-level branch's records go to DIR/bNNNN.rec,
 * written to a temporary file beside it (named by branch and process, so
 * threads and ranks never share one), synced and renamed: a file that
 * exists is complete. Layout: a header (magic, the key of the arguments
 * that determine the records, branch, record size and count, the graphs
 * dropped as non-normal, the normal-form table's size, an XXH64 of the
 * records), then the records as they lay in memory. A file whose key
 * differs was made by other arguments (or another build's record layout)
 * and is refused, as is one whose size or checksum is wrong: never reused.
 * DIR/weights lists each branch's weight (graphs with one operator fewer,
 * plus 1) for tools that extrapolate from the finished branches
 * (scripts/bench-mpi-5). DIR/nf.tab holds the normal-form table (nf.c:
 * fp_nf_save), written the same way, so a resumed run does not build it
 * again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fp_int.h"

#define CKPT_MAGIC "SOCKPT01"

typedef struct ckpt_header {
  char magic[8];
  uint64_t key;
  uint32_t branch, rec_size;
  uint64_t n, dropped, nf_values, sum;
} ckpt_header;

static int ckpt_path(char *buf, size_t len, const char *dir, int b,
                     const char *suffix) {
  return snprintf(buf, len, "%s/b%04d.rec%s", dir, b, suffix) < (int)len;
}

uint64_t fp_ckpt_key(const en_config *c, size_t rec_size) {
  /* the branch count is 1 + first nodes x split: it keys the split too */
  uint64_t k[6] = {(uint64_t)c->max_ops, (uint64_t)c->max_outputs,
                   c->ops | (uint64_t) !!c->extended << 63, /* no opcode */
                   /* the extended set keeps split leaves (cand.c) */
                   (uint64_t)c->keep_non_normal | (uint64_t)c->extended << 8,
                   (uint64_t)rec_size, (uint64_t)en_branch_count(c)};
  return XXH64(k, sizeof k, 0x636b7074);
}

base_status fp_ckpt_dir(const char *dir, base_diag *d) {
  struct stat sb;
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return base_diag_set(d, BASE_ERR_IO, 0, 0,
                         "cannot create the checkpoint directory '%s': %s", dir,
                         strerror(errno));
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return base_diag_set(d, BASE_ERR_IO, 0, 0,
                         "checkpoint '%s' is not a directory", dir);
  return BASE_OK;
}

int fp_ckpt_exists(const char *dir, int b) {
  char p[4096];
  struct stat sb;
  return ckpt_path(p, sizeof p, dir, b, "") && stat(p, &sb) == 0;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t k = write(fd, s, n > (1u << 30) ? (1u << 30) : n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    s += k, n -= (size_t)k;
  }
  return 0;
}

base_status fp_ckpt_open(const char *path, FILE **f, base_diag *d) {
  *f = fopen(path, "rb");
  if (!*f && errno != ENOENT)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot read '%s': %s", path,
                         strerror(errno));
  return BASE_OK;
}

base_status fp_ckpt_bad(const char *path, const char *why, base_diag *d) {
  return base_diag_set(
      d, strcmp(why, "out of memory") ? BASE_ERR_IO : BASE_ERR_NOMEM, 0, 0,
      "checkpoint '%s': %s", path, why);
}

base_status fp_ckpt_atomic_write(const char *path, const void *const *part,
                                 const size_t *len, int nparts, base_diag *d) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
      (int)sizeof tmp)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "checkpoint path too long: %s",
                         path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot create '%s': %s", tmp,
                         strerror(errno));
  int bad = 0;
  for (int i = 0; i < nparts && !bad; i++)
    bad = write_all(fd, part[i], len[i]);
  bad = bad || (fsync(fd) != 0 && errno != EINVAL);
  int err = errno;
  bad = close(fd) != 0 || bad;
  if (bad || rename(tmp, path) != 0) {
    err = bad ? err : errno;
    unlink(tmp);
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot write '%s': %s", path,
                         strerror(err));
  }
  return BASE_OK;
}

base_status fp_ckpt_write(const char *dir, int b, uint64_t key,
                          const fp_ckpt_meta *m, const void *recs,
                          size_t rec_size, base_diag *d) {
  char path[4096];
  ckpt_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CKPT_MAGIC, 8);
  h.key = key, h.branch = (uint32_t)b, h.rec_size = (uint32_t)rec_size;
  h.n = m->n, h.dropped = m->dropped, h.nf_values = m->nf_values;
  h.sum = XXH64(recs, m->n * rec_size, key);
  if (!ckpt_path(path, sizeof path, dir, b, ""))
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "checkpoint path too long: %s",
                         dir);
  const void *part[2] = {&h, recs};
  size_t len[2] = {sizeof h, m->n * rec_size};
  return fp_ckpt_atomic_write(path, part, len, 2, d);
}

base_status fp_ckpt_read(const char *dir, int b, uint64_t key, size_t rec_size,
                         fp_ckpt_meta *m, void **recs, int *found,
                         base_diag *d) {
  char path[4096];
  ckpt_header h;
  struct stat sb;
  *found = 0, *recs = NULL;
  if (!ckpt_path(path, sizeof path, dir, b, ""))
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "checkpoint path too long: %s",
                         dir);
  FILE *f;
  base_status st = fp_ckpt_open(path, &f, d);
  if (st || !f)
    return st;
  const char *why = NULL;
  void *r = NULL;
  if (fstat(fileno(f), &sb) != 0 || fread(&h, sizeof h, 1, f) != 1 ||
      memcmp(h.magic, CKPT_MAGIC, 8))
    why = "not a checkpoint of this format";
  else if (h.key != key || h.rec_size != rec_size || h.branch != (uint32_t)b)
    why = "made by other gen-rules arguments or another build (use another "
          "--checkpoint directory)";
  else if ((uint64_t)sb.st_size != sizeof h + h.n * rec_size)
    why = "truncated or too long";
  else if (!(r = base_malloc(h.n ? h.n * rec_size : 1)))
    why = "out of memory";
  else if (h.n && fread(r, rec_size, h.n, f) != h.n)
    why = "cannot read its records";
  else if (XXH64(r, h.n * rec_size, key) != h.sum)
    why = "checksum mismatch";
  fclose(f);
  if (why) {
    free(r);
    return fp_ckpt_bad(path, why, d);
  }
  m->n = h.n, m->dropped = h.dropped, m->nf_values = h.nf_values;
  *recs = r, *found = 1;
  return BASE_OK;
}

base_status fp_ckpt_write_weights(const char *dir, const long long *w, int nb,
                                  base_diag *d) {
  char path[4096], tmp[4200];
  if (snprintf(path, sizeof path, "%s/weights", dir) >= (int)sizeof path ||
      snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
          (int)sizeof tmp)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "checkpoint path too long: %s",
                         dir);
  if (access(path, F_OK) == 0)
    return BASE_OK;
  FILE *f = fopen(tmp, "w");
  int bad = !f;
  if (f) {
    fprintf(f, "# branch weight (graphs with one operator fewer, + 1)\n");
    for (int b = 0; b < nb; b++)
      fprintf(f, "%d %lld\n", b, w[b]);
    bad = ferror(f) != 0;
    bad = fclose(f) != 0 || bad;
  }
  if (bad || rename(tmp, path) != 0) {
    int err = errno;
    unlink(tmp);
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "cannot write '%s': %s", path,
                         strerror(err));
  }
  return BASE_OK;
}

int fp_ckpt_read_weights(const char *dir, long long *w, int nb) {
  char path[4096], line[128];
  if (snprintf(path, sizeof path, "%s/weights", dir) >= (int)sizeof path)
    return 0;
  FILE *f = fopen(path, "r");
  int got = 0;
  while (f && fgets(line, sizeof line, f)) {
    int b;
    long long v;
    if (line[0] == '#')
      continue;
    if (sscanf(line, "%d %lld", &b, &v) != 2 || b != got || b >= nb || v < 1)
      break;
    w[got++] = v;
  }
  if (f)
    fclose(f);
  return got == nb;
}
