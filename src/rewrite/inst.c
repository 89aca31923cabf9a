/* inst.c: rule instances, how a rule proven on bias-free, stride-1
 * convolutions applies to the convolutions real graphs have.
 *
 * The matcher binds a pattern convolution without bias to a graph
 * convolution that differs only in stride, groups, explicit pads (where
 * the pattern's are explicit too), a bias or a fused activation, and a
 * pattern batchnorm to one of another eps (REWRITE_INSTANCE). Such a match is
 * used only through the rule instance it needs, proven by the verifier:
 *   - src' is the pattern with every node's parameters the bound graph
 *     node's (its bias an extra input), typed on the bound tensors' shapes;
 *   - dst' is the replacement with the same strides, groups, explicit
 *     pads and batchnorm eps substituted
 *     (pattern value -> graph value, one value each), each activation of a
 *     pattern output applied to the matching replacement output (fused into
 *     its producer when that has act=), and the biases placed by trying,
 *     in order, each replacement convolution without bias: one bias as is,
 *     two as their sum or their concatenation;
 *   - the first candidate whose rule src' = dst' the verifier proves is the
 *     instance; none proven: the match is refused.
 * Instances are cached by direction, graph-node parameters and bound shapes
 * (refusals too); at most INST_MAX_PROOFS rules are sent to the verifier per
 * compiled rule set, later new instances are refused, and a direction with
 * refusals of INST_HOPELESS kinds (the bound nodes' parameters, shapes
 * aside) and no proof is matched exactly only from then on (a search-time
 * economy: it only refuses more). docs/search.md ("Why
 * each generalisation is sound") gives the argument.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "../verify/verify.h"
#include "rewrite_int.h"

/* Verifier calls per compiled rule set. 1,024 until 2026-11-29: with
 * --passes none and rules/extended.rules Inception-v3 spent them all and
 * refused instances it needed (1,223.6 us at 1,024, 1,143.8 us at 8,192;
 * 11.4 -> 25.5 CPU-s for the whole optimize; ResNet-50 735.7 us either
 * way, 8.4 -> 13.8 CPU-s; docs/notes/results.md). 8,192 until
 * 2026-11-30: Inception-v3 spent them again, the last regions (Mixed_7c)
 * refused the instances of its sibling merges, which the same region alone
 * proved and took (1,004.4 us at 8,192 by the H200's model, 995.7 at
 * 12,288, 990.4 at 32,768 and the default's 990.4; 30.5 and 54 CPU-s;
 * batch 16 2,606.3 us either way, 26 -> 34 CPU-s). A proof takes about
 * 2 ms. */
#define INST_MAX_PROOFS 12288
#define INST_TIMEOUT_MS 2000u /* per verifier query */
/* Kinds of refusal without a proof that give up a direction. A kind is
 * the bound nodes' parameters, not their shapes: one kind refused on many
 * shapes (NASNet-A's channel counts) says no more than once, and counting
 * each shape made whether a direction stayed open depend on the order in
 * which a search met its matches (the second descent, search.c, met the
 * refused kinds of e00122's sibling merge on more shapes first and lost
 * the biased merges the first search had proven). */
#define INST_HOPELESS 8

typedef struct inst_entry {
  uint64_t key;
  int dir, proven;
  int unresolved; /* out of memory while resolving: tried again next time */
  ir_graph *src, *dst;                /* proven: the instance's sides (owned) */
  int32_t tmap[REWRITE_MAX_PTENSORS]; /* pattern tensor -> src' tensor */
  int32_t bias[REWRITE_MAX_PNODES];   /* pattern node -> src' bias, or -1 */
} inst_entry;

struct rewrite_icache {
  verify_ctx *vc;
  int vc_failed;
  inst_entry *e; /* open addressing on key; dir -1 = empty */
  int n, cap;
  int proofs, proven, refused;
  int ndirs;
  int32_t *dir_proven, *dir_refused; /* ndirs each; refused: kinds */
  base_u64set kinds; /* refused kinds (match_key without shapes) */
};

rewrite_icache *rewrite_icache_new(int ndirs) {
  rewrite_icache *c = base_calloc(1, sizeof *c);
  if (c) {
    c->ndirs = ndirs;
    c->dir_proven = base_calloc((size_t)ndirs + 1, sizeof(int32_t));
    c->dir_refused = base_calloc((size_t)ndirs + 1, sizeof(int32_t));
    if (!c->dir_proven || !c->dir_refused) {
      rewrite_icache_free(c);
      return NULL;
    }
  }
  return c;
}

int rewrite_icache_hopeless(const rewrite_icache *c, int dir) {
  return c->dir_refused[dir] >= INST_HOPELESS && !c->dir_proven[dir];
}

void rewrite_icache_free(rewrite_icache *c) {
  if (!c)
    return;
  for (int i = 0; i < c->cap; i++)
    if (c->e[i].dir >= 0) {
      ir_graph_free(c->e[i].src);
      ir_graph_free(c->e[i].dst);
    }
  free(c->e);
  free(c->dir_proven);
  free(c->dir_refused);
  base_u64set_free(&c->kinds);
  if (c->vc)
    verify_free(c->vc);
  free(c);
}

static inst_entry *lookup(rewrite_icache *c, uint64_t key, int dir) {
  if (!c->cap)
    return NULL;
  for (int j = (int)(key & (uint64_t)(c->cap - 1));;
       j = (j + 1) & (c->cap - 1)) {
    inst_entry *e = &c->e[j];
    if (e->dir < 0)
      return NULL;
    if (e->key == key && e->dir == dir)
      return e;
  }
}

/* A slot for a new entry (the table grown as needed); NULL on OOM. */
static inst_entry *insert(rewrite_icache *c, uint64_t key, int dir) {
  if (2 * (c->n + 1) > c->cap) {
    int cap = c->cap ? 2 * c->cap : 256;
    inst_entry *t = base_malloc(sizeof *t * (size_t)cap);
    if (!t)
      return NULL;
    for (int j = 0; j < cap; j++)
      t[j].dir = -1;
    for (int i = 0; i < c->cap; i++) {
      if (c->e[i].dir < 0)
        continue;
      int j = (int)(c->e[i].key & (uint64_t)(cap - 1));
      while (t[j].dir >= 0)
        j = (j + 1) & (cap - 1);
      t[j] = c->e[i];
    }
    free(c->e);
    c->e = t;
    c->cap = cap;
  }
  int j = (int)(key & (uint64_t)(c->cap - 1));
  while (c->e[j].dir >= 0)
    j = (j + 1) & (c->cap - 1);
  c->n++;
  memset(&c->e[j], 0, sizeof c->e[j]);
  c->e[j].key = key;
  c->e[j].dir = dir;
  return &c->e[j];
}

/* The graph node's parameters as the instance's node has them: padding
 * in the pattern node's mode (rewrite_params_match checked they agree). */
static ir_attrs inst_attrs(const ir_node *pn, const ir_node *gn) {
  ir_attrs a = gn->a;
  if (a.padmode != pn->a.padmode) {
    a.padmode = pn->a.padmode;
    memset(a.pad, 0, sizeof a.pad);
  } else if (a.padmode != IR_PAD_EXPLICIT) {
    memset(a.pad, 0, sizeof a.pad);
  }
  return a;
}

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  return XXH3_64bits_withSeed(p, n, h);
}

/* The key of a match: direction, each bound node's instance parameters
 * and arity, and with shapes set each bound input's shape and a bias's
 * (the instance cache's key); without, the match's kind (the refusals'). */
static uint64_t match_key(const rewrite_cpat *cp, const ir_graph *g,
                          const rewrite_match *m, int shapes) {
  uint64_t h = XXH3_64bits(&cp->dir, sizeof cp->dir);
  const ir_graph *pat = cp->g;
  for (int p = 0; p < pat->nnodes; p++) {
    const ir_node *gn = &g->nodes[m->node[p]];
    ir_attrs a = inst_attrs(&pat->nodes[p], gn);
    h = mix(h, &a, sizeof a);
    h = mix(h, &gn->nin, sizeof gn->nin);
    if (shapes && gn->nin > pat->nodes[p].nin) { /* the bias */
      const ir_shape *s = &g->tensors[gn->in[gn->nin - 1]].shape;
      h = mix(h, s, sizeof *s);
    }
  }
  for (int t = 0; shapes && t < pat->ntensors; t++)
    if (pat->tensors[t].kind != IR_T_VALUE && m->tensor[t] >= 0) {
      const ir_shape *s = &g->tensors[m->tensor[t]].shape;
      h = mix(h, s, sizeof *s);
    }
  return h;
}

/* Builds src' into e (tmap, bias). 0 ok, -1 does not type-check, -2 out
 * of memory. */
static int build_src(const rewrite_cpat *cp, const ir_graph *g,
                     const rewrite_match *m, inst_entry *e, base_diag *d) {
  const ir_graph *pat = cp->g;
  ir_graph *h = ir_graph_new("instance");
  if (!h)
    return -2;
  d->code = BASE_OK;
  for (int t = 0; t < pat->ntensors; t++) {
    e->tmap[t] = -1;
    if (pat->tensors[t].kind == IR_T_VALUE)
      continue;
    if (m->tensor[t] < 0 || (e->tmap[t] = ir_add_tensor(
                                 h, pat->tensors[t].name, pat->tensors[t].kind,
                                 &g->tensors[m->tensor[t]].shape, d)) < 0)
      goto fail;
    /* an input bound by value stays so (the matcher checked the graph's
     * holds it), so that the proof speaks of the constant */
    h->tensors[e->tmap[t]].has_value = pat->tensors[t].has_value;
    h->tensors[e->tmap[t]].value = pat->tensors[t].value;
  }
  for (int p = 0; p < pat->nnodes; p++) {
    const ir_node *pn = &pat->nodes[p], *gn = &g->nodes[m->node[p]];
    ir_attrs a = inst_attrs(pn, gn);
    int32_t in[IR_MAX_IN];
    const char *np[IR_MAX_LIST];
    for (int k = 0; k < pn->nin; k++)
      in[k] = e->tmap[pn->in[k]];
    e->bias[p] = -1;
    if (gn->nin > pn->nin) {
      char name[32];
      snprintf(name, sizeof name, "__b%d", p);
      if ((e->bias[p] = ir_add_tensor(h, name, IR_T_WEIGHT,
                                      &g->tensors[gn->in[pn->nin]].shape, d)) <
          0)
        goto fail;
      in[pn->nin] = e->bias[p];
    }
    for (int o = 0; o < pn->nout; o++)
      np[o] = pat->tensors[pn->out[o]].name;
    int k = ir_add_node(h, pn->op, in, gn->nin, &a, np, d);
    if (k < 0)
      goto fail;
    for (int o = 0; o < pn->nout; o++)
      e->tmap[pn->out[o]] = h->nodes[k].out[o];
  }
  for (int i = 0; i < pat->noutputs; i++)
    if (ir_add_output(h, e->tmap[pat->outputs[i]], d))
      goto fail;
  if (h->ntensors > REWRITE_MAX_PTENSORS)
    goto fail;
  e->src = h;
  return 0;
fail:
  ir_graph_free(h);
  return d->code == BASE_ERR_NOMEM ? -2 : -1;
}

/* Adds from -> to to a map of n pairs; 0 when from maps elsewhere. */
static int map_add(int32_t *from, int32_t *to, int *n, int32_t f, int32_t t) {
  for (int i = 0; i < *n; i++)
    if (from[i] == f)
      return to[i] == t;
  from[*n] = f;
  to[(*n)++] = t;
  return 1;
}

/* Adds pattern node pa's explicit pads -> graph node ga's to e's map (one
 * value each, as map_add); 0 on a clash. Other modes: nothing to map
 * (rewrite_params_match let them differ only when both are explicit). */
static int pad_map_add(rewrite_edits *e, const ir_attrs *pa,
                       const ir_attrs *ga) {
  if (pa->padmode != IR_PAD_EXPLICIT || ga->padmode != IR_PAD_EXPLICIT)
    return 1;
  for (int i = 0; i < e->npad; i++)
    if (!memcmp(e->pad_from[i], pa->pad, sizeof pa->pad))
      return !memcmp(e->pad_to[i], ga->pad, sizeof ga->pad);
  memcpy(e->pad_from[e->npad], pa->pad, sizeof pa->pad);
  memcpy(e->pad_to[e->npad++], ga->pad, sizeof ga->pad);
  return 1;
}

/* The edits every candidate shares: stride, groups, pads and batchnorm eps
 * maps, activations of outputs, the biases. 0 when the match cannot be an
 * instance. */
static int base_edits(const rewrite_cpat *cp, const ir_graph *g,
                      const rewrite_match *m, const inst_entry *en,
                      rewrite_edits *e, int *bias_p, int *nbias) {
  const ir_graph *pat = cp->g;
  memset(e, 0, sizeof *e);
  e->bias_node = -1;
  *nbias = 0;
  for (int p = 0; p < pat->nnodes; p++) {
    const ir_node *pn = &pat->nodes[p], *gn = &g->nodes[m->node[p]];
    if (!(ir_op(pn->op)->traits & IR_PT_INST)) /* ops.def's '!' marks */
      continue;
    if (!map_add(e->sh_from, e->sh_to, &e->nsh, pn->a.stride[0],
                 gn->a.stride[0]) ||
        !map_add(e->sw_from, e->sw_to, &e->nsw, pn->a.stride[1],
                 gn->a.stride[1]) ||
        !map_add(e->groups_from, e->groups_to, &e->ngroups, pn->a.groups,
                 gn->a.groups) ||
        !pad_map_add(e, &pn->a, &gn->a) ||
        (pn->op == IR_OP_BATCHNORM &&
         !map_add(e->eps_from, e->eps_to, &e->neps,
                  (int32_t)ir_f32_bits(pn->a.eps),
                  (int32_t)ir_f32_bits(gn->a.eps))))
      return 0;
    if (gn->a.act != pn->a.act) { /* only on a pattern output */
      int o = -1;
      for (int i = 0; i < pat->noutputs; i++)
        if (pat->outputs[i] == pn->out[0])
          o = i;
      if (o < 0)
        return 0;
      e->act[o] = gn->a.act;
    }
    if (en->bias[p] >= 0) {
      if (*nbias == 2)
        return 0;
      bias_p[(*nbias)++] = p;
    }
  }
  for (int i = 0; i < *nbias; i++) {
    snprintf(e->bias_name[i], sizeof e->bias_name[i], "__b%d", bias_p[i]);
    e->bias_shape[i] = en->src->tensors[en->bias[bias_p[i]]].shape;
  }
  return 1;
}

/* Proves src' = dst'; 1 proven, 0 not (or no verifier), -1 out of memory
 * (which must not pass for "not proven": the search would go on with a
 * different result). */
static int prove(rewrite_icache *c, ir_graph *src, ir_graph *dst) {
  base_diag d = {0};
  if (!c->vc && !c->vc_failed) {
    verify_opts o = {.timeout_ms = INST_TIMEOUT_MS};
    c->vc = verify_new_with(&o, NULL, 0, 0, &d);
    if (!c->vc && d.code == BASE_ERR_NOMEM)
      return -1;
    c->vc_failed = !c->vc;
  }
  if (!c->vc)
    return 0;
  char id[] = "instance";
  ir_rule r = {.id = id, .src = src, .dst = dst};
  verify_result res;
  c->proofs++;
  if (verify_prove(c->vc, &r, &res, &d))
    return d.code == BASE_ERR_NOMEM ? -1 : 0;
  return res.status == IR_RULE_PROVEN;
}

/* Types candidate e of dst' and proves it; 1 when proven (en->dst set),
 * 0 not, -1 out of memory. */
static int try_candidate(const rewrite_cpat *cp, const ir_graph *g,
                         const rewrite_match *m, inst_entry *en,
                         const rewrite_edits *e) {
  base_diag d = {0};
  ir_graph *dst = rewrite_type_instance(g, cp->g, cp->repl, m, e, &d);
  if (!dst)
    return d.code == BASE_ERR_NOMEM ? -1 : 0;
  int proven =
      cp->ic->proofs < INST_MAX_PROOFS ? prove(cp->ic, en->src, dst) : 0;
  if (proven > 0) {
    en->dst = dst;
    return 1;
  }
  ir_graph_free(dst);
  return proven;
}

/* Tries the candidates for dst' in order; sets en->dst when one is
 * proven. -1 out of memory, else 0. */
static int find_instance(const rewrite_cpat *cp, const ir_graph *g,
                         const rewrite_match *m, inst_entry *en) {
  rewrite_edits e;
  int bias_p[2], nbias;
  if (!base_edits(cp, g, m, en, &e, bias_p, &nbias))
    return 0;
  if (!nbias)
    return try_candidate(cp, g, m, en, &e) < 0 ? -1 : 0;
  static const int one[] = {REWRITE_BIAS_ONE},
                   two[] = {REWRITE_BIAS_SUM, REWRITE_BIAS_CONCAT};
  const int *kinds = nbias == 1 ? one : two;
  int nk = nbias == 1 ? 1 : 2;
  const ir_graph *repl = cp->repl;
  for (int j = 0; j < repl->nnodes; j++) {
    if (ir_op(repl->nodes[j].op)->inst_in != repl->nodes[j].nin)
      continue; /* no bias slot (ops.def's '!' input) */
    for (int k = 0; k < nk; k++) {
      e.bias_node = j;
      e.bias_kind = kinds[k];
      int r = try_candidate(cp, g, m, en, &e);
      if (r)
        return r < 0 ? -1 : 0;
    }
  }
  return 0;
}

base_status rewrite_inst_resolve(const rewrite_cpat *cp, const ir_graph *g,
                                 const rewrite_match *m, const uint8_t *busy,
                                 rewrite_match *out, int *ok, base_diag *d) {
  rewrite_icache *c = cp->ic;
  *ok = 0;
  const ir_graph *pat = cp->g;
  for (int p = 0; p < pat->nnodes; p++) { /* a bias computed inside */
    const ir_node *gn = &g->nodes[m->node[p]];
    if (gn->nin > pat->nodes[p].nin) {
      const ir_tensor *b = &g->tensors[gn->in[pat->nodes[p].nin]];
      if (b->kind == IR_T_VALUE && busy[b->node])
        return BASE_OK;
    }
  }
  uint64_t key = match_key(cp, g, m, 1);
  inst_entry *en = lookup(c, key, cp->dir);
  if (!en || en->unresolved) {
    if (!en && !(en = insert(c, key, cp->dir)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    base_diag ld = {0};
    int b = build_src(cp, g, m, en, &ld);
    en->unresolved = 0;
    if (b == -2 || (!b && find_instance(cp, g, m, en) < 0)) {
      ir_graph_free(en->src);
      en->src = NULL;
      en->unresolved = 1; /* not "refused": nothing was decided */
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    }
    en->proven = en->dst != NULL;
    if (!en->proven) {
      ir_graph_free(en->src);
      en->src = NULL;
    }
    en->proven ? c->proven++ : c->refused++;
    int fresh =
        en->proven ? 1 : base_u64set_add(&c->kinds, match_key(cp, g, m, 0), 64);
    if (fresh < 0)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    (en->proven ? c->dir_proven : c->dir_refused)[cp->dir] += fresh;
  }
  if (!en->proven)
    return BASE_OK;
  memset(out, 0, sizeof *out);
  memset(out->node, -1, sizeof out->node);
  memset(out->tensor, -1, sizeof out->tensor);
  memcpy(out->node, m->node, sizeof out->node);
  for (int t = 0; t < pat->ntensors; t++)
    if (en->tmap[t] >= 0)
      out->tensor[en->tmap[t]] = m->tensor[t];
  for (int p = 0; p < pat->nnodes; p++)
    if (en->bias[p] >= 0) {
      const ir_node *gn = &g->nodes[m->node[p]];
      out->tensor[en->bias[p]] = gn->in[pat->nodes[p].nin];
    }
  out->pat = en->src;
  out->repl = en->dst;
  *ok = 1;
  return BASE_OK;
}

void rewrite_rules_instance_counts(const rewrite_rules *r, int *proven,
                                   int *refused) {
  *proven = r->ic ? r->ic->proven : 0;
  *refused = r->ic ? r->ic->refused : 0;
}
