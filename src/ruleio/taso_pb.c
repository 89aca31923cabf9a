/* taso_pb.c: TASO's binary rule collection (GraphSubst.RuleCollection,
 * src/ruleio/taso_subst.proto): import into ir_rules and export from them.
 *
 * Import: each operator becomes a term (a split, two: one per output);
 * abstract inputs (opId -N) become input_N. TASO's .pb carries no shapes,
 * so inputs first get TASO's text-rule shapes; when the rule does not
 * type-check with them, the importer tries changing one input, then two, to
 * each of TASO's shapes (fewest changes first) and keeps the first
 * assignment that builds.
 *
 * Export: one operator per node, in topological order; inputs and weights
 * become abstract inputs (input_N keeps -N; other names get fresh numbers
 * above 20). The parameter encodings not fixed by TASO's shipped file
 * (transpose, enlarge, constants) are this project's and documented in
 * docs/interop.md.
 */
#include <stdlib.h>
#include <string.h>

#include "ruleio_int.h"
#include "taso_subst.pb-c.h"

/* TASO's operator enum (OpType) and parameter enum (PMParameter). */
enum {
  TO_CONV2D = 3,
  TO_POOL2D_MAX = 6,
  TO_POOL2D_AVG = 7,
  TO_RELU = 8,
  TO_SIGMOID = 9,
  TO_TANH = 10,
  TO_CONCAT = 12,
  TO_SPLIT = 13,
  TO_TRANSPOSE = 15,
  TO_EW_ADD = 16,
  TO_EW_MUL = 17,
  TO_MATMUL = 18,
  TO_MUL = 19,
  TO_ENLARGE = 20,
  TO_CONSTANT_IMM = 22,
  TO_CONSTANT_ICONV = 23,
  TO_CONSTANT_ONE = 24,
  TO_CONSTANT_POOL = 25,
  TO_NONE = -1 /* ew.def's taso column: no TASO equivalent */
};
enum {
  PM_NUM_INPUTS = 1,
  PM_NUM_OUTPUTS = 2,
  PM_KERNEL_H = 4,
  PM_KERNEL_W = 5,
  PM_STRIDE_H = 6,
  PM_STRIDE_W = 7,
  PM_PAD = 8,
  PM_ACTI = 9,
  PM_NUMDIM = 10,
  PM_AXIS = 11,
  PM_PERM = 12
};

static const char *taso_op_names[] = {
    "INPUT",        "WEIGHT",       "ANY",          "CONV2D",
    "DROPOUT",      "LINEAR",       "POOL2D_MAX",   "POOL2D_AVG",
    "RELU",         "SIGMOID",      "TANH",         "BATCHNORM",
    "CONCAT",       "SPLIT",        "RESHAPE",      "TRANSPOSE",
    "EW_ADD",       "EW_MUL",       "MATMUL",       "MUL",
    "ENLARGE",      "MERGE_GCONV",  "CONSTANT_IMM", "CONSTANT_ICONV",
    "CONSTANT_ONE", "CONSTANT_POOL"};

/* ---- import -------------------------------------------------------------- */

/* Value of parameter key in o, or dflt. */
static int para(const GraphSubst__Operator *o, int key, int dflt) {
  for (size_t i = 0; i < o->n_para; i++)
    if (o->para[i]->key == key)
      return o->para[i]->value;
  return dflt;
}

typedef struct pimport {
  ruleio_terms ts;
  int *term; /* per operator of the side: term of output 0 (split: 0, 1) */
  int *term1;
  char why[160];
} pimport;

/* Term for an operator's input reference; -1 with why set. */
static int ref_term(pimport *I, const GraphSubst__Tensor *t, int nops) {
  if (t->opid < 0) {
    if (-t->opid > RULEIO_MAX_INPUT) {
      snprintf(I->why, sizeof I->why, "input id %d out of range", t->opid);
      return -1;
    }
    ruleio_term x;
    memset(&x, 0, sizeof x);
    x.k = RT_INPUT;
    x.np = 1;
    x.p[0] = -t->opid;
    return ruleio_terms_intern(&I->ts, &x);
  }
  if (t->opid >= nops || t->tsid < 0 || t->tsid > 1 ||
      (t->tsid == 1 && I->term1[t->opid] < 0)) {
    snprintf(I->why, sizeof I->why, "bad tensor reference");
    return -1;
  }
  return t->tsid ? I->term1[t->opid] : I->term[t->opid];
}

/* Fills x's kind and parameters from o; 0, or -1 with why set. */
static int op_kind(pimport *I, const GraphSubst__Operator *o, ruleio_term *x) {
  int kh = para(o, PM_KERNEL_H, 0), kw = para(o, PM_KERNEL_W, 0);
  int sh = para(o, PM_STRIDE_H, 1), sw = para(o, PM_STRIDE_W, 1);
  int pad = para(o, PM_PAD, 0), act = para(o, PM_ACTI, 0);
  int p[RULEIO_MAX_TP] = {0}, np = 0, nin = 1;
  switch (o->type) {
  case TO_CONV2D:
    x->k = RT_CONV, nin = 2, np = 4;
    p[0] = sh, p[1] = sw, p[2] = pad, p[3] = act;
    break;
  case TO_POOL2D_MAX:
  case TO_POOL2D_AVG:
    if (act) {
      snprintf(I->why, sizeof I->why, "pooling with an activation");
      return -1;
    }
    x->k = o->type == TO_POOL2D_MAX ? RT_POOLMAX : RT_POOLAVG, np = 5;
    p[0] = kh, p[1] = kw, p[2] = sh, p[3] = sw, p[4] = pad;
    break;
  case TO_RELU:
  case TO_SIGMOID:
  case TO_TANH:
    x->k = o->type == TO_RELU      ? RT_RELU
           : o->type == TO_SIGMOID ? RT_SIGMOID
                                   : RT_TANH;
    break;
  case TO_CONCAT:
    x->k = RT_CONCAT, np = 1, nin = (int)o->n_input;
    p[0] = para(o, PM_AXIS, 0);
    break;
  case TO_SPLIT:
    if (para(o, PM_NUM_OUTPUTS, 2) != 2) {
      snprintf(I->why, sizeof I->why, "split into other than 2 parts");
      return -1;
    }
    x->k = RT_SPLIT, np = 3;
    p[0] = para(o, PM_AXIS, 0);
    if (o->n_size == 2) /* extension: the parts' sizes */
      p[2] = o->size[0];
    break;
  case TO_TRANSPOSE: {
    int n = para(o, PM_NUMDIM, 2), code = para(o, PM_PERM, 1);
    if (n < 1 || n > IR_MAX_RANK) {
      snprintf(I->why, sizeof I->why, "transpose of rank %d", n);
      return -1;
    }
    x->k = RT_TRANSPOSE, np = 1 + n;
    p[0] = n;
    for (int i = n; i >= 1; i--, code /= n)
      p[i] = code % n;
    break;
  }
  case TO_EW_ADD:
  case TO_EW_MUL:
  case TO_MATMUL:
  case TO_MUL:
    nin = 2;
    x->k = o->type == TO_EW_ADD   ? RT_EWADD
           : o->type == TO_EW_MUL ? RT_EWMUL
           : o->type == TO_MUL    ? RT_SMUL
                                  : RT_MATMUL;
    if (o->type == TO_MATMUL)
      np = 1, p[0] = act;
    break;
  case TO_ENLARGE: x->k = RT_ENLARGE, np = 2, p[0] = kh, p[1] = kw; break;
  case TO_CONSTANT_IMM:
    x->k = RT_IMATMUL, nin = 0;
    if (o->n_size == 3 && o->size[0] == 2) /* extension: its shape */
      np = 1, p[0] = o->size[1];
    break;
  case TO_CONSTANT_ICONV:
  case TO_CONSTANT_POOL:
    x->k = o->type == TO_CONSTANT_ICONV ? RT_ICONV : RT_CPOOL, nin = 0, np = 2;
    p[0] = kh, p[1] = kw;
    if (o->n_size == 5 && o->size[0] == 4) { /* extension: its shape */
      np = 7;
      for (int i = 0; i < 5; i++)
        p[2 + i] = o->size[i];
    }
    break;
  case TO_CONSTANT_ONE:
    if (o->n_size < 1 || o->size[0] < 0 || o->size[0] > IR_MAX_RANK ||
        o->n_size != (size_t)o->size[0] + 1) {
      snprintf(I->why, sizeof I->why,
               "cannot infer the shape of CONSTANT_ONE (no shape carried)");
      return -1;
    }
    x->k = RT_CONES, nin = 0, np = (int)o->n_size;
    for (size_t i = 0; i < o->n_size; i++)
      p[i] = o->size[i];
    break;
  default:
    if (o->type >= 0 && o->type < (int)(sizeof taso_op_names / sizeof(char *)))
      snprintf(I->why, sizeof I->why, "TASO operator %s",
               taso_op_names[o->type]);
    else
      snprintf(I->why, sizeof I->why, "TASO operator type %d", o->type);
    return -1;
  }
  if ((int)o->n_input != nin || nin > RULEIO_MAX_TIN) {
    snprintf(I->why, sizeof I->why, "%s with %d inputs", taso_op_names[o->type],
             (int)o->n_input);
    return -1;
  }
  x->np = np;
  x->nin = nin;
  memcpy(x->p, p, sizeof p);
  return 0;
}

/* Terms of one side's operators, in order. */
static int side_terms(pimport *I, GraphSubst__Operator **ops, size_t n) {
  for (size_t j = 0; j < n; j++) {
    ruleio_term x;
    memset(&x, 0, sizeof x);
    I->term1[j] = -1;
    if (op_kind(I, ops[j], &x) < 0)
      return -1;
    for (int i = 0; i < x.nin; i++)
      if ((x.in[i] = ref_term(I, ops[j]->input[i], (int)j)) < 0)
        return -1;
    if ((I->term[j] = ruleio_terms_intern(&I->ts, &x)) < 0)
      return -1;
    if (x.k == RT_SPLIT) {
      x.p[1] = 1;
      if ((I->term1[j] = ruleio_terms_intern(&I->ts, &x)) < 0)
        return -1;
    }
  }
  return 0;
}

/* The term of output (op, ts) of a side whose terms are in I. */
static int out_term(pimport *I, int op, int ts, size_t nops) {
  GraphSubst__Tensor t = GRAPH_SUBST__TENSOR__INIT;
  t.opid = op;
  t.tsid = ts;
  if (op < 0 || (size_t)op >= nops) {
    snprintf(I->why, sizeof I->why, "bad output reference");
    return -1;
  }
  return ref_term(I, &t, (int)nops);
}

/* Roots of both sides: src[i], dst[i] for each mapped output. */
static int rule_terms(pimport *I, const GraphSubst__Rule *r, int *src,
                      int *dst) {
  size_t n = r->n_srcop > r->n_dstop ? r->n_srcop : r->n_dstop;
  int *a = base_malloc(2 * (n + 1) * sizeof *a);
  if (!a)
    return -1;
  I->term = a;
  I->term1 = a + n + 1;
  int ok = side_terms(I, r->srcop, r->n_srcop) == 0;
  for (size_t i = 0; ok && i < r->n_mappedoutput; i++) {
    const GraphSubst__MapOutput *m = r->mappedoutput[i];
    ok = (src[i] = out_term(I, m->srcopid, m->srctsid, r->n_srcop)) >= 0;
  }
  ok = ok && side_terms(I, r->dstop, r->n_dstop) == 0;
  for (size_t i = 0; ok && i < r->n_mappedoutput; i++) {
    const GraphSubst__MapOutput *m = r->mappedoutput[i];
    ok = (dst[i] = out_term(I, m->dstopid, m->dsttsid, r->n_dstop)) >= 0;
  }
  free(a);
  return ok ? 0 : -1;
}

/* TASO's distinct input shapes, the candidates of the shape search. */
static int candidate_shapes(ir_shape *c) {
  ruleio_inshapes d;
  ruleio_taso_inshapes(&d);
  int n = 0;
  for (int k = 1; k <= 20; k++) {
    int dup = 0;
    for (int j = 0; j < n; j++)
      dup |= ir_shape_eq(&c[j], &d.s[k]);
    if (!dup)
      c[n++] = d.s[k];
  }
  return n;
}

typedef struct search {
  const ruleio_terms *ts;
  const int *src, *dst;
  int n;
  const char *id, *note;
  ir_ruleset *rs;
  int used[RULEIO_MAX_INPUT];
  int nused;
  ir_shape cand[16];
  int ncand;
} search;

static int try_shapes(search *S, const ruleio_inshapes *sh) {
  char why[160];
  return ruleio_build_rule(S->ts, S->src, S->dst, S->n, sh, S->id, S->note,
                           S->rs, why, sizeof why) == BASE_OK;
}

/* Tries every assignment changing inputs i < j (j = -1: only i). */
static int try_change(search *S, int i, int j) {
  ruleio_inshapes sh;
  ruleio_taso_inshapes(&sh);
  for (int a = 0; a < S->ncand; a++)
    for (int b = 0; b < (j < 0 ? 1 : S->ncand); b++) {
      sh.s[S->used[i]] = S->cand[a];
      if (j >= 0)
        sh.s[S->used[j]] = S->cand[b];
      if (try_shapes(S, &sh))
        return 1;
    }
  return 0;
}

static int shape_search(search *S) {
  S->ncand = candidate_shapes(S->cand);
  for (int i = 0; i < S->nused; i++)
    if (try_change(S, i, -1))
      return 1;
  for (int i = 0; i < S->nused; i++)
    for (int j = i + 1; j < S->nused; j++)
      if (try_change(S, i, j))
        return 1;
  return 0;
}

/* Marks the inputs reachable from term t in used[] (visited[]: terms
 * already seen; the terms form a DAG). */
static void mark_used(const ruleio_terms *ts, int t, char *used,
                      char *visited) {
  const ruleio_term *x = &ts->t[t];
  if (visited[t])
    return;
  visited[t] = 1;
  if (x->k == RT_INPUT)
    used[x->p[0]] = 1;
  for (int i = 0; i < x->nin; i++)
    mark_used(ts, x->in[i], used, visited);
}

/* The inputs' shapes, names and kinds the extension carries (field 16 of
 * Rule) over TASO's shapes in sh; 0, or -1 with why set. */
static int carried_inputs(const GraphSubst__Rule *r, ruleio_inshapes *sh,
                          char *why, size_t wn) {
  for (size_t i = 0; i < r->n_input; i++) {
    const GraphSubst__Input *in = r->input[i];
    int k = -in->opid;
    if (k < 1 || k > RULEIO_MAX_INPUT || in->n_dim > IR_MAX_RANK) {
      snprintf(why, wn, "carried input %d out of range", in->opid);
      return -1;
    }
    int64_t dims[IR_MAX_RANK];
    for (size_t j = 0; j < in->n_dim; j++)
      dims[j] = in->dim[j];
    sh->s[k] = ir_shape_make((int)in->n_dim, dims);
    sh->name[k] = in->name && in->name[0] ? in->name : NULL;
    sh->weight[k] = in->has_weight && in->weight;
  }
  return 0;
}

/* Imports rule number k (1-based). */
static base_status import_rule(const GraphSubst__Rule *r, int k,
                               const char *file, ir_ruleset *out,
                               ruleio_stats *st) {
  pimport I;
  memset(&I, 0, sizeof I);
  int n = (int)r->n_mappedoutput;
  int *roots = base_malloc(2 * ((size_t)n + 1) * sizeof *roots);
  if (!roots)
    return BASE_ERR_NOMEM;
  base_status s = BASE_OK;
  if (!n)
    snprintf(I.why, sizeof I.why, "no mapped output");
  if (!n || rule_terms(&I, r, roots, roots + n) < 0) {
    s = ruleio_stats_skip(st, I.why[0] ? I.why : "out of memory", k);
    goto done;
  }
  const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
  char id[48], note[300];
  snprintf(id, sizeof id, "taso-pb-%d", k);
  snprintf(note, sizeof note, "imported from %s rule %d", base, k);
  ruleio_inshapes sh;
  ruleio_taso_inshapes(&sh);
  if (carried_inputs(r, &sh, I.why, sizeof I.why) < 0) {
    s = ruleio_stats_skip(st, I.why, k);
    goto done;
  }
  search S = {&I.ts, roots, roots + n, n, id, note, out, {0}, 0, {{0}}, 0};
  char seen[RULEIO_MAX_INPUT + 1] = {0};
  char *visited = base_calloc((size_t)I.ts.n + 1, 1);
  if (!visited) {
    s = BASE_ERR_NOMEM;
    goto done;
  }
  for (int i = 0; i < 2 * n; i++)
    mark_used(&I.ts, roots[i], seen, visited);
  free(visited);
  for (int i = 1; i <= RULEIO_MAX_INPUT; i++)
    if (seen[i])
      S.used[S.nused++] = i;
  char why[160];
  s = ruleio_build_rule(&I.ts, roots, roots + n, n, &sh, id, note, out, why,
                        sizeof why);
  if (s == BASE_ERR_NOMEM)
    goto done;
  if (s != BASE_OK && (r->n_input || !shape_search(&S))) {
    s = ruleio_stats_skip(st, why, k);
    goto done;
  }
  s = BASE_OK;
  if (st)
    st->done++;
done:
  free(roots);
  ruleio_terms_free(&I.ts);
  return s;
}

base_status ruleio_import_taso_pb_mem(const uint8_t *data, size_t len,
                                      const char *file, ir_ruleset *out,
                                      ruleio_stats *st, base_diag *d) {
  ir_ruleset_init(out);
  int oom = 0; /* protobuf-c allocates through base_malloc (base.h) */
  ProtobufCAllocator pa = {base_hook_alloc, base_hook_free, &oom};
  GraphSubst__RuleCollection *c =
      graph_subst__rule_collection__unpack(&pa, len, data);
  if (!c && oom)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!c) {
    base_diag_set(d, BASE_ERR_SYNTAX, 0, 0,
                  "not a valid GraphSubst.RuleCollection (truncated or "
                  "malformed protobuf, %zu bytes)",
                  len);
    if (d)
      snprintf(d->file, sizeof d->file, "%s", file);
    return BASE_ERR_SYNTAX;
  }
  base_status s = BASE_OK;
  for (size_t i = 0; i < c->n_rule && s == BASE_OK; i++)
    s = import_rule(c->rule[i], (int)i + 1, file, out, st);
  graph_subst__rule_collection__free_unpacked(c, &pa);
  if (s != BASE_OK) {
    ir_ruleset_free(out);
    return base_diag_set(d, s, 0, 0, "out of memory");
  }
  return BASE_OK;
}

base_status ruleio_import_taso_pb(const char *path, ir_ruleset *out,
                                  ruleio_stats *st, base_diag *d) {
  size_t len;
  ir_ruleset_init(out);
  char *data = base_read_file(path, &len, d);
  if (!data)
    return d ? d->code : BASE_ERR_IO;
  base_status s =
      ruleio_import_taso_pb_mem((const uint8_t *)data, len, path, out, st, d);
  free(data);
  return s;
}

/* ---- export -------------------------------------------------------------- */

/* Everything one exported rule allocates, freed at once. */
typedef struct pool {
  void **p;
  int n, cap;
  int oom;
} pool;

static void *palloc(pool *P, size_t n) {
  if (P->oom)
    return NULL;
  if (P->n == P->cap) {
    int cap = P->cap ? 2 * P->cap : 64;
    void **np = base_realloc(P->p, (size_t)cap * sizeof *np);
    if (!np) {
      P->oom = 1;
      return NULL;
    }
    P->p = np;
    P->cap = cap;
  }
  void *x = base_calloc(1, n ? n : 1);
  if (!x)
    P->oom = 1;
  else
    P->p[P->n++] = x;
  return x;
}

static void pool_free(pool *P) {
  for (int i = 0; i < P->n; i++)
    free(P->p[i]);
  free(P->p);
  memset(P, 0, sizeof *P);
}

/* Abstract input ids of a rule's inputs and weights, by name: -1, -2, ...
 * in src's declaration order. */
typedef struct idmap {
  const char *name[IR_MAX_IN * 4];
  int id[IR_MAX_IN * 4];
  int n, next;
} idmap;

static int input_id(idmap *M, const char *name) {
  for (int i = 0; i < M->n; i++)
    if (!strcmp(M->name[i], name))
      return M->id[i];
  if (M->n == (int)(sizeof M->id / sizeof *M->id))
    return 0;
  M->name[M->n] = name;
  M->id[M->n] = -(M->next++);
  return M->id[M->n++];
}

/* Extension field `size` of o: n values. */
static void add_sizes(pool *P, GraphSubst__Operator *o, const int64_t *v, int n,
                      int rank_first) {
  o->size = palloc(P, (size_t)(n + 1) * sizeof *o->size);
  if (!o->size)
    return;
  if (rank_first)
    o->size[o->n_size++] = n;
  for (int i = 0; i < n; i++)
    o->size[o->n_size++] = (int32_t)v[i];
}

static void add_para(pool *P, GraphSubst__Operator *o, int key, int value) {
  GraphSubst__Parameter *p = palloc(P, sizeof *p);
  if (!p)
    return;
  graph_subst__parameter__init(p);
  p->key = key;
  p->value = value;
  o->para[o->n_para++] = p;
}

/* TASO's type of an ew.def operator (its taso column), or TO_NONE. */
static int taso_ew_type(ir_opcode op) {
  switch (op) {
#define EW(ID, name, c, cuda, onnx, taso, ...)                                 \
  case IR_OP_##ID:                                                             \
    return TO_##taso;
#include "../ir/ew.def"
#undef EW
  default: return TO_NONE;
  }
}

static const int taso_acts[] = {0, 2, 1, 3}; /* ours (none relu sigmoid
                                                tanh) -> TASO's codes */

/* A pooling's parameters; returns its TASO type t. */
static int pool_paras(pool *P, GraphSubst__Operator *o, const ir_attrs *a,
                      int pads, int t) {
  add_para(P, o, PM_KERNEL_H, a->kernel[0]);
  add_para(P, o, PM_KERNEL_W, a->kernel[1]);
  add_para(P, o, PM_STRIDE_H, a->stride[0]);
  add_para(P, o, PM_STRIDE_W, a->stride[1]);
  add_para(P, o, PM_PAD, pads);
  add_para(P, o, PM_ACTI, 0);
  return t;
}

/* A kernel-shaped constant's (iconv, cpool) parameters; returns t. */
static int const_paras(pool *P, GraphSubst__Operator *o, const ir_attrs *a,
                       int t) {
  add_para(P, o, PM_KERNEL_H, (int)a->list[2]);
  add_para(P, o, PM_KERNEL_W, (int)a->list[3]);
  add_sizes(P, o, a->list, a->nlist, 1);
  return t;
}

/* TASO's type and parameters of node n; why set when there is none. */
static int node_type(const ir_graph *g, const ir_node *n, pool *P,
                     GraphSubst__Operator *o, char *why, size_t wn) {
  const ir_attrs *a = &n->a;
  int pads = a->padmode == IR_PAD_SAME    ? 0
             : a->padmode == IR_PAD_VALID ? 1
                                          : -1;
  int act = a->act <= IR_ACT_TANH ? taso_acts[a->act] : -1;
  const char *op = ir_op(n->op)->name;
  int t = -1;
  switch (n->op) {
  case IR_OP_CONV2D: {
    const ir_shape *w = &g->tensors[n->in[1]].shape;
    if (n->nin != 2 || a->dilation[0] != 1 || a->dilation[1] != 1 || pads < 0 ||
        act < 0)
      break;
    t = TO_CONV2D;
    add_para(P, o, PM_KERNEL_H, (int)w->dim[2]);
    add_para(P, o, PM_KERNEL_W, (int)w->dim[3]);
    add_para(P, o, PM_STRIDE_H, a->stride[0]);
    add_para(P, o, PM_STRIDE_W, a->stride[1]);
    add_para(P, o, PM_PAD, pads);
    add_para(P, o, PM_ACTI, act);
    break;
  }
  case IR_OP_AVGPOOL:
    if (pads >= 0 && a->count_include_pad)
      t = pool_paras(P, o, a, pads, TO_POOL2D_AVG);
    break;
  case IR_OP_MAXPOOL:
    if (pads >= 0)
      t = pool_paras(P, o, a, pads, TO_POOL2D_MAX);
    break;
  case IR_OP_MATMUL:
    if (n->nin != 2 || act < 0 || g->tensors[n->in[0]].shape.rank != 2)
      break;
    t = TO_MATMUL;
    add_para(P, o, PM_ACTI, act);
    break;
  case IR_OP_CONCAT:
    t = TO_CONCAT;
    add_para(P, o, PM_NUM_INPUTS, n->nin);
    add_para(P, o, PM_AXIS, a->axis);
    add_para(P, o, PM_NUMDIM, g->tensors[n->out[0]].shape.rank);
    break;
  case IR_OP_SPLIT:
    if (n->nout != 2)
      break;
    t = TO_SPLIT;
    add_para(P, o, PM_NUM_OUTPUTS, n->nout);
    add_para(P, o, PM_AXIS, a->axis);
    add_sizes(P, o, a->list, 2, 0);
    break;
  case IR_OP_TRANSPOSE: {
    int code = 0;
    for (int i = 0; i < a->nlist; i++)
      code = code * a->nlist + (int)a->list[i];
    t = TO_TRANSPOSE;
    add_para(P, o, PM_NUMDIM, a->nlist);
    add_para(P, o, PM_PERM, code);
    break;
  }
  case IR_OP_ENLARGE:
    t = TO_ENLARGE;
    add_para(P, o, PM_KERNEL_H, a->kernel[0]);
    add_para(P, o, PM_KERNEL_W, a->kernel[1]);
    break;
  case IR_OP_CONST_ICONV: t = const_paras(P, o, a, TO_CONSTANT_ICONV); break;
  case IR_OP_CONST_POOL: t = const_paras(P, o, a, TO_CONSTANT_POOL); break;
  case IR_OP_CONST_IMM:
    t = TO_CONSTANT_IMM;
    add_sizes(P, o, a->list, a->nlist, 1);
    break;
  case IR_OP_CONST_ONES:
    t = TO_CONSTANT_ONE;
    add_sizes(P, o, a->list, a->nlist, 1);
    break;
  case IR_OP_EWADD: t = TO_EW_ADD; break;
  case IR_OP_EWMUL: t = TO_EW_MUL; break;
  case IR_OP_SMUL: t = TO_MUL; break;
#include "../ir/ew_cases.h"
    t = taso_ew_type(n->op);
    break;
  case IR_OP_EWSUB:
  case IR_OP_EWDIV:
  case IR_OP_CLIP:
  case IR_OP_RESHAPE:
  case IR_OP_GLOBAL_AVGPOOL:
  case IR_OP_BATCHNORM:
  case IR_OP_REDUCE_MEAN:
  case IR_OP_SOFTMAX:
  case IR_OP_LAYERNORM:
  case IR_OP_PAD:
  case IR_OP_SLICE:
  case IR_OP_GATHER:
  case IR_OP_WHERE:
  case IR_OP_EQUAL:
  case IR_OP_NOT:
  case IR_OP_CAST:
  case IR_OP_ATTENTION:
  case IR_OP_SE:
  case IR_OP_CONCAT_SHUFFLE:
  case IR_OP_MOVE:
  case IR_OP_FUSED: break; /* no TASO equivalent */
  }
  if (t < 0)
    snprintf(why, wn, "%s has no TASO equivalent", op);
  o->type = t;
  return t;
}

/* One side's operators; the output (op, ts) of each tensor in opof/tsof. */
static int side_ops(const ir_graph *g, pool *P, idmap *M,
                    GraphSubst__Operator ***ops, size_t *nops, char *why,
                    size_t wn) {
  *ops = palloc(P, (size_t)g->nnodes * sizeof **ops);
  *nops = (size_t)g->nnodes;
  for (int i = 0; i < g->nnodes && !P->oom; i++) {
    const ir_node *n = &g->nodes[i];
    GraphSubst__Operator *o = palloc(P, sizeof *o);
    if (!o)
      break;
    graph_subst__operator__init(o);
    o->input = palloc(P, (size_t)n->nin * sizeof *o->input);
    o->para = palloc(P, 8 * sizeof *o->para);
    if (!o->input || !o->para)
      break;
    (*ops)[i] = o;
    if (node_type(g, n, P, o, why, wn) < 0)
      return -1;
    for (int j = 0; j < n->nin; j++) {
      const ir_tensor *x = &g->tensors[n->in[j]];
      GraphSubst__Tensor *t = palloc(P, sizeof *t);
      if (!t)
        break;
      graph_subst__tensor__init(t);
      t->opid = x->node >= 0 ? x->node : input_id(M, x->name);
      t->tsid = x->node >= 0 ? x->slot : 0;
      o->input[o->n_input++] = t;
    }
  }
  return P->oom ? -1 : 0;
}

/* The protobuf Rule of r, allocated from P; NULL with why set. */
static GraphSubst__Rule *make_rule(const ir_rule *r, pool *P, char *why,
                                   size_t wn) {
  idmap M;
  memset(&M, 0, sizeof M);
  M.next = 1;
  GraphSubst__Rule *pr = palloc(P, sizeof *pr);
  if (!pr)
    return NULL;
  graph_subst__rule__init(pr);
  /* extension: every input and weight of the rule, src's order */
  const ir_graph *g = r->src;
  pr->input = palloc(P, ((size_t)g->ntensors + 1) * sizeof *pr->input);
  for (int i = 0; i < g->ntensors && pr->input; i++) {
    const ir_tensor *t = &g->tensors[i];
    if (t->kind == IR_T_VALUE)
      continue;
    if (t->data) {
      snprintf(why, wn, "a weight with values (TASO's format has none)");
      return NULL;
    }
    if (M.n == (int)(sizeof M.id / sizeof *M.id) || M.next > RULEIO_MAX_INPUT) {
      snprintf(why, wn, "more than %d inputs", RULEIO_MAX_INPUT);
      return NULL;
    }
    GraphSubst__Input *in = palloc(P, sizeof *in);
    int32_t *dim = palloc(P, IR_MAX_RANK * sizeof *dim);
    if (!in || !dim)
      return NULL;
    graph_subst__input__init(in);
    in->opid = input_id(&M, t->name);
    in->dim = dim;
    in->n_dim = (size_t)t->shape.rank;
    for (int j = 0; j < t->shape.rank; j++)
      dim[j] = (int32_t)t->shape.dim[j];
    in->name = (char *)t->name;
    in->has_weight = t->kind == IR_T_WEIGHT;
    in->weight = in->has_weight;
    pr->input[pr->n_input++] = in;
  }
  if (side_ops(r->src, P, &M, &pr->srcop, &pr->n_srcop, why, wn) < 0 ||
      side_ops(r->dst, P, &M, &pr->dstop, &pr->n_dstop, why, wn) < 0)
    return NULL;
  int n = r->src->noutputs;
  pr->mappedoutput = palloc(P, (size_t)n * sizeof *pr->mappedoutput);
  for (int i = 0; i < n && !P->oom; i++) {
    const ir_tensor *a = &r->src->tensors[r->src->outputs[i]];
    const ir_tensor *b = &r->dst->tensors[r->dst->outputs[i]];
    if (a->node < 0 || b->node < 0) {
      snprintf(why, wn, "an output is an input");
      return NULL;
    }
    GraphSubst__MapOutput *m = palloc(P, sizeof *m);
    if (!m)
      return NULL;
    graph_subst__map_output__init(m);
    m->srcopid = a->node;
    m->srctsid = a->slot;
    m->dstopid = b->node;
    m->dsttsid = b->slot;
    pr->mappedoutput[pr->n_mappedoutput++] = m;
  }
  return P->oom ? NULL : pr;
}

base_status ruleio_write_taso_pb(const ir_ruleset *rs, const char *use,
                                 ruleio_buf *b, ruleio_stats *st,
                                 base_diag *d) {
  pool P = {0};
  GraphSubst__RuleCollection c = GRAPH_SUBST__RULE_COLLECTION__INIT;
  c.rule = palloc(&P, ((size_t)rs->n + 1) * sizeof *c.rule);
  base_status s = BASE_OK;
  for (int i = 0; i < rs->n && !P.oom && s == BASE_OK; i++) {
    char why[160] = "";
    if (!use[i])
      continue;
    GraphSubst__Rule *pr = make_rule(&rs->rules[i], &P, why, sizeof why);
    if (pr) {
      c.rule[c.n_rule++] = pr;
      if (st)
        st->done++;
    } else if (!P.oom) {
      s = ruleio_stats_skip(st, why, i + 1);
    }
  }
  if (!P.oom && s == BASE_OK) {
    size_t n = graph_subst__rule_collection__get_packed_size(&c);
    uint8_t *buf = base_malloc(n + 1);
    if (buf) {
      graph_subst__rule_collection__pack(&c, buf);
      ruleio_put(b, (const char *)buf, n);
      free(buf);
    } else {
      P.oom = 1;
    }
  }
  int oom = P.oom;
  pool_free(&P);
  if (oom || s != BASE_OK)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  return BASE_OK;
}
