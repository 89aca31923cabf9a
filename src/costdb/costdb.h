/* costdb.h: operator costs per device: canonical operator signatures, device
 * models with a roofline estimate, a SQLite database of measured costs
 * (checked-in TSV tables imported on first use), and graph cost = sum of
 * its operators' costs, cached in memory for the search.
 *
 * A cost is in milliseconds: one launch of the operator's kernel(s) as part
 * of a sequence, launch overhead included. Measured costs come from the
 * database; operators without one are estimated (cd_estimate). Format of the
 * database and the tables, and the device figures with sources:
 * docs/costdb.md. A cd_db is not thread-safe: one per thread.
 */
#ifndef SUPEROPT_COSTDB_H
#define SUPEROPT_COSTDB_H

#include <stddef.h>

#include "../ir/ir.h"

#define CD_SCHEMA_VERSION 1 /* the database schema this code reads */
#define CD_SIG_MAX 8192     /* longest operator signature, NUL included */

/* ---- devices --------------------------------------------------------- */

typedef struct cd_device {
  const char *name;  /* key in the database: "h100", "h200", "cpu" */
  const char *desc;  /* the hardware the figures describe */
  double fp32_flops; /* peak FP32 FLOP/s on the vector units (FMA = 2) */
  double tf32_flops; /* peak dense TF32 tensor-core FLOP/s; 0 if none */
  double mem_bw;     /* peak memory bandwidth, bytes/s */
  double launch_ms;  /* fixed cost of one kernel launch, ms */
  int use_tf32;      /* 1: conv2d/matmul estimated at tf32_flops */
} cd_device;

/* The device called name, or NULL with d listing the known devices. */
const cd_device *cd_device_find(const char *name, base_diag *d);
int cd_ndevices(void);
const cd_device *cd_device_at(int i); /* 0 <= i < cd_ndevices() */

/* ---- signatures and the roofline estimate ---------------------------- */

/* Writes node's canonical signature into buf (always NUL-terminated when
 * n > 0): operator name, each input's slot name and shape, then every
 * parameter (defaults included, pads resolved), e.g.
 *   conv2d x=[1,64,56,56] w=[64,64,3,3] b=[64] stride=[1,1]
 *   pad=[1,1,1,1] dilation=[1,1] groups=1 act=relu
 * Independent of tensor names. Returns the signature's length (as snprintf:
 * truncated if >= n). */
size_t cd_node_sig(const ir_graph *g, int node, char *buf, size_t n);

/* Work of one node: floating-point operations, bytes read and written in
 * device memory (float32), kernel launches (0: a view or a constant). */
typedef struct cd_work {
  double flops, bytes;
  int launches;
  int matrix; /* conv2d/matmul: may run on tensor cores */
} cd_work;

cd_work cd_node_work(const ir_graph *g, int node);
/* Roofline: launches * launch_ms + max(flops / peak, bytes / bandwidth),
 * in ms; 0 for views and constants. */
double cd_estimate(const cd_device *dev, const ir_graph *g, int node);

/* ---- the database ---------------------------------------------------- */

typedef struct cd_db cd_db;

/* One measured cost. */
typedef struct cd_entry {
  double ms;               /* median time, ms (> 0, finite) */
  double stddev_ms;        /* standard deviation of the samples (>= 0) */
  int samples;             /* number of timed runs (>= 1) */
  const char *source;      /* who measured: "cuda-exec", "tsv:h100.tsv" */
  const char *gpu_name;    /* e.g. "NVIDIA H100 80GB HBM3"; may be "" */
  const char *measured_at; /* ISO 8601 date or time; NULL: now (UTC) */
} cd_entry;

/* $SUPEROPT_COSTDB, else $XDG_CACHE_HOME/superopt/costdb.sqlite, else
 * $HOME/.cache/superopt/costdb.sqlite; creates the folder. */
base_status cd_default_path(char *buf, size_t n, base_diag *d);

/* Opens (creating if absent) the database at path, in WAL mode. Refuses a
 * file that is not a SQLite database, a database of another program, a
 * corrupt one, or one whose schema version is not CD_SCHEMA_VERSION. */
cd_db *cd_open(const char *path, base_diag *d);
void cd_close(cd_db *db);
/* Folder of checked-in tables <device>.tsv, imported on a device's first
 * use (and again whenever the file's content changes). NULL: none. */
base_status cd_set_tables(cd_db *db, const char *dir, base_diag *d);
/* Imports dir/<device>.tsv if its content hash differs from the one last
 * imported; a missing file is not an error. */
base_status cd_sync_tables(cd_db *db, const cd_device *dev, base_diag *d);

/* Batches: cd_put calls between cd_begin and cd_commit are one transaction
 * (cd_rollback drops them). Without cd_begin each cd_put commits alone. */
base_status cd_begin(cd_db *db, base_diag *d);
base_status cd_commit(cd_db *db, base_diag *d);
base_status cd_rollback(cd_db *db, base_diag *d);

/* Stores a measurement; it replaces an existing one for (device, sig)
 * unless that one was measured later. device must be a known device. */
base_status cd_put(cd_db *db, const char *device, const char *sig,
                   const cd_entry *e, base_diag *d);
/* *found = 1 and *ms set when (device, sig) has a measurement, else 0. */
base_status cd_lookup(cd_db *db, const char *device, const char *sig,
                      double *ms, int *found, base_diag *d);
/* PRAGMA integrity_check; BASE_ERR_IO with SQLite's first complaint. */
base_status cd_check(cd_db *db, base_diag *d);

/* Per-device counts for `superopt costdb stats`. */
typedef struct cd_stat {
  char device[32];
  long rows;      /* measurements stored */
  long imported;  /* of which came from TSV tables (source "tsv:...") */
  char table[64]; /* table file last imported for the device, or "" */
  char hash[17];  /* its XXH3-64 content hash (hex), or "" */
} cd_stat;
/* Fills out[0..*n-1] (at most max), one row per device with rows or an
 * import, sorted by device. */
base_status cd_stats(cd_db *db, cd_stat *out, int max, int *n, base_diag *d);

/* ---- TSV tables (docs/costdb.md) ------------------------------------- */

/* Imports the tables paths[0..n-1] in one transaction: every line is checked
 * first; a bad line fails with file:line and imports nothing. *rows (may be
 * NULL) gets the number of rows read. */
base_status cd_import_tsv(cd_db *db, const char *const *paths, int n, int *rows,
                          base_diag *d);
/* Checks a table's text (len bytes) as cd_import_tsv would, importing
 * nothing (for the fuzzer and for checks); *nrows (may be NULL) set. */
base_status cd_check_tsv(const char *text, size_t len, const char *file,
                         int *nrows, base_diag *d);
/* The rows of device (NULL: all devices) as a TSV table, sorted by device
 * then signature (bytewise); malloc'd. Formats numbers so that importing
 * and exporting again is byte-identical. */
char *cd_export_text(cd_db *db, const char *device, base_diag *d);
/* cd_export_text written atomically to path. */
base_status cd_export_tsv(cd_db *db, const char *device, const char *path,
                          base_diag *d);

/* ---- costs ------------------------------------------------------------ */

/* Sets *cost to the cost of node `node` of g (any unit, e.g. microseconds;
 * lower is better) and *estimated (may be NULL) to 1 when the figure is a
 * model rather than a measurement. Returns BASE_OK, or an error (out of
 * memory, a database error; d filled) that fails the search: a cost is
 * never an in-band error value. The search never calls it for weight-only
 * nodes (they are free). */
typedef base_status (*cd_cost_fn)(void *u, const ir_graph *g, int node,
                                  double *cost, int *estimated, base_diag *d);

/* Sets *cost to the sum of f over the nodes of g that are not weight-only.
 * *estimated (may be NULL) is set when any node's cost was estimated.
 * Returns f's first error, or BASE_ERR_NOMEM. */
base_status cd_sum_cost(const ir_graph *g, cd_cost_fn f, void *u, double *cost,
                        int *estimated, base_diag *d);

/* Cost of one node on dev: the measurement, else the estimate (*estimated
 * set to 1). db may be NULL (estimates only). Cached in db. */
base_status cd_node_cost(cd_db *db, const cd_device *dev, const ir_graph *g,
                         int node, double *ms, int *estimated, base_diag *d);

typedef struct cd_cost {
  double ms;      /* total */
  int nmeasured;  /* nodes costed from a measurement */
  int nestimated; /* nodes costed by the roofline estimate */
  int nfolded;    /* nodes computing only from weights and constants:
                     folded before running, cost 0 */
} cd_cost;

/* Sum of the costs of g's nodes on dev, except folded ones (see cd_cost).
 */
base_status cd_graph_cost(cd_db *db, const cd_device *dev, const ir_graph *g,
                          cd_cost *out, base_diag *d);

/* ---- the optimizer's cost model -------------------------------------- */

/* A node's cost in microseconds: its measurement on dev from db, else
 * dev's roofline estimate (cd_estimate) times its operator's calibration
 * factor scale[op]. This is the cost `superopt optimize` searches with. */
typedef struct cd_model {
  cd_db *db;                         /* measurements; NULL: estimates only */
  const cd_device *dev;              /* the device costs are for */
  double scale[IR_NOPS];             /* estimate multiplier per operator */
  unsigned char calibrated[IR_NOPS]; /* scale[op] set by calibration */
} cd_model;

/* db may be NULL; dev NULL: the first device (h100). Scales are 1. */
void cd_model_init(cd_model *m, cd_db *db, const cd_device *dev);
/* Roofline estimates are optimistic next to measurements, so a graph
 * mixing both would favour rewrites into unmeasured shapes. For each
 * operator with measured nodes in g (weight-only nodes and views aside),
 * sets scale[op] = sum(measured) / sum(estimated) over those nodes and
 * calibrated[op] = 1; other operators get 1. A node whose cost cannot be
 * looked up (other than for want of memory) is left out. */
base_status cd_model_calibrate(cd_model *m, const ir_graph *g, base_diag *d);
/* The cd_cost_fn of a model: u is a cd_model (const; NULL: the plain h100
 * estimate, what library callers that pass no cost function get, which
 * never fails). Fails with cd_node_cost's error (out of memory, a database
 * error). */
base_status cd_model_cost(void *u, const ir_graph *g, int node, double *cost,
                          int *estimated, base_diag *d);

#endif
