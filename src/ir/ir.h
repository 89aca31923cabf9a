/* ir.h: superopt's graph IR, its operator table, shape inference, the .graph
 * text format and a stable structural hash.
 *
 * A graph is a DAG of operator nodes over tensors of rank 0..8 whose element
 * type (ir_dtype) is float32, or int64 / bool for token ids, index tensors
 * and masks (graph inputs, gather indices, where conditions).
 * Tensors are graph inputs, weights (parameters) or values produced by a node;
 * each is referred to by its index in g->tensors. All of a graph's memory
 * comes from one arena and dies with ir_graph_free().
 *
 * Invariants of a graph returned by any function here (checked by
 * ir_graph_validate):
 *   - nodes are in topological order: every input of node i is a graph
 *     input, a weight, or an output of a node j < i (hence acyclic);
 *   - every tensor has its inferred shape; every node passed its shape rule;
 *   - tensor names are unique; there is at least one output.
 * Library functions never exit or print: they return a status and fill an
 * base_diag that the caller prints.
 */
#ifndef SUPEROPT_IR_H
#define SUPEROPT_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../base/base.h"

#define IR_MAX_RANK 8     /* tensors have rank 0..IR_MAX_RANK */
#define IR_MAX_LIST 16    /* longest list parameter (perm, sizes, shape, ...) */
#define IR_MAX_PARAMS 8   /* most parameters of one operator */
#define IR_MAX_FIXED_IN 8 /* most named inputs of one operator */
#define IR_MAX_IN 64      /* most inputs of one node (variadic concat) */
#define IR_MAX_NUMEL ((int64_t)1 << 36) /* most elements of one tensor */

/* ---- shapes ------------------------------------------------------------ */

typedef struct ir_shape {
  int32_t rank;
  int64_t dim[IR_MAX_RANK];
} ir_shape;

/* Number of elements; saturates at INT64_MAX instead of overflowing. */
int64_t ir_shape_numel(const ir_shape *s);
int ir_shape_eq(const ir_shape *a, const ir_shape *b);
/* Writes "[d0,d1,...]" into buf (always NUL-terminated); returns buf. */
char *ir_shape_str(const ir_shape *s, char *buf, size_t n);
ir_shape ir_shape_make(int rank, const int64_t *dims);

/* ---- element types ------------------------------------------------------ */

/* A tensor's element type. float32 is the default and the only type rules,
 * fingerprints, the verifier and the fused kernels know: every operator but
 * the type-generic ones (ir_dtype_infer) reads and writes float32 only.
 * Executors hold every type in float32 slots (int64 values are integers of
 * magnitude below 2^24, which float32 represents exactly; bool is 0 or 1):
 * the type is checked at graph construction, not by the storage. */
/* f16/bf16: docs/half.md (the CPU executor rounds to them; the CUDA
 * executor holds them in 2 bytes: docs/cuda.md) */
/* clang-format off */
typedef enum ir_dtype { IR_DT_F32 = 0, IR_DT_I64, IR_DT_BOOL, IR_DT_F16, IR_DT_BF16 } ir_dtype;
/* clang-format on */
#define IR_NDTYPES 5
/* Largest int64 magnitude an executor holds exactly (float32 slots). */
#define IR_I64_EXACT ((int64_t)1 << 24)

/* "f32", "i64", "bool" (the .graph spelling; f32 is printed as nothing). */
const char *ir_dtype_name(ir_dtype t);
/* Type by name; -1 if none. */
int ir_dtype_lookup(const char *s, size_t len);

/* ---- half precision (half.c, docs/half.md) ------------------------------
 * f16 (IEEE binary16) and bf16 (bfloat16) tensors are floats like f32:
 * every float operator reads and writes any one float type (all its float
 * inputs alike) and computes in float32 inside (sums, statistics); the
 * executors round each half tensor to its type as it is written, so a half
 * graph on the CPU executor computes what the CUDA executor does. Values
 * live in float32 slots holding the rounded values. */

/* The 16-bit encodings, round to nearest even (to infinity past the largest
 * finite value; f16 keeps its subnormals; NaN stays a quiet NaN). */
uint16_t ir_f16_bits(float x);
float ir_f16_value(uint16_t h);
uint16_t ir_bf16_bits(float x);
float ir_bf16_value(uint16_t h);
/* A float32's 32 bits (what compares and maps eps and constants bit for
 * bit: rule instances, the verifier's terms). */
uint32_t ir_f32_bits(float x);
/* x rounded to type t (unchanged unless t is f16 or bf16). */
float ir_dtype_round(float x, ir_dtype t);
void ir_dtype_round_n(float *x, int64_t n, ir_dtype t);
int ir_dtype_is_half(ir_dtype t);  /* f16, bf16 */
int ir_dtype_is_float(ir_dtype t); /* f32, f16, bf16 */
/* The unit roundoff u of t (half its epsilon): 2^-24 (f32), 2^-11 (f16),
 * 2^-8 (bf16); every rounding errs by at most u relatively. */
double ir_dtype_unit_roundoff(ir_dtype t);

/* ---- operators and parameters ------------------------------------------ */

typedef enum ir_opcode {
#define OP(ID, name, inputs, params, ...) IR_OP_##ID,
#include "ops.def"
#undef OP
} ir_opcode;

/* Number of operators (not an ir_opcode, so that a switch over every
 * operator needs no case for it: -Wswitch catches a missing operator). */
enum {
  IR_NOPS = 0
#define OP(ID, ...) +1
#include "ops.def"
#undef OP
};

/* How an operator computes (ops.def's kind column). 0 is no kind. */
typedef enum ir_opkind {
  IR_OPK_MATRIX = 1, /* conv2d, matmul */
  IR_OPK_WINDOW,     /* pooling over a kernel window */
  IR_OPK_EW,         /* element-wise; flops per output element */
  IR_OPK_NORM,       /* normalisation; flops per output element */
  IR_OPK_REDUCE,     /* reduction; flops per input element */
  IR_OPK_MOVE,       /* moves data, no arithmetic */
  IR_OPK_CONST,      /* a constant: no inputs, folded */
  IR_OPK_FUSED       /* a fused element-wise body (ir_body): its work */
} ir_opkind;

/* Operator flags (ops.def's flags column). */
enum {
  IR_OPF_COMM = 1 << 0,          /* commutative in its two inputs */
  IR_OPF_ACT_PARAM = 1 << 1,     /* has act=: absorbs a following activation */
  IR_OPF_RELU_EPILOGUE = 1 << 2, /* its kernel can apply a following relu */
  IR_OPF_VIEW = 1 << 3,          /* always a view of its input */
  IR_OPF_VIEW_BLOCKS = 1 << 4,   /* a view when outputs are blocks of x */
  IR_OPF_VIEW_ORDER = 1 << 5,    /* a view when it keeps non-1 dims' order */
  IR_OPF_BODY = 1 << 6,          /* element-wise: may be a fused body's op */
  IR_OPF_BODY_ROW = 1 << 7       /* row reduction: may end a fused body */
};

/* How a parameter (or input) relates to shapes: the marks after it in
 * ops.def's params (and inputs) column. */
enum {
  IR_PT_DERIVED = 1 << 0, /* '~' follows the shapes: a rule's node matches
                             whatever value; the rewriter re-derives it */
  IR_PT_DIMS = 1 << 1,    /* '#' dimension sizes: the rewriter translates
                             them to the matched shapes (as for '~') */
  IR_PT_BATCH = 1 << 2,   /* '^' follows the batch: rebatching sets its
                             first entry where it is the whole batch */
  IR_PT_INST = 1 << 3     /* '!' a rule instance may differ in it
                             (src/rewrite/inst.c) */
};

typedef enum ir_param_id {
#define PARAM(ID, name, kind, field) IR_P_##ID,
#include "params.def"
#undef PARAM
  IR_NPARAMS
} ir_param_id;

typedef enum ir_param_kind {
  IR_PK_INT,
  IR_PK_FLOAT,
  IR_PK_BOOL,
  IR_PK_PAIR,
  IR_PK_PAD,
  IR_PK_ACT,
  IR_PK_LIST,
  IR_PK_LIST2,
  IR_PK_DTYPE /* f32 | i64 | bool: field int32_t (ir_dtype) */
} ir_param_kind;

typedef enum ir_act {
  IR_ACT_NONE,
  IR_ACT_RELU,
  IR_ACT_SIGMOID,
  IR_ACT_TANH,
  IR_ACT_GELU,
  IR_ACT_CLIP /* clamped to [min, max]: a conv2d's (its min= and max=) */
} ir_act;

typedef enum ir_padmode {
  IR_PAD_SAME,
  IR_PAD_VALID,
  IR_PAD_EXPLICIT
} ir_padmode;

/* How seeded random values for a weight feeding an input slot are drawn. */
typedef enum ir_init_hint {
  IR_INIT_UNIFORM, /* uniform(-1, 1) */
  IR_INIT_FAN,     /* uniform(-1, 1) / sqrt(fan-in) */
  IR_INIT_POS,     /* uniform(0.5, 1.5) */
  IR_INIT_SMALL    /* uniform(-0.1, 0.1) */
} ir_init_hint;

/* All parameters of one node. Unused fields stay zero, so two nodes with
 * equal parameters compare equal with memcmp (always memset before use). */
typedef struct ir_attrs {
  int32_t stride[2], dilation[2], kernel[2];
  int32_t pad[4];  /* top, left, bottom, right; resolved by shape inference */
  int32_t padmode; /* ir_padmode */
  int32_t groups, act, axis, count_include_pad; /* groups: also cast's to;
                                                  count_include_pad: also
                                                  layernorm's rms */
  float eps, lo, hi, value;
  int32_t nlist, nlist2;
  int32_t keepdims; /* (also keeps the struct free of padding bytes) */
  int64_t list[IR_MAX_LIST], list2[IR_MAX_LIST];
  uint64_t body; /* fused: the interned body's id (ir_body_get); else 0 */
} ir_attrs;

/* A layernorm's rms=1 (RMSNorm: x / sqrt(mean(x^2) + eps), not centred),
 * kept in count_include_pad (params.def). */
static inline int ir_ln_rms(const ir_attrs *a) { return a->count_include_pad; }

/* An operator's row, expanded from ops.def. */
typedef struct ir_opinfo {
  const char *name;
  int min_in, max_in; /* max_in < 0: variadic (one or more) */
  int nnamed;         /* named input slots */
  char in_name[IR_MAX_FIXED_IN][16];
  ir_init_hint in_hint[IR_MAX_FIXED_IN];
  int nparams;
  ir_param_id params[IR_MAX_PARAMS];
  uint32_t required; /* bit i: params[i] has no default */
  ir_attrs defaults;
  ir_param_kind pkind[IR_MAX_PARAMS]; /* params[i]'s kind (params.def) */
  uint16_t poff[IR_MAX_PARAMS];       /* its field's offset in ir_attrs */
  unsigned ptraits[IR_MAX_PARAMS];    /* IR_PT_* of params[i] (marks) */
  unsigned traits;                    /* the union of ptraits */
  int inst_in; /* first input slot marked '!' (rule instances may add it), or
                  -1 */
  /* traits (ops.def's last columns) */
  ir_opkind kind;
  ir_act act;     /* the activation it computes (IR_ACT_NONE: none) */
  double flops;   /* floating-point operations per element (see kind) */
  unsigned flags; /* IR_OPF_* */
} ir_opinfo;

const ir_opinfo *ir_op(ir_opcode op);

/* An attention node's geometry: q [b,h,s,d], k [b,h,d,t], v [b,h,t,e] and
 * its result [b,h,s,e] as strided views (element offsets into q's, k's
 * and v's tensors, strides in elements, in those dimension orders) of the
 * tensors it reads and writes. The row layout (heads > 0,
 * docs/graph-format.md): q, k and v are rows [B,S,C] ([S,B,C] with
 * seqfirst) of which columns cols[i] + h*D + j hold head h, and the result
 * is [B,S,H*E]. */
typedef struct ir_att_geom {
  int64_t b, h, s, t, d, e;
  int64_t off[3];
  int64_t st[4][4]; /* q, k, v, result */
} ir_att_geom;

/* The geometry of an attention node with attributes a reading tensors of
 * shapes q, k and v (checked by shape inference); 0, or -1 for a node
 * whose default-layout rank is not 4 or whose row layout is malformed. */
int ir_att_geom_of(const ir_attrs *a, const ir_shape *q, const ir_shape *k,
                   const ir_shape *v, ir_att_geom *g);
/* Rows [.., R, C] of a row-layout attention (rank >= 3, batch-first) as
 * the rank-3 rows [B, R, C] of the same kernel: the leading dimensions
 * one batch B (the executors' geometry, the cost keys). */
ir_shape ir_att_rows3(const ir_shape *x);
/* A permutation of the row layout's definition (docs/graph-format.md) on
 * rows of rank r, into perm[0..r]: an operand's [.., R, H, w] to [.., H, R,
 * w] (q and v; the same swap takes the result's [.., H, S, E] back to
 * [.., S, H, E]), or with k set, k's to [.., H, w, R]. */
void ir_att_rows_perm(int r, int k, int64_t *perm);
/* Operator by name; -1 if none. */
int ir_op_lookup(const char *name, size_t len);
const char *ir_param_name(ir_param_id p);
ir_param_kind ir_param_kind_of(ir_param_id p);
/* Parameter by name; -1 if none. */
int ir_param_lookup(const char *name, size_t len);
/* Formats the value of parameter p in a, as the parser reads it (always
 * NUL-terminated). */
void ir_param_format(ir_param_id p, const ir_attrs *a, char *buf, size_t n);
/* Whether a parameter of kind k whose field is at offset off (an
 * ir_opinfo's pkind[i], poff[i]) has the same value in a and b (a list: its
 * length and entries in use; padding: mode and pads; a float: bitwise).
 * Inline: the matcher's inner loop. */
static inline int ir_field_eq(ir_param_kind k, size_t off, const ir_attrs *a,
                              const ir_attrs *b) {
  const int32_t *x = (const int32_t *)(const void *)((const char *)a + off),
                *y = (const int32_t *)(const void *)((const char *)b + off);
  switch (k) { /* lists: the entries in use (the rest are zero) */
  case IR_PK_LIST:
  case IR_PK_LIST2: {
    int n = k == IR_PK_LIST ? a->nlist : a->nlist2;
    if (n != (k == IR_PK_LIST ? b->nlist : b->nlist2))
      return 0;
    const int64_t *u = k == IR_PK_LIST ? a->list : a->list2,
                  *v = k == IR_PK_LIST ? b->list : b->list2;
    for (int i = 0; i < n; i++)
      if (u[i] != v[i])
        return 0;
    return 1;
  }
  case IR_PK_PAD:
    for (int i = 0; i < 4; i++)
      if (a->pad[i] != b->pad[i])
        return 0;
    return a->padmode == b->padmode;
  case IR_PK_PAIR: return x[0] == y[0] && x[1] == y[1];
  case IR_PK_INT:
  case IR_PK_BOOL:
  case IR_PK_FLOAT:
  case IR_PK_ACT:
  case IR_PK_DTYPE: return x[0] == y[0];
  }
  return 0;
}

/* Zeroes parameter p's value (a list: its entries and length). */
void ir_param_clear(ir_param_id p, ir_attrs *a);
/* Index of p in op's parameter list, or -1 when op has no such parameter. */
int ir_op_param_index(ir_opcode op, ir_param_id p);
/* Fills a with op's defaults. */
void ir_attrs_default(ir_opcode op, ir_attrs *a);
/* Number of outputs a node of op with attributes a has. */
int ir_op_nout(ir_opcode op, const ir_attrs *a);
const char *ir_act_name(ir_act a);
/* The operator computing activation a (relu -> IR_OP_RELU); -1 for none. */
int ir_act_op(ir_act a);

/* ---- element-wise unary operators (ew.def) ----------------------------- */

enum {
  IR_EWF_FP = 1 << 0 /* has a fingerprint kernel (a generation operator) */
};

/* An ew.def row: what every backend needs to compute the operator. */
typedef struct ir_ew {
  int index;          /* row number in ew.def, from 0 */
  const char *onnx;   /* ONNX op_type, or NULL (not one plain node) */
  const char *tensat; /* Tensat's name, or NULL (none) */
  const char *cuda;   /* the CUDA expression of float x, as text */
  float (*fn)(float); /* the C expression of x as a function */
  unsigned flags;     /* IR_EWF_* */
} ir_ew;

/* Number of ew.def rows. */
enum {
#define EW(ID, ...) IR_EW_ROW_##ID,
#include "ew.def"
#undef EW
  IR_EW_NROWS
};

/* op's ew.def row, or NULL when op is not an element-wise unary operator. */
const ir_ew *ir_ew_of(ir_opcode op);
/* The operator of row i (0 <= i < IR_EW_NROWS). */
ir_opcode ir_ew_op(int i);
/* The operator whose ONNX op_type is name; -1 if none. */
int ir_ew_by_onnx(const char *name);

/* ---- fused bodies ------------------------------------------------------ */

/* A `fused` node computes a small graph of element-wise operators (its
 * body) in one kernel. Body operators read the node's inputs ($k) or
 * earlier body operators; the last one is the node's single output. Bodies
 * carry no shapes (the same body serves every shape) and are interned:
 * equal bodies share one immutable process-wide copy whose id is a stable
 * content hash, stored in ir_attrs.body, so attributes still compare and
 * hash as bytes and can be copied between graphs freely. */
#define IR_BODY_MAX_OPS 32

typedef struct ir_body_op {
  ir_opcode op;
  int32_t nin;
  int32_t in[IR_MAX_FIXED_IN]; /* >= 0: body operator; < 0: input -1-in */
  ir_attrs a;                  /* normalised parameters; a.body = 0 */
} ir_body_op;

typedef struct ir_body {
  uint64_t id; /* content hash, never 0 */
  int32_t nin, nops;
  ir_body_op ops[]; /* nops of them; ops[nops-1] is the output */
} ir_body;

/* Whether op may appear in a fused body: its IR_OPF_BODY flag (ops.def;
 * the element-wise operators). */
int ir_body_op_ok(ir_opcode op);
/* The names of those operators, space-separated, for messages. */
const char *ir_body_op_names(void);
/* Whether op is a row reduction a fused body may end with: its
 * IR_OPF_BODY_ROW flag (softmax, layernorm, reduce_mean: over the last axis
 * of its input only; the layernorm's gamma and beta are inputs of the
 * body). */
int ir_body_row_op(ir_opcode op);
/* Their names, space-separated, for messages. */
const char *ir_body_row_op_names(void);
/* The row reduction body b ends with, or NULL. */
const struct ir_body_op *ir_body_row(const struct ir_body *b);
/* Checks and interns a body of nops operators over nin inputs: every
 * operator allowed, its arity right, references in range and earlier,
 * every input and every operator but the last used. Returns the interned
 * copy (never freed), or NULL with d set (no position). */
const ir_body *ir_body_intern(int nin, int nops, const ir_body_op *ops,
                              base_diag *d);
/* A `move` node (ops.def) re-indexes its one input: its body (ir_attrs
 * .body, interned like a fused node's) is a program of at most
 * IR_MOVE_MAX_OPS movement operators (ir_move_op_ok: slice, pad,
 * transpose, reshape, and concat of results of the program) over $0; the
 * last is the output. The lower stage makes them from chains of movement
 * operators (src/fuse/lower_chain.c). */
#define IR_MOVE_MAX_OPS 16
int ir_move_op_ok(ir_opcode op);
/* On unless $SUPEROPT_MOVE_CL=0 (the ablation; on by default since
 * 2026-11-30: MaxViT-T on an H200 bf16 b1 1.18-1.32 -> 1.06 ms, b16 3.10 ->
 * 2.41 ms, float32 b16 4.50 -> 3.86 ms; ShuffleNet-V2 and ConvNeXt-T b16
 * 3% faster, Swin-T unchanged): move nodes of one kernel where a reshape
 * would pin a convolution's image NCHW (src/fuse/lower_chain.c), and moves
 * writing channels-last (src/gpu/plan/layout.c). Both read it here, so
 * that the graph `optimize` writes is the graph `run` runs when the two
 * see the same setting (a graph made with it runs right without it: its
 * moves then write NCHW). */
int ir_move_cl(void);
/* Checks and interns a move program of nops operators over one input:
 * like ir_body_intern, the operators those ir_move_op_ok allows (a concat
 * of at most IR_MAX_FIXED_IN parts, act=none). NULL with d set. */
const ir_body *ir_move_intern(int nops, const ir_body_op *ops, base_diag *d);
/* Move program b over an input of shape x read through strides xst
 * (elements) as one strided walk of that input, where it is one: slices,
 * transposes and reshapes whose index maps stay affine, rolls (a concat of
 * x[s:D] and x[0:s]) and concats of parts that are one walk at offsets on
 * a grid; no pad. Then the program's result, element i in row-major order,
 * is input element *off + sum ((c_k + wrap[k]) mod dim[k]) st[k], c the
 * row-major coordinates of i over dim[0..*rank) (at most IR_MAX_RANK,
 * size-1 dimensions dropped, contiguous neighbours merged unless wrapped),
 * and it returns 1; else 0 (src/ir/move_view.c). wrap NULL: a program with
 * a roll is no walk. */
int ir_move_walk(const ir_body *b, const ir_shape *x, const int64_t *xst,
                 int *rank, int64_t *dim, int64_t *st, int64_t *wrap,
                 int64_t *off);
/* The interned body with this id, or NULL. */
const ir_body *ir_body_get(uint64_t id);
/* For a copy of the IR linked into a separately loaded object (the GPU
 * executor, libsuperopt_gpu.so): look bodies up with the host's get, whose
 * registry interned them, instead of this copy's empty one. */
void ir_body_use_host(const ir_body *(*get)(uint64_t id));
/* Shapes of every body operator (shapes[nops]) for input shapes in[nin];
 * fails with a message naming the body operator. */
base_status ir_body_shapes(const ir_body *b, const ir_shape *const *in,
                           ir_shape *shapes, base_diag *d);
/* The body in .graph syntax, "{ t0 = op($0, ...) params; ... }" (malloc'd;
 * NULL on OOM). */
char *ir_body_str(const ir_body *b);
/* g with every fused node replaced by its body, one node per body
 * operator (the last writes the fused node's output; the others get fresh
 * names "<output>.u<k>"), every ir_move_lowered node replaced by plain
 * operators, and every se and concat_shuffle node (the lower stage's) by
 * the operators it stands for (docs/graph-format.md): the same computation
 * in operators other tools know (ONNX export). Weight values are g's,
 * shared (the result must not
 * outlive g). NULL with d set on out of memory. */
struct ir_graph *ir_graph_unfuse(const struct ir_graph *g, base_diag *d);
/* Whether ir_graph_unfuse replaces node n: a fused node, or a lowered one
 * (src/fuse/lower.h) that ONNX has no operator for: a conv2d's or matmul's
 * residual input becomes an ewadd after it (and its act= an operator), a
 * conv2d's act=clip a clip, a layernorm's xb an ewadd before it; and the
 * lower stage's moves (ir_move_lowered). */
struct ir_node;
int ir_node_unfuses(const struct ir_node *n);

/* ---- graphs ------------------------------------------------------------ */

typedef enum ir_tkind { IR_T_INPUT, IR_T_WEIGHT, IR_T_VALUE } ir_tkind;

typedef struct ir_tensor {
  const char *name;
  ir_tkind kind;
  ir_shape shape;
  int32_t dtype;     /* ir_dtype; IR_DT_F32 unless set (inputs, weights) or
                        inferred (values, ir_dtype_infer) */
  int32_t node;      /* producing node, -1 for inputs and weights */
  int32_t slot;      /* output index within the producer */
  const float *data; /* known weight values (arena), or NULL: seeded random */
  int32_t line, col; /* where defined in the source text; 0 if built */
  int32_t has_value; /* a rule's input that binds only a tensor of known
                        values all equal to value (`input c: [] value=0.5`,
                        docs/graph-format.md); 0 for every model tensor */
  float value;
} ir_tensor;

typedef struct ir_node {
  ir_opcode op;
  int32_t nin, nout;
  int32_t *in, *out; /* tensor indices */
  ir_attrs a;
  int32_t line, col;
} ir_node;

/* How seeded random weights fed to input `slot` of node n are drawn, and
 * the operator whose slot decided (looks inside fused bodies). */
ir_init_hint ir_node_in_hint(const ir_node *n, int slot, ir_opcode *op);

typedef struct ir_graph {
  base_arena *arena;
  const char *name;
  ir_tensor *tensors;
  int32_t ntensors, captensors;
  ir_node *nodes; /* topological order */
  int32_t nnodes, capnodes;
  int32_t *outputs; /* tensor indices, in declared order */
  int32_t noutputs, capoutputs;
  int32_t *names;   /* name index: open addressing, tensor + 1 (0 = empty) */
  int32_t capnames; /* power of two, > 2 * ntensors */
} ir_graph;

ir_graph *ir_graph_new(const char *name); /* NULL on OOM */
void ir_graph_free(ir_graph *g);
/* Deep copy into a fresh arena. */
ir_graph *ir_graph_clone(const ir_graph *g);
/* A copy whose weight values (tensor data) are g's, shared: for graphs
 * derived inside one pass (the search's candidates), where g's values
 * outlive the copy. NULL on OOM. */
ir_graph *ir_graph_clone_shared(const ir_graph *g);
/* A copy of g (values shared, as ir_graph_clone_shared) with its nodes in a
 * random topological order drawn from seed; tensors, their indices and the
 * outputs as g's. The GPU executor times several such orders of a graph
 * whose branches run side by side (gpu_plan_reorder). NULL on OOM. */
ir_graph *ir_graph_reordered(const ir_graph *g, uint64_t seed);
/* A copy of g (values shared, as ir_graph_reordered) with its nodes in a
 * canonical topological order: of the nodes ready, the one whose key
 * (operator, attributes, its inputs' keys; inputs and weights by kind and
 * shape, weight-only nodes as weights; no names, no positions) is least.
 * Two files of one program, their nodes listed, named or their weights'
 * folds written differently, come out in one order, so the executor's
 * greedy streams (plan/sched.c) schedule them alike. NULL on OOM. */
ir_graph *ir_graph_canonical(const ir_graph *g);
/* The loop of every rewrite that rebuilds a graph node by node without a
 * rule (the lower stage's families, ir_graph_unfuse): a new graph with g's
 * inputs and weights (values shared: it must not outlive g), then fn
 * called on each node n of g in order, which adds to h what n becomes
 * (nothing, n itself through ir_rebuild_copy, or other nodes) and sets
 * map[t] (g's tensor t -> h's; the inputs' and weights' are set) for each
 * tensor of g it stands for; returns < 0 with d set to fail. Then g's
 * outputs, through map. NULL with d set on failure. */
typedef int (*ir_rebuild_fn)(void *u, ir_graph *h, const ir_graph *g, int n,
                             int32_t *map, base_diag *d);
ir_graph *ir_rebuild(const ir_graph *g, ir_rebuild_fn fn, void *u,
                     base_diag *d);
/* Adds node n of g to h as it is (inputs through map, the same output
 * names, its position) and maps its outputs. Returns h's node, or -1. */
int ir_rebuild_copy(ir_graph *h, const ir_graph *g, int n, int32_t *map,
                    base_diag *d);
/* A deep copy in one block of exactly its size (a built or parsed graph
 * keeps the room its arrays grew by): for graphs kept by the thousand,
 * such as the rules of a library. NULL on OOM. */
ir_graph *ir_graph_compact(const ir_graph *g);
/* Copies every weight value g refers to into g's own arena, so that g no
 * longer depends on the graph it was derived from (rewrites share values;
 * call this before freeing that graph). */
base_status ir_graph_own_data(ir_graph *g, base_diag *d);
/* Replaces *g by h, a graph derived from it that may share its weight
 * values: h takes its own copies (ir_graph_own_data), *g is freed and
 * becomes h. On failure h is freed and *g stays. */
base_status ir_graph_replace(ir_graph **g, ir_graph *h, base_diag *d);

/* Adds a graph input or weight; returns its tensor index, or -1 with d set
 * (duplicate name, bad shape). */
int ir_add_tensor(ir_graph *g, const char *name, ir_tkind kind,
                  const ir_shape *s, base_diag *d);
/* Adds a node whose inputs already exist, runs its shape rule and creates
 * its output tensors (named outnames[i], or "t<N>" when outnames is NULL).
 * Returns the node index, or -1 with d set and g unchanged. */
int ir_add_node(ir_graph *g, ir_opcode op, const int32_t *in, int nin,
                const ir_attrs *a, const char *const *outnames, base_diag *d);
base_status ir_add_output(ir_graph *g, int32_t tensor, base_diag *d);
/* Tensor index by name, or -1. */
int ir_find_tensor(const ir_graph *g, const char *name);

/* Runs op's shape rule on input shapes in[0..nin-1], filling out[0..nout-1]
 * (nout = ir_op_nout). May normalise a (negative axes, resolved pads and
 * reshape -1). Checks arity and required structure; on failure fills d with
 * a message naming the offending shapes (no position). */
base_status ir_infer(ir_opcode op, ir_attrs *a, const ir_shape *const *in,
                     int nin, ir_shape *out, base_diag *d);

/* Element types of op's outputs from its inputs' (in[0..nin-1]): the
 * type-generic operators (moves: concat split transpose reshape slice pad
 * gather's data; where's branches; equal; not; cast) follow their inputs or
 * parameters, every other operator takes and gives float32. Fails with
 * BASE_ERR_PARAM naming the operator and the input. */
base_status ir_dtype_infer(ir_opcode op, const ir_attrs *a, const ir_dtype *in,
                           int nin, ir_dtype *out, base_diag *d);
/* The mixed-precision policy of an operator (docs/half.md, the one table:
 * ir_op_half_policy in half.c): IR_HALF_RUN runs in the half type (its
 * sums and statistics in float32 inside, its result rounded: softmax,
 * layernorm, batchnorm and reduce_mean too), IR_HALF_F32 has its float
 * inputs cast to float32 and writes float32 (exp and log), IR_HALF_KEEP follows
 * its inputs (moves, where, equal, cast; the widest float input, float32 if
 * any; constants are float32). */
typedef enum ir_half_policy {
  IR_HALF_RUN,
  IR_HALF_F32,
  IR_HALF_KEEP
} ir_half_policy;
ir_half_policy ir_op_half_policy(ir_opcode op);
/* g converted to the half type t by the policy: float inputs and weights
 * (float32, or the other half type) become t (weight values rounded; a
 * weight only IR_HALF_F32 operators read stays float32), each node's float
 * inputs are cast to the type its policy wants (one cast per tensor and
 * type, named "<tensor>.<type>"); names are kept. NULL with d set on error
 * (t not a half type, out of memory). */
ir_graph *ir_graph_to_dtype(const ir_graph *g, ir_dtype t, base_diag *d);
/* g in float32: half inputs, weights and values become f32 (their values
 * are exact in float32), a cast between float types is dropped unless it
 * writes an output (then it casts to f32). What the optimizer searches on:
 * rules are proven for float32 (opt.h, opt_options.dtype). */
ir_graph *ir_graph_to_f32(const ir_graph *g, base_diag *d);
/* The half type of g's first half tensor; IR_DT_F32 when it has none. */
ir_dtype ir_graph_float_type(const ir_graph *g);

/* Whether every tensor node n reads and writes is float32 (what rules,
 * fingerprints and the verifier handle). */
int ir_node_all_f32(const ir_graph *g, const ir_node *n);

/* Checks the invariants stated at the top of this file. */
base_status ir_graph_validate(const ir_graph *g, base_diag *d);
/* In builds with SUPEROPT_CHECK_INVARIANTS (the ASan build, Debug builds;
 * docs/architecture.md) ir_graph_validate(g), failing with
 * BASE_ERR_INTERNAL "graph invariant broken after <after>: ..."; the
 * optimizer calls it between passes and after every search step. BASE_OK
 * (and nothing checked) in other builds. */
base_status ir_check_invariants(const ir_graph *g, const char *after,
                                base_diag *d);

/* Stable structural hash: independent of tensor names and of the process;
 * depends on operators, parameters, shapes, the wiring, the order of inputs
 * and weights, and the outputs. Sets *out; BASE_ERR_NOMEM (*out unset)
 * when out of memory. */
base_status ir_graph_hash(const ir_graph *g, uint64_t *out);

/* A copy of g whose batch dimension (dim 0 of every input) is `batch`:
 * the batch is tracked through every node (also where an exporter folded
 * it into another axis: [tokens, 1*heads, hd], [1*windows, ..]), reshape
 * targets and slice ends that carry it follow, a weight concatenated with
 * batched values is broadcast, and every shape is inferred again
 * (rebatch.c). Fails (BASE_ERR_SHAPE, message naming the node, its line
 * and why) when an operator would compute across the batch. */
base_status ir_rebatch(const ir_graph *g, int64_t batch, ir_graph **out,
                       base_diag *d);

/* mask[i] = 1 for every node i that computes from weights and constants
 * only (no graph input upstream): weight preprocessing (folded batch
 * norms, transposed weights) that can run once when weights are loaded.
 * mask has g->nnodes entries. */
void ir_weight_only(const ir_graph *g, unsigned char *mask);

/* Whether node n of g moves no data: its operator is a view
 * (IR_OPF_VIEW), or its outputs are contiguous blocks of its input
 * (IR_OPF_VIEW_BLOCKS), or it keeps the order of the dimensions larger
 * than 1 (IR_OPF_VIEW_ORDER). */
int ir_node_is_view(const ir_graph *g, const ir_node *n);
/* Whether tensor t is one of g's outputs. */
int ir_is_output(const ir_graph *g, int t);
/* Whether split node i of g along its input's last axis is read in place:
 * every output read only by fused nodes (no batch norm in the body),
 * directly or through reshapes that keep the input's leading dimensions
 * (splitting only the last) or through splits of the last axis read so in
 * turn, none of them a graph output, the input no weight. The CUDA
 * executor then runs no copy: each fused kernel reads its column block of
 * the input's rows (src/gpu/plan/layout.c, which adds its own conditions
 * through ok: each reader and reshape node j, 0 to refuse; NULL: none),
 * and the cost model prices the split at 0. */
int ir_split_read_in_place(const ir_graph *g, int i,
                           int (*ok)(const void *u, int j), const void *u);
/* Whether node n is a data-movement form of the lower stage
 * (src/fuse/lower_move.c) that ir_graph_unfuse writes back as plain
 * operators: a concat or split with an activation, a pad with a negative
 * pad (a crop). */
int ir_move_lowered(const ir_node *n);

/* Number of nodes of each opcode, into counts[IR_NOPS]. */
void ir_op_counts(const ir_graph *g, int counts[IR_NOPS]);
/* How many nodes read each tensor, a graph output counting as one reader
 * more: ntensors + 1 entries for the caller to free, NULL when out of
 * memory. */
int *ir_read_counts(const ir_graph *g);
/* The critical path by node weights w[nnodes] (e.g. each node's measured
 * time): the heaviest chain of nodes, each reading a result of the one
 * before, in a graph whose node order is topological; it starts at a
 * node of positive weight (or is empty). Sets *len to its weight and,
 * where on is not NULL, on[i] = 1 for the nodes on it (0 for the others).
 * Returns 0, or -1 when out of memory. */
int ir_critical_path(const ir_graph *g, const double *w, unsigned char *on,
                     double *len);

/* ---- .graph text format (docs/graph-format.md) -------------------------- */

/* Parses text (len bytes; need not be NUL-terminated). file names the source
 * in messages. Returns a valid graph, or NULL with d set: never a partial
 * graph. */
ir_graph *ir_parse(const char *text, size_t len, const char *file,
                   base_diag *d);
ir_graph *ir_parse_file(const char *path, base_diag *d);
/* Prints g in canonical form; returns a malloc'd string (NULL on OOM). */
char *ir_print(const ir_graph *g);
/* Writes ir_print(g) to path atomically (temp file + rename). */
base_status ir_write_file(const ir_graph *g, const char *path, base_diag *d);

/* ---- weight values: the safetensors sidecar (weights.c) ----------------- */

/* The sidecar of a .graph file: "x.graph" -> "x.safetensors", anything
 * else gets ".safetensors" appended. */
void ir_weights_path(const char *graph_path, char *buf, size_t n);
/* Number of weights of g whose values are known (data != NULL). */
int ir_weights_count(const ir_graph *g);
/* Whether a file exists at path. */
int ir_weights_exists(const char *path);
/* Writes the known weight values of g to path (safetensors, F32, in
 * declaration order; docs/graph-format.md), atomically. */
base_status ir_weights_write(const ir_graph *g, const char *path, base_diag *d);
/* The sidecar's bytes (malloc'd into *out, *len), with g's graph hash. An
 * int64 weight holding a value that is not an integer in range is refused
 * (BASE_ERR_PARAM). */
base_status ir_weights_encode(const ir_graph *g, char **out, size_t *len,
                              base_diag *d);
/* XXH3 64 of text[0..len): the graph hash a sidecar records (of the
 * graph's canonical text, ir_print). */
uint64_t ir_text_hash(const char *text, size_t len);

/* ---- a graph and its weights as one unit (pair.c) ---------------------- */

/* Writes g to path and, when with_weights and g has weight values, the
 * values to its sidecar, as one unit (base_write_unit: both checked, both
 * written to temporaries, renamed sidecar first under a directory lock;
 * the sidecar's graph hash exposes a kill between the renames). Symlinks
 * are followed: the sidecar goes beside the graph's real file. With no
 * values to write, a stale sidecar is removed after the graph is written.
 * A character device or FIFO, or a path under /dev/ or /proc/ (/dev/null,
 * /dev/stdout, also redirected to a file) gets the graph only (written as
 * base_write_atomic does), and is refused when there are values to write.
 * Docs: reliability.md. */
base_status ir_save(const ir_graph *g, const char *path, int with_weights,
                    base_diag *d);
/* Reads a .graph file and, if its sidecar exists (beside the file that
 * symlinks lead to, else beside path), the weight values, checking the
 * sidecar's graph hash. NULL + d on error. */
ir_graph *ir_load(const char *path, base_diag *d);
/* Reads a safetensors file into g's weights: every tensor in it must be a
 * weight of g of the same shape, dtype F32. A malformed file or a mismatch
 * is an error (d names the file) and leaves g unchanged. */
base_status ir_weights_read(ir_graph *g, const char *path, base_diag *d);
base_status ir_weights_read_mem(ir_graph *g, const uint8_t *data, size_t len,
                                const char *path, base_diag *d);
/* ir_weights_read for g parsed from text[0..text_len) (the .graph file's
 * bytes): a sidecar hash matching those bytes is accepted without
 * reprinting g. */
base_status ir_weights_read_for(ir_graph *g, const char *path, const char *text,
                                size_t text_len, base_diag *d);

/* Reads a safetensors file of input values into the data of g's inputs
 * (run --inputs): every tensor in it must be an input of g of the same
 * shape, in the input's dtype or, for a half input, F32 (rounded where it
 * is drawn). Inputs it does not name keep no data. A malformed file or a
 * mismatch is an error naming the file and leaves g unchanged. */
base_status ir_inputs_read(ir_graph *g, const char *path, base_diag *d);
/* Writes n float32 tensors (names[i], shapes[i], values vals[i]) to path as
 * a safetensors file, in that order, atomically (run --outputs). */
base_status ir_values_write(const char *path, int n, const char *const *names,
                            const ir_shape *const *shapes,
                            const float *const *vals, base_diag *d);

/* ---- rules: pairs of equivalent graphs (docs/rules-format.md) ----------- */

typedef enum ir_rule_status {
  IR_RULE_UNVERIFIED, /* not (yet) checked by the verifier */
  IR_RULE_PROVEN,     /* the verifier proved src == dst from the axioms */
  IR_RULE_UNPROVEN    /* the verifier failed (sat, unknown, timeout) */
} ir_rule_status;

/* A substitution: src and dst compute the same outputs, position by
 * position (src->outputs[i] == dst->outputs[i]), for every value of their
 * inputs. Both graphs own their arenas. Every input or weight of dst is one
 * of src's, by name, with the same kind and shape; output shapes agree. */
typedef struct ir_rule {
  char *id; /* unique in its set: [A-Za-z0-9_.-]+ (malloc'd) */
  ir_graph *src, *dst;
  ir_rule_status status;
  char **axioms; /* names of the axioms the proof used (malloc'd) */
  int naxioms;
  char *note;   /* one line: why unproven, where imported from; or NULL */
  int32_t line; /* where the rule starts in its file; 0 if built */
  /* A rule read lazily (ir_rules_read_file_lazy) keeps src and dst NULL
   * until ir_rule_load parses them from its file's text: where each
   * graph's text is (0: src, 1: dst), its first line, and its operators
   * (bit op); the file's name. The file's first rule owns the text and the
   * name (`owned`, freed with it: free such a set whole). */
  const char *text[2];
  size_t textlen[2];
  int32_t textline[2];
  uint64_t ops[2];
  const char *file;
  char *owned;
} ir_rule;

typedef struct ir_ruleset {
  ir_rule *rules;
  int n, cap;
} ir_ruleset;

void ir_ruleset_init(ir_ruleset *rs);
void ir_ruleset_free(ir_ruleset *rs); /* frees every rule and its graphs */
/* Frees one rule's id, graphs, axioms and note; zeroes *r. */
void ir_rule_clear(ir_rule *r);
/* Appends a rule taking ownership of src and dst (freed on failure too);
 * checks the invariants above. Returns the rule, or NULL with d set. */
ir_rule *ir_ruleset_add(ir_ruleset *rs, const char *id, ir_graph *src,
                        ir_graph *dst, base_diag *d);
/* Records the axioms a proof used (copies the strings). */
base_status ir_rule_set_axioms(ir_rule *r, const char *const *names, int n);
base_status ir_rule_set_note(ir_rule *r, const char *note); /* NULL clears */
/* Checks a rule's invariants (see ir_rule). */
base_status ir_rule_validate(const ir_rule *r, base_diag *d);
const char *ir_rule_status_name(ir_rule_status s);

/* Parses a rule file; on failure rs is left empty and d holds
 * file:line:col of the first error. */
base_status ir_rules_parse(const char *text, size_t len, const char *file,
                           ir_ruleset *rs, base_diag *d);
base_status ir_rules_read_file(const char *path, ir_ruleset *rs, base_diag *d);
/* Reads a rule file lazily: its structure (rule lines, ids, statuses,
 * axioms, notes, the src:/dst:/end sections) and each statement's operator
 * name are checked now, as ir_rules_read_file would (file:line:col); each
 * rule's graphs are parsed and checked only by ir_rule_load, and until
 * then its src and dst are NULL (ir_rule_loaded is 0). A rule whose text
 * the operator scan cannot read is parsed now. The set keeps the file's
 * text. For the optimizer (src/rewrite loads a rule when a searched graph
 * has every operator of one of its sides); whatever prints, proves or
 * compares rules reads them with ir_rules_read_file. */
base_status ir_rules_read_file_lazy(const char *path, ir_ruleset *rs,
                                    base_diag *d);
/* Whether a rule has its graphs (always, unless read lazily). */
int ir_rule_loaded(const ir_rule *r);
/* Parses a lazily read rule's graphs and checks its invariants (a no-op
 * when it has them); on failure it stays unloaded and d holds
 * file:line:col of the error in the rules file. */
base_status ir_rule_load(ir_rule *r, base_diag *d);
/* Prints a rule set (header comment lines first, each starting "# ", may be
 * NULL); malloc'd string. Stable: the same set prints byte-identically. */
char *ir_rules_print(const ir_ruleset *rs, const char *header);
base_status ir_rules_write_file(const ir_ruleset *rs, const char *header,
                                const char *path, base_diag *d);

#endif
