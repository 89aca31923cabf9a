/* cd_int.h: internals shared by the cost database's files (not public). */
#ifndef SUPEROPT_CD_INT_H
#define SUPEROPT_CD_INT_H

#include <sqlite3.h>
#include <stdint.h>

#include "costdb.h"

/* A hash map from byte keys (operator, parameters, input shapes, device)
 * to a node's cost, so a search costing thousands of graphs formats and
 * looks up each distinct operator once. */
typedef struct cd_centry {
  uint64_t hash;
  size_t off, len; /* the key: keys[off .. off+len) */
  double ms;
  int estimated;
} cd_centry;

typedef struct cd_cache {
  cd_centry *e;
  int32_t n, cap;  /* entries */
  int32_t *slot;   /* open addressing: entry + 1, 0 = empty */
  int32_t capslot; /* power of two > 2 * n, or 0 */
  unsigned char *keys;
  size_t nkeys, capkeys;
} cd_cache;

/* Finds key; returns the entry or NULL. */
const cd_centry *cd_cache_get(const cd_cache *c, const void *key, size_t len,
                              uint64_t hash);
/* Adds key (not present); 0 on success, -1 out of memory. */
int cd_cache_put(cd_cache *c, const void *key, size_t len, uint64_t hash,
                 double ms, int estimated);
void cd_cache_clear(cd_cache *c);
void cd_cache_free(cd_cache *c);

/* A cost model's memo of a prediction for node of g under tag (negative:
 * never a device index), kept in db's cache beside the rows' costs and
 * cleared with them: cd_memo_get returns 1 and sets *ms when there is one
 * (0 without db); cd_memo_put adds it (nothing without db). */
int cd_memo_get(cd_db *db, const ir_graph *g, int node, int32_t tag,
                double *ms);
base_status cd_memo_put(cd_db *db, const ir_graph *g, int node, int32_t tag,
                        double ms, base_diag *d);

struct cd_db {
  sqlite3 *sql;
  char *path;
  char *tables;    /* folder of <device>.tsv, or NULL */
  unsigned synced; /* bit i: the table of cd_device_at(i) was checked */
  sqlite3_stmt *get, *put;
  cd_cache cache;
  unsigned char *scratch; /* the cache key of the node being costed */
  size_t capscratch;
};

/* Index of dev in the device table, or -1 with d set. */
int cd_device_index(const cd_device *dev, base_diag *d);
/* Sets d from SQLite's last error on db: "what: sqlite message". */
base_status cd_sql_err(cd_db *db, const char *what, base_diag *d);
/* Runs sql (no results); status + d on failure. */
base_status cd_exec(cd_db *db, const char *sql, base_diag *d);
/* Checks the fields of a row; on failure returns the 0-based field that is
 * wrong and writes why into why. -1 when all are right. */
int cd_row_check(const char *device, const char *sig, const cd_entry *e,
                 char *why, size_t n);
/* Upserts one row (no checks). */
base_status cd_upsert(cd_db *db, const char *device, const char *sig,
                      const cd_entry *e, base_diag *d);
/* Current UTC time as YYYY-MM-DDTHH:MM:SSZ. */
void cd_now(char buf[32]);
/* Grows db->scratch to n bytes; NULL on OOM. */
unsigned char *cd_scratch(cd_db *db, size_t n);

#endif
