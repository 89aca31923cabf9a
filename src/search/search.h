/* search.h: rule matching, rewriting, built-in passes and the TASO-style
 * cost-based backtracking search that turns proven rules into faster graphs.
 *
 * IR in, IR out: every function takes const graphs and returns fresh ones.
 * A rule (ir_rule) is used in a direction: forward matches its src graph and
 * substitutes its dst graph, backward the other way round. Matching is
 * shape-generic: a pattern proven on small shapes applies to any tensors of
 * the same ranks; the substituted side is re-typed with the graph's shapes
 * (ir_infer) and must reproduce the replaced tensors' shapes exactly.
 * docs/search.md explains the algorithms and the options.
 */
#ifndef SUPEROPT_SEARCH_H
#define SUPEROPT_SEARCH_H

#include <stdint.h>

#include "../ir/ir.h"

#define SRCH_MAX_PNODES 16   /* most nodes of one pattern */
#define SRCH_MAX_PTENSORS 64 /* most tensors of one pattern */

/* ---- costs ----------------------------------------------------------------
 */

/* Cost of node `node` of g (any unit, e.g. microseconds; lower is better).
 * Sets *estimated to 1 when the figure is a model rather than a measurement.
 * The search never calls it for weight-only nodes (they are free). */
typedef double (*srch_cost_fn)(void *u, const ir_graph *g, int node,
                               int *estimated);

/* The built-in cost: a roofline max(flops / 15 TFLOP/s, bytes / 900 GB/s)
 * plus 2 us per kernel launch, in microseconds; split and reshape are views
 * (free). u is unused. Always estimated. */
double srch_roofline_cost(void *u, const ir_graph *g, int node, int *estimated);

/* Sum of f over the nodes of g that are not weight-only. *estimated (may be
 * NULL) is set when any node's cost was estimated. */
double srch_graph_cost(const ir_graph *g, srch_cost_fn f, void *u,
                       int *estimated);

/* ---- matching -------------------------------------------------------------
 */

/* One occurrence of a pattern graph in a graph. */
typedef struct srch_match {
  int32_t node[SRCH_MAX_PNODES];     /* pattern node i -> graph node */
  int32_t tensor[SRCH_MAX_PTENSORS]; /* pattern tensor i -> graph tensor */
} srch_match;

typedef struct srch_matches {
  srch_match *m; /* malloc'd */
  int n, cap;
} srch_matches;

void srch_matches_free(srch_matches *ms);

/* Appends to ms every match of pat in g: operators, arities and parameters
 * equal (parameters that follow shapes excepted: split sizes, const_*
 * shapes, resolved 'same' padding), ranks equal, a pattern input used twice
 * binds one tensor, distinct pattern nodes bind distinct graph nodes, and no
 * intermediate tensor of the match (not an output of pat) is read outside
 * the match or is an output of g. Patterns with more than SRCH_MAX_PNODES
 * nodes or SRCH_MAX_PTENSORS tensors are an BASE_ERR_PARAM. */
base_status srch_match_graph(const ir_graph *pat, const ir_graph *g,
                             srch_matches *ms, base_diag *d);

/* ---- rewriting ------------------------------------------------------------
 */

/* Replaces match m of pat in g by repl (same input names as pat, outputs by
 * position). Returns a new graph in topological order without dead nodes or
 * unused weights. NULL with d set (BASE_ERR_SHAPE, BASE_ERR_CYCLE, ...) when
 * repl does not type-check on g's shapes, its outputs' shapes differ from the
 * replaced tensors', or the result would have a cycle. The result may share
 * weight values (tensor data) with g: keep g alive, or ir_graph_clone it. */
ir_graph *srch_rewrite(const ir_graph *g, const ir_graph *pat,
                       const ir_graph *repl, const srch_match *m, base_diag *d);

/* ---- rules compiled for the search ----------------------------------------
 */

enum { SRCH_FORWARD = 1, SRCH_BACKWARD = 2, SRCH_BOTH = 3 };

typedef struct srch_rules srch_rules;

/* Compiles the usable directions of rs's rules (directions: SRCH_*). Rules
 * whose status is not proven are refused (BASE_ERR_PARAM naming the first
 * one) unless allow_unproven. A direction is unusable, and skipped, when its
 * pattern has no operator, an output that is not computed by the pattern,
 * or an input the replacement needs but the pattern never reads. rs must
 * outlive the result. */
srch_rules *srch_rules_compile(const ir_ruleset *rs, int directions,
                               int allow_unproven, base_diag *d);
void srch_rules_free(srch_rules *r);
int srch_rules_count(const srch_rules *r); /* usable directed patterns */

/* ---- built-in passes (each returns a new graph; *count = changes made) ----
 */

/* conv2d (act none, output read only by one batchnorm) + batchnorm -> one
 * conv2d whose weights and bias are computed by weight-only nodes from the
 * conv's and the batchnorm's parameters. */
ir_graph *srch_fold_batchnorm(const ir_graph *g, int *count, base_diag *d);
/* conv2d/matmul (act none) whose output is read only by a relu, sigmoid,
 * tanh or gelu -> the conv/matmul with that act. */
ir_graph *srch_fuse_activations(const ir_graph *g, int *count, base_diag *d);
/* Sibling merging: conv2d (groups 1) or matmul (rank-2 weight) nodes that
 * read the same input with equal parameters, weights of equal shape but
 * for the output channels, and weights and biases computed from weights
 * only -> one node on weights (and biases) concatenated by weight-only
 * nodes, and a split whose outputs keep the siblings' names. A group (up
 * to 16 nodes) is merged only when f (user pointer u) costs the result
 * lower. */
ir_graph *srch_merge_siblings(const ir_graph *g, srch_cost_fn f, void *u,
                              int *count, base_diag *d);
/* Common subexpressions: a node with the operator, parameters and inputs
 * of an earlier one (NASNet-A's branches each apply relu to one input) is
 * dropped and its readers read the earlier node's outputs. Nodes computing
 * graph outputs are kept. Unused weights stay (srch_prune_dead). */
ir_graph *srch_cse(const ir_graph *g, int *count, base_diag *d);
/* Removes nodes whose outputs are never used and unused weights. */
ir_graph *srch_prune_dead(const ir_graph *g, int *count, base_diag *d);

/* ---- search ----------------------------------------------------------------
 */

typedef struct srch_options {
  double alpha;      /* expand graphs with cost < alpha * best (1.05) */
  int budget;        /* most expansions per region (1000) */
  int patience;      /* stop a region after this many expansions without a
                        cheaper graph (100); 0: never */
  int max_depth;     /* most rewrites from the input; < 0: unlimited */
  double time_limit; /* seconds for the whole search; <= 0: none */
  int directions;    /* SRCH_FORWARD | SRCH_BACKWARD (both) */
  int region_nodes;  /* regions of at most this many operators (48) */
  int queue_cap;     /* most queued graphs per region (4096) */
  int passes;        /* 1 + extra passes with shifted regions (2) */
  int merge;         /* run srch_merge_siblings before the search (1) */
  srch_cost_fn cost; /* node cost (srch_roofline_cost) */
  void *cost_u;      /* its user pointer */
} srch_options;

void srch_options_default(srch_options *o);

typedef struct srch_stats {
  int expanded, generated, duplicates, rejected, queue_peak, regions;
  int cse, bn_folded, acts_fused, merged, stopped_by_time;
  int stopped_by_patience; /* regions stopped for want of progress */
  double seconds, cost_before, cost_after;
  int estimated;   /* some cost was estimated */
  int nrules;      /* = ruleset size */
  int *applied_fw; /* applied_fw[i]: forward uses of rule i in the result */
  int *applied_bw; /* backward uses (both malloc'd, nrules entries) */
} srch_stats;

void srch_stats_free(srch_stats *s);

/* Searches g (one region, no passes) for its cheapest equivalent. Returns a
 * new graph (g itself cloned when nothing is better); st accumulates. */
ir_graph *srch_search(const ir_graph *g, const srch_rules *rules,
                      const srch_options *o, srch_stats *st, base_diag *d);

/* The whole optimizer: common subexpressions, batchnorm folding,
 * activation fusion, sibling merging (o->merge), the search region by region
 * (stitched back), activation fusion again, dead code removal. st is reset and
 * filled. Returns a new self-contained graph. */
ir_graph *srch_optimize(const ir_graph *g, const srch_rules *rules,
                        const srch_options *o, srch_stats *st, base_diag *d);

/* ---- end-to-end check
 * -------------------------------------------------------- */

/* Runs a and b on the CPU executor with the same inputs and weights (drawn
 * for a with seed; b's inputs and weights copied from a's by name) and sets
 * *max_err to the largest |a - b| over each output divided by that output's
 * largest |a|. BASE_ERR_SHAPE when the outputs do not correspond, or b needs
 * a weight a lacks. */
base_status srch_check(const ir_graph *a, const ir_graph *b, uint64_t seed,
                       double *max_err, base_diag *d);

#endif
