/* mine.c: gen_mine, rules mined from workloads (`gen-rules --mine G...`).
 *
 *   for each value t of each graph (the target):
 *     for each form (unary, norm, attention, rows): one node over t's
 *     ancestors, or (fold) the cut's conv2d or matmul over terms of a
 *     small grammar of its leaves
 *       cut    = t's producers back to the node's operands
 *       check  = the cut and the node on random operands, shrunk shapes
 *   dedupe -> verify -> write
 *
 * The enumerator (src/enumerate) builds every graph of a few operators over
 * a fixed input pool: what exports write out (the exact GELU as five
 * operators and three constants, the guarded attention as seven) is beyond
 * its reach. Here one side of a candidate pair comes from the workload: a
 * subgraph a network contains, cut at the operands of the other side, one
 * node of a fused operator (mn_forms) whose operands are the target's
 * ancestors and whose parameters come from the cut's own constants (an
 * eps) or a small domain (a guard). No pair is written by hand: a pair is
 * kept when both sides agree on random operands (the cut's scalar
 * constants keep their values) at shrunk shapes (each size above 1 mapped,
 * in order, to 2, 3, 4...), and written when Z3 proves it, as
 * `gen-rules` writes its rules (docs/generation.md, "Mined rules").
 * Workload-guided rule inference after Enumo (Pal et al., OOPSLA'23).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../exec/exec.h"
#include "../verify/verify.h"
#include "gen.h"

#define MN_MAXA 96  /* ancestors of a target considered */
#define MN_MAXC 32  /* nodes of a cut */
#define MN_MAXS 8   /* scalar constants of a cut */
#define MN_MAXO 5   /* operands of a form */
#define MN_TOL 1e-4 /* agreement: |a - b| <= MN_TOL * max|a| */
#define MN_SIZES 64 /* distinct sizes of a shrunk pair */

typedef struct mn_ctx {
  const gen_mine_options *o;
  const ir_graph *g;
  int32_t *mark, stamp;         /* per node: the walk that saw it */
  int32_t anc[MN_MAXA], nanc;   /* the target's ancestors (tensors) */
  int32_t cut[MN_MAXC], ncut;   /* the current cut's nodes, in order */
  int32_t side[MN_MAXS], nside; /* its scalar constants */
  int uses[MN_MAXS];            /* how often the cut reads each */
  int32_t noact;                /* build_src: this node without its act */
  int fold;                     /* the fold form: weights kept, 1x1 pads */
  int32_t root;                 /* the fold form's root node */
  int sink;                     /* its cut has moves after the root */
  uint64_t *lins;               /* the fold cuts searched (their hashes) */
  int nlins, caplins;
  uint64_t *seen; /* hashes of the pairs tried */
  int nseen, capseen;
  ir_ruleset *rs;
  gen_mine_stats *st;
  base_diag *d;
} mn_ctx;

/* One operand of a form: the tensor and the name it has in the rule. */
typedef struct mn_opnd {
  int32_t t;
  const char *name;
} mn_opnd;

static const ir_shape *shp(const mn_ctx *c, int32_t t) {
  return &c->g->tensors[t].shape;
}

static int is_f32(const mn_ctx *c, int32_t t) {
  return c->g->tensors[t].dtype == IR_DT_F32;
}

/* A weight of one float32 element with known value. */
static int is_scalar(const mn_ctx *c, int32_t t) {
  const ir_tensor *x = &c->g->tensors[t];
  return x->kind == IR_T_WEIGHT && x->data && is_f32(c, t) &&
         ir_shape_numel(&x->shape) == 1;
}

/* Appends x to v[0..*n-1] unless there; 0 when it is not there and v
 * holds cap already. */
static int add_i32(int32_t *v, int *n, int cap, int32_t x) {
  for (int i = 0; i < *n; i++)
    if (v[i] == x)
      return 1;
  if (*n == cap)
    return 0;
  v[(*n)++] = x;
  return 1;
}

static int add_i64(int64_t *v, int *n, int cap, int64_t x) {
  for (int i = 0; i < *n; i++)
    if (v[i] == x)
      return 1;
  if (*n == cap)
    return 0;
  v[(*n)++] = x;
  return 1;
}

/* ---- the target's ancestors ---------------------------------------------- */

/* The tensors read by the nodes at most o->depth steps above t. */
static void ancestors(mn_ctx *c, int32_t t) {
  int32_t q[MN_MAXA], lvl[MN_MAXA];
  int nq = 0;
  c->nanc = 0;
  q[nq] = c->g->tensors[t].node, lvl[nq++] = 1;
  c->stamp++;
  for (int h = 0; h < nq; h++) {
    const ir_node *n = &c->g->nodes[q[h]];
    for (int i = 0; i < n->nin; i++) {
      int32_t u = n->in[i], p = c->g->tensors[u].node;
      add_i32(c->anc, &c->nanc, MN_MAXA, u);
      if (p >= 0 && lvl[h] < c->o->depth && nq < MN_MAXA &&
          c->mark[p] != c->stamp) {
        c->mark[p] = c->stamp;
        q[nq] = p, lvl[nq++] = lvl[h] + 1;
      }
    }
  }
}

/* ---- the cut --------------------------------------------------------------
 */

static int is_opnd(const mn_opnd *ops, int n, int32_t t) {
  for (int i = 0; i < n; i++)
    if (ops[i].t == t)
      return 1;
  return 0;
}

/* Operators a cut may hold: arithmetic, the attention node and the moves
 * around it. */
static int cut_op_ok(ir_opcode op) {
  switch (op) {
  case IR_OP_MATMUL:
  case IR_OP_SOFTMAX:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_TRANSPOSE:
  case IR_OP_CONST_ONES:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_EWADD:
  case IR_OP_EWMUL:
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_SMUL:
  case IR_OP_RESHAPE:
  case IR_OP_SLICE:
  case IR_OP_ATTENTION: return 1;
  default: return ir_ew_of(op) != NULL;
  }
}

/* Operators whose parameters name sizes (a reshape's shape, a slice's
 * range): a cut holding one keeps its sizes (not shrunk). */
static int names_sizes(ir_opcode op) {
  return op == IR_OP_RESHAPE || op == IR_OP_SLICE || op == IR_OP_ATTENTION;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The nodes between t and the operands: walking back from t's producer,
 * stopping at operands; any other leaf must be a scalar constant (kept in
 * c->side). 0 when the walk meets another leaf or operator, passes
 * MN_MAXC nodes, or leaves an operand unread. */
static int cut(mn_ctx *c, int32_t t, const mn_opnd *ops, int n) {
  int32_t stack[MN_MAXC];
  int sp = 0, reached = 0;
  c->ncut = c->nside = 0;
  c->stamp++;
  stack[sp++] = c->g->tensors[t].node;
  c->mark[stack[0]] = c->stamp;
  while (sp) {
    int32_t k = stack[--sp];
    const ir_node *nd = &c->g->nodes[k];
    if (!cut_op_ok(nd->op) || c->ncut == MN_MAXC)
      return 0;
    c->cut[c->ncut++] = k;
    for (int i = 0; i < nd->nin; i++) {
      int32_t u = nd->in[i], p = c->g->tensors[u].node;
      if (is_opnd(ops, n, u)) {
        reached |= 1;
        continue;
      }
      if (p < 0) {
        if (!is_scalar(c, u))
          return 0;
        int dup = 0;
        for (int j = 0; j < c->nside; j++)
          if (c->side[j] == u)
            dup = 1, c->uses[j]++;
        if (!dup && c->nside == MN_MAXS)
          return 0;
        if (!dup)
          c->uses[c->nside] = 1, c->side[c->nside++] = u;
      } else if (c->mark[p] != c->stamp) {
        if (sp == MN_MAXC)
          return 0;
        c->mark[p] = c->stamp;
        stack[sp++] = p;
      }
    }
  }
  /* every operand read by the cut */
  for (int i = 0; i < n; i++) {
    int used = 0;
    for (int j = 0; j < c->ncut && !used; j++) {
      const ir_node *nd = &c->g->nodes[c->cut[j]];
      for (int k = 0; k < nd->nin; k++)
        used |= nd->in[k] == ops[i].t;
    }
    if (!used)
      return 0;
  }
  qsort(c->cut, (size_t)c->ncut, sizeof *c->cut, cmp_i32);
  return reached;
}

/* ---- shrinking ------------------------------------------------------------
 */

typedef struct mn_sizes {
  int64_t v[MN_SIZES];
  int n;
} mn_sizes;

static int add_size(mn_sizes *z, int64_t v) {
  return v <= 1 || add_i64(z->v, &z->n, MN_SIZES, v);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int64_t small(const mn_sizes *z, int64_t v) {
  for (int i = 0; i < z->n; i++)
    if (z->v[i] == v)
      return i + 2;
  return v; /* 1 */
}

static ir_shape shrunk(const mn_sizes *z, const ir_shape *s) {
  ir_shape r = *s;
  for (int i = 0; i < s->rank; i++)
    r.dim[i] = small(z, s->dim[i]);
  return r;
}

/* Every size above 1 of the operands, constants and cut, in order; none
 * (sizes kept) where the cut names sizes. */
static int sizes_of(const mn_ctx *c, const mn_opnd *ops, int n, mn_sizes *z) {
  int ok = 1;
  z->n = 0;
  for (int j = 0; j < c->ncut; j++)
    if (names_sizes(c->g->nodes[c->cut[j]].op))
      return 1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < shp(c, ops[i].t)->rank; k++)
      ok &= add_size(z, shp(c, ops[i].t)->dim[k]);
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *nd = &c->g->nodes[c->cut[j]];
    for (int o = 0; o < nd->nout; o++)
      for (int k = 0; k < shp(c, nd->out[o])->rank; k++)
        ok &= add_size(z, shp(c, nd->out[o])->dim[k]);
  }
  qsort(z->v, (size_t)z->n, sizeof *z->v, cmp_i64);
  return ok;
}

/* ---- the pair --------------------------------------------------------------
 */

/* Names tensor t of the source graph in the rule's graph h: map[t]. */
static int32_t *new_map(const mn_ctx *c) {
  int32_t *m = base_calloc((size_t)c->g->ntensors, sizeof *m);
  if (m)
    for (int i = 0; i < c->g->ntensors; i++)
      m[i] = -1;
  return m;
}

/* The operands of h (inputs, shrunk), named as the form names them. */
static int add_opnds(const mn_ctx *c, ir_graph *h, const mn_opnd *ops, int n,
                     const mn_sizes *z, int32_t *map, base_diag *d) {
  for (int i = 0; i < n; i++) {
    ir_shape s = shrunk(z, shp(c, ops[i].t));
    if (map[ops[i].t] < 0 && /* q, k and v may be one tensor */
        (map[ops[i].t] = ir_add_tensor(
             h, ops[i].name,
             c->fold && c->g->tensors[ops[i].t].kind == IR_T_WEIGHT
                 ? IR_T_WEIGHT
                 : IR_T_INPUT,
             &s, d)) < 0)
      return -1;
  }
  return 0;
}

/* The cut's constants in h: weights holding their values (made inputs
 * bound by value once the pair is checked: bind_values). */
static int add_sides(const mn_ctx *c, ir_graph *h, int32_t *map, base_diag *d) {
  for (int i = 0; i < c->nside; i++) {
    char nm[16];
    const ir_tensor *x = &c->g->tensors[c->side[i]];
    snprintf(nm, sizeof nm, "c%d", i + 1);
    int32_t k = ir_add_tensor(h, nm, IR_T_WEIGHT, &x->shape, d);
    if (k < 0)
      return -1;
    map[c->side[i]] = k, h->tensors[k].data = x->data;
  }
  return 0;
}

/* A conv2d of 1x1 filters without pads (pad=same, valid or [0,0,0,0]
 * alike: the fold form writes them as same, so that the axioms read one
 * padding on both sides). */
static int is_1x1(const mn_ctx *c, const ir_node *n) {
  const ir_shape *w = n->op == IR_OP_CONV2D ? shp(c, n->in[1]) : NULL;
  return w && w->rank == 4 && w->dim[2] == 1 && w->dim[3] == 1 &&
         !n->a.pad[0] && !n->a.pad[1] && !n->a.pad[2] && !n->a.pad[3];
}

/* src: the operands, the cut's constants (weights holding their values,
 * made inputs bound by value once checked) and its nodes, shrunk. */
static ir_graph *build_src(const mn_ctx *c, int32_t t, const mn_opnd *ops,
                           int n, const mn_sizes *z, base_diag *d) {
  ir_graph *h = ir_graph_new("src");
  int32_t *map = new_map(c);
  int ok = h && map && !add_opnds(c, h, ops, n, z, map, d) &&
           !add_sides(c, h, map, d);
  for (int j = 0; ok && j < c->ncut; j++) {
    const ir_node *nd = &c->g->nodes[c->cut[j]];
    int32_t in[IR_MAX_FIXED_IN + 8];
    char names[4][16];
    const char *outs[4];
    ir_attrs a = nd->a;
    ok = nd->nin <= (int)(sizeof in / sizeof *in) && nd->nout <= 4;
    for (int i = 0; ok && i < nd->nin; i++)
      ok = (in[i] = map[nd->in[i]]) >= 0;
    for (int o = 0; ok && o < nd->nout; o++)
      snprintf(names[o], 16, nd->nout > 1 ? "t%d_%d" : "t%d", j + 1, o),
          outs[o] = names[o];
    if (ok && nd->op == IR_OP_CONST_ONES)
      for (int i = 0; i < a.nlist; i++)
        a.list[i] = small(z, a.list[i]);
    if (c->cut[j] == c->noact)
      a.act = IR_ACT_NONE;
    if (ok && c->fold && is_1x1(c, nd)) /* no pads: written as same */
      a.padmode = IR_PAD_SAME;
    int k = ok ? ir_add_node(h, nd->op, in, nd->nin, &a, outs, d) : -1;
    for (int o = 0; k >= 0 && o < nd->nout; o++) {
      int32_t u = h->nodes[k].out[o];
      ir_shape want = shrunk(z, shp(c, nd->out[o]));
      ok &= ir_shape_eq(&h->tensors[u].shape, &want);
      map[nd->out[o]] = u;
    }
    ok &= k >= 0;
  }
  ok = ok && ir_add_output(h, map[t], d) == BASE_OK;
  free(map);
  if (!ok)
    ir_graph_free(h);
  return ok ? h : NULL;
}

/* The one-node side a form proposes: op(a) over the operands, an
 * attention's scale being its operand "s", times every constant of the cut
 * as often as the cut reads it where prod_sides (the row layout: the
 * heads' scalings moved in), or 1 (const_ones) where it has a bias "m" and
 * no scale. */
typedef struct mn_rhs {
  ir_opcode op;
  ir_attrs a;
  int prod_sides;
} mn_rhs;

static int find_opnd(const mn_opnd *ops, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i].name, name))
      return i;
  return -1;
}

/* Adds node op(in) to h, named name; its first output, or -1. */
static int32_t add1(ir_graph *h, ir_opcode op, const int32_t *in, int nin,
                    const ir_attrs *a, const char *name, base_diag *d) {
  ir_attrs aa;
  if (a)
    aa = *a;
  else
    ir_attrs_default(op, &aa);
  int k = ir_add_node(h, op, in, nin, &aa, &name, d);
  return k < 0 ? -1 : h->nodes[k].out[0];
}

/* The attention's scale in h: see mn_rhs; -1 none, -2 on failure. */
static int32_t dst_scale(const mn_ctx *c, ir_graph *h, const int32_t *map,
                         const mn_opnd *ops, int n, const mn_rhs *r,
                         base_diag *d) {
  int si = find_opnd(ops, n, "s");
  int32_t sc = si >= 0 ? map[ops[si].t] : -1;
  for (int i = 0, k = 0; r->prod_sides && i < c->nside; i++) {
    int32_t x = map[c->side[i]];
    if (h->tensors[x].shape.rank != 0) { /* a [1] constant: as [] */
      ir_attrs a;
      char nm[16];
      ir_attrs_default(IR_OP_RESHAPE, &a);
      snprintf(nm, sizeof nm, "s%d", i + 1);
      if ((x = add1(h, IR_OP_RESHAPE, &x, 1, &a, nm, d)) < 0)
        return -2;
    }
    for (int u = 0; u < c->uses[i]; u++) {
      char nm[16];
      int32_t in[2] = {x, sc};
      snprintf(nm, sizeof nm, "sc%d", ++k);
      sc = sc < 0 ? in[0] : add1(h, IR_OP_EWMUL, in, 2, NULL, nm, d);
      if (sc < 0)
        return -2;
    }
  }
  if (sc < 0 && find_opnd(ops, n, "m") >= 0) {
    ir_attrs one;
    ir_attrs_default(IR_OP_CONST_ONES, &one);
    sc = add1(h, IR_OP_CONST_ONES, NULL, 0, &one, "one", d);
    if (sc < 0)
      return -2;
  }
  return sc;
}

/* dst: the operands (and the cut's constants where the scale takes them)
 * and the form's node. */
static ir_graph *build_dst(const mn_ctx *c, int32_t t, const mn_opnd *ops,
                           int n, const mn_sizes *z, const mn_rhs *r,
                           base_diag *d) {
  ir_graph *h = ir_graph_new("dst");
  int32_t *map = new_map(c), in[MN_MAXO + 1];
  int ok = h && map && !add_opnds(c, h, ops, n, z, map, d) &&
           !(r->prod_sides && add_sides(c, h, map, d));
  int nin = 0;
  if (ok && r->op == IR_OP_ATTENTION) {
    for (int i = 0; i < 3; i++)
      in[nin++] = map[ops[i].t];
    int32_t sc = dst_scale(c, h, map, ops, n, r, d);
    int mi = find_opnd(ops, n, "m");
    ok = sc > -2;
    if (sc >= 0)
      in[nin++] = sc;
    if (mi >= 0)
      in[nin++] = map[ops[mi].t];
  } else {
    for (int i = 0; i < n; i++)
      in[nin++] = map[ops[i].t];
  }
  int32_t y = ok ? add1(h, r->op, in, nin, &r->a, "y", d) : -1;
  ir_shape want = shrunk(z, shp(c, t));
  if (y >= 0 && !ir_shape_eq(&h->tensors[y].shape, &want)) {
    /* the row layout's [B,S,C] where t holds the same elements in
     * another shape (ViT's [S,C] at batch 1, [B*S,C] at 16) */
    ir_attrs a;
    ir_attrs_default(IR_OP_RESHAPE, &a);
    a.nlist = want.rank;
    memcpy(a.list, want.dim, sizeof(int64_t) * (size_t)want.rank);
    y = ir_shape_numel(&h->tensors[y].shape) == ir_shape_numel(&want)
            ? add1(h, IR_OP_RESHAPE, &y, 1, &a, "yr", d)
            : -1;
  }
  ok = y >= 0 && ir_add_output(h, y, d) == BASE_OK;
  free(map);
  if (!ok)
    ir_graph_free(h);
  return ok ? h : NULL;
}

/* Runs g on v, its inputs drawn uniformly in [-2, 2) (both signs: a
 * relu is not the identity) unless shared, its weights their values. */
static int run_on(const ir_graph *g, ex_values *v, const unsigned char *shared,
                  uint64_t seed) {
  base_diag d = {0};
  for (int i = 0; i < g->ntensors; i++) {
    const ir_tensor *x = &g->tensors[i];
    if (x->kind != IR_T_INPUT || (shared && shared[i]))
      continue;
    int64_t n = ir_shape_numel(&x->shape);
    if (!(v->v[i] = base_malloc((size_t)(n ? n : 1) * sizeof(float))))
      return 0;
    ex_random_fill(v->v[i], n, seed, (uint64_t)i, -2.0f, 2.0f);
  }
  ex_options o = {.threads = 1};
  return ex_fill_random(g, v, seed, &d) == BASE_OK &&
         ex_run(g, v, &o, &d) == BASE_OK;
}

/* Whether the outputs agree: |a - b| <= MN_TOL * max|a| everywhere, a
 * finite and not all zero (a run on zeros proves nothing). */
static int close_to(const float *a, const float *b, int64_t n) {
  double most = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(a[i]) || !isfinite(b[i]))
      return 0;
    most = fmax(most, fabs(a[i]));
  }
  for (int64_t i = 0; i < n; i++)
    if (fabs(a[i] - b[i]) > MN_TOL * most)
      return 0;
  return most > 0;
}

/* Both sides agree on two draws of the operands. */
static int agree(const ir_graph *src, const ir_graph *dst) {
  int ok = 1;
  for (uint64_t seed = 1; ok && seed <= 2; seed++) {
    ex_values *a = ex_values_new(src), *b = ex_values_new(dst);
    unsigned char *shared = base_calloc((size_t)dst->ntensors + 1, 1);
    base_diag d = {0};
    ok = a && b && shared && run_on(src, a, NULL, seed) &&
         ex_share_leaves(src, a, dst, b, shared, &d) == BASE_OK &&
         run_on(dst, b, shared, seed);
    int32_t ya = src->outputs[0], yb = dst->outputs[0];
    ok = ok &&
         close_to(a->v[ya], b->v[yb], ir_shape_numel(&src->tensors[ya].shape));
    if (b)
      ex_values_free_shared(b, shared);
    ex_values_free(a);
    free(shared);
  }
  return ok;
}

/* The constants become inputs bound by value (`input c1: [] value=1`). */
static void bind_values(ir_graph *g) {
  for (int i = 0; i < g->ntensors; i++) {
    ir_tensor *x = &g->tensors[i];
    if (x->kind == IR_T_WEIGHT && x->data) {
      x->kind = IR_T_INPUT;
      x->has_value = 1;
      x->value = x->data[0];
      x->data = NULL;
    }
  }
}

/* The hash of r's two graphs as text (not its name, status or proof: a
 * rule's name follows what it says); 0 when out of memory. */
static uint64_t text_hash(const ir_rule *r) {
  char *a = ir_print(r->src), *b = ir_print(r->dst);
  uint64_t h =
      a && b ? XXH3_64bits_withSeed(b, strlen(b), XXH3_64bits(a, strlen(a))) | 1
             : 0;
  free(a), free(b);
  return h;
}

/* 1 when h is in v[0..*n-1]; else appends it (growing v) and 0; -1 when
 * out of memory. */
static int hash_seen(uint64_t **v, int *n, int *cap, uint64_t h) {
  for (int i = 0; i < *n; i++)
    if ((*v)[i] == h)
      return 1;
  if (*n == *cap) {
    int nc = *cap ? 2 * *cap : 64;
    uint64_t *g = base_realloc(*v, (size_t)nc * sizeof *g);
    if (!g)
      return -1;
    *v = g, *cap = nc;
  }
  (*v)[(*n)++] = h;
  return 0;
}

/* Whether the rule's graphs were tried before (else remembers them); -1
 * when out of memory. */
static int tried(mn_ctx *c, const ir_rule *r) {
  uint64_t h = text_hash(r);
  return h ? hash_seen(&c->seen, &c->nseen, &c->capseen, h) : -1;
}

/* Whether the cut is r's node itself (and constants). */
static int is_itself(const mn_ctx *c, const mn_rhs *r) {
  int k = -1, n = 0;
  for (int j = 0; j < c->ncut; j++)
    if (ir_op(c->g->nodes[c->cut[j]].op)->kind != IR_OPK_CONST)
      n++, k = c->cut[j];
  return n == 1 && c->g->nodes[k].op == r->op;
}

static int keep_pair(mn_ctx *c, ir_graph *src, ir_graph *dst);

/* Tries one candidate: r over ops against the cut that ends at t. -1 on
 * OOM. */
static int try_pair(mn_ctx *c, int32_t t, const mn_opnd *ops, int n,
                    const mn_rhs *r) {
  mn_sizes z;
  if (c->ncut < 2 || is_itself(c, r) || !sizes_of(c, ops, n, &z))
    return 0;
  base_diag d = {0};
  ir_graph *src = build_src(c, t, ops, n, &z, &d);
  ir_graph *dst = src ? build_dst(c, t, ops, n, &z, r, &d) : NULL;
  return keep_pair(c, src, dst);
}

/* Checks the pair (src, dst) (both freed or kept): kept in c->rs when both
 * sides agree and it was not tried before. -1 on OOM. */
static int keep_pair(mn_ctx *c, ir_graph *src, ir_graph *dst) {
  base_diag d = {0};
  if (!dst) {
    ir_graph_free(src);
    return 0;
  }
  c->st->candidates++;
  if (getenv("SUPEROPT_MINE_DEBUG")) { /* each pair built, to stderr */
    char *a = ir_print(src), *b = ir_print(dst);
    fprintf(stderr, "candidate:\n%s%s\n", a ? a : "", b ? b : "");
    free(a), free(b);
  }
  if (!agree(src, dst)) {
    ir_graph_free(src), ir_graph_free(dst);
    return 0;
  }
  bind_values(src);
  bind_values(dst);
  char id[32];
  snprintf(id, sizeof id, "m%d", c->rs->n + 1);
  ir_rule *rule = ir_ruleset_add(c->rs, id, src, dst, &d);
  if (!rule)
    return 0; /* not a rule (the sides' inputs differ): not kept */
  int seen = tried(c, rule);
  if (seen) {
    ir_rule_clear(rule);
    c->rs->n--;
    return seen < 0 ? -1 : 0;
  }
  c->st->agreed++;
  return 0;
}

/* ---- the forms -------------------------------------------------------------
 *
 * A form proposes the one-node side for target t: its operands among t's
 * ancestors (shapes that fit t), then the cut to them, then try_pair. */

/* u(x), u each unary element-wise operator of src/ir/ew.def. */
static int form_unary(mn_ctx *c, int32_t t) {
  for (int i = 0; i < c->nanc; i++) {
    mn_opnd x = {c->anc[i], "x"};
    if (!is_f32(c, x.t) || !ir_shape_eq(shp(c, x.t), shp(c, t)) ||
        !cut(c, t, &x, 1))
      continue;
    for (int e = 0; e < IR_EW_NROWS; e++) {
      mn_rhs r = {.op = ir_ew_op(e)};
      ir_attrs_default(r.op, &r.a);
      if (try_pair(c, t, &x, 1, &r) < 0)
        return -1;
    }
  }
  return 0;
}

/* A float vector of t's last dimension. */
static int is_vec(const mn_ctx *c, int32_t t, int32_t v) {
  const ir_shape *s = shp(c, t), *x = shp(c, v);
  return x->rank == 1 && s->rank >= 1 && x->dim[0] == s->dim[s->rank - 1] &&
         is_f32(c, v);
}

/* layernorm(x, g[, b]) over the last axis, rms=1 without b; eps each of
 * the cut's scalar constants. */
static int form_norm(mn_ctx *c, int32_t t) {
  const ir_shape *s = shp(c, t);
  for (int i = 0; i < c->nanc; i++) {
    if (!is_f32(c, c->anc[i]) || !ir_shape_eq(shp(c, c->anc[i]), s))
      continue;
    for (int j = 0; j < c->nanc; j++) {
      if (!is_vec(c, t, c->anc[j]))
        continue;
      for (int k = -1; k < c->nanc; k++) {
        if (k >= 0 && (k == j || !is_vec(c, t, c->anc[k])))
          continue;
        mn_opnd ops[3] = {{c->anc[i], "x"}, {c->anc[j], "g"}, {-1, "b"}};
        int n = k < 0 ? 2 : 3;
        if (k >= 0)
          ops[2].t = c->anc[k];
        if (!cut(c, t, ops, n))
          continue;
        for (int e = 0; e < c->nside; e++) {
          mn_rhs r = {.op = IR_OP_LAYERNORM};
          ir_attrs_default(r.op, &r.a);
          r.a.axis = s->rank - 1;
          r.a.eps = c->g->tensors[c->side[e]].data[0];
          r.a.count_include_pad = k < 0; /* rms */
          if (try_pair(c, t, ops, n, &r) < 0)
            return -1;
        }
      }
    }
  }
  return 0;
}

/* Whether a [.., r, c] can be an attention operand for t: float, rank
 * and batch dimensions of t, rows r (or any: -1), columns c (or any). */
static int att_fit(const mn_ctx *c, int32_t a, int32_t t, int64_t r,
                   int64_t cols) {
  const ir_shape *x = shp(c, a), *y = shp(c, t);
  if (x->rank != y->rank || x->rank < 2 || !is_f32(c, a))
    return 0;
  for (int i = 0; i < x->rank - 2; i++)
    if (x->dim[i] != y->dim[i])
      return 0;
  return (r < 0 || x->dim[x->rank - 2] == r) &&
         (cols < 0 || x->dim[x->rank - 1] == cols);
}

/* The attention's optional operands for q, k, v: a scale (a scalar
 * constant) or none, a bias (an ancestor) or none, guard 0 and 1. */
static int att_options(mn_ctx *c, int32_t t, mn_opnd *ops) {
  for (int si = -1; si < c->nanc; si++) {
    if (si >= 0 && !is_scalar(c, c->anc[si]))
      continue;
    for (int bi = -1; bi < c->nanc; bi++) {
      if (bi >= 0 && (c->anc[bi] == ops[0].t || c->anc[bi] == ops[1].t ||
                      c->anc[bi] == ops[2].t || !is_f32(c, c->anc[bi]) ||
                      shp(c, c->anc[bi])->rank < 2))
        continue;
      int n = 3;
      if (si >= 0)
        ops[n].t = c->anc[si], ops[n++].name = "s";
      if (bi >= 0)
        ops[n].t = c->anc[bi], ops[n++].name = "m";
      if (!cut(c, t, ops, n))
        continue;
      for (int guard = 0; guard <= 1; guard++) {
        mn_rhs r = {.op = IR_OP_ATTENTION};
        ir_attrs_default(r.op, &r.a);
        r.a.keepdims = guard;
        if (try_pair(c, t, ops, n, &r) < 0)
          return -1;
      }
    }
  }
  return 0;
}

/* attention(q, k, v[, s[, b]]) in the default layout: q [.., S, D], k
 * [.., D, T], v [.., T, E] for t [.., S, E]. */
static int form_attention(mn_ctx *c, int32_t t) {
  const ir_shape *y = shp(c, t);
  if (y->rank < 2)
    return 0;
  int64_t s = y->dim[y->rank - 2], e = y->dim[y->rank - 1];
  for (int qi = 0; qi < c->nanc; qi++) {
    int32_t q = c->anc[qi];
    if (!att_fit(c, q, t, s, -1))
      continue;
    int64_t dd = shp(c, q)->dim[y->rank - 1];
    for (int ki = 0; ki < c->nanc; ki++) {
      int32_t k = c->anc[ki];
      if (k == q || !att_fit(c, k, t, dd, -1))
        continue;
      int64_t tt = shp(c, k)->dim[y->rank - 1];
      for (int vi = 0; vi < c->nanc; vi++) {
        int32_t v = c->anc[vi];
        if (v == q || v == k || !att_fit(c, v, t, tt, e))
          continue;
        mn_opnd ops[MN_MAXO] = {{q, "q"}, {k, "k"}, {v, "v"}};
        if (att_options(c, t, ops) < 0)
          return -1;
      }
    }
  }
  return 0;
}

/* ---- the row layout ---------------------------------------------------
 *
 * attention(q, k, v[, s[, m]]) heads=H cols=[cq,ck,cv] hdim=[D,E]: rows
 * q [.., S, Cq], k and v [.., T, Ck|Cv] (one tensor or three; seqfirst=1:
 * [S, B, C]) for t [.., S, H*E], or for a t of another shape holding its
 * [B, S, H*E] elements (ViT's [S, C] at batch 1, [B*S, C] above: the node
 * reshaped to t's shape). Its operands are pooled by a walk back from t
 * through moves (reshape, transpose, slice), scalings by a constant and an
 * attention's q, k and v: where the walk stops on a value of rank 3 or
 * more, a row; an attention's scale and bias, a scale and a bias. H is a
 * size of the cut dividing t's columns (E the cut's attention's head width
 * where it has one), D is E or a row's columns over H, the column offsets
 * 0, the starts of the cut's slices or each head block's in a packed row,
 * the guard the cut's attention's (0 and 1 without one); the scale is the
 * cut's constants (a [1] one reshaped to []) times s (the heads' scalings
 * moved in). */

typedef struct mn_pool {
  int32_t t[MN_MAXO * 4];
  int n;
} mn_pool;

static void pool_add(mn_pool *p, int32_t t) {
  add_i32(p->t, &p->n, (int)(sizeof p->t / sizeof *p->t), t);
}

/* The other operand of a product by a scalar constant, or -1. */
static int32_t scaled(const mn_ctx *c, const ir_node *n) {
  if ((n->op != IR_OP_EWMUL && n->op != IR_OP_SMUL) || n->nin != 2)
    return -1;
  return is_scalar(c, n->in[1])   ? n->in[0]
         : is_scalar(c, n->in[0]) ? n->in[1]
                                  : -1;
}

static void rows_pools(mn_ctx *c, int32_t t, mn_pool *rows, mn_pool *sm) {
  int32_t st[MN_MAXC];
  int sp = 0, steps = 0;
  rows->n = sm->n = 0;
  st[sp++] = t;
  while (sp && steps++ < 4 * MN_MAXC) {
    int32_t u = st[--sp], p = c->g->tensors[u].node, in = -1;
    const ir_node *n = p >= 0 ? &c->g->nodes[p] : NULL;
    if (n && (n->op == IR_OP_RESHAPE || n->op == IR_OP_TRANSPOSE ||
              n->op == IR_OP_SLICE))
      in = n->in[0];
    else if (n)
      in = scaled(c, n);
    if (in >= 0 && sp < MN_MAXC) {
      st[sp++] = in;
    } else if (n && n->op == IR_OP_ATTENTION && u != t) {
      for (int i = 0; i < n->nin; i++)
        if (i < 3 && sp < MN_MAXC)
          st[sp++] = n->in[i];
        else if (i >= 3)
          pool_add(sm, n->in[i]);
    } else if (u != t && shp(c, u)->rank >= 3 && is_f32(c, u)) {
      pool_add(rows, u);
    }
  }
}

/* Rows for t: its rank (3 or more), its leading dimensions, n rows (or
 * any: -1). */
static int rows_fit(const mn_ctx *c, int32_t a, int32_t t, int64_t n) {
  return shp(c, t)->rank >= 3 && att_fit(c, a, t, n, -1);
}

/* The rows q, k, v in layout sf (1: seqfirst [S,B,C]) for t [.., C]: as
 * rows_fit where sf is 0 and q has t's rank; else (t of another rank,
 * ViT's [S,C] or [B*S,C]; or seqfirst) q, k and v of one rank r >= 3 (3
 * seqfirst) and one batch, k and v of one length, and t holding [B,S,C]'s
 * elements. */
static int rows_fit3(const mn_ctx *c, int32_t q, int32_t k, int32_t v,
                     int32_t t, int sf) {
  const ir_shape *y = shp(c, t), *a = shp(c, q), *b = shp(c, k), *e = shp(c, v);
  int r = a->rank;
  if (!sf && r == y->rank)
    return rows_fit(c, q, t, y->dim[r - 2]) && rows_fit(c, k, t, -1) &&
           rows_fit(c, v, t, b->dim[r - 2]);
  if (r < 3 || (sf && r != 3) || b->rank != r || e->rank != r ||
      !is_f32(c, q) || !is_f32(c, k) || !is_f32(c, v))
    return 0;
  int len = sf ? 0 : r - 2; /* the rows' axis; the rest is the batch */
  for (int i = 0; i < r - 1; i++)
    if (i != len && (a->dim[i] != b->dim[i] || a->dim[i] != e->dim[i]))
      return 0;
  if (b->dim[len] != e->dim[len])
    return 0;
  int64_t cols = y->dim[y->rank - 1];
  return ir_shape_numel(a) / a->dim[r - 1] * cols == ir_shape_numel(y);
}

/* The cut's sizes dividing cols (head counts), slice starts on the last
 * axis (column offsets, 0 first) and attention guards. */
typedef struct mn_dom {
  int64_t heads[16], offs[8];
  int nheads, noffs, guard[2], nguard;
} mn_dom;

static void rows_domain(const mn_ctx *c, int64_t cols, mn_dom *m) {
  m->nheads = m->nguard = 0;
  m->noffs = 1, m->offs[0] = 0;
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *n = &c->g->nodes[c->cut[j]];
    for (int o = 0; o < n->nout; o++)
      for (int k = 0; k < shp(c, n->out[o])->rank; k++) {
        int64_t h = shp(c, n->out[o])->dim[k];
        if (h > 1 && h < cols && cols % h == 0)
          add_i64(m->heads, &m->nheads, 16, h);
      }
    if (n->op == IR_OP_SLICE && n->a.nlist > 0)
      add_i64(m->offs, &m->noffs, 8, n->a.list[n->a.nlist - 1]);
    if (n->op == IR_OP_ATTENTION && m->nguard < 2 &&
        (m->nguard == 0 || m->guard[0] != n->a.keepdims))
      m->guard[m->nguard++] = n->a.keepdims;
  }
  if (!m->nguard)
    m->guard[0] = 0, m->guard[1] = 1, m->nguard = 2;
}

/* Whether off is a head block's start within a row of cols columns. */
static int off_ok(int64_t off, int64_t width, int64_t cols) {
  return off + width <= cols;
}

/* The head width E of the cut's attention in the default layout (its
 * output's last dimension), or 0 without one. */
static int64_t cut_att_e(const mn_ctx *c) {
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *n = &c->g->nodes[c->cut[j]];
    if (n->op == IR_OP_ATTENTION && n->a.groups == 0) {
      const ir_shape *s = shp(c, n->out[0]);
      return s->dim[s->rank - 1];
    }
  }
  return 0;
}

/* The column offsets of an operand of w columns: the cut's slice starts,
 * and, where its rows hold three head blocks of width bw or more (a packed
 * projection, ViT's in_proj read as q, k and v), each block's start. */
static int rows_offs(const mn_dom *m, int64_t w, int64_t bw, int64_t *o) {
  int n = 0;
  for (int k = 0; k < m->noffs; k++)
    add_i64(o, &n, 8, m->offs[k]);
  for (int64_t x = bw; w >= 3 * bw && x + bw <= w; x += bw)
    add_i64(o, &n, 8, x);
  return n;
}

/* Every head count, head width, column offsets and guard for ops in
 * layout sf; none over one key, or where rows of another rank than t's (or
 * seqfirst) have no attention in the cut to lay out again. */
static int rows_params(mn_ctx *c, int32_t t, const mn_opnd *ops, int n,
                       int sf) {
  const ir_shape *y = shp(c, t), *ks = shp(c, ops[1].t);
  int64_t cols = y->dim[y->rank - 1], w[3], ce = cut_att_e(c);
  int relaxed = sf || ks->rank != y->rank;
  if (ks->dim[sf ? 0 : ks->rank - 2] < 2 || (relaxed && !ce))
    return 0; /* one key (the identity on v); no attention to re-lay */
  for (int i = 0; i < 3; i++) {
    const ir_shape *x = shp(c, ops[i].t);
    w[i] = x->dim[x->rank - 1];
  }
  mn_dom m;
  rows_domain(c, cols, &m);
  for (int h = 0; h < m.nheads; h++) {
    int64_t e = cols / m.heads[h], dd[2] = {e, w[0] / m.heads[h]};
    if (ce && e != ce) /* not the cut's heads */
      continue;
    for (int di = 0; di < (dd[1] == e || w[0] % m.heads[h] ? 1 : 2); di++) {
      int64_t hd = m.heads[h] * dd[di], he = m.heads[h] * e;
      int64_t oq[8], ok[8], ov[8];
      int nq = rows_offs(&m, w[0], hd, oq), nk = rows_offs(&m, w[1], hd, ok),
          nv = rows_offs(&m, w[2], he, ov);
      for (int a = 0; a < nq * nk * nv; a++) {
        int64_t off[3] = {oq[a % nq], ok[a / nq % nk], ov[a / nq / nk]};
        if (!off_ok(off[0], hd, w[0]) || !off_ok(off[1], hd, w[1]) ||
            !off_ok(off[2], he, w[2]))
          continue;
        for (int g = 0; g < m.nguard; g++) {
          mn_rhs r = {.op = IR_OP_ATTENTION, .prod_sides = 1};
          ir_attrs_default(r.op, &r.a);
          r.a.groups = (int32_t)m.heads[h];
          r.a.nlist = 3, r.a.nlist2 = 2;
          memcpy(r.a.list, off, sizeof off);
          r.a.list2[0] = dd[di], r.a.list2[1] = e;
          r.a.keepdims = m.guard[g];
          r.a.axis = sf;
          if (try_pair(c, t, ops, n, &r) < 0)
            return -1;
        }
      }
    }
  }
  return 0;
}

static int form_rows(mn_ctx *c, int32_t t) {
  if (shp(c, t)->rank < 2)
    return 0;
  mn_pool rows, sm;
  rows_pools(c, t, &rows, &sm);
  for (int qi = 0; qi < rows.n; qi++)
    for (int ki = 0; ki < rows.n; ki++)
      for (int vi = 0; vi < rows.n * 2; vi++) {
        int32_t q = rows.t[qi], k = rows.t[ki], v = rows.t[vi / 2];
        int sf = vi % 2;
        if (!rows_fit3(c, q, k, v, t, sf))
          continue;
        for (int si = -1; si < sm.n; si++)
          for (int mi = -1; mi < sm.n; mi++) {
            if ((si >= 0 && shp(c, sm.t[si])->rank != 0) ||
                (mi >= 0 && shp(c, sm.t[mi])->rank < 2))
              continue;
            mn_opnd ops[MN_MAXO] = {{q, "q"}, {k, "k"}, {v, "v"}};
            int n = 3;
            if (si >= 0)
              ops[n].t = sm.t[si], ops[n++].name = "s";
            if (mi >= 0)
              ops[n].t = sm.t[mi], ops[n++].name = "m";
            if (cut(c, t, ops, n) && rows_params(c, t, ops, n, sf) < 0)
              return -1;
          }
      }
  return 0;
}

/* ---- the fold form -------------------------------------------------------
 *
 * op(X, W[, B[, R]]) (reshaped to t's shape), op the cut's root (a conv2d
 * or matmul, its parameters kept), over operands built from the cut's
 * leaves by a small grammar. The cut is the root and the producers
 * (conv2d, matmul, batchnorm) of its x and r, or, where a chain of
 * reshapes and transposes holding a transpose makes t from the root (the
 * sink), that chain, the root and the moves before its x. The leaves a cut
 * node reads as its x or r and the graph does not hold as weights are the
 * data side (x1..), the others the weight side (w1..). Terms are enumerated
 * bottom-up up to MN_FSIZE operators, one kept per value on the draws (the
 * first made: observational equivalence):
 *
 *   data:   leaf | concat(leaf, leaf) on any axis
 *         | transpose(leaf) by any permutation | reshape(data) to x's shape
 *           (the last two in a sink only)
 *   weight: leaf | view(t) | transpose(t) | zero(s) = ewsub(s, s)
 *         | ewadd(s, s) | concat(leaf, leaf) on any axis | matmul(t, s)
 *         | matmul(s, t) | batchnorm(s or zero(s), p, p, p, p)
 *
 * s a small term (a leaf or a leaf's view), p a weight-side vector leaf or
 * its zero, view the reshape of a vector to a row [1, n], of rank 3 or more
 * to a matrix [d0, rest], of a row or column back to a vector, eps each of
 * the cut's batchnorms'. The search is goal-directed: X and W (and R) are
 * kept where op(X1 - X2, W) + R1 - R2 equals the cut's y1 - y2 on two draws
 * of the data side (the weight side shared; the root's activation taken
 * off, put back on the node); the rest, y1 - op(X1, W) - R1, must be one
 * vector over the output's channels, the bias B: none, a term of that
 * value, or ewadd(u, b) for a weight leaf u and a term b of the value less
 * u. Each (X, W, B, R) is then checked as the other forms' pairs are
 * (agree, on the cut with its activation) and proven by Z3. A zero's
 * operand does not change its value, but the axioms name one (the
 * batchnorm's mean): each candidate is also tried with every zero reading
 * each leaf of its operand's shape. */

#define MN_FTERMS 65536 /* terms of a fold pool */
#define MN_FSIZE 7      /* operators of a term */
#define MN_FLEAF 10     /* leaves of a fold cut */
#define MN_FCAND 32     /* candidates of one cut */
#define MN_FNUMEL 65536 /* elements of a weight term (not a leaf) */
#define MN_FROWS 16     /* rows of a product tested first */

typedef struct mn_term {
  int32_t t;    /* its tensor in the pool graph */
  int8_t size;  /* operators */
  int8_t small; /* a leaf or a leaf's view */
  int8_t data;  /* on the data side */
  int8_t zero;  /* ewsub(s, s) */
} mn_term;

typedef struct mn_fpool {
  ir_graph *g;   /* leaves, then every term's node */
  float **v[2];  /* per tensor of g: values on draw 1 and 2 */
  int capv;      /* room of v[0] and v[1] */
  mn_term *tm;   /* terms */
  int n;         /* terms */
  uint64_t *key; /* open-addressed set of value keys */
  int32_t *slot; /* the term of each key */
  int capk;      /* room of key (a power of 2) */
  int nsmall;    /* 1 + the last term that is small or a leaf */
  float eps[4];  /* the cut's batchnorms' eps */
  int neps;
} mn_fpool;

static void fpool_free(mn_fpool *p) {
  for (int k = 0; k < 2; k++) {
    for (int i = 0; p->v[k] && i < p->g->ntensors; i++)
      free(p->v[k][i]);
    free(p->v[k]);
  }
  ir_graph_free(p->g);
  free(p->tm), free(p->key), free(p->slot);
}

static const ir_shape *tshp(const mn_fpool *p, int i) {
  return &p->g->tensors[p->tm[i].t].shape;
}

static int64_t tnum(const mn_fpool *p, int i) {
  return ir_shape_numel(tshp(p, i));
}

/* The key of tensor t's values: its shape and values rounded to 15 bits
 * of mantissa (equal values computed in another order hash alike but at a
 * rounding boundary, which only keeps a duplicate). */
static uint64_t value_key(const mn_fpool *p, int32_t t) {
  const ir_shape *s = &p->g->tensors[t].shape;
  int64_t n = ir_shape_numel(s);
  uint64_t h = XXH3_64bits(s->dim, (size_t)s->rank * sizeof *s->dim);
  for (int k = 0; k < 2; k++)
    for (int64_t i = 0; i < n; i++) { /* 15 bits of mantissa */
      float f = p->v[k][t][i] == 0 ? 0.0f : p->v[k][t][i]; /* -0 is 0 */
      uint32_t q;
      memcpy(&q, &f, sizeof q);
      q = (q + 0x80u) & ~0xffu;
      h = XXH3_64bits_withSeed(&q, sizeof q, h);
    }
  return h | 1;
}

/* Inserts key -> term i unless there; 1 when new, 0 when there, -1 OOM. */
static int key_add(mn_fpool *p, uint64_t key, int i) {
  if (2 * (p->n + 1) > p->capk) {
    int cap = p->capk ? 2 * p->capk : 1024;
    uint64_t *k = base_calloc((size_t)cap, sizeof *k);
    int32_t *s = base_calloc((size_t)cap, sizeof *s);
    if (!k || !s)
      return free(k), free(s), -1;
    for (int j = 0; j < p->capk; j++)
      if (p->key[j]) {
        int h = (int)(p->key[j] & (uint64_t)(cap - 1));
        while (k[h])
          h = (h + 1) & (cap - 1);
        k[h] = p->key[j], s[h] = p->slot[j];
      }
    free(p->key), free(p->slot);
    p->key = k, p->slot = s, p->capk = cap;
  }
  int h = (int)(key & (uint64_t)(p->capk - 1));
  while (p->key[h]) {
    if (p->key[h] == key)
      return 0;
    h = (h + 1) & (p->capk - 1);
  }
  p->key[h] = key, p->slot[h] = i;
  return 1;
}

/* Room for the values of every tensor of p->g. */
static int vals_room(mn_fpool *p) {
  if (p->g->ntensors <= p->capv)
    return 1;
  int cap = p->capv ? 2 * p->capv : 64;
  while (cap < p->g->ntensors)
    cap *= 2;
  for (int k = 0; k < 2; k++) {
    float **v = base_realloc(p->v[k], (size_t)cap * sizeof *v);
    if (!v)
      return 0;
    for (int i = p->capv; i < cap; i++)
      v[i] = NULL;
    p->v[k] = v;
  }
  p->capv = cap;
  return 1;
}

/* Computes node k of p->g on both draws (its reference kernel): 1, 0 for
 * a node it does not compute (several outputs), -1 out of memory. */
static int eval_node(mn_fpool *p, int k) {
  const ir_node *nd = &p->g->nodes[k];
  ex_arg in[IR_MAX_FIXED_IN], out;
  if (nd->nin > IR_MAX_FIXED_IN || nd->nout != 1)
    return 0;
  if (!vals_room(p))
    return -1;
  for (int dr = 0; dr < 2; dr++) {
    for (int i = 0; i < nd->nin; i++)
      in[i].shape = p->g->tensors[nd->in[i]].shape,
      in[i].data = p->v[dr][nd->in[i]];
    out.shape = p->g->tensors[nd->out[0]].shape;
    int64_t n = ir_shape_numel(&out.shape);
    out.data = base_malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!out.data)
      return -1;
    p->v[dr][nd->out[0]] = out.data;
    if (ex_kernel_of(nd->op)(nd, in, &out) != BASE_OK)
      return -1; /* a kernel fails only for scratch memory (exec.h) */
  }
  return 1;
}

/* Whether term i's values are finite (a zero's all zero are). */
static int finite_vals(const mn_fpool *p, int i) {
  for (int k = 0; k < 2; k++)
    for (int64_t j = 0; j < tnum(p, i); j++)
      if (!isfinite(p->v[k][p->tm[i].t][j]))
        return 0;
  return 1;
}

/* Adds term op(kids) unless one of its value is there (or it does not
 * type, or is not finite): 1 added, 0 not, -1 OOM. */
static int term_add(mn_fpool *p, ir_opcode op, const int *kid, int nk,
                    const ir_attrs *a) {
  if (p->n == MN_FTERMS)
    return 0;
  int32_t in[5];
  int size = 1, data = 0, small = op == IR_OP_RESHAPE;
  for (int i = 0; i < nk; i++) {
    in[i] = p->tm[kid[i]].t;
    size += i && kid[i] == kid[0] ? 0 : p->tm[kid[i]].size; /* a zero */
    data |= p->tm[kid[i]].data;
    small &= p->tm[kid[i]].size == 0;
  }
  if (size > MN_FSIZE)
    return 0;
  base_diag d = {0};
  int k = ir_add_node(p->g, op, in, nk, a, NULL, &d);
  if (k < 0 ||
      (!data &&
       ir_shape_numel(&p->g->tensors[p->g->nodes[k].out[0]].shape) > MN_FNUMEL))
    return 0;
  mn_term tm = {.t = p->g->nodes[k].out[0],
                .size = (int8_t)size,
                .small = (int8_t)small,
                .data = (int8_t)data,
                .zero = op == IR_OP_EWSUB && nk == 2 && kid[0] == kid[1]};
  int ev = eval_node(p, k);
  if (ev <= 0)
    return ev;
  p->tm[p->n] = tm;
  int fresh = finite_vals(p, p->n);
  if (fresh) {
    fresh = key_add(p, value_key(p, tm.t), p->n);
    if (fresh < 0)
      return -1;
  }
  if (!fresh) { /* a dead node of the pool graph */
    for (int dr = 0; dr < 2; dr++)
      free(p->v[dr][tm.t]), p->v[dr][tm.t] = NULL;
    return 0;
  }
  if (tm.small || tm.size == 0)
    p->nsmall = p->n + 1;
  p->n++;
  return 1;
}

/* The views of term i (reshapes): vector -> row [1, n], rank >= 3 ->
 * matrix [d0, rest], a row or column -> vector. */
static int add_views(mn_fpool *p, int i) {
  const ir_shape *s = tshp(p, i);
  ir_attrs a;
  ir_attrs_default(IR_OP_RESHAPE, &a);
  if (s->rank == 1)
    a.nlist = 2, a.list[0] = 1, a.list[1] = s->dim[0];
  else if (s->rank >= 3)
    a.nlist = 2, a.list[0] = s->dim[0], a.list[1] = tnum(p, i) / s->dim[0];
  else if (s->rank == 2 && (s->dim[0] == 1 || s->dim[1] == 1))
    a.nlist = 1, a.list[0] = tnum(p, i);
  else
    return 0;
  return term_add(p, IR_OP_RESHAPE, &i, 1, &a) < 0 ? -1 : 0;
}

/* batchnorm(i, p1..p4) with p each weight leaf or zero of i's channels. */
static int add_bns(mn_fpool *p, int i) {
  const ir_shape *s = tshp(p, i);
  int par[16], np = 0;
  if (s->rank < 2 || !p->neps || p->tm[i].data ||
      !(p->tm[i].small || p->tm[i].zero))
    return 0;
  for (int j = 0; j < p->n && np < 16; j++) {
    const ir_shape *x = tshp(p, j);
    if (!p->tm[j].data && x->rank == 1 && x->dim[0] == s->dim[1] &&
        (p->tm[j].size == 0 || (p->tm[j].zero && p->tm[j].size == 1)))
      par[np++] = j;
  }
  for (int e = 0; e < p->neps; e++)
    for (int q = 0; q < np * np * np * np; q++) {
      int kid[5] = {i, par[q / np / np / np], par[q / np / np % np],
                    par[q / np % np], par[q % np]}; /* the first slot
                                                      slowest */
      ir_attrs a;
      ir_attrs_default(IR_OP_BATCHNORM, &a);
      a.eps = p->eps[e];
      if (term_add(p, IR_OP_BATCHNORM, kid, 5, &a) < 0)
        return -1;
    }
  return 0;
}

/* The binary productions of term i with the small terms and leaves (the
 * only partners of each: j < nsmall, so that a pool of 31,749 terms costs
 * no 10^9 pairs, 94 of test_mine's 105 s under ASan). */
static int add_pairs(mn_fpool *p, int i) {
  const ir_shape *s = tshp(p, i);
  for (int j = 0; j < p->n && j < p->nsmall; j++) {
    const ir_shape *x = tshp(p, j);
    if (p->tm[j].data != p->tm[i].data)
      continue;
    ir_attrs a;
    if (p->tm[j].small && p->tm[i].small && !p->tm[i].data &&
        ir_shape_eq(s, x) && j < i) {
      int kid[2] = {j, i};
      ir_attrs_default(IR_OP_EWADD, &a);
      if (term_add(p, IR_OP_EWADD, kid, 2, &a) < 0)
        return -1;
    }
    if (p->tm[j].small && !p->tm[i].data && s->rank == 2 && x->rank == 2 &&
        !p->tm[i].zero && !p->tm[j].zero)
      for (int o = 0; o < 2; o++) {
        int kid[2] = {o ? i : j, o ? j : i};
        if (tshp(p, kid[0])->dim[1] != tshp(p, kid[1])->dim[0])
          continue;
        ir_attrs_default(IR_OP_MATMUL, &a);
        if (term_add(p, IR_OP_MATMUL, kid, 2, &a) < 0)
          return -1;
      }
    if (p->tm[i].size == 0 && p->tm[j].size == 0 && j != i &&
        s->rank == x->rank)
      for (int ax = 0; ax < s->rank; ax++) {
        int fits = 1;
        for (int k = 0; k < s->rank; k++)
          fits &= k == ax || s->dim[k] == x->dim[k];
        int kid[2] = {i, j};
        ir_attrs_default(IR_OP_CONCAT, &a);
        a.axis = ax;
        if (fits && term_add(p, IR_OP_CONCAT, kid, 2, &a) < 0)
          return -1;
      }
  }
  return 0;
}

/* The data side's moves where the cut has moves (xs: the root's x):
 * transpose(leaf) by each permutation but the identity, and each data
 * term of xs's size but another shape reshaped to xs. */
static int data_moves(mn_fpool *p, const ir_shape *xs) {
  int nleaf = p->n;
  for (int i = 0; i < nleaf; i++) {
    int r = tshp(p, i)->rank, perm[IR_MAX_RANK];
    if (!p->tm[i].data || r > 4)
      continue;
    int64_t nperm = 1;
    for (int k = 2; k <= r; k++)
      nperm *= k;
    for (int64_t q = 1; q < nperm; q++) { /* q-th permutation, q = 0 id */
      int used[IR_MAX_RANK] = {0};
      int64_t f = nperm, rem = q;
      for (int k = 0; k < r; k++) {
        f /= r - k;
        int pick = (int)(rem / f), m = -1;
        rem %= f;
        while (pick >= 0)
          pick -= !used[++m];
        used[m] = 1, perm[k] = m;
      }
      ir_attrs a;
      ir_attrs_default(IR_OP_TRANSPOSE, &a);
      a.nlist = r;
      for (int k = 0; k < r; k++)
        a.list[k] = perm[k];
      if (term_add(p, IR_OP_TRANSPOSE, &i, 1, &a) < 0)
        return -1;
    }
  }
  for (int i = 0, n = p->n; i < n; i++) {
    if (!p->tm[i].data || tnum(p, i) != ir_shape_numel(xs) ||
        ir_shape_eq(tshp(p, i), xs))
      continue;
    ir_attrs a;
    ir_attrs_default(IR_OP_RESHAPE, &a);
    a.nlist = xs->rank;
    for (int k = 0; k < xs->rank; k++)
      a.list[k] = xs->dim[k];
    if (term_add(p, IR_OP_RESHAPE, &i, 1, &a) < 0)
      return -1;
  }
  return 0;
}

/* Every term, bottom-up: each term in the order made gets the productions
 * above (the small terms first, made before any other). */
static int grow(mn_fpool *p) {
  int nleaf = p->n;
  for (int i = 0; i < nleaf; i++)
    if (!p->tm[i].data && add_views(p, i) < 0)
      return -1;
  for (int i = 0; i < p->n; i++) {
    const mn_term *u = &p->tm[i];
    int kid[2] = {i, i};
    ir_attrs a;
    if (!u->data && (u->size == 0 || u->small)) {
      ir_attrs_default(IR_OP_EWSUB, &a);
      if (term_add(p, IR_OP_EWSUB, kid, 2, &a) < 0)
        return -1;
    }
    if (!u->data && i >= nleaf && add_views(p, i) < 0)
      return -1;
    int pn = p->g->tensors[u->t].node;
    if (!u->data && tshp(p, i)->rank == 2 &&
        (pn < 0 || p->g->nodes[pn].op != IR_OP_TRANSPOSE)) {
      ir_attrs_default(IR_OP_TRANSPOSE, &a);
      a.nlist = 2, a.list[0] = 1, a.list[1] = 0;
      if (term_add(p, IR_OP_TRANSPOSE, kid, 1, &a) < 0)
        return -1;
    }
    if (add_bns(p, i) < 0 || add_pairs(p, i) < 0)
      return -1;
  }
  return 0;
}

/* A candidate: op(X, W[, B][, R]), B = ewadd(U, B0) where U >= 0. */
typedef struct mn_fcand {
  int x, w, b, u, r; /* terms, or -1 */
} mn_fcand;

/* Whether |a - b| <= MN_TOL * scale everywhere. */
static int near(const float *a, const float *b, int64_t n, double scale) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs((double)a[i] - b[i]) <= MN_TOL * scale))
      return 0;
  return 1;
}

static double most_abs(const float *a, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++)
    m = fmax(m, fabs(a[i]));
  return m;
}

/* What the search reads: the cut on two draws (y1, y2 its outputs), its
 * root without bias and activation, the channel axis. */
typedef struct mn_fsrc {
  const ir_graph *g;
  ir_node root; /* op(x, w), the root's parameters but act */
  int32_t x, w; /* the root's x and w in g */
  const float *y[2];
  ir_shape ys;
  int ch;
} mn_fsrc;

/* op(X, W) of the root on draw dr into out (ys elements). */
static int root_on(const mn_fsrc *s, const mn_fpool *p, int x, int w, int dr,
                   float *out) {
  ex_arg in[2] = {{*tshp(p, x), p->v[dr][p->tm[x].t]},
                  {*tshp(p, w), p->v[dr][p->tm[w].t]}};
  ex_arg o = {s->ys, out};
  return ex_kernel_of(s->root.op)(&s->root, in, &o) == BASE_OK;
}

/* Whether term x fits the root's x (and w then the root's w for that x). */
static int x_fits(const mn_fsrc *s, const mn_fpool *p, int x) {
  const ir_shape *a = tshp(p, x), *rx = &s->g->tensors[s->x].shape;
  if (!p->tm[x].data || a->rank != rx->rank)
    return 0;
  for (int k = 0; k < a->rank; k++)
    if (k != (s->root.op == IR_OP_CONV2D ? 1 : a->rank - 1) &&
        a->dim[k] != rx->dim[k])
      return 0;
  return 1;
}

static int w_fits(const mn_fsrc *s, const mn_fpool *p, int x, int w) {
  const ir_shape *a = tshp(p, x), *b = tshp(p, w),
                 *rw = &s->g->tensors[s->w].shape;
  if (p->tm[w].data || b->rank != rw->rank)
    return 0;
  if (s->root.op == IR_OP_CONV2D)
    return b->rank == 4 && b->dim[0] == s->ys.dim[1] &&
           b->dim[1] * s->root.a.groups == a->dim[1] &&
           b->dim[2] == rw->dim[2] && b->dim[3] == rw->dim[3];
  return b->rank == 2 && b->dim[0] == a->dim[a->rank - 1] &&
         b->dim[1] == s->ys.dim[s->ch];
}

/* The rest r = y1 - op(X1, W) - R1 as one value per channel (rv), or 0
 * where it varies along another axis. */
static int per_channel(const mn_fsrc *s, const float *r, float *rv,
                       double scale) {
  int64_t n = ir_shape_numel(&s->ys), inner = 1, ch = s->ys.dim[s->ch];
  for (int k = s->ch + 1; k < s->ys.rank; k++)
    inner *= s->ys.dim[k];
  for (int64_t i = 0; i < n; i++) {
    int64_t c = i / inner % ch;
    if (i < inner * ch && i % inner == 0)
      rv[c] = r[i];
    else if (!(fabs((double)r[i] - rv[c]) <= MN_TOL * scale))
      return 0;
  }
  return 1;
}

/* The biases of value rv: terms b of it (u -1) and ewadd(u, b) for the
 * small terms u; appended to k[*nk]. */
static void find_bias(const mn_fpool *p, const float *rv, int64_t ch,
                      double scale, mn_fcand base, mn_fcand *k, int *nk) {
  float *want = base_malloc((size_t)ch * sizeof *want);
  if (!want)
    return;
  for (int u = -1; u < p->n && *nk < MN_FCAND; u++) {
    if (u >= 0 && (p->tm[u].data || p->tm[u].size || tshp(p, u)->rank != 1 ||
                   tnum(p, u) != ch))
      continue;
    for (int64_t i = 0; i < ch; i++)
      want[i] = rv[i] - (u >= 0 ? p->v[0][p->tm[u].t][i] : 0.0f);
    for (int b = 0; b < p->n && *nk < MN_FCAND; b++)
      if (b != u && !p->tm[b].data && !p->tm[b].zero && tshp(p, b)->rank == 1 &&
          tnum(p, b) == ch && near(want, p->v[0][p->tm[b].t], ch, scale))
        base.b = b, base.u = u, k[(*nk)++] = base;
  }
  free(want);
}

/* For a product without a residual among the leaves, whether its first
 * MN_FROWS rows alone make the cut's change there (each row of a product
 * is its own): a cheap test before the whole product; 1 for a conv2d
 * (buf: room for MN_FROWS rows). */
static int rows_first(const mn_fsrc *s, const mn_fpool *p, int x, int w,
                      const float *dy, double scale, float *buf) {
  const ir_shape *a = tshp(p, x), *b = tshp(p, w);
  int64_t k = a->dim[a->rank - 1], m = ir_shape_numel(a) / k;
  int64_t nn = b->dim[1], r = m < MN_FROWS ? m : MN_FROWS;
  if (s->root.op != IR_OP_MATMUL || r == m)
    return 1;
  for (int i = 0; i < p->n; i++)
    if (p->tm[i].data && p->tm[i].size == 0 && ir_shape_eq(tshp(p, i), &s->ys))
      return 1; /* a residual may make the change */
  ir_shape rs = {.rank = 2, .dim = {r, k}}, os = {.rank = 2, .dim = {r, nn}};
  ex_arg in[2] = {{rs, p->v[0][p->tm[x].t]}, {*b, p->v[0][p->tm[w].t]}};
  ex_arg o = {os, buf};
  ir_node nd = s->root;
  float *d = base_malloc((size_t)(r * k) * sizeof *d);
  int ok = d != NULL;
  for (int64_t i = 0; ok && i < r * k; i++)
    d[i] = p->v[0][p->tm[x].t][i] - p->v[1][p->tm[x].t][i];
  in[0].data = d;
  ok = ok && ex_kernel_of(nd.op)(&nd, in, &o) == BASE_OK &&
       near(dy, buf, r * nn, scale);
  free(d);
  return ok;
}

/* The candidates: X, W (and R) that make the cut's change between the
 * draws, then the biases that make the rest. */
static int fold_search(const mn_fsrc *s, const mn_fpool *p, mn_fcand *k) {
  int64_t n = ir_shape_numel(&s->ys), ch = s->ys.dim[s->ch];
  int nk = 0;
  float *q[2] = {base_malloc((size_t)n * sizeof(float)),
                 base_malloc((size_t)n * sizeof(float))};
  float *dy = base_malloc((size_t)n * sizeof(float)),
        *rest = base_malloc((size_t)n * sizeof(float)),
        *rv = base_malloc((size_t)ch * sizeof(float));
  double scale = most_abs(s->y[0], n);
  for (int64_t i = 0; dy && i < n; i++)
    dy[i] = s->y[0][i] - s->y[1][i];
  for (int x = 0; q[0] && q[1] && dy && rest && rv && x < p->n && nk < MN_FCAND;
       x++)
    for (int w = 0; x_fits(s, p, x) && w < p->n && nk < MN_FCAND; w++) {
      if (!w_fits(s, p, x, w) || !rows_first(s, p, x, w, dy, scale, q[0]) ||
          !root_on(s, p, x, w, 0, q[0]) || !root_on(s, p, x, w, 1, q[1]))
        continue;
      for (int r = -1; r < p->n && nk < MN_FCAND; r++) {
        if (r >= 0 && (p->tm[r].size || !p->tm[r].data ||
                       !ir_shape_eq(tshp(p, r), &s->ys)))
          continue;
        const float *r1 = r >= 0 ? p->v[0][p->tm[r].t] : NULL,
                    *r2 = r >= 0 ? p->v[1][p->tm[r].t] : NULL;
        int ok = 1;
        for (int64_t i = 0; ok && i < n; i++)
          ok = fabs((double)dy[i] - (q[0][i] - q[1][i]) -
                    (r1 ? r1[i] - r2[i] : 0)) <= MN_TOL * scale;
        for (int64_t i = 0; ok && i < n; i++)
          rest[i] = s->y[0][i] - q[0][i] - (r1 ? r1[i] : 0);
        if (!ok || !per_channel(s, rest, rv, scale))
          continue;
        mn_fcand base = {x, w, -1, -1, r};
        if (most_abs(rv, ch) <= MN_TOL * scale && r < 0)
          k[nk++] = base;
        find_bias(p, rv, ch, scale, base, k, &nk);
      }
    }
  free(q[0]), free(q[1]), free(dy), free(rest), free(rv);
  return nk;
}

/* Copies pool tensor t (and what it reads) into h through map; a zero
 * whose operand reads a leaf of zl's shape reads zl instead (zl >= 0). -1
 * on failure. */
static int32_t copy_term(ir_graph *h, const mn_fpool *p, int32_t t, int32_t zl,
                         int32_t *map, base_diag *d) {
  if (map[t] >= 0)
    return map[t];
  int k = p->g->tensors[t].node;
  const ir_node *nd = &p->g->nodes[k];
  int32_t in[5];
  for (int i = 0; i < nd->nin; i++) {
    int32_t u = nd->in[i], v = u;
    if (i == 1 && nd->op == IR_OP_EWSUB && nd->in[0] == nd->in[1]) {
      in[1] = in[0]; /* a zero: one operand */
      continue;
    }
    int pu = p->g->tensors[u].node;
    int32_t leaf = pu < 0 ? u : p->g->nodes[pu].in[0];
    int zero = nd->op == IR_OP_EWSUB && nd->in[0] == nd->in[1];
    if (zero && zl >= 0 && (pu < 0 || p->g->nodes[pu].op == IR_OP_RESHAPE) &&
        p->g->tensors[leaf].node < 0 &&
        ir_shape_eq(&p->g->tensors[leaf].shape, &p->g->tensors[zl].shape)) {
      if (pu < 0) {
        v = zl;
      } else { /* the same view of zl */
        char nm[16];
        snprintf(nm, sizeof nm, "z%d", h->ntensors);
        in[i] = add1(h, IR_OP_RESHAPE, &map[zl], 1, &p->g->nodes[pu].a, nm, d);
        if (in[i] < 0)
          return -1;
        continue;
      }
    }
    if ((in[i] = copy_term(h, p, v, zl, map, d)) < 0)
      return -1;
  }
  char nm[16];
  snprintf(nm, sizeof nm, "t%d", h->ntensors);
  return map[t] = add1(h, nd->op, in, nd->nin, &nd->a, nm, d);
}

/* dst for candidate k: the pool's leaves, the terms it reads and the
 * root's operator (with its parameters: the activation back) over them. */
static ir_graph *fold_dst(const mn_fpool *p, const ir_node *root,
                          const mn_fcand *k, int32_t zl, const ir_shape *ts,
                          base_diag *d) {
  ir_graph *h = ir_graph_new("dst");
  int32_t *map = base_calloc((size_t)p->g->ntensors, sizeof *map);
  int ok = h && map;
  for (int i = 0; ok && i < p->g->ntensors; i++) {
    const ir_tensor *x = &p->g->tensors[i];
    map[i] =
        x->node < 0 ? ir_add_tensor(h, x->name, x->kind, &x->shape, d) : -1;
    ok = x->node >= 0 || map[i] >= 0;
  }
  int32_t in[4];
  int nin = 0;
  int terms[3] = {k->x, k->w, k->b};
  for (int i = 0; ok && i < 3; i++)
    if (terms[i] >= 0)
      ok = (in[nin++] = copy_term(h, p, p->tm[terms[i]].t, zl, map, d)) >= 0;
  if (ok && k->u >= 0) {
    int32_t ub[2] = {copy_term(h, p, p->tm[k->u].t, zl, map, d), in[2]};
    ok = ub[0] >= 0 &&
         (in[2] = add1(h, IR_OP_EWADD, ub, 2, NULL, "bias", d)) >= 0;
  }
  if (ok && k->r >= 0)
    ok = (in[nin++] = map[p->tm[k->r].t]) >= 0;
  int32_t y = ok ? add1(h, root->op, in, nin, &root->a, "y", d) : -1;
  if (y >= 0 && !ir_shape_eq(&h->tensors[y].shape, ts)) { /* t's shape */
    ir_attrs a;
    ir_attrs_default(IR_OP_RESHAPE, &a);
    a.nlist = ts->rank;
    for (int i = 0; i < ts->rank; i++)
      a.list[i] = ts->dim[i];
    y = add1(h, IR_OP_RESHAPE, &y, 1, &a, "yr", d);
  }
  ok = y >= 0 && ir_add_output(h, y, d) == BASE_OK;
  free(map);
  if (!ok)
    ir_graph_free(h);
  return ok ? h : NULL;
}

/* Names of the fold form's operands: data x1.., weights w1.. */
static const char *const mn_xname[MN_FLEAF] = {"x1", "x2", "x3", "x4", "x5",
                                               "x6", "x7", "x8", "x9", "x10"};
static const char *const mn_wname[MN_FLEAF] = {"w1", "w2", "w3", "w4", "w5",
                                               "w6", "w7", "w8", "w9", "w10"};

/* Whether operand i is read as a conv2d's filter by the cut. */
static int is_filter(const mn_ctx *c, int32_t t) {
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *n = &c->g->nodes[c->cut[j]];
    if (n->op == IR_OP_CONV2D && n->nin > 1 && n->in[1] == t)
      return 1;
  }
  return 0;
}

/* The sizes to shrink: every size above 1 of the operands and the cut's
 * outputs but the filters' kernel sizes (kept). */
static int fold_sizes(const mn_ctx *c, const mn_opnd *ops, int n, mn_sizes *z) {
  int ok = 1;
  z->n = 0;
  for (int j = 0; j < c->ncut; j++)
    if (names_sizes(c->g->nodes[c->cut[j]].op))
      return 1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < shp(c, ops[i].t)->rank; k++)
      if (k < 2 || !is_filter(c, ops[i].t))
        ok &= add_size(z, shp(c, ops[i].t)->dim[k]);
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *nd = &c->g->nodes[c->cut[j]];
    for (int k = 0; k < shp(c, nd->out[0])->rank; k++)
      ok &= add_size(z, shp(c, nd->out[0])->dim[k]);
  }
  qsort(z->v, (size_t)z->n, sizeof *z->v, cmp_i64);
  return ok;
}

/* Whether leaf t is on the data side: not a weight of the graph, and read
 * by a node of the cut as its x (or a residual r). */
static int reads_as_data(const mn_ctx *c, int32_t t) {
  if (c->g->tensors[t].kind == IR_T_WEIGHT)
    return 0;
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *n = &c->g->nodes[c->cut[j]];
    if (n->in[0] == t || (n->nin > 3 && n->in[3] == t))
      return 1;
  }
  return 0;
}

/* The cut's leaves as operands, the data side named x1.., the weight side
 * w1..: 0 when more than MN_FLEAF, one not float, or no weight side. */
static int fold_opnds(const mn_ctx *c, mn_opnd *ops) {
  int n = 0, nx = 0, nw = 0;
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *nd = &c->g->nodes[c->cut[j]];
    for (int i = 0; i < nd->nin; i++) {
      int32_t u = nd->in[i], p = c->g->tensors[u].node, inside = 0;
      for (int k = 0; k < c->ncut; k++)
        inside |= c->cut[k] == p;
      if (inside || is_opnd(ops, n, u))
        continue;
      if (n == MN_FLEAF || !is_f32(c, u))
        return 0;
      int w = !reads_as_data(c, u);
      ops[n].t = u;
      ops[n++].name = w ? mn_wname[nw++] : mn_xname[nx++];
    }
  }
  return nw ? n : 0;
}

/* The pool of c's fold cut: its leaves (values of the two draws), then
 * every term (grow). */
static int fold_pool(const mn_ctx *c, const ir_graph *src, ex_values *const *dv,
                     const ir_shape *xs, mn_fpool *p) {
  memset(p, 0, sizeof *p);
  base_diag d = {0};
  if (!(p->g = ir_graph_new("pool")) ||
      !(p->tm = base_malloc(MN_FTERMS * sizeof *p->tm)))
    return -1;
  for (int j = 0; j < c->ncut; j++) {
    const ir_node *n = &c->g->nodes[c->cut[j]];
    if (n->op == IR_OP_BATCHNORM && p->neps < 4)
      p->eps[p->neps++] = n->a.eps;
  }
  for (int i = 0; i < src->ntensors; i++) {
    const ir_tensor *x = &src->tensors[i];
    if (x->node >= 0)
      continue;
    int32_t t = ir_add_tensor(p->g, x->name, x->kind, &x->shape, &d);
    if (t < 0 || !vals_room(p))
      return -1;
    int64_t n = ir_shape_numel(&x->shape);
    for (int k = 0; k < 2; k++) {
      if (!(p->v[k][t] = base_malloc((size_t)(n ? n : 1) * sizeof(float))))
        return -1;
      memcpy(p->v[k][t], dv[k]->v[i], (size_t)n * sizeof(float));
    }
    int data = x->name[0] == 'x'; /* fold_opnds' names */
    p->tm[p->n++] = (mn_term){.t = t, .small = !data, .data = data};
    p->nsmall = p->n;
    if (key_add(p, value_key(p, t), p->n - 1) < 0)
      return -1;
  }
  return c->sink && data_moves(p, xs) < 0 ? -1 : grow(p);
}

/* Whether a cut of this text (and root activation act) was searched
 * before (else remembers it): the blocks of a network repeat their cuts.
 * -1 on OOM. */
static int lin_seen(mn_ctx *c, const ir_graph *lin, int act) {
  char *a = ir_print(lin);
  if (!a)
    return -1;
  uint64_t h = XXH3_64bits_withSeed(a, strlen(a), (uint64_t)act + 1);
  free(a);
  return hash_seen(&c->lins, &c->nlins, &c->caplins, h);
}

/* Runs src on two draws (dv[0], dv[1]): the data side (x1..) drawn anew
 * in the second, the weight side (w1..) shared (sh: dv[1]'s shared
 * buffers). 0 on failure. */
static int two_draws(const ir_graph *src, ex_values **dv, unsigned char **sh) {
  *sh = base_calloc((size_t)src->ntensors + 1, 1);
  dv[0] = ex_values_new(src), dv[1] = ex_values_new(src);
  int ok = *sh && dv[0] && dv[1] && run_on(src, dv[0], NULL, 1);
  for (int i = 0; ok && i < src->ntensors; i++)
    if (src->tensors[i].node < 0 && src->tensors[i].name[0] == 'w')
      dv[1]->v[i] = dv[0]->v[i], (*sh)[i] = 1;
  return ok && run_on(src, dv[1], *sh, 2);
}

/* Tries every candidate of the cut in c (c->cut) ending at t. -1 on OOM. */
static int fold_cut(mn_ctx *c, int32_t t) {
  mn_opnd ops[MN_FLEAF];
  mn_sizes z;
  base_diag d = {0};
  int n = fold_opnds(c, ops), ri = 0;
  if (!n || !fold_sizes(c, ops, n, &z))
    return 0;
  c->noact = c->root, c->fold = 1;
  ir_graph *lin = build_src(c, t, ops, n, &z, &d);
  c->noact = -1;
  while (c->cut[ri] != c->root)
    ri++;
  int seen = lin ? lin_seen(c, lin, c->g->nodes[c->root].a.act) : 0;
  if (!lin || seen) {
    ir_graph_free(lin);
    return c->fold = 0, seen < 0 ? -1 : 0;
  }
  ex_values *dv[2] = {NULL, NULL};
  unsigned char *sh = NULL;
  mn_fpool p = {0};
  mn_fsrc s = {.g = lin, .root = lin->nodes[ri]};
  s.root.nin = 2, s.x = s.root.in[0], s.w = s.root.in[1];
  int rc = 0;
  if (two_draws(lin, dv, &sh) &&
      !(rc = fold_pool(c, lin, dv, &lin->tensors[s.x].shape, &p))) {
    int32_t y = lin->outputs[0];
    s.y[0] = dv[0]->v[y], s.y[1] = dv[1]->v[y];
    s.ys = lin->tensors[s.root.out[0]].shape; /* y read in this shape */
    s.ch = s.root.op == IR_OP_CONV2D ? 1 : s.ys.rank - 1;
    ir_node full = s.root; /* the root's parameters, its act back */
    full.a.act = c->g->nodes[c->root].a.act;
    mn_fcand k[MN_FCAND];
    int nk = fold_search(&s, &p, k);
    if (getenv("SUPEROPT_MINE_DEBUG"))
      fprintf(stderr, "fold: %d terms, %d pool nodes, %d candidates\n", p.n,
              p.g->nnodes, nk);
    for (int i = 0; rc >= 0 && i < nk; i++)
      for (int zl = -1; rc >= 0 && zl < p.n; zl++) {
        if (zl >= 0 && (p.tm[zl].size || p.tm[zl].data))
          continue;
        ir_graph *src = build_src(c, t, ops, n, &z, &d);
        ir_graph *dst =
            src ? fold_dst(&p, &full, &k[i], zl < 0 ? -1 : p.tm[zl].t,
                           &lin->tensors[y].shape, &d)
                : NULL;
        rc = keep_pair(c, src, dst);
      }
  }
  c->fold = 0;
  if (p.g)
    fpool_free(&p);
  if (dv[1])
    ex_values_free_shared(dv[1], sh);
  ex_values_free(dv[0]);
  free(sh);
  ir_graph_free(lin);
  return rc < 0 ? -1 : 0;
}

static int is_move(const mn_ctx *c, int32_t t) {
  int32_t p = c->g->tensors[t].node;
  return p >= 0 && (c->g->nodes[p].op == IR_OP_RESHAPE ||
                    c->g->nodes[p].op == IR_OP_TRANSPOSE);
}

/* Adds to the cut the moves that make t, back from t: the last one's
 * input. 0 when the cut is full. */
static int32_t add_moves(mn_ctx *c, int32_t t, int *transposes) {
  for (; is_move(c, t); t = c->g->nodes[c->g->tensors[t].node].in[0]) {
    if (c->ncut == MN_MAXC)
      return -1;
    c->cut[c->ncut++] = c->g->tensors[t].node;
    *transposes += c->g->nodes[c->g->tensors[t].node].op == IR_OP_TRANSPOSE;
  }
  return t;
}

/* op(X, W[, B[, R]]) (reshaped to t's shape) for t = conv2d(..) or
 * matmul(..), or the moves (reshape, transpose) after one where they hold a
 * transpose (then with the moves before its x): the cuts of that root and
 * the producers of its x and r that are conv2d, matmul or batchnorm. */
static int form_fold(mn_ctx *c, int32_t t) {
  int transposes = 0;
  c->ncut = c->nside = 0;
  int32_t u = add_moves(c, t, &transposes), k = c->g->tensors[u].node, pr[2];
  int np = 0, nmoves = c->ncut;
  if (u < 0 || k < 0 || (nmoves && !transposes) ||
      (c->g->nodes[k].op != IR_OP_CONV2D && c->g->nodes[k].op != IR_OP_MATMUL))
    return 0;
  const ir_node *nd = &c->g->nodes[k];
  c->root = k, c->sink = nmoves > 0;
  c->cut[c->ncut++] = k;
  if (c->sink && add_moves(c, nd->in[0], &transposes) < 0)
    return 0;
  int base = c->ncut;
  for (int s = 0; s < nd->nin && !c->sink; s += 3) {
    int32_t p = c->g->tensors[nd->in[s]].node;
    ir_opcode op = p >= 0 ? c->g->nodes[p].op : IR_OP_MOVE;
    if ((op == IR_OP_CONV2D || op == IR_OP_MATMUL || op == IR_OP_BATCHNORM) &&
        c->g->nodes[p].nout == 1 && (np == 0 || pr[0] != p))
      pr[np++] = p;
  }
  int32_t fixed[MN_MAXC];
  memcpy(fixed, c->cut, (size_t)base * sizeof *fixed);
  for (int m = c->sink ? 0 : 1; m < 1 << np; m++) {
    c->ncut = base, c->nside = 0;
    memcpy(c->cut, fixed, (size_t)base * sizeof *fixed);
    for (int i = 0; i < np; i++)
      if (m >> i & 1)
        c->cut[c->ncut++] = pr[i];
    qsort(c->cut, (size_t)c->ncut, sizeof *c->cut, cmp_i32);
    if (fold_cut(c, t) < 0)
      return -1;
  }
  c->sink = 0;
  return 0;
}

typedef int (*mn_form)(mn_ctx *c, int32_t t);
static const mn_form mn_forms[] = {form_unary, form_norm, form_attention,
                                   form_rows, form_fold};

/* ---- the pipeline
 * ------------------------------------------------------------ */

static base_status mine_graph(mn_ctx *c, const ir_graph *g) {
  c->g = g;
  c->mark = base_calloc((size_t)g->nnodes + 1, sizeof *c->mark);
  if (!c->mark)
    return base_diag_set(c->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  c->stamp = 0;
  for (int32_t t = 0; t < g->ntensors; t++) {
    if (g->tensors[t].node < 0 || !is_f32(c, t))
      continue;
    c->st->targets++;
    ancestors(c, t);
    for (size_t f = 0; f < sizeof mn_forms / sizeof *mn_forms; f++)
      if (mn_forms[f](c, t) < 0) {
        free(c->mark);
        return base_diag_set(c->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      }
    if (c->o->progress)
      c->o->progress(c->o->u, "mine", t + 1, g->ntensors);
  }
  free(c->mark);
  return BASE_OK;
}

/* Sets (or clears) the value binding of input `name` in both sides. */
static void bind(ir_rule *r, const char *name, int on, float v) {
  ir_graph *g[2] = {r->src, r->dst};
  for (int k = 0; k < 2; k++) {
    int t = ir_find_tensor(g[k], name);
    if (t >= 0)
      g[k]->tensors[t].has_value = on, g[k]->tensors[t].value = v;
  }
}

/* Proves r again; 1 when proven (its status, core and note set). */
static int prove(verify_ctx *vc, ir_rule *r, base_diag *d) {
  verify_result res;
  if (verify_prove(vc, r, &res, d) != BASE_OK)
    return -1;
  r->status = res.status;
  if (ir_rule_set_axioms(r, res.core, res.ncore) ||
      ir_rule_set_note(r, res.status == IR_RULE_PROVEN ? NULL : res.reason))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory"), -1;
  return res.status == IR_RULE_PROVEN;
}

/* Generalises a proven rule: each input bound by value (a constant of the
 * cut) becomes a free input where Z3 proves the rule without the value
 * (the scale of BERT's scores holds for any scale; GELU's 0.5 does not),
 * so the rule binds networks whose constants differ. In input order, one
 * at a time. -1 on a Z3 failure. */
static int generalise(verify_ctx *vc, ir_rule *r, base_diag *d) {
  for (int i = 0; i < r->src->ntensors; i++) {
    ir_tensor *x = &r->src->tensors[i];
    if (x->kind != IR_T_INPUT || !x->has_value)
      continue;
    float v = x->value;
    bind(r, x->name, 0, 0);
    int p = prove(vc, r, d);
    if (p < 0)
      return -1;
    if (!p) {
      bind(r, x->name, 1, v);
      if (prove(vc, r, d) != 1)
        return -1; /* proven before */
    }
  }
  return 0;
}

/* g without input t, which only attention nodes read, as their last
 * operand (a bias, or a scale with no bias after it): NULL where another
 * node reads it, or on failure. */
static ir_graph *without_input(const ir_graph *g, int32_t t) {
  ir_graph *h = ir_graph_new(g->name);
  int32_t *map = base_calloc((size_t)g->ntensors, sizeof *map);
  int ok = h && map;
  base_diag d = {0};
  for (int i = 0; ok && i < g->ntensors; i++) {
    const ir_tensor *x = &g->tensors[i];
    map[i] = -1;
    if (x->node >= 0 || i == t)
      continue;
    ok = (map[i] = ir_add_tensor(h, x->name, x->kind, &x->shape, &d)) >= 0;
    if (ok)
      h->tensors[map[i]].has_value = x->has_value,
      h->tensors[map[i]].value = x->value;
  }
  for (int j = 0; ok && j < g->nnodes; j++) {
    const ir_node *n = &g->nodes[j];
    int last = n->nin > 0 && n->in[n->nin - 1] == t;
    for (int i = 0; ok && i < n->nin - last; i++)
      ok = n->in[i] != t;
    if (ok && !last) {
      ok = ir_rebuild_copy(h, g, j, map, &d) >= 0;
    } else if (ok) { /* the attention without its last operand */
      int32_t in[IR_MAX_FIXED_IN];
      for (int i = 0; i < n->nin - 1; i++)
        in[i] = map[n->in[i]];
      int32_t y = n->op == IR_OP_ATTENTION
                      ? add1(h, n->op, in, n->nin - 1, &n->a,
                             g->tensors[n->out[0]].name, &d)
                      : -1;
      ok = (map[n->out[0]] = y) >= 0;
    }
  }
  for (int i = 0; ok && i < g->noutputs; i++)
    ok = ir_add_output(h, map[g->outputs[i]], &d) == BASE_OK;
  free(map);
  if (!ok)
    ir_graph_free(h);
  return ok ? h : NULL;
}

/* Adds to rs, for each proven rule and each input its attention nodes
 * alone read as their last operand (the bias m), the rule without it,
 * proven (a mask-free network's attention is another arity: the matcher
 * binds operators with their inputs). -1 on OOM or a Z3 failure. */
static int drop_optional(verify_ctx *vc, ir_ruleset *rs, base_diag *d) {
  int n = rs->n;
  for (int i = 0; i < n; i++) {
    for (int t = 0; rs->rules[i].status == IR_RULE_PROVEN &&
                    t < rs->rules[i].src->ntensors;
         t++) {
      const ir_rule *r = &rs->rules[i];
      if (r->src->tensors[t].kind != IR_T_INPUT || r->src->tensors[t].has_value)
        continue;
      int td = ir_find_tensor(r->dst, r->src->tensors[t].name);
      ir_graph *src = without_input(r->src, t);
      ir_graph *dst = src && td >= 0 ? without_input(r->dst, td) : NULL;
      char id[32];
      snprintf(id, sizeof id, "m%d", rs->n + 1);
      if (!dst) {
        ir_graph_free(src);
        continue;
      }
      ir_rule *tw = ir_ruleset_add(rs, id, src, dst, d);
      if (!tw)
        continue;
      int p = prove(vc, tw, d);
      if (p < 0)
        return -1;
    }
  }
  return 0;
}

static base_status generalise_all(ir_ruleset *rs, const gen_mine_options *o,
                                  base_diag *d) {
  verify_ctx *vc = verify_new(&(verify_opts){.timeout_ms = o->z3_timeout_ms});
  if (!vc)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "Z3 did not start");
  base_status s = BASE_OK;
  for (int i = 0; !s && i < rs->n; i++) {
    if (rs->rules[i].status == IR_RULE_PROVEN &&
        generalise(vc, &rs->rules[i], d) < 0)
      s = d->code ? d->code : BASE_ERR_INTERNAL;
    if (o->progress)
      o->progress(o->u, "generalise", i + 1, rs->n);
  }
  if (!s && drop_optional(vc, rs, d) < 0)
    s = d->code ? d->code : BASE_ERR_INTERNAL;
  verify_free(vc);
  return s;
}

/* The rules proven, in the order mined, each named m and 10 hex digits of
 * its graphs' hash (text_hash): the same rule has the same name in every file,
 * so the files of several runs (mining rewritten graphs again) are read
 * together, and a rule found twice (generalised from two constants) is kept
 * once. */
static base_status keep_proven(ir_ruleset *rs, base_diag *d) {
  int w = 0;
  for (int i = 0; i < rs->n; i++) {
    ir_rule *r = &rs->rules[i];
    uint64_t h = r->status == IR_RULE_PROVEN ? text_hash(r) : 1;
    int dup = r->status != IR_RULE_PROVEN;
    char id[32];
    snprintf(id, sizeof id, "m%010llx",
             (unsigned long long)(h & 0xffffffffffull));
    for (int j = 0; j < w && !dup; j++)
      dup = !strcmp(rs->rules[j].id, id);
    char *nid = dup || !h ? NULL : base_strdup(id);
    if (!dup && !nid) {
      for (int j = i; j < rs->n; j++)
        ir_rule_clear(&rs->rules[j]);
      rs->n = w;
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    if (dup) {
      ir_rule_clear(r);
      continue;
    }
    free(r->id);
    r->id = nid;
    rs->rules[w++] = *r;
  }
  rs->n = w;
  return BASE_OK;
}

base_status gen_mine(const gen_mine_options *o, const ir_graph *const *g,
                     int ng, gen_mine_stats *st, base_diag *d) {
  memset(st, 0, sizeof *st);
  if (!o->output)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "no output file");
  if (o->depth < 1 || o->depth > GEN_MINE_MAX_DEPTH)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "depth must be 1..%d, not %d",
                         GEN_MINE_MAX_DEPTH, o->depth);
  ir_ruleset rs;
  ir_ruleset_init(&rs);
  mn_ctx c = {.o = o, .rs = &rs, .st = st, .d = d, .noact = -1};
  base_status s = BASE_OK;
  for (int i = 0; !s && i < ng; i++)
    s = mine_graph(&c, g[i]);
  long long unproven = 0;
  if (!s)
    s = gen_verify_all(&rs, o->z3_timeout_ms, o->threads, o->progress, o->u,
                       &st->proven, &unproven, d);
  if (!s)
    s = generalise_all(&rs, o, d);
  if (!s)
    s = keep_proven(&rs, d);
  free(c.seen), free(c.lins);
  if (!s && o->interrupt && *o->interrupt)
    s = base_diag_set(d, BASE_ERR_INTERRUPTED, 0, 0, "interrupted");
  if (!s) {
    char header[512];
    snprintf(header, sizeof header,
             "# superopt rules v1\n"
             "# generated by: superopt gen-rules --mine (%d graphs, depth "
             "%d)\n"
             "# %d rules; proofs checked by Z3 against the axioms in "
             "docs/verify.md\n",
             ng, o->depth, rs.n);
    s = ir_rules_write_file(&rs, header, o->output, d);
    st->written = s ? 0 : rs.n;
  }
  ir_ruleset_free(&rs);
  return s;
}
