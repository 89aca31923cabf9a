/* reprove.c: the rules a search applied, proven again before its result is
 * trusted (rewrite_reprove).
 *
 * A rule file's status line is a claim: a file edited by hand, or a rule
 * set given through $SUPEROPT_RULES or the C API, may say `proven` of a
 * rule that is false. The optimizer compiles only rules labelled proven,
 * so this is where the label is checked: every distinct rule the result
 * used goes to the verifier once (a few milliseconds each); one that the
 * verifier does not prove is demoted, its directions disabled for every
 * later search (rewrite_cpat.off), and the caller optimizes again without
 * it. docs/verify.md ("Trusting the status line").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../verify/verify.h"
#include "rewrite_int.h"

enum { RP_NEW, RP_PROVEN, RP_DEMOTED, RP_UNPROVEN };

/* Disables the directions of r whose rule is rule (the same ir_rule); a
 * rule not loaded yet is marked loaded, so that it never is. */
static void disable(rewrite_rules *r, const ir_rule *rule) {
  if (!r || rule < r->rs->rules || rule >= r->rs->rules + r->rs->n)
    return;
  int i = (int)(rule - r->rs->rules);
  r->dirs[2 * i].cp.off = r->dirs[2 * i + 1].cp.off = 1;
  r->loaded[i] = 1;
}

static base_status demote(rewrite_reproof *p, rewrite_rules *r,
                          rewrite_rules *also, int i, const char *why,
                          base_diag *d) {
  rewrite_demotion *v =
      base_realloc(p->demoted, sizeof *v * ((size_t)p->ndemoted + 1));
  if (!v)
    return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  p->demoted = v;
  v[p->ndemoted].rule = i;
  snprintf(v[p->ndemoted].reason, sizeof v->reason, "%.200s", why);
  p->ndemoted++;
  p->state[i] = RP_DEMOTED;
  disable(r, &r->rs->rules[i]);
  disable(also, &r->rs->rules[i]);
  return BASE_OK;
}

/* Proves rule i again; demotes it when the proof fails. */
static base_status reprove_one(rewrite_reproof *p, verify_ctx *vc,
                               rewrite_rules *r, rewrite_rules *also, int i,
                               int *ndemoted, base_diag *d) {
  verify_result res;
  base_diag vd;
  double t0 = base_now();
  base_status st = verify_prove(vc, &r->rs->rules[i], &res, &vd);
  p->ms += 1e3 * (base_now() - t0);
  if (st == BASE_ERR_NOMEM)
    return base_diag_set(d, st, 0, 0, "out of memory");
  if (!st && res.status == IR_RULE_PROVEN) {
    p->state[i] = RP_PROVEN;
    p->reproved++;
    return BASE_OK;
  }
  (*ndemoted)++;
  return demote(p, r, also, i, st ? vd.msg : res.reason, d);
}

base_status rewrite_reprove(rewrite_reproof *p, rewrite_rules *r,
                            rewrite_rules *also, const int *fw, const int *bw,
                            int *ndemoted, base_diag *d) {
  const ir_ruleset *rs = r->rs;
  *ndemoted = 0;
  if (!p->state) {
    if (!(p->state = base_calloc((size_t)rs->n + 1, 1)))
      return base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
    p->nrules = rs->n;
  }
  verify_ctx *vc = NULL;
  base_status st = BASE_OK;
  for (int i = 0; !st && i < rs->n && i < p->nrules; i++) {
    if (p->state[i] != RP_NEW || !(fw[i] + bw[i]))
      continue;
    if (rs->rules[i].status != IR_RULE_PROVEN) {
      p->state[i] = RP_UNPROVEN;
      p->unproven++;
      continue;
    }
    if (!vc && !(vc = verify_new(&(verify_opts){0})))
      st = base_diag_set(d, BASE_ERR_INTERNAL, 0, 0,
                         "cannot start the verifier (Z3) to re-prove the "
                         "applied rules");
    if (!st)
      st = reprove_one(p, vc, r, also, i, ndemoted, d);
  }
  verify_free(vc);
  return st;
}

void rewrite_reproof_free(rewrite_reproof *p) {
  free(p->demoted);
  free(p->state);
  memset(p, 0, sizeof *p);
}
