/* fuse.h: grouping element-wise operators into `fused` nodes.
 *
 * fuse_graph rewrites a graph so that chains and trees of element-wise
 * operators (the operators ir_body_op_ok accepts) run as one fused node
 * each: one kernel, intermediate tensors never written to memory; a group
 * may end with one row reduction (softmax, layernorm or reduce_mean over
 * the last axis, ir_body_row_op) whose input x is such a chain (its
 * layernorm gamma and beta stay inputs of the fused node). Fusing
 * preserves semantics by construction (the fused node's reference kernel
 * runs the same operators), so it needs no rule and no proof.
 *
 * Grouping: an element-wise node is inlined into its consumers when all of
 * them are element-wise (or row reductions reading it as x) and it is not a
 * graph output nor weight-only (those run once at load), nor an ewadd the
 * CUDA executor folds into the convolution or matmul computing one operand
 * (a residual epilogue with the relu after it: fusing it would add a pass
 * over the tensor). A node read by one consumer is always inlined; a node
 * read by several is recomputed in each when that moves fewer bytes than
 * keeping it (roofline: keep = write it once and read it per consumer,
 * recompute = read its inputs per consumer), else kept. Each group is then
 * kept only when the cost function prices the fused node below the nodes
 * it replaces (shared nodes counted by share). The search prices its
 * candidates with it (srch_options.fuse_k: each region's result is the
 * cheapest once fused of its cheapest graphs); `optimize` then runs it as
 * a pass on the whole result.
 *
 * With a cost function, the graph whose products read by a lone layer
 * norm have their bias and residual taken out of the epilogue (fuse_peel)
 * is fused too, and the result priced lower kept.
 *
 * Before grouping, each chain matmul(q, k) -> [smul(., s)] -> softmax over
 * the last axis -> matmul(., v) whose links are read by the next alone
 * becomes one attention node (q, k, v of one rank, no bias or activation,
 * q's and v's last dimensions at most FUSE_ATT_MAX_DIM: the CUDA kernel's
 * limit), where the cost function prices it below the chain.
 */
#ifndef SUPEROPT_FUSE_H
#define SUPEROPT_FUSE_H

#include "../ir/ir.h"

/* Cost of node `node` of g in microseconds (any consistent unit) into
 * *cost; *estimated (may be NULL) is set when the cost was estimated, not
 * measured. An error (out of memory, a database error; d filled) fails
 * fuse_graph: a cost is never an in-band error value. The signature of
 * cd_cost_fn (costdb.h), so cd_model_cost serves as is. Never called for
 * weight-only nodes (they run once, at load). */
typedef base_status (*fuse_cost_fn)(void *u, const ir_graph *g, int node,
                                    double *cost, int *estimated, base_diag *d);

typedef struct fuse_options {
  fuse_cost_fn cost; /* NULL: every group is kept */
  void *cost_u;
} fuse_options;

#define FUSE_ATT_MAX_DIM 128

typedef struct fuse_stats {
  int attention;  /* attention nodes created */
  int groups;     /* fused nodes created */
  int fused_ops;  /* original nodes they replace */
  int recomputed; /* nodes recomputed in several groups */
  int rejected;   /* groups the cost function refused */
  int peeled;     /* products whose bias and residual went into the layer
                     norm's fused row (fuse_peel; the peeled graph priced
                     lower) */
  double cost_before, cost_after; /* sums of the cost function (if any)
                                     over the nodes that are not
                                     weight-only, as cd_sum_cost sums */
} fuse_stats;

/* A new graph with element-wise groups fused (same inputs, weights,
 * outputs and tensor names for everything kept), or NULL with d set (out
 * of memory, the cost function's error). st may be NULL. */
ir_graph *fuse_graph(const ir_graph *g, const fuse_options *o, fuse_stats *st,
                     base_diag *d);

/* *out: g with each product's bias and residual taken out of its epilogue
 * into element-wise adds where a layer norm alone reads the product
 * (peel.c), or NULL where there is no such product (nothing built: it
 * runs on every graph fuse_graph prices); *count the products so peeled.
 * fuse_graph fuses both g and this graph when it has a cost function, and
 * keeps the one priced lower. Out of memory: BASE_ERR_NOMEM with d set. */
base_status fuse_peel(const ir_graph *g, ir_graph **out, int *count,
                      base_diag *d);

#endif
