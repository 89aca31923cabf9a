/* test_gen.c: the rule-generation pipeline as a library call: gen_rules
 * writes what it counts, refuses bad options with BASE_ERR_PARAM, stops on
 * the interrupt flag with nothing written; gen_compare of a library with
 * itself finds every rule. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "gen/gen.h"

static gen_options small(const char *out) {
  gen_options o = {0};
  o.max_ops = 2;
  o.ops = "matmul,transpose";
  o.pairs = FP_PAIRS_SPANNING;
  o.threads = 1;
  o.output = out;
  return o;
}

Test(gen, rules_written_as_counted) {
  char out[] = "/tmp/test_gen_XXXXXX";
  int fd = mkstemp(out);
  cr_assert(fd >= 0);
  close(fd);
  gen_options o = small(out);
  gen_stats st;
  base_diag d = {0};
  cr_assert_eq(gen_rules(&o, &st, &d), BASE_OK, "%s", d.msg);
  cr_assert_gt(st.written, 0);
  cr_assert_eq(st.written, st.proven);
  cr_assert_eq(st.nranks, 1);
  cr_assert_eq(st.ranks[0].graphs, st.fp.graphs);
  ir_ruleset rs;
  cr_assert_eq(ir_rules_read_file(out, &rs, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(rs.n, st.written);
  gen_compare_options co = {2, 0, 1, NULL, NULL};
  gen_compare_stats cs;
  cr_assert_eq(gen_compare(&rs, &rs, &co, &cs, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(cs.found, rs.n);
  cr_assert_eq(cs.missing, 0);
  ir_ruleset_free(&rs);
  gen_stats_free(&st);
  unlink(out);
}

Test(gen, bad_options) {
  gen_options o = small("/tmp/unused.rules");
  base_diag d = {0};
  o.max_ops = 5;
  o.ops = NULL; /* every operator at 5: refused */
  cr_assert_eq(gen_options_check(&o, &d), BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "--max-ops 5 needs --ops"), "%s", d.msg);
  o = small("/tmp/unused.rules");
  o.ops = "matmul,frobnicate";
  cr_assert_eq(gen_options_check(&o, &d), BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "frobnicate"), "%s", d.msg);
}

Test(gen, interrupt_writes_nothing) {
  const char *out = "/tmp/test_gen_interrupted.rules";
  unlink(out);
  static volatile sig_atomic_t stop = 1;
  gen_options o = small(out);
  o.interrupt = &stop;
  gen_stats st;
  base_diag d = {0};
  cr_assert_eq(gen_rules(&o, &st, &d), BASE_ERR_INTERRUPTED);
  cr_assert_eq(access(out, F_OK), -1, "an interrupted run wrote %s", out);
  gen_stats_free(&st);
}
