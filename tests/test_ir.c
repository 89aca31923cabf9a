/* test_ir.c: the IR, the .graph parser and printer, shape inference and the
 * structural hash.
 *
 * Round trips every graph in models/ and tests/data/good/; checks one error
 * per error class with its message and position through the corpus in
 * tests/data/bad/ (each file's first line says "# expect: L:C: text");
 * mutates valid files byte by byte (seeded) to make sure the parser never
 * crashes and never returns a graph that breaks the IR's invariants.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/ir_int.h"

/* ir_graph_hash's value (the tests do not run out of memory). */
static uint64_t graph_hash(const ir_graph *g) {
  uint64_t h = 0;
  cr_assert_eq(ir_graph_hash(g, &h), BASE_OK);
  return h;
}

#define SRC SUPEROPT_SOURCE_DIR

static char *slurp(const char *path, size_t *len) {
  base_diag d;
  char *s = base_read_file(path, len, &d);
  cr_assert(s, "cannot read %s: %s", path, d.msg);
  return s;
}

static ir_graph *parse_ok(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
  cr_assert(g, "parse failed: %s:%d:%d: %s", d.file, d.line, d.col, d.msg);
  cr_assert_eq(ir_graph_validate(g, &d), BASE_OK, "invalid: %s", d.msg);
  return g;
}

static base_diag parse_err(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
  cr_assert_null(g, "expected an error for:\n%s", text);
  return d;
}

/* print(parse(x)) twice; the second round trip must be byte-identical. */
static void check_round_trip(const char *path) {
  size_t len;
  char *text = slurp(path, &len);
  base_diag d;
  ir_graph *g1 = ir_parse(text, len, path, &d);
  cr_assert(g1, "%s:%d:%d: %s", path, d.line, d.col, d.msg);
  cr_assert_eq(ir_graph_validate(g1, &d), BASE_OK, "%s: %s", path, d.msg);
  char *p1 = ir_print(g1);
  ir_graph *g2 = ir_parse(p1, strlen(p1), "print1", &d);
  cr_assert(g2, "reparse of %s failed: %d:%d: %s", path, d.line, d.col, d.msg);
  char *p2 = ir_print(g2);
  cr_assert_str_eq(p1, p2, "second round trip of %s differs", path);
  cr_assert_eq(graph_hash(g1), graph_hash(g2));
  free(p1);
  free(p2);
  free(text);
  ir_graph_free(g1);
  ir_graph_free(g2);
}

static int has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Calls fn on every *.graph file in dir; returns how many. */
static int each_graph(const char *dir, void (*fn)(const char *)) {
  DIR *dp = opendir(dir);
  cr_assert(dp, "cannot open %s", dir);
  int n = 0;
  struct dirent *e;
  char path[1024];
  while ((e = readdir(dp))) {
    if (!has_suffix(e->d_name, ".graph"))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    fn(path);
    n++;
  }
  closedir(dp);
  return n;
}

Test(roundtrip, models) {
  cr_assert_geq(each_graph(SRC "/models", check_round_trip), 1);
}

Test(roundtrip, good_corpus) {
  cr_assert_geq(each_graph(SRC "/tests/data/good", check_round_trip), 1);
}

Test(roundtrip, canonical_form) {
  const char *in = "# a comment line\n"
                   "graph g   # trailing comment\n"
                   "input x: [1,3,8,8]\n"
                   "weight w: [4,3,3,3]\n"
                   "y = relu(c)\n"
                   "c: [1,4,8,8] = conv2d(x, w) act=relu stride=[1,1]\n"
                   "l, r = split(y) axis=-3 sizes=[1,3]\n"
                   "output l\n"
                   "output r\n";
  const char *want =
      "graph g\n"
      "input x: [1,3,8,8]\n"
      "weight w: [4,3,3,3]\n"
      "c: [1,4,8,8] = conv2d(x, w) act=relu\n"
      "y: [1,4,8,8] = relu(c)\n"
      "l: [1,1,8,8], r: [1,3,8,8] = split(y) axis=1 sizes=[1,3]\n"
      "output l, r\n";
  ir_graph *g = parse_ok(in);
  char *p = ir_print(g);
  cr_assert_str_eq(p, want);
  free(p);
  ir_graph_free(g);
}

Test(roundtrip, params_print_exactly) {
  const char *in =
      "input x: [1,2,9,9]\n"
      "a: [1,2,4,4] = avgpool(x) kernel=[3,3] stride=[2,2] pad=[1,1,0,0] "
      "count_include_pad=0\n"
      "b: [1,2,9,9] = clip(x) min=-0.100000001 max=6\n"
      "c: [1,2,9,9] = layernorm(x) axis=2 eps=9.99999997e-07\n"
      "d: [162] = reshape(x) shape=[162]\n"
      "e: [1,2,11,10] = pad(x) pads=[0,0,1,0,0,0,1,1] value=-3.5\n"
      "f: [1,1,2,9] = slice(x) starts=[0,1,3,0] ends=[1,2,5,9]\n"
      "output a, b, c, d, e, f\n";
  ir_graph *g = parse_ok(in);
  char *p = ir_print(g);
  cr_assert_str_eq(p, in);
  free(p);
  ir_graph_free(g);
}

Test(parse, reshape_infers_minus_one) {
  ir_graph *g =
      parse_ok("input x: [2,3,4]\ny = reshape(x) shape=[-1,4]\noutput y\n");
  cr_assert_eq(g->tensors[1].shape.rank, 2);
  cr_assert_eq(g->tensors[1].shape.dim[0], 6);
  ir_graph_free(g);
}

Test(parse, keyword_names_are_names) {
  ir_graph *g = parse_ok("input input: [2]\noutput: [2] = relu(input)\n"
                         "output output\n");
  cr_assert_str_eq(g->tensors[1].name, "output");
  ir_graph_free(g);
}

Test(parse, crlf_and_tabs) {
  ir_graph *g =
      parse_ok("input\tx: [ 2 , 2 ]\r\ny = relu( x )\r\noutput y\r\n");
  cr_assert_eq(g->nnodes, 1);
  ir_graph_free(g);
}

Test(parse, forward_references_sorted) {
  ir_graph *g = parse_ok("input x: [2]\nc = relu(b)\nb = relu(a)\na = relu(x)\n"
                         "output c\n");
  cr_assert_str_eq(g->tensors[g->nodes[0].out[0]].name, "a");
  cr_assert_str_eq(g->tensors[g->nodes[2].out[0]].name, "c");
  ir_graph_free(g);
}

/* The heaviest chain of dependent nodes: b-d-f after a of weight 0 (5 + 1
 * + 1 = 7, not through c or e, nor a: no chain starts with weight 0);
 * then a heavier node that nothing reads (g, 20). */
Test(graph, critical_path) {
  ir_graph *g = parse_ok("input x: [2]\na = relu(x)\nb = relu(a)\nc = relu(a)\n"
                         "d = ewadd(b, c)\ne = relu(x)\nf = ewadd(d, e)\n"
                         "g = relu(x)\noutput f, g\n");
  static const char *const name[] = {"a", "b", "c", "d", "e", "f", "g"};
  static const double w1[] = {0, 5, 2, 1, 3, 1, 0},
                      w2[] = {0, 5, 2, 1, 3, 1, 20};
  static const unsigned char on1[] = {0, 1, 0, 1, 0, 1, 0},
                             on2[] = {0, 0, 0, 0, 0, 0, 1};
  double w[7], len;
  unsigned char on[8];
  for (int run = 0; run < 2; run++) {
    for (int k = 0; k < 7; k++) /* weights by node, whatever the order */
      w[g->tensors[ir_find_tensor(g, name[k])].node] = run ? w2[k] : w1[k];
    cr_assert_eq(ir_critical_path(g, w, on, &len), 0);
    cr_expect_float_eq(len, run ? 20.0 : 7.0, 1e-12, "length %g", len);
    for (int k = 0; k < 7; k++)
      cr_expect_eq(on[g->tensors[ir_find_tensor(g, name[k])].node],
                   run ? on2[k] : on1[k], "run %d: %s", run, name[k]);
  }
  cr_assert_eq(ir_critical_path(g, w, NULL, &len), 0); /* no marks wanted */
  cr_expect_float_eq(len, 20.0, 1e-12);
  for (int k = 0; k < 7; k++) /* every weight 0: an empty path */
    w[k] = 0;
  cr_assert_eq(ir_critical_path(g, w, on, &len), 0);
  cr_expect_float_eq(len, 0.0, 1e-12);
  for (int k = 0; k < 7; k++)
    cr_expect_eq(on[k], 0, "node %d on an empty path", k);
  ir_graph_free(g);
}

Test(parse, long_chain_no_recursion) {
  /* 20000 operators in reverse order: the sorter must not recurse. */
  int n = 20000;
  size_t cap = (size_t)n * 40 + 64, k = 0;
  char *s = malloc(cap);
  k += (size_t)snprintf(s + k, cap - k, "input x: [2]\n");
  for (int i = n - 1; i >= 0; i--)
    k += (size_t)snprintf(s + k, cap - k, "t%d = relu(%s%d)\n", i,
                          i ? "t" : "x", i ? i - 1 : 0);
  snprintf(s + k, cap - k, "output t%d\n", n - 1);
  /* t0 = relu(x0): x0 undefined; fix it to x */
  char *p = strstr(s, "relu(x0)");
  memcpy(p, "relu(x) ", 8);
  ir_graph *g = parse_ok(s);
  cr_assert_eq(g->nnodes, n);
  ir_graph_free(g);
  free(s);
}

/* ---- errors ------------------------------------------------------------- */

static void check_bad_file(const char *path) {
  size_t len;
  char *text = slurp(path, &len);
  int line, col, off = 0;
  cr_assert(sscanf(text, "# expect: %d:%d: %n", &line, &col, &off) == 2 && off,
            "%s: first line must be '# expect: L:C: text'", path);
  char want[256];
  const char *nl = strchr(text + off, '\n');
  size_t wl = nl ? (size_t)(nl - text - off) : strlen(text + off);
  snprintf(want, sizeof want, "%.*s", (int)wl, text + off);
  base_diag d;
  ir_graph *g = ir_parse(text, len, path, &d);
  cr_assert_null(g, "%s: parsed but should fail", path);
  cr_assert_neq(d.code, BASE_OK, "%s", path);
  cr_assert_str_eq(d.file, path);
  cr_expect(d.line == line && d.col == col,
            "%s: error at %d:%d, expected %d:%d (%s)", path, d.line, d.col,
            line, col, d.msg);
  cr_expect(strstr(d.msg, want), "%s: message '%s' lacks '%s'", path, d.msg,
            want);
  free(text);
}

Test(errors, bad_corpus) {
  cr_assert_geq(each_graph(SRC "/tests/data/bad", check_bad_file), 20);
}

Test(errors, codes) {
  struct {
    const char *text;
    base_status code;
  } cases[] = {
      {"input x: [2]\ny = relu(x\noutput y\n", BASE_ERR_SYNTAX},
      {"input x: [2]\ny = frob(x)\noutput y\n", BASE_ERR_UNKNOWN_OP},
      {"input x: [2]\ny = relu(x) k=1\noutput y\n", BASE_ERR_UNKNOWN_PARAM},
      {"input x: [2]\ny = concat(x)\noutput y\n", BASE_ERR_PARAM},
      {"input x: [2]\ny = relu(x, x)\noutput y\n", BASE_ERR_ARITY},
      {"input x: [2]\ny = smul(x, x)\noutput y\n", BASE_ERR_SHAPE},
      {"input x: [2]\ny = relu(z)\noutput y\n", BASE_ERR_UNDEFINED},
      {"input x: [2]\nx = relu(x)\noutput x\n", BASE_ERR_DUPLICATE},
      {"input x: [2]\ny = relu(y)\noutput y\n", BASE_ERR_CYCLE},
      {"input x: [2]\n", BASE_ERR_NO_OUTPUT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    base_diag d = parse_err(cases[i].text);
    cr_expect_eq(d.code, cases[i].code, "case %zu: got %s (%s)", i,
                 base_status_name(d.code), d.msg);
    cr_expect_gt(d.line, 0, "case %zu has no line", i);
  }
}

Test(errors, source_line_and_caret) {
  base_diag d = parse_err("input x: [2]\ny = relu(nope)  # c\noutput y\n");
  cr_assert_str_eq(d.src, "y = relu(nope)  # c");
  char *buf;
  size_t n;
  FILE *f = open_memstream(&buf, &n);
  base_diag_print(&d, f);
  fclose(f);
  cr_assert_str_eq(buf, "t.graph:2:10: error: undefined name 'nope'\n"
                        "  y = relu(nope)  # c\n"
                        "           ^\n");
  free(buf);
}

Test(errors, missing_file) {
  base_diag d;
  cr_assert_null(ir_parse_file(SRC "/tests/data/no-such-file.graph", &d));
  cr_assert_eq(d.code, BASE_ERR_IO);
  cr_assert(strstr(d.msg, "no-such-file.graph"));
}

/* ---- robustness ------------------------------------------------------------
 */

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Mutates text (delete / insert / replace bytes, duplicate lines), parses:
 * a failure must carry a code and a position; a success must be valid. */
static void mutate_and_parse(const char *text, size_t len, int rounds,
                             uint64_t seed) {
  static const char alphabet[] = "[]()=,:#-0123456789 \n\txyzw_reluconv";
  char *buf = malloc(len + 64);
  for (int r = 0; r < rounds; r++) {
    memcpy(buf, text, len);
    size_t n = len;
    int edits = 1 + (int)(rng(&seed) % 4);
    for (int e = 0; e < edits && n > 1; e++) {
      size_t at = rng(&seed) % n;
      switch (rng(&seed) % 3) {
      case 0: memmove(buf + at, buf + at + 1, n - at - 1), n--; break;
      case 1:
        if (n < len + 60) {
          memmove(buf + at + 1, buf + at, n - at), n++;
          buf[at] = alphabet[rng(&seed) % (sizeof alphabet - 1)];
        }
        break;
      default:
        buf[at] =
            (char)(rng(&seed) % 4 ? alphabet[rng(&seed) % (sizeof alphabet - 1)]
                                  : (int)(rng(&seed) & 0xff));
      }
    }
    base_diag d;
    ir_graph *g = ir_parse(buf, n, "fuzz", &d);
    if (g) {
      cr_assert_eq(ir_graph_validate(g, &d), BASE_OK, "mutant invalid: %s",
                   d.msg);
      char *p = ir_print(g);
      cr_assert(p);
      free(p);
      ir_graph_free(g);
    } else {
      cr_assert_neq(d.code, BASE_OK);
      cr_assert(d.msg[0], "empty error message");
    }
  }
  free(buf);
}

Test(robust, mutated_small_graphs) {
  const char *text = "graph g\ninput x: [1,3,8,8]\nweight w: [4,3,3,3]\n"
                     "weight b: [4]\n"
                     "c: [1,4,8,8] = conv2d(x, w, b) act=relu\n"
                     "p = maxpool(c) kernel=[2,2] stride=[2,2]\n"
                     "l, r = split(p) axis=1 sizes=[1,3]\n"
                     "q = concat(r, l) axis=1\n"
                     "t = transpose(q) perm=[0,2,3,1]\n"
                     "output t, l\n";
  mutate_and_parse(text, strlen(text), 20000, 42);
}

Test(robust, mutated_resnet50, .timeout = 120) {
  size_t len;
  char *text = slurp(SRC "/models/resnet50.graph", &len);
  mutate_and_parse(text, len, 150, 7);
  free(text);
}

/* ---- builder, hash, clone ----------------------------------------------- */

Test(graph, hash_ignores_names) {
  ir_graph *a =
      parse_ok("input x: [2,2]\ny = relu(x)\nz = ewadd(y, x)\noutput z\n");
  ir_graph *b =
      parse_ok("input p: [2,2]\nq = relu(p)\nr = ewadd(q, p)\noutput r\n");
  ir_graph *c =
      parse_ok("input x: [2,2]\ny = relu(x)\nz = ewadd(x, y)\noutput z\n");
  ir_graph *e =
      parse_ok("input x: [2,3]\ny = relu(x)\nz = ewadd(y, x)\noutput z\n");
  cr_assert_eq(graph_hash(a), graph_hash(b));
  cr_assert_neq(graph_hash(a), graph_hash(c), "argument order matters");
  cr_assert_neq(graph_hash(a), graph_hash(e), "shapes matter");
  ir_graph_free(a);
  ir_graph_free(b);
  ir_graph_free(c);
  ir_graph_free(e);
}

Test(graph, hash_sees_params) {
  ir_graph *a = parse_ok("input x: [4]\ny = clip(x) min=0 max=6\noutput y\n");
  ir_graph *b = parse_ok("input x: [4]\ny = clip(x) min=0 max=5\noutput y\n");
  cr_assert_neq(graph_hash(a), graph_hash(b));
  ir_graph_free(a);
  ir_graph_free(b);
}

Test(graph, clone_is_deep_and_equal) {
  ir_graph *a = parse_ok("graph g\ninput x: [2,2]\ny = relu(x)\noutput y\n");
  ir_graph *b = ir_graph_clone(a);
  char *pa = ir_print(a), *pb;
  ir_graph_free(a); /* b must not share memory with a */
  pb = ir_print(b);
  cr_assert_str_eq(pa, pb);
  free(pa);
  free(pb);
  ir_graph_free(b);
}

/* ir_graph_reordered: two branches of a relu, joined. Each seed's copy
 * keeps g's tensors (indices, names, producers' outputs) and outputs, has
 * every node after the producers of its inputs and passes the invariants;
 * seeds give different orders (the two branches interleaved differently),
 * and one seed the same order twice. */
Test(graph, reordered_keeps_tensors_in_another_topological_order) {
  ir_graph *g = parse_ok("graph g\ninput x: [4]\nr = relu(x)\n"
                         "a0 = relu(r)\na1 = tanh(a0)\na2 = relu(a1)\n"
                         "b0 = tanh(r)\nb1 = relu(b0)\nb2 = tanh(b1)\n"
                         "y = ewadd(a2, b2)\noutput y\n");
  int differs = 0;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    ir_graph *h = ir_graph_reordered(g, seed);
    cr_assert(h);
    base_diag d;
    cr_assert_eq(ir_check_invariants(h, "reordered", &d), BASE_OK, "%s", d.msg);
    cr_assert_eq(h->nnodes, g->nnodes);
    cr_assert_eq(h->ntensors, g->ntensors);
    cr_assert_eq(h->noutputs, 1);
    cr_assert_eq(h->outputs[0], g->outputs[0]);
    for (int t = 0; t < g->ntensors; t++) {
      cr_assert_str_eq(h->tensors[t].name, g->tensors[t].name);
      int n = h->tensors[t].node;
      if (n >= 0) /* its producer computes it, after its own inputs */
        cr_assert_eq(h->nodes[n].out[h->tensors[t].slot], t);
    }
    for (int i = 0; i < h->nnodes; i++) {
      for (int k = 0; k < h->nodes[i].nin; k++)
        cr_assert_lt(h->tensors[h->nodes[i].in[k]].node, i);
      differs |= h->nodes[i].op != g->nodes[i].op;
    }
    ir_graph *h2 = ir_graph_reordered(g, seed);
    char *p1 = ir_print(h), *p2 = ir_print(h2);
    cr_assert_str_eq(p1, p2);
    free(p1), free(p2);
    ir_graph_free(h2);
    ir_graph_free(h);
  }
  cr_assert(differs, "every seed kept g's order");
  ir_graph_free(g);
}

/* ir_graph_canonical: one program in two files (its branches listed the
 * other way round, other names, a 1x1 convolution's pad written `valid`
 * in one and left out in the other, a weight folded in one through a
 * weight-only node, commutative operands swapped) comes out in one node
 * order: the same operator at
 * each position, reading the same shapes; the order is topological and
 * keeps the tensors. */
Test(graph, canonical_order_is_the_same_for_two_files_of_one_program) {
  ir_graph *g = parse_ok("graph g\ninput x: [1,4,8,8]\nweight wa: [4,4,1,1]\n"
                         "weight wb: [4,4,3,3]\nweight s: [4,4,3,3]\n"
                         "r = relu(x)\n"
                         "a0 = conv2d(r, wa) pad=valid\na1 = tanh(a0)\n"
                         "wf = ewmul(wb, s)\n"
                         "b0 = conv2d(r, wf) pad=[1,1,1,1]\nb1 = sigmoid(b0)\n"
                         "b2 = relu(b1)\nc0 = ewmul(r, x)\nc1 = ewadd(x, r)\n"
                         "c2 = ewsub(r, x)\ny0 = ewadd(a1, b2)\n"
                         "y1 = ewadd(y0, c0)\ny2 = ewadd(y1, c1)\n"
                         "y = ewadd(y2, c2)\noutput y\n");
  ir_graph *h = parse_ok("graph h\ninput in: [1,4,8,8]\n"
                         "weight k3: [4,4,3,3]\nweight k1: [4,4,1,1]\n"
                         "q = relu(in)\n"
                         "p0 = conv2d(q, k3) pad=[1,1,1,1]\np1 = sigmoid(p0)\n"
                         "p2 = relu(p1)\n"
                         "m0 = conv2d(q, k1)\nm1 = tanh(m0)\n"
                         "d2 = ewsub(q, in)\nd1 = ewadd(q, in)\n"
                         "d0 = ewmul(in, q)\no0 = ewadd(p2, m1)\n"
                         "o1 = ewadd(d0, o0)\no2 = ewadd(o1, d1)\n"
                         "out = ewadd(o2, d2)\noutput out\n");
  ir_graph *cg = ir_graph_canonical(g), *ch = ir_graph_canonical(h);
  cr_assert(cg && ch);
  base_diag d;
  cr_assert_eq(ir_check_invariants(cg, "canonical", &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(cg->ntensors, g->ntensors);
  cr_assert_eq(cg->outputs[0], g->outputs[0]);
  for (int t = 0; t < g->ntensors; t++)
    cr_assert_str_eq(cg->tensors[t].name, g->tensors[t].name);
  /* g's weight-only ewmul aside, the running nodes in one order */
  int i = 0, j = 0;
  for (; i < cg->nnodes; i++) {
    if (cg->tensors[cg->nodes[i].in[0]].kind == IR_T_WEIGHT)
      continue; /* wf = ewmul(wb, s) */
    cr_assert_lt(j, ch->nnodes);
    cr_assert_eq(cg->nodes[i].op, ch->nodes[j].op, "position %d: %s, %s", i,
                 ir_op(cg->nodes[i].op)->name, ir_op(ch->nodes[j].op)->name);
    const ir_tensor *a = &cg->tensors[cg->nodes[i].in[cg->nodes[i].nin - 1]],
                    *b = &ch->tensors[ch->nodes[j].in[ch->nodes[j].nin - 1]];
    cr_assert(ir_shape_eq(&a->shape, &b->shape), "position %d", i);
    j++;
  }
  cr_assert_eq(j, ch->nnodes);
  /* the two files' own orders differ: the test would pass by accident
   * otherwise */
  cr_assert_neq(g->nodes[2].op, h->nodes[2].op);
  ir_graph_free(cg), ir_graph_free(ch);
  ir_graph_free(g), ir_graph_free(h);
}

Test(graph, builder_rejects_and_leaves_graph_unchanged) {
  ir_graph *g = ir_graph_new("b");
  base_diag d;
  ir_shape s = ir_shape_make(2, (int64_t[]){2, 3});
  ir_shape t = ir_shape_make(2, (int64_t[]){4, 5});
  int a = ir_add_tensor(g, "a", IR_T_INPUT, &s, &d);
  int b = ir_add_tensor(g, "b", IR_T_WEIGHT, &t, &d);
  cr_assert_eq(ir_add_tensor(g, "a", IR_T_INPUT, &s, &d), -1);
  cr_assert_eq(d.code, BASE_ERR_DUPLICATE);
  ir_attrs at;
  ir_attrs_default(IR_OP_MATMUL, &at);
  int32_t in[2] = {a, b};
  cr_assert_eq(ir_add_node(g, IR_OP_MATMUL, in, 2, &at, NULL, &d), -1);
  cr_assert_eq(d.code, BASE_ERR_SHAPE);
  cr_assert(strstr(d.msg, "[2,3]") && strstr(d.msg, "[4,5]"), "%s", d.msg);
  cr_assert_eq(g->nnodes, 0);
  cr_assert_eq(g->ntensors, 2);
  /* a node whose output name collides is not added either */
  const char *names[] = {"b"};
  cr_assert_eq(ir_add_node(g, IR_OP_RELU, in, 1, &at, names, &d), -1);
  cr_assert_eq(g->nnodes, 0);
  cr_assert_eq(g->ntensors, 2);
  int n = ir_add_node(g, IR_OP_RELU, in, 1, &at, NULL, &d);
  cr_assert_geq(n, 0);
  cr_assert_eq(ir_graph_validate(g, &d), BASE_ERR_NO_OUTPUT);
  cr_assert_eq(ir_add_output(g, g->nodes[n].out[0], &d), BASE_OK);
  cr_assert_eq(ir_graph_validate(g, &d), BASE_OK, "%s", d.msg);
  ir_graph_free(g);
}

Test(graph, validate_catches_broken_invariants) {
  ir_graph *g = parse_ok("input x: [2]\na = relu(x)\nb = relu(a)\noutput b\n");
  base_diag d;
  g->nodes[0].in[0] = g->nodes[1].out[0]; /* a now reads b: not topological */
  cr_assert_eq(ir_graph_validate(g, &d), BASE_ERR_INTERNAL);
  ir_graph_free(g);
  g = parse_ok("input x: [2,3]\na = relu(x)\noutput a\n");
  g->tensors[1].shape.dim[1] = 4; /* stale shape */
  cr_assert_eq(ir_graph_validate(g, &d), BASE_ERR_INTERNAL);
  ir_graph_free(g);
}

/* The optimizer's debug check: on in SUPEROPT_CHECK_INVARIANTS builds (the
 * ASan build), a no-op otherwise. */
Test(graph, check_invariants_between_passes) {
  ir_graph *g = parse_ok("input x: [2,3]\na = relu(x)\noutput a\n");
  base_diag d;
  cr_assert_eq(ir_check_invariants(g, "a test", &d), BASE_OK);
  g->tensors[1].shape.dim[1] = 4; /* stale shape */
#ifdef SUPEROPT_CHECK_INVARIANTS
  cr_assert_eq(ir_check_invariants(g, "a test", &d), BASE_ERR_INTERNAL);
  cr_assert(strstr(d.msg, "graph invariant broken after a test: "), "%s",
            d.msg);
#else
  cr_assert_eq(ir_check_invariants(g, "a test", &d), BASE_OK);
#endif
  ir_graph_free(g);
}

Test(graph, op_table_rows) {
  const ir_opinfo *c = ir_op(IR_OP_CONV2D);
  cr_assert_str_eq(c->name, "conv2d");
  cr_assert_eq(c->min_in, 2);
  cr_assert_eq(c->max_in, 4); /* x w b? r? */
  cr_assert_eq(c->inst_in, 2);
  cr_assert_eq(c->in_hint[1], IR_INIT_FAN);
  cr_assert_eq(c->defaults.groups, 1);
  cr_assert_eq(c->defaults.stride[0], 1);
  cr_assert_eq(ir_op(IR_OP_CONCAT)->max_in, -1);
  cr_assert_eq(ir_op(IR_OP_CONST_ONES)->min_in, 0);
  cr_assert_eq(ir_op(IR_OP_LAYERNORM)->min_in, 1);
  cr_assert_eq(ir_op(IR_OP_LAYERNORM)->max_in, 4); /* x gamma? beta? xb? */
  for (int op = 0; op < IR_NOPS; op++)
    cr_assert_eq(ir_op_lookup(ir_op((ir_opcode)op)->name,
                              strlen(ir_op((ir_opcode)op)->name)),
                 op);
}

Test(graph, arena_many_and_large) {
  base_arena *a = base_arena_new();
  for (int i = 0; i < 10000; i++) {
    unsigned char *p = base_arena_alloc(a, (size_t)(i % 97) + 1);
    cr_assert(p);
    cr_assert_eq((uintptr_t)p % 16, 0);
    cr_assert_eq(p[0], 0);
    p[0] = 0xff;
  }
  char *big = base_arena_alloc(a, 1 << 20);
  cr_assert(big);
  big[(1 << 20) - 1] = 1;
  base_arena_free(a);
}

/* ---- limits (found in review) ---------------------------------------------
 */

Test(limits, subnormal_and_max_floats_parse) {
  ir_graph *g =
      parse_ok("input x: [2]\ny = clip(x) min=1e-40 max=3.40282347e+38\n"
               "output y\n");
  cr_assert(g->nodes[0].a.lo > 0 && g->nodes[0].a.lo < 1e-38f);
  ir_graph_free(g);
  base_diag d =
      parse_err("input x: [2]\ny = clip(x) min=0 max=1e39\noutput y\n");
  cr_assert_eq(d.code, BASE_ERR_PARAM);
}

Test(limits, many_outputs_round_trip) {
  size_t cap = 300 * 32 + 64, k = 0;
  char *s = malloc(cap);
  k += (size_t)snprintf(s + k, cap - k, "input x: [2]\n");
  for (int i = 0; i < 300; i++)
    k += (size_t)snprintf(s + k, cap - k, "t%d = relu(x)\noutput t%d\n", i, i);
  ir_graph *g = parse_ok(s);
  char *p1 = ir_print(g);
  ir_graph *g2 = parse_ok(p1);
  cr_assert_eq(g2->noutputs, 300);
  char *p2 = ir_print(g2);
  cr_assert_str_eq(p1, p2);
  free(p1);
  free(p2);
  free(s);
  ir_graph_free(g);
  ir_graph_free(g2);
}

Test(limits, concat_too_many_inputs_is_bad_input) {
  char s[2048] = "input x: [2]\ny = concat(x";
  for (int i = 0; i < IR_MAX_IN; i++)
    strcat(s, ", x");
  strcat(s, ") axis=0\noutput y\n");
  base_diag d = parse_err(s);
  cr_assert_eq(d.code, BASE_ERR_ARITY, "%s", d.msg);
  cr_assert_eq(d.line, 2);
}

Test(limits, numel_saturates) {
  ir_shape s = ir_shape_make(
      5, (int64_t[]){1722007169, 1722007169, 2142470067, 2142470067, 25});
  cr_assert_eq(ir_shape_numel(&s), INT64_MAX);
}

/* ---- rebatching (src/ir/rebatch.c) ----------------------------------------
 */

Test(rebatch, follows_reshapes) {
  base_diag d;
  ir_graph *g = ir_parse_file(SRC "/models/resnet50.graph", &d), *h = NULL;
  cr_assert(g, "%s", d.msg);
  cr_assert_eq(ir_rebatch(g, 5, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(h->tensors[h->outputs[0]].shape.dim[0], 5);
  cr_assert_eq(h->tensors[h->outputs[0]].shape.dim[1], 1000);
  cr_assert_eq(h->nnodes, g->nnodes);
  ir_graph_free(h);
  ir_graph_free(g);
  g = ir_parse_file(SRC "/models/bert_base.graph", &d);
  cr_assert(g, "%s", d.msg);
  cr_assert_eq(ir_rebatch(g, 3, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(h->tensors[h->outputs[0]].shape.dim[0], 3);
  ir_graph_free(h);
  ir_graph_free(g);
  g = ir_parse_file(SRC "/models/nasnet_a.graph", &d); /* slices the batch */
  cr_assert(g, "%s", d.msg);
  cr_assert_eq(ir_rebatch(g, 16, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(h->tensors[h->outputs[0]].shape.dim[0], 16);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* An input whose dim 0 is not the batch is a parameter fed as an input
 * (ONNX exports without weights: convnext's conv biases) and keeps its
 * shape; the batch comes from the first input. */
Test(rebatch, parameters_fed_as_inputs_keep_their_shape) {
  ir_graph *g = parse_ok("input x: [1,3,8,8]\ninput b: [4]\n"
                         "input s: [4,1,1]\nweight w: [4,3,3,3]\n"
                         "c = conv2d(x, w, b)\ny = ewmul(c, s)\n"
                         "output y\n"),
           *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 16, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(h->tensors[h->outputs[0]].shape.dim[0], 16);
  cr_assert_eq(h->tensors[ir_find_tensor(h, "b")].shape.dim[0], 4);
  cr_assert_eq(h->tensors[ir_find_tensor(h, "s")].shape.dim[0], 4);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A reshape may fold the batch into another axis; an operator that then
 * computes across it (here a softmax over the folded axis) is refused,
 * naming the node and its line. */
Test(rebatch, reports_a_pinned_batch) {
  ir_graph *g = parse_ok("input x: [1,4,3]\n"
                         "y = reshape(x) shape=[4,3]\n"
                         "z = softmax(y) axis=0\n"
                         "output z\n"),
           *h = (ir_graph *)1;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 4, &h, &d), BASE_ERR_SHAPE);
  cr_assert_null(h);
  cr_assert_eq(d.line, 3);
  cr_assert(strstr(d.msg, "cannot rebatch softmax 'z'"), "%s", d.msg);
  cr_assert(strstr(d.msg, "batch axis"), "%s", d.msg);
  ir_graph_free(g);
}

/* A gather of a batch's rows at constant indices (Hugging Face's SDPA mask
 * exported at batch 1: the flattened [batch*seq] mask gathered at
 * batch*seq + position, folded at import): sample b's indices become
 * b * rows + the old ones, the batch the outer factor of their axis; an
 * index outside the batch's rows is refused. */
static ir_graph *rows_gather(float first) {
  ir_graph *g = parse_ok("input m: [1,4]\n"
                         "weight ix: i64[4]\n"
                         "r = reshape(m) shape=[4,1]\n"
                         "y = gather(r, ix)\n"
                         "z = reshape(y) shape=[1,4]\n"
                         "output z\n");
  int t = ir_find_tensor(g, "ix");
  float *v = base_arena_alloc(g->arena, 4 * sizeof *v);
  cr_assert(t >= 0 && v);
  v[0] = first, v[1] = 2, v[2] = 1, v[3] = 0;
  g->tensors[t].data = v;
  return g;
}

Test(rebatch, gathers_a_batch_s_rows_at_constant_indices) {
  ir_graph *g = rows_gather(3), *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 3, &h, &d), BASE_OK, "%s", d.msg);
  int y = ir_find_tensor(h, "y");
  const ir_tensor *ix = &h->tensors[h->nodes[h->tensors[y].node].in[1]];
  cr_assert_eq(ix->shape.dim[0], 12);
  for (int k = 0; k < 12; k++)
    cr_assert_float_eq(ix->data[k], (float)(k / 4 * 4 + 3 - k % 4), 0,
                       "index %d: %g", k, ix->data[k]);
  cr_assert_eq(h->tensors[ir_find_tensor(h, "z")].shape.dim[0], 3);
  ir_graph_free(h);
  ir_graph_free(g);
  g = rows_gather(4); /* row 4 is the next sample's */
  cr_assert_eq(ir_rebatch(g, 3, &h, &d), BASE_ERR_SHAPE);
  cr_assert(strstr(d.msg, "gathers along the batch axis"), "%s", d.msg);
  ir_graph_free(g);
}

static int64_t dim_of(const ir_graph *h, const char *name, int i) {
  int t = ir_find_tensor(h, name);
  cr_assert_geq(t, 0, "%s", name);
  return h->tensors[t].shape.dim[i];
}

/* torch's MultiheadAttention at batch 1: tokens first, the batch folded
 * into the heads ([5, 1*2, 4]) and into the tokens at the merge ([5*1,
 * 8]). The merge's first candidate (the batch into the 8 features) makes
 * the next matmul sum over the batch, so the search takes the other. */
Test(rebatch, folds_the_batch_into_heads_and_tokens) {
  ir_graph *g = parse_ok("input x: [1,5,8]\nweight w: [8,8]\n"
                         "t = transpose(x) perm=[1,0,2]\n"
                         "q = reshape(t) shape=[5,2,4]\n"
                         "qt = transpose(q) perm=[1,0,2]\n"
                         "qk = transpose(qt) perm=[0,2,1]\n"
                         "sc = matmul(qt, qk)\n"
                         "p = softmax(sc) axis=2\n"
                         "o = matmul(p, qt)\n"
                         "o2 = transpose(o) perm=[1,0,2]\n"
                         "m = reshape(o2) shape=[5,8]\n"
                         "y = matmul(m, w)\n"
                         "y3 = reshape(y) shape=[5,1,8]\n"
                         "output y3\n"),
           *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 3, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(dim_of(h, "q", 1), 6);
  cr_assert_eq(dim_of(h, "sc", 0), 6);
  cr_assert_eq(dim_of(h, "m", 0), 15);
  cr_assert_eq(dim_of(h, "m", 1), 8);
  cr_assert_eq(dim_of(h, "y3", 1), 3);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A class token cls [b,1,8] concatenated with patches x [b,n,8]. */
static ir_graph *class_token(int b, int n) {
  char text[160];
  snprintf(text, sizeof text,
           "input x: [%d,%d,8]\nweight cls: [%d,1,8]\n"
           "t = concat(cls, x) axis=1\noutput t\n",
           b, n, b);
  return parse_ok(text);
}

/* g rebatched to b: t [b, tokens, 8], cls keeping its dim 0 (cls0). */
static ir_graph *rebatched_token(const ir_graph *g, int64_t b, int64_t tokens,
                                 int64_t cls0) {
  ir_graph *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, b, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(dim_of(h, "t", 0), b);
  cr_assert_eq(dim_of(h, "t", 1), tokens);
  cr_assert_eq(dim_of(h, "cls", 0), cls0);
  return h;
}

/* A class token folded at import to a [1,1,d] weight and concatenated
 * with the batched patches is broadcast to the new batch. */
Test(rebatch, broadcasts_a_weight_concatenated_with_the_batch) {
  ir_graph *g = class_token(1, 4), *h = rebatched_token(g, 16, 5, 1);
  cr_assert_eq(h->nnodes, g->nnodes + 2);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A class token expanded to the batch and folded at import when the
 * export fixed batch 4 ([4,1,8]): a smaller batch reads its first rows
 * (the end-to-end check's later rounds at batch 2), whatever its values;
 * a larger one its first row broadcast, only where every row is the same
 * (known values: a drawn weight's rows differ). */
Test(rebatch, slices_or_broadcasts_a_weight_folded_at_the_batch) {
  ir_graph *g = class_token(4, 3), *h = rebatched_token(g, 2, 4, 4);
  base_diag d;
  int r = ir_find_tensor(h, "t.rows0");
  cr_assert(r >= 0 && h->nodes[h->tensors[r].node].op == IR_OP_SLICE);
  cr_assert_eq(h->tensors[r].shape.dim[0], 2);
  ir_graph_free(h);
  cr_assert_eq(ir_rebatch(g, 8, &h, &d), BASE_ERR_SHAPE, "no values");
  cr_assert(strstr(d.msg, "does not follow the batch"), "%s", d.msg);
  int t = ir_find_tensor(g, "cls");
  float *v = base_arena_alloc(g->arena, 32 * sizeof *v);
  cr_assert(t >= 0 && v);
  for (int i = 0; i < 32; i++)
    v[i] = (float)(i % 8);
  g->tensors[t].data = v;
  h = rebatched_token(g, 8, 4, 4);
  cr_assert(ir_find_tensor(h, "t.row0_0") >= 0);
  ir_graph_free(h);
  v[27] = 9; /* the fourth row differs */
  cr_assert_eq(ir_rebatch(g, 8, &h, &d), BASE_ERR_SHAPE);
  ir_graph_free(g);
}

/* Two weights folded at the batch in one concat: each its own slice,
 * named by its input (one name for both would be refused). */
Test(rebatch, slices_two_weights_folded_at_the_batch) {
  ir_graph *g = parse_ok("input x: [4,3,8]\nweight cls: [4,1,8]\n"
                         "weight dist: [4,1,8]\n"
                         "t = concat(cls, dist, x) axis=1\noutput t\n");
  ir_graph *h = rebatched_token(g, 2, 5, 4);
  cr_expect_eq(dim_of(h, "t.rows0", 0), 2);
  cr_expect_eq(dim_of(h, "t.rows1", 0), 2);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* The indices of the gather 'y' of rows_gather's graph h. */
static const ir_tensor *gather_ix(const ir_graph *h) {
  int y = ir_find_tensor(h, "y");
  cr_assert_geq(y, 0);
  return &h->tensors[h->nodes[h->tensors[y].node].in[1]];
}

/* A graph rebatched before (the end-to-end check rebatches optimize's
 * batch-16 graphs to 2) rebatches again: the class token's ones [16,1,8]
 * follow the batch, the gather's indices made for batch 3 are cut back to
 * batch 2 (sample b's: sample 0's plus b * rows), and ones [16] that are
 * a factor of the features, not the batch, keep their shape. Indices that
 * are not sample 0's shifted are refused. */
Test(rebatch, rebatches_a_rebatched_graph) {
  ir_graph *g = parse_ok("input x: [1,4,16]\nweight cls: [1,1,16]\n"
                         "t = concat(cls, x) axis=1\n"
                         "one: [16] = const_ones() shape=[16]\n"
                         "u = ewmul(t, one)\noutput u\n"),
           *h = NULL, *k = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 16, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ir_rebatch(h, 2, &k, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(dim_of(k, "u", 0), 2);
  cr_assert_eq(dim_of(k, "t", 1), 5);
  cr_assert_eq(dim_of(k, "one", 0), 16);
  ir_graph_free(k);
  ir_graph_free(h);
  ir_graph_free(g);
  g = rows_gather(3);
  ir_graph *direct = NULL;
  cr_assert_eq(ir_rebatch(g, 3, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ir_rebatch(h, 2, &k, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ir_rebatch(g, 2, &direct, &d), BASE_OK, "%s", d.msg);
  const ir_tensor *ik = gather_ix(k), *id = gather_ix(direct);
  cr_assert_eq(ik->shape.dim[0], 8);
  for (int i = 0; i < 8; i++)
    cr_assert_float_eq(ik->data[i], id->data[i], 0, "index %d", i);
  cr_assert_eq(dim_of(k, "z", 0), 2);
  ir_graph_free(k);
  ir_graph_free(direct);
  ((float *)gather_ix(h)->data)[4] = 4; /* sample 1's first index moved */
  cr_assert_eq(ir_rebatch(h, 2, &k, &d), BASE_ERR_SHAPE);
  cr_assert(strstr(d.msg, "gathers along the batch axis"), "%s", d.msg);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Ones of a batch of windows ([16*4, 8]: a bias tiled for each sample, as
 * the lower stage builds Swin's) follow the batch folded into their axis
 * 0, so a batch-16 graph rebatches to 2 with ones [2*4, 8]. */
Test(rebatch, ones_of_a_folded_batch_follow_it) {
  ir_graph *g = parse_ok("input x: [16,4,8]\nweight b: [1,8]\n"
                         "one: [64,8] = const_ones() shape=[64,8]\n"
                         "w = ewmul(b, one)\n"
                         "w3 = reshape(w) shape=[16,4,8]\n"
                         "y = ewadd(x, w3)\noutput y\n"),
           *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 2, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(dim_of(h, "one", 0), 8);
  cr_assert_eq(dim_of(h, "w3", 0), 2);
  cr_assert_eq(dim_of(h, "y", 0), 2);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* ---- the operator table's columns ---------------------------------------- */

/* Every row of ops.def has every column, and the columns agree: the kind
 * and flops per element the roofline reads, the activation an operator
 * computes (one operator per activation), its flags. The compiler checks
 * the arity of each row; this checks the values. */
Test(optable, every_operator_has_every_column) {
  int act_ops[IR_ACT_GELU + 1] = {0};
  for (int op = 0; op < IR_NOPS; op++) {
    const ir_opinfo *r = ir_op((ir_opcode)op);
    cr_assert(r->name && r->name[0], "operator %d has no name", op);
    cr_expect(r->kind >= IR_OPK_MATRIX && r->kind <= IR_OPK_FUSED,
              "%s: no kind", r->name);
    cr_expect(r->act >= IR_ACT_NONE && r->act <= IR_ACT_GELU, "%s: act",
              r->name);
    cr_expect(r->flops >= 0 && r->flops < 1e3, "%s: flops", r->name);
    int computes = r->kind == IR_OPK_EW || r->kind == IR_OPK_NORM ||
                   r->kind == IR_OPK_REDUCE;
    cr_expect(computes ? r->flops > 0 : r->flops == 0,
              "%s: flops per element %g for its kind", r->name, r->flops);
    if (r->act != IR_ACT_NONE) {
      act_ops[r->act]++;
      cr_expect_eq(r->kind, IR_OPK_EW, "%s: an activation is element-wise",
                   r->name);
      cr_expect_eq(ir_act_op(r->act), op, "%s: ir_act_op", r->name);
    }
    unsigned views =
        r->flags & (IR_OPF_VIEW | IR_OPF_VIEW_BLOCKS | IR_OPF_VIEW_ORDER);
    cr_expect(!views || (r->kind == IR_OPK_MOVE && !(views & (views - 1))),
              "%s: one view flag, on data movement only", r->name);
    cr_expect_eq(!!(r->flags & IR_OPF_ACT_PARAM), /* a move's: lower's */
                 ir_op_param_index((ir_opcode)op, IR_P_ACT) >= 0 &&
                     r->kind != IR_OPK_MOVE,
                 "%s: IR_OPF_ACT_PARAM iff it has act= (but moves)", r->name);
    if (r->flags & IR_OPF_COMM)
      cr_expect(r->min_in == 2 && r->max_in == 2, "%s: commutative in 2",
                r->name);
    cr_expect_eq(r->kind == IR_OPK_CONST, r->max_in == 0,
                 "%s: constants and only they have no inputs", r->name);
    /* a fused body computes every element-wise float32 operator per
     * element (where, equal, not and cast read or write bool or other
     * types: ir_dtype_infer; a body computes in float32) */
    int typed = op == IR_OP_WHERE || op == IR_OP_EQUAL || op == IR_OP_NOT ||
                op == IR_OP_CAST;
    cr_expect(r->kind != IR_OPK_EW || typed || (r->flags & IR_OPF_BODY),
              "%s: element-wise but not IR_OPF_BODY", r->name);
    cr_expect(!typed || !(r->flags & (IR_OPF_BODY | IR_OPF_BODY_ROW)),
              "%s: not float32, yet a body operator", r->name);
    /* a body's last operator may be a row reduction (not element-wise) */
    cr_expect_eq(ir_body_row_op((ir_opcode)op), !!(r->flags & IR_OPF_BODY_ROW),
                 "%s: ir_body_row_op", r->name);
    if (r->flags & IR_OPF_BODY_ROW)
      cr_expect(!(r->flags & IR_OPF_BODY) &&
                    (r->kind == IR_OPK_NORM || r->kind == IR_OPK_REDUCE),
                "%s: a row reduction is a normalisation or reduction", r->name);
    if (r->flags & IR_OPF_BODY)
      cr_expect((r->kind == IR_OPK_EW || op == IR_OP_BATCHNORM) &&
                    r->max_in >= 1 && r->max_in <= IR_MAX_FIXED_IN,
                "%s: a body operator is element-wise with fixed inputs",
                r->name);
    cr_expect_eq(ir_body_op_ok((ir_opcode)op), !!(r->flags & IR_OPF_BODY),
                 "%s: ir_body_op_ok", r->name);
    cr_expect(
        !(r->flags & ~(IR_OPF_COMM | IR_OPF_ACT_PARAM | IR_OPF_RELU_EPILOGUE |
                       IR_OPF_VIEW | IR_OPF_VIEW_BLOCKS | IR_OPF_VIEW_ORDER |
                       IR_OPF_BODY | IR_OPF_BODY_ROW)),
        "%s: unknown flags", r->name);
  }
  /* the body operators: ew.def's rows and these, in ops.def order */
  char want[1024] = "";
  for (int op = 0; op < IR_NOPS; op++) {
    const char *nm = ir_op((ir_opcode)op)->name;
    if (ir_ew_of((ir_opcode)op) || !strcmp(nm, "ewadd") ||
        !strcmp(nm, "ewmul") || !strcmp(nm, "ewsub") || !strcmp(nm, "ewdiv") ||
        !strcmp(nm, "smul") || !strcmp(nm, "clip") || !strcmp(nm, "batchnorm"))
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
               want[0] ? " " : "", nm);
  }
  cr_expect_str_eq(ir_body_op_names(), want);
  cr_expect_str_eq(ir_body_row_op_names(), "reduce_mean softmax layernorm");
  cr_expect_eq(ir_act_op(IR_ACT_NONE), -1);
  for (int a = IR_ACT_RELU; a <= IR_ACT_GELU; a++)
    cr_expect_eq(act_ops[a], 1, "activation %s: %d operators",
                 ir_act_name((ir_act)a), act_ops[a]);
}

/* Runs node n's shape rule with parameters a; 0 when it fails, else 1
 * with its output shapes in outs. */
static int infer_node(const ir_graph *g, const ir_node *n, ir_attrs *a,
                      ir_shape *outs) {
  const ir_shape *ins[IR_MAX_IN];
  for (int k = 0; k < n->nin; k++)
    ins[k] = &g->tensors[n->in[k]].shape;
  return ir_infer(n->op, a, ins, n->nin, outs, NULL) == BASE_OK;
}

/* The shape marks of ops.def (IR_PT_*), which the matcher, the rewriter
 * and rebatching read, against shape inference on an example node of every
 * operator that has a mark or a padding: a parameter marked as following
 * the shapes ('~' '#' '^') is a list whose first entry, changed, changes
 * the node's output shapes or is rejected; a padding is resolved by shape
 * inference; '^' entries follow a rebatch and nothing else does; '!' marks
 * only what rule instances substitute (src/rewrite/inst.c: stride, groups,
 * act, a batchnorm's eps, and one trailing optional input, the bias; a
 * reshape's shape and a slice's range, taken from the graph node). */
/* ew.def's rows pair with ops.def rows: element-wise, one input, no
 * parameter, a body operator; the activations first, in ir_act order; the
 * ONNX names found back. */
Test(optable, ew_rows) {
  cr_assert(IR_EW_NROWS >= 11);
  for (int i = 0; i < IR_EW_NROWS; i++) {
    ir_opcode op = ir_ew_op(i);
    const ir_opinfo *r = ir_op(op);
    cr_expect_eq(ir_ew_of(op)->index, i, "%s: row", r->name);
    cr_expect(r->kind == IR_OPK_EW && (r->flags & IR_OPF_BODY) &&
                  r->min_in == 1 && r->max_in == 1 && r->nparams == 0,
              "%s: not a plain element-wise unary operator", r->name);
    if (ir_ew_of(op)->onnx)
      cr_expect_eq(ir_ew_by_onnx(ir_ew_of(op)->onnx), (int)op, "%s: onnx",
                   r->name);
    cr_expect(ir_ew_of(op)->fn && ir_ew_of(op)->cuda[0], "%s", r->name);
  }
  for (int a = IR_ACT_RELU; a <= IR_ACT_GELU; a++)
    cr_expect_eq(ir_ew_op(a - 1), ir_act_op((ir_act)a), "activation %d", a);
  cr_expect_eq(ir_ew_of(IR_OP_CLIP), NULL);
  cr_expect_eq(ir_ew_of(IR_OP_EWADD), NULL);
  cr_expect_eq(ir_ew_by_onnx("Clip"), -1);
  cr_expect_eq(ir_ew_by_onnx("Neg"), IR_OP_NEG);
  cr_expect(ir_ew_of(IR_OP_NEG)->fn(2.0f) == -2.0f);
}

Test(optable, shape_marks) {
  ir_graph *g = parse_ok("input x: [2,4,6,6]\n"
                         "weight w: [4,4,3,3]\n"
                         "weight b: [4]\n"
                         "c = conv2d(x, w, b) pad=same act=relu\n"
                         "ap = avgpool(x) kernel=[3,3] pad=same "
                         "count_include_pad=1\n"
                         "mp = maxpool(x) kernel=[3,3] pad=same\n"
                         "s0, s1 = split(x) axis=1 sizes=[1,3]\n"
                         "r = reshape(x) shape=[2,144]\n"
                         "sl = slice(x) starts=[0,0,0,0] ends=[2,2,6,6]\n"
                         "ic = const_iconv() shape=[4,4,3,3]\n"
                         "im = const_imm() shape=[4,4]\n"
                         "on = const_ones() shape=[2,4]\n"
                         "cp = const_pool() shape=[4,1,3,3]\n"
                         "bn = batchnorm(x, b, b, b, b) eps=0.001\n"
                         "en = enlarge(w) kernel=[5,5]\n"
                         "output c, ap, mp, s0, s1, r, sl, ic, im, on, cp, "
                         "bn, en\n");
  ir_graph *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 3, &h, &d), BASE_OK, "%s", d.msg);
  for (int op = 0; op < IR_NOPS; op++) {
    const ir_opinfo *r = ir_op((ir_opcode)op);
    int pad = ir_op_param_index((ir_opcode)op, IR_P_PAD) >= 0, node = -1;
    for (int i = 0; i < g->nnodes; i++)
      if (g->nodes[i].op == (ir_opcode)op)
        node = i;
    if (!r->traits && !pad && r->inst_in < 0)
      continue;
    cr_assert(node >= 0, "%s: marked in ops.def, add an example node here",
              r->name);
    const ir_node *n = &g->nodes[node];
    ir_shape outs[IR_MAX_LIST], outs2[IR_MAX_LIST];
    ir_attrs a = n->a;
    cr_assert(infer_node(g, n, &a, outs), "%s: example", r->name);
    if (pad) /* 'same' resolved to the pads of a 3x3 window */
      for (int k = 0; k < 4; k++)
        cr_expect_eq(a.pad[k], 1, "%s: pad=same not resolved", r->name);
    if (r->inst_in >= 0) /* (an instance appends it: optional inputs
                            after it, a residual, are never in a rule) */
      cr_expect(r->min_in <= r->inst_in && r->max_in == r->nnamed &&
                    r->max_in > r->inst_in,
                "%s: '!' on an input that is not optional", r->name);
    for (int i = 0; i < r->nparams; i++) {
      ir_param_id p = r->params[i];
      unsigned t = r->ptraits[i];
      const char *pn = ir_param_name(p);
      if (t & IR_PT_INST)
        cr_expect(
            p == IR_P_STRIDE || p == IR_P_GROUPS || p == IR_P_ACT ||
                p == IR_P_PAD || /* explicit pads (inst.c) */
                (op == IR_OP_RESHAPE && p == IR_P_SHAPE) ||
                (op == IR_OP_BATCHNORM && p == IR_P_EPS) ||
                (op == IR_OP_SLICE && (p == IR_P_STARTS || p == IR_P_ENDS)),
            "%s.%s: '!' on what rule instances do not substitute", r->name, pn);
      if (!(t & (IR_PT_DERIVED | IR_PT_DIMS | IR_PT_BATCH)))
        continue;
      ir_param_kind k = ir_param_kind_of(p);
      if (k == IR_PK_PAIR) { /* sizes (enlarge's kernel): '#' alone */
        cr_expect_eq(t & (IR_PT_DERIVED | IR_PT_BATCH), 0,
                     "%s.%s: only lists take ~ and ^", r->name, pn);
        ir_attrs b = n->a;
        ((int32_t *)(void *)((char *)&b + r->poff[i]))[0] += 1;
        cr_expect(!infer_node(g, n, &b, outs2) ||
                      !ir_shape_eq(&outs[0], &outs2[0]),
                  "%s.%s: marked '#', but shape inference neither uses nor "
                  "checks it",
                  r->name, pn);
        continue;
      }
      cr_assert(k == IR_PK_LIST || k == IR_PK_LIST2,
                "%s.%s: only lists and pairs follow shapes", r->name, pn);
      int64_t *v = k == IR_PK_LIST ? a.list : a.list2;
      int64_t *w =
          k == IR_PK_LIST ? h->nodes[node].a.list : h->nodes[node].a.list2;
      cr_expect_eq(w[0] == 3, !!(t & IR_PT_BATCH) && v[0] == 2,
                   "%s.%s: rebatched to %lld", r->name, pn, (long long)w[0]);
      ir_attrs b = n->a;
      (k == IR_PK_LIST ? b.list : b.list2)[0] += 1;
      int changed = !infer_node(g, n, &b, outs2);
      for (int o = 0; !changed && o < n->nout; o++)
        changed = !ir_shape_eq(&outs[o], &outs2[o]);
      cr_expect(changed,
                "%s.%s: marked as following shapes, but shape "
                "inference neither uses nor checks it",
                r->name, pn);
    }
  }
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Views by operator and shapes (ir_node_is_view). */
Test(optable, views) {
  base_diag d;
  const char *text = "input x: [1,4,1,6]\n"
                     "a = reshape(x) shape=[4,6]\n"
                     "b0, b1 = split(x) axis=1 sizes=[1,3]\n"
                     "c0, c1 = split(x) axis=3 sizes=[2,4]\n"
                     "t = transpose(x) perm=[0,2,1,3]\n"
                     "u = transpose(x) perm=[0,3,2,1]\n"
                     "s = slice(x) starts=[0,0,0,0] ends=[1,2,1,6]\n"
                     "r = relu(x)\n"
                     "output a, b0, b1, c0, c1, t, u, s, r\n";
  ir_graph *g = ir_parse(text, strlen(text), "views", &d);
  cr_assert(g, "%d: %s", d.line, d.msg);
  cr_expect(ir_node_is_view(g, &g->nodes[0]), "reshape");
  cr_expect(ir_node_is_view(g, &g->nodes[1]), "split along the 2nd dim");
  cr_expect(!ir_node_is_view(g, &g->nodes[2]), "split along the last dim");
  cr_expect(ir_node_is_view(g, &g->nodes[3]), "transpose of a 1-dim");
  cr_expect(!ir_node_is_view(g, &g->nodes[4]), "a real transpose");
  cr_expect(ir_node_is_view(g, &g->nodes[5]), "slice of leading rows");
  cr_expect(!ir_node_is_view(g, &g->nodes[6]), "relu");
  ir_graph_free(g);
}

/* ---- element types --------------------------------------------------------
 */

/* i64 / bool are written before a shape, f32 is not written; types follow
 * through the type-generic operators and print back identically. */
Test(dtype, parse_print_infer) {
  const char *text = "graph t\n"
                     "input ids: i64[2,3]\n"
                     "input m: bool[2,3]\n"
                     "weight e: [7,4]\n"
                     "g: [2,3,4] = gather(e, ids)\n"
                     "r: i64[3,2] = reshape(ids) shape=[3,2]\n"
                     "n: bool[2,3] = not(m)\n"
                     "q: bool[2,3] = equal(ids, ids)\n"
                     "c: [2,3] = cast(q) to=f32\n"
                     "w: [2,3] = where(n, c, c)\n"
                     "output g, r, w\n";
  ir_graph *g = parse_ok(text);
  cr_assert_eq(g->tensors[ir_find_tensor(g, "ids")].dtype, IR_DT_I64);
  cr_assert_eq(g->tensors[ir_find_tensor(g, "r")].dtype, IR_DT_I64);
  cr_assert_eq(g->tensors[ir_find_tensor(g, "q")].dtype, IR_DT_BOOL);
  cr_assert_eq(g->tensors[ir_find_tensor(g, "g")].dtype, IR_DT_F32);
  char *s = ir_print(g);
  cr_assert_str_eq(s, text);
  free(s);
  uint64_t h1, h2;
  cr_assert_eq(ir_graph_hash(g, &h1), BASE_OK);
  ir_graph_free(g);
  g = parse_ok("graph t\ninput ids: [2,3]\ninput m: bool[2,3]\n"
               "weight e: [7,4]\ng = reshape(ids) shape=[3,2]\noutput g\n");
  cr_assert_eq(ir_graph_hash(g, &h2), BASE_OK);
  ir_graph_free(g);
  cr_assert_neq(h1, h2);
}

/* Operators take float32 unless they are type-generic; each mismatch is
 * one message naming the operator, the input and both types. */
Test(dtype, mismatches_rejected) {
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"input i: i64[2]\ny = relu(i)\noutput y\n",
       "relu: input 1 (x) must be f32, f16 or bf16, got i64"},
      {"input e: [4,2]\ninput i: [3]\ny = gather(e, i)\noutput y\n",
       "gather: input 2 (indices) must be i64, got f32"},
      {"input c: [3]\ninput a: [3]\ny = where(c, a, a)\noutput y\n",
       "where: input 1 (cond) must be bool, got f32"},
      {"input a: i64[3]\ninput b: [3]\ny = equal(a, b)\noutput y\n",
       "equal: input 2 (b) must be i64, got f32"},
      {"input a: i64[3]\ninput b: [3]\ny = concat(a, b) axis=0\noutput y\n",
       "concat: input 2 (x) must be i64, got f32"},
      {"input a: [3]\ny: i64[3] = relu(a)\noutput y\n",
       "type mismatch: 'y' is annotated i64 but relu gives f32"},
      {"input a: int8[3]\ny = relu(a)\noutput y\n",
       "unknown element type 'int8'"},
      {"input a: [3]\ny = cast(a) to=int8\noutput y\n",
       "expected f32, i64 or bool"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    base_diag d;
    ir_graph *g = ir_parse(bad[i].text, strlen(bad[i].text), "t.graph", &d);
    cr_assert_null(g, "%s", bad[i].text);
    cr_assert(strstr(d.msg, bad[i].msg), "%s: %s", bad[i].text, d.msg);
    cr_assert_gt(d.line, 0, "%s", d.msg);
  }
}

/* Line lengths and columns are size_t inside the parser: a 2 GiB line
 * crashed it (an int length went negative, then copy_src wrote before its
 * buffer), a line of 4 GiB - 64 bytes wrote a byte out of bounds. Columns
 * saturate at INT_MAX. */
Test(parse, column_of_huge_offsets_saturates) {
  cr_assert_eq(ir_parse_col(0), 1);
  cr_assert_eq(ir_parse_col(41), 42);
  cr_assert_eq(ir_parse_col((size_t)INT_MAX - 1), INT_MAX);
  cr_assert_eq(ir_parse_col((size_t)INT_MAX), INT_MAX);
  cr_assert_eq(ir_parse_col((size_t)1 << 31), INT_MAX);
  cr_assert_eq(ir_parse_col(((size_t)4 << 30) - 64), INT_MAX);
  cr_assert_eq(ir_parse_col((size_t)-1), INT_MAX);
}

/* The real thing, with SUPEROPT_TEST_HUGE_LINE=BYTES (e.g. 2200000000; it
 * allocates that much): "input x: [1]", BYTES spaces, then a stray '?'. */
Test(parse, huge_line_is_an_error_not_a_crash) {
  const char *env = getenv("SUPEROPT_TEST_HUGE_LINE");
  if (!env) {
    cr_skip_test("set SUPEROPT_TEST_HUGE_LINE=BYTES to run (allocates it)");
    return;
  }
  size_t pad = (size_t)strtoull(env, NULL, 10);
  static const char head[] = "input x: [1]";
  size_t n = sizeof head - 1 + pad + 2;
  char *t = malloc(n + 1);
  cr_assert(t, "cannot allocate %zu bytes", n);
  memcpy(t, head, sizeof head - 1);
  memset(t + sizeof head - 1, ' ', pad);
  memcpy(t + n - 2, "?\n", 3);
  base_diag d;
  ir_graph *g = ir_parse(t, n, "huge.graph", &d);
  cr_assert_null(g);
  cr_assert_eq(d.line, 1);
  cr_assert_eq(d.col, ir_parse_col(n - 2), "col %d", d.col);
  cr_assert(strstr(d.msg, "expected end of line"), "%s", d.msg);
  cr_assert_eq(strlen(d.src), sizeof d.src - 1);
  free(t);
}

/* The lower stage's forms (src/fuse/lower.h) rebatch: a convolution's and
 * a matmul's residual input follows the batch (a residual that does not
 * is refused), an se node batches as its pool did, a concat_shuffle as a
 * concat of the channels. `run --batch` of an optimized graph needs it. */
Test(rebatch, lowered_forms) {
  ir_graph
      *g = parse_ok(
          "input x: [2,8,4,4]\nweight w: [8,8,3,3]\nweight b: [8]\n"
          "weight w1: [2,8,1,1]\nweight w2: [8,2,1,1]\n"
          "c = conv2d(x, w, b, x) act=relu\n"
          "s = se(c, w1, w2) act1=relu act2=sigmoid\n"
          "m = ewmul(c, s)\n"
          "k1, k2 = concat_shuffle(m, x) groups=2 starts=[0,8] ends=[8,16]\n"
          "input a: [2,3,8]\nweight v: [8,8]\nweight vb: [8]\n"
          "y = matmul(a, v, vb, a)\n"
          "output k1, k2, y\n"),
      *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 5, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(dim_of(h, "c", 0), 5);
  cr_assert_eq(dim_of(h, "s", 0), 5);
  cr_assert_eq(dim_of(h, "k2", 0), 5);
  cr_assert_eq(dim_of(h, "y", 0), 5);
  ir_graph_free(h);
  ir_graph_free(g);
  g = parse_ok("input x: [1,8,4,4]\nweight w: [8,8,3,3]\nweight b: [8]\n"
               "weight r: [1,8,4,4]\nc = conv2d(x, w, b, r)\noutput c\n");
  cr_assert_neq(ir_rebatch(g, 4, &h, &d), BASE_OK);
  cr_assert(strstr(d.msg, "residual input does not follow the batch"), "%s",
            d.msg);
  ir_graph_free(g);
}

/* Rebatching to the batch a graph has is a copy, even of a graph that
 * cannot be rebatched (Hugging Face exports: the attention mask gathered
 * along the batch axis; here a softmax across it): `run --batch B` and
 * `optimize --batch B` of a graph already at B work. */
Test(rebatch, to_the_same_batch_is_a_copy) {
  ir_graph *g = parse_ok("input x: [2,3]\ny = softmax(x) axis=0\n"
                         "output y\n"),
           *h = NULL;
  base_diag d;
  cr_assert_eq(ir_rebatch(g, 2, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(h->nnodes, g->nnodes);
  cr_assert_eq(dim_of(h, "y", 0), 2);
  ir_graph_free(h);
  cr_assert_neq(ir_rebatch(g, 4, &h, &d), BASE_OK);
  cr_assert(strstr(d.msg, "normalises along the batch axis"), "%s", d.msg);
  ir_graph_free(g);
}

/* ir_rebuild's steps: copied, dropped (a relu's output mapped to its
 * input), failing. */
static int drop_relu(void *u, ir_graph *h, const ir_graph *g, int n,
                     int32_t *map, base_diag *d) {
  const ir_node *nd = &g->nodes[n];
  if (u && nd->op == IR_OP_RELU) {
    map[nd->out[0]] = map[nd->in[0]];
    return 0;
  }
  if (nd->op == IR_OP_TANH)
    return base_diag_set(d, BASE_ERR_PARAM, 0, 0, "no tanh"), -1;
  return ir_rebuild_copy(h, g, n, map, d);
}

Test(ir, rebuild_node_by_node) {
  ir_graph *g = parse_ok("input x: [2,3]\nweight w: [3,4]\n"
                         "y = matmul(x, w)\nr = relu(y)\nz = sigmoid(r)\n"
                         "output z\n");
  base_diag d;
  ir_graph *same = ir_rebuild(g, drop_relu, NULL, &d);
  cr_assert(same, "%s", d.msg);
  char *a = ir_print(g), *b = ir_print(same);
  cr_assert_str_eq(a, b);
  ir_graph *h = ir_rebuild(g, drop_relu, (void *)1, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(h->nnodes, 2);
  cr_assert_eq(h->nodes[1].in[0], ir_find_tensor(h, "y"));
  ir_graph *t = parse_ok("input x: [2,3]\ny = tanh(x)\noutput y\n");
  cr_assert_null(ir_rebuild(t, drop_relu, NULL, &d));
  cr_assert_str_eq(d.msg, "no tanh");
  free(a), free(b);
  ir_graph_free(t), ir_graph_free(h), ir_graph_free(same), ir_graph_free(g);
}
