/* gops.c: the input pool and the generation operators of the enumerator:
 * their names, arities, the IR operator and attributes each stands for,
 * the --ops parser, and helpers on compact graphs (shapes, outputs,
 * renaming, building an ir_graph).
 */
#include <stdio.h>
#include <string.h>

#include "enum.h"

/* TASO's pool: three copies of each matrix, image and kernel shape, one
 * depthwise kernel, one scalar. */
static const en_class classes[EN_NCLASSES] = {
    {"m", {2, {2, 4}}, 3},
    {"q", {2, {4, 4}}, 3},
    {"x", {4, {2, 4, 5, 5}}, 3},
    {"w", {4, {4, 4, 3, 3}}, 3},
    {"h", {4, {4, 4, 1, 3}}, 3},
    {"v", {4, {4, 4, 3, 1}}, 3},
    {"d", {4, {4, 1, 3, 3}}, 1},
    {"s", {0, {0}}, 1},
    /* the extended set's: biases of the kernels' 4 output channels */
    {"b", {1, {4}}, 3},
    /* a batchnorm's parameters: rows scale, bias, mean, var of 4 channels
     * (four weights [4] in an ir_graph; only batchnorm and its folds read
     * it) */
    {"n", {2, {4, 4}}, 1},
    /* rank 3, one copy (input ids stay below 32): what a rank-3 matmul
     * reads, [B,S,K] with K the matrices' 4 */
    {"t", {3, {2, 2, 4}}, 1},
};

enum { C_Q = 1, C_W = 3, C_D = 6, C_S = 7, C_B = 8, C_N = 9 };
_Static_assert(EN_SCALAR_ID == C_S * EN_MAX_COPIES, "s1 is class s's copy 0");

const en_class *en_class_of(int c) { return &classes[c]; }

int en_class_on(int c, int extended) {
  return c < EN_NBASE_CLASSES || extended;
}

int en_gop_on(int gop, int extended) {
  return gop < EN_NBASE_GOPS || (extended && gop < EN_NEXT_GOPS) ||
         (extended >= 2 && gop < EN_TIER2_GOPS) ||
         (extended >= 3 && gop < EN_TIER3_GOPS) ||
         (extended >= 4 && gop < EN_TIER4_GOPS) ||
         (extended >= 5 && gop < EN_TIER5_GOPS) || extended >= 6;
}

void en_input_name(int v, char *buf, size_t n) {
  snprintf(buf, n, "%s%d", classes[en_input_class(v)].prefix,
           en_input_copy(v) + 1);
}

typedef struct gop_row {
  const char *name;
  ir_opcode op;
  int nin, nout;
} gop_row;

static const gop_row gops[EN_NGOPS] = {
    [EN_MATMUL] = {"matmul", IR_OP_MATMUL, 2, 1},
    [EN_CONV] = {"conv2d", IR_OP_CONV2D, 2, 1},
    [EN_CONV_RELU] = {"conv2d+relu", IR_OP_CONV2D, 2, 1},
    [EN_EWADD] = {"ewadd", IR_OP_EWADD, 2, 1},
    [EN_EWMUL] = {"ewmul", IR_OP_EWMUL, 2, 1},
    [EN_SMUL] = {"smul", IR_OP_SMUL, 2, 1},
    [EN_RELU] = {"relu", IR_OP_RELU, 1, 1},
    [EN_CONCAT0] = {"concat0", IR_OP_CONCAT, 2, 1},
    [EN_CONCAT1] = {"concat1", IR_OP_CONCAT, 2, 1},
    [EN_SPLIT0] = {"split0", IR_OP_SPLIT, 1, 2},
    [EN_SPLIT1] = {"split1", IR_OP_SPLIT, 1, 2},
    [EN_TRANSPOSE] = {"transpose", IR_OP_TRANSPOSE, 1, 1},
    [EN_AVGPOOL] = {"avgpool", IR_OP_AVGPOOL, 1, 1},
    [EN_MAXPOOL] = {"maxpool", IR_OP_MAXPOOL, 1, 1},
    [EN_ENLARGE] = {"enlarge", IR_OP_ENLARGE, 1, 1},
    [EN_ICONV] = {"const_iconv", IR_OP_CONST_ICONV, 0, 1},
    [EN_IMM] = {"const_imm", IR_OP_CONST_IMM, 0, 1},
    [EN_ONES] = {"const_ones", IR_OP_CONST_ONES, 0, 1},
    [EN_CPOOL] = {"const_pool", IR_OP_CONST_POOL, 0, 1},
    [EN_CONVB] = {"conv2d+bias", IR_OP_CONV2D, 3, 1},
    [EN_CONVB_RELU] = {"conv2d+bias+relu", IR_OP_CONV2D, 3, 1},
    [EN_BN] = {"batchnorm", IR_OP_BATCHNORM, 2, 1},
    [EN_BNFOLD_W] = {"bnfold_w", IR_OP_BATCHNORM, 2, 1},
    [EN_BNFOLD_B] = {"bnfold_b", IR_OP_BATCHNORM, 1, 1},
    [EN_BNFOLD_C] = {"bnfold_c", IR_OP_BATCHNORM, 2, 1},
    [EN_CONVV] = {"conv2d/valid", IR_OP_CONV2D, 2, 1},
    [EN_CONVV_RELU] = {"conv2d/valid+relu", IR_OP_CONV2D, 2, 1},
    [EN_CONVBV] = {"conv2d/valid+bias", IR_OP_CONV2D, 3, 1},
    [EN_MATMULB] = {"matmul+bias", IR_OP_MATMUL, 3, 1},
    [EN_MATMULB_RELU] = {"matmul+bias+relu", IR_OP_MATMUL, 3, 1},
    [EN_SPLIT2] = {"split2", IR_OP_SPLIT, 1, 2},
    [EN_CONVP] = {"conv2d/s2p1", IR_OP_CONV2D, 2, 1},
    [EN_CONVP_RELU] = {"conv2d/s2p1+relu", IR_OP_CONV2D, 2, 1},
    [EN_CONVBP] = {"conv2d/s2p1+bias", IR_OP_CONV2D, 3, 1},
    [EN_SPLIT3] = {"split3", IR_OP_SPLIT, 1, 3},
    [EN_MATMUL3] = {"matmul/r3", IR_OP_MATMUL, 2, 1},
    [EN_SIGMOID] = {"sigmoid", IR_OP_SIGMOID, 1, 1},
    [EN_TANH] = {"tanh", IR_OP_TANH, 1, 1},
    [EN_GELU] = {"gelu", IR_OP_GELU, 1, 1},
    [EN_CONV_SIGMOID] = {"conv2d+sigmoid", IR_OP_CONV2D, 2, 1},
    [EN_CONV_TANH] = {"conv2d+tanh", IR_OP_CONV2D, 2, 1},
    [EN_CONV_GELU] = {"conv2d+gelu", IR_OP_CONV2D, 2, 1},
    [EN_CONVB_SIGMOID] = {"conv2d+bias+sigmoid", IR_OP_CONV2D, 3, 1},
    [EN_CONVB_TANH] = {"conv2d+bias+tanh", IR_OP_CONV2D, 3, 1},
    [EN_CONVB_GELU] = {"conv2d+bias+gelu", IR_OP_CONV2D, 3, 1},
    [EN_MATMULB_SIGMOID] = {"matmul+bias+sigmoid", IR_OP_MATMUL, 3, 1},
    [EN_MATMULB_TANH] = {"matmul+bias+tanh", IR_OP_MATMUL, 3, 1},
    [EN_MATMULB_GELU] = {"matmul+bias+gelu", IR_OP_MATMUL, 3, 1},
    [EN_CONVBR] = {"conv2d+bias+res", IR_OP_CONV2D, 4, 1},
    [EN_CONVBR_RELU] = {"conv2d+bias+res+relu", IR_OP_CONV2D, 4, 1},
    [EN_MATMULBR] = {"matmul+bias+res", IR_OP_MATMUL, 4, 1},
    [EN_MATMULBR_RELU] = {"matmul+bias+res+relu", IR_OP_MATMUL, 4, 1},
    [EN_CLIP6] = {"clip6", IR_OP_CLIP, 1, 1},
    [EN_CONV_CLIP6] = {"conv2d+clip6", IR_OP_CONV2D, 2, 1},
    [EN_CONVB_CLIP6] = {"conv2d+bias+clip6", IR_OP_CONV2D, 3, 1},
    [EN_SOFTMAX] = {"softmax", IR_OP_SOFTMAX, 1, 1},
    [EN_ATT] = {"attention", IR_OP_ATTENTION, 3, 1},
    [EN_ATT_S] = {"attention+scale", IR_OP_ATTENTION, 4, 1},
    [EN_EWADD_B] = {"ewadd/bias", IR_OP_EWADD, 2, 1},
    [EN_MATMUL_ZR] = {"matmul+res", IR_OP_MATMUL, 3, 1},
    [EN_MATMUL3_RELU] = {"matmul/r3+relu", IR_OP_MATMUL, 2, 1},
    [EN_TRANSPOSE3] = {"transpose/r3", IR_OP_TRANSPOSE, 1, 1},
};

/* The activation fused into gop (the second tier's sigmoid, tanh, gelu
 * variants), or IR_ACT_NONE. */
static int tier2_act(int gop) {
  static const int acts[3] = {IR_ACT_SIGMOID, IR_ACT_TANH, IR_ACT_GELU};
  if (gop >= EN_CONV_SIGMOID && gop <= EN_MATMULB_GELU)
    return acts[(gop - EN_CONV_SIGMOID) % 3];
  return IR_ACT_NONE;
}

int en_gop_act_op(int gop) {
  int act = tier2_act(gop);
  return act == IR_ACT_NONE ? -1 : (int)ir_ew_op(act - 1); /* ew.def's rows
                                                             1..4: the acts */
}

/* The argument of gop that is a batchnorm's parameters (class n), or -1. */
static int bn_arg(int gop) {
  switch (gop) {
  case EN_BN:
  case EN_BNFOLD_W:
  case EN_BNFOLD_C: return 1;
  case EN_BNFOLD_B: return 0;
  default: return -1;
  }
}

int en_gop_is_bn(int gop) { return bn_arg(gop) >= 0; }

int en_gop_split_axis(int gop) {
  switch (gop) {
  case EN_SPLIT0: return 0;
  case EN_SPLIT1: return 1;
  case EN_SPLIT2: return 2;
  default: return -1;
  }
}

int en_node_split_axis(const en_node *n) {
  return n->gop == EN_SPLIT3 ? en_split3_axis(n->p) : en_gop_split_axis(n->gop);
}

const char *en_gop_name(int gop) { return gops[gop].name; }
int en_gop_nin(int gop) { return gops[gop].nin; }
int en_gop_nout(int gop) { return gops[gop].nout; }
ir_opcode en_gop_op(int gop) { return gops[gop].op; }

uint64_t en_ops_of(int extended) {
  uint64_t m = 0;
  for (int g = 0; g < EN_NGOPS; g++)
    if (en_gop_on(g, extended))
      m |= (uint64_t)1 << gops[g].op;
  return m;
}

uint64_t en_ops_all(void) { return en_ops_of(6); }

/* ---- --ops ----------------------------------------------------------------
 */

static void ops_list(char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int op = 0; op < IR_NOPS && k < n; op++)
    if (en_ops_all() >> op & 1)
      k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "",
                            ir_op((ir_opcode)op)->name);
}

base_status en_ops_parse(const char *list, uint64_t *ops, char *err,
                         size_t errn) {
  uint64_t m = 0;
  char valid[512];
  ops_list(valid, sizeof valid);
  for (const char *p = list;;) {
    size_t len = strcspn(p, ",");
    int op = ir_op_lookup(p, len);
    if (len == 0 || op < 0 || !(en_ops_all() >> op & 1)) {
      snprintf(err, errn,
               len ? "'%.*s' is not a generation operator (valid: %s)"
                   : "empty operator name in the list%.*s (valid: %s)",
               (int)len, p, valid);
      return BASE_ERR_PARAM;
    }
    m |= (uint64_t)1 << op;
    if (!p[len])
      break;
    p += len + 1;
  }
  *ops = m;
  return BASE_OK;
}

/* ---- node semantics -------------------------------------------------------
 */

/* Convolutions and pools read images (at least 5x5, like the pool's), not
 * kernels; conv weights are kernels (at most 3x3). */
static int image_like(const ir_shape *s) {
  return s->rank == 4 && s->dim[2] >= 5 && s->dim[3] >= 5;
}

/* A class n input is read as the parameters of batchnorm and its folds
 * alone, and they read nothing else there. */
static int params_ok(const en_node *n) {
  for (int j = 0; j < gops[n->gop].nin; j++) {
    uint8_t v = en_arg(n, j);
    int is_n = EN_IS_INPUT(v) && en_input_class(v) == C_N;
    if (is_n != (j == bn_arg(n->gop)))
      return 0;
  }
  return 1;
}

/* A convolution's image and kernel (at most 3x3, groups dividing C). */
static int conv_ok(const ir_shape *const *in) {
  return image_like(in[0]) && in[1]->rank == 4 && in[1]->dim[2] <= 3 &&
         in[1]->dim[3] <= 3 && in[1]->dim[1] <= in[0]->dim[1] &&
         in[0]->dim[1] % in[1]->dim[1] == 0;
}

static int kernel3x3(const ir_shape *w) {
  return w->rank == 4 && w->dim[2] == 3 && w->dim[3] == 3;
}

/* Restrictions of the generation set beyond the IR's shape rules. */
static int gen_restrict(const en_node *n, const ir_shape *const *in) {
  if (!params_ok(n))
    return 0;
  switch (n->gop) {
  case EN_BN: /* an image, or a valid convolution's output (its batch 2;
                 kernels have 4 output channels first) */
    return (image_like(in[0]) || (in[0]->rank == 4 && in[0]->dim[0] == 2)) &&
           in[0]->dim[1] == 4;
  case EN_BNFOLD_W:
    return in[0]->rank == 4 && in[0]->dim[0] == 4 && in[0]->dim[2] <= 3 &&
           in[0]->dim[3] <= 3;
  case EN_BNFOLD_B: return 1;
  case EN_BNFOLD_C: return in[0]->rank == 1 && in[0]->dim[0] == 4;
  case EN_MATMUL: return in[0]->rank == 2 && in[1]->rank == 2;
  case EN_MATMUL3:
  case EN_MATMUL3_RELU: return in[0]->rank == 3 && in[1]->rank == 2;
  case EN_MATMUL_ZR: /* r: the product's shape (en_node_op checks it) */
    return (in[0]->rank == 2 || in[0]->rank == 3) && in[1]->rank == 2;
  case EN_MATMULBR:
  case EN_MATMULBR_RELU: /* r: the product's shape (ir_infer checks it) */
  case EN_MATMULB:
  case EN_MATMULB_RELU:
  case EN_MATMULB_SIGMOID:
  case EN_MATMULB_TANH:
  case EN_MATMULB_GELU:
    return (in[0]->rank == 2 || in[0]->rank == 3) && in[1]->rank == 2 &&
           in[2]->rank == 1 && in[2]->dim[0] == in[1]->dim[1];
  case EN_CONVP:
  case EN_CONVP_RELU: /* 3x3 kernels: square, centred by pads 1, as the
                         graphs' strided ones are (a rule's kernel binds
                         any kernel) */
    return kernel3x3(in[1]) && conv_ok(in);
  case EN_CONVBP:
    if (!kernel3x3(in[1]))
      return 0; /* fall through */
  case EN_CONVBR:
  case EN_CONVBR_RELU:
  case EN_CONVB_CLIP6:
  case EN_CONVB:
  case EN_CONVB_RELU:
  case EN_CONVB_SIGMOID:
  case EN_CONVB_TANH:
  case EN_CONVB_GELU:
  case EN_CONVBV:
    if (in[2]->rank != 1 || in[2]->dim[0] != in[1]->dim[0])
      return 0; /* fall through */
  case EN_CONV:
  case EN_CONV_RELU:
  case EN_CONV_CLIP6:
  case EN_CONV_SIGMOID:
  case EN_CONV_TANH:
  case EN_CONV_GELU:
  case EN_CONVV:
  case EN_CONVV_RELU: return conv_ok(in);
  case EN_EWADD:
  case EN_EWMUL: return ir_shape_eq(in[0], in[1]);
  case EN_EWADD_B: /* a vector along the last axis of a rank >= 2 value */
    return in[0]->rank >= 2 && in[1]->rank == 1 &&
           in[1]->dim[0] == in[0]->dim[in[0]->rank - 1];
  case EN_SMUL: return in[1]->rank == 0;
  case EN_CONCAT0:
  case EN_SPLIT0: return in[0]->rank >= 1;
  case EN_CONCAT1:
  case EN_SPLIT1: return in[0]->rank >= 2;
  case EN_SPLIT2: return in[0]->rank >= 3;
  case EN_SPLIT3: {
    int ax = en_split3_axis(n->p);
    int s0 = en_split3_size(n->p, 0), s1 = en_split3_size(n->p, 1);
    return in[0]->rank > ax && s0 >= 1 && s1 >= 1 && s0 + s1 < in[0]->dim[ax];
  }
  case EN_TRANSPOSE:
  case EN_SOFTMAX: return in[0]->rank == 2;
  case EN_TRANSPOSE3: return in[0]->rank == 3;
  case EN_ATT_S:
    if (in[3]->rank != 0)
      return 0; /* fall through */
  case EN_ATT:  /* 2-D: the matmuls' axioms are the 2-D ones */
    return in[0]->rank == 2 && in[1]->rank == 2 && in[2]->rank == 2;
  case EN_AVGPOOL:
  case EN_MAXPOOL: return image_like(in[0]);
  case EN_ENLARGE:
    return in[0]->rank == 4 && in[0]->dim[2] <= 3 && in[0]->dim[3] <= 3 &&
           !(in[0]->dim[2] == 3 && in[0]->dim[3] == 3);
  default: return 1;
  }
}

static void set_list(ir_attrs *a, int n, const int64_t *v) {
  a->nlist = n;
  for (int i = 0; i < n; i++)
    a->list[i] = v[i];
}

static void set_window(ir_attrs *a) {
  a->kernel[0] = a->kernel[1] = 3;
  a->padmode = IR_PAD_SAME;
}

/* The IR attributes of n (shapes give conv's groups and split's sizes). */
static void gen_attrs(const en_node *n, const ir_shape *const *in,
                      ir_attrs *a) {
  ir_attrs_default(gops[n->gop].op, a);
  switch (n->gop) {
  case EN_CONVBR_RELU:
  case EN_CONVB_RELU:
  case EN_CONV_RELU: a->act = IR_ACT_RELU; /* fall through */
  case EN_CONVBR:
  case EN_CONVB:
  case EN_CONV: a->groups = (int32_t)(in[0]->dim[1] / in[1]->dim[1]); break;
  case EN_CONV_SIGMOID:
  case EN_CONV_TANH:
  case EN_CONV_GELU:
  case EN_CONVB_SIGMOID:
  case EN_CONVB_TANH:
  case EN_CONVB_GELU:
    a->act = tier2_act(n->gop);
    a->groups = (int32_t)(in[0]->dim[1] / in[1]->dim[1]);
    break;
  case EN_MATMULB_SIGMOID:
  case EN_MATMULB_TANH:
  case EN_MATMULB_GELU: a->act = tier2_act(n->gop); break;
  case EN_CONVV_RELU: a->act = IR_ACT_RELU; /* fall through */
  case EN_CONVBV:
  case EN_CONVV:
    a->groups = (int32_t)(in[0]->dim[1] / in[1]->dim[1]);
    a->padmode = IR_PAD_VALID;
    break;
  case EN_CONVP_RELU: a->act = IR_ACT_RELU; /* fall through */
  case EN_CONVBP:
  case EN_CONVP:
    a->groups = (int32_t)(in[0]->dim[1] / in[1]->dim[1]);
    a->stride[0] = a->stride[1] = 2;
    a->padmode = IR_PAD_EXPLICIT;
    for (int i = 0; i < 4; i++)
      a->pad[i] = 1;
    break;
  case EN_MATMULBR_RELU:
  case EN_MATMULB_RELU:
  case EN_MATMUL3_RELU: a->act = IR_ACT_RELU; break;
  case EN_CONV_CLIP6:
  case EN_CONVB_CLIP6:
    a->act = IR_ACT_CLIP;
    a->groups = (int32_t)(in[0]->dim[1] / in[1]->dim[1]);
    /* fall through */
  case EN_CLIP6: a->lo = 0, a->hi = 6; break;
  case EN_CONCAT1: a->axis = 1; break;
  case EN_SPLIT0:
  case EN_SPLIT1:
  case EN_SPLIT2: {
    a->axis = en_gop_split_axis(n->gop);
    int64_t s[2] = {n->p, in[0]->dim[a->axis] - n->p};
    set_list(a, 2, s);
    break;
  }
  case EN_SPLIT3: {
    a->axis = en_split3_axis(n->p);
    int64_t s0 = en_split3_size(n->p, 0), s1 = en_split3_size(n->p, 1);
    set_list(a, 3, (const int64_t[]){s0, s1, in[0]->dim[a->axis] - s0 - s1});
    break;
  }
  case EN_TRANSPOSE: set_list(a, 2, (const int64_t[]){1, 0}); break;
  case EN_TRANSPOSE3: set_list(a, 3, (const int64_t[]){1, 0, 2}); break;
  case EN_AVGPOOL: a->count_include_pad = 1; /* fall through */
  case EN_MAXPOOL: set_window(a); break;
  case EN_ENLARGE: a->kernel[0] = a->kernel[1] = 3; break;
  case EN_ICONV:
  case EN_IMM:
  case EN_ONES:
  case EN_CPOOL:
    set_list(a, classes[n->p].shape.rank, classes[n->p].shape.dim);
    break;
  default: break;
  }
}

int en_node_op(const en_node *n, const ir_shape *const *in, ir_opcode *op,
               ir_attrs *a, ir_shape out[EN_NSLOTS]) {
  int nin = gops[n->gop].nin;
  if (!gen_restrict(n, in))
    return -1;
  if (en_gop_split_axis(n->gop) >= 0 &&
      (n->p < 1 || n->p >= in[0]->dim[en_gop_split_axis(n->gop)]))
    return -1;
  *op = gops[n->gop].op;
  gen_attrs(n, in, a);
  if (bn_arg(n->gop) >= 0) /* several IR nodes (en_graph_build) */
    out[0] = n->gop == EN_BNFOLD_B ? classes[C_B].shape : *in[0];
  /* (EN_BNFOLD_C: its argument's shape, [4]) */
  else if (n->gop == EN_MATMUL_ZR) { /* the product, then r of its shape */
    if (ir_infer(*op, a, in, 2, out, NULL) != BASE_OK ||
        !ir_shape_eq(in[2], &out[0]))
      return -1;
  } else if (ir_infer(*op, a, in, nin, out, NULL) != BASE_OK)
    return -1;
  for (int i = 0; i < gops[n->gop].nout; i++)
    if (ir_shape_numel(&out[i]) > EN_MAX_NUMEL)
      return -1;
  return 0;
}

/* ---- compact graphs -------------------------------------------------------
 */

uint32_t en_value_cone(const en_graph *g, uint8_t v) {
  if (EN_IS_INPUT(v))
    return 0;
  int i = EN_NODE_OF(v);
  uint32_t m = 1u << i;
  for (int j = 0; j < gops[g->n[i].gop].nin; j++)
    m |= en_value_cone(g, en_arg(&g->n[i], j));
  return m;
}

const ir_shape *en_value_shape(uint8_t v, const ir_shape (*shapes)[EN_NSLOTS]) {
  if (EN_IS_INPUT(v))
    return &classes[en_input_class(v)].shape;
  return &shapes[EN_NODE_OF(v)][EN_SLOT_OF(v)];
}

int en_graph_shapes(const en_graph *g, ir_shape shapes[][EN_NSLOTS]) {
  for (int i = 0; i < g->nops; i++) {
    const en_node *n = &g->n[i];
    const ir_shape *in[EN_MAX_NIN] = {NULL};
    for (int j = 0; j < gops[n->gop].nin; j++) {
      uint8_t v = en_arg(n, j);
      if (!EN_IS_INPUT(v) && EN_NODE_OF(v) >= i)
        return -1;
      in[j] = en_value_shape(v, (const ir_shape(*)[EN_NSLOTS])shapes);
    }
    ir_opcode op;
    ir_attrs a;
    if (en_node_op(n, in, &op, &a, shapes[i]))
      return -1;
  }
  return 0;
}

int en_graph_outputs(const en_graph *g, uint8_t *out) {
  uint32_t read = 0; /* bit v - 32: node output v read by a later node */
  int k = 0;
  if (g->nops == 0) {
    out[0] = g->root;
    return 1;
  }
  for (int i = 0; i < g->nops; i++)
    for (int j = 0; j < gops[g->n[i].gop].nin; j++)
      if (!EN_IS_INPUT(en_arg(&g->n[i], j)))
        read |= (uint32_t)1 << (en_arg(&g->n[i], j) - 32);
  for (int i = 0; i < g->nops; i++)
    for (int s = 0; s < gops[g->n[i].gop].nout; s++)
      if (!(read >> (EN_VNODE(i, s) - 32) & 1))
        out[k++] = EN_VNODE(i, s);
  return k;
}

static void mark_used(uint8_t v, uint8_t used[EN_NCLASSES]) {
  int c = en_input_class(v), k = en_input_copy(v) + 1;
  if (used[c] < k)
    used[c] = (uint8_t)k;
}

void en_graph_used(const en_graph *g, uint8_t used[EN_NCLASSES]) {
  memset(used, 0, EN_NCLASSES);
  if (g->nops == 0)
    mark_used(g->root, used);
  for (int i = 0; i < g->nops; i++)
    for (int j = 0; j < gops[g->n[i].gop].nin; j++)
      if (EN_IS_INPUT(en_arg(&g->n[i], j)))
        mark_used(en_arg(&g->n[i], j), used);
}

en_graph en_graph_rename(const en_graph *g, const uint8_t map[EN_NINPUT_IDS]) {
  en_graph r = *g;
  if (r.nops == 0)
    r.root = map[r.root];
  for (int i = 0; i < r.nops; i++)
    for (int j = 0; j < gops[r.n[i].gop].nin; j++)
      if (EN_IS_INPUT(en_arg(&r.n[i], j)))
        en_arg_set(&r.n[i], j, map[en_arg(&r.n[i], j)]);
  return r;
}

/* A batchnorm's parameters as four weights [4] named NAME_scale, _bias,
 * _mean, _var (in that order: consecutive tensors); the first's index. */
static int bn_params(ir_graph *b, const char *name, base_diag *d) {
  static const char *part[4] = {"scale", "bias", "mean", "var"};
  int first = -1;
  for (int k = 0; k < 4; k++) {
    char nm[32];
    snprintf(nm, sizeof nm, "%s_%s", name, part[k]);
    int t = ir_add_tensor(b, nm, IR_T_WEIGHT, &classes[C_B].shape, d);
    if (t < 0 || (k && t != first + k))
      return -1;
    first = k ? first : t;
  }
  return first;
}

/* One node of a batchnorm gop's IR form; its first output, or -1. */
static int32_t add1(ir_graph *b, ir_opcode op, const int32_t *in, int nin,
                    const ir_attrs *a, int *node, base_diag *d) {
  ir_attrs def;
  if (!a)
    ir_attrs_default(op, &def);
  *node = ir_add_node(b, op, in, nin, a ? a : &def, NULL, d);
  return *node < 0 ? -1 : b->nodes[*node].out[0];
}

/* The IR form of batchnorm gop n reading x (a tensor; unused by
 * EN_BNFOLD_B) and the parameters from tensor p (scale, bias, mean, var):
 *   EN_BN        batchnorm(x, scale, bias, mean, var)
 *   EN_BNFOLD_W  transpose(batchnorm(transpose(x), scale, z, z, var)),
 *                z = mean - mean, the transposes perm [1,0,2,3]: x's
 *                output channels scaled by f = scale / sqrt(var + eps)
 *   EN_BNFOLD_B  reshape(batchnorm(r - r, scale, bias, mean, var), [4]),
 *                r = reshape(mean, [1,4]): bias - mean * f
 *   EN_BNFOLD_C  reshape(batchnorm(reshape(x, [1,4]), scale, bias, mean,
 *                var), [4]): (x - mean) * f + bias
 * (verify's axioms bn_fold_conv and bn_fold_convb state the fold in
 * these forms). Returns the last node's index, or -1. */
static int build_bn(ir_graph *b, int gop, int32_t x, int32_t p, base_diag *d) {
  int node = -1;
  ir_attrs bn, tr, r2, r1;
  ir_attrs_default(IR_OP_BATCHNORM, &bn);
  ir_attrs_default(IR_OP_TRANSPOSE, &tr);
  ir_attrs_default(IR_OP_RESHAPE, &r2);
  ir_attrs_default(IR_OP_RESHAPE, &r1);
  set_list(&tr, 4, (const int64_t[]){1, 0, 2, 3});
  set_list(&r2, 2, (const int64_t[]){1, 4});
  set_list(&r1, 1, (const int64_t[]){4});
  int32_t s = p, bias = p + 1, m = p + 2, v = p + 3, t, z, u;
  if (gop == EN_BN) {
    int32_t in[5] = {x, s, bias, m, v};
    return add1(b, IR_OP_BATCHNORM, in, 5, &bn, &node, d) < 0 ? -1 : node;
  }
  if (gop == EN_BNFOLD_W) {
    int32_t zin[2] = {m, m};
    if ((z = add1(b, IR_OP_EWSUB, zin, 2, NULL, &node, d)) < 0 ||
        (t = add1(b, IR_OP_TRANSPOSE, &x, 1, &tr, &node, d)) < 0)
      return -1;
    int32_t in[5] = {t, s, z, z, v};
    if ((u = add1(b, IR_OP_BATCHNORM, in, 5, &bn, &node, d)) < 0 ||
        add1(b, IR_OP_TRANSPOSE, &u, 1, &tr, &node, d) < 0)
      return -1;
    return node;
  }
  if ((t = add1(b, IR_OP_RESHAPE, gop == EN_BNFOLD_C ? &x : &m, 1, &r2, &node,
                d)) < 0)
    return -1;
  int32_t zin[2] = {t, t};
  if (gop == EN_BNFOLD_C)
    z = t;
  else if ((z = add1(b, IR_OP_EWSUB, zin, 2, NULL, &node, d)) < 0)
    return -1;
  int32_t in[5] = {z, s, bias, m, v};
  if ((u = add1(b, IR_OP_BATCHNORM, in, 5, &bn, &node, d)) < 0 ||
      add1(b, IR_OP_RESHAPE, &u, 1, &r1, &node, d) < 0)
    return -1;
  return node;
}

/* The IR form of EN_MATMUL_ZR reading args (a, w, r), the product's
 * output width nout: matmul(a, w, z, r), z = ewsub(o, o), o = const_ones
 * [nout] (the zero bias the lower stage gives a bias-free product's
 * residual epilogue). Returns the matmul's index, or -1. */
static int build_zres(ir_graph *b, const int32_t *args, int64_t nout,
                      base_diag *d) {
  int node = -1;
  ir_attrs on;
  ir_attrs_default(IR_OP_CONST_ONES, &on);
  set_list(&on, 1, &nout);
  int32_t o = add1(b, IR_OP_CONST_ONES, NULL, 0, &on, &node, d), z;
  int32_t zin[2] = {o, o};
  if (o < 0 || (z = add1(b, IR_OP_EWSUB, zin, 2, NULL, &node, d)) < 0)
    return -1;
  int32_t in[4] = {args[0], args[1], z, args[2]};
  return add1(b, IR_OP_MATMUL, in, 4, NULL, &node, d) < 0 ? -1 : node;
}

/* Adds g's inputs to b in id order; tensor index of input id v in tix[v]. */
static int build_inputs(const en_graph *g, ir_graph *b, int32_t *tix,
                        base_diag *d) {
  int use[EN_NINPUT_IDS] = {0};
  if (g->nops == 0)
    use[g->root] = 1;
  for (int i = 0; i < g->nops; i++)
    for (int j = 0; j < gops[g->n[i].gop].nin; j++)
      if (EN_IS_INPUT(en_arg(&g->n[i], j)))
        use[en_arg(&g->n[i], j)] = 1;
  for (int v = 0; v < EN_NINPUT_IDS; v++) {
    char name[16];
    if (!use[v])
      continue;
    en_input_name(v, name, sizeof name);
    if (en_input_class(v) == C_N) {
      if ((tix[v] = bn_params(b, name, d)) < 0)
        return -1;
      continue;
    }
    tix[v] = ir_add_tensor(b, name, IR_T_INPUT,
                           &classes[en_input_class(v)].shape, d);
    if (tix[v] < 0)
      return -1;
  }
  return 0;
}

/* Tensor index of value v in b. */
static int32_t tensor_of(const ir_graph *b, const int32_t *tix,
                         const int32_t *nodeix, uint8_t v) {
  if (EN_IS_INPUT(v))
    return tix[v];
  return b->nodes[nodeix[EN_NODE_OF(v)]].out[EN_SLOT_OF(v)];
}

ir_graph *en_graph_build(const en_graph *g, const uint8_t *outs, int nouts,
                         const char *name, base_diag *d) {
  ir_graph *b = ir_graph_new(name);
  int32_t tix[EN_NINPUT_IDS], nodeix[EN_MAX_OPS];
  if (!b) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  if (build_inputs(g, b, tix, d))
    goto fail;
  for (int i = 0; i < g->nops; i++) {
    const en_node *n = &g->n[i];
    const ir_shape *in[EN_MAX_NIN] = {NULL};
    int32_t args[EN_MAX_NIN];
    ir_shape out[EN_NSLOTS];
    ir_opcode op;
    ir_attrs a;
    for (int j = 0; j < gops[n->gop].nin; j++) {
      args[j] = tensor_of(b, tix, nodeix, en_arg(n, j));
      in[j] = &b->tensors[args[j]].shape;
    }
    if (en_node_op(n, in, &op, &a, out)) {
      base_diag_set(d, BASE_ERR_SHAPE, 0, 0, "node %d (%s) is not shape-valid",
                    i, gops[n->gop].name);
      goto fail;
    }
    if (n->gop == EN_MATMUL_ZR) {
      if ((nodeix[i] = build_zres(b, args, out[0].dim[out[0].rank - 1], d)) < 0)
        goto fail;
      continue;
    }
    int k = bn_arg(n->gop);
    if (k >= 0) {
      if ((nodeix[i] = build_bn(b, n->gop, k ? args[0] : -1, args[k], d)) < 0)
        goto fail;
      continue;
    }
    if ((nodeix[i] = ir_add_node(b, op, args, gops[n->gop].nin, &a, NULL, d)) <
        0)
      goto fail;
  }
  for (int i = 0; i < nouts; i++)
    if (ir_add_output(b, tensor_of(b, tix, nodeix, outs[i]), d) != BASE_OK)
      goto fail;
  return b;
fail:
  ir_graph_free(b);
  return NULL;
}

static size_t value_str(uint8_t v, char *buf, size_t n) {
  if (EN_IS_INPUT(v)) {
    en_input_name(v, buf, n);
    return strlen(buf);
  }
  if (!EN_SLOT_OF(v))
    return (size_t)snprintf(buf, n, "t%d", EN_NODE_OF(v));
  return (size_t)snprintf(buf, n, "t%d.%d", EN_NODE_OF(v), EN_SLOT_OF(v));
}

char *en_graph_str(const en_graph *g, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  if (g->nops == 0)
    value_str(g->root, buf, n);
  for (int i = 0; i < g->nops && k + 1 < n; i++) {
    const en_node *nd = &g->n[i];
    k += (size_t)snprintf(buf + k, n - k, "%st%d=%s(", i ? "; " : "", i,
                          gops[nd->gop].name);
    for (int j = 0; j < gops[nd->gop].nin && k + 1 < n; j++) {
      if (j && k + 1 < n)
        buf[k++] = ',', buf[k] = 0;
      k += value_str(en_arg(nd, j), buf + k, n - k);
    }
    if (k + 1 < n)
      k += (size_t)snprintf(buf + k, n - k, ")");
    if (nd->p && gops[nd->gop].nin < 3 && k + 1 < n)
      k += (size_t)snprintf(buf + k, n - k, "[%d]", nd->p);
  }
  return buf;
}
