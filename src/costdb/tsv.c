/* tsv.c: the checked-in cost tables (costdb/<device>.tsv): checking rows,
 * importing files in one transaction, exporting in a stable order, and
 * importing a device's table on its first use.
 *
 * Format (docs/costdb.md): a header line, then one row per line, seven
 * fields separated by single tabs: device, sig, ms, stddev_ms, samples,
 * gpu_name, measured_at. Numbers are written in their shortest form that
 * reads back to the same double, so export(import(t)) == t byte for byte.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cd_int.h"

#define NFIELDS 7
#define HEADER "device\tsig\tms\tstddev_ms\tsamples\tgpu_name\tmeasured_at"

/* One parsed row; strings point into its file's text. */
typedef struct row {
  const char *device, *sig;
  cd_entry e;
  int file, line;
} row;

typedef struct rows {
  row *r;
  int n, cap;
} rows;

/* ---- checking ---------------------------------------------------------- */

static int text_ok(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      return 0;
  return 1;
}

/* The value of the n digits at s (all digits, checked by the caller). */
static int digits(const char *s, int n) {
  int v = 0;
  for (int i = 0; i < n; i++)
    v = v * 10 + (s[i] - '0');
  return v;
}

/* A calendar date YYYY-MM-DD (month 1..12, a day the month has), optionally
 * followed by 'T' and a time hh:mm[:ss] (hh < 24, mm < 60, ss <= 60) and a
 * suffix without spaces (fractions, Z, +hh:mm). */
static int date_ok(const char *s) {
  static const char pat[] = "dddd-dd-dd";
  for (int i = 0; pat[i]; i++)
    if (pat[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != pat[i])
      return 0;
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y = digits(s, 4), m = digits(s + 5, 2), day = digits(s + 8, 2);
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m < 1 || m > 12 || day < 1 || day > mdays[m - 1] ||
      (m == 2 && day == 29 && !leap))
    return 0;
  if (!s[10])
    return 1;
  s += 11;
  if (s[-1] != 'T' || !isdigit((unsigned char)s[0]) ||
      !isdigit((unsigned char)s[1]) || s[2] != ':' ||
      !isdigit((unsigned char)s[3]) || !isdigit((unsigned char)s[4]) ||
      digits(s, 2) > 23 || digits(s + 3, 2) > 59)
    return 0;
  s += 5;
  if (s[0] == ':') {
    if (!isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[2]) ||
        digits(s + 1, 2) > 60)
      return 0;
    s += 3;
  }
  for (; *s; s++)
    if (!isgraph((unsigned char)*s))
      return 0;
  return 1;
}

static int sig_ok(const char *sig, char *why, size_t n) {
  size_t w = strcspn(sig, " ");
  if (!*sig || !text_ok(sig)) {
    snprintf(why, n, "signature empty or holding control characters");
    return 0;
  }
  if (ir_op_lookup(sig, w) < 0) {
    snprintf(why, n, "signature starts with unknown operator '%.*s'",
             (int)(w > 64 ? 64 : w), sig);
    return 0;
  }
  return 1;
}

int cd_row_check(const char *device, const char *sig, const cd_entry *e,
                 char *why, size_t n) {
  base_diag d;
  if (!cd_device_find(device, &d))
    return snprintf(why, n, "%s", d.msg), 0;
  if (!sig_ok(sig, why, n))
    return 1;
  if (!(isfinite(e->ms) && e->ms > 0))
    return snprintf(why, n, "ms must be a finite number > 0"), 2;
  if (!(isfinite(e->stddev_ms) && e->stddev_ms >= 0))
    return snprintf(why, n, "stddev_ms must be a finite number >= 0"), 3;
  if (e->samples < 1)
    return snprintf(why, n, "samples must be an integer >= 1"), 4;
  if (e->gpu_name && !text_ok(e->gpu_name))
    return snprintf(why, n, "gpu_name holds control characters"), 5;
  if (e->measured_at && !date_ok(e->measured_at))
    return snprintf(why, n,
                    "measured_at must be a calendar date "
                    "YYYY-MM-DD[Thh:mm[:ss]...]"),
           6;
  if (e->source && !text_ok(e->source))
    return snprintf(why, n, "source holds control characters"), 6;
  return -1;
}

/* ---- parsing ------------------------------------------------------------ */

static base_status at(base_diag *d, const char *file, int line, int col,
                      const char *src, const char *msg) {
  base_diag_set(d, BASE_ERR_SYNTAX, line, col, "%s", msg);
  if (d) {
    snprintf(d->file, sizeof d->file, "%s", file);
    snprintf(d->src, sizeof d->src, "%s", src ? src : "");
  }
  return BASE_ERR_SYNTAX;
}

static int num(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return *s && !isspace((unsigned char)*s) && !*end && !errno;
}

static int count(const char *s, int *v) {
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  *v = (int)x;
  return isdigit((unsigned char)*s) && !*end && !errno && x <= INT_MAX;
}

static int push(rows *rs, const row *r) {
  if (rs->n == rs->cap) {
    int cap = rs->cap ? rs->cap * 2 : 256;
    row *p = base_realloc(rs->r, (size_t)cap * sizeof *p);
    if (!p)
      return -1;
    rs->r = p;
    rs->cap = cap;
  }
  rs->r[rs->n++] = *r;
  return 0;
}

/* Splits line (NUL-terminated, tabs replaced by NULs) into f[]; returns the
 * number of fields. col[i] is field i's column. */
static int split(char *line, char **f, int *col) {
  int n = 0;
  char *p = line;
  for (;;) {
    if (n < NFIELDS + 1) {
      f[n] = p;
      col[n] = (int)(p - line) + 1;
    }
    n++;
    char *tab = strchr(p, '\t');
    if (!tab)
      return n;
    *tab = '\0';
    p = tab + 1;
  }
}

static base_status parse_row(char *line, const char *src, const char *file,
                             int lineno, row *r, base_diag *d) {
  char *f[NFIELDS + 1], why[320];
  int col[NFIELDS + 1];
  int n = split(line, f, col);
  if (n != NFIELDS) {
    snprintf(why, sizeof why, "expected %d tab-separated fields, found %d",
             NFIELDS, n);
    return at(d, file, lineno, 1, src, why);
  }
  r->device = f[0];
  r->sig = f[1];
  r->e.gpu_name = f[5];
  r->e.measured_at = f[6];
  r->e.source = NULL;
  r->e.samples = 0;
  if (!num(f[2], &r->e.ms))
    return at(d, file, lineno, col[2], src, "ms: expected a number");
  if (!num(f[3], &r->e.stddev_ms))
    return at(d, file, lineno, col[3], src, "stddev_ms: expected a number");
  if (!count(f[4], &r->e.samples))
    return at(d, file, lineno, col[4], src, "samples: expected an integer");
  int bad = cd_row_check(r->device, r->sig, &r->e, why, sizeof why);
  return bad < 0 ? BASE_OK : at(d, file, lineno, col[bad], src, why);
}

/* Parses text (modified in place) into rs. */
static base_status parse_text(char *text, size_t len, const char *file,
                              int fileno, rows *rs, base_diag *d) {
  int lineno = 0;
  char *p = text, *end = text + len;
  if (!len)
    return at(d, file, 1, 1, NULL, "empty file: expected the header line");
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *eol = nl ? nl : end;
    *eol = '\0';
    lineno++;
    char src[256];
    snprintf(src, sizeof src, "%s", p);
    char *cr = strchr(p, '\r');
    if (cr)
      return at(d, file, lineno, (int)(cr - p) + 1, src,
                "a carriage return (CRLF line endings?): lines must end "
                "with '\\n' alone");
    if (lineno == 1) {
      if (strcmp(p, HEADER))
        return at(d, file, 1, 1, src,
                  "expected the header line 'device sig ms stddev_ms samples "
                  "gpu_name measured_at' (fields separated by tabs)");
    } else {
      row r = {.file = fileno, .line = lineno};
      base_status st = parse_row(p, src, file, lineno, &r, d);
      if (st)
        return st;
      if (push(rs, &r))
        return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    p = eol + 1;
  }
  return BASE_OK;
}

static int cmp_row(const void *a, const void *b) {
  const row *x = a, *y = b;
  int c = strcmp(x->device, y->device);
  if (!c)
    c = strcmp(x->sig, y->sig);
  if (!c)
    c = x->file != y->file ? x->file - y->file : x->line - y->line;
  return c;
}

/* Two rows for one (device, sig) in one import is an error (which wins
 * would depend on the order). */
static base_status no_duplicates(rows *rs, const char *const *paths,
                                 base_diag *d) {
  if (rs->n > 1)
    qsort(rs->r, (size_t)rs->n, sizeof *rs->r, cmp_row);
  for (int i = 1; i < rs->n; i++) {
    const row *a = &rs->r[i - 1], *b = &rs->r[i];
    if (strcmp(a->device, b->device) || strcmp(a->sig, b->sig))
      continue;
    char why[512];
    snprintf(why, sizeof why, "duplicate row for device %s: first at %s:%d",
             a->device, paths[a->file], a->line);
    return at(d, paths[b->file], b->line, 1, NULL, why);
  }
  return BASE_OK;
}

/* ---- importing ---------------------------------------------------------- */

typedef struct texts {
  char **t;
  int n;
} texts;

static void texts_free(texts *t) {
  for (int i = 0; i < t->n; i++)
    free(t->t[i]);
  free(t->t);
}

static base_status read_all(const char *const *paths, int n, texts *tx,
                            rows *rs, base_diag *d) {
  tx->t = base_calloc((size_t)(n ? n : 1), sizeof *tx->t);
  if (!tx->t)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  tx->n = n; /* every slot is a text or NULL */
  for (int i = 0; i < n; i++) {
    size_t len;
    tx->t[i] = base_read_file(paths[i], &len, d);
    if (!tx->t[i])
      return d ? d->code : BASE_ERR_IO;
    base_status st = parse_text(tx->t[i], len, paths[i], i, rs, d);
    if (st)
      return st;
  }
  return no_duplicates(rs, paths, d);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Stores rs, each row's source "<kind>:<file name>" (kind "tsv" for
 * `costdb import`, "table" for a checked-in table imported on use). */
static base_status store(cd_db *db, const rows *rs, const char *const *paths,
                         const char *kind, base_diag *d) {
  for (int i = 0; i < rs->n; i++) {
    row r = rs->r[i];
    char src[300];
    snprintf(src, sizeof src, "%s:%s", kind, base_name(paths[r.file]));
    r.e.source = src;
    base_status st = cd_upsert(db, r.device, r.sig, &r.e, d);
    if (st)
      return st;
  }
  return BASE_OK;
}

/* Runs pre (SQL, or NULL), stores rs (a table's rows with record set, else
 * an import's) and runs record in a savepoint (which nests inside
 * cd_begin): all or nothing. */
static base_status import_rows(cd_db *db, const rows *rs,
                               const char *const *paths, const char *pre,
                               const char *record, base_diag *d) {
  if (cd_exec(db, "SAVEPOINT cd_import", d))
    return BASE_ERR_IO;
  base_status st = pre ? cd_exec(db, pre, d) : BASE_OK;
  if (!st)
    st = store(db, rs, paths, record ? "table" : "tsv", d);
  if (!st && record)
    st = cd_exec(db, record, d);
  if (st) {
    sqlite3_exec(db->sql, "ROLLBACK TO cd_import; RELEASE cd_import", NULL,
                 NULL, NULL);
    cd_cache_clear(&db->cache);
    return st;
  }
  return cd_exec(db, "RELEASE cd_import", d);
}

/* A device's table holds only that device's rows. */
static base_status only_device(const rows *rs, const char *const *paths,
                               const char *device, base_diag *d) {
  for (int i = 0; device && i < rs->n; i++)
    if (strcmp(rs->r[i].device, device)) {
      char why[128];
      snprintf(why, sizeof why,
               "row for device '%.32s' in the table of '%.32s'",
               rs->r[i].device, device);
      return at(d, paths[rs->r[i].file], rs->r[i].line, 1, NULL, why);
    }
  return BASE_OK;
}

/* Imports paths[0..n-1] (rows of device only, unless NULL), running pre
 * before and record after (SQL, or NULL) in the same transaction. */
static base_status import_files(cd_db *db, const char *const *paths, int n,
                                const char *device, const char *pre,
                                const char *record, int *nrows, base_diag *d) {
  texts tx = {0};
  rows rs = {0};
  base_status st = read_all(paths, n, &tx, &rs, d);
  if (!st)
    st = only_device(&rs, paths, device, d);
  if (!st)
    st = import_rows(db, &rs, paths, pre, record, d);
  if (!st && nrows)
    *nrows = rs.n;
  free(rs.r);
  texts_free(&tx);
  return st;
}

base_status cd_import_tsv(cd_db *db, const char *const *paths, int n, int *rows,
                          base_diag *d) {
  return import_files(db, paths, n, NULL, NULL, NULL, rows, d);
}

base_status cd_check_tsv(const char *text, size_t len, const char *file,
                         int *nrows, base_diag *d) {
  char *copy = base_malloc(len + 1);
  if (!copy)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  memcpy(copy, text, len);
  copy[len] = '\0';
  rows rs = {0};
  base_status st = parse_text(copy, len, file, 0, &rs, d);
  if (!st)
    st = no_duplicates(&rs, &file, d);
  if (!st && nrows)
    *nrows = rs.n;
  free(rs.r);
  free(copy);
  return st;
}

/* ---- tables on first use ------------------------------------------------ */

base_status cd_set_tables(cd_db *db, const char *dir, base_diag *d) {
  char *copy = dir ? base_strdup(dir) : NULL;
  if (dir && !copy)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  free(db->tables);
  db->tables = copy;
  db->synced = 0;
  return BASE_OK;
}

static base_status imported_hash(cd_db *db, const char *device, char *hash,
                                 base_diag *d) {
  sqlite3_stmt *s;
  hash[0] = '\0';
  if (sqlite3_prepare_v2(db->sql, "SELECT hash FROM imports WHERE device=?1",
                         -1, &s, NULL))
    return cd_sql_err(db, "cost database", d);
  sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    snprintf(hash, 17, "%s", (const char *)sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return cd_sql_err(db, "cost database", d);
  return BASE_OK;
}

static base_status import_table(cd_db *db, const char *path, const char *device,
                                const char *hash, base_diag *d) {
  char now[32];
  cd_now(now);
  const char *file = base_name(path);
  char *rec = sqlite3_mprintf(
      "INSERT OR REPLACE INTO imports VALUES (%Q, %Q, %Q, (SELECT count(*) "
      "FROM costs WHERE device = %Q AND source = 'table:' || %Q), %Q)",
      device, file, hash, device, file, now);
  /* the rows an earlier version of the table brought go first: a row the
   * table no longer has would otherwise stay (and be fitted) for good;
   * rows measured here, or brought by `costdb import` (source "tsv:..."),
   * stay */
  char *pre = sqlite3_mprintf(
      "DELETE FROM costs WHERE device = %Q AND source = 'table:' || %Q", device,
      file);
  if (!rec || !pre) {
    sqlite3_free(rec);
    sqlite3_free(pre);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  base_status st = import_files(db, &path, 1, device, pre, rec, NULL, d);
  sqlite3_free(rec);
  sqlite3_free(pre);
  return st;
}

base_status cd_sync_tables(cd_db *db, const cd_device *dev, base_diag *d) {
  int i = cd_device_index(dev, d);
  if (i < 0)
    return BASE_ERR_PARAM;
  if (!db->tables || (db->synced >> i & 1))
    return BASE_OK;
  char path[4096], hash[17], old[17];
  snprintf(path, sizeof path, "%s/%s.tsv", db->tables, dev->name);
  size_t len;
  base_diag rd = {0};
  char *text = base_read_file(path, &len, &rd);
  /* no table for this device (cannot open it): nothing to import */
  base_status st = !text && rd.code == BASE_ERR_NOMEM
                       ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                       : BASE_OK;
  if (text) {
    snprintf(hash, sizeof hash, "%016llx",
             (unsigned long long)XXH3_64bits(text, len));
    free(text);
    st = imported_hash(db, dev->name, old, d);
    if (!st && strcmp(hash, old))
      st = import_table(db, path, dev->name, hash, d);
  }
  if (!st)
    db->synced |= 1u << i;
  return st;
}
