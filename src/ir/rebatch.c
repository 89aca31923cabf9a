/* rebatch.c: a graph with another batch size (ir_rebatch).
 *
 * The batch is dim 0 of the graph inputs: the old batch b0 is the first
 * input's dim 0, and every input whose dim 0 equals it gets the new batch
 * b1 there (an input with another dim 0 is a parameter fed as an input, as
 * ONNX exports without weights have them: convnext's biases).
 *
 * The batch is then tracked through every node as a placement: the axis
 * of each tensor that carries it and where inside that axis it sits (the
 * axis is outer * b0 * inner in the old graph; exporters fold the batch
 * into other dimensions: ViT's [tokens, 1*heads, 64] head split, Swin's
 * [1*64 windows, 49, 96]). Each operator has a rule (rb_node): element-wise
 * operators broadcast it, transpose moves it, a matmul, softmax,
 * layernorm, reduction, convolution, slice, pad, concat or split must not
 * compute across it. A reshape keeps the element order, so the batch sits
 * at the same flat position in its output: with b0 = 1 that position can
 * fall between two axes, and the batch then joins one of them (a size-1
 * axis there, the next axis as its outer factor, the previous one as its
 * inner factor). Those choices are searched depth first with
 * backtracking: a choice that makes a later operator compute across the
 * batch is undone. Any placement that passes every rule gives, for each
 * sample, what the old graph gives on it: reshapes keep the element order
 * and no operator mixes samples.
 *
 * The copy then gets the new batch in each reshape target's chosen axis
 * and in the ends of slices that keep the whole batch; a weight
 * concatenated with batched values (ViT's class token, [1,1,768], folded
 * from an Expand to batch 1 at import) is broadcast to the new batch
 * (ewmul with const_ones); one folded at batch b0 ([16,1,768]) is sliced
 * to its first rows for a smaller batch (the check's later rounds), or,
 * every row the same, its first row broadcast for a larger one. When no
 * placement passes, the message names the node the search reached
 * furthest and why.
 */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "ir.h"

/* Where a tensor carries the batch: axis (-1: it does not) and the
 * product of the axis's factors inside the batch (old graph). */
typedef struct rb_place {
  int32_t axis;
  int64_t in;
} rb_place;

typedef struct rb_ctx {
  const ir_graph *g;
  int64_t b0, b1;
  rb_place *p;    /* per tensor */
  int32_t *pick;  /* per node: the reshape candidate taken */
  int32_t *npick; /* per node: how many candidates it had */
  char why[160];
} rb_ctx;

#define RB_FAIL(c, ...) (snprintf((c)->why, sizeof(c)->why, __VA_ARGS__), -1)

static const ir_shape *shp(const rb_ctx *c, int t) {
  return &c->g->tensors[t].shape;
}

/* The old batch: dim 0 of the first graph input (0 when it has none). */
static int64_t old_batch(const ir_graph *g) {
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind == IR_T_INPUT)
      return g->tensors[t].shape.rank ? g->tensors[t].shape.dim[0] : 0;
  return 0;
}

static int64_t prod(const ir_shape *s, int from, int to) {
  int64_t v = 1;
  for (int i = from; i < to; i++)
    v *= s->dim[i];
  return v;
}

/* Element-wise with broadcasting: inputs that carry the batch agree on
 * its (right-aligned) axis; the others are 1 there. */
static int rb_ew(rb_ctx *c, const ir_node *n, int first, rb_place *out) {
  const ir_shape *o = shp(c, n->out[0]);
  rb_place q = {-1, 0};
  for (int k = first; k < n->nin; k++) {
    rb_place pk = c->p[n->in[k]];
    if (pk.axis < 0)
      continue;
    pk.axis += o->rank - shp(c, n->in[k])->rank;
    if (q.axis >= 0 && (q.axis != pk.axis || q.in != pk.in))
      return RB_FAIL(c, "inputs carry the batch on different axes");
    q = pk;
  }
  for (int k = 0; q.axis >= 0 && k < n->nin; k++) {
    const ir_shape *s = shp(c, n->in[k]);
    int a = q.axis - (o->rank - s->rank);
    if (c->p[n->in[k]].axis < 0 && a >= 0 && s->dim[a] != 1)
      return RB_FAIL(c,
                     "input %d [..%lld..] does not follow the batch on "
                     "axis %d",
                     k + 1, (long long)s->dim[a], a);
  }
  *out = q;
  return 0;
}

/* Reshape candidates: output axes j where the batch can sit. */
static int rb_reshape_cands(const rb_ctx *c, const ir_node *n, rb_place *cand) {
  const ir_shape *x = shp(c, n->in[0]), *o = shp(c, n->out[0]);
  rb_place p = c->p[n->in[0]];
  int64_t s = p.in * prod(x, p.axis + 1, x->rank); /* flat stride */
  rb_place pref[4][IR_MAX_RANK];
  int np[4] = {0};
  for (int j = 0; j < o->rank; j++) {
    int64_t r = prod(o, j + 1, o->rank);
    if (s % r)
      continue;
    int64_t in = s / r;
    if (o->dim[j] % (c->b0 * in))
      continue;
    int64_t outer = o->dim[j] / (c->b0 * in);
    /* order: a size-b0 axis alone, the batch outermost in its axis
     * ([B*heads, ..]), innermost ([tokens*B, ..]), in the middle */
    int k = outer == 1 && in == 1 ? 0 : outer == 1 ? 1 : in == 1 ? 2 : 3;
    pref[k][np[k]++] = (rb_place){j, in};
  }
  int m = 0;
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < np[k]; i++)
      cand[m++] = pref[k][i];
  return m;
}

static int rb_matmul(rb_ctx *c, const ir_node *n, rb_place *out) {
  rb_place a = c->p[n->in[0]], b = c->p[n->in[1]];
  int r = shp(c, n->in[0])->rank, rb = shp(c, n->in[1])->rank;
  if (n->nin > 2 && c->p[n->in[2]].axis >= 0)
    return RB_FAIL(c, "its bias carries the batch");
  if (a.axis == r - 1 || b.axis == rb - 2)
    return RB_FAIL(c, "it sums over the batch axis");
  if (b.axis < 0) {
    if (rb == r && a.axis < r - 2)
      return RB_FAIL(c, "b does not follow the batch");
    *out = a;
    return 0;
  }
  if (b.axis == rb - 1 && a.axis < 0) {
    *out = (rb_place){r - 1, b.in};
    return 0;
  }
  if (b.axis < rb - 2 && a.axis == b.axis && a.in == b.in) {
    *out = a;
    return 0;
  }
  return RB_FAIL(c, "a and b carry the batch on axes that do not match");
}

/* Whether weight t, concatenated along another axis with values that
 * carry the batch on axis a (the whole axis: b0 rows, in 1), holds one
 * row per sample there: ViT's class token expanded to the batch and
 * folded at import when the export fixed the batch ([16,1,768]). The new
 * graph reads its first b1 rows where b1 <= b0 (what the old graph gives
 * its first b1 samples, whatever the values), else its first row
 * broadcast, which needs every row the same (known values). */
static int batch_weight(const rb_ctx *c, int t, const ir_node *n, rb_place q) {
  const ir_tensor *x = &c->g->tensors[t];
  const ir_shape *s = &x->shape, *o = shp(c, n->out[0]);
  if (x->kind != IR_T_WEIGHT || q.in != 1 || c->b0 < 2 || s->rank != o->rank ||
      s->dim[q.axis] != c->b0 || o->dim[q.axis] != c->b0)
    return 0;
  if (c->b1 <= c->b0)
    return 1;
  if (!x->data)
    return 0;
  int64_t row = ir_shape_numel(s) / c->b0, outer = prod(s, 0, q.axis);
  int64_t inner = row / outer; /* elements of one row in one outer block */
  for (int64_t b = 0; b < outer; b++)
    for (int64_t r = 1; r < c->b0; r++)
      if (memcmp(x->data + (b * c->b0 + r) * inner, x->data + b * c->b0 * inner,
                 sizeof(float) * (size_t)inner))
        return 0;
  return 1;
}

static int rb_concat(rb_ctx *c, const ir_node *n, rb_place *out) {
  rb_place q = {-1, 0};
  for (int k = 0; k < n->nin; k++) {
    rb_place pk = c->p[n->in[k]];
    if (pk.axis < 0)
      continue;
    if (q.axis >= 0 && (q.axis != pk.axis || q.in != pk.in))
      return RB_FAIL(c, "inputs carry the batch on different axes");
    q = pk;
  }
  if (q.axis == n->a.axis)
    return RB_FAIL(c, "it concatenates along the batch axis");
  for (int k = 0; k < n->nin; k++)
    if (c->p[n->in[k]].axis < 0 &&
        (c->b0 != 1 || shp(c, n->in[k])->dim[q.axis] != 1) &&
        !batch_weight(c, n->in[k], n, q))
      return RB_FAIL(c, "input %d does not follow the batch", k + 1);
  *out = q;
  return 0;
}

/* Indices ix viewed around axis a as [outer, b0, rest] (a's size b0 * m,
 * the batch its outer factor): *outer and *rest. */
static void index_blocks(const rb_ctx *c, const ir_tensor *ix, int a,
                         int64_t *outer, int64_t *rest) {
  *outer = prod(&ix->shape, 0, a);
  *rest = ir_shape_numel(&ix->shape) / *outer / c->b0;
}

/* gather_rows_axis for an old batch b0 > 1 (a graph rebatched before, as
 * batch_rows made its indices): the first axis of the indices whose size
 * b0 divides where, as [outer, b0, rest], sample b's indices are sample
 * 0's plus b * x.in and sample 0's are rows of one sample, or -1. */
static int gather_rows_axis_batched(const rb_ctx *c, const ir_tensor *ix,
                                    rb_place x) {
  for (int a = 0; a < ix->shape.rank; a++) {
    if (ix->shape.dim[a] % c->b0)
      continue;
    int64_t outer, rest, ok = 1;
    index_blocks(c, ix, a, &outer, &rest);
    for (int64_t o = 0; ok && o < outer; o++)
      for (int64_t k = 0; ok && k < rest; k++) {
        float v0 = ix->data[o * c->b0 * rest + k];
        ok = v0 >= 0 && v0 < (float)x.in;
        for (int64_t b = 1; ok && b < c->b0; b++)
          ok = ix->data[(o * c->b0 + b) * rest + k] == v0 + (float)(b * x.in);
      }
    if (ok)
      return a;
  }
  return -1;
}

/* The axis of a gather's constant indices that takes the batch when the
 * gather reads rows of a batch folded into its axis (rb_gather), or -1:
 * the batch of the old graph is 1, the data's axis is exactly that batch's
 * rows (x.in of them), and every index is one of those rows. The batch
 * goes to the indices' first axis of size 1, else it becomes the outer
 * factor of their axis 0. Hugging Face's SDPA mask, exported at batch 1:
 * the flattened [batch*seq] mask gathered at indices batch*seq + position
 * that the import computed for batch 1. */
static int gather_rows_axis(const rb_ctx *c, const ir_node *n, rb_place x) {
  const ir_tensor *ix = &c->g->tensors[n->in[1]];
  if (ix->kind != IR_T_WEIGHT || !ix->data ||
      shp(c, n->in[0])->dim[x.axis] != c->b0 * x.in)
    return -1;
  if (c->b0 > 1)
    return gather_rows_axis_batched(c, ix, x);
  for (int64_t k = 0; k < ir_shape_numel(&ix->shape); k++)
    if (ix->data[k] < 0 || ix->data[k] >= (float)x.in)
      return -1;
  for (int a = 0; a < ix->shape.rank; a++)
    if (ix->shape.dim[a] == 1)
      return a;
  return ix->shape.rank ? 0 : -1;
}

static int rb_gather(rb_ctx *c, const ir_node *n, rb_place *out) {
  rb_place x = c->p[n->in[0]], i = c->p[n->in[1]];
  int ri = shp(c, n->in[1])->rank;
  if (x.axis >= 0 && i.axis >= 0)
    return RB_FAIL(c, "data and indices both carry the batch");
  if (x.axis == n->a.axis) {
    int ia = gather_rows_axis(c, n, x);
    if (ia < 0)
      return RB_FAIL(c, "it gathers along the batch axis");
    *out = (rb_place){n->a.axis + ia, shp(c, n->in[1])->dim[ia] / c->b0};
    return 0;
  }
  if (x.axis >= 0)
    *out = (rb_place){x.axis < n->a.axis ? x.axis : x.axis - 1 + ri, x.in};
  else
    *out = (rb_place){n->a.axis + i.axis, i.in};
  return 0;
}

static int rb_reduce(rb_ctx *c, const ir_node *n, rb_place *out) {
  rb_place x = c->p[n->in[0]];
  int below = 0;
  for (int i = 0; i < n->a.nlist; i++) {
    if (n->a.list[i] == x.axis)
      return RB_FAIL(c, "it reduces over the batch axis");
    below += n->a.list[i] < x.axis;
  }
  *out = (rb_place){n->a.keepdims ? x.axis : x.axis - below, x.in};
  return 0;
}

/* A lowered conv2d's or matmul's residual input r (its fourth, of the
 * result's shape: src/fuse/lower.h) carries the batch as the result does. */
static int rb_residual(rb_ctx *c, const ir_node *n, rb_place o) {
  if (n->nin != 4 || (n->op != IR_OP_CONV2D && n->op != IR_OP_MATMUL))
    return 0;
  rb_place r = c->p[n->in[3]];
  if (r.axis != o.axis || (o.axis >= 0 && r.in != o.in))
    return RB_FAIL(c, "its residual input does not follow the batch");
  return 0;
}

/* Attention's row layout: q, k and v carry the batch alike on their rows'
 * batch axis (seqfirst: 1, else 0), whole or folded into it (Swin's
 * [B*64 windows, 49, C]: the rows' batch items are independent whatever
 * they hold), a bias on the scores' first axis alike; the result
 * [B,S,H*E] on axis 0 as q had it (cols, hdim and heads do not depend on
 * it). */
static int rb_att_rows(rb_ctx *c, const ir_node *n, rb_place x, rb_place *out) {
  int sf = n->a.axis;
  for (int k = 0; k < 3; k++)
    if (c->p[n->in[k]].axis != sf || c->p[n->in[k]].in != x.in)
      return RB_FAIL(c, "q, k and v do not carry the batch on the rows' "
                        "batch axis");
  if (n->nin > 4 && c->p[n->in[4]].axis >= 0 &&
      (c->p[n->in[4]].axis + 4 - shp(c, n->in[4])->rank != 0 ||
       c->p[n->in[4]].in != x.in))
    return RB_FAIL(c, "its bias carries the batch on another axis");
  const ir_shape *bs = n->nin > 4 ? shp(c, n->in[4]) : NULL;
  if (bs && c->p[n->in[4]].axis < 0 && bs->rank == 4 && bs->dim[0] != 1 &&
      (c->b0 != 1 || bs->dim[0] != x.in))
    return RB_FAIL(c, "its bias [%lld,..] does not follow the batch",
                   (long long)bs->dim[0]);
  *out = (rb_place){0, x.in};
  return 0;
}

/* Why body operator o of a move program (its input's shape s) would move
 * a batch held outermost in axis 0 out of there, or NULL: a transpose of
 * axis 0, a reshape whose axis 0 the old batch does not divide, a slice
 * or pad of axis 0 but the whole of it, a concat along it. */
static const char *move_op_bad(const rb_ctx *c, const ir_body_op *o,
                               const ir_shape *s, const ir_shape *y) {
  if (o->op == IR_OP_TRANSPOSE && o->a.list[0] != 0)
    return "transposes axis 0";
  if (o->op == IR_OP_RESHAPE && (!y->rank || y->dim[0] % c->b0))
    return "reshapes the batch off axis 0";
  if (o->op == IR_OP_SLICE && (o->a.list[0] || o->a.list2[0] != s->dim[0]))
    return "slices axis 0";
  if (o->op == IR_OP_PAD && (o->a.list[0] || o->a.list[s->rank]))
    return "pads axis 0";
  if (o->op == IR_OP_CONCAT && o->a.axis == 0)
    return "concatenates along axis 0";
  return NULL;
}

/* A move node (src/fuse/lower_chain.c): its program keeps the batch when
 * the input holds it outermost in axis 0 (each sample one contiguous
 * block, axis 0 = b0 * in) and no program operator moves it from there
 * (move_op_bad): then each sample's block maps to the output's, which
 * holds the batch outermost in its axis 0. */
static int rb_move(rb_ctx *c, const ir_node *n, rb_place x, rb_place *out) {
  const ir_body *b = ir_body_get(n->a.body);
  const ir_shape *in = shp(c, n->in[0]);
  ir_shape sh[IR_MOVE_MAX_OPS];
  if (!b || b->nops > IR_MOVE_MAX_OPS || ir_body_shapes(b, &in, sh, NULL))
    return RB_FAIL(c, "its program cannot be read");
  if (x.axis != 0 || in->dim[0] != c->b0 * x.in)
    return RB_FAIL(c, "its input does not hold the batch outermost in axis 0");
  for (int i = 0; i < b->nops; i++) {
    const ir_body_op *o = &b->ops[i];
    const char *why =
        move_op_bad(c, o, o->in[0] < 0 ? in : &sh[o->in[0]], &sh[i]);
    if (why)
      return RB_FAIL(c, "program operator %d (%s) %s", i + 1,
                     ir_op(o->op)->name, why);
  }
  *out = (rb_place){0, sh[b->nops - 1].dim[0] / c->b0};
  return 0;
}

/* Sets the placement of n's outputs from its inputs'; -1 with c->why. */
static int rb_node(rb_ctx *c, int i) {
  const ir_node *n = &c->g->nodes[i];
  rb_place x = n->nin ? c->p[n->in[0]] : (rb_place){-1, 0}, o = {-1, 0};
  int any = 0, r = n->nin ? shp(c, n->in[0])->rank : 0;
  for (int k = 0; k < n->nin; k++)
    any |= c->p[n->in[k]].axis >= 0;
  c->npick[i] = 0;
  int st = 0;
  if (n->op == IR_OP_CONST_ONES && c->b0 > 1 && n->a.nlist &&
      n->a.list[0] % c->b0 == 0) {
    c->npick[i] = 2; /* ones of a graph rebatched before: they may */
    if (c->pick[i] == 1)
      o = (rb_place){0, n->a.list[0] / c->b0};
  } else if (!any)
    ;
  else if (n->op == IR_OP_RESHAPE) {
    rb_place cand[IR_MAX_RANK * 4];
    int m = rb_reshape_cands(c, n, cand);
    c->npick[i] = m;
    if (!m)
      st = RB_FAIL(c, "no axis of the target can hold the batch");
    else
      o = cand[c->pick[i] < m ? c->pick[i] : 0];
  } else if (n->op == IR_OP_TRANSPOSE) {
    for (int j = 0; j < r; j++)
      if (n->a.list[j] == x.axis)
        o = (rb_place){j, x.in};
  } else if (n->op == IR_OP_MATMUL) {
    st = rb_matmul(c, n, &o);
    st = st ? st : rb_residual(c, n, o);
  } else if (n->op == IR_OP_CONCAT || n->op == IR_OP_CONCAT_SHUFFLE) {
    ir_node cn = *n; /* concat_shuffle: a concat along the channels */
    if (n->op == IR_OP_CONCAT_SHUFFLE)
      cn.a.axis = 1;
    st = rb_concat(c, &cn, &o);
  } else if (n->op == IR_OP_GATHER)
    st = rb_gather(c, n, &o);
  else if (n->op == IR_OP_REDUCE_MEAN)
    st = rb_reduce(c, n, &o);
  else if (n->op == IR_OP_SLICE) {
    if (n->a.list[x.axis] != 0 ||
        n->a.list2[x.axis] != shp(c, n->in[0])->dim[x.axis])
      st = RB_FAIL(c, "it slices the batch axis");
    o = x;
  } else if (n->op == IR_OP_SPLIT) {
    if (n->a.axis == x.axis)
      st = RB_FAIL(c, "it splits the batch axis");
    o = x;
  } else if (n->op == IR_OP_PAD) {
    if (n->a.list[x.axis] || n->a.list[x.axis + r])
      st = RB_FAIL(c, "it pads the batch axis");
    o = x;
  } else if (n->op == IR_OP_SOFTMAX) {
    if (n->a.axis == x.axis)
      st = RB_FAIL(c, "it normalises along the batch axis");
    o = x;
  } else if (n->op == IR_OP_LAYERNORM) {
    if (x.axis >= n->a.axis || (any && x.axis < 0))
      st = RB_FAIL(c, "it normalises along the batch axis");
    st = st ? st : rb_ew(c, n, 0, &o);
  } else if (n->op == IR_OP_CONV2D || n->op == IR_OP_BATCHNORM ||
             n->op == IR_OP_SE) {
    if (x.axis != 0)
      st = RB_FAIL(c, "the batch is not on axis 0 of its input");
    int np = n->op == IR_OP_CONV2D && n->nin == 4 ? 3 : n->nin; /* r: below */
    for (int k = 1; !st && k < np; k++)
      if (c->p[n->in[k]].axis >= 0)
        st = RB_FAIL(c, "a parameter carries the batch");
    o = x;
    st = st ? st : rb_residual(c, n, o);
  } else if (n->op == IR_OP_AVGPOOL || n->op == IR_OP_MAXPOOL ||
             n->op == IR_OP_GLOBAL_AVGPOOL) {
    if (x.axis > 1)
      st = RB_FAIL(c, "the batch is on a pooled axis");
    o = x;
  } else if (n->op == IR_OP_MOVE) {
    st = rb_move(c, n, x, &o);
  } else if (n->op == IR_OP_ATTENTION && n->a.groups > 0) {
    st = rb_att_rows(c, n, x, &o);
  } else if (n->op == IR_OP_ATTENTION) {
    for (int k = 0; !st && k < 3; k++)
      if (c->p[n->in[k]].axis != x.axis || c->p[n->in[k]].in != x.in ||
          x.axis >= r - 2)
        st = RB_FAIL(c, "q, k and v do not carry the batch on one leading "
                        "axis");
    if (!st && n->nin > 4 && c->p[n->in[4]].axis >= 0) { /* a batched bias */
      const rb_place *b = &c->p[n->in[4]];
      if (b->in != x.in || b->axis + r - shp(c, n->in[4])->rank != x.axis)
        st = RB_FAIL(c, "its bias carries the batch on another axis");
    }
    o = x;
  } else if (ir_op(n->op)->flags & IR_OPF_BODY || n->op == IR_OP_FUSED ||
             n->op == IR_OP_WHERE || n->op == IR_OP_EQUAL ||
             n->op == IR_OP_NOT || n->op == IR_OP_CAST) {
    st = rb_ew(c, n, 0, &o);
    const ir_body *b = n->op == IR_OP_FUSED ? ir_body_get(n->a.body) : NULL;
    if (!st && b && ir_body_row(b) && o.axis == shp(c, n->out[0])->rank - 1)
      st = RB_FAIL(c, "its row reduction runs along the batch axis");
  } else
    st = RB_FAIL(c, "no batch rule for %s", ir_op(n->op)->name);
  for (int k = 0; k < n->nout; k++)
    c->p[n->out[k]] = o;
  return st;
}

/* Depth-first over the reshape choices; the furthest failure is kept in
 * *bad and its reason in why. Gives up (with that failure) after 64 node
 * visits per node plus 100000: a graph that cannot follow the batch
 * fails in well under a second (ViT-B/16 with a softmax across the batch
 * appended: 0.3 s). */
static int rb_search(rb_ctx *c, int *bad, char *why, size_t nwhy) {
  const ir_graph *g = c->g;
  long budget = 64L * g->nnodes + 100000; /* node visits */
  *bad = -1;
  int i = 0;
  while (i < g->nnodes) {
    if (--budget < 0)
      return -1;
    if (!rb_node(c, i)) {
      i++;
      continue;
    }
    if (i >= *bad) {
      *bad = i;
      snprintf(why, nwhy, "%s", c->why);
    }
    int j = i - 1;
    while (j >= 0 && c->pick[j] + 1 >= c->npick[j])
      j--;
    if (j < 0)
      return -1;
    c->pick[j]++;
    for (int k = j + 1; k <= i; k++)
      c->pick[k] = 0;
    i = j;
  }
  return 0;
}

static int add_leaf(const rb_ctx *c, int t, ir_graph *h, base_diag *d) {
  const ir_tensor *x = &c->g->tensors[t];
  ir_shape s = x->shape;
  if (c->p[t].axis == 0)
    s.dim[0] = c->b1;
  int id = ir_add_tensor(h, x->name, x->kind, &s, d);
  if (id >= 0)
    h->tensors[id].dtype = x->dtype;
  if (id >= 0 && x->data) {
    size_t n = sizeof(float) * (size_t)ir_shape_numel(&s);
    float *copy = base_arena_alloc(h->arena, n);
    if (!copy) {
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      return -1;
    }
    memcpy(copy, x->data, n);
    h->tensors[id].data = copy;
  }
  return id;
}

/* A node named after n's output plus suffix k; its output, or -1. */
static int32_t add_named(const rb_ctx *c, const ir_node *n, const char *sfx,
                         ir_opcode op, const int32_t *in, int nin,
                         const ir_attrs *a, ir_graph *h, base_diag *d) {
  char name[300];
  const char *nm[1] = {name};
  snprintf(name, sizeof name, "%s.%s", c->g->tensors[n->out[0]].name, sfx);
  int id = ir_add_node(h, op, in, nin, a, nm, d);
  return id < 0 ? -1 : h->nodes[id].out[0];
}

/* The new graph's tensor for input k of concat n: a tensor that does not
 * carry the batch broadcast to it (ewmul by ones); a batch_weight sliced
 * to its first b1 rows, or its first row broadcast. */
static int32_t broadcast_in(const rb_ctx *c, const ir_node *n, int k,
                            const int32_t *map, ir_graph *h, base_diag *d) {
  int t = n->in[k], axis = c->p[n->out[0]].axis;
  if (c->p[t].axis >= 0 || n->op != IR_OP_CONCAT || axis < 0)
    return map[t];
  const ir_shape *s = shp(c, t);
  ir_attrs a;
  int32_t src = map[t];
  if (s->dim[axis] != 1) { /* batch_weight: its first rows, or first row */
    int64_t keep = c->b1 <= c->b0 ? c->b1 : 1;
    ir_attrs_default(IR_OP_SLICE, &a);
    a.nlist = a.nlist2 = s->rank;
    for (int i = 0; i < s->rank; i++)
      a.list[i] = 0, a.list2[i] = i == axis ? keep : s->dim[i];
    int32_t x[1] = {map[t]};
    char sfx[32]; /* by the input's index, as the ones and products below */
    snprintf(sfx, sizeof sfx, "%s%d", keep == 1 ? "row0_" : "rows", k);
    src = add_named(c, n, sfx, IR_OP_SLICE, x, 1, &a, h, d);
    if (src < 0 || keep == c->b1)
      return src;
  }
  ir_attrs_default(IR_OP_CONST_ONES, &a);
  a.nlist = s->rank;
  for (int i = 0; i < s->rank; i++)
    a.list[i] = i == axis ? c->b1 : 1;
  char sfx[2][32];
  snprintf(sfx[0], sizeof sfx[0], "ones%d", k);
  snprintf(sfx[1], sizeof sfx[1], "batch%d", k);
  int32_t in[2] = {
      src, add_named(c, n, sfx[0], IR_OP_CONST_ONES, NULL, 0, &a, h, d)};
  if (in[1] < 0)
    return -1;
  ir_attrs_default(IR_OP_EWMUL, &a);
  return add_named(c, n, sfx[1], IR_OP_EWMUL, in, 2, &a, h, d);
}

/* The bias of a row-layout attention n for the new batch: one that holds
 * a batch-1 graph's windows ([64,H,S,S] over Swin's [1*64, S, C] rows,
 * rb_att_rows) repeated for each sample: [1,64,H,S,S] times ones
 * [b1,1,1,1,1], reshaped to [b1*64,H,S,S]. Any other bias as it is. */
static int32_t tiled_bias(const rb_ctx *c, const ir_node *n, int32_t bias,
                          ir_graph *h, base_diag *d) {
  const ir_shape *s = shp(c, n->in[4]);
  if (n->op != IR_OP_ATTENTION || n->a.groups <= 0 ||
      c->p[n->in[4]].axis >= 0 || s->rank != 4 || s->dim[0] == 1 ||
      c->p[n->out[0]].axis < 0)
    return bias;
  ir_attrs a;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = 5;
  a.list[0] = 1;
  for (int i = 0; i < 4; i++)
    a.list[i + 1] = s->dim[i];
  int32_t in[2] = {add_named(c, n, "bias1", IR_OP_RESHAPE, &bias, 1, &a, h, d),
                   -1};
  ir_attrs_default(IR_OP_CONST_ONES, &a);
  a.nlist = 5;
  for (int i = 0; i < 5; i++)
    a.list[i] = i ? 1 : c->b1;
  if (in[0] < 0 || (in[1] = add_named(c, n, "ones", IR_OP_CONST_ONES, NULL, 0,
                                      &a, h, d)) < 0)
    return -1;
  ir_attrs_default(IR_OP_EWMUL, &a);
  int32_t t = add_named(c, n, "biasb", IR_OP_EWMUL, in, 2, &a, h, d);
  ir_attrs_default(IR_OP_RESHAPE, &a);
  a.nlist = 4;
  for (int i = 0; i < 4; i++)
    a.list[i] = i ? s->dim[i] : s->dim[0] * c->b1;
  return t < 0 ? -1 : add_named(c, n, "bias", IR_OP_RESHAPE, &t, 1, &a, h, d);
}

/* For a gather of a batch's rows (gather_rows_axis): its indices for the
 * new batch, sample b's those of the old graph plus b * rows, as the outer
 * factor of the indices' axis chosen; the new tensor's id, or -1. */
static int32_t batch_rows(const rb_ctx *c, const ir_node *n, ir_graph *h,
                          base_diag *d) {
  rb_place x = c->p[n->in[0]];
  int ia = gather_rows_axis(c, n, x);
  const ir_tensor *ix = &c->g->tensors[n->in[1]];
  ir_shape s = ix->shape;
  s.dim[ia] = s.dim[ia] / c->b0 * c->b1;
  int64_t outer, inner; /* sample 0's indices: [outer, 1, inner] of ix */
  index_blocks(c, ix, ia, &outer, &inner);
  char name[300];
  snprintf(name, sizeof name, "%s.batch%lld", ix->name, (long long)c->b1);
  int id = ir_add_tensor(h, name, IR_T_WEIGHT, &s, d);
  float *v = id < 0 ? NULL
                    : base_arena_alloc(
                          h->arena, sizeof(float) * (size_t)ir_shape_numel(&s));
  if (id >= 0 && !v) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return -1;
  }
  for (int64_t o = 0; v && o < outer; o++)
    for (int64_t b = 0; b < c->b1; b++)
      for (int64_t k = 0; k < inner; k++)
        v[(o * c->b1 + b) * inner + k] =
            ix->data[o * c->b0 * inner + k] + (float)(b * x.in);
  if (id >= 0) {
    h->tensors[id].dtype = ix->dtype;
    h->tensors[id].data = v;
  }
  return id;
}

/* A move node's program for the new batch (rb_move held it outermost in
 * every axis 0): reshape targets and slice ends scaled there. */
static int move_body(const rb_ctx *c, ir_attrs *a, base_diag *d) {
  const ir_body *b = ir_body_get(a->body);
  ir_body_op ops[IR_MOVE_MAX_OPS];
  memcpy(ops, b->ops, sizeof *ops * (size_t)b->nops);
  for (int i = 0; i < b->nops; i++) {
    if (ops[i].op == IR_OP_RESHAPE)
      ops[i].a.list[0] = ops[i].a.list[0] / c->b0 * c->b1;
    if (ops[i].op == IR_OP_SLICE)
      ops[i].a.list2[0] = ops[i].a.list2[0] / c->b0 * c->b1;
  }
  const ir_body *nb = ir_move_intern(b->nops, ops, d);
  if (!nb)
    return -1;
  a->body = nb->id;
  return 0;
}

static int add_copy(const rb_ctx *c, const ir_node *n, const int32_t *map,
                    ir_graph *h, base_diag *d) {
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int k = 0; k < n->nin; k++)
    if ((in[k] = broadcast_in(c, n, k, map, h, d)) < 0)
      return -1;
  for (int k = 0; k < n->nout; k++)
    names[k] = c->g->tensors[n->out[k]].name;
  ir_attrs a = n->a;
  rb_place x = n->nin ? c->p[n->in[0]] : (rb_place){-1, 0};
  rb_place o = n->nout ? c->p[n->out[0]] : (rb_place){-1, 0};
  if ((n->op == IR_OP_RESHAPE || n->op == IR_OP_CONST_ONES) && o.axis >= 0)
    a.list[o.axis] = a.list[o.axis] / c->b0 * c->b1;
  if (n->op == IR_OP_SLICE && x.axis >= 0)
    a.list2[x.axis] = a.list2[x.axis] / c->b0 * c->b1;
  if (n->op == IR_OP_GATHER && x.axis >= 0 && x.axis == n->a.axis &&
      (in[1] = batch_rows(c, n, h, d)) < 0)
    return -1;
  if (n->op == IR_OP_MOVE && x.axis >= 0 && move_body(c, &a, d))
    return -1;
  if (n->op == IR_OP_ATTENTION && n->nin > 4 &&
      (in[4] = tiled_bias(c, n, in[4], h, d)) < 0)
    return -1;
  return ir_add_node(h, n->op, in, n->nin, &a, names, d);
}

/* The message for node n that cannot follow the batch. */
static base_status rb_refuse(const rb_ctx *c, int i, const char *why,
                             base_diag *d) {
  const ir_node *n = &c->g->nodes[i];
  return base_diag_set(d, BASE_ERR_SHAPE, n->line, n->col,
                       "cannot rebatch %s '%s': %s", ir_op(n->op)->name,
                       c->g->tensors[n->out[0]].name, why);
}

static base_status rb_build(const rb_ctx *c, ir_graph *h, base_diag *d) {
  const ir_graph *g = c->g;
  int32_t *map = base_calloc((size_t)g->ntensors + 1, sizeof *map);
  if (!map)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status st = BASE_OK;
  for (int t = 0; !st && t < g->ntensors; t++)
    if (g->tensors[t].kind != IR_T_VALUE && (map[t] = add_leaf(c, t, h, d)) < 0)
      st = d ? d->code : BASE_ERR_INTERNAL;
  for (int i = 0; !st && i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int id = add_copy(c, n, map, h, d);
    if (id < 0) {
      char why[sizeof d->msg];
      snprintf(why, sizeof why, "%s", d ? d->msg : "");
      st = rb_refuse(c, i, why, d);
    }
    for (int k = 0; !st && k < n->nout; k++)
      map[n->out[k]] = h->nodes[id].out[k];
  }
  for (int i = 0; !st && i < g->noutputs; i++)
    st = ir_add_output(h, map[g->outputs[i]], d);
  free(map);
  return st;
}

base_status ir_rebatch(const ir_graph *g, int64_t batch, ir_graph **out,
                       base_diag *d) {
  *out = NULL;
  if (batch < 1)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "batch must be positive");
  rb_ctx c = {.g = g, .b0 = old_batch(g), .b1 = batch};
  for (int t = 0; t < g->ntensors; t++)
    if (g->tensors[t].kind == IR_T_INPUT && !g->tensors[t].shape.rank &&
        c.b0 == 0)
      return base_diag_set(
          d, BASE_ERR_SHAPE, g->tensors[t].line, g->tensors[t].col,
          "cannot rebatch: input '%s' is a scalar", g->tensors[t].name);
  if (c.b0 < 1)
    return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                         "cannot rebatch: the graph has no batched input");
  if (c.b0 == batch) { /* the batch it has: nothing to prove or change */
    if (!(*out = ir_graph_clone(g)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return BASE_OK;
  }
  c.p = base_calloc((size_t)g->ntensors + 1, sizeof *c.p);
  c.pick = base_calloc((size_t)g->nnodes + 1, sizeof *c.pick);
  c.npick = base_calloc((size_t)g->nnodes + 1, sizeof *c.npick);
  ir_graph *h = ir_graph_new(g->name);
  base_status st =
      h && c.p && c.pick && c.npick
          ? BASE_OK
          : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int t = 0; !st && t < g->ntensors; t++) {
    const ir_tensor *x = &g->tensors[t];
    int b = x->kind == IR_T_INPUT && x->shape.rank && x->shape.dim[0] == c.b0;
    c.p[t] = (rb_place){b ? 0 : -1, b ? prod(&x->shape, 1, 1) : 0};
  }
  int bad;
  char why[160];
  if (!st && rb_search(&c, &bad, why, sizeof why))
    st = rb_refuse(&c, bad, why, d);
  if (!st)
    st = rb_build(&c, h, d);
  free(c.p);
  free(c.pick);
  free(c.npick);
  if (st) {
    ir_graph_free(h);
    return st;
  }
  *out = h;
  return BASE_OK;
}
