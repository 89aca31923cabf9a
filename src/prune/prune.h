/* prune.h: drops redundant candidate rules (the prune stage of gen-rules).
 *
 * Input: candidate pairs from the fingerprint stage (an ir_ruleset whose two
 * graphs compute the same outputs). Output: the same set, in the same order,
 * without pairs that say nothing new:
 *
 *   trivial       src and dst are the same graph up to the order of the
 *                 arguments of commutative operators (ewadd, ewmul);
 *   common sub    both graphs apply an identical operator to the same graph
 *                 inputs: the pair follows from a smaller one in which that
 *                 operator's result is a fresh input (TASO's first pruning);
 *   common super  both graphs end in the same operator with the same
 *                 parameters and differ in one argument only: the pair follows
 *                 from the pair of those arguments (TASO's second pruning);
 *   common context  (pr_has_common_context, applied by gen-rules while
 *                 confirming, where value hashes are known) the two sides
 *                 are the same once values both compute are cut out;
 *   renaming      the pair is an earlier pair up to a renaming of its inputs,
 *                 a joint permutation of the outputs, commutative argument
 *                 order, or swapping src and dst. Decided by a canonical form:
 *                 igraph's canonical labelling (BLISS) of the coloured pair
 *                 graph (see pr_pair_key).
 */
#ifndef SUPEROPT_PRUNE_H
#define SUPEROPT_PRUNE_H

#include "../ir/ir.h"

typedef struct pr_stats {
  long long in;         /* pairs received */
  long long trivial;    /* removed: identical up to commutativity */
  long long common_sub; /* removed: identical operator on the same inputs */
  long long
      common_super; /* removed: same last operator, one argument differs */
  long long common_context; /* removed: same terms once values are cut */
  long long renaming;       /* removed: an earlier pair up to renaming */
  long long out;            /* pairs kept */
} pr_stats;

/* Why one pair is redundant on its own (no other pair needed). */
typedef enum pr_kind {
  PR_KEEP = 0,
  PR_TRIVIAL,
  PR_COMMON_SUB,
  PR_COMMON_SUPER,
  PR_COMMON_CONTEXT
} pr_kind;

/* Sets *kind to the first of the trivial, common-sub and common-super tests
 * r fails, or PR_KEEP; BASE_ERR_NOMEM (*kind PR_KEEP) when out of memory.
 * Thread-safe: gen-rules applies it while confirming candidates. */
base_status pr_redundant(const ir_rule *r, pr_kind *kind);

/* Common context (a generalisation of common super): vs and vd are value
 * hashes of every tensor of r's src and dst (fp_value_hashes; 0 unknown).
 * Every intermediate tensor whose value the other side also computes (not
 * an output's value) is cut into a leaf named by its value; the pair is
 * redundant when at least one node's result was cut and the two sides are
 * then the same terms (commutative arguments unordered): it follows from
 * the smaller pairs of the cut values and the smaller pair of the contexts.
 * Sets *yes; BASE_ERR_NOMEM when out of memory. Thread-safe. */
base_status pr_has_common_context(const ir_rule *r, const uint64_t *vs,
                                  const uint64_t *vd, int *yes);

/* Counts n pairs dropped for kind k in st (not in st->in). */
void pr_stats_add(pr_stats *st, pr_kind k, long long n);

/* Removes redundant pairs from rs in place (order of the rest kept). */
base_status pr_prune(ir_ruleset *rs, pr_stats *st, base_diag *d);

/* Whether op's inputs may be swapped (IR_OPF_COMM in ops.def). */
int pr_commutative(ir_opcode op);

/* Hash of g's outputs as terms over its input names, with the arguments of
 * commutative operators in a canonical order. Equal for src and dst exactly
 * when the pair is trivial. Sets *h; BASE_ERR_NOMEM when out of memory. */
base_status pr_term_hash(const ir_graph *g, uint64_t *h);
/* The same with commutative arguments in the order written. */
base_status pr_term_hash_ordered(const ir_graph *g, uint64_t *h);

/* Canonical key of a pair: equal for two pairs exactly when they are the
 * same up to renaming inputs (of equal shapes), permuting outputs jointly,
 * reordering commutative arguments and swapping src and dst. */
base_status pr_pair_key(const ir_rule *r, uint64_t *key, base_diag *d);

/* ---- derivation (derive.c) ---------------------------------------------
 *
 * Whether a rule follows from a library by rewriting: a bidirectional
 * breadth-first search applying the library's proven rules (either
 * direction, at every match) to both sides of the goal, alternating sides,
 * `depth` rewrites in all, through graphs of at most one operator more than
 * the larger side, at most max_states graphs per side. */
typedef struct pr_lib pr_lib;
pr_lib *pr_lib_new(const ir_ruleset *lib); /* lib must outlive it */
void pr_lib_free(pr_lib *l);
base_status pr_derivable(const pr_lib *l, const ir_rule *goal, int depth,
                         int max_states, int *found, base_diag *d);

/* The individual tests, exposed for tests: set *yes; BASE_ERR_NOMEM when
 * out of memory. */
base_status pr_is_trivial(const ir_rule *r, int *yes);
base_status pr_has_common_sub(const ir_rule *r, int *yes);
base_status pr_has_common_super(const ir_rule *r, int *yes);

#endif
