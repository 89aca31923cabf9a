/* mine.c: gen_mine, rules mined from workloads (`gen-rules --mine G...`).
 *
 *   for each value t of each graph (the target):
 *     for each form (unary, norm, attention): one node over t's ancestors
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
  uint64_t *seen;               /* hashes of the pairs tried */
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
        (map[ops[i].t] = ir_add_tensor(h, ops[i].name, IR_T_INPUT, &s, d)) < 0)
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
  for (int i = 0, k = 0; r->prod_sides && i < c->nside; i++)
    for (int u = 0; u < c->uses[i]; u++) {
      char nm[16];
      int32_t in[2] = {map[c->side[i]], sc};
      snprintf(nm, sizeof nm, "sc%d", ++k);
      sc = sc < 0 ? in[0] : add1(h, IR_OP_EWMUL, in, 2, NULL, nm, d);
      if (sc < 0)
        return -2;
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
static ir_graph *build_dst(const mn_ctx *c, const mn_opnd *ops, int n,
                           const mn_sizes *z, const mn_rhs *r, base_diag *d) {
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

/* Whether the rule's graphs were tried before (else remembers them); -1
 * when out of memory. */
static int tried(mn_ctx *c, const ir_rule *r) {
  uint64_t h = text_hash(r);
  if (!h)
    return -1;
  for (int i = 0; i < c->nseen; i++)
    if (c->seen[i] == h)
      return 1;
  if (c->nseen == c->capseen) {
    int cap = c->capseen ? 2 * c->capseen : 64;
    uint64_t *s = base_realloc(c->seen, (size_t)cap * sizeof *s);
    if (!s)
      return -1;
    c->seen = s, c->capseen = cap;
  }
  c->seen[c->nseen++] = h;
  return 0;
}

/* Whether the cut is r's node itself (and constants). */
static int is_itself(const mn_ctx *c, const mn_rhs *r) {
  int k = -1, n = 0;
  for (int j = 0; j < c->ncut; j++)
    if (ir_op(c->g->nodes[c->cut[j]].op)->kind != IR_OPK_CONST)
      n++, k = c->cut[j];
  return n == 1 && c->g->nodes[k].op == r->op;
}

/* Tries one candidate: r over ops against the cut that ends at t. -1 on
 * OOM. */
static int try_pair(mn_ctx *c, int32_t t, const mn_opnd *ops, int n,
                    const mn_rhs *r) {
  mn_sizes z;
  if (c->ncut < 2 || is_itself(c, r) || !sizes_of(c, ops, n, &z))
    return 0;
  base_diag d = {0};
  ir_graph *src = build_src(c, t, ops, n, &z, &d);
  ir_graph *dst = src ? build_dst(c, ops, n, &z, r, &d) : NULL;
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
 * q [.., S, Cq], k and v [.., T, Ck|Cv] (one tensor or three) for t [.., S,
 * H*E]. Its operands are pooled by a walk back from t through moves
 * (reshape, transpose, slice), scalings by a constant and an attention's q,
 * k and v: where the walk stops on a value of t's rank, a row; an
 * attention's scale and bias, a scale and a bias. H is a size of the cut
 * dividing t's columns, D is E or a row's columns over H, the column
 * offsets 0 or the starts of the cut's slices, the guard the cut's
 * attention's (0 and 1 without one); the scale is the cut's constants times
 * s (the heads' scalings moved in). */

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
    } else if (u != t && shp(c, u)->rank == shp(c, t)->rank && is_f32(c, u)) {
      pool_add(rows, u);
    }
  }
}

/* Rows for t: its rank (3 or more), its leading dimensions, n rows (or
 * any: -1). */
static int rows_fit(const mn_ctx *c, int32_t a, int32_t t, int64_t n) {
  return shp(c, t)->rank >= 3 && att_fit(c, a, t, n, -1);
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

/* Every head count, head width, column offsets and guard for ops. */
static int rows_params(mn_ctx *c, int32_t t, const mn_opnd *ops, int n) {
  const ir_shape *y = shp(c, t);
  int64_t cols = y->dim[y->rank - 1], w[3];
  for (int i = 0; i < 3; i++)
    w[i] = shp(c, ops[i].t)->dim[y->rank - 1];
  mn_dom m;
  rows_domain(c, cols, &m);
  for (int h = 0; h < m.nheads; h++) {
    int64_t e = cols / m.heads[h], dd[2] = {e, w[0] / m.heads[h]};
    for (int di = 0; di < (dd[1] == e || w[0] % m.heads[h] ? 1 : 2); di++)
      for (int a = 0; a < m.noffs * m.noffs * m.noffs; a++) {
        int64_t off[3] = {m.offs[a % m.noffs], m.offs[a / m.noffs % m.noffs],
                          m.offs[a / m.noffs / m.noffs]};
        int64_t hd = m.heads[h] * dd[di], he = m.heads[h] * e;
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
          if (try_pair(c, t, ops, n, &r) < 0)
            return -1;
        }
      }
  }
  return 0;
}

static int form_rows(mn_ctx *c, int32_t t) {
  if (shp(c, t)->rank < 3)
    return 0;
  mn_pool rows, sm;
  rows_pools(c, t, &rows, &sm);
  int64_t s = shp(c, t)->dim[shp(c, t)->rank - 2];
  for (int qi = 0; qi < rows.n; qi++)
    for (int ki = 0; ki < rows.n; ki++)
      for (int vi = 0; vi < rows.n; vi++) {
        int32_t q = rows.t[qi], k = rows.t[ki], v = rows.t[vi];
        if (!rows_fit(c, q, t, s) || !rows_fit(c, k, t, -1) ||
            !rows_fit(c, v, t, shp(c, k)->dim[shp(c, k)->rank - 2]))
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
            if (cut(c, t, ops, n) && rows_params(c, t, ops, n) < 0)
              return -1;
          }
      }
  return 0;
}

typedef int (*mn_form)(mn_ctx *c, int32_t t);
static const mn_form mn_forms[] = {form_unary, form_norm, form_attention,
                                   form_rows};

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
  mn_ctx c = {.o = o, .rs = &rs, .st = st, .d = d};
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
  free(c.seen);
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
