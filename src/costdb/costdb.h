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
#include <stdint.h>

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
/* The device key in a GPU's name: "NVIDIA H100 80GB HBM3" -> "h100", the
 * first word with a digit, lowercased, into out ("" when none). */
void cd_gpu_key(const char *gpu, char *out, size_t n);
/* The device of a GPU called gpu ("NVIDIA H200" -> h200: its first word
 * with a digit, lowercased), or NULL when no device model has that name. */
const cd_device *cd_device_for_gpu(const char *gpu);
/* The device estimates are for when none is asked for: the machine's GPU
 * when the NVIDIA driver lists one under proc_root ("/proc" when NULL:
 * driver/nvidia/gpus/<bus id>/information, its "Model:" line; the lowest
 * bus id; no CUDA library is loaded), by cd_device_for_gpu, the H100's
 * model for a GPU without one; else the CPU. why (n bytes) gets the reason
 * ("no GPU on this machine", "the GPU present, NVIDIA H200"). */
const cd_device *cd_device_default(const char *proc_root, char *why, size_t n);

/* ---- signatures and the roofline estimate ---------------------------- */

/* Writes node's canonical signature into buf (always NUL-terminated when
 * n > 0): operator name, each input's slot name and shape, then every
 * parameter (defaults included, pads resolved), e.g.
 *   conv2d x=[1,64,56,56] w=[64,64,3,3] b=[64] stride=[1,1]
 *   pad=[1,1,1,1] dilation=[1,1] groups=1 act=relu
 * Independent of tensor names. Returns the signature's length (as snprintf:
 * truncated if >= n). */
size_t cd_node_sig(const ir_graph *g, int node, char *buf, size_t n);
/* The signature node would have in g converted to the half type `as`
 * (ir_graph_to_dtype): its float32 inputs written as `as`, unless the
 * half policy keeps the operator in float32 (IR_HALF_F32); as = IR_DT_F32
 * is cd_node_sig. How the search, which runs on float32 graphs, finds the
 * rows measured in a half type (cd_model.half). */
size_t cd_node_sig_as(const ir_graph *g, int node, ir_dtype as, char *buf,
                      size_t n);

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
  const char *source;      /* who measured: "cuda-exec", "tsv:h100.tsv"
                              (costdb import), "table:h100.tsv" (a
                              checked-in table imported on use) */
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
  long imported;  /* of which came from TSV files (source "tsv:..." or
                     "table:...") */
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

/* As cd_sum_cost, for the graph as an ONNX runtime runs it: nodes that
 * compute only from weights with values and constants are free (folded
 * at load, as `export` writes them into initializers), but weight-only
 * nodes over weights without values (graph inputs) run on every inference
 * and are priced; *kept (may be NULL) gets their number. */
base_status cd_sum_cost_runtime(const ir_graph *g, cd_cost_fn f, void *u,
                                double *cost, int *estimated, int *kept,
                                base_diag *d);

/* Cost of one node on dev: the measurement, else the estimate (*estimated
 * set to 1). db may be NULL (estimates only). Cached in db. */
base_status cd_node_cost(cd_db *db, const cd_device *dev, const ir_graph *g,
                         int node, double *ms, int *estimated, base_diag *d);
/* The same for the node's signature as the half type `as`
 * (cd_node_sig_as; IR_DT_F32: cd_node_cost). */
base_status cd_node_cost_as(cd_db *db, const cd_device *dev, const ir_graph *g,
                            int node, ir_dtype as, double *ms, int *estimated,
                            base_diag *d);

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

/* ---- the fitted model (fit.c) ---------------------------------------- */

/* Writes a one-node graph computing the operator of signature sig (as
 * cd_node_sig writes them; inputs i0, i1, ...: i0 an input, the others
 * weights; outputs y0, ...), so that cd_node_sig of its node gives sig
 * back. NULL with d set for a fused node's signature (its body is only a
 * hash) or a malformed one. */
ir_graph *cd_sig_graph(const char *sig, base_diag *d);

/* The fit's classes: one per operator (an ir_opcode), except that conv2d
 * is four: IR_OP_CONV2D (dense k x k kernels), CD_CLASS_CONV_1X1 (dense
 * 1x1), CD_CLASS_CONV_GROUPED (groups > 1, several input channels a
 * group) and CD_CLASS_CONV_DEPTHWISE (one input channel a group). */
enum {
  CD_CLASS_CONV_1X1 = IR_NOPS,
  CD_CLASS_CONV_GROUPED,
  CD_CLASS_CONV_DEPTHWISE,
  CD_NCLASSES
};
/* "conv2d/1x1", "relu", ... */
const char *cd_class_name(int cls);

#define CD_NFEAT 6 /* features of the fitted model (cd_sample.x) */

/* One measured row of a device's table, as the fit sees it. */
typedef struct cd_sample {
  int op;             /* its class (an ir_opcode, or CD_CLASS_*) */
  double ms;          /* the measurement */
  double x[CD_NFEAT]; /* features: launches (a float32 concat's times its
                      inputs), bytes / bandwidth (ms; a slice's what it
                      shows; with the bytes of the kernels the executor
                      adds, x[5]), flops / peak (ms; conv2d/matmul at the
                      TF32 rate, a dense k x k conv2d's at least one
                      wave's) or, for other operators, bytes beyond the L2
                      / bandwidth (ms), the bytes moved through an
                      irregular path / bandwidth (ms; inner broadcasts,
                      unaligned slices, transposes and concats, float32
                      batch norms over planes not a multiple of 4; a
                      half pool's window reads one at a time; a dense
                      conv2d's, or a half depthwise one's, flops / FP32
                      peak when its input channels are not 16-byte runs,
                      x[2] then 0), a softmax's waves of one block a row
                      (rows / SMs, 1 us a wave, in ms) or the bytes of a
                      float32 binary operator with a scalar operand (ms),
                      and the launches of the kernels the executor adds
                      beside the node's own (an asymmetric pad, an
                      activation pass, a half concat's copy an input) */
  double roofline;    /* cd_estimate of the row */
  uint64_t hash;      /* XXH3-64 of the signature (the fold of a row) */
} cd_sample;

/* The measured rows of dev in db (its table imported first), in signature
 * order, views, constants and unparseable signatures (fused bodies) left
 * out and counted in *skipped (may be NULL). *out is malloc'd. */
base_status cd_samples(cd_db *db, const cd_device *dev, cd_sample **out, int *n,
                       int *skipped, base_diag *d);

typedef enum {
  CD_FIT_NONE, /* no rows to fit on: the roofline estimate */
  CD_FIT_OWN,  /* fitted on the operator's own rows */
  CD_FIT_KIND, /* too few rows: the fit of all rows of its kind */
  CD_FIT_ALL   /* the fit of all matrix (or all other) rows */
} cd_fit_from;

/* ms = c[0] * launches + c[1] * bytes / bandwidth + c[2] * flops / peak
 *      + c[3] * irregular bytes / bandwidth + c[4] * softmax waves (or
 *      scalar-operand bytes) + c[5] * added launches (cd_sample.x):
 * c[0] the fixed cost per launch (ms, > 0), c[1..4] (>= 0) how many
 * times slower than the peak bandwidth and peak rate the operator runs,
 * c[5] (>= 0) the cost of each added launch (ms). */
typedef struct cd_fit_op {
  double c[CD_NFEAT];
  int rows;         /* the operator's own rows in the fit */
  cd_fit_from from; /* where c comes from */
} cd_fit_op;

typedef struct cd_fit {
  cd_fit_op op[CD_NCLASSES]; /* by class */
  int rows;                  /* rows fitted on */
} cd_fit;

/* Fits every operator on the rows s[i] with use[i] set (use NULL: all):
 * per class with at least 4 rows, else pooled by kind, else over all
 * matrix (or all other) rows, else none. Positive coefficients, an L1
 * fit of the relative error (iteratively reweighted least squares).
 * Deterministic. Fails only for want of memory. */
base_status cd_fit_samples(const cd_sample *s, int n, const unsigned char *use,
                           cd_fit *f, base_diag *d);
/* The fitted cost of node on dev, in ms: 0 for views and constants, the
 * roofline estimate for an operator without a fit. */
double cd_fit_predict(const cd_fit *f, const cd_device *dev, const ir_graph *g,
                      int node);

/* Calls fn(u, sig, cls, measured, predicted) for every measured row of
 * dev in db that f (fitted on them) predicts beyond `factor` times its
 * measurement either way (factor > 1), in signature order; *n the count
 * (may be NULL). Rows cd_samples leaves out are left out here too. */
base_status cd_fit_beyond(cd_db *db, const cd_device *dev, const cd_fit *f,
                          double factor,
                          void (*fn)(void *u, const char *sig, int cls,
                                     double ms, double predicted),
                          void *u, int *n, base_diag *d);

/* Relative errors |predicted - measured| / measured on held-out rows. */
typedef struct cd_fit_err {
  int n;
  double median, p90;
} cd_fit_err;

typedef struct cd_fit_report {
  cd_fit_err fit, single; /* the fitted model; the single factor per
                             operator (sum(measured) / sum(roofline) over
                             the training rows), the model it replaced */
  cd_fit_err fit_op[CD_NCLASSES], single_op[CD_NCLASSES]; /* by class */
} cd_fit_report;

/* k-fold cross-validation: row i is held out in fold hash % folds; each
 * fold is predicted by both models fitted on the other folds. */
base_status cd_fit_crossval(const cd_sample *s, int n, int folds,
                            cd_fit_report *rep, base_diag *d);

/* ---- the optimizer's cost model -------------------------------------- */

/* Called by cd_model_cost for a node that has no measurement and runs a
 * kernel (sig: its signature): may measure it and store it in the model's
 * database (then *ms is the measurement and *measured 1), or note the
 * signature (*measured 0). An error fails the cost. */
typedef base_status (*cd_unmeasured_fn)(void *u, const ir_graph *g, int node,
                                        const char *sig, double *ms,
                                        int *measured, base_diag *d);

/* A node's cost in microseconds: its measurement on dev from db, else the
 * fitted model's prediction (cd_fit_predict, fitted on dev's measured
 * rows by cd_model_fit), else dev's roofline estimate. This is the cost
 * `superopt optimize` searches with. */
typedef struct cd_model {
  cd_db *db;                   /* measurements; NULL: estimates only */
  const cd_device *dev;        /* the device costs are for */
  cd_fit fit;                  /* set by cd_model_fit */
  int fitted;                  /* 1 once cd_model_fit ran */
  cd_unmeasured_fn unmeasured; /* NULL: none */
  void *unmeasured_u;
  /* optimize --dtype T (cd_model_set_half): the device whose rows were
   * measured in T (h200-bf16); a node's row there, by its signature as T,
   * comes before dev's. NULL: none. */
  const cd_device *half_dev;
  ir_dtype half;
  /* the type of half_dev's signatures: half, or the other half type when
   * half's device has no rows and the other's has (f16 priced by
   * h200-bf16's rows: one tensor-core rate, the same bytes moved) */
  ir_dtype half_as;
  /* the model fitted on half_dev's rows (cd_model_fit, when half_dev has
   * rows): a half node without a row is predicted by it, at half_dev's
   * rates, not by dev's float32 fit (which priced BERT-base's bf16
   * attention at 2.5x what the bf16 rows' fit does) */
  cd_fit half_fit;
  int half_fitted;
} cd_model;

/* db may be NULL; dev NULL: the first device (h100). Not fitted: the
 * roofline estimate for unmeasured nodes. */
void cd_model_init(cd_model *m, cd_db *db, const cd_device *dev);
/* Fits the model on dev's measured rows in db (cd_samples,
 * cd_fit_samples), and on half_dev's when cd_model_set_half set one that
 * has rows; without db or rows, every operator keeps the roofline
 * estimate. */
base_status cd_model_fit(cd_model *m, base_diag *d);
/* Prices m's nodes as the half type t first: half_dev = the device
 * "<dev>-<t>" (h200 -> h200-bf16; its table costdb/h200-bf16.tsv), when
 * the device table has one (else none, and *name stays ""); name (n
 * bytes) gets its name. When that device has no rows in m's database and
 * the other half type's has (f16 without costdb/h200-f16.tsv, with
 * costdb/h200-bf16.tsv), the other's rows are used by their own type's
 * signatures (half_as). t = IR_DT_F32: none. */
void cd_model_set_half(cd_model *m, ir_dtype t, char *name, size_t n);
/* The cd_cost_fn of a model: u is a cd_model (const; NULL: the plain h100
 * estimate, what library callers that pass no cost function get, which
 * never fails). Fails with cd_node_cost's error (out of memory, a database
 * error) or the unmeasured hook's. */
base_status cd_model_cost(void *u, const ir_graph *g, int node, double *cost,
                          int *estimated, base_diag *d);
/* As cd_model_cost, except that a fused node without a measurement is
 * priced at the dearer of the fit and the roofline estimate (cd_estimate):
 * the fused class has no rows of its own (its fit is the element-wise
 * kind's), and on the GPU a graph whose convolutions keep their batch
 * norms as fused nodes ran slower than the same graph with them folded
 * into the convolutions' epilogues where the fit said faster
 * (docs/search.md, "Fusion in the search"). The search's bound on a
 * choice that rests on fused nodes (srch_options.fuse_bound). */
base_status cd_model_cost_bound(void *u, const ir_graph *g, int node,
                                double *cost, int *estimated, base_diag *d);

#endif
