/* rules.c: rules compiled for the optimizer: the usable directions of a
 * rule set, each with its pattern prepared for matching, grouped by the
 * signature of their anchor node so that a graph selects the directions
 * that may match it in one pass over its node signatures. Rules read
 * lazily are loaded and compiled when a searched graph first has every
 * operator of one of their sides (rewrite_rules_load). */
#include <stdlib.h>

#include "rewrite_int.h"

/* ---- rules
 * -------------------------------------------------------------------- */

/* Can pat be matched and repl instantiated from its bindings? 1 yes, 0 no,
 * -1 out of memory. */
static int usable(const ir_graph *pat, const ir_graph *repl) {
  if (rewrite_pattern_ok(pat, NULL) || repl->nnodes > REWRITE_MAX_PNODES ||
      repl->ntensors > REWRITE_MAX_PTENSORS || pat->noutputs != repl->noutputs)
    return 0;
  uint64_t hp, hr;
  if (ir_graph_hash(pat, &hp) || ir_graph_hash(repl, &hr))
    return -1;
  if (hp == hr)
    return 0;
  for (int i = 0; i < pat->noutputs; i++)
    if (pat->tensors[pat->outputs[i]].kind != IR_T_VALUE)
      return 0;
  for (int t = 0; t < repl->ntensors; t++) {
    if (repl->tensors[t].kind == IR_T_VALUE)
      continue;
    int p = ir_find_tensor(pat, repl->tensors[t].name), read = 0;
    for (int i = 0; p >= 0 && !read && i < pat->nnodes; i++)
      for (int k = 0; k < pat->nodes[i].nin; k++)
        read |= pat->nodes[i].in[k] == p;
    if (!read)
      return 0;
  }
  return 1;
}

static int anchor_add(rewrite_anchors *an, int k, uint64_t s);

/* Compiles rule i's usable directions (its graphs loaded) into their
 * slots. 0, or -1 on out of memory. */
static int compile_rule(rewrite_rules *r, int i) {
  const ir_rule *ru = &r->rs->rules[i];
  r->loaded[i] = 1;
  for (int bw = 0; bw < 2; bw++) {
    const ir_graph *pat = bw ? ru->dst : ru->src,
                   *repl = bw ? ru->src : ru->dst;
    int u = r->directions & (bw ? REWRITE_BACKWARD : REWRITE_FORWARD)
                ? usable(pat, repl)
                : 0;
    if (u < 0)
      return -1;
    if (!u)
      continue;
    int k = 2 * i + bw;
    rewrite_dir *dr = &r->dirs[k];
    dr->rule = i;
    dr->backward = bw;
    dr->pat = pat;
    dr->repl = repl;
    rewrite_cpat_init(&dr->cp, pat, NULL); /* usable() checked its size */
    dr->cp.repl = repl;
    dr->cp.dir = k;
    dr->cp.off = 0;
    dr->cp.ic = r->instances ? r->ic : NULL;
    r->nlive++;
    if (anchor_add(&r->an, k, dr->cp.sig[pat->nnodes - 1]))
      return -1;
  }
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Groups the rules not loaded by the operators of each side a direction
 * may match by (pairs (mask, rule) sorted). 0, or -1 on out of memory. */
static int pending_build(rewrite_rules *r) {
  const ir_ruleset *rs = r->rs;
  rewrite_pending *pd = &r->pend;
  uint64_t *e = base_malloc(sizeof *e * 2 * (2 * (size_t)rs->n + 1));
  if (!e)
    return -1;
  size_t n = 0;
  for (int i = 0; i < rs->n; i++)
    for (int bw = 0; !r->loaded[i] && bw < 2; bw++)
      if ((r->directions & (bw ? REWRITE_BACKWARD : REWRITE_FORWARD)) &&
          rs->rules[i].ops[bw]) {
        e[2 * n] = rs->rules[i].ops[bw];
        e[2 * n + 1] = (uint64_t)i;
        n++;
      }
  qsort(e, n, 2 * sizeof *e, cmp_u64); /* by mask, then rule (stable) */
  pd->mask = base_malloc(sizeof *pd->mask * (n + 1));
  pd->start = base_malloc(sizeof *pd->start * (n + 2));
  pd->rule = base_malloc(sizeof *pd->rule * (n + 1));
  pd->done = base_calloc(n + 1, 1);
  if (!pd->mask || !pd->start || !pd->rule || !pd->done) {
    free(e);
    return -1;
  }
  for (size_t j = 0; j < n; j++) {
    if (!j || e[2 * j] != e[2 * j - 2]) {
      pd->mask[pd->ngroups] = e[2 * j];
      pd->start[pd->ngroups++] = (int32_t)j;
    }
    pd->rule[j] = (int32_t)e[2 * j + 1];
  }
  pd->start[pd->ngroups] = (int32_t)n;
  pd->left = pd->ngroups;
  free(e);
  return 0;
}

rewrite_rules *rewrite_rules_compile(const ir_ruleset *rs, int directions,
                                     int allow_unproven, base_diag *d) {
  for (int i = 0; !allow_unproven && i < rs->n; i++)
    if (rs->rules[i].status != IR_RULE_PROVEN) {
      base_diag_set(d, BASE_ERR_PARAM, rs->rules[i].line, 1,
                    "rule '%s' is %s; only proven rules are used (pass "
                    "--allow-unproven to use every rule)",
                    rs->rules[i].id, ir_rule_status_name(rs->rules[i].status));
      return NULL;
    }
  rewrite_rules *r = base_calloc(1, sizeof *r);
  int oom = !r;
  if (r) {
    r->rs = rs;
    r->directions = directions;
    r->instances = 1;
    r->ndirs = 2 * rs->n;
    r->dirs = base_calloc((size_t)r->ndirs + 1, sizeof *r->dirs);
    r->loaded = base_calloc((size_t)rs->n + 1, 1);
    r->an.next = base_malloc(sizeof(int32_t) * ((size_t)r->ndirs + 1));
    r->ic = rewrite_icache_new(r->ndirs);
    oom = !r->dirs || !r->loaded || !r->an.next || !r->ic;
  }
  for (int i = 0; !oom && i < rs->n; i++)
    if (ir_rule_loaded(&rs->rules[i]))
      oom = compile_rule(r, i) < 0;
  if (oom || pending_build(r)) {
    rewrite_rules_free(r);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  return r;
}

/* Whether the rules were already loaded for ops (remembers ops if not).
 * -1 on out of memory. */
static int seen_ops(rewrite_pending *pd, uint64_t ops) {
  for (int j = 0; j < pd->nseen; j++)
    if (pd->seen[j] == ops)
      return 1;
  if (pd->nseen == pd->capseen) {
    int cap = pd->capseen ? 2 * pd->capseen : 16;
    uint64_t *s = base_realloc(pd->seen, sizeof *s * (size_t)cap);
    if (!s)
      return -1;
    pd->seen = s;
    pd->capseen = cap;
  }
  pd->seen[pd->nseen++] = ops;
  return 0;
}

base_status rewrite_rules_load(const rewrite_rules *cr, uint64_t ops,
                               base_diag *d) {
  rewrite_rules *r = (rewrite_rules *)cr; /* allocated mutable: see .h */
  rewrite_pending *pd = &r->pend;
  if (!pd->left)
    return BASE_OK;
  int seen = seen_ops(pd, ops);
  if (seen)
    return seen < 0 ? base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory")
                    : BASE_OK;
  ir_ruleset *rs = (ir_ruleset *)r->rs; /* the caller's, loaded in place */
  for (int g = 0; g < pd->ngroups; g++) {
    if (pd->done[g] || (pd->mask[g] & ~ops))
      continue;
    for (int j = pd->start[g]; j < pd->start[g + 1]; j++) {
      int i = pd->rule[j];
      if (r->loaded[i])
        continue;
      base_status st = ir_rule_load(&rs->rules[i], d);
      if (st)
        return st;
      if (compile_rule(r, i))
        return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    pd->done[g] = 1;
    pd->left--;
  }
  return BASE_OK;
}

void rewrite_rules_free(rewrite_rules *r) {
  if (r) {
    rewrite_icache_free(r->ic);
    free(r->dirs);
    free(r->loaded);
    free(r->an.key);
    free(r->an.head);
    free(r->an.next);
    free(r->pend.mask);
    free(r->pend.start);
    free(r->pend.rule);
    free(r->pend.done);
    free(r->pend.seen);
  }
  free(r);
}

/* The slot of signature s in the anchor table (its own or the empty one
 * where it would go). */
static int anchor_slot(const rewrite_anchors *an, uint64_t s) {
  if (!s)
    s = 1;
  int j = (int)(s & (uint64_t)(an->cap - 1));
  while (an->key[j] && an->key[j] != s)
    j = (j + 1) & (an->cap - 1);
  return j;
}

/* Doubles the anchor table (or makes the first). 0, or -1 on OOM. */
static int anchors_grow(rewrite_anchors *an) {
  rewrite_anchors old = *an;
  an->cap = old.cap ? 2 * old.cap : 64;
  an->key = base_calloc((size_t)an->cap, sizeof *an->key);
  an->head = base_malloc(sizeof *an->head * (size_t)an->cap);
  if (!an->key || !an->head) {
    free(an->key);
    free(an->head);
    *an = old;
    return -1;
  }
  for (int j = 0; j < an->cap; j++)
    an->head[j] = -1;
  for (int j = 0; j < old.cap; j++)
    if (old.key[j]) {
      int t = anchor_slot(an, old.key[j]);
      an->key[t] = old.key[j];
      an->head[t] = old.head[j];
    }
  free(old.key);
  free(old.head);
  return 0;
}

/* Adds direction k under anchor signature s. 0, or -1 on OOM. */
static int anchor_add(rewrite_anchors *an, int k, uint64_t s) {
  if (2 * (an->nkeys + 1) >= an->cap && anchors_grow(an))
    return -1;
  int j = anchor_slot(an, s);
  if (!an->key[j]) {
    an->key[j] = s ? s : 1;
    an->nkeys++;
  }
  an->next[k] = an->head[j];
  an->head[j] = k;
  return 0;
}

void rewrite_anchors_mark(const rewrite_rules *r, const rewrite_index *ix,
                          int nnodes, uint64_t *mask) {
  const rewrite_anchors *an = &r->an;
  for (int u = 0; an->cap && u < nnodes; u++) {
    int i = ix->by_sig[u];
    if (u > 0 && ix->sig[i] == ix->sig[ix->by_sig[u - 1]])
      continue; /* one look-up per distinct signature */
    int j = anchor_slot(an, ix->sig[i]);
    for (int k = an->key[j] ? an->head[j] : -1; k >= 0; k = an->next[k])
      mask[k / 64] |= (uint64_t)1 << (k % 64);
  }
}

int rewrite_rules_count(const rewrite_rules *r) { return r->nlive; }

void rewrite_rules_set_instances(rewrite_rules *r, int on) {
  r->instances = on;
  for (int k = 0; k < r->ndirs; k++)
    r->dirs[k].cp.ic = on && r->dirs[k].pat ? r->ic : NULL;
}
