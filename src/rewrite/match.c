/* match.c: finding every occurrence of a pattern graph in a graph.
 *
 * Backtracking over the pattern's nodes in reverse topological order, so
 * that a node's consumers inside the pattern are placed first: a node whose
 * output is already bound can only be that tensor's producer; otherwise one
 * whose input is bound is looked for among that tensor's readers; only the
 * first node of each connected part scans every node of its operator.
 * Bindings are undone on the way back, so the search keeps one state.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "rewrite_int.h"

/* ---- index -----------------------------------------------------------------
 */

void rewrite_index_free(rewrite_index *ix) {
  free(ix->use_start);
  free(ix->use_node);
  free(ix->is_output);
  free(ix->op_start);
  free(ix->op_node);
  free(ix->sig);
  free(ix->by_sig);
  free(ix->busy);
  free(ix->pad);
  free(ix->ssig);
  memset(ix, 0, sizeof *ix);
}

static void index_uses(const ir_graph *g, rewrite_index *ix) {
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      ix->use_start[g->nodes[i].in[k] + 1]++;
  for (int t = 0; t < g->ntensors; t++)
    ix->use_start[t + 1] += ix->use_start[t];
  int32_t *pos = ix->use_start; /* advanced, then shifted back */
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      ix->use_node[pos[g->nodes[i].in[k]]++] = i;
  for (int t = g->ntensors; t > 0; t--)
    pos[t] = pos[t - 1];
  pos[0] = 0;
}

static void index_ops(const ir_graph *g, rewrite_index *ix) {
  for (int i = 0; i < g->nnodes; i++)
    ix->op_start[g->nodes[i].op + 1]++;
  for (int o = 0; o < IR_NOPS; o++)
    ix->op_start[o + 1] += ix->op_start[o];
  int32_t pos[IR_NOPS + 1];
  memcpy(pos, ix->op_start, sizeof pos);
  for (int i = 0; i < g->nnodes; i++)
    ix->op_node[pos[g->nodes[i].op]++] = i;
}

/* by_sig: the nodes sorted by (signature, index). */
typedef struct sig_idx {
  uint64_t sig;
  int32_t i;
} sig_idx;

static int cmp_sig(const void *a, const void *b) {
  const sig_idx *x = a, *y = b;
  return x->sig < y->sig   ? -1
         : x->sig > y->sig ? 1
                           : (x->i > y->i) - (x->i < y->i);
}

static base_status index_sigs(int n, rewrite_index *ix) {
  sig_idx small[64], *v = n <= 64 ? small : base_malloc(sizeof *v * (size_t)n);
  if (!v)
    return BASE_ERR_NOMEM;
  for (int i = 0; i < n; i++)
    v[i] = (sig_idx){ix->sig[i], i};
  qsort(v, (size_t)n, sizeof *v, cmp_sig);
  for (int i = 0; i < n; i++)
    ix->by_sig[i] = v[i].i;
  if (v != small)
    free(v);
  return BASE_OK;
}

/* First position in by_sig with signature >= s. */
static int sig_lower(const rewrite_index *ix, int n, uint64_t s) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (ix->sig[ix->by_sig[mid]] < s)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int rewrite_sole_reader(const rewrite_index *ix, int32_t t) {
  return !ix->is_output[t] && ix->use_start[t + 1] - ix->use_start[t] == 1
             ? ix->use_node[ix->use_start[t]]
             : -1;
}

base_status rewrite_index_build(const ir_graph *g, rewrite_index *ix,
                                base_diag *d) {
  int64_t nuses = 0;
  for (int i = 0; i < g->nnodes; i++)
    nuses += g->nodes[i].nin;
  memset(ix, 0, sizeof *ix);
  ix->use_start = base_calloc((size_t)g->ntensors + 1, sizeof(int32_t));
  ix->use_node = base_malloc(sizeof(int32_t) * (size_t)(nuses + 1));
  ix->is_output = base_calloc((size_t)g->ntensors + 1, 1);
  ix->op_start = base_calloc(IR_NOPS + 1, sizeof(int32_t));
  ix->op_node = base_malloc(sizeof(int32_t) * (size_t)(g->nnodes + 1));
  ix->sig = base_malloc(sizeof(uint64_t) * (size_t)(g->nnodes + 1));
  ix->by_sig = base_malloc(sizeof(int32_t) * (size_t)(g->nnodes + 1));
  ix->busy = base_calloc((size_t)g->nnodes + 1, 1);
  ix->pad = base_calloc((size_t)g->nnodes + 1, 1);
  ix->ssig = base_malloc(sizeof(uint64_t) * (size_t)(g->nnodes + 1));
  if (!ix->use_start || !ix->use_node || !ix->is_output || !ix->op_start ||
      !ix->op_node || !ix->sig || !ix->by_sig || !ix->busy || !ix->pad ||
      !ix->ssig) {
    rewrite_index_free(ix);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  index_uses(g, ix);
  index_ops(g, ix);
  for (int i = 0; i < g->nnodes; i++) {
    ix->sig[i] = rewrite_node_sig(g, &g->nodes[i]);
    ix->ssig[i] = rewrite_node_ssig(g, &g->nodes[i]);
    rewrite_sig_bits(ix->ssig[i], ix->ssigset);
    ix->pad[i] = rewrite_pad_modes(g, &g->nodes[i]);
    rewrite_sig_bits(ix->sig[i], ix->sigset);
  }
  rewrite_edge_bits(g, ix->sig, ix->esigset);
  rewrite_edge_bits(g, ix->ssig, ix->essigset);
  if (index_sigs(g->nnodes, ix)) {
    rewrite_index_free(ix);
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  }
  for (int i = 0; i < g->noutputs; i++)
    ix->is_output[g->outputs[i]] = 1;
  return BASE_OK;
}

/* ---- parameters
 * -------------------------------------------------------------- */

void rewrite_attrs_generic(ir_opcode op, ir_attrs *a) {
  if (a->padmode != IR_PAD_EXPLICIT)
    memset(a->pad, 0, sizeof a->pad);
  const ir_opinfo *r = ir_op(op);
  for (int i = 0; i < r->nparams; i++) /* '~' in ops.def: follow shapes */
    if (r->ptraits[i] & IR_PT_DERIVED)
      ir_param_clear(r->params[i], a);
}

/* What a node signature hashes (zeroed first: no stray bytes). */
typedef struct sig_key {
  ir_attrs a;
  int32_t op, nin, nout;
  uint8_t rank[IR_MAX_IN + IR_MAX_LIST];
} sig_key;

/* Whether op has a padding parameter (IR_PK_PAD: resolved by shape
 * inference; compared by the pads it resolves to). */
static int has_pad(ir_opcode op) {
  const ir_opinfo *r = ir_op(op);
  for (int i = 0; i < r->nparams; i++)
    if (r->pkind[i] == IR_PK_PAD)
      return 1;
  return 0;
}

static uint64_t node_sig(const ir_graph *g, const ir_node *n, int strict) {
  sig_key k;
  memset(&k, 0, sizeof k);
  k.a = n->a;
  rewrite_attrs_generic(n->op, &k.a);
  int nin = n->nin;
  if (has_pad(n->op)) { /* compared by the padding they resolve to */
    k.a.padmode = 0;
    memset(k.a.pad, 0, sizeof k.a.pad);
  }
  const ir_opinfo *r = ir_op(n->op);
  if ((r->traits & IR_PT_INST) && !strict) { /* what instances may differ in */
    for (int i = 0; i < r->nparams; i++)
      if (r->ptraits[i] & IR_PT_INST)
        ir_param_clear(r->params[i], &k.a);
    if (r->inst_in >= 0 && nin == r->inst_in + 1) /* the '!' input only */
      nin = r->inst_in;
  }
  k.op = n->op;
  k.nin = nin;
  k.nout = n->nout;
  for (int i = 0; i < nin; i++)
    k.rank[i] = (uint8_t)g->tensors[n->in[i]].shape.rank;
  for (int o = 0; o < n->nout; o++)
    k.rank[nin + o] = (uint8_t)g->tensors[n->out[o]].shape.rank;
  return XXH3_64bits(&k, offsetof(sig_key, rank) + (size_t)(nin + n->nout));
}

uint64_t rewrite_node_sig(const ir_graph *g, const ir_node *n) {
  return node_sig(g, n, 0);
}

uint64_t rewrite_node_ssig(const ir_graph *g, const ir_node *n) {
  return node_sig(g, n, 1);
}

void rewrite_sig_bits(uint64_t s, uint64_t set[REWRITE_SIG_WORDS]) {
  for (int h = 0; h < 2; h++) { /* two bits of 256 per signature */
    unsigned b = (unsigned)(s >> (16 * h)) & (64 * REWRITE_SIG_WORDS - 1);
    set[b / 64] |= (uint64_t)1 << (b % 64);
  }
}

void rewrite_edge_bits(const ir_graph *g, const uint64_t *sig,
                       uint64_t set[REWRITE_SIG_WORDS]) {
  for (int j = 0; j < g->nnodes; j++)
    for (int k = 0; k < g->nodes[j].nin; k++) {
      int i = g->tensors[g->nodes[j].in[k]].node;
      if (i < 0)
        continue;
      uint64_t h = sig[i] ^ (sig[j] * 0x9e3779b97f4a7c15u);
      h ^= h >> 29;
      h *= 0xbf58476d1ce4e5b9u;
      h ^= h >> 32;
      rewrite_sig_bits(h, set);
    }
}

/* Whether graph node gn of g pads as a node with padding mode `mode` would
 * on gn's own shapes (explicit pads equal to what `same` resolves to
 * compute what `same` computes). */
static int pads_as(ir_padmode mode, const ir_graph *g, const ir_node *gn) {
  if ((ir_padmode)gn->a.padmode == mode)
    return 1;
  if (mode == IR_PAD_EXPLICIT)
    return 0;
  ir_attrs a = gn->a;
  a.padmode = mode;
  memset(a.pad, 0, sizeof a.pad);
  const ir_shape *ins[IR_MAX_IN];
  ir_shape outs[IR_MAX_LIST];
  for (int k = 0; k < gn->nin; k++)
    ins[k] = &g->tensors[gn->in[k]].shape;
  if (ir_infer(gn->op, &a, ins, gn->nin, outs, NULL))
    return 0;
  return memcmp(a.pad, gn->a.pad, sizeof a.pad) == 0;
}

uint8_t rewrite_pad_modes(const ir_graph *g, const ir_node *n) {
  if (!has_pad(n->op))
    return 0;
  uint8_t m = (uint8_t)(1u << n->a.padmode);
  for (int k = IR_PAD_SAME; k <= IR_PAD_VALID; k++)
    if (k != n->a.padmode && pads_as((ir_padmode)k, g, n))
      m |= (uint8_t)(1u << k);
  return m;
}

/* Whether a pattern node's padding (a) admits a graph node's (b, whose
 * rewrite_pad_modes are modes): explicit pads equal, or the mode a has is
 * one b's pads are what it resolves to. */
static int pads_match(const ir_attrs *a, const ir_attrs *b, uint8_t modes) {
  if (a->padmode != b->padmode)
    return (modes & (1u << a->padmode)) != 0;
  return a->padmode != IR_PAD_EXPLICIT ||
         memcmp(a->pad, b->pad, sizeof a->pad) == 0;
}

int rewrite_params_match(const ir_node *p, const ir_node *n, uint8_t modes) {
  static const ir_attrs none; /* IR_ACT_NONE */
  if (p->op != n->op || p->nout != n->nout || p->a.body != n->a.body)
    return 0;
  /* parameter by parameter, as ops.def marks them (the fields an operator
   * has no parameter for are zero, ir.h): '~' follow the shapes, padding
   * compares by what it resolves to, a '!' one may differ through an
   * instance (an activation only where the pattern has none: the instance
   * adds it) */
  const ir_opinfo *r = ir_op(p->op);
  int differ = p->nin != n->nin;
  for (int i = 0; i < r->nparams; i++) {
    ir_param_kind k = r->pkind[i];
    if (r->ptraits[i] & IR_PT_DERIVED)
      continue;
    if (k == IR_PK_PAD) { /* explicit pads differing from a pattern's
                             explicit pads: an instance, where marked '!' */
      if (pads_match(&p->a, &n->a, modes))
        continue;
      if (!(r->ptraits[i] & IR_PT_INST) || p->a.padmode != IR_PAD_EXPLICIT ||
          n->a.padmode != IR_PAD_EXPLICIT)
        return 0;
      differ = 1;
      continue;
    }
    if (ir_field_eq(k, r->poff[i], &p->a, &n->a))
      continue;
    if (!(r->ptraits[i] & IR_PT_INST) ||
        (k == IR_PK_ACT && !ir_field_eq(k, r->poff[i], &p->a, &none)))
      return 0;
    differ = 1;
  }
  if (!differ)
    return REWRITE_EXACT;
  /* an instance: of an operator with '!' marks, the pattern without the
   * inputs an instance may add, the node with no input after those (a
   * residual, src/fuse/lower_epi.c: no rule's instance computes it) */
  if (!(r->traits & IR_PT_INST) ||
      (r->inst_in >= 0 && (p->nin > r->inst_in || n->nin > r->inst_in + 1)) ||
      n->a.act == IR_ACT_CLIP) /* (nor its bounds) */
    return 0;
  return REWRITE_INSTANCE;
}

/* ---- matching
 * ---------------------------------------------------------------- */

typedef struct mstate {
  const rewrite_cpat *cp;
  const ir_graph *pat, *g;
  const rewrite_index *ix;
  rewrite_matches *ms;
  rewrite_match cur;
  uint8_t *used; /* g->nnodes: node already bound (the index's scratch) */
  int ninst;     /* nodes bound as a rule instance (REWRITE_INSTANCE) */
  int exact;     /* no instances: exact matches only */
  base_status st;
  base_diag *d;
} mstate;

static base_status push_match(mstate *s) {
  rewrite_matches *ms = s->ms;
  if (ms->n == ms->cap) {
    int cap = ms->cap ? 2 * ms->cap : 16;
    rewrite_match *m = base_realloc(ms->m, sizeof *m * (size_t)cap);
    if (!m)
      return BASE_ERR_NOMEM;
    ms->m = m;
    ms->cap = cap;
  }
  ms->m[ms->n++] = s->cur;
  return BASE_OK;
}

/* Whether graph tensor t holds known values all equal to v (a pattern
 * input's value constraint: `input c: [] value=0.5`); values compare by
 * their bits (-0 is not 0, NaN never binds), so the rule's proof, which
 * reads the constant by its bits, speaks of these very values. */
static int holds_value(const ir_tensor *t, float v) {
  if (t->kind == IR_T_VALUE || !t->data || v != v)
    return 0;
  int64_t n = ir_shape_numel(&t->shape);
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&t->data[i], &v, sizeof v))
      return 0;
  return 1;
}

/* Binds pattern tensor p to graph tensor t; records it in undo. 0: clash. */
static int bind(mstate *s, int p, int t, int *undo, int *nundo) {
  if (s->cur.tensor[p] >= 0)
    return s->cur.tensor[p] == t;
  if (s->pat->tensors[p].shape.rank != s->g->tensors[t].shape.rank)
    return 0;
  if (s->pat->tensors[p].has_value &&
      !holds_value(&s->g->tensors[t], s->pat->tensors[p].value))
    return 0;
  s->cur.tensor[p] = t;
  undo[(*nundo)++] = p;
  return 1;
}

/* Final checks: intermediates stay inside, inputs are not computed inside. */
static int match_valid(const mstate *s) {
  const ir_graph *pat = s->pat, *g = s->g;
  for (int p = 0; p < pat->ntensors; p++) {
    int t = s->cur.tensor[p];
    if (t < 0)
      continue;
    const ir_tensor *pt = &pat->tensors[p], *gt = &g->tensors[t];
    if (pt->kind != IR_T_VALUE) {
      if (gt->kind == IR_T_VALUE && s->used[gt->node])
        return 0; /* an input of the pattern computed by the match */
      continue;
    }
    if (s->cp->out[p])
      continue;
    int uses = s->ix->use_start[t + 1] - s->ix->use_start[t];
    if (s->ix->is_output[t] || uses != s->cp->uses[p])
      return 0;
  }
  return 1;
}

static void match_from(mstate *s, int k);

/* Whether graph node gn reads and writes tensors of the types pattern
 * node pn does, slot by slot. */
static int same_dtypes(const ir_graph *pat, const ir_node *pn,
                       const ir_graph *g, const ir_node *gn) {
  for (int k = 0; k < pn->nin && k < gn->nin; k++)
    if (pat->tensors[pn->in[k]].dtype != g->tensors[gn->in[k]].dtype)
      return 0;
  for (int k = 0; k < pn->nout && k < gn->nout; k++)
    if (pat->tensors[pn->out[k]].dtype != g->tensors[gn->out[k]].dtype)
      return 0;
  return 1;
}

/* Dimension j from the last of s; 1 past its rank (numpy's rule). */
static int64_t dim_from_last(const ir_shape *s, int j) {
  return j < s->rank ? s->dim[s->rank - 1 - j] : 1;
}

/* Axis j (from the last) of operands a and b of an element-wise operator:
 * 0 equal, 1 a broadcast (a 1, b not), 2 b broadcast. */
static int bcast_rel(const ir_shape *a, const ir_shape *b, int j) {
  int64_t x = dim_from_last(a, j), y = dim_from_last(b, j);
  return x == y ? 0 : x == 1 ? 1 : 2;
}

int rewrite_bcast_alike(ir_opcode op, const ir_shape *const *p,
                        const ir_shape *const *g, int n) {
  if (op != IR_OP_EWADD && op != IR_OP_EWMUL && op != IR_OP_EWSUB &&
      op != IR_OP_EWDIV && op != IR_OP_EQUAL && op != IR_OP_WHERE)
    return 1;
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++) {
      int r = p[a]->rank > p[b]->rank ? p[a]->rank : p[b]->rank;
      for (int j = 0; j < r; j++) {
        int rg = bcast_rel(g[a], g[b], j);
        /* an axis of size 1 in both graph operands broadcasts nothing */
        if (rg != bcast_rel(p[a], p[b], j) &&
            !(rg == 0 && dim_from_last(g[a], j) == 1))
          return 0;
      }
    }
  return 1;
}

/* Whether graph node gn's operands broadcast as pattern node pn's do
 * (rewrite_bcast_alike). */
static int bcast_alike(const ir_graph *pat, const ir_node *pn,
                       const ir_graph *g, const ir_node *gn) {
  const ir_shape *ps[IR_MAX_IN], *gs[IR_MAX_IN];
  int n = pn->nin < gn->nin ? pn->nin : gn->nin;
  for (int k = 0; k < n; k++)
    ps[k] = &pat->tensors[pn->in[k]].shape,
    gs[k] = &g->tensors[gn->in[k]].shape;
  return rewrite_bcast_alike(pn->op, ps, gs, n);
}

/* Tries pattern node p on graph node i, then the rest. */
static void try_node(mstate *s, int k, int p, int i) {
  const ir_node *pn = &s->pat->nodes[p], *gn = &s->g->nodes[i];
  if (s->used[i] || s->cp->sig[p] != s->ix->sig[i] ||
      (s->exact && s->cp->ssig[p] != s->ix->ssig[i]))
    return;
  int pm = rewrite_params_match(pn, gn, s->ix->pad[i]);
  if (!pm || (pm == REWRITE_INSTANCE && s->exact))
    return;
  /* types must be the pattern's: a node reading or writing int64 / bool
   * (or half) values matches only where the rule states those types (the
   * guard's equal and not, whose bool values its proof speaks of; ir.h
   * ir_dtype) */
  if (!same_dtypes(s->pat, pn, s->g, gn))
    return;
  /* an element-wise operator whose operands broadcast otherwise than the
   * pattern's (equal shapes there, a [1,C,1,1] operand here): the rule
   * was proven for the pattern's class only (a convolution of a sum is the
   * sum of the convolutions for equal shapes, not for a broadcast one), so
   * the match is an instance the verifier proves at the graph's shapes
   * (docs/verify.md, "Broadcasting") */
  if (pm == REWRITE_EXACT && !bcast_alike(s->pat, pn, s->g, gn)) {
    if (s->exact)
      return;
    pm = REWRITE_INSTANCE;
  }
  int undo[2 * IR_MAX_IN + 2 * IR_MAX_LIST], nundo = 0, ok = 1;
  for (int o = 0; ok && o < pn->nout; o++)
    ok = bind(s, pn->out[o], gn->out[o], undo, &nundo);
  for (int j = 0; ok && j < pn->nin; j++)
    ok = bind(s, pn->in[j], gn->in[j], undo, &nundo);
  if (ok) {
    s->used[i] = 1;
    s->cur.node[p] = i;
    s->ninst += pm == REWRITE_INSTANCE;
    match_from(s, k - 1);
    s->ninst -= pm == REWRITE_INSTANCE;
    s->used[i] = 0;
    s->cur.node[p] = -1;
  }
  while (nundo)
    s->cur.tensor[undo[--nundo]] = -1;
}

/* Places pattern nodes k, k-1, ..., 0. */
static void match_from(mstate *s, int k) {
  if (s->st)
    return;
  if (k < 0) {
    if (!match_valid(s))
      return;
    if (!s->ninst) {
      s->st = push_match(s);
      return;
    }
    rewrite_match inst = s->cur;
    int ok = 0;
    s->st =
        rewrite_inst_resolve(s->cp, s->g, &s->cur, s->used, &inst, &ok, s->d);
    if (!s->st && ok) {
      rewrite_match keep = s->cur;
      s->cur = inst;
      s->st = push_match(s);
      s->cur = keep;
    }
    return;
  }
  const ir_node *pn = &s->pat->nodes[k];
  for (int o = 0; o < pn->nout; o++) {
    int t = s->cur.tensor[pn->out[o]];
    if (t >= 0) { /* bound by a consumer: only its producer can match */
      const ir_tensor *gt = &s->g->tensors[t];
      if (gt->kind == IR_T_VALUE && gt->slot == o)
        try_node(s, k, k, gt->node);
      return;
    }
  }
  for (int j = 0; j < pn->nin; j++) {
    int t = s->cur.tensor[pn->in[j]];
    if (t < 0)
      continue;
    const rewrite_index *ix = s->ix;
    for (int u = ix->use_start[t]; u < ix->use_start[t + 1]; u++)
      if (u == ix->use_start[t] || ix->use_node[u] != ix->use_node[u - 1])
        try_node(s, k, k, ix->use_node[u]);
    return;
  }
  /* the nodes with this node's signature, in graph order */
  int n = s->g->nnodes;
  for (int u = sig_lower(s->ix, n, s->cp->sig[k]);
       u < n && s->ix->sig[s->ix->by_sig[u]] == s->cp->sig[k]; u++)
    try_node(s, k, k, s->ix->by_sig[u]);
}

base_status rewrite_pattern_ok(const ir_graph *pat, base_diag *d) {
  if (pat->nnodes < 1 || pat->nnodes > REWRITE_MAX_PNODES ||
      pat->ntensors > REWRITE_MAX_PTENSORS)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "pattern has %d operators and %d tensors (1..%d and "
                         "at most %d)",
                         pat->nnodes, pat->ntensors, REWRITE_MAX_PNODES,
                         REWRITE_MAX_PTENSORS);
  return BASE_OK;
}

base_status rewrite_cpat_init(rewrite_cpat *cp, const ir_graph *pat,
                              base_diag *d) {
  base_status st = rewrite_pattern_ok(pat, d);
  if (st)
    return st;
  memset(cp, 0, sizeof *cp);
  cp->g = pat;
  int count[IR_NOPS] = {0};
  for (int i = 0; i < pat->nnodes; i++) {
    const ir_node *n = &pat->nodes[i];
    cp->sig[i] = rewrite_node_sig(pat, n);
    rewrite_sig_bits(cp->sig[i], cp->sigset);
    cp->ssig[i] = rewrite_node_ssig(pat, n);
    rewrite_sig_bits(cp->ssig[i], cp->ssigset);
    cp->ops |= (uint64_t)1 << n->op;
    if (count[n->op]++ == 0)
      cp->need_op[cp->nneed++] = (uint8_t)n->op;
    for (int j = 0; j < n->nin; j++)
      cp->uses[n->in[j]]++;
  }
  for (int k = 0; k < cp->nneed; k++)
    cp->need_count[k] = (uint8_t)count[cp->need_op[k]];
  rewrite_edge_bits(pat, cp->sig, cp->esigset);
  rewrite_edge_bits(pat, cp->ssig, cp->essigset);
  for (int i = 0; i < pat->noutputs; i++)
    cp->out[pat->outputs[i]] = 1;
  return BASE_OK;
}

int rewrite_cpat_may_match(const rewrite_cpat *cp, const rewrite_index *ix) {
  if (cp->off || !cp->g) /* demoted, or a slot without a direction */
    return 0;
  int exact = !cp->ic || rewrite_icache_hopeless(cp->ic, cp->dir);
  for (int w = 0; w < REWRITE_SIG_WORDS; w++)
    if (exact ? (cp->ssigset[w] & ~ix->ssigset[w]) |
                    (cp->essigset[w] & ~ix->essigset[w])
              : (cp->sigset[w] & ~ix->sigset[w]) |
                    (cp->esigset[w] & ~ix->esigset[w]))
      return 0;
  for (int k = 0; k < cp->nneed; k++) {
    int o = cp->need_op[k];
    if (cp->need_count[k] > ix->op_start[o + 1] - ix->op_start[o])
      return 0;
  }
  return 1;
}

base_status rewrite_match_cpat(const rewrite_cpat *cp, const ir_graph *g,
                               const rewrite_index *ix, rewrite_matches *ms,
                               base_diag *d) {
  if (cp->off || !cp->g)
    return BASE_OK;
  mstate s = {.cp = cp,
              .pat = cp->g,
              .g = g,
              .ix = ix,
              .ms = ms,
              .used = ix->busy,
              .exact = !cp->ic || rewrite_icache_hopeless(cp->ic, cp->dir),
              .d = d};
  memset(&s.cur, 0, sizeof s.cur);
  memset(s.cur.node, -1, sizeof s.cur.node);
  memset(s.cur.tensor, -1, sizeof s.cur.tensor);
  match_from(&s, cp->g->nnodes - 1);
  if (s.st == BASE_ERR_NOMEM)
    return base_diag_set(d, s.st, 0, 0, "out of memory");
  return s.st;
}

base_status rewrite_match_indexed(const ir_graph *pat, const ir_graph *g,
                                  const rewrite_index *ix, rewrite_matches *ms,
                                  base_diag *d) {
  rewrite_cpat cp;
  base_status st = rewrite_cpat_init(&cp, pat, d);
  return st ? st : rewrite_match_cpat(&cp, g, ix, ms, d);
}

base_status rewrite_match_graph(const ir_graph *pat, const ir_graph *g,
                                rewrite_matches *ms, base_diag *d) {
  rewrite_index ix;
  base_status st = rewrite_index_build(g, &ix, d);
  if (st)
    return st;
  st = rewrite_match_indexed(pat, g, &ix, ms, d);
  rewrite_index_free(&ix);
  return st;
}

void rewrite_matches_free(rewrite_matches *ms) {
  free(ms->m);
  memset(ms, 0, sizeof *ms);
}
