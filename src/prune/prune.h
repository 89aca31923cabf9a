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
      common_super;   /* removed: same last operator, one argument differs */
  long long renaming; /* removed: an earlier pair up to renaming */
  long long out;      /* pairs kept */
} pr_stats;

/* Removes redundant pairs from rs in place (order of the rest kept). */
ir_status pr_prune(ir_ruleset *rs, pr_stats *st, ir_diag *d);

/* Whether op's inputs may be swapped (ewadd, ewmul). */
int pr_commutative(ir_opcode op);

/* Hash of g's outputs as terms over its input names, with the arguments of
 * commutative operators in a canonical order. Equal for src and dst exactly
 * when the pair is trivial. */
uint64_t pr_term_hash(const ir_graph *g);

/* Canonical key of a pair: equal for two pairs exactly when they are the
 * same up to renaming inputs (of equal shapes), permuting outputs jointly,
 * reordering commutative arguments and swapping src and dst. */
ir_status pr_pair_key(const ir_rule *r, uint64_t *key, ir_diag *d);

/* The individual tests, exposed for tests. */
int pr_is_trivial(const ir_rule *r);
int pr_has_common_sub(const ir_rule *r);
int pr_has_common_super(const ir_rule *r);

#endif
