/* rules.c: rules compiled for the optimizer: the usable directions of a
 * rule set, each with its pattern prepared for matching, grouped by the
 * signature of their anchor node so that a graph selects the directions
 * that may match it in one pass over its node signatures. */
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

static int anchors_build(rewrite_rules *r);

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
  if (r)
    r->dirs = base_calloc(2 * (size_t)rs->n + 1, sizeof *r->dirs);
  if (!r || !r->dirs) {
    rewrite_rules_free(r);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  r->rs = rs;
  int oom = !(r->ic = rewrite_icache_new(2 * rs->n));
  for (int i = 0; !oom && i < rs->n; i++)
    for (int bw = 0; !oom && bw < 2; bw++) {
      const ir_rule *ru = &rs->rules[i];
      const ir_graph *pat = bw ? ru->dst : ru->src,
                     *repl = bw ? ru->src : ru->dst;
      int u = directions & (bw ? REWRITE_BACKWARD : REWRITE_FORWARD)
                  ? usable(pat, repl)
                  : 0;
      oom = u < 0;
      if (u > 0) {
        rewrite_dir *dr = &r->dirs[r->ndirs++];
        *dr =
            (rewrite_dir){.rule = i, .backward = bw, .pat = pat, .repl = repl};
        rewrite_cpat_init(&dr->cp, pat, NULL); /* usable() checked its size */
        dr->cp.repl = repl;
        dr->cp.dir = r->ndirs - 1;
      }
    }
  rewrite_rules_set_instances(r, 1);
  if (oom || anchors_build(r)) {
    rewrite_rules_free(r);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  return r;
}

void rewrite_rules_free(rewrite_rules *r) {
  if (r) {
    rewrite_icache_free(r->ic);
    free(r->dirs);
    free(r->an.key);
    free(r->an.start);
    free(r->an.count);
    free(r->an.dir);
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

/* Groups the directions by their anchor signature (counting, then
 * placing, so that each group keeps increasing order). */
static int anchors_build(rewrite_rules *r) {
  rewrite_anchors *an = &r->an;
  an->cap = 64;
  while (an->cap < 2 * r->ndirs + 2)
    an->cap *= 2;
  an->key = base_calloc((size_t)an->cap, sizeof *an->key);
  an->start = base_calloc((size_t)an->cap, sizeof *an->start);
  an->count = base_calloc((size_t)an->cap, sizeof *an->count);
  an->dir = base_malloc(sizeof *an->dir * ((size_t)r->ndirs + 1));
  if (!an->key || !an->start || !an->count || !an->dir)
    return -1;
  for (int k = 0; k < r->ndirs; k++) {
    const rewrite_cpat *cp = &r->dirs[k].cp;
    uint64_t s = cp->sig[cp->g->nnodes - 1];
    int j = anchor_slot(an, s);
    an->key[j] = s ? s : 1;
    an->count[j]++;
  }
  for (int j = 0, at = 0; j < an->cap; j++) {
    an->start[j] = at;
    at += an->count[j];
    an->count[j] = 0;
  }
  for (int k = 0; k < r->ndirs; k++) {
    const rewrite_cpat *cp = &r->dirs[k].cp;
    int j = anchor_slot(an, cp->sig[cp->g->nnodes - 1]);
    an->dir[an->start[j] + an->count[j]++] = k;
  }
  return 0;
}

void rewrite_anchors_mark(const rewrite_rules *r, const rewrite_index *ix,
                          int nnodes, uint64_t *mask) {
  const rewrite_anchors *an = &r->an;
  for (int u = 0; u < nnodes; u++) {
    int i = ix->by_sig[u];
    if (u > 0 && ix->sig[i] == ix->sig[ix->by_sig[u - 1]])
      continue; /* one look-up per distinct signature */
    int j = anchor_slot(an, ix->sig[i]);
    for (int c = 0; an->key[j] && c < an->count[j]; c++) {
      int k = an->dir[an->start[j] + c];
      mask[k / 64] |= (uint64_t)1 << (k % 64);
    }
  }
}

int rewrite_rules_count(const rewrite_rules *r) { return r->ndirs; }

void rewrite_rules_set_instances(rewrite_rules *r, int on) {
  for (int k = 0; k < r->ndirs; k++)
    r->dirs[k].cp.ic = on ? r->ic : NULL;
}
