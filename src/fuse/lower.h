/* lower.h: the lower stage, the executor's folds made graph nodes.
 *
 * lower_graph rewrites an optimized (and fused) graph so that every fold
 * the CUDA executor makes is a node or a parameter of the graph, declared
 * in ops.def: the graph that `optimize` writes is the program that runs,
 * the CPU reference executor runs it (so the end-to-end check covers each
 * fold), costdb measures it and the search prices it. Like fusion it
 * preserves semantics by construction: each lowered node's reference
 * kernel computes what the nodes it replaces computed.
 *
 * The families, each in its own file, run in this order (each sees the
 * previous one's result):
 *   lower_patch.c a patch embedding (a convolution whose kernel is its
 *                 stride, reshaped and transposed to rows) as a move
 *                 node's patches and a matmul;
 *   lower_epi.c   convolution and matmul epilogues: residual input (a
 *                 matmul's also through ConvNeXt's transposes), relu
 *                 and clip (act=), a bias add into the matmul, a
 *                 convolution's bias into the layer norm or fused node
 *                 reading it, a relu after an element-wise node fused
 *                 with it;
 *   lower_move.c  data movement: an activation on a split's or concat's
 *                 parts, a pad absorbing the slice that reads it;
 *   lower_se.c    squeeze-and-excitation chains and channel shuffles as
 *                 fused kinds;
 *   lower_att.c   attention reading q, k and v in the rows its
 *                 projections write and writing the rows the next matmul
 *                 reads (heads=), the moves between them gone;
 *                 and a node already in that layout (the rules make it)
 *                 reading a split's parts reads the split's input in place
 *                 (lower_rows);
 *   lower_seq.c   the transpose to the sequence-first layout before a
 *                 projection only a seq-first attention reads, gone
 *                 (the attention reads the projection batch-first);
 *   lower_chain.c groups of movement operators re-indexing one tensor
 *                 (slices, pads, transposes, reshapes, rolls) as one move
 *                 node.
 */
#ifndef SUPEROPT_LOWER_H
#define SUPEROPT_LOWER_H

#include "../ir/ir.h"

typedef struct lower_stats {
  int epilogues; /* residual adds, relus, clips and biases folded into a
                    conv or matmul; conv biases moved into a layer norm or
                    a fused node; relus fused with an element-wise node */
  int moves;     /* activations on split/concat parts, pad+slice pairs,
                    transposes before seq-first attention dropped */
  int se;        /* squeeze-and-excitation chains */
  int shuffles;  /* channel shuffles */
  int attention; /* attention nodes in the row layout (heads=) */
  int shortcuts; /* projection shortcuts moved ahead of the chain they join
                   (an epilogue too: the add folded into the chain) */
  int chains;    /* move nodes made from groups of movement operators */
  int chain_ops; /* the operators they replace */
  int patches;   /* patch embeddings as matmuls */
} lower_stats;

/* A new graph with every family lowered (same inputs, weights and outputs;
 * names kept for every tensor that remains), or NULL with d set (out of
 * memory). st may be NULL. */
ir_graph *lower_graph(const ir_graph *g, lower_stats *st, base_diag *d);

#endif
