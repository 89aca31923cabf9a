/* prune.c: the prune stage of gen-rules (see prune.h for what is dropped).
 *
 * Term hashes: every tensor of a graph gets a 64-bit hash of the term that
 * computes it, over graph input names; commutative operators hash their
 * arguments in sorted order. Pair keys: the pair becomes one coloured,
 * directed graph (inputs, the nodes of both sides, argument ports, output
 * slots, output markers) whose canonical labelling by igraph (BLISS) yields
 * a name-free form, hashed with XXH3.
 */
#include "prune.h"

#include <igraph/igraph.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

int pr_commutative(ir_opcode op) {
  return (ir_op(op)->flags & IR_OPF_COMM) != 0;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t b[2] = {h, v};
  return XXH3_64bits(b, sizeof b);
}

static uint64_t str_hash(const char *s) { return XXH3_64bits(s, strlen(s)); }

static uint64_t op_hash(const ir_node *n) {
  uint64_t h = str_hash(ir_op(n->op)->name);
  return mix(h, XXH3_64bits(&n->a, sizeof n->a));
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Cutting values out of a graph (common context): tensors whose value
 * hash (vh) is in the sorted set cut[n] become leaves named by the value. */
typedef struct cutset {
  const uint64_t *vh, *cut;
  int n;
  int cuts; /* node results cut */
} cutset;

static int has_value(const uint64_t *set, int n, uint64_t v) {
  return v && bsearch(&v, set, (size_t)n, sizeof v, cmp_u64) != NULL;
}

static uint64_t value_leaf(uint64_t v) { return mix(0xc07, v); }

/* Term hashes of every tensor of g into h[ntensors] (malloc'd); commutative
 * arguments sorted unless ordered. Inputs and weights are named by name, or
 * with a cut set by value, and node results in the cut set are leaves. */
static uint64_t *term_hashes_by(const ir_graph *g, int ordered, cutset *cs) {
  uint64_t *h = base_calloc((size_t)g->ntensors + 1, sizeof *h);
  if (!h)
    return NULL;
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind != IR_T_VALUE)
      h[i] = cs && cs->vh[i]
                 ? value_leaf(cs->vh[i])
                 : mix(str_hash(g->tensors[i].name), g->tensors[i].kind);
  uint64_t args[IR_MAX_IN];
  for (int k = 0; k < g->nnodes; k++) {
    const ir_node *n = &g->nodes[k];
    for (int j = 0; j < n->nin; j++)
      args[j] = h[n->in[j]];
    if (pr_commutative(n->op) && !ordered)
      qsort(args, (size_t)n->nin, sizeof *args, cmp_u64);
    uint64_t v = mix(op_hash(n), XXH3_64bits(args, (size_t)n->nin * 8));
    for (int j = 0; j < n->nout; j++) {
      int32_t t = n->out[j];
      if (cs && has_value(cs->cut, cs->n, cs->vh[t])) {
        h[t] = value_leaf(cs->vh[t]);
        cs->cuts++;
      } else {
        h[t] = mix(v, (uint64_t)j);
      }
    }
  }
  return h;
}

static uint64_t *term_hashes(const ir_graph *g) {
  return term_hashes_by(g, 0, NULL);
}

static base_status outputs_hash(const ir_graph *g, int ordered, uint64_t *out) {
  uint64_t *h = term_hashes_by(g, ordered, NULL);
  if (!h)
    return BASE_ERR_NOMEM;
  uint64_t r = 0x5eed;
  for (int i = 0; i < g->noutputs; i++)
    r = mix(r, h[g->outputs[i]]);
  free(h);
  *out = r;
  return BASE_OK;
}

base_status pr_term_hash(const ir_graph *g, uint64_t *h) {
  return outputs_hash(g, 0, h);
}

base_status pr_term_hash_ordered(const ir_graph *g, uint64_t *h) {
  return outputs_hash(g, 1, h);
}

base_status pr_is_trivial(const ir_rule *r, int *yes) {
  uint64_t a, b;
  base_status st = pr_term_hash(r->src, &a);
  if (!st)
    st = pr_term_hash(r->dst, &b);
  *yes = !st && a == b;
  return st;
}

/* Hash of node n if all its inputs are graph inputs or weights, else 0. */
static uint64_t leaf_op_hash(const ir_graph *g, const ir_node *n,
                             const uint64_t *h) {
  for (int j = 0; j < n->nin; j++)
    if (g->tensors[n->in[j]].kind == IR_T_VALUE)
      return 0;
  return h[n->out[0]];
}

base_status pr_has_common_sub(const ir_rule *r, int *yes) {
  uint64_t *hs = term_hashes(r->src), *hd = term_hashes(r->dst);
  int found = 0;
  base_status st = hs && hd ? BASE_OK : BASE_ERR_NOMEM;
  for (int i = 0; hs && hd && i < r->src->nnodes && !found; i++) {
    uint64_t a = leaf_op_hash(r->src, &r->src->nodes[i], hs);
    for (int j = 0; a && j < r->dst->nnodes && !found; j++)
      found = leaf_op_hash(r->dst, &r->dst->nodes[j], hd) == a;
  }
  free(hs);
  free(hd);
  *yes = found;
  return st;
}

base_status pr_has_common_super(const ir_rule *r, int *yes) {
  *yes = 0;
  if (r->src->noutputs != 1)
    return BASE_OK;
  const ir_tensor *ts = &r->src->tensors[r->src->outputs[0]];
  const ir_tensor *td = &r->dst->tensors[r->dst->outputs[0]];
  if (ts->node < 0 || td->node < 0 || ts->slot != td->slot)
    return BASE_OK;
  const ir_node *a = &r->src->nodes[ts->node], *b = &r->dst->nodes[td->node];
  if (a->op != b->op || a->nin != b->nin || op_hash(a) != op_hash(b))
    return BASE_OK;
  uint64_t *hs = term_hashes(r->src), *hd = term_hashes(r->dst);
  int differ = 0;
  base_status st = hs && hd ? BASE_OK : BASE_ERR_NOMEM;
  if (hs && hd) {
    uint64_t x[IR_MAX_IN], y[IR_MAX_IN];
    for (int j = 0; j < a->nin; j++) {
      x[j] = hs[a->in[j]];
      y[j] = hd[b->in[j]];
    }
    if (pr_commutative(a->op)) { /* best alignment: sorted */
      qsort(x, (size_t)a->nin, sizeof *x, cmp_u64);
      qsort(y, (size_t)a->nin, sizeof *y, cmp_u64);
    }
    for (int j = 0; j < a->nin; j++)
      differ += x[j] != y[j];
  }
  free(hs);
  free(hd);
  *yes = !st && differ == 1;
  return st;
}

/* ---- common context ------------------------------------------------------ */

/* Sorted nonzero value hashes of g's tensors. */
static int sorted_values(const ir_graph *g, const uint64_t *vh, uint64_t *out) {
  int n = 0;
  for (int i = 0; i < g->ntensors; i++)
    if (vh[i])
      out[n++] = vh[i];
  qsort(out, (size_t)n, sizeof *out, cmp_u64);
  return n;
}

/* The hashes of g's outputs with cs's values cut out into out[]. */
static int context_hashes(const ir_graph *g, cutset *cs, uint64_t *out) {
  uint64_t *h = term_hashes_by(g, 0, cs);
  if (!h)
    return -1;
  for (int i = 0; i < g->noutputs; i++)
    out[i] = h[g->outputs[i]];
  free(h);
  return 0;
}

base_status pr_has_common_context(const ir_rule *r, const uint64_t *vs,
                                  const uint64_t *vd, int *yes) {
  const ir_graph *s = r->src, *d = r->dst;
  size_t n = (size_t)s->ntensors + (size_t)d->ntensors + 2;
  uint64_t *a = base_malloc(n * sizeof *a), *b = a ? a + s->ntensors + 1 : NULL;
  uint64_t *cut = base_malloc(n * sizeof *cut);
  uint64_t *os = base_malloc((size_t)(s->noutputs + d->noutputs + 1) * 8);
  int found = 0, na, nb, nc = 0;
  base_status st = a && cut && os ? BASE_OK : BASE_ERR_NOMEM;
  if (st || s->noutputs != d->noutputs)
    goto done;
  na = sorted_values(s, vs, a);
  nb = sorted_values(d, vd, b);
  for (int i = 0, j = 0; i < na && j < nb;) /* a and b, without outputs */
    if (a[i] < b[j])
      i++;
    else if (b[j] < a[i])
      j++;
    else {
      int out = 0;
      for (int k = 0; k < s->noutputs; k++)
        out |= vs[s->outputs[k]] == a[i] || vd[d->outputs[k]] == a[i];
      if (!out && (!nc || cut[nc - 1] != a[i]))
        cut[nc++] = a[i];
      i++, j++;
    }
  uint64_t *od = os + s->noutputs;
  cutset cs = {vs, cut, nc, 0}, cd = {vd, cut, nc, 0};
  if (!nc)
    goto done;
  if (context_hashes(s, &cs, os) || context_hashes(d, &cd, od)) {
    st = BASE_ERR_NOMEM;
    goto done;
  }
  if (!(cs.cuts + cd.cuts))
    goto done;
  found = 1;
  for (int k = 0; k < s->noutputs; k++)
    found &= os[k] == od[k];
done:
  free(a);
  free(cut);
  free(os);
  *yes = found;
  return st;
}

/* ---- the pair graph and its canonical key ------------------------------ */

typedef struct pgraph {
  uint64_t *label; /* vertex colours (hashes) */
  int nv, capv;
  igraph_integer_t *edges; /* pairs */
  int ne, cape;
  int oom;
} pgraph;

static int pg_vertex(pgraph *p, uint64_t label) {
  if (p->nv == p->capv) {
    int cap = p->capv ? 2 * p->capv : 64;
    uint64_t *l = base_realloc(p->label, (size_t)cap * sizeof *l);
    if (!l) {
      p->oom = 1;
      return 0;
    }
    p->label = l;
    p->capv = cap;
  }
  p->label[p->nv] = label;
  return p->nv++;
}

static void pg_edge(pgraph *p, int u, int v) {
  if (p->ne == p->cape) {
    int cap = p->cape ? 2 * p->cape : 128;
    igraph_integer_t *e = base_realloc(p->edges, (size_t)cap * 2 * sizeof *e);
    if (!e) {
      p->oom = 1;
      return;
    }
    p->edges = e;
    p->cape = cap;
  }
  p->edges[2 * p->ne] = u;
  p->edges[2 * p->ne + 1] = v;
  p->ne++;
}

/* Input vertices by name, shared by both sides. */
typedef struct invert {
  const char *name[IR_MAX_IN * 4];
  int v[IR_MAX_IN * 4];
  int n;
} invert;

static int input_vertex(pgraph *p, invert *iv, const ir_tensor *t) {
  for (int i = 0; i < iv->n; i++)
    if (!strcmp(iv->name[i], t->name))
      return iv->v[i];
  /* ir_shape has padding after rank: hash its fields, not its bytes */
  uint64_t l = mix(str_hash("in"), (uint64_t)t->shape.rank);
  for (int i = 0; i < t->shape.rank; i++)
    l = mix(l, (uint64_t)t->shape.dim[i]);
  int v = pg_vertex(p, mix(l, t->kind));
  if (iv->n < (int)(sizeof iv->v / sizeof *iv->v)) {
    iv->name[iv->n] = t->name;
    iv->v[iv->n++] = v;
  } else {
    p->oom = 1;
  }
  return v;
}

/* Adds one side; out_v[i] receives the vertex of output i's marker. */
static void add_side(pgraph *p, invert *iv, const ir_graph *g, int side,
                     int *out_v) {
  int *tv = base_malloc(((size_t)g->ntensors + 1) * sizeof *tv);
  if (!tv) {
    p->oom = 1;
    return;
  }
  for (int i = 0; i < g->ntensors; i++)
    tv[i] = g->tensors[i].kind == IR_T_VALUE
                ? -1
                : input_vertex(p, iv, &g->tensors[i]);
  for (int k = 0; k < g->nnodes; k++) {
    const ir_node *n = &g->nodes[k];
    int nv = pg_vertex(p, mix(op_hash(n), (uint64_t)side));
    for (int j = 0; j < n->nin; j++) {
      int port = pg_vertex(
          p, mix(str_hash("port"), pr_commutative(n->op) ? 0 : (uint64_t)j));
      pg_edge(p, tv[n->in[j]], port);
      pg_edge(p, port, nv);
    }
    for (int j = 0; j < n->nout; j++) {
      if (n->nout == 1) {
        tv[n->out[j]] = nv;
        continue;
      }
      int sv = pg_vertex(p, mix(str_hash("slot"), (uint64_t)j));
      pg_edge(p, nv, sv);
      tv[n->out[j]] = sv;
    }
  }
  for (int i = 0; i < g->noutputs; i++) {
    out_v[i] = pg_vertex(p, mix(str_hash("out"), (uint64_t)side));
    pg_edge(p, tv[g->outputs[i]], out_v[i]);
  }
  free(tv);
}

/* Canonical hash of the pair graph with src on side a and dst on side b. */
static base_status side_key(const ir_rule *r, int swap, uint64_t *key,
                            base_diag *d) {
  pgraph p = {0};
  invert *iv = base_calloc(1, sizeof *iv);
  int no = r->src->noutputs;
  int *os = base_calloc((size_t)no, sizeof *os),
      *od = base_calloc((size_t)no, sizeof *od);
  base_status st = BASE_OK;
  if (!iv || !os || !od) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto done;
  }
  add_side(&p, iv, r->src, swap ? 1 : 0, os);
  add_side(&p, iv, r->dst, swap ? 0 : 1, od);
  for (int i = 0; i < no; i++) /* output i of side 0 -> output i of side 1 */
    pg_edge(&p, swap ? od[i] : os[i], swap ? os[i] : od[i]);
  if (p.oom) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto done;
  }
  /* colours: the rank of each label among the distinct labels */
  uint64_t *sorted = base_malloc((size_t)p.nv * sizeof *sorted);
  igraph_vector_int_t col, lab, ev;
  igraph_t ig;
  if (!sorted) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto done;
  }
  memcpy(sorted, p.label, (size_t)p.nv * sizeof *sorted);
  qsort(sorted, (size_t)p.nv, sizeof *sorted, cmp_u64);
  igraph_vector_int_init(&col, p.nv);
  igraph_vector_int_init(&lab, 0);
  for (int i = 0; i < p.nv; i++) {
    uint64_t *f =
        bsearch(&p.label[i], sorted, (size_t)p.nv, sizeof *sorted, cmp_u64);
    while (f > sorted && f[-1] == p.label[i])
      f--;
    VECTOR(col)[i] = f - sorted;
  }
  igraph_vector_int_view(&ev, p.edges, 2 * p.ne);
  int err = igraph_create(&ig, &ev, p.nv, IGRAPH_DIRECTED);
  int created = !err;
  if (!err)
    err = igraph_canonical_permutation(&ig, &col, &lab, IGRAPH_BLISS_FL, NULL);
  if (err) {
    st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "igraph: %s",
                       igraph_strerror(err));
  } else {
    uint64_t *canon =
        base_calloc((size_t)p.nv + 2 * (size_t)p.ne, sizeof *canon);
    if (!canon) {
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    } else {
      for (int i = 0; i < p.nv; i++)
        canon[VECTOR(lab)[i]] = p.label[i];
      uint64_t *e = canon + p.nv;
      for (int i = 0; i < p.ne; i++)
        e[i] = (uint64_t)VECTOR(lab)[p.edges[2 * i]] << 32 |
               (uint64_t)VECTOR(lab)[p.edges[2 * i + 1]];
      qsort(e, (size_t)p.ne, sizeof *e, cmp_u64);
      *key = XXH3_64bits(canon, ((size_t)p.nv + (size_t)p.ne) * sizeof *canon);
      free(canon);
    }
  }
  if (created)
    igraph_destroy(&ig);
  igraph_vector_int_destroy(&col);
  igraph_vector_int_destroy(&lab);
  free(sorted);
done:
  free(p.label);
  free(p.edges);
  free(iv);
  free(os);
  free(od);
  return st;
}

base_status pr_pair_key(const ir_rule *r, uint64_t *key, base_diag *d) {
  uint64_t a, b;
  /* igraph's default handler aborts; errors come back as codes instead */
  igraph_error_handler_t *old =
      igraph_set_error_handler(igraph_error_handler_ignore);
  base_status st = side_key(r, 0, &a, d);
  if (st == BASE_OK)
    st = side_key(r, 1, &b, d);
  igraph_set_error_handler(old);
  if (st == BASE_OK)
    *key = a < b ? a : b;
  return st;
}

/* ---- the stage ----------------------------------------------------------- */

typedef struct keyed {
  uint64_t key;
  int index;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->index - y->index;
}

base_status pr_redundant(const ir_rule *r, pr_kind *kind) {
  int yes = 0;
  base_status st = pr_is_trivial(r, &yes);
  *kind = PR_TRIVIAL;
  if (!st && !yes) {
    st = pr_has_common_sub(r, &yes);
    *kind = PR_COMMON_SUB;
  }
  if (!st && !yes) {
    st = pr_has_common_super(r, &yes);
    *kind = PR_COMMON_SUPER;
  }
  if (st || !yes)
    *kind = PR_KEEP;
  return st;
}

void pr_stats_add(pr_stats *st, pr_kind k, long long n) {
  if (k == PR_TRIVIAL)
    st->trivial += n;
  else if (k == PR_COMMON_SUB)
    st->common_sub += n;
  else if (k == PR_COMMON_SUPER)
    st->common_super += n;
  else if (k == PR_COMMON_CONTEXT)
    st->common_context += n;
}

base_status pr_prune(ir_ruleset *rs, pr_stats *st, base_diag *d) {
  pr_stats s = {0};
  s.in = rs->n;
  char *drop = base_calloc((size_t)rs->n + 1, 1);
  keyed *k = base_calloc((size_t)rs->n + 1, sizeof *k);
  if (!drop || !k) {
    free(drop);
    free(k);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  base_status status = BASE_OK;
  int nk = 0;
  for (int i = 0; i < rs->n && status == BASE_OK; i++) {
    const ir_rule *r = &rs->rules[i];
    pr_kind kind;
    if ((status = pr_redundant(r, &kind))) {
      base_diag_set(d, status, 0, 0, "out of memory");
      break;
    }
    if (kind != PR_KEEP) {
      drop[i] = 1;
      pr_stats_add(&s, kind, 1);
    } else if ((status = pr_pair_key(r, &k[nk].key, d)) == BASE_OK)
      k[nk++].index = i;
  }
  qsort(k, (size_t)nk, sizeof *k, cmp_keyed);
  for (int i = 1; i < nk; i++)
    if (k[i].key == k[i - 1].key)
      drop[k[i].index] = 1, s.renaming++;
  if (status == BASE_OK) { /* compact, keeping order */
    int w = 0;
    for (int i = 0; i < rs->n; i++) {
      if (!drop[i]) {
        rs->rules[w++] = rs->rules[i];
        continue;
      }
      ir_rule_clear(&rs->rules[i]);
    }
    rs->n = w;
  }
  s.out = rs->n;
  free(drop);
  free(k);
  if (st)
    *st = s;
  return status;
}
