/* search.c: TASO's cost-based backtracking search.
 *
 * A priority queue holds candidate graphs by cost. The cheapest is taken
 * and, if its cost is below alpha times the best cost seen, expanded: every
 * match of every usable rule direction is rewritten, each new graph (a
 * structural hash not seen before) is costed and queued. alpha > 1 lets the
 * search walk through slightly worse graphs to reach better ones. Ties break
 * by creation order, so the search is deterministic (unless the time limit
 * stops it). Every queued graph remembers its parent and the rule that made
 * it, so the rules used by the best graph can be counted. Rule directions
 * are grouped by their anchor's signature, so an expansion tries only those
 * whose anchor occurs in the graph; each match is probed (hash and cost,
 * rewrite.c) and built only when it is new and could be queued or best.
 * Under no_passes a second descent follows from the start, fewest
 * operators first, folds into weights first among those (restart()).
 *
 * Fusion is part of the decision (srch_options.fuse_k): the search keeps the
 * fuse_k cheapest distinct graphs it built and the start graph (always: the
 * cheapest unfused may all be variants of one rewrite that breaks a fusion,
 * e.g. the scores' scale made a tensor, which forms no attention node),
 * fuses each at the end with fuse_graph and lowers it (lower_graph: the
 * executor's epilogues, src/fuse/lower.h) under the same cost function, and
 * returns the one cheapest fused and lowered (ties: the cheapest unfused,
 * then the earliest; the start, when not among the cheapest, last).
 */
#include <stdlib.h>
#include <string.h>

#include "../fuse/fuse.h"
#include "../fuse/lower.h"
#include "srch_int.h"

void srch_options_default(srch_options *o) {
  *o = (srch_options){.alpha = 1.05,
                      .budget = 1000,
                      .patience = 100,
                      .max_depth = -1,
                      .time_limit = 0,
                      .directions = REWRITE_BOTH,
                      .region_nodes = 56,
                      .queue_cap = 4096,
                      .passes = 2,
                      .merge = 1,
                      .fuse_k = 8,
                      .descent = 1,
                      .far_siblings = 1,
                      .boundary_joins = 1,
                      .wide_pass = 1,
                      .pass_rules = NULL,
                      .cost = cd_model_cost,
                      .cost_u = NULL};
}

void srch_stats_free(srch_stats *s) {
  free(s->applied_fw);
  free(s->applied_bw);
  free(s->delta_fw);
  free(s->delta_bw);
  memset(s, 0, sizeof *s);
}

base_status srch_stats_alloc(srch_stats *st, int nrules, base_diag *d) {
  size_t n = (size_t)nrules + 1;
  st->nrules = nrules;
  st->applied_fw = base_calloc(n, sizeof(int));
  st->applied_bw = base_calloc(n, sizeof(int));
  st->delta_fw = base_calloc(n, sizeof(double));
  st->delta_bw = base_calloc(n, sizeof(double));
  if (st->applied_fw && st->applied_bw && st->delta_fw && st->delta_bw)
    return BASE_OK;
  srch_stats_free(st);
  return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
}

/* ---- queue, history, seen set
 * ---------------------------------------------------- */

typedef struct cand {
  ir_graph *g;
  double cost;
  int depth, hist;
  int64_t seq;
  int kern;   /* in the descent (restart()): operators run on every
                 inference (kernels()), -1 unknown; else 0 */
  int wonly;  /* in the descent: weight-only operators (run once, at
                 load); else 0 */
  double ref; /* in the descent: the cheapest cost on its path from the
                 start (bound()); else 0 */
} cand;

/* One of the cheapest graphs built (fusion chooses among them). */
typedef struct kbest {
  ir_graph *g; /* values shared with the region */
  double cost;
  int hist; /* its history entry (creation order) */
} kbest;

/* A move_fn rewrite's history direction, and back. */
#define MOVE_DIR(tag) (-2 - (tag))
#define MOVE_TAG(dir) (-2 - (dir))

typedef struct hist {
  int parent, dir; /* dir: the rule direction, MOVE_DIR(tag) or -1 (start) */
  double cost;     /* the graph's estimated cost */
} hist;

typedef struct sstate {
  const rewrite_rules *rules;
  const srch_options *o;
  srch_stats *st;
  double deadline;
  cand *heap;
  int n, cap;
  hist *h;
  int nh, caph;
  base_u64set seen; /* the graphs' structural hashes */
  ir_graph *best;
  double best_cost;
  int best_hist;
  int64_t seq;
  int expanded; /* in this search (the budget's count) */
  int gained;   /* expanded when the best last improved */
  int descent;  /* the second descent from the start has begun (restart()) */
  kbest *top;   /* the fuse_k cheapest graphs, by cost (one a cost) */
  int ntop, ktop;
  kbest first; /* the start graph, a candidate whatever its cost (or NULL) */
} sstate;

/* The cost up to which a graph of reference ref is queued and expanded:
 * alpha x the best, or in the second descent (ref > 0: the cheapest cost
 * on the graph's path from the start, never below the best) alpha x ref:
 * each path descends as the first search did from the start, not only
 * within alpha of a best that another path reached. */
static double bound(const sstate *s, double ref) {
  return s->o->alpha * (ref > s->best_cost ? ref : s->best_cost);
}

/* The queue's order: by cost, ties by creation; in the second descent
 * the graphs running fewer operators first, and of those running as many
 * the ones with more weight-only operators (more folded into weights). */
static int before(const sstate *s, const cand *a, const cand *b) {
  if (s->descent && a->kern != b->kern)
    return a->kern >= 0 && (b->kern < 0 || a->kern < b->kern);
  if (s->descent && a->wonly != b->wonly)
    return a->wonly > b->wonly;
  return a->cost < b->cost || (a->cost == b->cost && a->seq < b->seq);
}

static void heap_push(sstate *s, cand c) {
  int i = s->n++;
  s->heap[i] = c;
  while (i > 0 && before(s, &s->heap[i], &s->heap[(i - 1) / 2])) {
    cand t = s->heap[i];
    s->heap[i] = s->heap[(i - 1) / 2];
    s->heap[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static cand heap_pop(sstate *s) {
  cand top = s->heap[0];
  s->heap[0] = s->heap[--s->n];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < s->n && before(s, &s->heap[l], &s->heap[m]))
      m = l;
    if (r < s->n && before(s, &s->heap[r], &s->heap[m]))
      m = r;
    if (m == i)
      break;
    cand t = s->heap[i];
    s->heap[i] = s->heap[m];
    s->heap[m] = t;
    i = m;
  }
  return top;
}

/* Inserts h; returns 1 if new, 0 if seen, -1 on OOM. */
static int seen_add(sstate *s, uint64_t h) {
  return base_u64set_add(&s->seen, h, 1024);
}

static int hist_add(sstate *s, int parent, int dir, double cost) {
  if (s->nh == s->caph) {
    int cap = s->caph ? 2 * s->caph : 256;
    hist *h = base_realloc(s->h, sizeof *h * (size_t)cap);
    if (!h)
      return -1;
    s->h = h;
    s->caph = cap;
  }
  s->h[s->nh] = (hist){parent, dir, cost};
  return s->nh++;
}

/* Offers g (cost c, history h) to the cheapest graphs kept for fusion;
 * cloned when it enters. One graph a cost: a graph costing exactly what a
 * kept one costs is almost always that one with operands commuted or a
 * rewrite undone elsewhere, and K of those would crowd out every other
 * candidate (a whole region's, where one rewrite breaks a fusion). */
static base_status top_offer(sstate *s, const ir_graph *g, double c, int h,
                             base_diag *d) {
  if (s->ktop < 2)
    return BASE_OK;
  for (int j = 0; j < s->ntop; j++)
    if (s->top[j].cost == c)
      return BASE_OK;
  int i = s->ntop;
  while (i > 0 && c < s->top[i - 1].cost)
    i--;
  if (i == s->ktop)
    return BASE_OK;
  ir_graph *k = ir_graph_clone_shared(g);
  if (!k)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (s->ntop == s->ktop)
    ir_graph_free(s->top[--s->ntop].g);
  memmove(&s->top[i + 1], &s->top[i], sizeof *s->top * (size_t)(s->ntop - i));
  s->top[i] = (kbest){k, c, h};
  s->ntop++;
  return BASE_OK;
}

/* The search's cost function summed over the nodes of g that are not
 * weight-only (they run once, at load). */
static base_status sum_cost(const sstate *s, const ir_graph *g, double *c,
                            base_diag *d) {
  unsigned char *wonly = base_calloc((size_t)g->nnodes + 1, 1);
  if (!wonly)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  ir_weight_only(g, wonly);
  base_status st = BASE_OK;
  *c = 0;
  for (int i = 0; !st && i < g->nnodes; i++) {
    double x = 0;
    int est = 0;
    if (!wonly[i] && !(st = s->o->cost(s->o->cost_u, g, i, &x, &est, d)))
      *c += x;
  }
  free(wonly);
  return st;
}

/* The cost of g once fused and lowered (fuse_graph, then lower_graph: the
 * graph the executor runs, priced with the search's cost function) into
 * *c, and under the options' fuse_bound (when set) into *b. */
static base_status fused_cost(const sstate *s, const ir_graph *g, double *c,
                              double *b, base_diag *d) {
  fuse_options fo = {s->o->cost, s->o->cost_u};
  fuse_stats fs;
  ir_graph *f = fuse_graph(g, &fo, &fs, d);
  if (!f)
    return d ? d->code : BASE_ERR_INTERNAL;
  *c = *b = fs.cost_after;
  ir_graph *l = s->o->cost ? lower_graph(f, NULL, d) : NULL;
  base_status st = s->o->cost && !l ? (d ? d->code : BASE_ERR_NOMEM)
                   : l              ? sum_cost(s, l, c, d)
                                    : BASE_OK;
  *b = *c;
  if (!st && s->o->fuse_bound)
    st = cd_sum_cost(l ? l : f, s->o->fuse_bound, s->o->cost_u, b, NULL, d);
  ir_graph_free(l);
  ir_graph_free(f);
  return st;
}

/* Whether the start graph is a candidate of its own: kept, not the best
 * and not among the cheapest. */
static int first_apart(const sstate *s) {
  if (!s->first.g || s->first.hist == s->best_hist)
    return 0;
  for (int i = 0; i < s->ntop; i++)
    if (s->top[i].hist == s->first.hist)
      return 0;
  return 1;
}

/* Replaces the best graph by the kept graph cheapest once fused (the
 * cheapest kept, then the start); the best stays unless another is cheaper
 * fused (not float noise) and not dearer under the fuse bound. */
static base_status choose_fused(sstate *s, base_diag *d) {
  int nc = s->ntop + first_apart(s);
  if (nc < 2)
    return BASE_OK;
  double bf = 0, bb = 0;
  base_status st = fused_cost(s, s->best, &bf, &bb, d);
  kbest *pick = NULL;
  for (int i = 0; !st && i < nc; i++) {
    kbest *k = i < s->ntop ? &s->top[i] : &s->first;
    double f = 0, b = 0;
    if (k->hist == s->best_hist || (st = fused_cost(s, k->g, &f, &b, d)))
      continue;
    if (f < bf - 1e-9 * bf && b <= bb + 1e-9 * bb)
      bf = f, bb = b, pick = k;
    else if (f < bf - 1e-9 * bf)
      s->st->fuse_bounded++;
  }
  if (st || !pick)
    return st;
  ir_graph_free(s->best);
  s->best = pick->g;
  pick->g = NULL;
  s->best_cost = pick->cost;
  s->best_hist = pick->hist;
  s->st->fuse_chosen++;
  return BASE_OK;
}

/* ---- expansion
 * -------------------------------------------------------------------- */

static base_status graph_cost(const sstate *s, const ir_graph *g, double *c,
                              base_diag *d) {
  int est = 0;
  base_status st = cd_sum_cost(g, s->o->cost, s->o->cost_u, c, &est, d);
  s->st->estimated |= est;
  return st;
}

/* Hands g (history entry h, depth rewrites from the start) to
 * o->cand_fn, with the rewrites that made it, in order. */
static base_status report_cand(const sstate *s, const ir_graph *g, double c,
                               int h, int depth, base_diag *d) {
  if (!s->o->cand_fn)
    return BASE_OK;
  srch_step *steps = base_calloc((size_t)depth + 1, sizeof *steps);
  if (!steps)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  int n = depth;
  for (int k = h; k >= 0 && s->h[k].parent >= 0 && n > 0; k = s->h[k].parent) {
    int dir = s->h[k].dir;
    if (dir <= MOVE_DIR(0)) { /* a move_fn rewrite */
      steps[--n] = (srch_step){-1, MOVE_TAG(dir)};
      continue;
    }
    const rewrite_dir *dr = &s->rules->dirs[dir];
    steps[--n] = (srch_step){dr->rule, dr->backward};
  }
  base_status st = s->o->cand_fn(s->o->cand_u, g, c, steps + n, depth - n, d);
  free(steps);
  return st;
}

/* The operators of g that run on every inference (not weight-only); -1
 * on out of memory. The weight-only ones into *wonly when not NULL. */
static int kernels_w(const ir_graph *g, int *wonly) {
  unsigned char *w = base_calloc((size_t)g->nnodes + 1, 1);
  if (!w)
    return -1;
  ir_weight_only(g, w);
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    n += !w[i];
  free(w);
  if (wonly)
    *wonly = g->nnodes - n;
  return n;
}

static int kernels(const ir_graph *g) { return kernels_w(g, NULL); }

/* Costs and queues a built new graph (taking it); updates the best.
 * only_report: a graph built for o->cand_fn alone (the probe found it
 * neither the best nor one to queue), handed to it and dropped. */
static base_status take(sstate *s, const cand *parent, int dir, ir_graph *child,
                        int only_report, base_diag *d) {
  double c;
  base_status cs = ir_check_invariants(child, "a rewrite", d);
  if (!cs)
    cs = graph_cost(s, child, &c, d);
  if (cs) {
    ir_graph_free(child);
    return cs;
  }
  int h = hist_add(s, parent->hist, dir, c);
  if (h < 0) {
    ir_graph_free(child);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  if ((cs = report_cand(s, child, c, h, parent->depth + 1, d)) || only_report ||
      (cs = top_offer(s, child, c, h, d))) {
    ir_graph_free(child);
    return cs;
  }
  if (c < s->best_cost - 1e-9 * s->best_cost) { /* not float noise */
    ir_graph *b = ir_graph_clone_shared(child); /* values: the region's */
    if (!b) {
      ir_graph_free(child);
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    ir_graph_free(s->best);
    s->best = b;
    s->best_cost = c;
    s->best_hist = h;
    s->gained = s->expanded;
  }
  double ref = parent->ref > 0 && c < parent->ref ? c : parent->ref;
  if (c <= bound(s, ref) && s->n < s->cap) {
    int w = 0, k = s->descent ? kernels_w(child, &w) : 0;
    heap_push(s, (cand){child, c, parent->depth + 1, h, s->seq++, k, w, ref});
    if (s->n > s->st->queue_peak)
      s->st->queue_peak = s->n;
  } else {
    ir_graph_free(child);
  }
  return BASE_OK;
}

/* Offers the rewrite of match m by direction k of c's graph (summarised by
 * gs): probed first (hash, cost), built only when it is new and could
 * become the best or be queued. The probe's cost differs from the built
 * graph's by float rounding at most, hence the margin: the built graph's
 * exact cost decides, as if every new graph were built. */
static base_status offer(sstate *s, const cand *c, int k,
                         const rewrite_match *m, rewrite_gsum *gs,
                         base_diag *d) {
  const rewrite_dir *dr = &s->rules->dirs[k];
  rewrite_probe pr;
  base_diag ld;
  base_status st = rewrite_apply_probe(gs, rewrite_match_pat(dr, m),
                                       rewrite_match_repl(dr, m), m, &pr, &ld);
  if (st == BASE_ERR_NOMEM)
    return base_diag_set(d, st, 0, 0, "out of memory");
  if (st == BASE_ERR_IO || st == BASE_ERR_INTERNAL) { /* the cost function's */
    *d = ld;
    return st;
  }
  if (st) {
    s->st->rejected++;
    return BASE_OK;
  }
  int fresh = seen_add(s, pr.hash);
  if (fresh <= 0) {
    s->st->duplicates += fresh == 0;
    return fresh < 0 ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                     : BASE_OK;
  }
  s->st->generated++;
  s->st->estimated |= pr.estimated;
  double margin = 1e-6 * s->best_cost;
  double ref = c->ref > 0 && pr.cost < c->ref ? pr.cost : c->ref;
  int skip = pr.cost > s->best_cost + margin &&
             (s->n >= s->cap || pr.cost > bound(s, ref) + margin);
  if (skip && !s->o->cand_fn)
    return BASE_OK; /* would be neither the best nor queued */
  ir_graph *child = rewrite_apply(c->g, rewrite_match_pat(dr, m),
                                  rewrite_match_repl(dr, m), m, &ld);
  if (!child) {
    s->st->rejected++;
    return ld.code == BASE_ERR_NOMEM
               ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
               : BASE_OK;
  }
  return take(s, c, k, child, skip, d);
}

/* The operators present in the indexed graph, as a bit set. */
static uint64_t ix_ops(const rewrite_index *ix) {
  uint64_t m = 0;
  for (int o = 0; o < IR_NOPS; o++)
    if (ix->op_start[o + 1] > ix->op_start[o])
      m |= (uint64_t)1 << o;
  return m;
}

/* Whether match m of direction dr binds a node of edge (NULL: none). */
static int on_edge(const rewrite_dir *dr, const rewrite_match *m,
                   const uint8_t *edge) {
  const ir_graph *pat = edge ? rewrite_match_pat(dr, m) : NULL;
  for (int i = 0; pat && i < pat->nnodes; i++)
    if (edge[m->node[i]])
      return 1;
  return 0;
}

/* Rewrites every match of direction k in c's graph (indexed by ix); ops:
 * the operators present; edge: the nodes no rewrite may touch (NULL:
 * none). */
static base_status expand_dir(sstate *s, const cand *c, const rewrite_index *ix,
                              rewrite_gsum *gs, uint64_t ops,
                              const uint8_t *edge, int k, base_diag *d) {
  const rewrite_dir *dr = &s->rules->dirs[k];
  if ((dr->cp.ops & ~ops) || !rewrite_cpat_may_match(&dr->cp, ix))
    return BASE_OK;
  rewrite_matches ms = {0};
  base_status st = rewrite_match_cpat(&dr->cp, c->g, ix, &ms, d);
  for (int i = 0; !st && i < ms.n; i++)
    if (!on_edge(dr, &ms.m[i], edge))
      st = offer(s, c, k, &ms.m[i], gs, d);
  rewrite_matches_free(&ms);
  return st;
}

typedef struct emit_ctx {
  sstate *s;
  const cand *c;
} emit_ctx;

/* A move_fn rewrite of e->c: deduplicated by structural hash, then costed
 * and queued like a rule's. */
static base_status emit_move(void *u, ir_graph *child, int tag, base_diag *d) {
  emit_ctx *e = u;
  base_status hs = BASE_OK;
  uint64_t h = rewrite_graph_shash(child, d, &hs);
  int fresh = hs ? -2 : seen_add(e->s, h);
  if (fresh <= 0) {
    ir_graph_free(child);
    e->s->st->duplicates += fresh == 0;
    return fresh == -1 ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                       : hs;
  }
  e->s->st->generated++;
  return take(e->s, e->c, MOVE_DIR(tag), child, 0, d);
}

/* The caller's rewrites of c (o->move_fn), after the rules'. */
static base_status expand_moves(sstate *s, const cand *c, base_diag *d) {
  if (!s->o->move_fn)
    return BASE_OK;
  emit_ctx e = {s, c};
  return s->o->move_fn(s->o->move_u, c->g, c->cost, bound(s, c->ref) - c->cost,
                       emit_move, &e, d);
}

/* The joins of g at o's fixed inputs, marked in a new array (NULL: out of
 * memory): the nodes that read a fixed input and at least one more tensor
 * computed from the data (an add of another region's branch and this
 * one's). A node whose other inputs are weights (a convolution or matmul
 * of another region's tensor) stays free: freezing those cost BERT-base's
 * Q/K/V matmuls and NASNet-A's projections their merges in the first pass. */
static uint8_t *edge_nodes(const ir_graph *g, const srch_options *o) {
  uint8_t *e = base_calloc((size_t)g->nnodes + 1, 1);
  uint8_t *fixed = base_calloc((size_t)g->ntensors + 1, 1);
  uint8_t *w = base_calloc((size_t)g->nnodes + 1, 1);
  if (!e || !fixed || !w) {
    free(e), free(fixed), free(w);
    return NULL;
  }
  ir_weight_only(g, w);
  for (int t = 0; t < g->ntensors; t++)
    for (int j = 0; g->tensors[t].kind == IR_T_INPUT && j < o->nfixed_inputs;
         j++)
      fixed[t] |= !strcmp(g->tensors[t].name, o->fixed_inputs[j]);
  for (int i = 0; i < g->nnodes; i++) {
    int nfix = 0, ndata = 0;
    for (int k = 0; k < g->nodes[i].nin; k++) {
      const ir_tensor *x = &g->tensors[g->nodes[i].in[k]];
      nfix += fixed[g->nodes[i].in[k]];
      ndata += x->kind == IR_T_INPUT || (x->kind == IR_T_VALUE && !w[x->node]);
    }
    e[i] = nfix > 0 && ndata > 1;
  }
  free(fixed), free(w);
  return e;
}

static base_status expand(sstate *s, const cand *c, base_diag *d) {
  rewrite_index ix;
  rewrite_gsum gs;
  base_status st = rewrite_index_build(c->g, &ix, d);
  if (st)
    return st;
  int nw = (s->rules->ndirs + 63) / 64;
  uint64_t *mask = base_calloc((size_t)nw + 1, sizeof *mask);
  int fix = s->o->nfixed_inputs > 0;
  uint8_t *edge = fix ? edge_nodes(c->g, s->o) : NULL;
  st = mask && (edge || !fix)
           ? rewrite_gsum_build(&gs, c->g, s->o->cost, s->o->cost_u, d)
           : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st) { /* the directions whose anchor is in the graph, in order */
    uint64_t ops = ix_ops(&ix);
    /* first the rules a side of which has only the graph's operators */
    st = rewrite_rules_load(s->rules, ops, d);
    if (!st)
      rewrite_anchors_mark(s->rules, &ix, c->g->nnodes, mask);
    for (int w = 0; !st && w < nw; w++)
      for (uint64_t m = mask[w]; !st && m; m &= m - 1)
        st = expand_dir(s, c, &ix, &gs, ops, edge, 64 * w + __builtin_ctzll(m),
                        d);
    rewrite_gsum_free(&gs);
  }
  free(edge);
  free(mask);
  rewrite_index_free(&ix);
  return st ? st : expand_moves(s, c, d);
}

/* Tells o->move_taken the moves on the best graph's history, in order. */
static base_status tell_moves(sstate *s, base_diag *d) {
  if (!s->o->move_fn || !s->o->move_taken)
    return BASE_OK;
  int n = 0;
  for (int h = s->best_hist; h >= 0; h = s->h[h].parent)
    n++;
  int *tags = base_calloc((size_t)n + 1, sizeof *tags), m = 0;
  if (!tags)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  for (int h = s->best_hist; h >= 0; h = s->h[h].parent)
    if (s->h[h].dir <= MOVE_DIR(0))
      tags[m++] = MOVE_TAG(s->h[h].dir);
  base_status st = BASE_OK;
  while (!st && m > 0)
    st = s->o->move_taken(s->o->move_u, tags[--m], d);
  free(tags);
  return st;
}

/* Adds the rules on the best graph's history to the stats, with the
 * change of estimated cost each step made. */
static void count_rules(sstate *s) {
  for (int h = s->best_hist; h >= 0; h = s->h[h].parent) {
    if (s->h[h].dir < 0 || s->h[h].parent < 0)
      continue;
    const rewrite_dir *dr = &s->rules->dirs[s->h[h].dir];
    double dc = s->h[h].cost - s->h[s->h[h].parent].cost;
    (dr->backward ? s->st->applied_bw : s->st->applied_fw)[dr->rule]++;
    (dr->backward ? s->st->delta_bw : s->st->delta_fw)[dr->rule] += dc;
  }
}

/* Patience's last look: the queue cut to the graphs that run fewer
 * operators than the best and are within alpha of it (a fold whose first
 * step costs a little, as a batch norm folded into a convolution's bias
 * before the residual epilogue that pays); 1 when any is left, and
 * patience starts again. The search loop looks again only after a look
 * found a cheaper graph. */
static int removals_left(sstate *s) {
  int nb = kernels(s->best), m = 0;
  for (int i = 0; i < s->n; i++) {
    cand c = s->heap[i];
    int k = nb < 0 ? -1 : kernels(c.g);
    if (k >= 0 && k < nb && c.cost <= bound(s, c.ref))
      s->heap[m++] = c;
    else
      ir_graph_free(c.g);
  }
  int n = m;
  s->n = 0;
  for (int i = 0; i < n; i++)
    heap_push(s, s->heap[i]);
  s->gained = s->expanded;
  return n > 0;
}

/* The second descent's patience (restart()): a sixth of the first's. */
#define DESCENT_PATIENCE(p) ((p) > 0 && (p) / 6 < 1 ? 1 : (p) / 6)

static base_status search_loop(sstate *s, base_diag *d) {
  base_status st = BASE_OK;
  int look_at = -1; /* expansions at the last look (-1: none yet) */
  while (!st && s->n > 0 && s->expanded < s->o->budget) {
    int patience =
        s->descent ? DESCENT_PATIENCE(s->o->patience) : s->o->patience;
    if (patience > 0 && s->expanded - s->gained >= patience) {
      if (s->gained > look_at && (look_at = s->expanded) >= 0 &&
          removals_left(s)) {
        s->st->removal_looks++;
        continue;
      }
      s->st->stopped_by_patience += !s->descent; /* the first search's */
      break;
    }
    if (s->deadline > 0 && base_now() > s->deadline) {
      s->st->stopped_by_time = 1;
      break;
    }
    cand c = heap_pop(s);
    if (c.depth == 0 || c.cost <= bound(s, c.ref)) {
      s->st->expanded++;
      s->expanded++;
      if (s->o->max_depth < 0 || c.depth < s->o->max_depth)
        st = expand(s, &c, d);
    }
    ir_graph_free(c.g);
  }
  return st;
}

/* The second descent: when the first search has ended (by patience, its
 * budget or an empty queue), the search starts again from the start g of
 * cost c0 with the queue ordered by the operators each graph runs, fewest
 * first (then by cost), every graph it reaches seen anew, and each path
 * bounded by its own cheapest graph (bound()): the rewrites that remove
 * operators are followed first, as far as they go, the others after them.
 * Of the graphs running as many operators, those with more weight-only
 * operators come first: a batch-norm fold moves the norm into the
 * weights, a residual folded into a convolution moves nothing, and both
 * remove one operator; by cost the residual came first wherever one norm
 * of two added convolutions was folded, and then the merge of the two
 * (r01863, which needs both folded) no longer matched (NASNet-A's
 * combinations; the default's passes fold every norm first).
 * The first search follows the cheapest step first, and one cheap step can
 * close a cheaper road: sibling convolutions merged before their batch
 * norms are folded leave each norm reading a split's part, which no rule
 * folds (the generated rules state the fold on a convolution's own
 * output), and every graph of the folds first then lies beyond alpha of
 * the merge's best (Inception-v3 under --passes none, whose norms no
 * pass folds first). The best, the fusion candidates and the statistics
 * carry over; the descent has a budget of its own and a sixth of the
 * patience (DESCENT_PATIENCE: the whole doubled --passes none's CPU
 * seconds and spent Inception-v3's instance proofs, inst.c, before its
 * later regions at batch 1; with the weight-only order a quarter took
 * NASNet-A at batch 1 29.4 CPU-s against 22.1 before the order, a sixth
 * 24.2 for the same graph, and an eighth lost Inception-v3's batch-16
 * folds again: docs/notes/results.md, 2026-11-29 "folds into the
 * weights first"). */
static base_status restart(sstate *s, const ir_graph *g, double c0,
                           base_diag *d) {
  while (s->n > 0)
    ir_graph_free(heap_pop(s).g);
  base_u64set_clear(&s->seen);
  base_status hs = BASE_OK;
  uint64_t h0 = rewrite_graph_shash(g, d, &hs);
  if (hs)
    return hs;
  ir_graph *start = ir_graph_clone_shared(g);
  int w = 0, k = start ? kernels_w(start, &w) : -1;
  if (!start || k < 0 || seen_add(s, h0) < 0) {
    ir_graph_free(start);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  s->descent = 1;
  s->expanded = s->gained = 0;
  s->st->descents++;
  heap_push(s, (cand){start, c0, 0, 0, s->seq++, k, w, c0});
  return search_loop(s, d);
}

/* Searches one graph until the budget, the queue or the deadline ends. */
static ir_graph *search_one(const ir_graph *g, const rewrite_rules *rules,
                            const srch_options *o, double deadline,
                            srch_stats *st, base_diag *d) {
  sstate s = {.rules = rules, .o = o, .st = st, .deadline = deadline};
  s.cap = o->queue_cap > 0 ? o->queue_cap : 1;
  s.heap = base_malloc(sizeof(cand) * (size_t)s.cap);
  s.ktop = o->fuse_k > 1 && o->cost ? o->fuse_k : 0;
  s.top = s.ktop ? base_calloc((size_t)s.ktop, sizeof *s.top) : NULL;
  ir_graph *start = ir_graph_clone_shared(g); /* values shared with g, which */
  s.best = ir_graph_clone_shared(g);          /* outlives the search */
  base_status rc = BASE_ERR_NOMEM;
  base_status hs = BASE_OK;
  uint64_t h0 = rewrite_graph_shash(g, d, &hs);
  if (!hs && s.heap && start && s.best && (s.top || !s.ktop) &&
      seen_add(&s, h0) > 0 && (s.best_hist = hist_add(&s, -1, -1, 0)) >= 0) {
    rc = graph_cost(&s, g, &s.best_cost, d);
    if (!rc) {
      s.h[s.best_hist].cost = s.best_cost;
      rc = report_cand(&s, g, s.best_cost, s.best_hist, 0, d);
      if (!rc)
        rc = top_offer(&s, g, s.best_cost, s.best_hist, d);
      if (!rc && s.ktop &&
          !(s.first.g = ir_graph_clone_shared(g))) /* fusion's candidate */
        rc = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      s.first.cost = s.best_cost, s.first.hist = s.best_hist;
    }
    if (!rc) {
      double c0 = s.best_cost;
      heap_push(&s, (cand){start, c0, 0, s.best_hist, s.seq++, 0, 0, 0});
      start = NULL;
      rc = search_loop(&s, d);
      if (!rc && o->descent && o->no_passes && !st->stopped_by_time)
        rc = restart(&s, g, c0, d);
    }
  } else {
    base_diag_set(d, rc, 0, 0, "out of memory");
  }
  ir_graph_free(start);
  while (s.n > 0)
    ir_graph_free(heap_pop(&s).g);
  if (!rc)
    rc = choose_fused(&s, d);
  if (!rc)
    count_rules(&s);
  if (!rc)
    rc = tell_moves(&s, d);
  for (int i = 0; i < s.ntop; i++)
    ir_graph_free(s.top[i].g);
  ir_graph_free(s.first.g);
  free(s.top);
  ir_graph *best = rc ? NULL : s.best;
  if (rc)
    ir_graph_free(s.best);
  free(s.heap);
  free(s.h);
  base_u64set_free(&s.seen);
  return best;
}

ir_graph *srch_search(const ir_graph *g, const rewrite_rules *rules,
                      const srch_options *o, srch_stats *st, base_diag *d) {
  if (!st->applied_fw && srch_stats_alloc(st, rules->rs->n, d))
    return NULL;
  double t0 = base_now();
  double deadline = o->time_limit > 0 ? t0 + o->time_limit : 0;
  ir_graph *r = search_one(g, rules, o, deadline, st, d);
  st->seconds += base_now() - t0;
  return r;
}

ir_graph *srch_search_until(const ir_graph *g, const rewrite_rules *rules,
                            const srch_options *o, double deadline,
                            srch_stats *st, base_diag *d) {
  return search_one(g, rules, o, deadline, st, d);
}
