/* check.c: the end-to-end check of an optimization: run the original and
 * the optimized graph on the CPU reference executor with the same inputs
 * and weights, in rounds of several seeds and scales, and compare their
 * outputs element by element (ex_check_rounds; ex_check is one round at
 * scale 1, measured as the largest difference over the largest value).
 *
 * The optimized graph's inputs and weights are the original's, found by
 * name (rather than drawn again), because a weight's random values
 * depend on its first reader, which rewrites may change; but a weight
 * with values of its own runs on them, the values optimize writes
 * (ex_share_leaves, which mutant_float_check uses too).
 *
 * At a batch B larger than ex_check_opts.late_batch (2), the rounds after
 * the first run both graphs rebatched to that batch when ir_rebatch proves
 * that no operator of either computes across the batch's rows: round 1
 * runs the graphs as written on every row, the later rounds (the large
 * scales) 2 rows, with the weights and the first rows' inputs that the
 * whole batch would have drawn. At batch 16 that is 16 + 2 + 2 rows of
 * each graph instead of 48.
 *
 * Graphs with the same canonical text and weight values (an optimization
 * that changed nothing) are not run: the executor is deterministic, so
 * their outputs are the same bits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"

/* Whether b's leaf x (known values) holds what a's namesake y gives: the
 * same type and values, bit for bit. */
static int same_values(const ir_tensor *y, const ir_tensor *x) {
  size_t n = sizeof(float) * (size_t)ir_shape_numel(&x->shape);
  return y->data && y->dtype == x->dtype && ir_shape_eq(&y->shape, &x->shape) &&
         (y->data == x->data || !memcmp(y->data, x->data, n));
}

/* Whether g computes with tensor t: a node reads it or it is an output. */
static int is_read(const ir_graph *g, int t) {
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == t)
      return 1;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      if (g->nodes[i].in[k] == t)
        return 1;
  return 0;
}

/* (exec.h) A copy of every weight per round would cost a pass over all
 * of them (GPT-2: 124M floats) and as much memory again: b's leaves point
 * at a's buffers (kernels never write their inputs). A leaf of b with
 * known values is shared only when a's namesake holds the same bits, else
 * ex_fill_random copies b's own. */
base_status ex_share_leaves(const ir_graph *a, const ex_values *va,
                            const ir_graph *b, ex_values *vb,
                            unsigned char *shared, base_diag *d) {
  for (int t = 0; t < b->ntensors; t++) {
    const ir_tensor *x = &b->tensors[t];
    if (x->kind == IR_T_VALUE)
      continue;
    int s = ir_find_tensor(a, x->name);
    const ir_tensor *y = s >= 0 ? &a->tensors[s] : NULL;
    if (x->data && !(y && y->kind != IR_T_VALUE && same_values(y, x)))
      continue; /* its own values: ex_fill_random copies them */
    if (!y || y->kind == IR_T_VALUE || !ir_shape_eq(&y->shape, &x->shape))
      return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                           "optimized graph reads '%s', which the original "
                           "graph has not as an input or weight of that shape",
                           x->name);
    if (y->data && !x->data && is_read(b, t))
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "the optimized graph's '%s' has no values and the "
                           "original's has: written, it would not run on "
                           "the values checked",
                           x->name);
    if (x->dtype == y->dtype ||
        (x->dtype != IR_DT_F16 && x->dtype != IR_DT_BF16)) {
      vb->v[t] = va->v[s]; /* the same values: shared */
      shared[t] = 1;
      continue;
    }
    /* a half tensor of b reading a's wider one: its own rounded copy */
    size_t n = sizeof(float) * (size_t)ir_shape_numel(&x->shape);
    if (!(vb->v[t] = base_malloc(n)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    memcpy(vb->v[t], va->v[s], n);
    ir_dtype_round_n(vb->v[t], ir_shape_numel(&x->shape), (ir_dtype)x->dtype);
  }
  return BASE_OK;
}

void ex_values_free_shared(ex_values *vb, const unsigned char *shared) {
  for (int t = 0; vb && shared && t < vb->n; t++)
    if (shared[t])
      vb->v[t] = NULL;
  ex_values_free(vb);
}

/* Compares output `out` of round `round` (x: the original's values, y:
 * the optimized graph's) element by element into r; max|x| over x's finite
 * elements. */
static double compare_output(const float *x, const float *y, int64_t n,
                             const ex_check_opts *o, int round, int out,
                             ex_check_result *r) {
  double m = 0, diff = 0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(x[i]) && fabs(x[i]) > m)
      m = fabs(x[i]);
  double atol = o->atol * m, se = 0, sx = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) {
      r->skipped++;
      continue;
    }
    r->compared++;
    double e = isfinite(y[i]) ? fabs((double)x[i] - (double)y[i]) : INFINITY;
    se += e * e;
    sx += (double)x[i] * x[i];
    double tol = atol + o->rtol * fabs(x[i]);
    double q = e == 0 ? 0 : tol > 0 ? e / tol : INFINITY;
    if (e > diff)
      diff = e;
    if (q > r->worst) {
      r->worst = q;
      r->round = round;
      r->seed = o->seed + (uint64_t)round;
      r->scale = o->scale[round];
      r->output = out;
      r->index = i;
      r->va = x[i];
      r->vb = y[i];
    }
  }
  double rel = diff == 0 ? 0 : m > 0 ? diff / m : INFINITY;
  if (rel > r->max_err)
    r->max_err = rel;
  double l2 = se == 0 ? 0 : sx > 0 ? sqrt(se / sx) : INFINITY;
  if (l2 > r->round_l2[round])
    r->round_l2[round] = l2;
  return m;
}

static base_status compare(const ir_graph *a, const ex_values *va,
                           const ir_graph *b, const ex_values *vb,
                           const ex_check_opts *o, int round,
                           ex_check_result *r, base_diag *d) {
  char s1[64], s2[64];
  double seen = 0;
  for (int i = 0; i < a->noutputs; i++) {
    const ir_shape *sa = &a->tensors[a->outputs[i]].shape;
    const ir_shape *sb = &b->tensors[b->outputs[i]].shape;
    if (!ir_shape_eq(sa, sb))
      return base_diag_set(d, BASE_ERR_SHAPE, 0, 0,
                           "output %d is %s in the original, %s optimized",
                           i + 1, ir_shape_str(sa, s1, sizeof s1),
                           ir_shape_str(sb, s2, sizeof s2));
    seen += compare_output(va->v[a->outputs[i]], vb->v[b->outputs[i]],
                           ir_shape_numel(sa), o, round, i, r);
  }
  r->blind += seen == 0;
  return BASE_OK;
}

/* One round: a's inputs and weights drawn with the round's seed and scale
 * (with redraw its fan-in weights too: ex_fill_random_as) and a run once, its
 * products recorded in m (memo.c; NULL: none); then each b[k] (NULL: skipped)
 * on the same buffers (ex_share_leaves), run reusing those products (the same
 * results as without), and compared with a into r[k] at o[k]'s tolerance. */
static base_status run_round(const ir_graph *a, const ir_graph *const *b, int n,
                             const ex_check_opts *o, int round, int redraw,
                             ex_memo *m, ex_check_result *const *r,
                             base_diag *d) {
  ex_options eo = {0, 0};
  ex_values *va = ex_values_new(a);
  uint64_t seed = o[0].seed + (uint64_t)round;
  base_status st =
      va ? BASE_OK : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st)
    st = ex_fill_random_as(a, va, seed, o[0].scale[round], redraw, d);
  if (!st) {
    ex_memo_use(m, EX_MEMO_RECORD);
    st = ex_run(a, va, &eo, d);
    ex_memo_use(NULL, EX_MEMO_OFF);
  }
  for (int k = 0; !st && k < n; k++) {
    if (!b[k])
      continue;
    ex_values *vb = ex_values_new(b[k]);
    unsigned char *shared = base_calloc((size_t)b[k]->ntensors + 1, 1);
    if (!vb || !shared)
      st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    if (!st)
      st = ex_share_leaves(a, va, b[k], vb, shared, d);
    if (!st)
      st = ex_fill_random(b[k], vb, seed, d);
    if (!st) {
      ex_memo_use(m, EX_MEMO_REPLAY);
      st = ex_run(b[k], vb, &eo, d);
      ex_memo_use(NULL, EX_MEMO_OFF);
    }
    if (!st)
      st = compare(a, va, b[k], vb, &o[k], round, r[k], d);
    if (vb)
      ex_values_free_shared(vb, shared);
    free(shared);
  }
  ex_memo_round_done(m);
  ex_values_free(va);
  return st;
}

/* The batch of g: dim 0 of its first input (ir_rebatch's), 0 if none;
 * -1 when that input is a vector (a row a scalar: the late batch would
 * draw a handful of values, not a few samples). */
static int64_t graph_batch(const ir_graph *g) {
  for (int t = 0; t < g->ntensors; t++) {
    const ir_shape *s = &g->tensors[t].shape;
    if (g->tensors[t].kind == IR_T_INPUT)
      return s->rank > 1 ? s->dim[0] : s->rank ? -1 : 0;
  }
  return 0;
}

/* The graphs of the rounds after the first: a and each b[k] rebatched to
 * o->late_batch (*la, lb[k]) when their batch is larger and all rebatch,
 * else *la NULL (each r[k]->late_refused says why, when a graph was
 * refused). b[k] NULL: skipped. */
static base_status late_graphs(const ir_graph *a, const ir_graph *const *b,
                               int n, const ex_check_opts *o, ir_graph **la,
                               ir_graph **lb, ex_check_result *const *r,
                               base_diag *d) {
  *la = NULL;
  int64_t batch = graph_batch(a);
  for (int k = 0; k < n; k++) {
    lb[k] = NULL;
    r[k]->batch = r[k]->late_batch = batch > 0 ? batch : 0;
  }
  if ((o->rounds < 2 && !o->all_late) || o->late_batch < 1 ||
      batch <= o->late_batch)
    return BASE_OK;
  for (int k = 0; k < n; k++)
    if (b[k] && graph_batch(b[k]) != batch)
      return BASE_OK;
  base_diag e = {0};
  base_status st = ir_rebatch(a, o->late_batch, la, &e);
  for (int k = 0; !st && k < n; k++)
    if (b[k])
      st = ir_rebatch(b[k], o->late_batch, &lb[k], &e);
  if (st == BASE_ERR_NOMEM)
    return base_diag_set(d, st, 0, 0, "out of memory");
  if (st) { /* an operator computes across the rows: every round whole */
    for (int k = 0; k < n; k++) {
      memcpy(r[k]->late_refused, e.msg, sizeof r[k]->late_refused);
      ir_graph_free(lb[k]);
      lb[k] = NULL;
    }
    ir_graph_free(*la);
    *la = NULL;
    return BASE_OK;
  }
  for (int k = 0; k < n; k++)
    r[k]->late_batch = o->late_batch;
  return BASE_OK;
}

/* Whether a and b are the same graph: the same canonical text (ir_print)
 * and every weight's known values the same bits. -1 out of memory. */
static int same_graph(const ir_graph *a, const ir_graph *b) {
  if (a->ntensors != b->ntensors || a->nnodes != b->nnodes)
    return 0;
  char *ta = ir_print(a), *tb = ta ? ir_print(b) : NULL;
  int same = ta && tb ? !strcmp(ta, tb) : -1;
  free(ta);
  free(tb);
  for (int t = 0; same == 1 && t < b->ntensors; t++) {
    const ir_tensor *x = &b->tensors[t];
    int s = ir_find_tensor(a, x->name);
    const float *y = s >= 0 ? a->tensors[s].data : NULL;
    size_t n = sizeof(float) * (size_t)ir_shape_numel(&x->shape);
    if (s < 0 || !x->data != !y || (y && memcmp(x->data, y, n)))
      same = 0;
  }
  return same;
}

void ex_check_opts_default(ex_check_opts *o) {
  memset(o, 0, sizeof *o);
  o->seed = 1;
  o->rounds = 3;
  o->scale[0] = 1;
  o->scale[1] = 10;
  o->scale[2] = 1000;
  o->rtol = 1e-4;
  o->atol = 1e-5;
  o->memo_bytes = EX_CHECK_MEMO_BYTES;
  o->late_batch = EX_CHECK_LATE_BATCH;
}

int ex_graph_depth(const ir_graph *g) {
  int *depth = base_calloc((size_t)g->ntensors + 1, sizeof *depth), most = 0;
  if (!depth)
    return -1;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = &g->nodes[i];
    int dn = 0;
    for (int k = 0; k < n->nin; k++)
      dn = depth[n->in[k]] > dn ? depth[n->in[k]] : dn;
    for (int k = 0; k < n->nout; k++)
      depth[n->out[k]] = dn + 1;
    most = dn + 1 > most ? dn + 1 : most;
  }
  free(depth);
  return most;
}

double ex_half_tolerance(ir_dtype t, int depth) {
  if (!ir_dtype_is_half(t))
    return 0;
  return EX_HALF_TOL_K * ir_dtype_unit_roundoff(t) *
         sqrt(depth > 1 ? depth : 1);
}

/* The tolerance for a and b: at least the half type's (ex_half_tolerance)
 * when either is a half graph. */
static base_status half_opts(const ir_graph *a, const ir_graph *b,
                             ex_check_opts *o, base_diag *d) {
  ir_dtype t = ir_graph_float_type(a);
  if (t == IR_DT_F32)
    t = ir_graph_float_type(b);
  if (t == IR_DT_F32)
    return BASE_OK;
  int da = ex_graph_depth(a), db = ex_graph_depth(b);
  if (da < 0 || db < 0)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  double tol = ex_half_tolerance(t, da > db ? da : db);
  o->rtol = o->rtol > tol ? o->rtol : tol;
  o->atol = o->atol > tol ? o->atol : tol;
  return BASE_OK;
}

#define CHECK_MAX_B 3 /* graphs compared with one original at once */

/* o[0].rounds rounds of each b[k] against a (run_round), the rounds after
 * the first (all with all_late) on the late copies la and lb[k] where la is
 * not NULL; each b[k] that is not NULL counts its rounds in r[k]. */
static base_status run_rounds(const ir_graph *a, const ir_graph *const *b,
                              const ir_graph *la, const ir_graph *const *lb,
                              int n, const ex_check_opts *o, int redraw,
                              ex_memo *m, ex_memo *lm,
                              ex_check_result *const *r, base_diag *d) {
  base_status st = BASE_OK;
  for (int i = 0; !st && i < o[0].rounds; i++) {
    st = (i || o[0].all_late) && la
             ? run_round(la, lb, n, o, i, redraw, lm, r, d)
             : run_round(a, b, n, o, i, redraw, m, r, d);
    for (int k = 0; k < n; k++)
      r[k]->rounds += b[k] != NULL;
  }
  return st;
}

/* Whether the fan-in weights of a can be drawn for b too: every leaf of b
 * with known values that it reads is a's namesake's (ex_share_leaves
 * shares it), so b reads what a is given. */
static int redrawable(const ir_graph *a, const ir_graph *b) {
  for (int t = 0; t < b->ntensors; t++) {
    const ir_tensor *x = &b->tensors[t];
    if (x->kind == IR_T_VALUE || !x->data || !is_read(b, t))
      continue;
    int s = ir_find_tensor(a, x->name);
    if (s < 0 || a->tensors[s].kind == IR_T_VALUE ||
        !same_values(&a->tensors[s], x))
      return 0;
  }
  return 1;
}

/* The rounds again, the fan-in weights drawn, for each b[k] whose every
 * round saw the original's outputs all zero (ex_check_result.blind) and
 * passed (a failure stands: b[k] not finite or not zero where a is zero),
 * where b[k] reads a's weights as they are (redrawable). */
static base_status redraw_blind(const ir_graph *a, const ir_graph *const *b,
                                const ir_graph *la, ir_graph *const *lb, int n,
                                const ex_check_opts *o,
                                ex_check_result *const *r, base_diag *d) {
  const ir_graph *rb[CHECK_MAX_B], *rlb[CHECK_MAX_B];
  int any = 0;
  for (int k = 0; k < n; k++) {
    int redo = b[k] && r[k]->rounds && r[k]->blind == r[k]->rounds &&
               r[k]->worst <= 1 && redrawable(a, b[k]);
    rb[k] = redo ? b[k] : NULL;
    rlb[k] = redo && la ? lb[k] : NULL;
    if (!redo)
      continue;
    any = 1;
    r[k]->worst = r[k]->max_err = 0;
    memset(r[k]->round_l2, 0, sizeof r[k]->round_l2);
    r[k]->rounds = r[k]->blind = 0;
    r[k]->compared = r[k]->skipped = 0;
    r[k]->redrawn = 1;
  }
  return any ? run_rounds(a, rb, la, rlb, n, o, 1, NULL, NULL, r, d) : BASE_OK;
}

/* The check of each b[k] against a (ex_check_rounds), a run once a round
 * for all of them: r[k] as ex_check_rounds would fill it, but that where a
 * graph refuses the late batch every pair runs whole. */
static base_status check_n(const ir_graph *a, const ir_graph *const *bs, int n,
                           const ex_check_opts *opts, ex_check_result *const *r,
                           base_diag *d) {
  ex_check_opts o[CHECK_MAX_B];
  const ir_graph *b[CHECK_MAX_B];
  base_status st = BASE_OK;
  for (int k = 0; k < n; k++) {
    if (opts)
      o[k] = *opts;
    else
      ex_check_opts_default(&o[k]);
    memset(r[k], 0, sizeof *r[k]);
    b[k] = bs[k];
    if (a->noutputs != b[k]->noutputs)
      return base_diag_set(
          d, BASE_ERR_SHAPE, 0, 0,
          "the original has %d outputs, the optimized graph %d", a->noutputs,
          b[k]->noutputs);
    if (o[k].rounds < 1 || o[k].rounds > EX_CHECK_MAX_ROUNDS)
      return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                           "the check runs 1 to %d rounds, not %d",
                           EX_CHECK_MAX_ROUNDS, o[k].rounds);
    if ((st = half_opts(a, b[k], &o[k], d)))
      return st;
    r[k]->rtol = o[k].rtol;
    r[k]->atol = o[k].atol;
    int same = o[k].run_same ? 0 : same_graph(a, b[k]);
    if (same < 0)
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    if (same) { /* no round: the same bits */
      r[k]->same = 1;
      b[k] = NULL;
    }
  }
  int any = 0;
  for (int k = 0; k < n; k++)
    any |= b[k] != NULL;
  if (!any)
    return BASE_OK;
  ir_graph *la = NULL, *lb[CHECK_MAX_B] = {NULL};
  st = late_graphs(a, b, n, &o[0], &la, lb, r, d);
  /* the copies' products come in another order: a memo of their own */
  ex_memo *m = o[0].memo_bytes ? ex_memo_new(o[0].memo_bytes) : NULL;
  ex_memo *lm = la && o[0].memo_bytes ? ex_memo_new(o[0].memo_bytes) : NULL;
  if (!st)
    st =
        run_rounds(a, b, la, (const ir_graph *const *)lb, n, o, 0, m, lm, r, d);
  if (!st)
    st = redraw_blind(a, b, la, lb, n, o, r, d);
  int64_t rec, reu, rec2, reu2;
  ex_memo_stats(m, &rec, &reu);
  ex_memo_stats(lm, &rec2, &reu2);
  for (int k = 0; k < n; k++) {
    r[k]->products_recorded = rec + rec2;
    r[k]->products_reused = reu + reu2;
  }
  ex_memo_free(m);
  ex_memo_free(lm);
  ir_graph_free(la);
  for (int k = 0; k < n; k++)
    ir_graph_free(lb[k]);
  return st;
}

base_status ex_check_rounds(const ir_graph *a, const ir_graph *b,
                            const ex_check_opts *opts, ex_check_result *r,
                            base_diag *d) {
  ex_check_result *rs[1] = {r};
  return check_n(a, &b, 1, opts, rs, d);
}

base_status ex_check(const ir_graph *a, const ir_graph *b, uint64_t seed,
                     double *max_err, base_diag *d) {
  ex_check_opts o;
  ex_check_result r;
  ex_check_opts_default(&o);
  o.seed = seed;
  o.rounds = 1;
  base_status st = ex_check_rounds(a, b, &o, &r, d);
  *max_err = r.max_err;
  return st;
}

/* The second test's bound on a round's error of the result: EX_HALF_REF_K
 * times most, the model's half copy's largest error so far, at least tol. */
static double half_bound(double most, double tol) {
  double lim = EX_HALF_REF_K * most;
  return lim > tol ? lim : tol;
}

/* Round i of the second test again over EX_HALF_MORE_SEEDS more seeds at
 * its scale (exec.h): b = {wide, ref, res}; prev, the copy's largest
 * error before round i. Sets r->more_* and r->more_pass. */
static base_status more_seeds(const ir_graph *f, const ir_graph *const *b,
                              const ex_check_opts *opts, int i, double prev,
                              ex_half_second *r, base_diag *d) {
  ex_check_opts o;
  if (opts)
    o = *opts;
  else
    ex_check_opts_default(&o);
  float scale = o.scale[i];
  o.seed += (uint64_t)o.rounds; /* after the rounds' seeds */
  o.rounds = EX_HALF_MORE_SEEDS;
  for (int k = 0; k < o.rounds; k++)
    o.scale[k] = scale;
  o.all_late = 1;
  ex_check_result w, c, s;
  ex_check_result *rs[3] = {&w, &c, &s};
  base_status st = check_n(f, b, 3, &o, rs, d);
  if (st)
    return st;
  double sc = r->ref.round_l2[i] * r->ref.round_l2[i];
  double ss = r->res.round_l2[i] * r->res.round_l2[i];
  for (int k = 0; k < s.rounds; k++) {
    sc += c.round_l2[k] * c.round_l2[k];
    ss += s.round_l2[k] * s.round_l2[k];
  }
  r->more_round = i;
  r->more_seeds = s.rounds + 1;
  r->more_ref = sqrt(sc / r->more_seeds);
  r->more_res = sqrt(ss / r->more_seeds);
  r->more_wide = w.worst;
  double most = r->more_ref > prev ? r->more_ref : prev;
  r->more_pass =
      w.worst <= 1 && s.rounds > 0 && r->more_res <= half_bound(most, r->tol);
  return BASE_OK;
}

base_status ex_check_half_second(const ir_graph *f, const ir_graph *wide,
                                 const ir_graph *ref, const ir_graph *res,
                                 const ex_check_opts *opts, ex_half_second *r,
                                 base_diag *d) {
  memset(r, 0, sizeof *r);
  r->round = r->more_round = -1;
  ir_dtype t = ir_graph_float_type(res);
  if (ir_graph_float_type(f) != IR_DT_F32 ||
      ir_graph_float_type(wide) != IR_DT_F32 || !ir_dtype_is_half(t))
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0,
                         "the half check's second test compares a half "
                         "result with a float32 model and its float32 form");
  int dr = ex_graph_depth(ref), ds = ex_graph_depth(res);
  if (dr < 0 || ds < 0)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  r->tol = ex_half_tolerance(t, dr > ds ? dr : ds);
  /* the float32 model runs once a round for the three (check_n) */
  const ir_graph *b[3] = {wide, ref, res};
  ex_check_result *rs[3] = {&r->wide, &r->ref, &r->res};
  base_status st = check_n(f, b, 3, opts, rs, d);
  if (st || !(r->wide.worst <= 1))
    return st;
  double most = 0; /* the model's half copy's largest error so far */
  for (int i = 0; !st && i < r->res.rounds && r->round < 0; i++) {
    double e = r->ref.round_l2[i], prev = most;
    most = e > most ? e : most; /* inf: the half copy overflowed */
    if (r->res.round_l2[i] <= half_bound(most, r->tol))
      continue;
    if (r->more_round < 0 && e > r->tol && isfinite(e))
      st = more_seeds(f, b, opts, i, prev, r, d);
    if (!st && !(r->more_round == i && r->more_pass))
      r->round = i;
  }
  r->pass = !st && r->round < 0 && r->res.rounds > 0;
  return st;
}

void ex_half_second_rounds(const ex_half_second *h, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < h->res.rounds && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%.3g (%.3g)", i ? ", " : "",
                          h->res.round_l2[i], h->ref.round_l2[i]);
  if (h->more_round >= 0 && k < n)
    snprintf(buf + k, n - k, "; round %d over %d seeds: %.3g (%.3g)%s",
             h->more_round + 1, h->more_seeds, h->more_res, h->more_ref,
             h->more_wide <= 1 ? "" : ", float32 part over its tolerance");
}
