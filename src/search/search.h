/* search.h: the TASO-style cost-based backtracking search that turns proven
 * rules into faster graphs, and srch_optimize, the whole optimizer (the
 * built-in passes of src/pass, then the search region by region).
 *
 * IR in, IR out: every function takes const graphs and returns fresh ones.
 * Rules are compiled for matching by src/rewrite (rewrite_rules_compile);
 * costs come from a cd_cost_fn (src/costdb). docs/search.md explains the
 * algorithms and the options.
 */
#ifndef SUPEROPT_SEARCH_H
#define SUPEROPT_SEARCH_H

#include <stdint.h>

#include "../costdb/costdb.h"
#include "../ir/ir.h"
#include "../rewrite/rewrite.h"

/* ---- search ----------------------------------------------------------------
 */

/* One rewrite on a candidate's way from a region search's start: the
 * rule (its index in the rule set the search was compiled from) and the
 * direction it was used in. */
typedef struct srch_step {
  int rule;
  int backward;
} srch_step;

/* Hands the search one graph made by a rewrite of its own (srch_options
 * .move_fn), which it takes: tag >= 0 names the rewrite to the caller. */
typedef base_status (*srch_emit_fn)(void *emit_u, ir_graph *g, int tag,
                                    base_diag *d);

typedef struct srch_options {
  double alpha;      /* expand graphs with cost < alpha * best (1.05) */
  int budget;        /* most expansions per region (1000) */
  int patience;      /* stop a region after this many expansions without a
                        cheaper graph (100); 0: never */
  int max_depth;     /* most rewrites from the input; < 0: unlimited */
  double time_limit; /* seconds for the whole search; <= 0: none */
  int directions;    /* REWRITE_FORWARD | REWRITE_BACKWARD (both) */
  int region_nodes;  /* regions of at most this many operators (56) */
  int queue_cap;     /* most queued graphs per region (4096) */
  int passes;        /* 1 + extra passes with shifted regions (2) */
  int merge;         /* run pass_merge_siblings before the search (1) */
  /* 1: no pass before or after the search (no batchnorm or scale folding,
   * no hand fusion or merging, no pass rules, no nested splits folded):
   * the rules alone (`--passes none`, what the generated rules reach by
   * themselves). Common subexpressions are still merged before the search
   * (pass_cse): the canonical form of the IR, as the generator's pruning
   * rejects a graph computing a node twice (docs/generation.md), not a
   * pass a person chose; dead code is removed after the search whatever
   * this says. (0) */
  int no_passes;
  /* 1: under no_passes, when a region's search ends, a second descent
   * from the region's start, the graphs running fewer operators first
   * (search.c, restart(); docs/search.md "The second descent"); 0: none.
   * The passes fold what the descent is for first, so it runs under
   * no_passes only. (1) */
  int descent;
  /* 1: under no_passes, the first region pass cuts in an order that
   * pulls far siblings together: a node reading what an earlier node reads,
   * more than half a region after it, placed behind it with its chain of
   * sole readers (two convolutions of one tensor 50 operators apart and
   * their norms: NASNet-A's projections), so that one region holds them
   * (regions.c; docs/search.md "Far siblings in one region"); 0: g's
   * order. The passes fold the norms and merge siblings on the whole graph
   * first, so it works under no_passes only. (1) */
  int far_siblings;
  /* 1: under no_passes, the region passes before the last rewrite no
   * join at a region's edge: no node reading a region input that another
   * region computes together with another tensor computed from the data
   * (fixed_inputs below; an add of two branches cut apart), so that the
   * next pass, seeing both branches, may merge them instead of one region
   * folding the add into its own branch (regions.c; docs/search.md "Joins
   * at a region's edge wait"); 0: every pass rewrites them. The passes
   * fold and merge what this is for first, so it works under no_passes
   * only. (1) */
  int boundary_joins;
  /* 1: under no_passes, one region pass more, the last, with regions a
   * sixth larger (65 at 56) cut from the graph's start: a rewrite that
   * the first pass's cuts and the second's (shifted half a region) both
   * part gets a region holding it (NASNet-A's cell 5 `left + right`
   * projections; regions.c; docs/search.md "A wider last pass"); 0: the
   * passes alone. (1) */
  int wide_pass;
  /* The inputs of the graph, by name, whose joins the search rewrites not
   * (set by the region passes under boundary_joins: a region's inputs that
   * other regions compute). (NULL, 0) */
  const char *const *fixed_inputs;
  int nfixed_inputs;
  /* Fusion as the search's decision: each region search keeps its fuse_k
   * cheapest distinct graphs (the start and every graph built) and returns
   * the one cheapest once fused (fuse_graph under this cost function; ties:
   * the cheaper unfused, then the earlier). Set it to 0 or 1 when the result
   * will not be fused (then the cheapest unfused graph is returned). (8) */
  int fuse_k;
  /* Passes as rules (NULL: the hand-written passes). The compiled pass
   * rules (rules/passes.rules), which must also be among the search's
   * rules: activation fusion and sibling merging are then the search's,
   * priced like every rewrite; the hand-written passes run before the
   * search only, on the sites no forward pattern of these rules matches
   * (forms the rules cannot express), and nothing runs after it but dead
   * code removal. They are searched first on the whole graph, forward
   * only, then with the others region by region. Their rule set must be
   * the first rules of the search's (the statistics share the indices);
   * compile them with REWRITE_FORWARD. */
  const rewrite_rules *pass_rules;
  cd_cost_fn cost; /* node cost (cd_model_cost) */
  void *cost_u;    /* its user pointer (NULL: plain h100 estimate) */
  /* A second pricing of the fused candidates (called with cost_u; NULL:
   * none): a graph cheaper once fused replaces the cheapest unfused one
   * only when it is not dearer under this one either (cd_model_cost_bound:
   * fused nodes without a measurement at least at their roofline price),
   * so the pick does not rest on the fit alone where the fit is known to
   * flatter. (NULL; `optimize` sets cd_model_cost_bound) */
  cd_cost_fn fuse_bound;
  /* Called, when set, on every region's best graph of the last search pass
   * (how src/mutant's mutants join the search, region by region, under the
   * same cost model): sets *out to a replacement over the same inputs and
   * outputs (names and shapes), or leaves it NULL to keep best. */
  base_status (*region_fn)(void *u, const ir_graph *best, ir_graph **out,
                           base_diag *d);
  void *region_u;
  /* Rewrites beside the rules, as candidates of the same queue (how
   * src/mutant's mutants join the search: PET's joint search). Called,
   * when set, on every graph the search expands (regions of the last
   * search pass only; not in the pass rules' whole-graph search), after its
   * rule rewrites, with the graph's cost and limit = alpha x best - cost
   * (what a rewrite may add and still be queued): it hands each new graph
   * (same inputs and outputs, names and shapes) to emit, which costs,
   * deduplicates and queues it like a rule rewrite's. Then move_taken, when
   * set, is called once per move on the path from the start to the graph
   * the search returns (tags in order). Such steps are not rules: they
   * count in no rule's statistics (cand_fn sees them as rule -1, backward
   * = tag). */
  base_status (*move_fn)(void *u, const ir_graph *g, double cost, double limit,
                         srch_emit_fn emit, void *emit_u, base_diag *d);
  base_status (*move_taken)(void *u, int tag, base_diag *d);
  void *move_u;
  /* Called, when set, on every distinct graph a search costs (`experiment
   * candidates`): its start (nsteps 0), then each new graph (a structural
   * hash not seen in that search) a rewrite makes, with its cost and the
   * rewrites that made it from the start, in order. With it set every new
   * graph is built, not only those that could be queued or become the best
   * (the others are handed to it and dropped): the search's decisions are
   * the same, only slower. g is the search's
   * (valid during the call only); an error stops the search with it. */
  base_status (*cand_fn)(void *u, const ir_graph *g, double cost,
                         const srch_step *steps, int nsteps, base_diag *d);
  void *cand_u;
  /* Called, when set, before each region search: pass (0-based) of
   * npasses, region (0-based) of nregions in that pass. */
  void (*progress)(void *u, int pass, int npasses, int region, int nregions);
  void *progress_u;
  /* Called, when set, as srch_optimize's graph changes (`experiment
   * search`'s trajectory): whole = 1 after each stage (passes, region
   * passes, splits, dead code) with the whole graph in after (before
   * NULL); whole = 0 after each region's search with the region as it was
   * (before) and its best (after). Valid during the call only. */
  void (*trace)(void *u, const ir_graph *before, const ir_graph *after,
                int whole);
  void *trace_u;
} srch_options;

void srch_options_default(srch_options *o);

typedef struct srch_stats {
  int expanded, generated, duplicates, rejected, queue_peak, regions;
  int cse, bn_folded, acts_fused, merged, stopped_by_time;
  int scales_folded;       /* pass_fold_scale */
  int splits_merged;       /* pass_merge_splits (all rounds) */
  int moves_removed;       /* pass_simplify_moves */
  int identities;          /* pass_drop_identities after the search */
  int rmsnorms;            /* pass_form_rmsnorm */
  int rotates_folded;      /* pass_fold_rotate_half */
  int stopped_by_patience; /* regions stopped for want of progress */
  int fuse_chosen;         /* searches whose result is not their cheapest graph
                              but one cheaper once fused (fuse_k) */
  int removal_looks;       /* regions whose patience ran out with graphs of
                              fewer operators queued, searched on */
  int fuse_bounded;        /* graphs cheaper once fused not taken: dearer
                              under srch_options.fuse_bound */
  int descents;            /* second descents from a region's start */
  double seconds, cost_before, cost_after;
  int estimated;    /* some cost was estimated */
  int nrules;       /* = ruleset size */
  int *applied_fw;  /* applied_fw[i]: forward uses of rule i in the result */
  int *applied_bw;  /* backward uses (both malloc'd, nrules entries) */
  double *delta_fw; /* delta_fw[i]: the estimated cost (us) those uses */
  double *delta_bw; /* changed, summed (negative: they saved) */
} srch_stats;

/* Allocates st's per-rule arrays for nrules rules (zeroed). */
base_status srch_stats_alloc(srch_stats *st, int nrules, base_diag *d);
void srch_stats_free(srch_stats *s);

/* Searches g (one region, no passes) for its cheapest equivalent. Returns a
 * new graph (g itself cloned when nothing is better); st accumulates. */
ir_graph *srch_search(const ir_graph *g, const rewrite_rules *rules,
                      const srch_options *o, srch_stats *st, base_diag *d);

/* The whole optimizer: common subexpressions, batchnorm folding,
 * activation fusion, sibling merging (o->merge), the search region by region
 * (stitched back), activation fusion again, dead code removal. With
 * o->pass_rules: fusion and merging before the search only where no pass
 * rule matches, and no activation fusion after it. st is reset and
 * filled. Returns a new self-contained graph. */
ir_graph *srch_optimize(const ir_graph *g, const rewrite_rules *rules,
                        const srch_options *o, srch_stats *st, base_diag *d);

/* srch_optimize's steps, for a caller that runs them one by one (the
 * optimize pipeline, src/opt): srch_begin resets st and sums g's cost
 * (cost_before); srch_run_passes runs the passes before the search (common
 * subexpressions, batchnorm and scale folding, the hand-written passes,
 * the pass rules' whole-graph search); srch_run_regions the search region
 * by region (o->passes passes, o->region_fn on the last); srch_run_splits
 * activation fusion after the search (hand-written passes only) and nested
 * splits folded; srch_end sums the final graph's cost (cost_after). Each
 * srch_run_* returns a new self-contained graph (g is unchanged), or NULL
 * with d set. srch_optimize is these, then pass_prune_dead, then srch_end. */
base_status srch_begin(const ir_graph *g, const rewrite_rules *rules,
                       const srch_options *o, srch_stats *st, base_diag *d);
ir_graph *srch_run_passes(const ir_graph *g, const srch_options *o,
                          srch_stats *st, base_diag *d);
ir_graph *srch_run_regions(const ir_graph *g, const rewrite_rules *rules,
                           const srch_options *o, srch_stats *st, base_diag *d);
ir_graph *srch_run_splits(const ir_graph *g, const srch_options *o,
                          srch_stats *st, base_diag *d);
base_status srch_end(const ir_graph *h, const srch_options *o, srch_stats *st,
                     base_diag *d);

/* ---- regions ---------------------------------------------------------------
 */

/* A graph cut into regions as the search's first pass cuts it (at most
 * region_nodes compute operators each, consecutive in topological order;
 * weight-only nodes outside them), for a caller that searches one region
 * at a time and puts a graph of its own in a region's place (`experiment
 * candidates`). g must outlive it. */
typedef struct srch_regions srch_regions;

srch_regions *srch_regions_cut(const ir_graph *g, int region_nodes,
                               base_diag *d);
/* Regions in topological order, dead ones (nothing read after them)
 * included. */
int srch_regions_count(const srch_regions *r);
/* Region k as a graph of its own (tensors read from outside are its inputs
 * or weights, tensors read after it its outputs), as the search gets it;
 * NULL for a dead region. */
const ir_graph *srch_regions_graph(const srch_regions *r, int k);
/* A new self-contained graph: g with region k's nodes replaced by sub, a
 * graph over the same inputs and outputs (names and shapes) as
 * srch_regions_graph(r, k); NULL with d set (out of memory, a lost input). */
ir_graph *srch_regions_replace(srch_regions *r, int k, const ir_graph *sub,
                               base_diag *d);
void srch_regions_free(srch_regions *r);

#endif
