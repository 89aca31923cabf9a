/* export.c: writing the database as a TSV table (stable order, shortest
 * round-trip numbers) and the per-device counts of `costdb stats`. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_int.h"

/* The shortest %.Ng (N = 15..17) that reads back as v. */
static void fmt_double(char out[32], double v) {
  for (int p = 15; p <= 17; p++) {
    snprintf(out, 32, "%.*g", p, v);
    if (strtod(out, NULL) == v)
      return;
  }
}

static void put_row(base_buf *b, sqlite3_stmt *s) {
  char ms[32], sd[32];
  fmt_double(ms, sqlite3_column_double(s, 2));
  fmt_double(sd, sqlite3_column_double(s, 3));
  base_buf_printf(b, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", sqlite3_column_text(s, 0),
                  sqlite3_column_text(s, 1), ms, sd, sqlite3_column_int(s, 4),
                  sqlite3_column_text(s, 5), sqlite3_column_text(s, 6));
}

char *cd_export_text(cd_db *db, const char *device, base_diag *d) {
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(db->sql,
                         "SELECT device, sig, ms, stddev_ms, samples, "
                         "gpu_name, measured_at FROM costs WHERE ?1 IS NULL "
                         "OR device = ?1 ORDER BY device, sig",
                         -1, &s, NULL))
    return cd_sql_err(db, "cost database", d), NULL;
  if (device)
    sqlite3_bind_text(s, 1, device, -1, SQLITE_STATIC);
  base_buf b = {0};
  base_buf_printf(
      &b, "device\tsig\tms\tstddev_ms\tsamples\tgpu_name\tmeasured_at\n");
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    put_row(&b, s);
  if (rc != SQLITE_DONE || b.oom) {
    if (rc != SQLITE_DONE)
      cd_sql_err(db, "cannot read the costs", d);
    else
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    free(b.s);
    b.s = NULL;
  }
  sqlite3_finalize(s);
  return b.s;
}

base_status cd_export_tsv(cd_db *db, const char *device, const char *path,
                          base_diag *d) {
  char *text = cd_export_text(db, device, d);
  if (!text)
    return d ? d->code : BASE_ERR_IO;
  base_status st = base_write_atomic(path, text, strlen(text), d);
  free(text);
  return st;
}

static void stat_row(sqlite3_stmt *s, cd_stat *o) {
  const unsigned char *t;
  memset(o, 0, sizeof *o);
  snprintf(o->device, sizeof o->device, "%s", sqlite3_column_text(s, 0));
  o->rows = sqlite3_column_int64(s, 1);
  o->imported = sqlite3_column_int64(s, 2);
  t = sqlite3_column_text(s, 3);
  snprintf(o->table, sizeof o->table, "%s", t ? (const char *)t : "");
  t = sqlite3_column_text(s, 4);
  snprintf(o->hash, sizeof o->hash, "%s", t ? (const char *)t : "");
}

base_status cd_stats(cd_db *db, cd_stat *out, int max, int *n, base_diag *d) {
  static const char sql[] =
      "WITH devs AS (SELECT device FROM costs UNION SELECT device FROM "
      "imports) SELECT devs.device, (SELECT count(*) FROM costs c WHERE "
      "c.device = devs.device), (SELECT count(*) FROM costs c WHERE c.device "
      "= devs.device AND (c.source LIKE 'tsv:%' OR c.source LIKE 'table:%')), "
      "i.file, i.hash FROM devs "
      "LEFT JOIN imports i ON i.device = devs.device ORDER BY devs.device";
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL))
    return cd_sql_err(db, "cost database", d);
  int rc;
  *n = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW && *n < max)
    stat_row(s, &out[(*n)++]);
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return cd_sql_err(db, "cannot read the costs", d);
  return BASE_OK;
}
