/* regions.c: the whole optimizer, searching big graphs region by region.
 *
 * The search's cost grows with the graph (more matches per expansion, more
 * equivalent variants), so a graph is cut into regions of at most
 * region_nodes compute operators, consecutive in topological order. Each
 * region becomes a graph of its own (tensors read from outside are its
 * inputs, weights when they are weights or computed from weights only;
 * tensors read after it are its outputs), is searched, and is stitched back
 * in its place. A second pass shifts the cuts by half a region so that
 * rewrites across the first pass's boundaries get their chance (PET cuts
 * graphs similarly). Weight-only nodes stay outside regions and are emitted
 * first.
 *
 * Under --passes none (srch_options.far_siblings) the first pass cuts in
 * an order that puts far siblings (two convolutions of one tensor, 50
 * operators apart, and their norms) behind each other, so that they share
 * a region: the passes that would fold the norms and merge them on the
 * whole graph do not run there.
 *
 * A region's search takes a tensor computed elsewhere as an input, and
 * may fold the node that joins it to its own (an add of the two
 * branches made the residual of its own branch's convolution) where the
 * whole join would have paid more (the two added convolutions merged):
 * the next pass, seeing both, finds no way back. Under --passes none
 * (srch_options.boundary_joins) the passes before the last leave such
 * joins as they are.
 *
 * A join whose branches a cut of the first pass and a cut of the shifted
 * second both part stays unmerged: under --passes none
 * (srch_options.wide_pass) a third pass cuts regions a sixth larger from
 * the graph's start, so its cuts fall away from both passes' (NASNet-A's
 * cell 5 `left + right` pair of projections).
 */
#include <stdlib.h>
#include <string.h>

#include "srch_int.h"

#define PASS_QUEUE 16 /* queue of the pass rules' whole-graph search */

typedef struct region {
  ir_graph *sub;      /* extracted, then replaced by the optimized graph */
  int32_t *outs;      /* g tensors matching sub's outputs, by position */
  uint8_t *inside;    /* g nodes of this region (g->nnodes) */
  const char **fixed; /* sub's inputs computed in other regions (names) */
  int nfixed;
} region;

static void region_free(region *r) {
  ir_graph_free(r->sub);
  free(r->outs);
  free(r->inside);
  free(r->fixed);
  memset(r, 0, sizeof *r);
}

/* Adds g's tensor t to sub as an input or weight. */
static int add_leaf(ir_graph *sub, const ir_graph *g, const uint8_t *wmask,
                    int t, base_diag *d) {
  const ir_tensor *x = &g->tensors[t];
  int weight =
      x->kind == IR_T_WEIGHT || (x->kind == IR_T_VALUE && wmask[x->node]);
  int k = ir_add_tensor(sub, x->name, weight ? IR_T_WEIGHT : IR_T_INPUT,
                        &x->shape, d);
  if (k >= 0)
    sub->tensors[k].data = x->data, sub->tensors[k].dtype = x->dtype;
  return k;
}

/* Whether sub's tensor t is among r's fixed inputs. */
static int fixed_has(const region *r, int t) {
  for (int j = 0; j < r->nfixed; j++)
    if (r->fixed[j] == r->sub->tensors[t].name)
      return 1;
  return 0;
}

static base_status extract_nodes(region *r, const ir_graph *g,
                                 const uint8_t *wmask, int32_t *map,
                                 base_diag *d) {
  for (int i = 0; i < g->nnodes; i++) {
    if (!r->inside[i])
      continue;
    const ir_node *n = &g->nodes[i];
    int32_t in[IR_MAX_IN];
    const char *names[IR_MAX_LIST];
    for (int k = 0; k < n->nin; k++) {
      int t = n->in[k];
      if (map[t] < 0 && (map[t] = add_leaf(r->sub, g, wmask, t, d)) < 0)
        return d ? d->code : BASE_ERR_INTERNAL;
      if (r->sub->tensors[map[t]].kind == IR_T_INPUT &&
          g->tensors[t].kind == IR_T_VALUE && !fixed_has(r, map[t]))
        r->fixed[r->nfixed++] = r->sub->tensors[map[t]].name;
      in[k] = map[t];
    }
    for (int o = 0; o < n->nout; o++)
      names[o] = g->tensors[n->out[o]].name;
    int k = ir_add_node(r->sub, n->op, in, n->nin, &n->a, names, d);
    if (k < 0)
      return d ? d->code : BASE_ERR_INTERNAL;
    for (int o = 0; o < n->nout; o++)
      map[n->out[o]] = r->sub->nodes[k].out[o];
  }
  return BASE_OK;
}

/* Region outputs: tensors computed inside and read outside or output. */
static base_status extract_outputs(region *r, const ir_graph *g,
                                   const rewrite_index *ix, const int32_t *map,
                                   int *nouts, base_diag *d) {
  *nouts = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (!r->inside[i])
      continue;
    for (int o = 0; o < g->nodes[i].nout; o++) {
      int t = g->nodes[i].out[o], out = ix->is_output[t];
      for (int u = ix->use_start[t]; !out && u < ix->use_start[t + 1]; u++)
        out = !r->inside[ix->use_node[u]];
      if (!out)
        continue;
      r->outs[(*nouts)++] = t;
      base_status st = ir_add_output(r->sub, map[t], d);
      if (st)
        return st;
    }
  }
  return BASE_OK;
}

static base_status extract(region *r, const ir_graph *g,
                           const rewrite_index *ix, const uint8_t *wmask,
                           base_diag *d) {
  int32_t *map = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
  r->outs = base_malloc(sizeof(int32_t) * ((size_t)g->ntensors + 1));
  r->fixed = base_malloc(sizeof(char *) * ((size_t)g->ntensors + 1));
  r->sub = ir_graph_new(g->name);
  if (!map || !r->outs || !r->fixed || !r->sub) {
    free(map);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  for (int t = 0; t < g->ntensors; t++)
    map[t] = -1;
  int nouts = 0;
  base_status st = extract_nodes(r, g, wmask, map, d);
  if (!st)
    st = extract_outputs(r, g, ix, map, &nouts, d);
  free(map);
  if (!st && nouts == 0) { /* dead region: nothing to stitch */
    ir_graph_free(r->sub);
    r->sub = NULL;
  }
  return st;
}

/* ---- stitching
 * ------------------------------------------------------------------ */

/* A name for sub's tensor t in h: its own unless taken in h, or naming a g
 * tensor computed outside the region. */
static void stitch_name(rewrite_builder *b, const region *r, const char *name,
                        char *buf, size_t n) {
  int gt = ir_find_tensor(b->g, name);
  const ir_tensor *x = gt >= 0 ? &b->g->tensors[gt] : NULL;
  int own = !x || (x->kind == IR_T_VALUE && r->inside[x->node]);
  if (own && ir_find_tensor(b->h, name) < 0)
    snprintf(buf, n, "%s", name);
  else
    rewrite_fresh_name(b->g, b->h, name, &b->fresh, buf, n);
}

static base_status stitch(rewrite_builder *b, const region *r, base_diag *d) {
  const ir_graph *s = r->sub;
  int32_t *smap = base_malloc(sizeof(int32_t) * ((size_t)s->ntensors + 1));
  if (!smap)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status st = BASE_OK;
  for (int t = 0; !st && t < s->ntensors; t++) {
    if (s->tensors[t].kind == IR_T_VALUE)
      continue;
    int gt = ir_find_tensor(b->g, s->tensors[t].name);
    if (gt < 0 || (smap[t] = b->map[gt]) < 0)
      st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "region input '%s' lost",
                         s->tensors[t].name);
  }
  for (int i = 0; !st && i < s->nnodes; i++) {
    const ir_node *n = &s->nodes[i];
    int32_t in[IR_MAX_IN];
    char names[IR_MAX_LIST][256];
    const char *np[IR_MAX_LIST];
    for (int k = 0; k < n->nin; k++)
      in[k] = smap[n->in[k]];
    for (int o = 0; o < n->nout; o++) {
      stitch_name(b, r, s->tensors[n->out[o]].name, names[o], sizeof names[o]);
      np[o] = names[o];
    }
    int k = ir_add_node(b->h, n->op, in, n->nin, &n->a, np, d);
    if (k < 0)
      st = d ? d->code : BASE_ERR_INTERNAL;
    for (int o = 0; !st && o < n->nout; o++)
      smap[n->out[o]] = b->h->nodes[k].out[o];
  }
  for (int k = 0; !st && k < s->noutputs; k++)
    b->map[r->outs[k]] = smap[s->outputs[k]];
  free(smap);
  return st;
}

/* ---- one pass
 * ---------------------------------------------------------------------- */

typedef struct pass {
  const ir_graph *g;
  const rewrite_rules *rules;
  const srch_options *o;
  double deadline;
  srch_stats *st;
  base_diag *d;
  uint8_t *wmask;
  region *rg;
  int nrg;
  int last; /* the last pass: o->region_fn runs on its regions */
  int k, n; /* pass k of n (o->progress) */
} pass;

/* A region ends, of the last CUT_SLACK places before it is full, where the
 * fewest tensors cross the cut (the last such place): a convolution and
 * its relu, or sibling convolutions and their concat, stay in one region
 * when a narrower cut is near, so the rewrites joining them are not lost
 * to a boundary (SqueezeNet's last fire module was cut between its 1x1
 * convolution and its relu, and its siblings were never merged). 16 (8
 * before 2026-12-01): a transformer layer's attention (ViT-B/16's head
 * split, 25 operators around one attention node, a mined rule) is found
 * whole where a layer boundary is within 16 places; at 8 both passes cut
 * two of ViT-B/16's twelve and two of BERT-base's. Of the zoo's twelve
 * default graphs, by the model: BERT-base 2.8% cheaper, NASNet-A 0.17%
 * dearer, the rest the same. */
#define CUT_SLACK 16

/* cross[j]: tensors made at or before compute position j and read after
 * it, for the m compute nodes at positions pos[] (-1: weight-only). */
static void crossings(const ir_graph *g, const int32_t *pos, int m,
                      int32_t *cross) {
  memset(cross, 0, sizeof *cross * ((size_t)m + 1));
  int32_t *last = (int32_t *)cross + m + 1; /* per tensor, after cross */
  for (int t = 0; t < g->ntensors; t++)
    last[t] = -1;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; pos[i] >= 0 && k < g->nodes[i].nin; k++)
      if (last[g->nodes[i].in[k]] < pos[i])
        last[g->nodes[i].in[k]] = pos[i];
  for (int t = 0; t < g->ntensors; t++) {
    int32_t n = g->tensors[t].node;
    if (n >= 0 && pos[n] >= 0 && last[t] > pos[n]) {
      cross[pos[n]]++; /* crosses the cuts after pos[n] .. last[t]-1 */
      cross[last[t]]--;
    }
  }
  for (int j = 1; j < m; j++)
    cross[j] += cross[j - 1];
}

/* The end (inclusive) of the region starting at compute position start
 * that would hold `count` nodes, moved back to the narrowest cut near. */
static int region_end(const int32_t *cross, int m, int start, int count) {
  int end = start + count - 1;
  if (end >= m - 1)
    return m - 1;
  int best = end;
  for (int j = end - 1; j >= start && j >= end - CUT_SLACK; j--)
    if (cross[j] < cross[best])
      best = j;
  return best;
}

/* Whether every input of node i is ready: a leaf, weight-only or
 * computed by a node of done. */
static int ready(const ir_graph *g, const uint8_t *wmask, const uint8_t *done,
                 int i) {
  for (int k = 0; k < g->nodes[i].nin; k++) {
    int n = g->tensors[g->nodes[i].in[k]].node;
    if (n >= 0 && !wmask[n] && !done[n])
      return 0;
  }
  return 1;
}

/* Appends compute node i to ord (pos: its place) and marks it done. */
static void place(int i, int32_t *ord, int32_t *pos, int *m, uint8_t *done) {
  done[i] = 1;
  pos[i] = *m;
  ord[(*m)++] = i;
}

/* Places the readers of node i's inputs that come more than `far` compute
 * nodes after it and are ready, each followed by the chain of sole readers
 * that are ready in turn (a convolution and its norm). */
static void pull_siblings(const ir_graph *g, const rewrite_index *ix,
                          const uint8_t *wmask, const int32_t *orig, int far,
                          int i, int32_t *ord, int32_t *pos, int *m,
                          uint8_t *done) {
  const ir_node *n = &g->nodes[i];
  for (int k = 0; k < n->nin; k++) {
    int t = n->in[k];
    for (int u = ix->use_start[t]; u < ix->use_start[t + 1]; u++) {
      int r = ix->use_node[u];
      if (wmask[r] || done[r] || orig[r] - orig[i] <= far ||
          !ready(g, wmask, done, r))
        continue;
      while (r >= 0) {
        place(r, ord, pos, m, done);
        int o = g->nodes[r].nout == 1 ? g->nodes[r].out[0] : -1;
        int c = o >= 0 && ix->use_start[o + 1] - ix->use_start[o] == 1 &&
                        !ix->is_output[o]
                    ? ix->use_node[ix->use_start[o]]
                    : -1;
        r = c >= 0 && !done[c] && ready(g, wmask, done, c) ? c : -1;
      }
    }
  }
}

/* The compute nodes' order for cutting into ord (pos: each node's place,
 * -1 for weight-only ones): g's order, but with far > 0 a node's far
 * siblings pulled up behind it (pull_siblings), so that two convolutions
 * reading one tensor far apart in g (NASNet-A's cell N base and cell N+1
 * previous-cell projections, about 50 operators apart) fall in one region
 * with their norms. Returns the number of compute nodes. */
static int cut_order(const ir_graph *g, const rewrite_index *ix,
                     const uint8_t *wmask, int far, int32_t *ord, int32_t *pos,
                     int32_t *orig, uint8_t *done) {
  int m = 0;
  for (int i = 0; i < g->nnodes; i++)
    orig[i] = pos[i] = wmask[i] ? -1 : m++;
  if (far <= 0) {
    for (int i = 0; i < g->nnodes; i++)
      if (pos[i] >= 0)
        ord[pos[i]] = i;
    return m;
  }
  memset(done, 0, (size_t)g->nnodes + 1);
  int k = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (wmask[i] || done[i])
      continue;
    place(i, ord, pos, &k, done);
    pull_siblings(g, ix, wmask, orig, far, i, ord, pos, &k, done);
  }
  return m;
}

/* Cuts the compute nodes into regions: the first of `first` nodes. */
static base_status cut(pass *p, const rewrite_index *ix, int first) {
  const ir_graph *g = p->g;
  int size = p->o->region_nodes > 0 ? p->o->region_nodes : g->nnodes + 1;
  size_t nn = (size_t)g->nnodes + 1;
  int32_t *pos = base_malloc(sizeof *pos * nn * 3);
  uint8_t *done = base_malloc(nn);
  int32_t *cross =
      base_malloc(sizeof *cross * ((size_t)g->nnodes + g->ntensors + 2));
  if (!pos || !cross || !done) {
    free(pos), free(cross), free(done);
    return base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  int32_t *ord = pos + nn, *orig = ord + nn;
  int far = p->o->no_passes && p->o->far_siblings && p->k == 0 && !p->last
                ? size / 2
                : 0;
  int m = cut_order(g, ix, p->wmask, far, ord, pos, orig, done);
  free(done);
  crossings(g, pos, m, cross);
  int end = -1, cur = -1;
  base_status st = BASE_OK;
  for (int j = 0; !st && j < m; j++) {
    int i = ord[j];
    if (pos[i] > end) {
      region *r = &p->rg[p->nrg++];
      if (!(r->inside = base_calloc((size_t)g->nnodes + 1, 1))) {
        st = base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
        break;
      }
      cur = p->nrg - 1;
      end = region_end(cross, m, pos[i], cur == 0 && first > 0 ? first : size);
    }
    p->rg[cur].inside[i] = 1;
  }
  free(pos), free(cross);
  for (int k = 0; !st && k < p->nrg; k++)
    st = extract(&p->rg[k], g, ix, p->wmask, p->d);
  return st;
}

static base_status search_regions(pass *p) {
  int live = 0, done = 0;
  for (int k = 0; k < p->nrg; k++)
    live += p->rg[k].sub != NULL;
  for (int k = 0; k < p->nrg; k++) {
    region *r = &p->rg[k];
    if (!r->sub)
      continue;
    if (p->o->progress)
      p->o->progress(p->o->progress_u, p->k, p->n, done++, live);
    p->st->regions++;
    srch_options o = *p->o;
    if (!p->last)
      o.move_fn = NULL; /* moves join the last pass only */
    if (!p->last && o.no_passes && o.boundary_joins)
      o.fixed_inputs = r->fixed, o.nfixed_inputs = r->nfixed;
    ir_graph *best =
        srch_search_until(r->sub, p->rules, &o, p->deadline, p->st, p->d);
    if (!best)
      return p->d ? p->d->code : BASE_ERR_INTERNAL;
    ir_graph *alt = NULL;
    if (p->last && p->o->region_fn) {
      base_status st = p->o->region_fn(p->o->region_u, best, &alt, p->d);
      if (st) {
        ir_graph_free(best);
        return st;
      }
    }
    if (alt) {
      ir_graph_free(best);
      best = alt;
    }
    if (p->o->trace)
      p->o->trace(p->o->trace_u, r->sub, best, 0);
    ir_graph_free(r->sub);
    r->sub = best;
    r->nfixed = 0; /* its names were the old graph's */
  }
  return BASE_OK;
}

static ir_graph *assemble(pass *p) {
  rewrite_builder b;
  if (rewrite_build_begin(&b, p->g, NULL, p->d))
    return NULL;
  b.fresh = p->g->ntensors;
  base_status st = BASE_OK;
  for (int i = 0; !st && i < p->g->nnodes; i++)
    if (p->wmask[i])
      st = rewrite_build_copy(&b, i, NULL);
  for (int k = 0; !st && k < p->nrg; k++)
    if (p->rg[k].sub)
      st = stitch(&b, &p->rg[k], p->d);
  return rewrite_build_finish(&b, st);
}

/* One pass over g with the first cut after `first` nodes (0: a full
 * region). */
static ir_graph *run_pass(pass *p, int first) {
  const ir_graph *g = p->g;
  rewrite_index ix;
  ir_graph *h = NULL;
  p->wmask = base_calloc((size_t)g->nnodes + 1, 1);
  p->rg = base_calloc((size_t)g->nnodes + 1, sizeof *p->rg);
  p->nrg = 0;
  if (!p->wmask || !p->rg || rewrite_index_build(g, &ix, p->d)) {
    base_diag_set(p->d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  } else {
    ir_weight_only(g, p->wmask);
    if (!cut(p, &ix, first) && !search_regions(p))
      h = assemble(p);
    rewrite_index_free(&ix);
  }
  for (int k = 0; p->rg && k < p->nrg; k++)
    region_free(&p->rg[k]);
  free(p->rg);
  free(p->wmask);
  return h;
}

/* ---- the optimizer
 * -------------------------------------------------------------------- */

/* Replaces *g by f(*g) (freeing the old one unless it is keep); in builds
 * that check invariants, 0 with d set when the new graph breaks one. */
static int step(ir_graph **g, const ir_graph *keep, ir_graph *next,
                const char *pass, base_diag *d) {
  if (!next)
    return 0;
  if (*g != keep)
    ir_graph_free(*g);
  *g = next;
  return ir_check_invariants(next, pass, d) == BASE_OK;
}

static int search_passes(ir_graph **cur, const ir_graph *g,
                         const rewrite_rules *rules, const srch_options *o,
                         srch_stats *st, base_diag *d) {
  double deadline = o->time_limit > 0 ? base_now() + o->time_limit : 0;
  int half = o->region_nodes > 1 ? o->region_nodes / 2 : 0;
  int n = o->passes > 0 ? o->passes : 1;
  int wide = o->no_passes && o->wide_pass && o->region_nodes > 0;
  srch_options wo = *o; /* the wide pass's: regions a sixth larger */
  wo.region_nodes =
      o->region_nodes + (o->region_nodes / 6 > 1 ? o->region_nodes / 6 : 1);
  n += wide;
  for (int k = 0; k < n; k++) {
    int w = wide && k == n - 1;
    pass p = {*cur, rules, w ? &wo : o, deadline,   st, d,
              NULL, NULL,  0,           k == n - 1, k,  n};
    if (!step(cur, g, run_pass(&p, k % 2 && !w ? half : 0), "a search pass", d))
      return 0;
  }
  return 1;
}

/* The hand-written activation fusion and sibling merging (o->merge) before
 * the search; with o->pass_rules only on the sites no pass rule matches. */
static int hand_passes(ir_graph **cur, const ir_graph *g, const srch_options *o,
                       srch_stats *st, base_diag *d) {
  uint8_t *skip = NULL;
  if (o->pass_rules) {
    skip = base_calloc((size_t)(*cur)->nnodes + 1, 1);
    if (!skip) {
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
      return 0;
    }
    if (pass_rule_cover(*cur, o->pass_rules, skip, d)) {
      free(skip);
      return 0;
    }
  }
  int ok =
      step(cur, g, pass_fuse_activations_except(*cur, skip, &st->acts_fused, d),
           "fuse activations", d);
  if (ok && o->merge && skip) { /* fusion renumbered the nodes */
    free(skip);
    skip = base_calloc((size_t)(*cur)->nnodes + 1, 1);
    ok = skip && !pass_rule_cover(*cur, o->pass_rules, skip, d);
    if (!skip)
      base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  ok = ok &&
       (!o->merge || step(cur, g,
                          pass_merge_siblings_except(*cur, skip, o->cost,
                                                     o->cost_u, &st->merged, d),
                          "merge siblings", d));
  free(skip);
  return ok;
}

/* Passes as rules: the pass rules (forward: the directions that fuse and
 * merge; backward ones only grow the graph) searched on the whole graph
 * first, since siblings and conv/activation pairs may lie in different
 * regions; the same search and cost model, a first stage. */
static int pass_search(ir_graph **cur, const ir_graph *g, const srch_options *o,
                       srch_stats *st, base_diag *d) {
  if (!o->pass_rules || o->max_depth == 0)
    return 1;
  double deadline = o->time_limit > 0 ? base_now() + o->time_limit : 0;
  /* A short queue: on the whole graph every queued candidate is a full
   * copy, and each fusion or merge is local, so the search walks down
   * (a rewrite neither cheapest nor queued is only probed, never built). */
  srch_options po = *o;
  po.queue_cap = o->queue_cap < PASS_QUEUE ? o->queue_cap : PASS_QUEUE;
  po.fuse_k = 0;     /* whole-graph copies: fusion is chosen region by region */
  po.move_fn = NULL; /* moves join the region searches */
  st->regions++;
  return step(cur, g,
              srch_search_until(*cur, o->pass_rules, &po, deadline, st, d),
              "the pass rules' search", d);
}

/* Nested splits folded, one level a round, until none folds (each round
 * removes a split node); merging siblings two at a time, the pass rules
 * leave split(split(x)) chains. */
static int merge_splits(ir_graph **cur, const ir_graph *g, srch_stats *st,
                        base_diag *d) {
  for (;;) {
    int n = 0;
    if (!step(cur, g, pass_merge_splits(*cur, &n, d), "merge splits", d))
      return 0;
    st->splits_merged += n;
    if (!n)
      break;
  }
  return 1;
}

/* A stage's result: cur (cloned, as the stage's own graph, when it is g)
 * after ok, else NULL; cur is freed unless it is g. */
static ir_graph *stage_result(ir_graph *cur, const ir_graph *g, int ok,
                              base_diag *d) {
  ir_graph *r = ok ? ir_graph_clone(cur) : NULL;
  if (cur != g)
    ir_graph_free(cur);
  if (ok && !r)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return r;
}

base_status srch_begin(const ir_graph *g, const rewrite_rules *rules,
                       const srch_options *o, srch_stats *st, base_diag *d) {
  memset(st, 0, sizeof *st);
  if (srch_stats_alloc(st, rules->rs->n, d))
    return d ? d->code : BASE_ERR_NOMEM;
  return cd_sum_cost(g, o->cost, o->cost_u, &st->cost_before, &st->estimated,
                     d);
}

ir_graph *srch_run_passes(const ir_graph *g, const srch_options *o,
                          srch_stats *st, base_diag *d) {
  ir_graph *cur = (ir_graph *)g;
  int dup = 0;      /* equal small weights: then cse merges their readers */
  if (o->no_passes) /* the canonical form only: no value twice (BERT's
                       per-layer mask constants one weight, so one mask),
                       no node whose output is its input (Llama's concat
                       of an empty cache to k and v, which would keep the
                       rows rules from binding its attention) */
    return stage_result(
        cur, g,
        step(&cur, g, pass_dedupe_weights(cur, &dup, d), "dedupe", d) &&
            step(&cur, g, pass_cse(cur, &st->cse, d), "cse", d) &&
            step(&cur, g, pass_drop_identities(cur, &st->moves_removed, d),
                 "drop identities", d),
        d);
  int ok = step(&cur, g, pass_simplify_moves(cur, &st->moves_removed, d),
                "simplify moves", d) &&
           step(&cur, g, pass_dedupe_weights(cur, &dup, d), "dedupe", d) &&
           step(&cur, g, pass_cse(cur, &st->cse, d), "cse", d) &&
           step(&cur, g, pass_fold_batchnorm(cur, &st->bn_folded, d),
                "fold batchnorm", d) &&
           step(&cur, g, pass_fold_scale(cur, &st->scales_folded, d),
                "fold scales", d) &&
           step(&cur, g, pass_form_rmsnorm(cur, &st->rmsnorms, d),
                "form rmsnorm", d) &&
           step(&cur, g, pass_fold_rotate_half(cur, &st->rotates_folded, d),
                "fold rotate_half", d) &&
           hand_passes(&cur, g, o, st, d) && pass_search(&cur, g, o, st, d);
  return stage_result(cur, g, ok, d);
}

ir_graph *srch_run_regions(const ir_graph *g, const rewrite_rules *rules,
                           const srch_options *o, srch_stats *st,
                           base_diag *d) {
  ir_graph *cur = (ir_graph *)g;
  return stage_result(cur, g, search_passes(&cur, g, rules, o, st, d), d);
}

ir_graph *srch_run_splits(const ir_graph *g, const srch_options *o,
                          srch_stats *st, base_diag *d) {
  ir_graph *cur = (ir_graph *)g;
  int more = 0;   /* passes as rules: no activation fusion after the search
                      (only splits folded) */
  int biases = 0; /* a merged projection's biases into its matmul */
  if (o->no_passes)
    return stage_result(cur, g, 1, d);
  int ok = (o->pass_rules || step(&cur, g, pass_fuse_activations(cur, &more, d),
                                  "fuse activations", d)) &&
           merge_splits(&cur, g, st, d) &&
           step(&cur, g, pass_split_bias(cur, &biases, d), "split biases", d);
  st->acts_fused += more;
  return stage_result(cur, g, ok, d);
}

base_status srch_end(const ir_graph *h, const srch_options *o, srch_stats *st,
                     base_diag *d) {
  int est = 0;
  base_status s = cd_sum_cost(h, o->cost, o->cost_u, &st->cost_after, &est, d);
  st->estimated |= est;
  return s;
}

/* One stage of srch_optimize: *cur replaced by f's result (NULL: failed);
 * the graph g given to srch_optimize is never freed. The new graph goes to
 * o->trace. */
static int run_stage(ir_graph **cur, const ir_graph *g, ir_graph *next,
                     const srch_options *o) {
  if (*cur != g)
    ir_graph_free(*cur);
  *cur = next;
  if (next && o->trace)
    o->trace(o->trace_u, NULL, next, 1);
  return next != NULL;
}

/* h made to own its weight values (NULL on failure): a pass's result
 * (pass_prune_dead's) shares them with the graph it read, which run_stage
 * frees next. Without it the final clone copied them from freed memory
 * (ASan, 2026-11-30: search.no_passes_dedupes_equal_constants, whose
 * weights have values and whose deduplicated ones the prune drops). */
static ir_graph *owning(ir_graph *h, base_diag *d) {
  if (h && ir_graph_own_data(h, d)) {
    ir_graph_free(h);
    return NULL;
  }
  return h;
}

ir_graph *srch_optimize(const ir_graph *g, const rewrite_rules *rules,
                        const srch_options *o, srch_stats *st, base_diag *d) {
  double t0 = base_now();
  int dead = 0;
  if (srch_begin(g, rules, o, st, d))
    return NULL;
  ir_graph *cur = (ir_graph *)g;
  int ok = run_stage(&cur, g, srch_run_passes(cur, o, st, d), o) &&
           run_stage(&cur, g, srch_run_regions(cur, rules, o, st, d), o) &&
           run_stage(&cur, g, srch_run_splits(cur, o, st, d), o) &&
           run_stage(&cur, g, owning(pass_prune_dead(cur, &dead, d), d), o);
  ir_graph *r = ok ? ir_graph_clone(cur) : NULL;
  if (cur != g)
    ir_graph_free(cur);
  if (ok && !r)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (r && srch_end(r, o, st, d)) {
    ir_graph_free(r);
    r = NULL;
  }
  st->seconds = base_now() - t0;
  return r;
}

/* ---- regions one at a time (srch_regions_*)
 * -------------------------------------------------------- */

struct srch_regions {
  srch_options o; /* region_nodes only */
  pass p;
};

srch_regions *srch_regions_cut(const ir_graph *g, int region_nodes,
                               base_diag *d) {
  srch_regions *r = base_calloc(1, sizeof *r);
  if (!r) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  srch_options_default(&r->o);
  r->o.region_nodes = region_nodes;
  r->p = (pass){.g = g, .o = &r->o, .d = d};
  rewrite_index ix;
  r->p.wmask = base_calloc((size_t)g->nnodes + 1, 1);
  r->p.rg = base_calloc((size_t)g->nnodes + 1, sizeof *r->p.rg);
  base_status st = BASE_ERR_NOMEM;
  if (!r->p.wmask || !r->p.rg || rewrite_index_build(g, &ix, d)) {
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  } else {
    ir_weight_only(g, r->p.wmask);
    st = cut(&r->p, &ix, 0);
    rewrite_index_free(&ix);
  }
  if (st) {
    srch_regions_free(r);
    return NULL;
  }
  return r;
}

int srch_regions_count(const srch_regions *r) { return r->p.nrg; }

const ir_graph *srch_regions_graph(const srch_regions *r, int k) {
  return k >= 0 && k < r->p.nrg ? r->p.rg[k].sub : NULL;
}

ir_graph *srch_regions_replace(srch_regions *r, int k, const ir_graph *sub,
                               base_diag *d) {
  if (k < 0 || k >= r->p.nrg || !r->p.rg[k].sub) {
    base_diag_set(d, BASE_ERR_PARAM, 0, 0, "region %d: no such live region", k);
    return NULL;
  }
  ir_graph *own = r->p.rg[k].sub;
  r->p.rg[k].sub = (ir_graph *)sub; /* only read by stitch */
  r->p.d = d;
  ir_graph *h = assemble(&r->p);
  r->p.rg[k].sub = own;
  ir_graph *c = h ? ir_graph_clone(h) : NULL;
  if (h && !c)
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  ir_graph_free(h);
  return c;
}

void srch_regions_free(srch_regions *r) {
  if (!r)
    return;
  for (int k = 0; r->p.rg && k < r->p.nrg; k++)
    region_free(&r->p.rg[k]);
  free(r->p.rg);
  free(r->p.wmask);
  free(r);
}
