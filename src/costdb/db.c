/* db.c: the SQLite cost database: opening (schema creation and version
 * check, WAL mode, corruption check), transactions, put and lookup.
 *
 * Schema version 1 (docs/costdb.md): meta(key, value) holds
 * schema_version; costs(device, sig, ms, stddev_ms, samples, source,
 * gpu_name, measured_at) one measurement per (device, sig); imports(device,
 * file, hash, rows, imported_at) the table last imported per device.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cd_int.h"

static const char schema[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE costs(device TEXT NOT NULL, sig TEXT NOT NULL,"
    " ms REAL NOT NULL CHECK (ms > 0),"
    " stddev_ms REAL NOT NULL CHECK (stddev_ms >= 0),"
    " samples INTEGER NOT NULL CHECK (samples >= 1),"
    " source TEXT NOT NULL, gpu_name TEXT NOT NULL,"
    " measured_at TEXT NOT NULL, PRIMARY KEY (device, sig)) WITHOUT ROWID;"
    "CREATE TABLE imports(device TEXT PRIMARY KEY, file TEXT NOT NULL,"
    " hash TEXT NOT NULL, rows INTEGER NOT NULL, imported_at TEXT NOT NULL);"
    "INSERT INTO meta VALUES ('schema_version', '1'),"
    " ('created_by', 'superopt');";

static const char upsert_sql[] =
    "INSERT INTO costs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
    " ON CONFLICT (device, sig) DO UPDATE SET ms = excluded.ms,"
    " stddev_ms = excluded.stddev_ms, samples = excluded.samples,"
    " source = excluded.source, gpu_name = excluded.gpu_name,"
    " measured_at = excluded.measured_at"
    " WHERE excluded.measured_at >= costs.measured_at";

base_status cd_sql_err(cd_db *db, const char *what, base_diag *d) {
  int rc = sqlite3_extended_errcode(db->sql);
  base_status st = rc == SQLITE_NOMEM ? BASE_ERR_NOMEM : BASE_ERR_IO;
  base_diag_set(d, st, 0, 0, "%s: %s", what, sqlite3_errmsg(db->sql));
  if (d)
    snprintf(d->file, sizeof d->file, "%s", db->path);
  return st;
}

base_status cd_exec(cd_db *db, const char *sql, base_diag *d) {
  if (sqlite3_exec(db->sql, sql, NULL, NULL, NULL) != SQLITE_OK)
    return cd_sql_err(db, "cost database", d);
  return BASE_OK;
}

static base_status refuse(cd_db *db, base_diag *d, const char *fmt,
                          const char *detail) {
  base_diag_set(d, BASE_ERR_IO, 0, 0, fmt, detail);
  if (d)
    snprintf(d->file, sizeof d->file, "%s", db->path);
  return BASE_ERR_IO;
}

/* SQLite ran out of memory during a check: out of memory (exit 3), not a
 * damaged database (exit 2). A check's result row can say so too: "out of
 * memory", or "Page 28: unable to get the page. error code=7" (7 is
 * SQLITE_NOMEM). */
static int oom_rc(int rc) { return (rc & 0xff) == SQLITE_NOMEM; }

static int says_oom(const char *v) {
  char code[32];
  int n = snprintf(code, sizeof code, "error code=%d", SQLITE_NOMEM);
  for (const char *p = v; (p = strstr(p, code)); p += n)
    if (p[n] < '0' || p[n] > '9')
      return 1;
  return strstr(v, "out of memory") != NULL;
}

static base_status oom(cd_db *db, base_diag *d, const char *what) {
  base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory (%s)", what);
  if (d)
    snprintf(d->file, sizeof d->file, "%s", db->path);
  return BASE_ERR_NOMEM;
}

/* Runs a one-value query into out (text); SQLITE_ROW, SQLITE_DONE or an
 * error code. */
static int query1(cd_db *db, const char *sql, char *out, size_t n) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char *v = sqlite3_column_text(st, 0);
    snprintf(out, n, "%s", v ? (const char *)v : "");
  }
  sqlite3_finalize(st);
  return rc;
}

/* A SQLite file that is not one (garbage, truncated) fails the first
 * read with SQLITE_NOTADB or SQLITE_CORRUPT. */
static base_status check_file(cd_db *db, base_diag *d) {
  char v[256];
  int rc = query1(db, "PRAGMA quick_check", v, sizeof v);
  if (oom_rc(rc) || (rc == SQLITE_ROW && says_oom(v)))
    return oom(db, d, "checking the cost database");
  if (rc != SQLITE_ROW && (rc & 0xff) != SQLITE_NOTADB &&
      (rc & 0xff) != SQLITE_CORRUPT)
    return cd_sql_err(db, "cannot read the cost database", d);
  if (rc != SQLITE_ROW)
    return refuse(db, d, "not a usable cost database: %s",
                  sqlite3_errmsg(db->sql));
  if (strcmp(v, "ok"))
    return refuse(db, d, "corrupt cost database (quick_check: %.200s)", v);
  return BASE_OK;
}

static base_status check_version(cd_db *db, base_diag *d) {
  char v[64];
  int rc = query1(db, "SELECT value FROM meta WHERE key = 'schema_version'", v,
                  sizeof v);
  if (oom_rc(rc))
    return oom(db, d, "reading the cost database's version");
  if (rc != SQLITE_ROW)
    return refuse(db, d,
                  "not a superopt cost database (%s): no schema_version in a "
                  "meta table",
                  rc == SQLITE_DONE ? "empty meta" : sqlite3_errmsg(db->sql));
  char want[16];
  snprintf(want, sizeof want, "%d", CD_SCHEMA_VERSION);
  if (strcmp(v, want)) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "%.40s, but this superopt reads version %d only (a newer "
             "superopt wrote it, or it is damaged)",
             v, CD_SCHEMA_VERSION);
    return refuse(db, d, "cost database has schema version %s", msg);
  }
  return BASE_OK;
}

/* Creates the schema in an empty database; checks the version otherwise.
 * BEGIN IMMEDIATE so that two processes creating it at once do not both
 * create it. */
static base_status init_schema(cd_db *db, base_diag *d) {
  char n[32];
  if (cd_exec(db, "BEGIN IMMEDIATE", d))
    return BASE_ERR_IO;
  int rc = query1(db, "SELECT count(*) FROM sqlite_schema", n, sizeof n);
  base_status st = BASE_OK;
  if (rc != SQLITE_ROW)
    st = cd_sql_err(db, "cost database", d);
  else if (!strcmp(n, "0"))
    st = cd_exec(db, schema, d);
  else
    st = check_version(db, d);
  if (st) {
    sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return st;
  }
  return cd_exec(db, "COMMIT", d);
}

/* WAL mode, once per file (it persists): a file already in it is left as
 * is; the switch takes the file alone and SQLite answers SQLITE_BUSY at
 * once, without the busy handler, while another process opens the new
 * file too (optimize jobs in parallel on a fresh cache: "database is
 * locked", 2026-11-30), so the switch is tried again for up to 10 s. */
static int to_wal(cd_db *db, char *mode, size_t n) {
  int rc = query1(db, "PRAGMA journal_mode", mode, n);
  if (rc == SQLITE_ROW && !strcmp(mode, "wal"))
    return rc;
  for (int k = 0; k < 200; k++) {
    rc = query1(db, "PRAGMA journal_mode = WAL", mode, n);
    if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
      break;
    sqlite3_sleep(50);
  }
  return rc;
}

static base_status configure(cd_db *db, base_diag *d) {
  char mode[32];
  sqlite3_busy_timeout(db->sql, 10000);
  base_status st = check_file(db, d);
  if (st)
    return st;
  if (to_wal(db, mode, sizeof mode) != SQLITE_ROW)
    return cd_sql_err(db, "cannot switch to WAL mode", d);
  if (cd_exec(db, "PRAGMA synchronous = NORMAL", d))
    return BASE_ERR_IO;
  st = init_schema(db, d);
  if (st)
    return st;
  if (sqlite3_prepare_v2(db->sql,
                         "SELECT ms FROM costs WHERE device = ?1 AND sig = ?2",
                         -1, &db->get, NULL) ||
      sqlite3_prepare_v2(db->sql, upsert_sql, -1, &db->put, NULL))
    return cd_sql_err(db, "cost database", d);
  return BASE_OK;
}

cd_db *cd_open(const char *path, base_diag *d) {
  cd_db *db = base_calloc(1, sizeof *db);
  if (db)
    db->path = base_strdup(path);
  if (!db || !db->path) {
    free(db);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  int rc = sqlite3_open_v2(path, &db->sql,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  base_status st = rc == SQLITE_OK
                       ? configure(db, d)
                       : cd_sql_err(db, "cannot open the cost database", d);
  if (st) {
    cd_close(db);
    return NULL;
  }
  return db;
}

void cd_close(cd_db *db) {
  if (!db)
    return;
  sqlite3_finalize(db->get);
  sqlite3_finalize(db->put);
  sqlite3_close(db->sql);
  cd_cache_free(&db->cache);
  free(db->scratch);
  free(db->tables);
  free(db->path);
  free(db);
}

static base_status mkdirs(char *path, base_diag *d) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
    *p = '/';
    if (bad)
      return base_diag_set(d, BASE_ERR_IO, 0, 0,
                           "cannot create folder for '%s': %s", path,
                           strerror(errno));
  }
  return BASE_OK;
}

base_status cd_default_path(char *buf, size_t n, base_diag *d) {
  const char *env = getenv("SUPEROPT_COSTDB"),
             *cache = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int k;
  if (env && *env)
    k = snprintf(buf, n, "%s", env);
  else if (cache && *cache)
    k = snprintf(buf, n, "%s/superopt/costdb.sqlite", cache);
  else if (home && *home)
    k = snprintf(buf, n, "%s/.cache/superopt/costdb.sqlite", home);
  else
    return base_diag_set(d, BASE_ERR_IO, 0, 0,
                         "no cost database path: set SUPEROPT_COSTDB or HOME");
  if (k < 0 || (size_t)k >= n)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "cost database path too long");
  return mkdirs(buf, d);
}

base_status cd_begin(cd_db *db, base_diag *d) {
  return cd_exec(db, "BEGIN IMMEDIATE", d);
}

base_status cd_commit(cd_db *db, base_diag *d) {
  return cd_exec(db, "COMMIT", d);
}

base_status cd_rollback(cd_db *db, base_diag *d) {
  cd_cache_clear(&db->cache); /* it may hold rolled-back rows */
  return cd_exec(db, "ROLLBACK", d);
}

void cd_now(char buf[32]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

base_status cd_upsert(cd_db *db, const char *device, const char *sig,
                      const cd_entry *e, base_diag *d) {
  char now[32];
  if (!e->measured_at)
    cd_now(now);
  sqlite3_stmt *s = db->put;
  sqlite3_reset(s);
  sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, sig, -1, SQLITE_STATIC);
  sqlite3_bind_double(s, 3, e->ms);
  sqlite3_bind_double(s, 4, e->stddev_ms);
  sqlite3_bind_int(s, 5, e->samples);
  sqlite3_bind_text(s, 6, e->source ? e->source : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 7, e->gpu_name ? e->gpu_name : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 8, e->measured_at ? e->measured_at : now, -1,
                    SQLITE_TRANSIENT);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_DONE)
    return cd_sql_err(db, "cannot store a cost", d);
  cd_cache_clear(&db->cache);
  return BASE_OK;
}

base_status cd_put(cd_db *db, const char *device, const char *sig,
                   const cd_entry *e, base_diag *d) {
  char why[256];
  if (cd_row_check(device, sig, e, why, sizeof why) >= 0)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "bad cost row: %s", why);
  return cd_upsert(db, device, sig, e, d);
}

static base_status sync_name(cd_db *db, const char *device, base_diag *d) {
  const cd_device *dev = cd_device_find(device, d);
  return dev ? cd_sync_tables(db, dev, d) : BASE_ERR_PARAM;
}

base_status cd_lookup(cd_db *db, const char *device, const char *sig,
                      double *ms, int *found, base_diag *d) {
  base_status st = sync_name(db, device, d);
  if (st)
    return st;
  sqlite3_stmt *s = db->get;
  sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, sig, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  *found = rc == SQLITE_ROW;
  if (*found)
    *ms = sqlite3_column_double(s, 0);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return cd_sql_err(db, "cannot read a cost", d);
  if (*found && !(isfinite(*ms) && *ms > 0))
    return refuse(db, d, "corrupt cost database: bad cost for '%.200s'", sig);
  return BASE_OK;
}

base_status cd_check(cd_db *db, base_diag *d) {
  char v[256];
  int rc = query1(db, "PRAGMA integrity_check", v, sizeof v);
  if (oom_rc(rc) || (rc == SQLITE_ROW && says_oom(v)))
    return oom(db, d, "checking the cost database");
  if (rc != SQLITE_ROW)
    return cd_sql_err(db, "integrity check failed", d);
  if (strcmp(v, "ok"))
    return refuse(db, d, "corrupt cost database (integrity_check: %.200s)", v);
  return BASE_OK;
}

unsigned char *cd_scratch(cd_db *db, size_t n) {
  if (n > db->capscratch) {
    unsigned char *p = base_realloc(db->scratch, n * 2);
    if (!p)
      return NULL;
    db->scratch = p;
    db->capscratch = n * 2;
  }
  return db->scratch;
}
