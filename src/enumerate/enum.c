/* enum.c: depth-first enumeration of canonical graphs (see enum.h and
 * docs/generation.md), one first-level branch per task over OpenMP threads.
 *
 * A candidate node is appended to the graph under construction when:
 *   1. its key is not smaller than the key of any node placed after its
 *      last dependency (the smallest topological order; the key names
 *      inputs by class only, so it does not depend on copy numbers);
 *   2. it is not identical to an earlier node (no common subexpressions);
 *   3. its arguments use the copies of each class in first-use order;
 *   4. it is shape-valid (en_node_op).
 */
#include <string.h>

#include "enum.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct dfs {
  int max_ops, max_outputs;
  int extended;  /* en_config.extended */
  uint32_t gops; /* bit per enabled en_gop */
  en_graph g;    /* the graph under construction */
  ir_shape shapes[EN_MAX_OPS][2];
  uint8_t used[EN_NCLASSES]; /* copies of each class used so far */
  const en_visitor *v;
  void *state;
  int split, part; /* run only second nodes number part, part + split, ... */
  int second;      /* second nodes seen so far */
} dfs;

/* Renaming-invariant descriptor of a value: its class, or its node. */
static uint32_t desc(uint8_t v) {
  return EN_IS_INPUT(v) ? (uint32_t)en_input_class(v) : 8u + (v - 32u);
}

static uint32_t node_key(const en_node *n) {
  int nin = en_gop_nin(n->gop);
  return (uint32_t)n->gop << 24 | (nin > 0 ? desc(n->a[0]) : 0) << 16 |
         (nin > 1 ? desc(n->a[1]) : 0) << 8 | (nin > 2 ? desc(n->p) : n->p);
}

static int last_dep(const en_node *n) {
  int last = -1;
  for (int j = 0; j < en_gop_nin(n->gop); j++) {
    uint8_t v = en_arg(n, j);
    if (!EN_IS_INPUT(v) && EN_NODE_OF(v) > last)
      last = EN_NODE_OF(v);
  }
  return last;
}

static int commutative(int gop) { return gop == EN_EWADD || gop == EN_EWMUL; }

static int canonical(const dfs *s, const en_node *n) {
  uint32_t k = node_key(n);
  if (commutative(n->gop) && n->a[0] > n->a[1])
    return 0;
  for (int j = last_dep(n) + 1; j < s->g.nops; j++)
    if (node_key(&s->g.n[j]) > k)
      return 0;
  for (int j = 0; j < s->g.nops; j++)
    if (!memcmp(&s->g.n[j], n, sizeof *n))
      return 0;
  return 1;
}

/* Values an argument may take given the copies used: the used copies of
 * each class and its next one, then every node output. */
static int avail(const dfs *s, const uint8_t used[EN_NCLASSES], uint8_t *out) {
  int k = 0;
  for (int c = 0; c < EN_NCLASSES; c++) {
    if (!en_class_on(c, s->extended))
      continue;
    int lim = used[c] + 1 < en_class_of(c)->copies ? used[c] + 1
                                                   : en_class_of(c)->copies;
    for (int i = 0; i < lim; i++)
      out[k++] = (uint8_t)en_input_id(c, i);
  }
  for (int i = 0; i < s->g.nops; i++)
    for (int j = 0; j < en_gop_nout(s->g.n[i].gop); j++)
      out[k++] = EN_VNODE(i, j);
  return k;
}

static void use(uint8_t used[EN_NCLASSES], uint8_t v) {
  if (EN_IS_INPUT(v) && en_input_copy(v) == used[en_input_class(v)])
    used[en_input_class(v)]++;
}

static base_status descend(dfs *s);

static int find(int *up, int i) {
  while (up[i] != i)
    i = up[i] = up[up[i]];
  return i;
}

/* Connected components of g's nodes, linked by the values they share:
 * one node reading another's output, or two nodes reading one input. */
static int components(const en_graph *g) {
  int up[EN_MAX_OPS], reader[EN_NINPUT_IDS], comps = g->nops;
  for (int v = 0; v < EN_NINPUT_IDS; v++)
    reader[v] = -1;
  for (int i = 0; i < g->nops; i++) {
    up[i] = i;
    for (int j = 0; j < en_gop_nin(g->n[i].gop); j++) {
      uint8_t v = en_arg(&g->n[i], j);
      int o = EN_IS_INPUT(v) ? reader[v] : EN_NODE_OF(v);
      if (EN_IS_INPUT(v) && o < 0)
        reader[v] = i;
      if (o >= 0 && find(up, o) != find(up, i))
        up[find(up, o)] = find(up, i), comps--;
    }
  }
  return comps;
}

/* Appends n if it passes the checks, visits the graph and goes deeper. */
static base_status try_node(dfs *s, en_node n) {
  const ir_shape *in[EN_MAX_NIN] = {NULL, NULL, NULL};
  int k = s->g.nops;
  ir_opcode op;
  ir_attrs a;
  if (!canonical(s, &n))
    return BASE_OK;
  for (int j = 0; j < en_gop_nin(n.gop); j++)
    in[j] = en_value_shape(en_arg(&n, j), (const ir_shape(*)[2])s->shapes);
  if (en_node_op(&n, in, &op, &a, s->shapes[k]))
    return BASE_OK;
  if (k == 1 && s->split > 1 && s->second++ % s->split != s->part)
    return BASE_OK; /* another part of this first node's branch */
  uint8_t saved[EN_NCLASSES];
  memcpy(saved, s->used, sizeof saved);
  for (int j = 0; j < en_gop_nin(n.gop); j++)
    use(s->used, en_arg(&n, j));
  s->g.n[k] = n;
  s->g.nops = (uint8_t)(k + 1);
  uint8_t outs[EN_MAX_OUTPUTS];
  int comps = components(&s->g), nout = en_graph_outputs(&s->g, outs);
  int left = s->max_ops - (k + 1), keep = comps == 1 && nout <= s->max_outputs;
  if (k == 0 && s->part > 0)
    keep = 0; /* part 0 of the branch visits the first node alone */
  /* each further node joins at most two components into one, and reads at
   * most two outputs while adding one */
  int deeper = left > 0 && comps - 1 <= left && nout - s->max_outputs <= left;
  base_status st = BASE_OK;
  if (keep || deeper)
    st = s->v->visit(s->state, &s->g, (const ir_shape(*)[2])s->shapes, keep);
  if (!st && deeper && (!s->v->stop || !s->v->stop(s->state, &s->g)))
    st = descend(s);
  s->g.nops = (uint8_t)k;
  memset(&s->g.n[k], 0, sizeof s->g.n[k]);
  memcpy(s->used, saved, sizeof saved);
  return st;
}

/* Does some pool class have shape s with dim[axis] replaced by d? */
static int pool_part(const ir_shape *s, int axis, int64_t d) {
  ir_shape t = *s;
  t.dim[axis] = d;
  for (int c = 0; c < EN_NCLASSES; c++)
    if (ir_shape_eq(&t, &en_class_of(c)->shape))
      return 1;
  return 0;
}

/* Split points of s along axis, ascending: the half, and every point where
 * one part has a pool shape (what a concat of a pool tensor undoes). */
static int split_points(const ir_shape *s, int axis, uint8_t *p) {
  int k = 0;
  int64_t n = s->dim[axis];
  for (int64_t i = 1; i < n && n < 256; i++)
    if (2 * i == n || pool_part(s, axis, i) || pool_part(s, axis, n - i))
      p[k++] = (uint8_t)i;
  return k;
}

/* Classes whose shape a constant may take. */
static int const_ok(int gop, int c) {
  switch (gop) {
  case EN_ICONV: return en_class_of(c)->shape.rank == 4 && c != 2;
  case EN_IMM: return c == 1;
  case EN_CPOOL: return c == 6;
  default: return 1;
  }
}

static base_status expand_const(dfs *s, int gop) {
  base_status st = BASE_OK;
  for (int c = 0; c < EN_NBASE_CLASSES && !st; c++)
    if (const_ok(gop, c))
      st = try_node(s, (en_node){(uint8_t)gop, {0, 0}, (uint8_t)c});
  return st;
}

static base_status expand_unary(dfs *s, int gop) {
  uint8_t vals[EN_NINPUT_IDS + EN_MAX_OUTPUTS], pts[64];
  int nv = avail(s, s->used, vals);
  base_status st = BASE_OK;
  for (int i = 0; i < nv && !st; i++) {
    en_node n = {(uint8_t)gop, {vals[i], 0}, 0};
    if (gop != EN_SPLIT0 && gop != EN_SPLIT1) {
      st = try_node(s, n);
      continue;
    }
    int axis = gop == EN_SPLIT1;
    const ir_shape *sh =
        en_value_shape(vals[i], (const ir_shape(*)[2])s->shapes);
    if (sh->rank <= axis)
      continue;
    int np = split_points(sh, axis, pts);
    for (int j = 0; j < np && !st; j++) {
      n.p = pts[j];
      st = try_node(s, n);
    }
  }
  return st;
}

static base_status expand_binary(dfs *s, int gop) {
  uint8_t v0[EN_NINPUT_IDS + EN_MAX_OUTPUTS],
      v1[EN_NINPUT_IDS + EN_MAX_OUTPUTS];
  int n0 = avail(s, s->used, v0);
  base_status st = BASE_OK;
  for (int i = 0; i < n0 && !st; i++) {
    uint8_t used[EN_NCLASSES];
    memcpy(used, s->used, sizeof used);
    use(used, v0[i]);
    int n1 = avail(s, used, v1);
    for (int j = 0; j < n1 && !st; j++)
      st = try_node(s, (en_node){(uint8_t)gop, {v0[i], v1[j]}, 0});
  }
  return st;
}

/* Three arguments (the third in en_node.p), each from the values
 * available after the earlier ones took their copies. */
static base_status expand_ternary(dfs *s, int gop) {
  enum { NV = EN_NINPUT_IDS + EN_MAX_OUTPUTS };
  uint8_t v0[NV], v1[NV], v2[NV], u1[EN_NCLASSES], u2[EN_NCLASSES];
  int n0 = avail(s, s->used, v0);
  base_status st = BASE_OK;
  for (int i = 0; i < n0 && !st; i++) {
    memcpy(u1, s->used, sizeof u1);
    use(u1, v0[i]);
    int n1 = avail(s, u1, v1);
    for (int j = 0; j < n1 && !st; j++) {
      memcpy(u2, u1, sizeof u2);
      use(u2, v1[j]);
      int n2 = avail(s, u2, v2);
      for (int k = 0; k < n2 && !st; k++)
        st = try_node(s, (en_node){(uint8_t)gop, {v0[i], v1[j]}, v2[k]});
    }
  }
  return st;
}

static base_status expand(dfs *s, int gop) {
  switch (en_gop_nin(gop)) {
  case 0: return expand_const(s, gop);
  case 1: return expand_unary(s, gop);
  case 2: return expand_binary(s, gop);
  default: return expand_ternary(s, gop);
  }
}

static base_status descend(dfs *s) {
  base_status st = BASE_OK;
  for (int gop = 0; gop < EN_NGOPS && !st; gop++)
    if (s->gops >> gop & 1)
      st = expand(s, gop);
  return st;
}

/* ---- first-level branches -------------------------------------------------
 */

static uint32_t gop_mask(const en_config *c) {
  uint64_t ops = c->ops ? c->ops : en_ops_all();
  uint32_t m = 0;
  for (int g = 0; g < EN_NGOPS; g++)
    if (ops >> en_gop_op(g) & 1 && en_gop_on(g, c->extended))
      m |= 1u << g;
  return m;
}

/* Collects the first nodes (depth-1 graphs) instead of visiting them. */
typedef struct collect {
  en_node *first;
  int n, cap;
} collect;

static base_status collect_visit(void *state, const en_graph *g,
                                 const ir_shape (*shapes)[2], int is_graph) {
  collect *c = state;
  (void)shapes, (void)is_graph;
  if (c->first && c->n < c->cap)
    c->first[c->n] = g->n[0];
  c->n++;
  return BASE_OK;
}

static void dfs_init(dfs *s, const en_config *c, const en_visitor *v,
                     void *state) {
  memset(s, 0, sizeof *s);
  s->max_ops = c->max_ops;
  s->max_outputs = c->max_outputs > 0 ? c->max_outputs : EN_DEFAULT_OUTPUTS;
  s->extended = c->extended;
  s->gops = gop_mask(c);
  s->v = v;
  s->state = state;
}

/* Fills first[0..cap-1] with the first nodes, returns their number. */
static int first_nodes(const en_config *c, en_node *first, int cap) {
  collect col = {first, 0, cap};
  en_visitor v = {NULL, collect_visit, NULL, NULL, NULL};
  en_config one = *c;
  dfs s;
  one.max_ops = c->max_ops > 0 ? 1 : 0;
  dfs_init(&s, &one, &v, &col);
  if (one.max_ops)
    descend(&s);
  return col.n;
}

static int parts(const en_config *c) { return c->split > 1 ? c->split : 1; }

int en_branch_count(const en_config *c) {
  return 1 + first_nodes(c, NULL, 0) * parts(c);
}

/* Branch 0: every class's first copy alone. */
static base_status run_inputs(const en_config *c, const en_visitor *v,
                              void *state) {
  base_status st = BASE_OK;
  for (int cl = 0; cl < EN_NCLASSES && !st; cl++) {
    if (!en_class_on(cl, c->extended))
      continue;
    en_graph g;
    memset(&g, 0, sizeof g);
    g.root = (uint8_t)en_input_id(cl, 0);
    st = v->visit(state, &g, NULL, 1);
  }
  return st;
}

/* Branch b >= 1: part (b-1) % parts of the graphs whose first node is
 * first[(b-1) / parts]. */
static base_status run_branch(const en_config *c, const en_visitor *v,
                              void *state, en_node first, int part) {
  dfs s;
  dfs_init(&s, c, v, state);
  s.split = parts(c);
  s.part = part;
  /* re-run depth 1 restricted to this node */
  return try_node(&s, first);
}

static base_status run_one(const en_config *c, const en_visitor *v,
                           const en_node *first, int b) {
  void *state = v->branch_begin(v->u, b);
  if (!state)
    return BASE_ERR_NOMEM;
  int np = parts(c);
  base_status st =
      b == 0 ? run_inputs(c, v, state)
             : run_branch(c, v, state, first[(b - 1) / np], (b - 1) % np);
  v->branch_end(v->u, b, state);
  return st;
}

base_status en_enumerate(const en_config *c, const en_visitor *v,
                         base_diag *d) {
  if (c->max_ops < 0 || c->max_ops > EN_MAX_OPS)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "max-ops must be 0..%d, got %d", EN_MAX_OPS,
                         c->max_ops);
  int nfirst = first_nodes(c, NULL, 0);
  en_node first[nfirst + 1];
  first_nodes(c, first, nfirst);
  int nb = en_branch_count(c), done = 0, total = 0;
  base_status err = BASE_OK;
  for (int b = 0; b < nb; b++)
    total += !c->branches || c->branches[b];
  int threads = c->threads > 0 ? c->threads : 0;
  (void)threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)                                  \
    num_threads(threads ? threads : omp_get_max_threads())
#endif
  for (int b = 0; b < nb; b++) {
    base_status st;
#ifdef _OPENMP
#pragma omp atomic read
#endif
    st = err;
    if (st || (c->branches && !c->branches[b]))
      continue;
    st = run_one(c, v, first, b);
#ifdef _OPENMP
#pragma omp critical(en_progress)
#endif
    {
      if (st && !err) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
        err = st;
      }
      done++;
      if (c->progress)
        c->progress(c->u, "enumerate", done, total);
    }
  }
  if (err)
    return base_diag_set(d, err, 0, 0, "enumeration failed: %s",
                         base_status_name(err));
  return BASE_OK;
}
