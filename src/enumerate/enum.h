/* enum.h: enumeration of every small operator graph over the generation
 * operator set and a fixed pool of input tensors (stage 1 of gen-rules).
 *
 * A graph is kept in a compact form (en_graph, 26 bytes): up to EN_MAX_OPS
 * nodes, each a generation operator (en_gop: an IR operator with its
 * parameters fixed, e.g. "conv2d act=relu") and up to two argument values.
 * A value is a pool input (id < EN_VNODE(0, 0)) or output `slot` of an
 * earlier node i (EN_VNODE(i, slot)). The graph's outputs are the node
 * outputs no later node reads, in node order; a zero-operator graph is one
 * input (`root`).
 *
 * Canonical form (docs/generation.md): nodes are placed in the smallest
 * topological order under a renaming-invariant key, no node repeats an
 * earlier one (common subexpressions), the arguments of commutative
 * operators (ewadd, ewmul) are in id order, and the copies of each input
 * class are used in first-use order (q1 before q2 before q3). Graphs are
 * connected (nodes linked by an edge or a shared input) and have at most
 * max_outputs outputs. en_enumerate visits
 * every canonical graph once, depth first, so a visitor can evaluate the
 * graphs incrementally; it runs first-level branches on several threads and
 * the visitor keeps one state per branch, so results can be merged in branch
 * order, independent of the thread count.
 */
#ifndef SUPEROPT_ENUM_H
#define SUPEROPT_ENUM_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"

#define EN_MAX_OPS 6   /* most operators of an enumerated graph */
#define EN_NCLASSES 11 /* input shape classes of the pool */
#define EN_NBASE_CLASSES                                                       \
  8                       /* of them, the default set's (the others are the    \
                             extended set's: --opset extended) */
#define EN_MAX_COPIES 3   /* most copies of one class */
#define EN_MAX_NUMEL 4096 /* larger intermediate tensors are not generated */
#define EN_NINPUT_IDS 31  /* input ids: class * EN_MAX_COPIES + copy */
#define EN_MAX_NIN 4      /* most arguments of a generation operator */
#define EN_NSLOTS 3       /* most outputs of one node (split3) */
#define EN_VNODE(i, slot) ((uint8_t)(32 + EN_NSLOTS * (i) + (slot)))
#define EN_IS_INPUT(v) ((v) < 32)
#define EN_NODE_OF(v) (((v)-32) / EN_NSLOTS)
#define EN_SLOT_OF(v) (((v)-32) % EN_NSLOTS)
#define EN_MAX_OUTPUTS (EN_NSLOTS * EN_MAX_OPS)
#define EN_DEFAULT_OUTPUTS                                                     \
  2 /* most outputs of a generated graph by default                            \
     */

/* Generation operators, in key order (the canonical order compares these
 * first). Constants take their shape from an input class (en_node.p). */
typedef enum en_gop {
  EN_MATMUL,    /* matmul, 2-D, act=none */
  EN_CONV,      /* conv2d stride 1, pad same, groups = C / w.dim[1] */
  EN_CONV_RELU, /* the same with act=relu */
  EN_EWADD,     /* equal shapes (no broadcasting) */
  EN_EWMUL,
  EN_SMUL, /* a times a scalar [] */
  EN_RELU,
  EN_CONCAT0, /* two inputs, axis 0 */
  EN_CONCAT1, /* axis 1 */
  EN_SPLIT0,  /* two parts along axis 0: sizes [p, n-p] */
  EN_SPLIT1,
  EN_TRANSPOSE, /* 2-D, perm [1,0] */
  EN_AVGPOOL,   /* 3x3, stride 1, same, count_include_pad=1 */
  EN_MAXPOOL,   /* 3x3, stride 1, same */
  EN_ENLARGE,   /* to 3x3 (not from 3x3) */
  EN_ICONV,     /* const_iconv of a kernel class's shape */
  EN_IMM,       /* const_imm [4,4] */
  EN_ONES,      /* const_ones of any class's shape */
  EN_CPOOL,     /* const_pool [4,1,3,3] */
  /* The extended set (en_config.extended, gen-rules --opset extended): */
  EN_CONVB,      /* conv2d(x, w, b) as EN_CONV, with a bias b [O] */
  EN_CONVB_RELU, /* the same with act=relu */
  /* batchnorm and its folding into a convolution: the argument n is a
   * pool input of class n, a batchnorm's parameters (scale, bias, mean,
   * var: four weights [4] in the ir_graph, en_graph_build) */
  EN_BN,       /* batchnorm(x, n), eps 1e-5, x [N,4,H,W] */
  EN_BNFOLD_W, /* (w, n): w [4,..] times f = scale / sqrt(var + eps) per
                  output channel; IR: ewsub, transpose, batchnorm, transpose */
  EN_BNFOLD_B, /* (n): bias - mean * f; IR: ewsub, reshape, batchnorm,
                  reshape */
  EN_BNFOLD_C, /* (c, n): c [4] a convolution's bias: (c - mean) * f + bias;
                  IR: reshape, batchnorm, reshape */
  /* conv2d pad=valid (a 5x5 image gives 3x3), which a rule's convolution
   * must have to match a graph convolution without padding and a kernel
   * above 1x1 (Inception's): as EN_CONV, EN_CONV_RELU, EN_CONVB */
  EN_CONVV,
  EN_CONVV_RELU,
  EN_CONVBV,
  /* matmul with a bias [N] (the third argument), of a 2-D or a rank-3
   * left side (BERT's projections, [B,S,K] x [K,N]: a rule's tensor binds
   * tensors of its own rank only; the verifier's matmulb, which has laws
   * for rank-3 matmuls with a bias only), act none / relu, and the split
   * of axis 2 that takes a rank-3 sibling merge's output apart */
  EN_MATMULB,
  EN_MATMULB_RELU,
  EN_SPLIT2, /* two parts along axis 2 */
  /* conv2d stride 2 with explicit pads [1,1,1,1] of a 3x3 kernel (a 5x5
   * image gives 3x3), as ONNX graphs have their downsampling convolutions
   * (ResNet's 3x3 stride 2); a rule's explicit pads match a graph
   * convolution of equal pads, other explicit pads through a rule
   * instance (docs/search.md): as EN_CONV, EN_CONV_RELU, EN_CONVB */
  EN_CONVP,
  EN_CONVP_RELU,
  EN_CONVBP,
  /* three parts along axis en_split3_axis(p), sizes [s0, s1, n-s0-s1]
   * (en_split3_p); enumerated only where graphs may have three outputs
   * (en_config.max_outputs >= 3): what folds two nested two-part splits,
   * the form two sibling merges of three siblings make, into one */
  EN_SPLIT3,
  /* The second tier (en_config.extended 2, gen-rules --opset extended2):
   * matmul of a rank-3 left side without a bias (the ONNX transformers'
   * projections: MatMul, then the bias by an Add), and the activations
   * sigmoid, tanh and gelu, alone and fused into conv2d (with and without
   * a bias) and into a biased matmul (2-D or rank 3), as EN_CONV_RELU,
   * EN_CONVB_RELU and EN_MATMULB_RELU are for relu */
  EN_MATMUL3,
  EN_SIGMOID,
  EN_TANH,
  EN_GELU,
  EN_CONV_SIGMOID,
  EN_CONV_TANH,
  EN_CONV_GELU,
  EN_CONVB_SIGMOID,
  EN_CONVB_TANH,
  EN_CONVB_GELU,
  EN_MATMULB_SIGMOID,
  EN_MATMULB_TANH,
  EN_MATMULB_GELU,
  /* The third tier (en_config.extended 3, gen-rules --opset extended3):
   * the residual epilogue, conv2d(x, w, b, r) and matmul(a, w, b, r) (2-D
   * or rank 3), r added after the bias and before act (none or relu), as
   * the lower stage folds a residual ewadd into its product. Four
   * arguments: the bias is a pool input of class b (its copy in en_node.p's
   * top two bits), r in p's low six (en_arg) */
  EN_CONVBR,
  EN_CONVBR_RELU,
  EN_MATMULBR,
  EN_MATMULBR_RELU,
  /* and the clip epilogue (MobileNet's relu6: clip min=0 max=6): the clip
   * alone and fused into conv2d (act=clip), with and without a bias */
  EN_CLIP6,
  EN_CONV_CLIP6,
  EN_CONVB_CLIP6,
  /* The fourth tier (en_config.extended 4, gen-rules --opset extended4):
   * the fused attention node as a generation operator (TASO: fused
   * operators are IR operators), so that the enumeration states its
   * definition, softmax(s * q k) v, and the verifier proves it (encoded by
   * that composition, docs/verify.md): softmax over the last axis, and
   * attention(q, k, v) and attention(q, k, v, s) of 2-D q [S,D], k [D,T],
   * v [T,E] (guard=0, heads=0, no bias). attention+scale's fourth argument
   * is always the pool's scalar s1 (the class has one copy): en_arg
   * returns it, en_node holds the first three as a ternary gop does */
  EN_SOFTMAX,
  EN_ATT,
  EN_ATT_S,
  /* The fifth tier (en_config.extended 5, gen-rules --opset extended5):
   * the bias added by its own node, ewadd(x, b) of a value x [.., 4]
   * (rank >= 2) and a vector b [4] broadcast along x's last axis (the ONNX
   * projections: MatMul, then Add of the bias; the verifier's bcadd), so
   * that the enumeration states its fusion into the product, ewadd(
   * matmul(x, w), b) == matmul(x, w, b); and the residual epilogue of a
   * product without a bias, matmul(a, w, z, r) with z = ewsub(ones, ones)
   * [N] (the zero bias the lower stage gives it: the IR's r comes after a
   * bias), a 2-D or rank-3 a, r of the product's shape; three arguments
   * (a, w, r: r in en_node.p), three IR nodes (en_graph_build) */
  EN_EWADD_B,
  EN_MATMUL_ZR,
  /* and relu fused into a bias-free rank-3 matmul (T5's feed-forward:
   * relu(matmul(x, wi)) with no bias), enumerated only with relu */
  EN_MATMUL3_RELU,
  /* The seventh tier (en_config.extended 6, gen-rules --opset extended6;
   * the sixth tier added no operator): the transpose of a rank-3 value's
   * two leading axes, perm [1,0,2] (torch's MultiheadAttention is
   * sequence-first: ViT-B/16 transposes [B,S,E] to [S,B,E] before the
   * in-projection and back after the out-projection), so that the
   * enumeration states how it meets matmul (a row-wise product keeps it),
   * the element-wise operators and itself; enumerated where --ops selects
   * transpose */
  EN_TRANSPOSE3,
  EN_NGOPS
} en_gop;
_Static_assert(EN_NGOPS <= 64, "a gop set is a 64-bit mask (enum.c)");
#define EN_NBASE_GOPS EN_CONVB      /* the default set: gops before this */
#define EN_NEXT_GOPS EN_MATMUL3     /* the extended set: gops before this */
#define EN_TIER2_GOPS EN_CONVBR     /* and its second tier: gops before this */
#define EN_TIER3_GOPS EN_SOFTMAX    /* and its third tier: gops before this */
#define EN_TIER4_GOPS EN_EWADD_B    /* and its fourth tier: gops before this */
#define EN_TIER5_GOPS EN_TRANSPOSE3 /* and its fifth: gops before this */
#define EN_CLASS_B 8                /* the pool class of biases [4] */
#define EN_SCALAR_ID 21 /* the input id of s1, the pool's scalar (class 7) */

/* Whether gop is the third tier's residual epilogue (four arguments). */
static inline int en_gop_res(int gop) {
  return gop >= EN_CONVBR && gop <= EN_MATMULBR_RELU;
}

typedef struct en_node {
  uint8_t gop;  /* en_gop */
  uint8_t a[2]; /* argument values (0 where unused) */
  uint8_t p;    /* split: first part's size (split3: en_split3_p);
                   constants: class of the shape;
                   an operator of three arguments (en_gop_nin 3): the third
                   argument's value; of four (en_gop_res): the bias's copy
                   + 1 << 6 | the fourth argument's value */
} en_node;

/* Argument j (0..en_gop_nin - 1) of n: a[0], a[1], then p (a residual
 * gop's bias and r from p; attention+scale's s the scalar s1). */
static inline uint8_t en_arg(const en_node *n, int j) {
  if (j < 2)
    return n->a[j];
  if (n->gop == EN_ATT_S)
    return j == 2 ? n->p : EN_SCALAR_ID;
  if (!en_gop_res(n->gop))
    return n->p;
  return j == 2 ? (uint8_t)(EN_CLASS_B * EN_MAX_COPIES + (n->p >> 6) - 1)
                : n->p & 63;
}
/* split3's parameter: axis (0..2) and the first two parts' sizes (1..7). */
static inline uint8_t en_split3_p(int axis, int s0, int s1) {
  return (uint8_t)(axis << 6 | s0 << 3 | s1);
}
static inline int en_split3_axis(uint8_t p) { return p >> 6; }
static inline int en_split3_size(uint8_t p, int k) {
  return k ? p & 7 : p >> 3 & 7;
}
/* (A residual gop's argument 2 must be a class b input; attention+scale's
 * argument 3 is s1 whatever v is.) */
static inline void en_arg_set(en_node *n, int j, uint8_t v) {
  if (j < 2)
    n->a[j] = v;
  else if (n->gop == EN_ATT_S && j == 3)
    return;
  else if (!en_gop_res(n->gop))
    n->p = v;
  else if (j == 2)
    n->p = (uint8_t)((n->p & 63) | (v - EN_CLASS_B * EN_MAX_COPIES + 1) << 6);
  else
    n->p = (uint8_t)((n->p & 0xc0) | v);
}

typedef struct en_graph {
  uint8_t nops; /* 0..EN_MAX_OPS */
  uint8_t root; /* the input of a zero-operator graph; 0 otherwise */
  en_node n[EN_MAX_OPS];
} en_graph;

/* ---- the input pool ------------------------------------------------------ */

typedef struct en_class {
  const char *prefix; /* input names are prefix + copy number: q1, q2 */
  ir_shape shape;
  int copies; /* 1..EN_MAX_COPIES */
} en_class;

const en_class *en_class_of(int c); /* c in 0..EN_NCLASSES-1 */
static inline int en_input_class(int v) { return v / EN_MAX_COPIES; }
static inline int en_input_copy(int v) { return v % EN_MAX_COPIES; }
static inline int en_input_id(int c, int copy) {
  return c * EN_MAX_COPIES + copy;
}
/* Input v's name ("q1") into buf (at least 8 bytes). */
void en_input_name(int v, char *buf, size_t n);

/* ---- generation operators ------------------------------------------------ */

const char *en_gop_name(int gop); /* e.g. "conv2d+relu", "split0" */
int en_gop_nin(int gop);          /* 0..EN_MAX_NIN */
int en_gop_nout(int gop);         /* 1, or 2 for split */
ir_opcode en_gop_op(int gop);
/* Whether gop is batchnorm or one of its folds (several IR nodes in an
 * ir_graph; fp_bn_kernel evaluates it). */
int en_gop_is_bn(int gop);
/* The axis gop splits (0..2), or -1 when gop is not a two-part split. */
int en_gop_split_axis(int gop);
/* The axis node n splits (two or three parts), or -1: not a split. */
int en_node_split_axis(const en_node *n);

/* Bit (1 << opcode) of every operator of the generation set (the
 * extended one's included); en_ops_of: of the default set (0) or the
 * extended one (1) or its second tier too (2), third (3), fourth (4),
 * fifth (5), seventh (6: --opset extended6). */
uint64_t en_ops_all(void);
uint64_t en_ops_of(int extended);
/* The operator of the activation the second tier's gop fuses (sigmoid,
 * tanh, gelu), or -1: such a gop is enumerated only where that operator is
 * too (--ops conv2d alone has no conv2d+sigmoid). */
int en_gop_act_op(int gop);
/* Whether gop / class c is in the set (extended: 1 for the extended set,
 * 2 for it and the second tier, 3 and the third, 4 and the fourth, 5 and
 * the fifth, 6 and the seventh). */
int en_gop_on(int gop, int extended);
int en_class_on(int c, int extended);
/* Parses a comma-separated list of operator names ("matmul,ewadd") into a
 * bit set. Returns BASE_OK, or BASE_ERR_PARAM with a message in err naming the
 * unknown or unsupported name and listing the valid ones. */
base_status en_ops_parse(const char *list, uint64_t *ops, char *err,
                         size_t errn);

/* Operator, normalised attributes and output shapes of node n whose
 * arguments have shapes in[0..nin-1]. Returns 0, or -1 when the node is
 * not shape-valid or outside the generation restrictions (ranks, equal
 * shapes, tensor size). */
int en_node_op(const en_node *n, const ir_shape *const *in, ir_opcode *op,
               ir_attrs *a, ir_shape out[EN_NSLOTS]);
/* Shapes of every node output of g (shapes[i][slot]); 0, or -1 if g is not
 * shape-valid. */
int en_graph_shapes(const en_graph *g, ir_shape shapes[][EN_NSLOTS]);
/* Bit mask of the nodes value v of g depends on (its sub-DAG, the node
 * itself included); 0 for an input. */
uint32_t en_value_cone(const en_graph *g, uint8_t v);
/* Shape of value v given the node shapes. */
const ir_shape *en_value_shape(uint8_t v, const ir_shape (*shapes)[EN_NSLOTS]);
/* g's outputs (values no node reads, in node order; the root when g has no
 * node) into out[EN_MAX_OUTPUTS]; returns their number. */
int en_graph_outputs(const en_graph *g, uint8_t *out);
/* Copies of each class g uses (a canonical graph uses copies 0..k-1). */
void en_graph_used(const en_graph *g, uint8_t used[EN_NCLASSES]);
/* g with every input argument v replaced by map[v] (map over input ids). */
en_graph en_graph_rename(const en_graph *g, const uint8_t map[EN_NINPUT_IDS]);
/* Builds g as an ir_graph named name: its used inputs (IR_T_INPUT, named
 * by en_input_name, in id order), its nodes, and the outputs listed in
 * outs[0..nouts-1] (values of g), in that order. NULL with d set on error. */
ir_graph *en_graph_build(const en_graph *g, const uint8_t *outs, int nouts,
                         const char *name, base_diag *d);
/* One line, e.g. "matmul(matmul(m1,q1),q2)"-like text: "t0=matmul(m1,q1);
 * t1=matmul(t0,q2)". Into buf; returns buf. */
char *en_graph_str(const en_graph *g, char *buf, size_t n);

/* ---- enumeration --------------------------------------------------------- */

typedef void (*en_progress_fn)(void *u, const char *stage, double done,
                               double total);

typedef struct en_config {
  int max_ops;             /* 0..EN_MAX_OPS */
  int max_outputs;         /* most outputs of a graph; 0 = EN_DEFAULT_OUTPUTS */
  uint64_t ops;            /* bit (1 << ir_opcode) per operator; 0 = all */
  int threads;             /* 0 = all cores */
  en_progress_fn progress; /* may be NULL; called from one thread at a time */
  void *u;                 /* passed to progress */
  int keep_non_normal;     /* fp_candidates: 1 = no normal-form pruning */
  /* NULL: every branch. Else en_branch_count entries: branch b is run only
   * where branches[b] is non-zero (one process's share of a distributed
   * run; the progress total is the number of branches run). */
  const uint8_t *branches;
  /* fp_candidates: NULL, or a directory where each finished branch's
   * records are saved and from which a rerun with the same settings loads
   * them instead of enumerating again (docs/generation.md, "Checkpoints") */
  const char *checkpoint;
  /* fp_candidates, tests: > 0: stop (BASE_ERR_INTERRUPTED, nothing
   * returned) once this process has saved this many branches */
  int checkpoint_stop;
  /* > 1: each first-level branch is dealt as this many branches, the
   * second nodes taken in turn (smaller units of work for many ranks and
   * checkpoints; the graphs enumerated are the same) */
  int split;
  /* 1: the extended operator set (gen-rules --opset extended): the gops
   * from EN_NBASE_GOPS to EN_NEXT_GOPS and the classes from
   * EN_NBASE_CLASSES join the default ones (docs/generation.md); 2: the
   * second tier's gops too (--opset extended2); 3: the third tier's too
   * (--opset extended3); 4: the fourth tier's too (--opset extended4); 5:
   * the fifth tier's too (--opset extended5); 6: the seventh tier's too
   * (--opset extended6: the rank-3 transpose); 0: the default set alone */
  int extended;
} en_config;

/* Called for the graphs of one branch. branch_begin returns the branch's
 * state (NULL: out of memory, aborts). visit is called in depth-first order
 * for every enumerated graph (is_graph = 1: connected) and for every
 * disconnected prefix of one (is_graph = 0); when it sees a graph of k >= 1
 * nodes, the last graph it saw with k-1 nodes was this one's prefix, so it
 * can evaluate incrementally. Branch 0 holds the zero-operator graphs (each
 * with nops = 0, shapes NULL). shapes[i][slot] are the node output shapes.
 * A non-zero return aborts the enumeration with that status. branch_end is
 * called once per begun branch, possibly from several threads at once
 * (different branches). */
typedef struct en_visitor {
  void *(*branch_begin)(void *u, int branch);
  base_status (*visit)(void *state, const en_graph *g,
                       const ir_shape (*shapes)[EN_NSLOTS], int is_graph);
  void (*branch_end)(void *u, int branch, void *state);
  void *u;
  /* May be NULL. Called after visit for a graph that would be extended;
   * non-zero: do not extend it (e.g. its last node's value is not in normal
   * form). Should depend only on the last node's sub-DAG, not on where the
   * node is placed, so that the pruned set does not depend on the order. */
  int (*stop)(void *state, const en_graph *g);
} en_visitor;

/* Number of branches en_enumerate will run (1 + first-node choices x
 * split). */
int en_branch_count(const en_config *c);
/* Enumerates every canonical graph of 0..c->max_ops operators. */
base_status en_enumerate(const en_config *c, const en_visitor *v, base_diag *d);

#endif
