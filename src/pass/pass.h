/* pass.h: the optimizer's built-in passes: common subexpressions, batchnorm
 * and scale folding, activation fusion, sibling merging, nested splits,
 * movement simplification and dead code removal.
 * Each takes a const graph and returns a new one (NULL with d set on failure);
 * *count gets the number of changes made. docs/search.md describes them.
 */
#ifndef SUPEROPT_PASS_H
#define SUPEROPT_PASS_H

#include "../costdb/costdb.h"
#include "../ir/ir.h"
#include "../rewrite/rewrite.h"

/* conv2d (act none, output read only by one batchnorm) + batchnorm -> one
 * conv2d whose weights and bias are computed by weight-only nodes from the
 * conv's and the batchnorm's parameters. */
ir_graph *pass_fold_batchnorm(const ir_graph *g, int *count, base_diag *d);
/* A per-channel constant scale of a matmul's columns (through an optional
 * bias add and a transpose perm=[0,3,1,2]; ConvNeXt's layer scale) folded
 * into the matmul's weight and bias by weight-only nodes; the multiply
 * goes. */
ir_graph *pass_fold_scale(const ir_graph *g, int *count, base_diag *d);
/* conv2d/matmul (act none) whose output is read only by a relu, sigmoid,
 * tanh or gelu -> the conv/matmul with that act. */
ir_graph *pass_fuse_activations(const ir_graph *g, int *count, base_diag *d);
/* The same, leaving alone every node whose skip[] entry is set (NULL:
 * none). */
ir_graph *pass_fuse_activations_except(const ir_graph *g, const uint8_t *skip,
                                       int *count, base_diag *d);
/* Passes as rules (docs/search.md): sets cover[i] (g->nnodes entries) for
 * every node i that some forward pattern of rules matches, 0 elsewhere;
 * the hand-written passes then leave those sites to the search. */
base_status pass_rule_cover(const ir_graph *g, const rewrite_rules *rules,
                            uint8_t *cover, base_diag *d);
/* Sibling merging: conv2d (groups 1) or matmul (rank-2 weight) nodes that
 * read the same input with equal parameters, weights of equal shape but
 * for the output channels, and weights and biases computed from weights
 * only -> one node on weights (and biases) concatenated by weight-only
 * nodes, and a split whose outputs keep the siblings' names. A group (up
 * to 16 nodes) is merged only when f (user pointer u) costs the result
 * lower. */
ir_graph *pass_merge_siblings(const ir_graph *g, cd_cost_fn f, void *u,
                              int *count, base_diag *d);
/* The same, leaving alone every group with a node whose skip[] entry is
 * set (NULL: none). */
ir_graph *pass_merge_siblings_except(const ir_graph *g, const uint8_t *skip,
                                     cd_cost_fn f, void *u, int *count,
                                     base_diag *d);
/* Common subexpressions: a node with the operator, parameters and inputs
 * of an earlier one (NASNet-A's branches each apply relu to one input) is
 * dropped and its readers read the earlier node's outputs. Nodes computing
 * graph outputs are kept. Unused weights stay (pass_prune_dead). */
ir_graph *pass_cse(const ir_graph *g, int *count, base_diag *d);
/* Small weights (at most 16 elements) with known values, of one type and
 * shape and bitwise equal values, made the first of them (dedupe.c), so
 * that pass_cse merges what reads them (each BERT layer's mask from its
 * own constants); *count weights dropped. */
ir_graph *pass_dedupe_weights(const ir_graph *g, int *count, base_diag *d);
/* Nested splits: a split that alone reads one output of another split
 * along the same axis (no graph output) is folded into it: one split whose
 * sizes list the inner split's parts in place of that output, its outputs
 * keeping their names (each is the same slice of the outer input; the
 * executor copies the bytes once, not twice). One level a call: *count
 * splits folded. */
ir_graph *pass_merge_splits(const ir_graph *g, int *count, base_diag *d);
/* A merged projection's biases (splitbias.c): matmul (no bias, act none)
 * read by a split along the last axis alone, each of whose parts is read
 * by one ewadd with a vector bias alone (a weight, or weight-only and
 * before the matmul) -> the matmul with the biases concatenated as its
 * bias, the split's outputs named as the adds'. *count splits. */
ir_graph *pass_split_bias(const ir_graph *g, int *count, base_diag *d);
/* Movement operators that move nothing (a transpose by the identity
 * permutation, a reshape to the same shape, a slice of the whole input, a
 * pad of zeros, a concat of one input) dropped, their readers reading their
 * input; a transpose read only by a transpose folded into it (one transpose by
 * the composed permutation, dropped when that is the identity); a transpose
 * that only permutes the rows of a matmul (through reshapes to [M,N] and back)
 * sunk into the transpose producing the matmul's input (moves.c). Graph outputs
 * keep their nodes. *count operators removed; same values (bit for bit
 * but for a sunk matmul, whose rows the GEMM may block differently). */
ir_graph *pass_simplify_moves(const ir_graph *g, int *count, base_diag *d);
/* Nodes whose output is their input (the identity moves above, and a
 * conv2d with a centred const_iconv kernel and nothing else) dropped, their
 * readers reading the input; graph outputs kept. Run after the search,
 * which can leave an identity conv (moves.c). */
ir_graph *pass_drop_identities(const ir_graph *g, int *count, base_diag *d);
/* RMSNorm as primitives (rmsnorm.c: ewmul(x, x), reduce_mean over the last
 * axis, + eps, sqrt, 1 / that, * x, then * a weight vector if any) -> one
 * layernorm(x[, w]) rms=1 named as the last node. *count RMSNorms formed. */
ir_graph *pass_form_rmsnorm(const ir_graph *g, int *count, base_diag *d);
/* Rotary embedding's rotate_half (rotary.c: concat(neg(upper half), lower
 * half) along the last axis of transpose(reshape(matmul(h, W))), the
 * reshape splitting the matmul's columns into heads) -> the same transpose
 * and reshape of matmul(h, W'), W' W's columns rotated the same way in
 * each head by weight-only nodes (then merged with the other projections).
 * Where the rotary sum q * cos + rotate_half(q) * sin reads it alone, the
 * sum is taken before the transpose. *count concats replaced. */
ir_graph *pass_fold_rotate_half(const ir_graph *g, int *count, base_diag *d);
/* Removes nodes whose outputs are never used and unused weights. */
ir_graph *pass_prune_dead(const ir_graph *g, int *count, base_diag *d);

#endif
