/* mutant.h: partially equivalent mutants made exact by correction (PET,
 * OSDI'21), IR in -> IR out.
 *
 * A mutant is a pair of graphs over the same input and weight names: f, a
 * subgraph of a model as written, and g, a cheaper or more parallel program
 * (concat / split / pad / slice / reshape / transpose around the same
 * compute) whose outputs have f's shapes but may differ from f's at some
 * positions. The box analysis cuts each output into a grid of boxes along the
 * lines where either graph changes behaviour (concat, split, pad and slice
 * boundaries and tensor edges, carried through the windows of convolutions
 * and pools), evaluates f and g in arithmetic modulo 2^31-1 on seeded random
 * inputs, and decides each box equal or different from its corners. The
 * correction recomputes only the different boxes with f's operator on the
 * input slices they need and writes them into g's outputs.
 *
 * Soundness: a mutant + correction is *verified by the box argument* with an
 * error bound (docs/mutants.md), never *proven*; callers also check it end
 * to end on floats (mutant_float_check). Everything here is deterministic
 * for a given seed (no sampling thresholds).
 */
#ifndef SUPEROPT_MUTANT_H
#define SUPEROPT_MUTANT_H

#include <stdint.h>

#include "../ir/ir.h"
#include "../search/search.h"

/* ---- mutant classes ------------------------------------------------------ */

typedef enum mutant_class {
  MUTANT_CONCAT_W,     /* two convs with one kernel shape on different inputs ->
                          one conv over the inputs concatenated along width */
  MUTANT_SPLIT_H,      /* an image split in two along H, the halves stacked in
                          the batch, one conv, unstacked */
  MUTANT_DILATED,      /* dilated conv = space-to-batch + plain conv +
                          batch-to-space (reshape/transpose/pad/slice) */
  MUTANT_BATCH_W,      /* a batch's images side by side along W, one conv on
                          batch 1, back to the batch (transpose/reshape) */
  MUTANT_PAD_SPLIT_H,  /* split-h for an odd H: one zero row padded below
                          (pad), split-h, the extra output row sliced off */
  MUTANT_GROUP_MERGE,  /* two convs on different inputs of one shape -> one
                          grouped conv over the inputs joined along C */
  MUTANT_MATMUL_BATCH, /* two matmuls with rank-2 right-hand sides of one
                          shape -> one batched matmul over the operands
                          stacked in a new batch axis */
  MUTANT_NCLASSES
} mutant_class;

const char *mutant_class_name(mutant_class c); /* "concat-w", ... */
/* The number of model nodes a mutant of class c replaces (1 or 2). */
int mutant_class_nodes(mutant_class c);
/* Class by name, or -1. */
int mutant_class_lookup(const char *name);

/* One mutant. f and g own their arenas; every input and weight of g is one
 * of f's (same name, kind and shape); output i of g has output i of f's
 * shape. */
typedef struct mutant {
  mutant_class cls;
  ir_graph *f, *g;
  int32_t site[2]; /* model nodes f was cut from (-1: none) */
} mutant;

typedef struct mutant_list {
  mutant *m;
  int n, cap;
} mutant_list;

void mutant_list_free(mutant_list *l); /* frees every f and g; zeroes *l */

/* The mutant of class cls for model nodes nodes[0] (and nodes[1] for the
 * classes of two nodes, mutant_class_nodes): f is those conv2d (matmul for
 * MUTANT_MATMUL_BATCH) nodes cut out of model (their data inputs become
 * graph inputs, their weights stay weights, names kept), g the
 * mutant over the same names. BASE_ERR_PARAM (with d) when the class does
 * not apply to those nodes (the message says why). */
base_status mutant_make(mutant_class cls, const ir_graph *model,
                        const int32_t *nodes, mutant *out, base_diag *d);

/* Every mutant of the classes in mask (bit 1 << cls) over model's conv2d
 * and matmul nodes, in node order (deterministic): split-h, dilated,
 * batch-w, pad-split-h for each conv they apply to; concat-w (group-merge)
 * for each conv with the next conv of the same kernel shape and parameters
 * on a different input of the same N, C, H (of the same shape) that does
 * not depend on it; matmul-batch for each matmul with the next one of the
 * same shapes and parameters that does not depend on it. Appends to out. */
base_status mutant_generate(const ir_graph *model, unsigned mask,
                            mutant_list *out, base_diag *d);

/* ---- box analysis -------------------------------------------------------- */

/* A box of output `out`: positions lo[k] <= i[k] < hi[k] on every axis. */
typedef struct mutant_box {
  int32_t out;
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
} mutant_box;

/* The grid of one output: cut[k][0..ncut[k]] are the interval starts along
 * axis k (cut[k][0] = 0; the last interval ends at the dimension). */
typedef struct mutant_grid {
  ir_shape shape;
  int32_t ncut[IR_MAX_RANK];
  int64_t *cut[IR_MAX_RANK];
  uint8_t *diff; /* per cell, row-major over the intervals: 1 = different */
  int64_t ncells, ndiff;
} mutant_grid;

typedef struct mutant_boxes {
  int32_t nout;
  mutant_grid *grid;   /* per output */
  mutant_box *wrong;   /* a disjoint cover of the different cells, merged */
  int32_t nwrong;      /* into larger boxes (greedy, deterministic) */
  int64_t points;      /* positions evaluated (box corners) */
  int64_t numel;       /* output positions, all outputs */
  int64_t wrong_numel; /* positions inside wrong boxes */
} mutant_boxes;

/* Box analysis of f against g (same output count and shapes) under seed.
 * BASE_ERR_PARAM with d when an operator of f or g has no modular kernel or
 * no cut rule (the message names it). Free with mutant_boxes_free. */
base_status mutant_analyze(const ir_graph *f, const ir_graph *g, uint64_t seed,
                           mutant_boxes *out, base_diag *d);
void mutant_boxes_free(mutant_boxes *b);
/* Whether position idx of output out lies in one of b's wrong boxes. */
int mutant_in_wrong(const mutant_boxes *b, int out, const int64_t *idx);

/* Brute force (tests): mask[j] = 1 where output out of f and g differ at
 * flat position j under seed (mask holds that output's numel bytes). */
base_status mutant_diff_all(const ir_graph *f, const ir_graph *g, uint64_t seed,
                            int out, uint8_t *mask, base_diag *d);

/* False-"equal" bound for one different box: deg / (2^31 - 1), where deg
 * is the largest number of factors multiplied along a path of f or g (2 for
 * one conv: input x weight), by Schwartz-Zippel. */
double mutant_false_equal_bound(const ir_graph *f, const ir_graph *g);

/* ---- correction ---------------------------------------------------------- */

/* g plus the correction of the boxes wrong[0..nwrong-1]: each box is
 * recomputed by f's conv2d (the node producing that output, which must read
 * a graph input and weights) on the input slices it needs, with explicit
 * padding where the slice meets the image edge, and written into g's output
 * with slice + concat. *out is a new graph over g's inputs (plus f's inputs
 * g lacks), its data movement fused with g's (mutant_fuse_moves). Never
 * re-runs f as a whole. */
base_status mutant_correct(const ir_graph *f, const ir_graph *g,
                           const mutant_box *wrong, int nwrong, ir_graph **out,
                           base_diag *d);

/* h with its data movement folded (fusecorr.c): slices of slices, of
 * concats and of splits read the piece they fall in, concats of concats
 * along one axis flatten, adjacent slices of one tensor merge, identity
 * slices and one-input concats vanish, dead nodes go. Exact (data movement
 * only); mutant_correct applies it, so a correction written into a concat or
 * slice that g ends with costs no second pass over g's output. */
base_status mutant_fuse_moves(const ir_graph *h, ir_graph **out, base_diag *d);

/* Runs f and h on the CPU executor on the same seeded random inputs and
 * weights (by name; a leaf of h holding values of its own runs on them:
 * ex_share_leaves) and returns the largest relative error over all outputs
 * (|a-b| / (1 + |a|)) in *err. BASE_ERR_SHAPE when h needs a leaf f lacks,
 * BASE_ERR_PARAM when h reads a weight without values and f's has some. */
base_status mutant_float_check(const ir_graph *f, const ir_graph *h,
                               uint64_t seed, double *err, base_diag *d);

/* ---- applying mutants to a model (apply.c) ------------------------------- */

/* Cost of node `node` of g (any unit, e.g. microseconds) into *cost;
 * *estimated (may be NULL) is set when it was estimated. An error (out of
 * memory, a database error; d filled) fails mutant_apply: a cost is never
 * an in-band error value. The signature of cd_cost_fn (costdb.h), so
 * cd_model_cost serves as is. Never called for weight-only nodes. */
typedef base_status (*mutant_cost_fn)(void *u, const ir_graph *g, int node,
                                      double *cost, int *estimated,
                                      base_diag *d);

typedef struct mutant_applied {
  mutant_class cls;
  char site[2][128];   /* the model outputs it replaced ("" unused) */
  double ms_before;    /* cost of f */
  double ms_after;     /* cost of g + correction */
  int64_t wrong_numel; /* corrected outputs */
  int64_t numel;       /* outputs of f */
  double bound;        /* mutant_false_equal_bound */
} mutant_applied;

typedef struct mutant_apply_stats {
  int considered;  /* mutants generated (the joint search: distinct ones) */
  int overlapping; /* not chosen: a site already rewritten by a taken mutant
                      (greedy); offered to the search, cheaper, and not on
                      the graph it returned (joint) */
  int not_cheaper; /* g, or g + correction, not cheaper than f */
  int refused;     /* no box analysis, correction or splice for it */
  int unmeasured;  /* cheaper only under estimated costs: not taken unless
                      mask has MUTANT_ESTIMATES */
  mutant_applied *applied; /* taken, in order (malloc'd) */
  int napplied;
  /* per class: considered, and cheaper by estimates only (unmeasured) */
  int cls_considered[MUTANT_NCLASSES], cls_unmeasured[MUTANT_NCLASSES];
  /* the joint search only: */
  int candidates; /* mutant rewrites handed to the search (all graphs) */
  int capped;     /* graphs whose mutants were cut at MUTANT_JOINT_CAP */
} mutant_apply_stats;

/* In mask beside the classes: also take a mutant whose saving rests on
 * estimated costs (cost's *estimated). Without it such a mutant is counted
 * in unmeasured and not taken: measured on the H100, the concat-w mutants
 * the fitted model priced cheaper made Inception-v3 and NASNet-A slower
 * (docs/mutants.md), so only a measured saving is believed. */
#define MUTANT_ESTIMATES (1u << 31)

/* g with every mutant of the classes in mask that pays under cost spliced
 * in (mutant + correction in place of f's nodes, f's output names kept),
 * chosen greedily in generation order; deterministic for a seed. *out is a
 * new graph (g itself when nothing pays, as a copy). Fails with cost's
 * error, or out of memory. Free st with
 * mutant_apply_stats_free. The result is verified by the box argument, not
 * proven: callers check it end to end. */
base_status mutant_apply(const ir_graph *g, unsigned mask, uint64_t seed,
                         mutant_cost_fn cost, void *u, ir_graph **out,
                         mutant_apply_stats *st, base_diag *d);
void mutant_apply_stats_free(mutant_apply_stats *st);

/* ---- mutants in the search (search.c) ------------------------------------ */

/* All mutant classes, for mutant_optimize's mask. */
#define MUTANT_ALL ((1u << MUTANT_NCLASSES) - 1)
/* In mutant_optimize's mask: the greedy step after the rule search (each
 * region's best graph through mutant_apply; an ablation) instead of the
 * joint search. */
#define MUTANT_GREEDY (1u << 30)
/* The joint search hands at most this many mutant rewrites of one graph to
 * the search (in generation order; stats.capped counts the graphs cut). */
#define MUTANT_JOINT_CAP 16

/* Mutants in the search (PET's joint search, docs/mutants.md). With
 * mask, mutant_search_attach sets so's move_fn so that, from every graph
 * a region search of the last pass expands, each mutant of the classes in
 * mask (mutant_generate on that graph, at most MUTANT_JOINT_CAP; never on
 * a conv a mutant made) is a candidate beside the rule rewrites: f's nodes
 * replaced by g + correction, priced with so's cost model (so->cost must be
 * set first) and queued under the search's own policy (alpha, budget,
 * backtracking), so a mutant may enable a later rule. The box analysis and
 * correction run once per distinct mutant (cached in m); a mutant is
 * offered only when its saving, if any, rests on measured costs of f and of
 * g + correction (unless MUTANT_ESTIMATES). The mutants on the path to
 * each region's result are the ones taken. With MUTANT_GREEDY: the greedy
 * step instead (region_fn: mutant_apply on each region's best graph of the
 * last pass). m must outlive the search; *ms is zeroed and collects the
 * counts and the mutants taken; free m with mutant_search_free after it.
 * Deterministic for a seed. */
typedef struct mutant_seen mutant_seen;
typedef struct mutant_known mutant_known;
typedef struct mutant_search {
  mutant_cost_fn cost; /* the search's cost model */
  void *cost_u;
  unsigned mask;
  uint64_t seed;
  mutant_apply_stats *total;
  mutant_seen *seen; /* distinct mutants met (joint search) */
  int nseen, capseen;
  mutant_known *known; /* box analyses by f and g up to names */
  int nknown, capknown;
  struct mutant_sites *sites; /* sites met: their mutant, not rebuilt */
} mutant_search;
void mutant_search_attach(srch_options *so, mutant_search *m, unsigned mask,
                          uint64_t seed, mutant_apply_stats *ms);
void mutant_search_free(mutant_search *m);

/* The whole optimizer with mutants (mutant_search_attach with mask, seed)
 * in srch_optimize(g, rules, o). mask 0: no mutants (srch_optimize
 * itself). *ms lists the mutants taken (free with
 * mutant_apply_stats_free); st is srch_optimize's and its cost_after
 * includes them. The mutants are verified by the box argument, not
 * proven: callers check the result end to end. NULL with d set on an
 * error. */
ir_graph *mutant_optimize(const ir_graph *g, const rewrite_rules *rules,
                          const srch_options *o, unsigned mask, uint64_t seed,
                          srch_stats *st, mutant_apply_stats *ms, base_diag *d);

#endif
