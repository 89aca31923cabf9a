/* mutant_int.h: internals of the mutant module shared by its files: the
 * modular evaluator of whole ir_graphs and the cut lines of every tensor.
 */
#ifndef SUPEROPT_MUTANT_INT_H
#define SUPEROPT_MUTANT_INT_H

#include "mutant.h"

/* Residues of every tensor of g (v[g->ntensors], malloc'd) under seed:
 * inputs and weights seeded by name (as fp_value_hashes does), so two
 * graphs over the same names read the same values; nodes through
 * fp_kernel, plus the layout operators and conv2d bias it lacks. */
base_status mutant_eval(const ir_graph *g, uint64_t seed, uint32_t ***v,
                        base_diag *d);
void mutant_vals_free(const ir_graph *g, uint32_t **v);

/* Whether g can be evaluated position by position (point.c): its nodes are
 * conv2d, matmul (no residual), ewadd (no act), pad (value 0), slice,
 * concat, split, reshape and transpose, and no conv2d or matmul reads
 * another's output through any path. */
int mutant_point_ok(const ir_graph *g);
/* A graph prepared for point evaluation under a seed (each leaf's stream). */
typedef struct mutant_pt {
  const ir_graph *g;
  uint64_t key;   /* the activations' key, as mutant_eval's */
  uint64_t *base; /* per tensor: its fp_random stream's base */
  /* per tensor read by a conv2d or matmul and computed (layout operators
   * over leaves): the residues found so far, plus 1 (0: not yet), in a
   * zeroed allocation whose pages the system maps on first write; NULL
   * until read, or when over MUTANT_PT_CACHE_BYTES in all */
  uint32_t **cache;
  size_t *cache_bytes;
} mutant_pt;
/* At most this many bytes (of address space) of mutant_pt caches a graph. */
#define MUTANT_PT_CACHE_BYTES ((size_t)1 << 30)
base_status mutant_pt_init(mutant_pt *c, const ir_graph *g, uint64_t seed,
                           base_diag *d);
void mutant_pt_free(mutant_pt *c);
/* The residue mutant_eval gives tensor t at position idx, computed on
 * demand (c's graph must pass mutant_point_ok). */
uint32_t mutant_point(const mutant_pt *c, int t, const int64_t *idx);

/* The cut lines of one tensor: along axis k, c[k][0..n[k]-1] sorted
 * distinct positions p in (0, dim[k]): positions p-1 and p may behave
 * differently. Between two cuts, moving one step along k is a translation
 * of everything the value reads (the box argument, docs/mutants.md). */
typedef struct mutant_cuts {
  int32_t n[IR_MAX_RANK];
  int64_t *c[IR_MAX_RANK]; /* malloc'd */
} mutant_cuts;

/* Cuts of every tensor of g (cuts[g->ntensors], calloc'd): none on inputs
 * and weights, then per operator. BASE_ERR_PARAM with d for an operator
 * without a cut rule. */
base_status mutant_cut_graph(const ir_graph *g, mutant_cuts **cuts,
                             base_diag *d);
void mutant_cuts_free(mutant_cuts *c, int n);
/* Adds position p to axis k of c (ignored unless 0 < p < dim). */
int mutant_cut_add(mutant_cuts *c, int k, int64_t p, int64_t dim);
/* Sorts and deduplicates every axis of c. */
void mutant_cut_norm(mutant_cuts *c);

/* Row-major multi-index of flat position j in s. */
void mutant_unravel(const ir_shape *s, int64_t j, int64_t *idx);

/* ---- generation (gen.c) ---- */

/* Asked before a site's mutant is built: 1 build it, 0 skip it, -1 out of
 * memory. nodes: the site's conv nodes in model (two for concat-w). */
typedef int (*mutant_site_fn)(void *u, mutant_class cls, const ir_graph *model,
                              const int32_t *nodes);
/* mutant_generate, asking want (NULL: build all) at each site, in the same
 * order. */
base_status mutant_generate_sites(const ir_graph *model, unsigned mask,
                                  mutant_site_fn want, void *u,
                                  mutant_list *out, base_diag *d);

/* ---- splicing (apply.c) ---- */

/* The site nodes of m in cur: the producers of f's output names
 * (sites[0..f->noutputs-1]); -1 when one is missing or not of the operator
 * that produces it in f (conv2d, matmul). */
int mutant_sites_in(const ir_graph *cur, const mutant *m, int32_t *sites);
/* g with nodes sites[0..nsites-1] (whose outputs are f's, by name)
 * replaced by h's nodes (h's intermediates named after f's first output,
 * "NAME.mutK"). The other nodes keep their names and order; h is emitted
 * as soon as its inputs exist. BASE_ERR_CYCLE when that never happens
 * before a consumer of a site needs it. */
base_status mutant_splice(const ir_graph *g, const int32_t *sites, int nsites,
                          const ir_graph *f, const ir_graph *h, ir_graph **out,
                          base_diag *d);

/* ---- building graphs (gen.c) ---- */

/* Model tensor t as a leaf of dst (same name; a weight stays a weight,
 * anything else becomes an input; known data copied): its index, or -1. */
int mutant_leaf(ir_graph *dst, const ir_graph *m, int t, base_diag *d);
/* Adds a node; returns its first output tensor, or -1 with d set. name
 * (may be NULL) names that output when the name is unused in g. */
int mutant_add(ir_graph *g, ir_opcode op, const int32_t *in, int nin,
               const ir_attrs *a, const char *name, base_diag *d);
/* slice(x) over [lo, hi) on every axis; output tensor or -1. */
int mutant_slice(ir_graph *g, int x, const int64_t *lo, const int64_t *hi,
                 base_diag *d);
/* concat(xs[0..n-1]) along axis; output tensor or -1. */
int mutant_concat(ir_graph *g, const int32_t *xs, int n, int axis,
                  const char *name, base_diag *d);

#endif
