/* prove.c: the verifier context and verify_prove.
 *
 * A context holds one Z3 context and one solver. Each axiom is compiled to a
 * quantified formula with e-matching patterns and asserted at the base scope
 * behind a tracking literal ("ax:NAME" => axiom). A proof pushes a scope,
 * encodes both graphs, and for each output pair checks "src != dst" under
 * all tracking literals as assumptions: unsat means proven, and the unsat
 * core names the axioms the proof used. Z3 errors do not abort: the error
 * handler records them (guard.c) and no result of a failed call is passed
 * to Z3 again; Z3's out of memory is BASE_ERR_NOMEM.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encode.h"

#define VERIFY_GUARD "the prover (Z3)"

static base_status z3_failed(verify_ctx *c, base_diag *d, const char *what) {
  return verify_z3_failed(c, d, what);
}

/* ---- axioms ------------------------------------------------------------- */

static Z3_ast term(verify_ctx *c, const verify_form *f, const Z3_ast *vars,
                   const verify_term *e);

/* Entry i of a code's mixed-radix digits: (code div (lo * r^i)) mod r for
 * i = 0..IR_MAX_RANK-1, as an if-then-else chain on i (-1 past it):
 * perm's digits (lo 8, r 8: verify_perm_code, rank below 8) and a shape
 * code's dimensions (lo 8, r M = 2^36 + 1: verify_shape_code). */
static Z3_ast digit(verify_ctx *c, Z3_ast code, Z3_ast i, const char *r) {
  Z3_context z = c->z;
  Z3_ast radix = Z3_mk_numeral(z, r, c->I);
  Z3_ast w = verify_z3_bad() ? NULL : Z3_mk_int64(z, 8, c->I);
  Z3_ast acc = verify_z3_bad() ? NULL : Z3_mk_int64(z, -1, c->I);
  Z3_ast at[IR_MAX_RANK];
  for (int k = 0; k < IR_MAX_RANK && !verify_z3_bad(); k++) {
    Z3_ast q = Z3_mk_div(z, code, w);
    at[k] = verify_z3_bad() ? NULL : Z3_mk_mod(z, q, radix);
    Z3_ast m[2] = {w, radix};
    w = verify_z3_bad() ? NULL : Z3_mk_mul(z, 2, m);
  }
  for (int k = IR_MAX_RANK - 1; k >= 0 && !verify_z3_bad(); k--) {
    Z3_ast kk = Z3_mk_int64(z, k, c->I);
    Z3_ast is_k = verify_z3_bad() ? NULL : Z3_mk_eq(z, i, kk);
    acc = verify_z3_bad() ? NULL : Z3_mk_ite(z, is_k, at[k], acc);
  }
  return verify_z3_bad() ? NULL : acc;
}

static Z3_ast logic(verify_ctx *c, verify_fn fn, unsigned n, const Z3_ast *a) {
  Z3_context z = c->z;
  switch (fn) {
  case VERIFY_F_PERM: return digit(c, a[0], a[1], "8");
  case VERIFY_F_DIM: return digit(c, a[0], a[1], "68719476737");
  case VERIFY_F_RANK: {
    Z3_ast eight = Z3_mk_int64(z, 8, c->I);
    return verify_z3_bad() ? NULL : Z3_mk_mod(z, a[0], eight);
  }
  case VERIFY_F_EQ: return Z3_mk_eq(z, a[0], a[1]);
  case VERIFY_F_IMPLIES: return Z3_mk_implies(z, a[0], a[1]);
  case VERIFY_F_AND: return Z3_mk_and(z, n, a);
  case VERIFY_F_OR: return Z3_mk_or(z, n, a);
  case VERIFY_F_NOT: return Z3_mk_not(z, a[0]);
  case VERIFY_F_ADD: return Z3_mk_add(z, n, a);
  case VERIFY_F_SUB: return Z3_mk_sub(z, n, a);
  case VERIFY_F_MUL: return Z3_mk_mul(z, n, a);
  case VERIFY_F_MOD: return Z3_mk_mod(z, a[0], a[1]);
  case VERIFY_F_LT: return Z3_mk_lt(z, a[0], a[1]);
  case VERIFY_F_LE: return Z3_mk_le(z, a[0], a[1]);
  case VERIFY_F_GT: return Z3_mk_gt(z, a[0], a[1]);
  default: return Z3_mk_ge(z, a[0], a[1]);
  }
}

static Z3_ast term(verify_ctx *c, const verify_form *f, const Z3_ast *vars,
                   const verify_term *e) {
  if (e->kind == VERIFY_T_NUM)
    return Z3_mk_int64(c->z, e->num, c->I);
  if (e->kind == VERIFY_T_VAR)
    return vars[e->var];
  Z3_ast a[VERIFY_MAX_ARGS];
  for (int i = 0; i < e->nargs; i++)
    a[i] = term(c, f, vars, e->args[i]);
  if (verify_z3_bad())
    return NULL;
  if (e->fn < VERIFY_NOPFN)
    return Z3_mk_app(c->z, c->fn[e->fn], (unsigned)e->nargs, a);
  return logic(c, e->fn, (unsigned)e->nargs, a);
}

/* Whether e can serve as a pattern: an operator term without arithmetic
 * that mentions every variable. */
static int pattern_ok(const verify_form *f, const verify_term *e) {
  if (e->kind != VERIFY_T_APP)
    return 0;
  int seen[VERIFY_MAX_VARS] = {0}, stack = 0, n = 0;
  const verify_term *todo[VERIFY_MAX_TERMS];
  todo[stack++] = e;
  while (stack) {
    const verify_term *t = todo[--stack];
    if (t->kind == VERIFY_T_VAR)
      n += !seen[t->var]++;
    if (t->kind == VERIFY_T_APP && t->fn >= VERIFY_NOPFN)
      return 0;
    for (int i = 0; t->kind == VERIFY_T_APP && i < t->nargs; i++)
      todo[stack++] = t->args[i];
  }
  return n == f->nvars;
}

Z3_ast verify_compile_axiom(verify_ctx *c, const verify_form *f) {
  Z3_ast vars[VERIFY_MAX_VARS];
  Z3_app bound[VERIFY_MAX_VARS];
  for (int i = 0; i < f->nvars; i++) {
    char name[40];
    snprintf(name, sizeof name, "v:%s", f->vars[i].name);
    Z3_symbol sym = Z3_mk_string_symbol(c->z, name);
    if (verify_z3_bad())
      return NULL;
    vars[i] =
        Z3_mk_const(c->z, sym, f->vars[i].sort == VERIFY_S_INT ? c->I : c->T);
    if (verify_z3_bad())
      return NULL;
    bound[i] = Z3_to_app(c->z, vars[i]);
  }
  Z3_ast l = term(c, f, vars, f->lhs), r = term(c, f, vars, f->rhs);
  Z3_ast g = f->guard ? term(c, f, vars, f->guard) : NULL;
  if (verify_z3_bad())
    return NULL;
  Z3_ast body = Z3_mk_eq(c->z, l, r);
  if (g && !verify_z3_bad())
    body = Z3_mk_implies(c->z, g, body);
  Z3_pattern pats[2];
  unsigned np = 0;
  if (pattern_ok(f, f->lhs))
    pats[np++] = Z3_mk_pattern(c->z, 1, &l);
  if (pattern_ok(f, f->rhs))
    pats[np++] = Z3_mk_pattern(c->z, 1, &r);
  if (verify_z3_bad())
    return NULL;
  return Z3_mk_forall_const(c->z, 0, (unsigned)f->nvars, bound, np, pats, body);
}

static base_status add_axiom(verify_ctx *c, const verify_axiom *ax,
                             verify_form *f, base_diag *d) {
  if (c->nax == VERIFY_MAX_AXIOMS)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "more than %d axioms",
                         VERIFY_MAX_AXIOMS);
  base_status st = verify_form_parse(ax, f, d);
  if (st != BASE_OK)
    return st;
  char name[80];
  snprintf(name, sizeof name, "ax:%s", ax->name);
  Z3_symbol sym = Z3_mk_string_symbol(c->z, name);
  Z3_sort b = verify_z3_bad() ? NULL : Z3_mk_bool_sort(c->z);
  Z3_ast p = verify_z3_bad() ? NULL : Z3_mk_const(c->z, sym, b);
  Z3_ast q = verify_z3_bad() ? NULL : verify_compile_axiom(c, f);
  Z3_ast pq = verify_z3_bad() ? NULL : Z3_mk_implies(c->z, p, q);
  if (!verify_z3_bad())
    Z3_solver_assert(c->z, c->s, pq);
  if (verify_z3_bad())
    return z3_failed(c, d, ax->name);
  c->ax[c->nax] = ax;
  c->track[c->nax++] = p;
  return BASE_OK;
}

static base_status add_axioms(verify_ctx *c, const verify_axiom *extra,
                              int nextra, int replace, base_diag *d) {
  verify_form *f = base_malloc(sizeof *f);
  if (!f)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status st = BASE_OK;
  for (int i = 0; !replace && st == BASE_OK && i < verify_naxioms(); i++)
    st = add_axiom(c, verify_axiom_at(i), f, d);
  for (int i = 0; st == BASE_OK && i < nextra; i++)
    st = add_axiom(c, &extra[i], f, d);
  free(f);
  return st;
}

/* ---- the context -------------------------------------------------------- */

static void declare(verify_ctx *c) {
  for (int f = 0; f < VERIFY_NOPFN; f++) {
    const verify_fninfo *fi = verify_fn_info((verify_fn)f);
    Z3_sort dom[VERIFY_MAX_ARGS];
    for (int i = 0; i < fi->nint + fi->nten; i++)
      dom[i] = i < fi->nint ? c->I : c->T;
    Z3_symbol sym = Z3_mk_string_symbol(c->z, fi->name);
    if (verify_z3_bad())
      return;
    c->fn[f] = Z3_mk_func_decl(c->z, sym, (unsigned)(fi->nint + fi->nten), dom,
                               fi->result == VERIFY_S_INT ? c->I : c->T);
    if (verify_z3_bad())
      return;
  }
}

static void set_bool(verify_ctx *c, Z3_params p, const char *name, bool v) {
  Z3_symbol sym = verify_z3_bad() ? NULL : Z3_mk_string_symbol(c->z, name);
  if (!verify_z3_bad())
    Z3_params_set_bool(c->z, p, sym, v);
}

/* No "timeout" parameter: Z3 would start a timer thread inside each check
 * and abort the process if it cannot; c->watch interrupts the check
 * instead (guard.c). */
static base_status set_params(verify_ctx *c, base_diag *d) {
  Z3_params p = Z3_mk_params(c->z);
  if (verify_z3_bad())
    return z3_failed(c, d, "setting the solver's parameters");
  Z3_params_inc_ref(c->z, p);
  /* e-matching only: model-based instantiation would also instantiate
   * axioms with parameters no well-typed graph has (docs/verify.md) */
  set_bool(c, p, "smt.mbqi", false);
  /* Z3 would otherwise catch SIGINT during a check and only cancel that
   * proof, so Ctrl-C would end in a rule file missing rules; the process's
   * own policy (base_signals_install) applies instead */
  set_bool(c, p, "ctrl_c", false);
  if (!verify_z3_bad())
    Z3_solver_set_params(c->z, c->s, p);
  base_status st = BASE_OK;
  if (verify_z3_bad())
    st = z3_failed(c, d, "setting the solver's parameters");
  Z3_params_dec_ref(c->z, p);
  return st;
}

/* The sorts, function symbols and solver of a new context. */
static base_status populate(verify_ctx *c, base_diag *d) {
  Z3_symbol tensor = Z3_mk_string_symbol(c->z, "Tensor");
  c->T = verify_z3_bad() ? NULL : Z3_mk_uninterpreted_sort(c->z, tensor);
  c->I = verify_z3_bad() ? NULL : Z3_mk_int_sort(c->z);
  if (!verify_z3_bad())
    declare(c);
  c->s = verify_z3_bad() ? NULL : Z3_mk_solver(c->z);
  if (verify_z3_bad())
    return z3_failed(c, d, "creating the solver");
  Z3_solver_inc_ref(c->z, c->s);
  return BASE_OK;
}

static verify_ctx *new_ctx(const verify_opts *o, const verify_axiom *extra,
                           int nextra, int replace, base_diag *d) {
  verify_z3_reset();
  if (verify_mem_check(d) != BASE_OK)
    return NULL;
  verify_ctx *c = base_calloc(1, sizeof *c);
  Z3_config cfg = c ? Z3_mk_config() : NULL;
  if (!c || !cfg) {
    free(c);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    return NULL;
  }
  Z3_set_param_value(cfg, "model", "false");
  c->z = Z3_mk_context(cfg);
  Z3_del_config(cfg);
  if (!c->z) { /* Z3 fails here only when an allocation does */
    free(c);
    base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                  "out of memory (creating the prover's Z3 context)");
    return NULL;
  }
  Z3_set_error_handler(c->z, verify_z3_on_error);
  c->timeout_ms = o && o->timeout_ms ? o->timeout_ms : 10000;
  if (populate(c, d) != BASE_OK || set_params(c, d) != BASE_OK ||
      add_axioms(c, extra, nextra, replace, d) != BASE_OK ||
      !(c->watch = verify_watch_start(c->z, d))) {
    if (verify_z3_bad()) /* no more Z3 calls, not even to free it */
      c->broken = d->code;
    verify_free(c);
    return NULL;
  }
  return c;
}

verify_ctx *verify_new_with(const verify_opts *o, const verify_axiom *extra,
                            int nextra, int replace, base_diag *d) {
  base_diag local;
  base_guard_enter(VERIFY_GUARD);
  verify_ctx *c = new_ctx(o, extra, nextra, replace, d ? d : &local);
  base_guard_leave();
  return c;
}

verify_ctx *verify_new(const verify_opts *o) {
  return verify_new_with(o, NULL, 0, 0, NULL);
}

/* A context whose Z3 calls failed is left to the process (its memory
 * lost): Z3 crashed or aborted deleting one after a failed allocation. */
void verify_free(verify_ctx *c) {
  if (!c)
    return;
  verify_watch_stop(c->watch);
  base_guard_enter(VERIFY_GUARD);
  if (c->s && !c->broken)
    Z3_solver_dec_ref(c->z, c->s);
  if (!c->broken)
    Z3_del_context(c->z);
  base_guard_leave();
  free(c);
}

/* ---- proving ------------------------------------------------------------ */

static void add_core(verify_ctx *c, verify_result *res) {
  Z3_ast_vector v = Z3_solver_get_unsat_core(c->z, c->s);
  if (verify_z3_bad())
    return;
  Z3_ast_vector_inc_ref(c->z, v);
  unsigned n = Z3_ast_vector_size(c->z, v);
  for (unsigned i = 0; i < n; i++) {
    Z3_ast a = Z3_ast_vector_get(c->z, v, i);
    for (int k = 0; k < c->nax && !verify_z3_bad(); k++) {
      if (!Z3_is_eq_ast(c->z, a, c->track[k]))
        continue;
      int dup = 0;
      for (int j = 0; j < res->ncore; j++)
        dup |= res->core[j] == c->ax[k]->name;
      if (!dup && res->ncore < 64)
        res->core[res->ncore++] = c->ax[k]->name;
    }
  }
  Z3_ast_vector_dec_ref(c->z, v);
}

/* Z3's reason for "unknown", in the verifier's words. With e-matching
 * only, "incomplete quantifiers" means the instances Z3 generated (up to its
 * generation limits) gave no contradiction: no proof was found. */
static const char *unknown_reason(const char *z3) {
  if (strstr(z3, "incomplete quantifiers"))
    return "no proof from the axioms (e-matching found no contradiction)";
  /* the watchdog's Z3_interrupt (guard.c) reads "canceled", or
   * "interrupted" when it lands outside the search proper */
  if (strstr(z3, "timeout") || strstr(z3, "canceled") ||
      strstr(z3, "interrupted"))
    return "unknown: timeout";
  return z3;
}

/* Whether Z3's reason for "unknown" is that it ran out of memory (its
 * memory_max_size, guard.c): an error, not a rule that does not hold. */
static int unknown_memout(const char *z3) {
  return strstr(z3, "memout") || strstr(z3, "memory");
}

/* Runs the check under the watchdog (the timeout, guard.c). */
static Z3_lbool check(verify_ctx *c) {
  verify_watch_arm(c->watch, c->timeout_ms);
  Z3_lbool r =
      Z3_solver_check_assumptions(c->z, c->s, (unsigned)c->nax, c->track);
  verify_watch_disarm(c->watch);
  return r;
}

/* Checks src output i != dst output i; fills res when not proven. */
static base_status check_output(verify_ctx *c, Z3_ast a, Z3_ast b, int i,
                                verify_result *res, base_diag *d) {
  Z3_solver_push(c->z, c->s);
  Z3_ast eq = verify_z3_bad() ? NULL : Z3_mk_eq(c->z, a, b);
  Z3_ast ne = verify_z3_bad() ? NULL : Z3_mk_not(c->z, eq);
  if (!verify_z3_bad())
    Z3_solver_assert(c->z, c->s, ne);
  Z3_lbool r = verify_z3_bad() ? Z3_L_UNDEF : check(c);
  const char *why = r != Z3_L_UNDEF || verify_z3_bad()
                        ? ""
                        : Z3_solver_get_reason_unknown(c->z, c->s);
  base_status st = BASE_OK;
  if (verify_z3_bad())
    st = z3_failed(c, d, "checking a rule");
  else if (r == Z3_L_FALSE)
    add_core(c, res);
  else if (r == Z3_L_TRUE)
    snprintf(res->reason, sizeof res->reason, "output %d: sat (counter-model)",
             i + 1);
  else if (unknown_memout(why))
    st = base_diag_set(d, BASE_ERR_NOMEM, 0, 0,
                       "out of memory (in the prover, Z3: %s)", why);
  else
    snprintf(res->reason, sizeof res->reason, "output %d: %s", i + 1,
             unknown_reason(why));
  if (st == BASE_OK && verify_z3_bad()) /* in add_core */
    st = z3_failed(c, d, "reading a proof's core");
  if (st == BASE_OK && r != Z3_L_FALSE)
    res->status = IR_RULE_UNPROVEN;
  if (st == BASE_OK) /* after a failure Z3 may fail again, even abort */
    Z3_solver_pop(c->z, c->s, 1);
  return st;
}

static void blame_generic(verify_result *res, const verify_enc *e) {
  if (res->status != IR_RULE_UNPROVEN || !e->generic[0])
    return;
  char tmp[sizeof res->reason];
  memcpy(tmp, res->reason, sizeof tmp);
  int w = snprintf(res->reason, sizeof res->reason,
                   "unsupported operator %s (congruence only); ", e->generic);
  if (w > 0 && (size_t)w < sizeof res->reason)
    memcpy(res->reason + w, tmp,
           strnlen(tmp, sizeof res->reason - (size_t)w - 1) + 1);
  res->reason[sizeof res->reason - 1] = 0;
}

static base_status prove_outputs(verify_ctx *c, const ir_rule *r, Z3_ast *ts,
                                 Z3_ast *td, verify_result *res, base_diag *d) {
  verify_enc e;
  memset(&e, 0, sizeof e);
  if (verify_moves_wanted(r->src, r->dst) && !(e.moves = verify_moves_new()))
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  base_status se = verify_encode_graph(c, &e, r->src, ts);
  if (se == BASE_OK)
    se = verify_encode_graph(c, &e, r->dst, td);
  verify_moves_free(e.moves); /* its facts are asserted */
  if (se != BASE_OK)
    return z3_failed(c, d, "encoding a rule");
  verify_assert_shapes(c, r->src, ts);
  verify_assert_shapes(c, r->dst, td);
  if (verify_z3_bad())
    return z3_failed(c, d, "encoding a rule");
  base_status st = BASE_OK;
  res->status = IR_RULE_PROVEN; /* until an output pair says otherwise */
  for (int i = 0; st == BASE_OK && i < r->src->noutputs; i++) {
    st = check_output(c, ts[r->src->outputs[i]], td[r->dst->outputs[i]], i, res,
                      d);
    if (res->status == IR_RULE_UNPROVEN)
      break;
  }
  if (st != BASE_OK)
    res->status = IR_RULE_UNPROVEN;
  blame_generic(res, &e);
  return st;
}

static base_status prove(verify_ctx *c, const ir_rule *r, verify_result *res,
                         base_diag *d) {
  double t0 = (base_now() * 1e3);
  verify_z3_reset();
  memset(res, 0, sizeof *res);
  res->status = IR_RULE_UNPROVEN;
  if (!r->src || !r->dst || r->src->noutputs != r->dst->noutputs)
    return base_diag_set(d, BASE_ERR_INTERNAL, 0, 0, "rule %s: malformed",
                         r->id ? r->id : "?");
  if (c->broken)
    return base_diag_set(d, c->broken, 0, 0, "the prover failed earlier (%s)",
                         c->broken == BASE_ERR_NOMEM ? "out of memory"
                                                     : "a Z3 error");
  Z3_ast *ts = base_calloc((size_t)r->src->ntensors + 1, sizeof *ts);
  Z3_ast *td = base_calloc((size_t)r->dst->ntensors + 1, sizeof *td);
  base_status st = BASE_ERR_NOMEM;
  if (ts && td) {
    Z3_solver_push(c->z, c->s);
    st = verify_z3_bad() ? z3_failed(c, d, "checking a rule")
                         : prove_outputs(c, r, ts, td, res, d);
    if (st == BASE_OK)
      Z3_solver_pop(c->z, c->s, 1);
    else /* every error past the push is Z3's: no more calls */
      c->broken = st;
  } else
    base_diag_set(d, st, 0, 0, "out of memory");
  free(ts);
  free(td);
  res->ms = (base_now() * 1e3) - t0;
  return st;
}

base_status verify_prove(verify_ctx *c, const ir_rule *r, verify_result *res,
                         base_diag *d) {
  base_guard_enter(VERIFY_GUARD);
  base_status st = prove(c, r, res, d);
  base_guard_leave();
  return st;
}
