/* test_ruleio.c: rule interop (src/ruleio/).
 *
 * Imports TASO-text rules written for these tests
 * (tests/data/rules/taso_terms.txt) and, where they are beside the source
 * tree, TASO's 931 published text rules and its graph_subst.pb (the tests
 * comparing with those are skipped, with a message, when they are absent),
 * and checks the counts, the rule invariants and that both sides of every
 * imported rule compute the same values on the CPU reference executor (the
 * disagreements found are asserted by id and listed in docs/interop.md);
 * exports as TASO .pb and re-imports (same rules, and `protoc --decode_raw`
 * reads the file when protoc is installed); checks Tensat and JSON output
 * of a small set against expected text; and checks the errors: malformed
 * terms with their line:col, unknown operators (counted, not errors),
 * truncated protobuf.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec.h"
#include "ruleio/ruleio.h"

/* ir_graph_hash's value (the tests do not run out of memory). */
static uint64_t graph_hash(const ir_graph *g) {
  uint64_t h = 0;
  cr_assert_eq(ir_graph_hash(g, &h), BASE_OK);
  return h;
}

#define SRC SUPEROPT_SOURCE_DIR
/* TASO's published rule sets, where the developers keep them
 * (SUPEROPT_SHARED_DIR: ../shared beside the source tree unless configured;
 * absent in a user's clone) */
#define TASO_DIR SUPEROPT_SHARED_DIR "/reference/taso"
#define TASO_TXT TASO_DIR "/taso_rules.txt"
#define TASO_PB TASO_DIR "/graph_subst.pb"
/* TASO-text rules of our own: every term kind, 34 rules and 1 unsupported */
#define OUR_TXT SRC "/tests/data/rules/taso_terms.txt"

static int have_taso(void) {
  return access(TASO_TXT, R_OK) == 0 && access(TASO_PB, R_OK) == 0;
}

/* Skips the calling test when TASO's files are absent. */
static void need_taso(void) {
  if (!have_taso())
    cr_skip_test("TASO's published rule sets not in %s: comparison with "
                 "them skipped",
                 TASO_DIR);
}

static void import_file(const char *path, ir_ruleset *rs, ruleio_stats *st) {
  base_diag d;
  ruleio_stats_init(st);
  base_status s = ruleio_import_taso_text(path, rs, st, &d);
  cr_assert_eq(s, BASE_OK, "%s:%d:%d: %s", d.file, d.line, d.col, d.msg);
}

static void import_text(ir_ruleset *rs, ruleio_stats *st) {
  import_file(TASO_TXT, rs, st);
}

static void import_pb(ir_ruleset *rs, ruleio_stats *st) {
  base_diag d;
  ruleio_stats_init(st);
  base_status s = ruleio_import_taso_pb(TASO_PB, rs, st, &d);
  cr_assert_eq(s, BASE_OK, "%s: %s", d.file, d.msg);
}

/* ---- numeric agreement --------------------------------------------------- */

static int has_op(const ir_rule *r, ir_opcode op) {
  const ir_graph *g[2] = {r->src, r->dst};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < g[k]->nnodes; i++)
      if (g[k]->nodes[i].op == op)
        return 1;
  return 0;
}

static ex_values *run(const ir_graph *g) {
  base_diag d;
  ex_options o = {1, 0};
  ex_values *v = ex_values_new(g);
  cr_assert(v);
  cr_assert_eq(ex_fill_random(g, v, 7, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ex_run(g, v, &o, &d), BASE_OK, "%s", d.msg);
  return v;
}

/* Largest difference of output i relative to the output's largest
 * magnitude (at least 1e-3): below 1e-4 means the sides agree. */
static double rel_err(const ir_rule *r, ex_values *vs, ex_values *vd, int i) {
  const ir_tensor *t = &r->src->tensors[r->src->outputs[i]];
  const float *a = vs->v[r->src->outputs[i]];
  const float *b = vd->v[r->dst->outputs[i]];
  int64_t n = ir_shape_numel(&t->shape);
  double diff = 0, mag = 1e-3;
  for (int64_t k = 0; k < n; k++) {
    diff = fmax(diff, fabs((double)a[k] - b[k]));
    mag = fmax(mag, fabs((double)a[k]));
  }
  return diff / mag;
}

static int rule_agrees(const ir_rule *r) {
  ex_values *vs = run(r->src), *vd = run(r->dst);
  int ok = 1;
  for (int i = 0; i < r->src->noutputs; i++)
    ok &= rel_err(r, vs, vd, i) <= 1e-4;
  ex_values_free(vs);
  ex_values_free(vd);
  return ok;
}

/* Ids of rules whose sides disagree, space-separated (and counted), among
 * rules with (pooled = 1) or without (0) avgpool and const_pool together. */
static int disagreements(const ir_ruleset *rs, int pooled, char *ids,
                         size_t cap) {
  int n = 0;
  ids[0] = 0;
  for (int i = 0; i < rs->n; i++) {
    const ir_rule *r = &rs->rules[i];
    int p = has_op(r, IR_OP_AVGPOOL) && has_op(r, IR_OP_CONST_POOL);
    if (p != pooled || rule_agrees(r))
      continue;
    n++;
    size_t len = strlen(ids);
    snprintf(ids + len, cap - len, "%s%s", len ? " " : "", r->id);
  }
  return n;
}

/* ---- TASO text ----------------------------------------------------------- */

/* Every imported rule keeps the invariants, unverified, with a taso- id. */
static void check_imported(const ir_ruleset *rs) {
  base_diag d;
  for (int i = 0; i < rs->n; i++) {
    const ir_rule *r = &rs->rules[i];
    cr_assert_eq(ir_rule_validate(r, &d), BASE_OK, "%s: %s", r->id, d.msg);
    cr_assert_eq(ir_graph_validate(r->src, &d), BASE_OK, "%s", r->id);
    cr_assert_eq(ir_graph_validate(r->dst, &d), BASE_OK, "%s", r->id);
    cr_assert_eq(r->status, IR_RULE_UNVERIFIED);
    cr_assert(!strncmp(r->id, "taso-", 5));
  }
}

/* Our file: ids are line numbers; the unknown term is counted, not an
 * error. */
Test(taso_text, our_rules_import_counts) {
  ir_ruleset rs;
  ruleio_stats st;
  import_file(OUR_TXT, &rs, &st);
  cr_assert_eq(st.done, 34);
  cr_assert_eq(st.skipped, 1);
  cr_assert_eq(rs.n, 34);
  cr_assert_eq(st.nreasons, 1);
  cr_assert_str_eq(st.reasons[0].what, "unknown term 'Iewmul'");
  cr_assert_eq(st.reasons[0].count, 1);
  cr_assert_eq(st.reasons[0].where[0], 47);
  check_imported(&rs);
  cr_assert_str_eq(rs.rules[0].id, "taso-12");
  cr_assert_str_eq(rs.rules[33].id, "taso-45");
  /* every operator TASO's terms name, constants included */
  static const ir_opcode ops[] = {
      IR_OP_EWADD,     IR_OP_EWMUL,       IR_OP_MATMUL,    IR_OP_SMUL,
      IR_OP_RELU,      IR_OP_TRANSPOSE,   IR_OP_CONV2D,    IR_OP_AVGPOOL,
      IR_OP_MAXPOOL,   IR_OP_CONCAT,      IR_OP_SPLIT,     IR_OP_ENLARGE,
      IR_OP_CONST_IMM, IR_OP_CONST_ICONV, IR_OP_CONST_POOL};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    int seen = 0;
    for (int i = 0; i < rs.n && !seen; i++)
      seen = has_op(&rs.rules[i], ops[k]);
    cr_assert(seen, "no rule with %s", ir_op(ops[k])->name);
  }
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}

Test(taso_text, import_counts) {
  need_taso();
  ir_ruleset rs;
  ruleio_stats st;
  import_text(&rs, &st);
  cr_assert_eq(st.done + st.skipped, 931);
  cr_assert_eq(st.done, 928);
  cr_assert_eq(rs.n, 928);
  cr_assert_eq(st.nreasons, 1);
  cr_assert_str_eq(st.reasons[0].what, "unknown term 'Iewmul'");
  cr_assert_eq(st.reasons[0].count, 3);
  cr_assert_eq(st.reasons[0].where[0], 257);
  cr_assert_eq(st.reasons[0].where[2], 259);
  check_imported(&rs);
  cr_assert_str_eq(rs.rules[0].id, "taso-1");
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}

/* Our identities hold on our executor; the avgpool = conv with Cpool rule
 * (TASO's summing pool) does not. */
Test(taso_text, our_rules_sides_agree) {
  ir_ruleset rs;
  ruleio_stats st;
  char ids[4096];
  import_file(OUR_TXT, &rs, &st);
  int n = disagreements(&rs, 0, ids, sizeof ids);
  cr_assert_eq(n, 0, "%d rules disagree: %s", n, ids);
  n = disagreements(&rs, 1, ids, sizeof ids);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(ids, "taso-45");
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}

Test(taso_text, sides_agree_numerically, .timeout = 120) {
  need_taso();
  ir_ruleset rs;
  ruleio_stats st;
  char ids[4096];
  import_text(&rs, &st);
  /* TASO's fingerprints treat relu as an arbitrary function and its
   * generator's rules may hold only for its shapes; these are the rules
   * whose sides differ on our executor (docs/interop.md). */
  int n = disagreements(&rs, 0, ids, sizeof ids);
  cr_log_info("disagreeing rules: %s", ids);
  cr_assert_eq(n, 0, "%d rules disagree: %s", n, ids);
  /* avgpool divides by the window, TASO's sums: the Cpool rules are false
   * for us (a finding, kept); all of them disagree. */
  int pooled = 0;
  for (int i = 0; i < rs.n; i++)
    pooled += has_op(&rs.rules[i], IR_OP_AVGPOOL) &&
              has_op(&rs.rules[i], IR_OP_CONST_POOL);
  int npool = disagreements(&rs, 1, ids, sizeof ids);
  cr_log_info("%d avgpool+const_pool rules, %d disagree", pooled, npool);
  cr_assert_eq(pooled, 44);
  cr_assert_eq(npool, 44, "%d of 44 disagree: %s", npool, ids);
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}

/* ---- TASO .pb ------------------------------------------------------------ */

Test(taso_pb, import_graph_subst) {
  need_taso();
  ir_ruleset rs;
  ruleio_stats st;
  char ids[4096];
  import_pb(&rs, &st);
  cr_assert_eq(st.done, 133);
  cr_assert_eq(st.skipped, 0);
  cr_assert_eq(rs.n, 133);
  base_diag d;
  for (int i = 0; i < rs.n; i++)
    cr_assert_eq(ir_rule_validate(&rs.rules[i], &d), BASE_OK, "%s: %s",
                 rs.rules[i].id, d.msg);
  /* rule 71: relu(x1), relu(x2) == split(relu(concat(x1, x2))): two
   * outputs, split at the concat's point */
  const ir_rule *r = &rs.rules[70];
  cr_assert_str_eq(r->id, "taso-pb-71");
  cr_assert_eq(r->src->noutputs, 2);
  cr_assert(has_op(r, IR_OP_SPLIT));
  int n = disagreements(&rs, 0, ids, sizeof ids);
  cr_assert_eq(n, 0, "%d rules disagree: %s", n, ids);
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}

/* The TASO-text rules of path exported as TASO .pb, to memory and to a
 * file, and the file imported back: the same n rules; `skipped` more are
 * left out of the export because an output is an input (which TASO's
 * format cannot say). */
static void pb_round_trip(const char *path, int n, int skipped) {
  ir_ruleset rs, back;
  ruleio_stats st, st2;
  base_diag d;
  char *data;
  size_t len;
  import_file(path, &rs, &st);
  ruleio_stats_free(&st);
  ruleio_stats_init(&st);
  cr_assert_eq(ruleio_export_mem(&rs, RULEIO_TASO_PB, RULEIO_EXPORT_ALL, &data,
                                 &len, &st, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_eq(st.done, n);
  cr_assert_eq(st.skipped, skipped);
  char *left_out = calloc((size_t)rs.n + 1, 1);
  for (int i = 0; i < st.nreasons; i++) {
    cr_assert_str_eq(st.reasons[i].what, "an output is an input");
    for (int j = 0; j < st.reasons[i].count; j++)
      left_out[st.reasons[i].where[j] - 1] = 1;
  }
  char tmp[] = "/tmp/test_ruleio_XXXXXX";
  int fd = mkstemp(tmp);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(
      ruleio_export(&rs, RULEIO_TASO_PB, RULEIO_EXPORT_ALL, tmp, NULL, &d),
      BASE_OK);
  if (system("command -v protoc >/dev/null 2>&1") == 0) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "protoc --decode_raw < %s > /dev/null", tmp);
    cr_assert_eq(system(cmd), 0, "protoc --decode_raw rejects the export");
  } else {
    cr_log_warn("no protoc: --decode_raw check skipped");
  }
  ruleio_stats_init(&st2);
  cr_assert_eq(ruleio_import_taso_pb(tmp, &back, &st2, &d), BASE_OK, "%s",
               d.msg);
  unlink(tmp);
  cr_assert_eq(st2.done, n);
  /* the same rules; a constant's shape now travels with it, so it may be
   * built before its sibling: compare graphs, not node order */
  cr_assert_eq(back.n, n);
  for (int i = 0, k = 0; i < rs.n; i++) {
    if (left_out[i])
      continue;
    const ir_rule *a = &rs.rules[i], *b = &back.rules[k++];
    cr_assert_eq(graph_hash(a->src), graph_hash(b->src), "%s src", a->id);
    cr_assert_eq(graph_hash(a->dst), graph_hash(b->dst), "%s dst", a->id);
  }
  free(left_out);
  free(data);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&back);
  ruleio_stats_free(&st);
  ruleio_stats_free(&st2);
}

/* our 34: 5 have an input as an output (transpose(transpose(x)) == x...) */
Test(taso_pb, export_reimport_round_trip) { pb_round_trip(OUR_TXT, 29, 5); }

Test(taso_pb, export_reimport_taso_rules, .timeout = 60) {
  need_taso();
  pb_round_trip(TASO_TXT, 928, 0);
}

/* The whole shipped rule set through TASO's format and back: every rule
 * exported either re-imports as the same rule (same graphs up to names of
 * intermediate tensors: ir_graph_hash; same input names and kinds), or is
 * skipped on export with a stated reason. */
Test(taso_pb, default_rules_round_trip, .timeout = 300) {
  ir_ruleset rs, back;
  ruleio_stats st, st2;
  base_diag d;
  char *data;
  size_t len;
  cr_assert_eq(ir_rules_read_file(SRC "/rules/default.rules", &rs, &d), BASE_OK,
               "%s", d.msg);
  ruleio_stats_init(&st);
  cr_assert_eq(ruleio_export_mem(&rs, RULEIO_TASO_PB, 0, &data, &len, &st, &d),
               BASE_OK, "%s", d.msg);
  int proven = 0;
  for (int i = 0; i < rs.n; i++)
    proven += rs.rules[i].status == IR_RULE_PROVEN;
  cr_assert_eq(st.done + st.skipped, proven);
  cr_assert_gt(st.done, 0);
  char *skipped = calloc((size_t)rs.n + 1, 1);
  for (int i = 0; i < st.nreasons; i++) {
    /* the one thing TASO's format cannot say */
    cr_assert_str_eq(st.reasons[i].what, "an output is an input");
    for (int j = 0; j < st.reasons[i].count; j++)
      skipped[st.reasons[i].where[j] - 1] = 1;
  }
  ruleio_stats_init(&st2);
  cr_assert_eq(ruleio_import_taso_pb_mem((const uint8_t *)data, len, "d.pb",
                                         &back, &st2, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_eq(st2.done, st.done, "re-imported %d of %d", st2.done, st.done);
  cr_assert_eq(st2.skipped, 0);
  int k = 0;
  for (int i = 0; i < rs.n; i++) {
    const ir_rule *a = &rs.rules[i];
    if (a->status != IR_RULE_PROVEN || skipped[i])
      continue;
    const ir_rule *b = &back.rules[k++];
    cr_assert_eq(graph_hash(a->src), graph_hash(b->src), "%s src", a->id);
    cr_assert_eq(graph_hash(a->dst), graph_hash(b->dst), "%s dst", a->id);
    for (int t = 0; t < a->src->ntensors; t++) {
      const ir_tensor *x = &a->src->tensors[t];
      if (x->kind == IR_T_VALUE)
        continue;
      int u = ir_find_tensor(b->src, x->name);
      cr_assert(u >= 0, "%s: input %s lost", a->id, x->name);
      cr_assert_eq(b->src->tensors[u].kind, x->kind);
    }
  }
  cr_assert_eq(k, back.n);
  free(skipped);
  free(data);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&back);
  ruleio_stats_free(&st);
  ruleio_stats_free(&st2);
}

/* Appends a protobuf varint / tag to buf at *n. */
static void pb_varint(uint8_t *buf, size_t *n, uint64_t v) {
  do {
    buf[(*n)++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
}

static void pb_field(uint8_t *buf, size_t *n, int field, const uint8_t *sub,
                     size_t len) {
  pb_varint(buf, n, (uint64_t)field << 3 | 2);
  pb_varint(buf, n, len);
  memcpy(buf + *n, sub, len);
  *n += len;
}

/* A collection of one rule whose both sides are one operator of TASO type
 * `type` on input -7. */
static size_t one_op_rule(uint8_t *out, int type) {
  uint8_t t[32], op[64], mo[16], rule[160];
  size_t nt = 0, nop = 0, nmo = 0, nr = 0, n = 0;
  pb_varint(t, &nt, 1 << 3);
  pb_varint(t, &nt, (uint64_t)(int64_t)-7);
  pb_varint(t, &nt, 2 << 3);
  pb_varint(t, &nt, 0);
  pb_varint(op, &nop, 1 << 3);
  pb_varint(op, &nop, (uint64_t)type);
  pb_field(op, &nop, 2, t, nt);
  for (int f = 1; f <= 4; f++) {
    pb_varint(mo, &nmo, (uint64_t)f << 3);
    pb_varint(mo, &nmo, 0);
  }
  pb_field(rule, &nr, 1, op, nop);
  pb_field(rule, &nr, 2, op, nop);
  pb_field(rule, &nr, 3, mo, nmo);
  pb_field(out, &n, 1, rule, nr);
  return n;
}

Test(taso_pb, hand_made_rules) {
  uint8_t buf[256];
  ir_ruleset rs;
  ruleio_stats st;
  base_diag d;
  ruleio_stats_init(&st);
  size_t n = one_op_rule(buf, 8); /* RELU */
  cr_assert_eq(ruleio_import_taso_pb_mem(buf, n, "m.pb", &rs, &st, &d), BASE_OK,
               "%s", d.msg);
  cr_assert_eq(rs.n, 1);
  cr_assert_eq(rs.rules[0].src->nodes[0].op, IR_OP_RELU);
  cr_assert_eq(rs.rules[0].src->tensors[0].shape.rank, 4); /* input_7 */
  ir_ruleset_free(&rs);
  n = one_op_rule(buf, 11); /* BATCHNORM: unsupported, counted */
  cr_assert_eq(ruleio_import_taso_pb_mem(buf, n, "m.pb", &rs, &st, &d),
               BASE_OK);
  cr_assert_eq(rs.n, 0);
  cr_assert_eq(st.skipped, 1);
  cr_assert_str_eq(st.reasons[0].what, "TASO operator BATCHNORM");
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}

/* Proven rules exported as TASO .pb come back unverified: a .pb carries
 * no proof, so an import claims none (issue 40); optimize refuses them
 * until verify-rules proves them. */
Test(taso_pb, reimported_rules_are_unverified) {
  ir_ruleset rs, back;
  ruleio_stats st;
  base_diag d;
  char *data;
  size_t len;
  cr_assert_eq(ir_rules_read_file(SRC "/tests/data/rules/basic.rules", &rs, &d),
               BASE_OK, "%s", d.msg);
  ruleio_stats_init(&st);
  cr_assert_eq(ruleio_export_mem(&rs, RULEIO_TASO_PB, 0, &data, &len, &st, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_gt(st.done, 0);
  ruleio_stats_free(&st);
  ruleio_stats_init(&st);
  cr_assert_eq(ruleio_import_taso_pb_mem((const uint8_t *)data, len, "b.pb",
                                         &back, &st, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_gt(back.n, 0);
  for (int i = 0; i < back.n; i++)
    cr_assert_eq(back.rules[i].status, IR_RULE_UNVERIFIED, "%s",
                 back.rules[i].id);
  free(data);
  ir_ruleset_free(&rs);
  ir_ruleset_free(&back);
  ruleio_stats_free(&st);
}

/* A .pb cut 3 bytes short is a syntax error saying "truncated". */
static void expect_truncated(const char *data, size_t len) {
  ir_ruleset rs;
  base_diag d;
  base_status s = ruleio_import_taso_pb_mem((const uint8_t *)data, len - 3,
                                            "cut.pb", &rs, NULL, &d);
  cr_assert_eq(s, BASE_ERR_SYNTAX);
  cr_assert_eq(rs.n, 0);
  cr_assert(strstr(d.msg, "truncated"), "%s", d.msg);
  cr_assert_str_eq(d.file, "cut.pb");
}

/* Our rules' export, and TASO's graph_subst.pb where it is. */
Test(taso_pb, truncated_is_an_error) {
  ir_ruleset rs;
  ruleio_stats st;
  base_diag d;
  char *data;
  size_t len;
  import_file(OUR_TXT, &rs, &st);
  cr_assert_eq(ruleio_export_mem(&rs, RULEIO_TASO_PB, RULEIO_EXPORT_ALL, &data,
                                 &len, NULL, &d),
               BASE_OK, "%s", d.msg);
  expect_truncated(data, len);
  free(data);
  if (have_taso()) {
    data = base_read_file(TASO_PB, &len, &d);
    cr_assert(data);
    expect_truncated(data, len);
    free(data);
  }
  ir_ruleset_free(&rs); /* the import below fills rs anew */
  base_status s = ruleio_import_taso_pb_mem((const uint8_t *)"\xff\xff\xff", 3,
                                            "junk.pb", &rs, NULL, &d);
  cr_assert_eq(s, BASE_ERR_SYNTAX);
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}

/* ---- Tensat and JSON ----------------------------------------------------- */

static const char small_rules[] =
    "rule r1 proven\n"
    "axioms: ewadd_comm\n"
    "src:\n"
    "input a: [2,4]\n"
    "input b: [2,4]\n"
    "s = ewadd(a, b)\n"
    "output s\n"
    "dst:\n"
    "input a: [2,4]\n"
    "input b: [2,4]\n"
    "s = ewadd(b, a)\n"
    "output s\n"
    "end\n"
    "rule r2 unverified\n"
    "note: a \"quoted\" note\n"
    "src:\n"
    "input x: [1,4,5,5]\n"
    "input w: [4,4,3,3]\n"
    "c = conv2d(x, w) act=relu\n"
    "p = avgpool(c) kernel=[3,3] pad=same count_include_pad=1\n"
    "output p\n"
    "dst:\n"
    "input x: [1,4,5,5]\n"
    "input w: [4,4,3,3]\n"
    "c = conv2d(x, w)\n"
    "r = relu(c)\n"
    "p = avgpool(r) kernel=[3,3] pad=same count_include_pad=1\n"
    "output p\n"
    "end\n"
    "rule r3 proven\n"
    "src:\n"
    "input a: [2,4]\n"
    "input b: [2,4]\n"
    "k = concat(a, b) axis=1\n"
    "l, m = split(k) axis=1 sizes=[4,4]\n"
    "output l\n"
    "dst:\n"
    "input a: [2,4]\n"
    "output a\n"
    "end\n"
    "rule r4 unverified\n"
    "src:\n"
    "input a: [2,4]\n"
    "input b: [2,4]\n"
    "k = concat(a, b) axis=0\n"
    "r = relu(k)\n"
    "l, m = split(r) axis=0 sizes=[2,2]\n"
    "output l, m\n"
    "dst:\n"
    "input a: [2,4]\n"
    "input b: [2,4]\n"
    "ra = relu(a)\n"
    "rb = relu(b)\n"
    "output ra, rb\n"
    "end\n"
    "rule r5 unverified\n"
    "src:\n"
    "input p: [2,4]\n"
    "input q: [4,3]\n"
    "m = matmul(p, q)\n"
    "t = transpose(m) perm=[1,0]\n"
    "output t\n"
    "dst:\n"
    "input p: [2,4]\n"
    "input q: [4,3]\n"
    "tq = transpose(q) perm=[1,0]\n"
    "tp = transpose(p) perm=[1,0]\n"
    "m = matmul(tq, tp)\n"
    "output m\n"
    "end\n"
    "rule r6 unverified\n"
    "src:\n"
    "input u: [3,3]\n"
    "input v: [3,3]\n"
    "s = ewadd(u, v)\n"
    "output s\n"
    "dst:\n"
    "input u: [3,3]\n"
    "input v: [3,3]\n"
    "s = ewadd(v, u)\n"
    "output s\n"
    "end\n"
    "rule r7 unverified\n"
    "src:\n"
    "input y: [2,4]\n"
    "input z: [4,3]\n"
    "m = matmul(y, z)\n"
    "t = transpose(m) perm=[1,0]\n"
    "output t\n"
    "dst:\n"
    "input y: [2,4]\n"
    "input z: [4,3]\n"
    "tz = transpose(z) perm=[1,0]\n"
    "ty = transpose(y) perm=[1,0]\n"
    "m = matmul(tz, ty)\n"
    "output m\n"
    "end\n";

static void small_set(ir_ruleset *rs) {
  base_diag d;
  cr_assert_eq(
      ir_rules_parse(small_rules, strlen(small_rules), "small.rules", rs, &d),
      BASE_OK, "%d:%d: %s", d.line, d.col, d.msg);
}

static char *export_str(const ir_ruleset *rs, ruleio_format f, int flags,
                        ruleio_stats *st) {
  char *s;
  size_t len;
  base_diag d;
  ruleio_stats_init(st);
  cr_assert_eq(ruleio_export_mem(rs, f, flags, &s, &len, st, &d), BASE_OK, "%s",
               d.msg);
  cr_assert_eq(strlen(s), len);
  return s;
}

Test(export, tensat_text) {
  ir_ruleset rs;
  ruleio_stats st;
  small_set(&rs);
  /* Tensat's current syntax (its src/model.rs): matmul and conv2d carry an
   * activation, pools take the input first and end with an activation,
   * concat carries ndim; no newline after the last line */
  char *s = export_str(&rs, RULEIO_TENSAT, RULEIO_EXPORT_ALL, &st);
  cr_assert_str_eq(s, "(ewadd ?a ?b)=>(ewadd ?b ?a)\n"
                      "(poolavg (conv2d 1 1 0 2 ?x ?w) 3 3 1 1 0 0)=>"
                      "(poolavg (relu (conv2d 1 1 0 0 ?x ?w)) 3 3 1 1 0 0)\n"
                      "(split_0 (split 1 (concat 1 2 ?a ?b)))=>?a\n"
                      "(transpose (matmul 0 ?p ?q) 1_0 0)=>"
                      "(matmul 0 (transpose ?q 1_0 0) (transpose ?p 1_0 0))");
  cr_assert_eq(st.done, 4);
  cr_assert_eq(st.skipped, 3);
  cr_assert_eq(st.nreasons, 2);
  cr_assert_str_eq(st.reasons[0].what,
                   "two outputs (written by --format tensat-multi)");
  cr_assert_eq(st.reasons[0].where[0], 4);
  cr_assert_str_eq(st.reasons[1].what,
                   "same as an earlier rule once variables are renamed");
  cr_assert_eq(st.reasons[1].count, 2); /* r6 is r1 renamed, r7 is r5 */
  cr_assert_eq(st.reasons[1].where[0], 6);
  free(s);
  ruleio_stats_free(&st);
  s = export_str(&rs, RULEIO_TENSAT, 0, &st); /* proven only */
  cr_assert_str_eq(s, "(ewadd ?a ?b)=>(ewadd ?b ?a)\n"
                      "(split_0 (split 1 (concat 1 2 ?a ?b)))=>?a");
  cr_assert_eq(st.filtered, 5);
  free(s);
  ruleio_stats_free(&st);
  /* the two-output rule goes to the multi-pattern file, two lines */
  s = export_str(&rs, RULEIO_TENSAT_MULTI, RULEIO_EXPORT_ALL, &st);
  cr_assert_str_eq(s, "(split_0 (split 0 (relu (concat 0 2 ?a ?b))))=>"
                      "(relu ?a)\n"
                      "(split_1 (split 0 (relu (concat 0 2 ?a ?b))))=>"
                      "(relu ?b)");
  cr_assert_eq(st.done, 1);
  free(s);
  ruleio_stats_free(&st);
  ir_ruleset_free(&rs);
}

Test(export, tensat_unsupported) {
  static const char text[] =
      "rule s1 proven\nsrc:\ninput a: [2,4]\ninput s: []\n"
      "m = smul(a, s)\noutput m\ndst:\ninput a: [2,4]\ninput s: []\n"
      "m = smul(a, s)\noutput m\nend\n"
      "rule s2 proven\nsrc:\ninput w: [4,4,1,1]\n"
      "e = enlarge(w) kernel=[3,3]\noutput e\ndst:\ninput w: [4,4,1,1]\n"
      "e = enlarge(w) kernel=[3,3]\noutput e\nend\n"
      "rule s3 proven\nsrc:\ninput a: [2,4]\nr = relu(a)\noutput r, a\n"
      "dst:\ninput a: [2,4]\nt = transpose(a) perm=[1,0]\n"
      "u = transpose(t) perm=[1,0]\nr = relu(u)\noutput r, a\nend\n";
  ir_ruleset rs;
  ruleio_stats st;
  base_diag d;
  cr_assert_eq(ir_rules_parse(text, strlen(text), "u.rules", &rs, &d), BASE_OK,
               "%d:%d: %s", d.line, d.col, d.msg);
  /* s3's second output is its input on both sides: left out, so the rule
   * has one output */
  char *s = export_str(&rs, RULEIO_TENSAT, 0, &st);
  cr_assert_str_eq(s, "(relu ?a)=>(relu (transpose (transpose ?a 1_0 0) "
                      "1_0 0))");
  cr_assert_eq(st.done, 1);
  cr_assert_eq(st.skipped, 2);
  cr_assert(strstr(st.reasons[0].what, "smul: in Tensat's language but not "
                                       "in its shape analysis"));
  cr_assert(strstr(st.reasons[1].what, "enlarge: no input of the enlarged "
                                       "kernel size"));
  free(s);
  ruleio_stats_free(&st);
  ir_ruleset_free(&rs);
}

Test(export, json_text) {
  ir_ruleset rs;
  ruleio_stats st;
  small_set(&rs);
  /* only r1 and r2 */
  rs.rules[2].status = rs.rules[3].status = IR_RULE_UNPROVEN;
  rs.rules[1].status = IR_RULE_PROVEN;
  char *s = export_str(&rs, RULEIO_JSON, 0, &st);
  cr_assert_str_eq(
      s,
      "{\n"
      "  \"format\": \"superopt-rules\",\n"
      "  \"version\": 1,\n"
      "  \"rules\": [\n"
      "    {\"id\": \"r1\", \"status\": \"proven\", \"axioms\": "
      "[\"ewadd_comm\"], \"note\": null,\n"
      "     \"src\": {\"inputs\": [{\"name\": \"a\", \"kind\": \"input\", "
      "\"shape\": [2, 4]}, {\"name\": \"b\", \"kind\": \"input\", \"shape\": "
      "[2, 4]}], \"nodes\": [{\"op\": \"ewadd\", \"inputs\": [\"a\", \"b\"], "
      "\"outputs\": [{\"name\": \"s\", \"shape\": [2, 4]}], \"params\": {}}], "
      "\"outputs\": [\"s\"]},\n"
      "     \"dst\": {\"inputs\": [{\"name\": \"a\", \"kind\": \"input\", "
      "\"shape\": [2, 4]}, {\"name\": \"b\", \"kind\": \"input\", \"shape\": "
      "[2, 4]}], \"nodes\": [{\"op\": \"ewadd\", \"inputs\": [\"b\", \"a\"], "
      "\"outputs\": [{\"name\": \"s\", \"shape\": [2, 4]}], \"params\": {}}], "
      "\"outputs\": [\"s\"]}},\n"
      "    {\"id\": \"r2\", \"status\": \"proven\", \"axioms\": [], \"note\": "
      "\"a \\\"quoted\\\" note\",\n"
      "     \"src\": {\"inputs\": [{\"name\": \"x\", \"kind\": \"input\", "
      "\"shape\": [1, 4, 5, 5]}, {\"name\": \"w\", \"kind\": \"input\", "
      "\"shape\": [4, 4, 3, 3]}], \"nodes\": [{\"op\": \"conv2d\", "
      "\"inputs\": [\"x\", \"w\"], \"outputs\": [{\"name\": \"c\", \"shape\": "
      "[1, 4, 5, 5]}], \"params\": {\"stride\": [1, 1], \"pad\": \"same\", "
      "\"dilation\": [1, 1], \"groups\": 1, \"act\": \"relu\"}}, {\"op\": "
      "\"avgpool\", \"inputs\": [\"c\"], \"outputs\": [{\"name\": \"p\", "
      "\"shape\": [1, 4, 5, 5]}], \"params\": {\"kernel\": [3, 3], "
      "\"stride\": [1, 1], \"pad\": \"same\", \"count_include_pad\": 1}}], "
      "\"outputs\": [\"p\"]},\n"
      "     \"dst\": {\"inputs\": [{\"name\": \"x\", \"kind\": \"input\", "
      "\"shape\": [1, 4, 5, 5]}, {\"name\": \"w\", \"kind\": \"input\", "
      "\"shape\": [4, 4, 3, 3]}], \"nodes\": [{\"op\": \"conv2d\", "
      "\"inputs\": [\"x\", \"w\"], \"outputs\": [{\"name\": \"c\", \"shape\": "
      "[1, 4, 5, 5]}], \"params\": {\"stride\": [1, 1], \"pad\": \"same\", "
      "\"dilation\": [1, 1], \"groups\": 1, \"act\": \"none\"}}, {\"op\": "
      "\"relu\", \"inputs\": [\"c\"], \"outputs\": [{\"name\": \"r\", "
      "\"shape\": [1, 4, 5, 5]}], \"params\": {}}, {\"op\": \"avgpool\", "
      "\"inputs\": [\"r\"], \"outputs\": [{\"name\": \"p\", \"shape\": [1, "
      "4, 5, 5]}], \"params\": {\"kernel\": [3, 3], \"stride\": [1, 1], "
      "\"pad\": \"same\", \"count_include_pad\": 1}}], \"outputs\": "
      "[\"p\"]}}\n"
      "  ]\n"
      "}\n");
  cr_assert_eq(st.done, 2);
  cr_assert_eq(st.filtered, 5);
  free(s);
  ruleio_stats_free(&st);
  ir_ruleset_free(&rs);
}

/* ---- errors -------------------------------------------------------------- */

static base_diag text_err(const char *text) {
  ir_ruleset rs;
  base_diag d;
  base_status s =
      ruleio_import_taso_text_mem(text, strlen(text), "bad.txt", &rs, NULL, &d);
  cr_assert_neq(s, BASE_OK, "expected an error for: %s", text);
  cr_assert_eq(rs.n, 0);
  cr_assert_str_eq(d.file, "bad.txt");
  return d;
}

static void expect_err(const char *text, int line, int col, const char *msg) {
  base_diag d = text_err(text);
  cr_assert_eq(d.line, line, "%s: line %d", text, d.line);
  cr_assert_eq(d.col, col, "%s: col %d (%s)", text, d.col, d.msg);
  cr_assert(strstr(d.msg, msg), "message '%s' lacks '%s'", d.msg, msg);
}

Test(taso_text, a_false_rule_disagrees) {
  const char *text = "relu(input_1) == input_1\n"
                     "smul(input_1,input_20) == smul(input_2,input_20)\n"
                     "ewadd(input_1,input_2) == ewadd(input_2,input_1)\n";
  ir_ruleset rs;
  base_diag d;
  cr_assert_eq(
      ruleio_import_taso_text_mem(text, strlen(text), "f.txt", &rs, NULL, &d),
      BASE_OK);
  cr_assert_eq(rs.n, 3);
  cr_assert(!rule_agrees(&rs.rules[0]));
  cr_assert(!rule_agrees(&rs.rules[1]));
  cr_assert(rule_agrees(&rs.rules[2]));
  ir_ruleset_free(&rs);
}

Test(taso_text, malformed_terms) {
  expect_err("relu(input_1 == relu(input_1)\n", 1, 14, "expected ')'");
  expect_err("ewadd(input_1,input_2) == ewadd(input_2,input_1)\n"
             "matmul(input_1,input_4) = input_1\n",
             2, 25, "expected '=='");
  expect_err("conv2d(1,x,0,0,input_7,input_10) == input_7\n", 1, 10,
             "expected an integer");
  expect_err("relu(input_1) == relu(input_1) x\n", 1, 32, "unexpected text");
  expect_err("relu(input_0) == input_1\n", 1, 6, "bad input name");
  expect_err("relu() == input_1\n", 1, 6, "expected a term");
  expect_err("concat(0,input_1) == input_1\n", 1, 17, "takes 3 arguments");
  expect_err("# comment\n\nrelu(input_1) ==\n", 3, 17, "expected a term");
  char deep[3000] = "";
  for (int i = 0; i < 250; i++)
    strcat(deep, "relu(");
  strcat(deep, "input_1\n");
  expect_err(deep, 1, 1001, "nested more than 200 deep");
}

/* Byte-wise mutations of real rule lines (of path, at least 1200 bytes):
 * never a crash, and whatever is imported keeps the rule invariants. */
static void mutate_lines(const char *path) {
  size_t len;
  base_diag d;
  char *text = base_read_file(path, &len, &d);
  cr_assert(text, "%s: %s", path, d.msg);
  cr_assert_gt(len, 1800);
  uint64_t x = 12345;
  const char alphabet[] = "(),=_0123456789 input_relu\nIconvsplit_1";
  for (int iter = 0; iter < 400; iter++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t start = (size_t)(x >> 33) % (len - 1200);
    while (text[start++] != '\n') /* from a line's start */
      ;
    char chunk[600];
    size_t tail = 0;
    memcpy(chunk, text + start, sizeof chunk);
    for (int k = 0; k < 3; k++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      chunk[(x >> 33) % sizeof chunk] =
          alphabet[(x >> 20) % (sizeof alphabet - 1)];
    }
    ir_ruleset rs;
    while (chunk[sizeof chunk - 1 - tail] != '\n') /* whole lines */
      tail++;
    if (ruleio_import_taso_text_mem(chunk, sizeof chunk - tail, "m.txt", &rs,
                                    NULL, &d) != BASE_OK) {
      cr_assert(d.line >= 1 && d.col >= 1, "error without position: %s", d.msg);
      continue;
    }
    for (int i = 0; i < rs.n; i++)
      cr_assert_eq(ir_rule_validate(&rs.rules[i], &d), BASE_OK, "%s", d.msg);
    ir_ruleset_free(&rs);
  }
  free(text);
}

Test(taso_text, mutations_never_break_invariants, .timeout = 60) {
  mutate_lines(OUR_TXT);
  if (have_taso())
    mutate_lines(TASO_TXT);
}

Test(taso_text, unsupported_rules_are_counted) {
  const char *text = "foo(1,input_1) == relu(input_1)\n"
                     "relu(input_1) == relu(input_1)\n"
                     "matmul(input_4,input_1) == input_1\n"
                     "split_0(1,relu(input_1)) == input_1\n"
                     "relu(Iconv(3,3)) == relu(Iconv(3,3))\n";
  ir_ruleset rs;
  ruleio_stats st;
  base_diag d;
  ruleio_stats_init(&st);
  cr_assert_eq(
      ruleio_import_taso_text_mem(text, strlen(text), "u.txt", &rs, &st, &d),
      BASE_OK, "%d:%d: %s", d.line, d.col, d.msg);
  cr_assert_eq(rs.n, 1);
  cr_assert_str_eq(rs.rules[0].id, "taso-2");
  cr_assert_eq(st.done, 1);
  cr_assert_eq(st.skipped, 4);
  const char *want[4] = {"unknown term 'foo'", "shape error in matmul",
                         "split without a matching concat",
                         "cannot infer the shape of Iconv"};
  for (int i = 0; i < 4; i++) {
    cr_assert_str_eq(st.reasons[i].what, want[i]);
    cr_assert_eq(st.reasons[i].where[0], i == 0 ? 1 : i + 2);
  }
  ir_ruleset_free(&rs);
  ruleio_stats_free(&st);
}
