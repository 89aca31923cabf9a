/* test_rules.c: the rule file format (src/ir/rule.c) and the prune stage
 * (src/prune/). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"
#include "prune/prune.h"

/* The prune tests' answers (the tests do not run out of memory). */
#define YES(f)                                                                 \
  static int yes_##f(const ir_rule *r) {                                       \
    int y = 0;                                                                 \
    cr_assert_eq(pr_##f(r, &y), BASE_OK);                                      \
    return y;                                                                  \
  }
YES(is_trivial)
YES(has_common_sub)
YES(has_common_super)

#define RULE(id, st, src, dst)                                                 \
  "rule " id " " st "\nsrc:\n" src "dst:\n" dst "end\n"

static const char *two_rules = "# a header comment\n"
                               "rule r1 proven\n"
                               "axioms: ewadd_comm\n"
                               "note: found by hand\n"
                               "src:\n"
                               "input a: [2,4]\n"
                               "input b: [2,4]\n"
                               "t = ewadd(a, b)\n"
                               "output t\n"
                               "dst:\n"
                               "input a: [2,4]\n"
                               "input b: [2,4]\n"
                               "u = ewadd(b, a)\n"
                               "output u\n"
                               "end\n"
                               "\n"
                               "rule r2 unverified\n"
                               "src:\n"
                               "input q: [4,4]\n"
                               "t = transpose(q) perm=[1,0]\n"
                               "u = transpose(t) perm=[1,0]\n"
                               "output u\n"
                               "dst:\n"
                               "input q: [4,4]\n"
                               "output q\n"
                               "end\n";

static void parse_ok(const char *text, ir_ruleset *rs) {
  base_diag d;
  base_status st = ir_rules_parse(text, strlen(text), "t.rules", rs, &d);
  if (st != BASE_OK)
    base_diag_print(&d, stderr);
  cr_assert_eq(st, BASE_OK);
}

Test(rules, parse_print_roundtrip) {
  ir_ruleset rs, rs2;
  parse_ok(two_rules, &rs);
  cr_assert_eq(rs.n, 2);
  cr_assert_str_eq(rs.rules[0].id, "r1");
  cr_assert_eq(rs.rules[0].status, IR_RULE_PROVEN);
  cr_assert_eq(rs.rules[0].naxioms, 1);
  cr_assert_str_eq(rs.rules[0].axioms[0], "ewadd_comm");
  cr_assert_str_eq(rs.rules[0].note, "found by hand");
  cr_assert_eq(rs.rules[1].status, IR_RULE_UNVERIFIED);
  cr_assert_eq(rs.rules[1].dst->nnodes, 0);
  cr_assert_eq(rs.rules[0].line, 2);
  char *a = ir_rules_print(&rs, "# h\n");
  parse_ok(a, &rs2);
  char *b = ir_rules_print(&rs2, "# h\n");
  cr_assert_str_eq(a, b);
  cr_assert(strstr(a, "rule r2 unverified\nsrc:\ninput q: [4,4]\n"));
  free(a);
  free(b);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&rs2);
}

/* Each bad file with the line:col and message fragment it must produce. */
static const struct {
  const char *text;
  int line, col;
  const char *msg;
} bad[] = {
    {"rule\n", 1, 1, "expected 'rule ID STATUS'"},
    {"rules r1 proven\n", 1, 1, "expected 'rule ID STATUS'"},
    {"rule r1 maybe\nsrc:\n", 1, 9, "unknown status 'maybe'"},
    {"rule r$ proven\n", 1, 6, "bad rule id"},
    {"rule r1 proven\nsrc:\ninput a: [2]\noutput a\n", 4, 1, "missing 'dst:'"},
    {RULE("r1", "proven", "input a: [2]\nt = relu(b)\noutput t\n",
          "input a: [2]\noutput a\n"),
     4, 10, "undefined name 'b'"},
    {RULE("r1", "proven", "input a: [2]\nt = relu(a)\noutput t\n",
          "input a: [3]\noutput a\n"),
     1, 0, "output 1 is [2] in src but [3] in dst"},
    {RULE("r1", "proven", "input a: [2]\nt = relu(a)\noutput t\n",
          "input z: [2]\noutput z\n"),
     7, 7, "dst input 'z' [2] is not an input of src"},
    {RULE("r1", "proven", "input a: [2]\noutput a\n",
          "input a: [2]\noutput a\n")
         RULE("r1", "proven", "input a: [2]\noutput a\n",
              "input a: [2]\noutput a\n"),
     9, 6, "rule 'r1' already defined on line 1"},
    {"rule r1 proven\nbogus\n", 2, 1, "expected 'axioms:', 'note:' or 'src:'"},
    /* what was read before the error is freed (ASan's leak check) */
    {"rule r1 proven\naxioms: a b\nnote: n\n", 3, 1, "ends before 'src:'"},
};

Test(rules, errors_have_positions) {
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ir_ruleset rs;
    base_diag d;
    base_status st =
        ir_rules_parse(bad[i].text, strlen(bad[i].text), "bad.rules", &rs, &d);
    cr_assert_neq(st, BASE_OK, "case %zu parsed", i);
    cr_assert_eq(rs.n, 0);
    cr_assert_str_eq(d.file, "bad.rules", "case %zu", i);
    cr_assert(strstr(d.msg, bad[i].msg), "case %zu: got '%s'", i, d.msg);
    cr_assert_eq(d.line, bad[i].line, "case %zu: line %d", i, d.line);
    if (bad[i].col)
      cr_assert_eq(d.col, bad[i].col, "case %zu: col %d", i, d.col);
  }
}

/* axioms: and note: lines of any length survive a round trip (they were
 * cut at 4,096 bytes without a word); a rule line that long is refused. */
Test(rules, long_lines_not_truncated) {
  base_buf b = {0}, note = {0};
  base_buf_puts(&b, "rule r1 proven\naxioms:");
  for (int i = 0; i < 200; i++)
    base_buf_printf(&b, " axiom_with_a_rather_long_name_%03d", i);
  for (int i = 0; i < 600; i++)
    base_buf_puts(&note, "0123456789");
  base_buf_printf(&b, "\nnote: %s\n", note.s);
  base_buf_puts(&b, "src:\ninput a: [2]\noutput a\ndst:\ninput a: [2]\n"
                    "output a\nend\n");
  cr_assert_gt(b.len, 2 * 4096);
  ir_ruleset rs, rs2;
  parse_ok(b.s, &rs);
  cr_assert_eq(rs.rules[0].naxioms, 200);
  cr_assert_str_eq(rs.rules[0].axioms[199],
                   "axiom_with_a_rather_long_name_199");
  cr_assert_str_eq(rs.rules[0].note, note.s);
  char *a = ir_rules_print(&rs, NULL);
  parse_ok(a, &rs2);
  char *c = ir_rules_print(&rs2, NULL);
  cr_assert_str_eq(a, c);
  free(a);
  free(c);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&rs2);

  base_buf h = {0};
  base_buf_puts(&h, "rule r1 proven");
  for (int i = 0; i < 5000; i++)
    base_buf_puts(&h, " ");
  base_buf_puts(&h, "junk\nsrc:\n");
  base_diag d;
  cr_assert_neq(ir_rules_parse(h.s, h.len, "t.rules", &rs, &d), BASE_OK);
  cr_assert(strstr(d.msg, "line longer than 4095 characters"), "%s", d.msg);
  free(b.s);
  free(note.s);
  free(h.s);
}

/* Found by fuzz_rules: a note of control characters printed as text that
 * parsed to another note; a NUL byte cut a line. Notes are one line of
 * printable text without surrounding blanks; a NUL is an error. */
Test(rules, notes_round_trip_and_nul_refused) {
  static const char note_cr[] = "rule m proven\nnote: \v a\rb\x01 \r\n"
                                "src:\ninput a: [2]\noutput a\n"
                                "dst:\ninput a: [2]\noutput a\nend\n";
  ir_ruleset rs, rs2;
  parse_ok(note_cr, &rs);
  cr_assert_str_eq(rs.rules[0].note, "a b");
  char *a = ir_rules_print(&rs, NULL);
  parse_ok(a, &rs2);
  char *b = ir_rules_print(&rs2, NULL);
  cr_assert_str_eq(a, b);
  free(a);
  free(b);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&rs2);
  static const char lead[] = "rule m proven\nnote:\x01:x\nsrc:\ninput a: [2]\n"
                             "output a\ndst:\ninput a: [2]\noutput a\nend\n";
  parse_ok(lead, &rs);
  cr_assert_str_eq(rs.rules[0].note, ":x");
  ir_ruleset_free(&rs);
  static const char nul[] = "rule m proven\nnote: a\0b\nsrc:\n";
  base_diag d;
  cr_assert_neq(ir_rules_parse(nul, sizeof nul - 1, "t.rules", &rs, &d),
                BASE_OK);
  cr_assert(strstr(d.msg, "a NUL byte"), "%s", d.msg);
  cr_assert_eq(d.line, 2);
  cr_assert_eq(d.col, 8);
}

Test(rules, write_is_atomic_and_stable) {
  ir_ruleset rs;
  base_diag d;
  parse_ok(two_rules, &rs);
  char path[] = "/tmp/superopt_rules_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(ir_rules_write_file(&rs, "# x\n", path, &d), BASE_OK);
  ir_ruleset back;
  cr_assert_eq(ir_rules_read_file(path, &back, &d), BASE_OK);
  cr_assert_eq(back.n, 2);
  cr_assert_neq(ir_rules_write_file(&rs, NULL, "/nonexistent/dir/x.rules", &d),
                BASE_OK);
  remove(path);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&back);
}

/* Writes text to a temporary file and reads it as rules (issue 40: a 0-byte
 * default.rules was read as zero rules). */
static base_status read_text(const char *text, ir_ruleset *rs, base_diag *d) {
  char path[] = "/tmp/superopt_rules_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  base_status st = ir_rules_read_file(path, rs, d);
  cr_expect(!strcmp(d->file, path) || st == BASE_OK, "%s", d->file);
  remove(path);
  return st;
}

Test(rules, a_file_without_rules_needs_the_header) {
  ir_ruleset rs;
  base_diag d = {0};
  cr_expect_eq(read_text("", &rs, &d), BASE_ERR_SYNTAX);
  cr_expect(strstr(d.msg, "empty file (0 bytes)"), "%s", d.msg);
  cr_expect(strstr(d.msg, "# superopt rules v1"), "%s", d.msg);
  cr_expect_eq(read_text("# notes only\n\n", &rs, &d), BASE_ERR_SYNTAX);
  cr_expect(strstr(d.msg, "no rule and no"), "%s", d.msg);
  /* the header says it is a rule file: an empty set */
  cr_assert_eq(read_text("# superopt rules v1\n", &rs, &d), BASE_OK, "%s",
               d.msg);
  cr_expect_eq(rs.n, 0);
  /* and an empty set is written with it, so that it reads back */
  char *t = ir_rules_print(&rs, "# made by a test\n");
  cr_assert(t);
  cr_expect_eq(read_text(t, &rs, &d), BASE_OK, "%s: %s", t, d.msg);
  free(t);
  ir_ruleset_free(&rs);
}

/* ---- lazy reading (ir_rules_read_file_lazy, what optimize uses) ---------*/

/* Writes text to a temporary file (path: its name). */
static void write_tmp(const char *text, char path[]) {
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

/* A good rule, then one whose src fails its shape check (line 11 of the
 * file: the annotation says [3], erf of [2] is [2]). */
static const char lazy_text[] = "# superopt rules v1\n"
                                "rule good proven\n"
                                "src:\n"
                                "input a: [2]\n"
                                "t = relu(a)\n"
                                "output t\n"
                                "dst:\n"
                                "input a: [2]\n"
                                "t = relu(a)\n"
                                "u = relu(t)\n"
                                "output u\n"
                                "end\n"
                                "rule broken proven\n"
                                "src:\n"
                                "input a: [2]\n"
                                "t: [3] = erf(a)\n"
                                "output t\n"
                                "dst:\n"
                                "input a: [2]\n"
                                "output a\n"
                                "end\n";

/* The structure is checked when the file is read; a rule's graphs when it
 * is loaded, with the message and position the whole read gives. */
Test(rules, lazy_read_defers_graphs_with_the_same_errors) {
  char path[] = "/tmp/superopt_lazy_XXXXXX";
  write_tmp(lazy_text, path);
  ir_ruleset eager, rs;
  base_diag de, d;
  cr_assert_neq(ir_rules_read_file(path, &eager, &de), BASE_OK);
  cr_assert_eq(de.line, 16, "%d: %s", de.line, de.msg);
  cr_assert_eq(ir_rules_read_file_lazy(path, &rs, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(rs.n, 2);
  cr_assert(!ir_rule_loaded(&rs.rules[0]) && !ir_rule_loaded(&rs.rules[1]));
  cr_assert_eq(rs.rules[0].ops[0], (uint64_t)1 << IR_OP_RELU);
  cr_assert_eq(rs.rules[1].ops[0], (uint64_t)1 << IR_OP_ERF);
  cr_assert_eq(ir_rule_load(&rs.rules[0], &d), BASE_OK, "%s", d.msg);
  cr_assert(ir_rule_loaded(&rs.rules[0]));
  cr_assert_eq(rs.rules[0].dst->nnodes, 2);
  cr_assert_eq(rs.rules[0].dst->nodes[1].line, 10); /* the file's lines */
  cr_assert_eq(ir_rule_load(&rs.rules[1], &d), de.code);
  cr_assert(!ir_rule_loaded(&rs.rules[1]));
  cr_assert_str_eq(d.file, path);
  cr_assert_str_eq(d.msg, de.msg);
  cr_assert_eq(d.line, de.line);
  cr_assert_eq(d.col, de.col);
  ir_ruleset_free(&rs);
  remove(path);
  /* an unknown operator or a missing 'end' is found when reading */
  const char *bad_op = "rule r proven\nsrc:\ninput a: [2]\nt = frob(a)\n"
                       "output t\ndst:\ninput a: [2]\noutput a\nend\n";
  const char *no_end = "rule r proven\nsrc:\ninput a: [2]\noutput a\ndst:\n"
                       "input a: [2]\noutput a\n";
  const char *texts[] = {bad_op, no_end};
  for (int i = 0; i < 2; i++) {
    char p2[] = "/tmp/superopt_lazy_XXXXXX";
    write_tmp(texts[i], p2);
    cr_assert_neq(ir_rules_read_file(p2, &eager, &de), BASE_OK);
    cr_assert_neq(ir_rules_read_file_lazy(p2, &rs, &d), BASE_OK);
    cr_assert_eq(rs.n, 0);
    cr_assert_str_eq(d.file, p2);
    cr_assert_str_eq(d.msg, de.msg);
    cr_assert_eq(d.line, i ? 7 : 4, "case %d: line %d: %s", i, d.line, d.msg);
    cr_assert_eq(d.line, de.line);
    cr_assert_eq(d.col, de.col);
    remove(p2);
  }
}

/* Every rule of passes.rules loaded lazily is the rule read whole. */
Test(rules, lazy_rules_load_as_read_whole) {
  const char *path = SUPEROPT_SOURCE_DIR "/rules/passes.rules";
  ir_ruleset eager, rs;
  base_diag d;
  cr_assert_eq(ir_rules_read_file(path, &eager, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ir_rules_read_file_lazy(path, &rs, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(rs.n, eager.n);
  for (int i = 0; i < rs.n; i++) {
    cr_assert_eq(ir_rule_load(&rs.rules[i], &d), BASE_OK, "%s", d.msg);
    cr_assert_eq(rs.rules[i].line, eager.rules[i].line);
  }
  char *a = ir_rules_print(&eager, NULL), *b = ir_rules_print(&rs, NULL);
  cr_assert(a && b);
  cr_assert_str_eq(a, b);
  free(a);
  free(b);
  ir_ruleset_free(&eager);
  ir_ruleset_free(&rs);
}

/* ---- prune ----------------------------------------------------------------*/

static ir_ruleset parse_set(const char *text) {
  ir_ruleset rs;
  parse_ok(text, &rs);
  return rs;
}

#define MM2 "input a: [2,4]\ninput b: [2,4]\ninput c: [2,4]\n"

Test(prune, trivial_commutative) {
  ir_ruleset rs = parse_set(two_rules);
  cr_assert(yes_is_trivial(&rs.rules[0])); /* a+b vs b+a */
  cr_assert(!yes_is_trivial(&rs.rules[1]));
  ir_ruleset_free(&rs);
}

Test(prune, common_sub_and_super) {
  ir_ruleset rs = parse_set(
      /* both compute relu(a) on an input: common subgraph */
      RULE("s1", "unverified",
           MM2 "r = relu(a)\nt = ewadd(r, b)\nu = ewadd(t, c)\noutput u\n",
           MM2 "r = relu(a)\nt = ewadd(b, c)\nu = ewadd(r, t)\noutput u\n")
      /* associativity itself: kept */
      RULE("s2", "unverified",
           MM2 "t = ewadd(a, b)\nu = ewadd(t, c)\noutput u\n",
           MM2 "t = ewadd(b, c)\nu = ewadd(a, t)\noutput u\n")
      /* relu(assoc lhs) vs relu(assoc rhs): common supergraph */
      RULE("s3", "unverified",
           MM2 "t = ewadd(a, b)\nu = ewadd(t, c)\nv = relu(u)\noutput v\n",
           MM2 "t = ewadd(b, c)\nu = ewadd(a, t)\nv = relu(u)\noutput v\n"));
  cr_assert(yes_has_common_sub(&rs.rules[0]));
  cr_assert(!yes_has_common_sub(&rs.rules[1]));
  cr_assert(!yes_has_common_super(&rs.rules[1]));
  cr_assert(yes_has_common_super(&rs.rules[2]));
  pr_stats st;
  base_diag d;
  cr_assert_eq(pr_prune(&rs, &st, &d), BASE_OK);
  cr_assert_eq(st.in, 3);
  cr_assert_eq(st.common_sub, 1);
  cr_assert_eq(st.common_super, 1);
  cr_assert_eq(st.out, 1);
  cr_assert_str_eq(rs.rules[0].id, "s2");
  ir_ruleset_free(&rs);
}

Test(prune, renaming_swaps_and_outputs) {
  ir_ruleset rs = parse_set(
      RULE("a1", "unverified",
           MM2 "t = ewadd(a, b)\nu = ewadd(t, c)\noutput u\n",
           MM2 "t = ewadd(b, c)\nu = ewadd(a, t)\noutput u\n")
      /* the same with inputs renamed a->c, c->a */
      RULE("a2", "unverified",
           MM2 "t = ewadd(c, b)\nu = ewadd(t, a)\noutput u\n",
           MM2 "t = ewadd(b, a)\nu = ewadd(c, t)\noutput u\n")
      /* the same with src and dst swapped */
      RULE("a3", "unverified",
           MM2 "t = ewadd(b, c)\nu = ewadd(a, t)\noutput u\n",
           MM2 "t = ewadd(a, b)\nu = ewadd(t, c)\noutput u\n")
      /* a different law over the same inputs (ewmul): kept */
      RULE("a4", "unverified",
           MM2 "t = ewmul(a, b)\nu = ewmul(t, c)\noutput u\n",
           MM2 "t = ewmul(b, c)\nu = ewmul(a, t)\noutput u\n")
      /* matmul is not commutative: argument order is kept in the key */
      RULE("m1", "unverified",
           "input x: [4,4]\ninput y: [4,4]\ninput z: [4,4]\n"
           "t = matmul(x, y)\nu = matmul(t, z)\noutput u\n",
           "input x: [4,4]\ninput y: [4,4]\ninput z: [4,4]\n"
           "t = matmul(y, z)\nu = matmul(x, t)\noutput u\n")
          RULE("m2", "unverified",
               "input x: [4,4]\ninput y: [4,4]\ninput z: [4,4]\n"
               "t = matmul(y, x)\nu = matmul(t, z)\noutput u\n",
               "input x: [4,4]\ninput y: [4,4]\ninput z: [4,4]\n"
               "t = matmul(x, z)\nu = matmul(y, t)\noutput u\n")
              RULE("m3", "unverified",
                   "input x: [4,4]\ninput y: [4,4]\ninput z: [4,4]\n"
                   "t = matmul(x, y)\nu = matmul(t, z)\noutput u\n",
                   "input x: [4,4]\ninput y: [4,4]\ninput z: [4,4]\n"
                   "t = matmul(y, x)\nu = matmul(z, t)\noutput u\n"));
  pr_stats st;
  base_diag d;
  uint64_t k1, k5, k7;
  cr_assert_eq(pr_pair_key(&rs.rules[0], &k1, &d), BASE_OK);
  cr_assert_eq(pr_pair_key(&rs.rules[4], &k5, &d), BASE_OK);
  cr_assert_eq(pr_pair_key(&rs.rules[6], &k7, &d), BASE_OK);
  cr_assert_neq(k1, k5);
  cr_assert_neq(k5, k7);
  cr_assert_eq(pr_prune(&rs, &st, &d), BASE_OK);
  cr_assert_eq(st.renaming, 3, "renaming removed %lld", st.renaming);
  cr_assert_eq(rs.n, 4);
  cr_assert_str_eq(rs.rules[0].id, "a1");
  cr_assert_str_eq(rs.rules[1].id, "a4");
  cr_assert_str_eq(rs.rules[2].id, "m1");
  cr_assert_str_eq(rs.rules[3].id, "m3");
  ir_ruleset_free(&rs);
}

Test(prune, shapes_distinguish_inputs) {
  /* the same term over inputs of different shapes is a different pair */
  ir_ruleset rs =
      parse_set(RULE("p1", "unverified",
                     "input a: [2,4]\nt = relu(a)\nu = relu(t)\noutput u\n",
                     "input a: [2,4]\nt = relu(a)\noutput t\n")
                    RULE("p2", "unverified",
                         "input a: [4,4]\nt = relu(a)\nu = relu(t)\noutput u\n",
                         "input a: [4,4]\nt = relu(a)\noutput t\n"));
  pr_stats st;
  base_diag d;
  cr_assert_eq(pr_prune(&rs, &st, &d), BASE_OK);
  /* both share relu(a) on an input: common subgraph, both dropped */
  cr_assert_eq(st.common_sub, 2);
  ir_ruleset_free(&rs);
  rs = parse_set(RULE("p1", "unverified",
                      "input a: [2,4]\nt = transpose(a) perm=[1,0]\n"
                      "u = transpose(t) perm=[1,0]\noutput u\n",
                      "input a: [2,4]\noutput a\n")
                     RULE("p2", "unverified",
                          "input a: [4,4]\nt = transpose(a) perm=[1,0]\n"
                          "u = transpose(t) perm=[1,0]\noutput u\n",
                          "input a: [4,4]\noutput a\n"));
  cr_assert_eq(pr_prune(&rs, &st, &d), BASE_OK);
  cr_assert_eq(st.out, 2);
  ir_ruleset_free(&rs);
}

Test(prune, swapped_sides_share_a_key) {
  /* conv act=relu == relu(conv), written both ways round and with other
   * input names: one pair (the sides differ in size, so the key must not
   * depend on which side is src) */
  ir_ruleset rs =
      parse_set(RULE("f1", "unverified",
                     "input x: [2,4,5,5]\ninput w: [4,4,3,3]\n"
                     "t = conv2d(x, w) act=relu\noutput t\n",
                     "input x: [2,4,5,5]\ninput w: [4,4,3,3]\n"
                     "t = conv2d(x, w)\nu = relu(t)\noutput u\n")
                    RULE("f2", "unverified",
                         "input a: [2,4,5,5]\ninput k: [4,4,3,3]\n"
                         "t = conv2d(a, k)\nu = relu(t)\noutput u\n",
                         "input a: [2,4,5,5]\ninput k: [4,4,3,3]\n"
                         "t = conv2d(a, k) act=relu\noutput t\n"));
  uint64_t k1, k2;
  base_diag d;
  cr_assert_eq(pr_pair_key(&rs.rules[0], &k1, &d), BASE_OK);
  cr_assert_eq(pr_pair_key(&rs.rules[1], &k2, &d), BASE_OK);
  cr_assert_eq(k1, k2);
  ir_ruleset_free(&rs);
}

/* ---- common context and derivation ---------------------------------------
 */

#include "fingerprint/fp.h"

static int context_of(const ir_rule *r) {
  uint64_t vs[64], vd[64];
  cr_assert_eq(fp_value_hashes(r->src, 1, vs), BASE_OK);
  cr_assert_eq(fp_value_hashes(r->dst, 1, vd), BASE_OK);
  int cc = 0;
  cr_assert_eq(pr_has_common_context(r, vs, vd, &cc), BASE_OK);
  return cc;
}

Test(prune, common_context) {
  ir_ruleset rs = parse_set(
      /* (a+a)*b == (b+b)*a inside the same context: follows from that pair */
      RULE("c1", "unverified",
           MM2 "s = ewadd(a, a)\nt = ewmul(b, s)\nu = relu(t)\n"
               "v = ewadd(c, t)\noutput u, v\n",
           MM2 "s = ewadd(b, b)\nt = ewmul(a, s)\nu = relu(t)\n"
               "v = ewadd(c, t)\noutput u, v\n")
      /* associativity: no intermediate value in common */
      RULE("c2", "unverified",
           MM2 "t = ewadd(a, b)\nu = ewadd(t, c)\noutput u\n",
           MM2 "t = ewadd(b, c)\nu = ewadd(a, t)\noutput u\n")
      /* a common value, but different contexts: relu(t)+c vs relu(c)+t */
      RULE("c3", "unverified",
           MM2 "s = ewadd(a, a)\nt = ewmul(b, s)\nu = relu(t)\n"
               "v = ewadd(u, c)\noutput v\n",
           MM2 "s = ewadd(b, b)\nt = ewmul(a, s)\nu = relu(c)\n"
               "v = ewadd(u, t)\noutput v\n"));
  cr_expect(!yes_has_common_super(&rs.rules[0]));
  cr_expect(context_of(&rs.rules[0]));
  cr_expect(!context_of(&rs.rules[1]));
  cr_expect(!context_of(&rs.rules[2]));
  ir_ruleset_free(&rs);
}

Test(prune, derivation_by_rewriting) {
  ir_ruleset lib = parse_set(RULE(
      "assoc", "proven", MM2 "t = ewadd(a, b)\nu = ewadd(t, c)\noutput u\n",
      MM2 "t = ewadd(b, c)\nu = ewadd(a, t)\noutput u\n"));
  ir_ruleset goals = parse_set(
      /* (a+b)+c == (a+c)+b: associativity and commutativity (free) */
      RULE("g1", "unverified",
           MM2 "t = ewadd(a, b)\nu = ewadd(t, c)\noutput u\n",
           MM2 "t = ewadd(a, c)\nu = ewadd(t, b)\noutput u\n")
      /* relu(a+b) == relu(a)+relu(b) is false: never derived */
      RULE("g2", "unverified", MM2 "t = ewadd(a, b)\nu = relu(t)\noutput u\n",
           MM2 "t = relu(a)\nu = relu(b)\nv = ewadd(t, u)\noutput v\n"));
  pr_lib *l = pr_lib_new(&lib);
  cr_assert(l);
  int found = 0;
  base_diag d;
  cr_assert_eq(pr_derivable(l, &goals.rules[0], 4, 1000, &found, &d), BASE_OK);
  cr_expect(found, "(a+b)+c == (a+c)+b from associativity");
  cr_assert_eq(pr_derivable(l, &goals.rules[1], 4, 1000, &found, &d), BASE_OK);
  cr_expect(!found);
  lib.rules[0].status = IR_RULE_UNVERIFIED; /* unproven rules are not used */
  pr_lib_free(l);
  l = pr_lib_new(&lib);
  cr_assert_eq(pr_derivable(l, &goals.rules[0], 4, 1000, &found, &d), BASE_OK);
  cr_expect(!found);
  pr_lib_free(l);
  ir_ruleset_free(&lib);
  ir_ruleset_free(&goals);
}
