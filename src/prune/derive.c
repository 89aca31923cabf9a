/* derive.c: whether a rule follows from a library of rules by rewriting.
 *
 * A bidirectional breadth-first search: from each side of the goal, every
 * library rule (in either direction) is applied at every match, with the
 * search module's matcher and rewriter; the goal is derived when a graph
 * reached from src and one reached from dst compute the same terms over the
 * same inputs (pr_term_hash: commutative arguments unordered). Each step is
 * an application of a proven rule, so a derivation is a proof.
 */
#include <stdlib.h>
#include <string.h>

#include "../rewrite/rewrite.h"
#include "prune.h"

typedef struct dir {
  const ir_graph *pat, *repl;
  uint64_t ops; /* opcodes the pattern needs */
} dir;

struct pr_lib {
  dir *d;
  int n;
};

static uint64_t op_mask(const ir_graph *g) {
  uint64_t m = 0;
  for (int i = 0; i < g->nnodes; i++)
    m |= (uint64_t)1 << (g->nodes[i].op % 64);
  return m;
}

pr_lib *pr_lib_new(const ir_ruleset *lib) {
  pr_lib *l = base_calloc(1, sizeof *l);
  if (!l || !(l->d = base_calloc((size_t)lib->n * 2 + 1, sizeof *l->d))) {
    free(l);
    return NULL;
  }
  for (int i = 0; i < lib->n; i++) {
    const ir_rule *r = &lib->rules[i];
    if (r->status != IR_RULE_PROVEN)
      continue;
    for (int k = 0; k < 2; k++) {
      const ir_graph *p = k ? r->dst : r->src, *q = k ? r->src : r->dst;
      if (p->nnodes)
        l->d[l->n++] = (dir){p, q, op_mask(p)};
    }
  }
  return l;
}

void pr_lib_free(pr_lib *l) {
  if (l)
    free(l->d);
  free(l);
}

/* Graphs reached from one side, level by level: each with its term hash
 * (sides meet on it) and its hash with commutative arguments as written
 * (states are distinct on it: the matcher does not reorder arguments, so
 * every order of them is a state of its own, reached for free). */
typedef struct side {
  ir_graph **g;
  uint64_t *h, *o; /* parallel to g */
  int n, cap;
} side;

static int has(const uint64_t *h, int n, uint64_t v) {
  for (int i = 0; i < n; i++)
    if (h[i] == v)
      return 1;
  return 0;
}

static int side_push(side *s, ir_graph *g, uint64_t h, uint64_t o) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    ir_graph **ng = base_realloc(s->g, (size_t)cap * sizeof *ng);
    if (ng)
      s->g = ng;
    uint64_t *nh = ng ? base_realloc(s->h, (size_t)cap * sizeof *nh) : NULL;
    if (nh)
      s->h = nh;
    uint64_t *no = nh ? base_realloc(s->o, (size_t)cap * sizeof *no) : NULL;
    if (!no)
      return -1;
    s->o = no, s->cap = cap;
  }
  s->g[s->n] = g, s->h[s->n] = h, s->o[s->n++] = o;
  return 0;
}

/* Adds g (owned; freed if already there or on failure) and every order of
 * its commutative operators' arguments; -1 when out of memory. */
static int side_add(side *s, ir_graph *g) {
  uint64_t h, o;
  if (pr_term_hash(g, &h) || pr_term_hash_ordered(g, &o)) {
    ir_graph_free(g);
    return -1;
  }
  if (has(s->o, s->n, o)) {
    ir_graph_free(g);
    return 0;
  }
  if (side_push(s, g, h, o)) {
    ir_graph_free(g);
    return -1;
  }
  int comm[4], k = 0;
  for (int i = 0; i < g->nnodes && k < 4; i++)
    if (pr_commutative(g->nodes[i].op) && g->nodes[i].nin == 2 &&
        g->nodes[i].in[0] != g->nodes[i].in[1])
      comm[k++] = i;
  for (int mask = 1; mask < 1 << k; mask++) {
    ir_graph *v = ir_graph_clone(g);
    if (!v)
      return -1;
    for (int j = 0; j < k; j++)
      if (mask >> j & 1) {
        int32_t *in = v->nodes[comm[j]].in, t = in[0];
        in[0] = in[1], in[1] = t;
      }
    if (pr_term_hash_ordered(v, &o)) {
      ir_graph_free(v);
      return -1;
    }
    if (has(s->o, s->n, o)) {
      ir_graph_free(v);
    } else if (side_push(s, v, h, o)) {
      ir_graph_free(v);
      return -1;
    }
  }
  return 0;
}

static void side_free(side *s) {
  for (int i = 0; i < s->n; i++)
    ir_graph_free(s->g[i]);
  free(s->g);
  free(s->h);
  free(s->o);
}

/* Expands s's graphs [from, to) by one rewrite each; stops at max states
 * or when a new graph's hash is in other (*met). */
static base_status expand(const pr_lib *l, side *s, int from, int to,
                          const side *other, int max_nodes, int max_states,
                          int *met) {
  rewrite_matches ms = {0};
  for (int i = from; i < to && !*met && s->n < max_states; i++) {
    const ir_graph *g = s->g[i];
    uint64_t have = op_mask(g);
    for (int k = 0; k < l->n && !*met && s->n < max_states; k++) {
      const dir *r = &l->d[k];
      base_diag d;
      if ((r->ops & ~have) || r->pat->nnodes > g->nnodes)
        continue;
      ms.n = 0;
      base_status st = rewrite_match_graph(r->pat, g, &ms, &d);
      if (st == BASE_ERR_NOMEM) {
        rewrite_matches_free(&ms);
        return st;
      }
      if (st)
        continue;
      for (int m = 0; m < ms.n && !*met && s->n < max_states; m++) {
        ir_graph *ng = rewrite_apply(g, r->pat, r->repl, &ms.m[m], &d);
        uint64_t h = 0;
        if (!ng && d.code == BASE_ERR_NOMEM) {
          rewrite_matches_free(&ms);
          return BASE_ERR_NOMEM;
        }
        if (!ng)
          continue;
        if (ng->nnodes > max_nodes) {
          ir_graph_free(ng);
          continue;
        }
        if (pr_term_hash(ng, &h)) {
          ir_graph_free(ng);
          rewrite_matches_free(&ms);
          return BASE_ERR_NOMEM;
        }
        *met = has(other->h, other->n, h);
        if (side_add(s, ng)) {
          rewrite_matches_free(&ms);
          return BASE_ERR_NOMEM;
        }
      }
    }
  }
  rewrite_matches_free(&ms);
  return BASE_OK;
}

base_status pr_derivable(const pr_lib *l, const ir_rule *goal, int depth,
                         int max_states, int *found, base_diag *d) {
  side a = {0}, b = {0};
  ir_graph *s = ir_graph_clone(goal->src), *t = ir_graph_clone(goal->dst);
  base_status st = BASE_OK;
  *found = 0;
  /* side_add takes its graph, also when it fails */
  int bad = !s || !t;
  if (bad) {
    ir_graph_free(s);
    ir_graph_free(t);
  } else if (side_add(&a, s)) {
    ir_graph_free(t);
    bad = 1;
  } else {
    bad = side_add(&b, t);
  }
  if (bad) {
    side_free(&a);
    side_free(&b);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  int max_nodes = goal->src->nnodes > goal->dst->nnodes ? goal->src->nnodes
                                                        : goal->dst->nnodes;
  max_nodes += 1; /* a derivation may pass through one larger graph */
  *found = a.h[0] == b.h[0];
  int fa = 0, fb = 0; /* the last level's first graph on each side */
  for (int step = 0; step < depth && !*found && !st; step++) {
    side *x = step % 2 ? &b : &a, *y = step % 2 ? &a : &b;
    int *f = step % 2 ? &fb : &fa, to = x->n;
    st = expand(l, x, *f, to, y, max_nodes, max_states, found);
    *f = to;
  }
  side_free(&a);
  side_free(&b);
  if (st)
    return base_diag_set(d, st, 0, 0, "out of memory");
  return BASE_OK;
}
