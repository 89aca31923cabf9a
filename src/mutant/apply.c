/* apply.c: mutants in a model: splicing mutant + correction in place of the
 * original nodes, and choosing the mutants that pay under a cost model.
 *
 * The choice is greedy in generation order (deterministic): a mutant is
 * taken when g alone is already cheaper than f (else no correction can
 * help, and the box analysis is skipped), its box analysis succeeds, and g
 * plus its correction is still cheaper than f; its sites are then not
 * used again. Taken mutants are *verified by the box argument*, not proven.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mutant_int.h"

/* ---- splicing ------------------------------------------------------------ */

typedef struct splice {
  const ir_graph *g, *f, *h;
  ir_graph *n;
  int32_t *map;  /* g tensor -> n tensor, -1 until defined */
  int32_t *hmap; /* h tensor -> n tensor */
  int fresh;     /* counter for the names of h's intermediates */
} splice;

static int copy_leaves(splice *s, base_diag *d) {
  for (int i = 0; i < s->g->ntensors; i++)
    if (s->g->tensors[i].kind != IR_T_VALUE &&
        (s->map[i] = mutant_leaf(s->n, s->g, i, d)) < 0)
      return -1;
  return 0;
}

static int ready(const splice *s, const int32_t *in, int nin) {
  for (int j = 0; j < nin; j++)
    if (s->map[in[j]] < 0)
      return 0;
  return 1;
}

static int emit_node(splice *s, int k, base_diag *d) {
  const ir_node *nd = &s->g->nodes[k];
  int32_t in[IR_MAX_IN];
  const char *names[IR_MAX_LIST];
  for (int j = 0; j < nd->nin; j++)
    in[j] = s->map[nd->in[j]];
  for (int j = 0; j < nd->nout; j++)
    names[j] = s->g->tensors[nd->out[j]].name;
  int m = ir_add_node(s->n, nd->op, in, nd->nin, &nd->a, names, d);
  if (m < 0)
    return -1;
  for (int j = 0; j < nd->nout; j++)
    s->map[nd->out[j]] = s->n->nodes[m].out[j];
  return 0;
}

/* h's leaves as n tensors (through g's names); 0 when one is not yet
 * defined. */
static int h_ready(splice *s) {
  for (int i = 0; i < s->h->ntensors; i++) {
    if (s->h->tensors[i].kind == IR_T_VALUE)
      continue;
    int t = ir_find_tensor(s->g, s->h->tensors[i].name);
    if (t < 0 || s->map[t] < 0)
      return 0;
    s->hmap[i] = s->map[t];
  }
  return 1;
}

/* A name for h's tensor t: f's output name when t is h's output i, else a
 * fresh one unused in g and n. */
static const char *h_name(splice *s, int t, char *buf, size_t len) {
  for (int i = 0; i < s->h->noutputs; i++)
    if (s->h->outputs[i] == t)
      return s->f->tensors[s->f->outputs[i]].name;
  do
    snprintf(buf, len, "%s.mut%d", s->f->tensors[s->f->outputs[0]].name,
             s->fresh++);
  while (ir_find_tensor(s->g, buf) >= 0 || ir_find_tensor(s->n, buf) >= 0);
  return buf;
}

static int emit_h(splice *s, base_diag *d) {
  char bufs[IR_MAX_LIST][300];
  for (int k = 0; k < s->h->nnodes; k++) {
    const ir_node *nd = &s->h->nodes[k];
    int32_t in[IR_MAX_IN];
    const char *names[IR_MAX_LIST];
    for (int j = 0; j < nd->nin; j++)
      in[j] = s->hmap[nd->in[j]];
    for (int j = 0; j < nd->nout; j++)
      names[j] = h_name(s, nd->out[j], bufs[j], sizeof bufs[j]);
    int m = ir_add_node(s->n, nd->op, in, nd->nin, &nd->a, names, d);
    if (m < 0)
      return -1;
    for (int j = 0; j < nd->nout; j++)
      s->hmap[nd->out[j]] = s->n->nodes[m].out[j];
  }
  for (int i = 0; i < s->f->noutputs; i++) {
    int t = ir_find_tensor(s->g, s->f->tensors[s->f->outputs[i]].name);
    if (t < 0)
      return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                           "mutant: output %s is not in the model",
                           s->f->tensors[s->f->outputs[i]].name),
             -1;
    s->map[t] = s->hmap[s->h->outputs[i]];
  }
  return 0;
}

/* mutant_int.h */
base_status mutant_splice(const ir_graph *g, const int32_t *sites, int nsites,
                          const ir_graph *f, const ir_graph *h, ir_graph **out,
                          base_diag *d) {
  splice s = {g, f, h, ir_graph_new(g->name), NULL, NULL, 0};
  uint8_t *site = base_calloc((size_t)g->nnodes + 1, 1), *done = NULL;
  s.map = base_malloc(sizeof *s.map * ((size_t)g->ntensors + 1));
  s.hmap = base_malloc(sizeof *s.hmap * ((size_t)h->ntensors + 1));
  done = base_calloc((size_t)g->nnodes + 1, 1);
  base_status st = BASE_OK;
  if (!s.n || !site || !s.map || !s.hmap || !done) {
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    goto out;
  }
  memset(s.map, 0xff, sizeof *s.map * (size_t)g->ntensors);
  for (int i = 0; i < nsites; i++)
    site[sites[i]] = 1;
  if (copy_leaves(&s, d)) {
    st = d->code;
    goto out;
  }
  int left = g->nnodes - nsites + 1, hdone = 0;
  for (int progress = 1; left && progress;) {
    progress = 0;
    for (int k = 0; k < g->nnodes && !st; k++) {
      const ir_node *nd = &g->nodes[k];
      if (site[k] && !hdone && h_ready(&s)) {
        if (emit_h(&s, d))
          st = d->code;
        hdone = 1, left--, progress = 1;
      } else if (!site[k] && !done[k] && ready(&s, nd->in, nd->nin)) {
        if (emit_node(&s, k, d))
          st = d->code;
        done[k] = 1, left--, progress = 1;
      }
    }
    if (st)
      goto out;
  }
  if (left) {
    st = base_diag_set(d, BASE_ERR_CYCLE, 0, 0,
                       "mutant: the mutant's inputs depend on its outputs");
    goto out;
  }
  for (int i = 0; i < g->noutputs && !st; i++)
    st = ir_add_output(s.n, s.map[g->outputs[i]], d);
  if (!st)
    st = ir_graph_validate(s.n, d);
out:
  if (st)
    ir_graph_free(s.n);
  else
    *out = s.n;
  free(site), free(done), free(s.map), free(s.hmap);
  return st;
}

/* ---- choosing ------------------------------------------------------------ */

static int record(mutant_apply_stats *st, const mutant_applied *a) {
  mutant_applied *v =
      base_realloc(st->applied, sizeof *v * (size_t)(st->napplied + 1));
  if (!v)
    return -1;
  st->applied = v;
  st->applied[st->napplied++] = *a;
  return 0;
}

void mutant_apply_stats_free(mutant_apply_stats *st) {
  free(st->applied);
  memset(st, 0, sizeof *st);
}

int mutant_sites_in(const ir_graph *cur, const mutant *m, int32_t *sites) {
  for (int i = 0; i < m->f->noutputs; i++) {
    const ir_tensor *y = &m->f->tensors[m->f->outputs[i]];
    int t = ir_find_tensor(cur, y->name);
    if (t < 0 || cur->tensors[t].node < 0 || y->node < 0 ||
        cur->nodes[cur->tensors[t].node].op != m->f->nodes[y->node].op)
      return -1;
    sites[i] = cur->tensors[t].node;
  }
  return 0;
}

/* Tries mutant m on *cur: analysis, correction, costs (cd_sum_cost:
 * weight-only nodes, e.g. sliced weights, run once at load and are free),
 * splice. 1 taken, 0 not, -1 with d set on a hard error (out of memory, the
 * cost function's error). */
static int try_one(ir_graph **cur, const mutant *m, uint64_t seed,
                   int estimates_ok, mutant_cost_fn cost, void *u,
                   mutant_apply_stats *st, base_diag *d) {
  mutant_applied a = {.cls = m->cls};
  double ms_g;
  int est_f = 0, est_h = 0;
  if (cd_sum_cost(m->f, cost, u, &a.ms_before, &est_f, d) ||
      cd_sum_cost(m->g, cost, u, &ms_g, NULL, d))
    return -1;
  if (!(ms_g < a.ms_before)) {
    st->not_cheaper++;
    return 0;
  }
  mutant_boxes b;
  ir_graph *h = NULL, *next = NULL;
  base_diag q;
  base_status s = mutant_analyze(m->f, m->g, seed, &b, &q);
  if (s == BASE_ERR_NOMEM)
    return base_diag_set(d, s, 0, 0, "%s", q.msg), -1;
  if (s) {
    st->refused++;
    return 0;
  }
  s = mutant_correct(m->f, m->g, b.wrong, b.nwrong, &h, &q);
  a.wrong_numel = b.wrong_numel, a.numel = b.numel;
  a.bound = mutant_false_equal_bound(m->f, m->g);
  mutant_boxes_free(&b);
  if (!s && cd_sum_cost(h, cost, u, &a.ms_after, &est_h, d)) {
    ir_graph_free(h);
    return -1;
  }
  int32_t sites[2];
  int taken = 0;
  if (!s && a.ms_after < a.ms_before && (est_f || est_h) && !estimates_ok) {
    st->unmeasured++;
    st->cls_unmeasured[m->cls]++;
  } else if (!s && a.ms_after < a.ms_before &&
             !mutant_sites_in(*cur, m, sites) &&
             !mutant_splice(*cur, sites, m->f->noutputs, m->f, h, &next, &q)) {
    for (int i = 0; i < m->f->noutputs; i++)
      snprintf(a.site[i], sizeof a.site[i], "%s",
               m->f->tensors[m->f->outputs[i]].name);
    ir_graph_free(*cur);
    *cur = next;
    taken = 1;
    if (record(st, &a))
      taken = -1, base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  } else if (!s && !(a.ms_after < a.ms_before)) {
    st->not_cheaper++;
  } else {
    st->refused++;
  }
  ir_graph_free(h);
  return taken;
}

base_status mutant_apply(const ir_graph *g, unsigned mask, uint64_t seed,
                         mutant_cost_fn cost, void *u, ir_graph **out,
                         mutant_apply_stats *st, base_diag *d) {
  mutant_list l = {0};
  memset(st, 0, sizeof *st);
  ir_graph *cur = ir_graph_clone_shared(g); /* g outlives the pass */
  uint8_t *used = base_calloc((size_t)g->nnodes + 1, 1);
  base_status s = cur && used ? BASE_OK : BASE_ERR_NOMEM;
  if (s)
    base_diag_set(d, s, 0, 0, "out of memory");
  if (!s)
    s = mutant_generate(g, mask, &l, d);
  st->considered = l.n;
  for (int i = 0; i < l.n; i++)
    st->cls_considered[l.m[i].cls]++;
  for (int i = 0; !s && i < l.n; i++) {
    const mutant *m = &l.m[i];
    if (used[m->site[0]] || (m->site[1] >= 0 && used[m->site[1]])) {
      st->overlapping++;
      continue;
    }
    int r =
        try_one(&cur, m, seed, (mask & MUTANT_ESTIMATES) != 0, cost, u, st, d);
    if (r < 0)
      s = d->code;
    else if (r > 0)
      for (int k = 0; k < 2; k++)
        if (m->site[k] >= 0)
          used[m->site[k]] = 1;
  }
  mutant_list_free(&l);
  free(used);
  if (s) {
    ir_graph_free(cur);
    mutant_apply_stats_free(st);
    return s;
  }
  *out = cur;
  return BASE_OK;
}
