/* prove_all.c: gen_verify_all, proving every rule of a set with one Z3
 * context per thread (rules handed out one at a time: proof times vary by
 * orders of magnitude). Results land in the rules themselves, so the order
 * of the set and its file do not depend on the thread count.
 */
#include <omp.h>

#include "../verify/verify.h"
#include "gen.h"

base_status gen_verify_all(ir_ruleset *rs, unsigned timeout_ms, int threads,
                           gen_progress_fn progress, void *u, long long *proven,
                           long long *unproven, base_diag *d) {
  base_status status = BASE_OK;
  long long done = 0;
  verify_opts o = {timeout_ms};
  if (threads <= 0)
    threads = omp_get_num_procs();
#pragma omp parallel num_threads(threads)
  {
    base_diag local = {0};
    verify_ctx *c = verify_new_with(&o, NULL, 0, 0, &local);
    if (!c) {
#pragma omp critical
      {
        if (status == BASE_OK) {
          *d = local;
          status = local.code ? local.code : BASE_ERR_INTERNAL;
        }
      }
    }
#pragma omp for schedule(dynamic, 1)
    for (int i = 0; i < rs->n; i++) {
      if (!c || status != BASE_OK)
        continue;
      ir_rule *r = &rs->rules[i];
      verify_result res;
      if (verify_prove(c, r, &res, &local) != BASE_OK) {
#pragma omp critical
        {
          if (status == BASE_OK) {
            *d = local;
            status = local.code ? local.code : BASE_ERR_INTERNAL;
          }
        }
        continue;
      }
      r->status = res.status;
      base_status st = ir_rule_set_axioms(r, res.core, res.ncore);
      if (!st)
        st = ir_rule_set_note(r,
                              res.status == IR_RULE_PROVEN ? NULL : res.reason);
#pragma omp critical
      {
        if (st && status == BASE_OK)
          status = base_diag_set(d, st, 0, 0, "out of memory");
        done++;
        if (progress && (omp_get_thread_num() == 0 || done == rs->n))
          progress(u, "verify", (double)done, (double)rs->n);
      }
    }
    verify_free(c);
  }
  *proven = *unproven = 0;
  for (int i = 0; i < rs->n; i++)
    rs->rules[i].status == IR_RULE_PROVEN ? (*proven)++ : (*unproven)++;
  return status;
}
