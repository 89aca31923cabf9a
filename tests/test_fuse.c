/* test_fuse.c: the fused operator and the fusion pass on the CPU.
 *
 * Parsing, printing and errors of fused bodies; a property test: random
 * element-wise chains with broadcasting, fused by fuse_graph, compute the
 * same outputs (bit for bit: the fused reference kernel runs the same
 * kernels) as the unfused graph; every zoo model fused passes the
 * end-to-end check.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "fuse/fuse.h"
#include "lower_util.h"
#include "search/search.h"

#define SRC SUPEROPT_SOURCE_DIR

static const char fused_text[] =
    "input x: [2,3,4,5]\n"
    "weight s: [3]\nweight b: [3]\nweight m: [3]\nweight v: [3]\n"
    "weight c: [5]\n"
    "y = fused(x, s, b, m, v, c) { n = batchnorm($0, $1, $2, $3, $4) "
    "eps=0.001; a = ewadd(n, $5); r = clip(a) min=0 max=6; q = ewmul(r, $0) "
    "}\n"
    "output y\n";

static const char unfused_text[] = "input x: [2,3,4,5]\n"
                                   "weight s: [3]\nweight b: [3]\nweight m: "
                                   "[3]\nweight v: [3]\n"
                                   "weight c: [5]\n"
                                   "n = batchnorm(x, s, b, m, v) eps=0.001\n"
                                   "a = ewadd(n, c)\n"
                                   "r = clip(a) min=0 max=6\n"
                                   "y = ewmul(r, x)\n"
                                   "output y\n";

/* Runs g on seeded values; returns the values (caller frees). */
static ex_values *run(const ir_graph *g) {
  base_diag d;
  ex_values *v = ex_values_new(g);
  cr_assert_eq(ex_fill_random(g, v, 3, &d), BASE_OK, "%s", d.msg);
  ex_options o = {1, 0};
  cr_assert_eq(ex_run(g, v, &o, &d), BASE_OK, "%s", d.msg);
  return v;
}

/* fuse_graph's result with options o (NULL: none), asserted made. */
static ir_graph *fuse(const ir_graph *g, const fuse_options *o,
                      fuse_stats *st) {
  base_diag d;
  ir_graph *h = fuse_graph(g, o, st, &d);
  cr_assert(h, "%s", d.msg);
  return h;
}

static void assert_same_outputs(const ir_graph *a, const ir_graph *b) {
  ex_values *va = run(a), *vb = run(b);
  cr_assert_eq(a->noutputs, b->noutputs);
  for (int i = 0; i < a->noutputs; i++) {
    int ta = a->outputs[i], tb = b->outputs[i];
    int64_t n = ir_shape_numel(&a->tensors[ta].shape);
    cr_assert(ir_shape_eq(&a->tensors[ta].shape, &b->tensors[tb].shape));
    cr_assert(!memcmp(va->v[ta], vb->v[tb], sizeof(float) * (size_t)n),
              "output %d differs", i);
  }
  ex_values_free(va);
  ex_values_free(vb);
}

Test(fused, parse_print_round_trip_and_shape) {
  ir_graph *g = lu_parse(fused_text);
  cr_assert_eq(g->nnodes, 1);
  cr_assert_eq(g->nodes[0].op, IR_OP_FUSED);
  char buf[64];
  cr_assert_str_eq(ir_shape_str(&g->tensors[g->outputs[0]].shape, buf, 64),
                   "[2,3,4,5]");
  char *p1 = lu_round_trip(g);
  cr_assert(strstr(p1, "fused(x, s, b, m, v, c) { t0 = batchnorm($0, $1, $2, "
                       "$3, $4) eps=0.00100000005; t1 = ewadd(t0, $5); t2 = "
                       "clip(t1) min=0 max=6; t3 = ewmul(t2, $0) }"),
            "%s", p1);
  free(p1);
  ir_graph_free(g);
}

Test(fused, runs_like_the_unfused_subgraph) {
  ir_graph *f = lu_parse(fused_text), *u = lu_parse(unfused_text);
  assert_same_outputs(f, u); /* weights drawn with the same hints too */
  ir_graph_free(lu_unfused(u, f, 0)); /* the body written out (ONNX) */
  ir_graph_free(f);
  ir_graph_free(u);
}

Test(fused, equal_bodies_are_one_body) {
  ir_graph *a = lu_parse(fused_text), *b = lu_parse(fused_text);
  cr_assert_eq(a->nodes[0].a.body, b->nodes[0].a.body);
  cr_assert_eq(ir_body_get(a->nodes[0].a.body),
               ir_body_get(b->nodes[0].a.body));
  ir_graph_free(a);
  ir_graph_free(b);
}

/* Each malformed body: its error class and column. */
Test(fused, malformed_bodies_have_positions) {
  static const struct {
    const char *body;
    base_status code;
    int col;
  } cases[] = {
      {"{ a = relu($0) ; b = ewadd(a, $1)", BASE_ERR_SYNTAX, 50},
      {"{ a = relu($2) }", BASE_ERR_UNDEFINED, 28},
      {"{ a = conv2d($0, $1) }", BASE_ERR_PARAM, 23},
      {"{ a = relu(zz) }", BASE_ERR_UNDEFINED, 28},
      {"{ a = relu($0); b = relu($0); c = ewadd(b, $1) }", BASE_ERR_PARAM, 19},
      {"{ a = relu($0) }", BASE_ERR_PARAM, 17},
      {"{ a = clip($0, $1) min=0 max=1 }", BASE_ERR_ARITY, 23},
      {"{ a = ewadd($0, $1); a = relu(a) }", BASE_ERR_DUPLICATE, 38},
      {"{ a = clip($0) min=0; b = ewadd(a, $1) }", BASE_ERR_PARAM, 23},
      {"{ a = nosuch($0, $1) }", BASE_ERR_UNKNOWN_OP, 23},
      {"", BASE_ERR_SYNTAX, 17},
      {"{ a = ewadd($0, $1) } eps=1", BASE_ERR_UNKNOWN_PARAM, 39},
      {"{ a = ewadd($0, $1) }", BASE_ERR_SHAPE, 5}, /* [2,3] + [4] */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "input x: [2,3]\ninput w: [4]\ny = fused(x, w) %s\noutput y\n",
             cases[i].body);
    base_diag d;
    ir_graph *g = ir_parse(text, strlen(text), "e.graph", &d);
    cr_assert_null(g, "case %zu parsed", i);
    cr_expect_eq(d.code, cases[i].code, "case %zu: code %d (%s)", i, d.code,
                 d.msg);
    cr_expect_eq(d.line, 3, "case %zu", i);
    cr_expect_eq(d.col, cases[i].col, "case %zu: col %d (%s)", i, d.col, d.msg);
    cr_expect_str_eq(d.file, "e.graph");
  }
}

Test(fused, too_many_inputs_is_an_arity_error) {
  char text[4096];
  size_t k = (size_t)snprintf(text, sizeof text, "input x: [2]\ny = fused(");
  for (int i = 0; i < 70; i++)
    k += (size_t)snprintf(text + k, sizeof text - k, "%sx", i ? ", " : "");
  snprintf(text + k, sizeof text - k, ") { a = relu($0) }\noutput y\n");
  base_diag d;
  cr_assert_null(ir_parse(text, strlen(text), "m.graph", &d));
  cr_assert_eq(d.code, BASE_ERR_ARITY, "%s", d.msg);
  cr_assert_eq(d.line, 2);
}

/* ---- property test: random chains ---------------------------------------- */

static const char *const unary[] = {"relu", "sigmoid", "tanh", "gelu", "erf"};
static const char *const binary[] = {"ewadd", "ewsub", "ewmul"};

/* A random graph: an input [2,3,5,4], broadcast weights of shapes that
 * broadcast against it, and a chain/tree of element-wise operators, some
 * values read twice, one kept as a second output now and then. */
static char *random_graph(unsigned seed, int row) {
  static const char *const wshapes[] = {"[4]",       "[5,1]",     "[3,1,1]",
                                        "[1,3,5,4]", "[2,3,5,4]", "[]"};
  srand(seed);
  size_t cap = 8192, k = 0;
  char *s = malloc(cap);
  k += (size_t)snprintf(s + k, cap - k, "input x: [2,3,5,4]\n");
  int nw = 1 + rand() % 4;
  for (int w = 0; w < nw; w++)
    k += (size_t)snprintf(s + k, cap - k, "weight w%d: %s\n", w,
                          wshapes[rand() % 6]);
  int nv = 1 + rand() % 10;
  for (int i = 0; i < nv; i++) {
    /* operands: x, an earlier value, or a weight */
    char a[16], b[16];
    int pick = i ? rand() % (i + 1) : 0;
    if (pick == 0)
      snprintf(a, sizeof a, "x");
    else
      snprintf(a, sizeof a, "v%d", pick - 1);
    int r = rand() % 10;
    if (r < 4)
      k += (size_t)snprintf(s + k, cap - k, "v%d = %s(%s)\n", i,
                            unary[rand() % 5], a);
    else if (r < 5)
      k += (size_t)snprintf(s + k, cap - k, "v%d = clip(%s) min=-0.5 max=0.7\n",
                            i, a);
    else {
      int q = rand() % 3;
      if (q == 0)
        snprintf(b, sizeof b, "w%d", rand() % nw);
      else if (q == 1 && i > 0)
        snprintf(b, sizeof b, "v%d", rand() % i);
      else
        snprintf(b, sizeof b, "x");
      /* weights on the left too: the result may be wider than both */
      if (rand() % 4 == 0)
        k += (size_t)snprintf(s + k, cap - k, "v%d = %s(%s, %s)\n", i,
                              binary[rand() % 3], b, a);
      else
        k += (size_t)snprintf(s + k, cap - k, "v%d = %s(%s, %s)\n", i,
                              binary[rand() % 3], a, b);
    }
  }
  if (row) { /* one row reduction over the last axis, then maybe a map */
    static const char *const rows[] = {
        "softmax(v%d)", "layernorm(v%d, g, b)", "layernorm(v%d) eps=0.01",
        "reduce_mean(v%d) axes=[3]", "reduce_mean(v%d) axes=[-1] keepdims=0"};
    char op[64];
    snprintf(op, sizeof op, rows[rand() % 5], nv - 1);
    k += (size_t)snprintf(s + k, cap - k,
                          "weight g: [4]\nweight b: [4]\nv%d = %s\n", nv, op);
    nv++;
    if (rand() % 3 == 0) {
      k += (size_t)snprintf(s + k, cap - k, "v%d = %s(v%d)\n", nv,
                            unary[rand() % 5], nv - 1);
      nv++;
    }
  }
  if (nv > 2 && rand() % 3 == 0)
    k += (size_t)snprintf(s + k, cap - k, "output v%d\n", rand() % (nv - 1));
  snprintf(s + k, cap - k, "output v%d\n", nv - 1);
  return s;
}

/* Chains (row = 0), or chains ending in a row reduction (row = 1): fused
 * and printed, parsed again, they compute bit for bit what the unfused
 * graph computes. Returns how many fused graphs had a row reduction in a
 * body. */
static int random_chains(int row) {
  int fused_any = 0, tried = 0, with_row = 0;
  for (unsigned seed = 1; seed <= 300; seed++) {
    char *text = random_graph(seed, row);
    base_diag d;
    ir_graph *g = ir_parse(text, strlen(text), "r.graph", &d);
    if (!g) { /* shapes that do not broadcast: skip */
      cr_assert_eq(d.code, BASE_ERR_SHAPE, "seed %u: %s\n%s", seed, d.msg,
                   text);
      free(text);
      continue;
    }
    tried++;
    fuse_stats st;
    ir_graph *h = fuse_graph(g, NULL, &st, &d);
    cr_assert(h, "seed %u: %s", seed, d.msg);
    cr_assert_eq(ir_graph_validate(h, &d), BASE_OK, "seed %u: %s", seed, d.msg);
    fused_any += st.groups > 0;
    for (int i = 0; i < h->nnodes; i++)
      if (h->nodes[i].op == IR_OP_FUSED &&
          ir_body_row(ir_body_get(h->nodes[i].a.body))) {
        with_row++;
        break;
      }
    cr_assert_leq(h->nnodes, g->nnodes);
    free(lu_round_trip(h)); /* printed and parsed again: the same graph */
    assert_same_outputs(g, h);
    ir_graph_free(h);
    ir_graph_free(g);
    free(text);
  }
  cr_assert_gt(tried, 150, "only %d graphs broadcast", tried);
  cr_assert_gt(fused_any, tried / 2, "fused only %d of %d", fused_any, tried);
  return with_row;
}

Test(fused, random_chains_fused_compute_the_same) {
  cr_assert_eq(random_chains(0), 0);
}

Test(fused, random_chains_with_a_row_reduction_compute_the_same) {
  int n = random_chains(1);
  cr_assert_gt(n, 100, "only %d bodies with a row reduction", n);
}

/* A value read twice: recomputed when cheaper (relu of the input), kept
 * when not (a sum of two full tensors). */
Test(fused, shared_values_kept_or_recomputed) {
  ir_graph *g = lu_parse("input x: [8,64]\ninput z: [8,64]\n"
                         "r = relu(x)\na = sigmoid(r)\nb = tanh(r)\n"
                         "s = ewadd(x, z)\np = sigmoid(s)\nq = tanh(s)\n"
                         "e = ewmul(p, q)\noutput a, b, e\n");
  fuse_stats st;
  ir_graph *h = fuse(g, NULL, &st);
  cr_assert_eq(st.recomputed, 1); /* r */
  cr_assert_neq(ir_find_tensor(h, "s"), -1, "s is kept");
  cr_assert_eq(ir_find_tensor(h, "r"), -1, "r is recomputed");
  cr_assert_eq(h->nnodes, 4); /* a, b (each with r), s, e */
  assert_same_outputs(g, h);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A residual add the CUDA executor folds into its convolution (with the
 * relu after it) stays unfused; with the residual computed after the
 * convolution it cannot be folded and add + relu become one fused node. */
Test(fused, residual_epilogue_left_to_the_convolution) {
  static const char *head = "input x: [2,4,6,6]\nweight w: [4,4,3,3]\n"
                            "weight b: [4]\n";
  char text[512];
  snprintf(text, sizeof text,
           "%sr = relu(x)\nc = conv2d(r, w, b)\na = ewadd(c, r)\n"
           "y = relu(a)\noutput y\n",
           head);
  ir_graph *g = lu_parse(text);
  fuse_stats st;
  ir_graph *h = fuse(g, NULL, &st);
  cr_assert_eq(h->nnodes, g->nnodes, "nothing fused");
  ir_graph_free(h);
  ir_graph_free(g);
  snprintf(text, sizeof text,
           "%sc = conv2d(x, w, b)\nr = relu(x)\na = ewadd(c, r)\n"
           "y = relu(a)\noutput y\n",
           head);
  g = lu_parse(text);
  h = fuse(g, NULL, &st);
  cr_assert_eq(h->nnodes, 2, "conv and fused relu(x), add, relu");
  assert_same_outputs(g, h);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A cost function that prices every fused node too high: nothing fused. */
static base_status pricey(void *u, const ir_graph *g, int node, double *cost,
                          int *estimated, base_diag *d) {
  (void)u, (void)estimated, (void)d;
  *cost = g->nodes[node].op == IR_OP_FUSED ? 1e9 : 1;
  return BASE_OK;
}

Test(fused, cost_refuses_groups) {
  ir_graph *g = lu_parse(unfused_text);
  fuse_options o = {pricey, NULL};
  fuse_stats st;
  ir_graph *h = fuse(g, &o, &st);
  cr_assert_eq(st.groups, 0);
  cr_assert_geq(st.rejected, 1);
  cr_assert_eq(h->nnodes, g->nnodes);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* One per node; fails (a database error, say) on the n-th call. */
static base_status counting(void *u, const ir_graph *g, int node, double *cost,
                            int *estimated, base_diag *d) {
  int *left = u;
  (void)g, (void)node, (void)estimated;
  if (*left >= 0 && (*left)-- == 0)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "costdb: disk I/O error");
  *cost = 1;
  return BASE_OK;
}

/* The cost sums leave weight-only nodes out (as the search's do), and a
 * cost function's error fails fuse_graph with its message. */
Test(fused, cost_sums_and_errors) {
  ir_graph *g = lu_parse("input x: [2,8]\n"
                         "weight w: [2,8]\n"
                         "w2 = relu(w)\n" /* weight-only: free */
                         "a = ewadd(x, w2)\n"
                         "b = sigmoid(a)\n"
                         "c = ewmul(b, x)\n"
                         "output c\n");
  int left = -1;
  fuse_options o = {counting, &left};
  fuse_stats st;
  ir_graph *h = fuse(g, &o, &st);
  cr_expect_eq(st.groups, 1);
  cr_expect_eq(st.cost_before, 3, "%g: relu(w) counted", st.cost_before);
  cr_expect_eq(st.cost_after, 1, "%g: relu(w) counted", st.cost_after);
  ir_graph_free(h);
  for (int n = 0; n < 8; n++) { /* 4 pricing the group, 3 + 1 summing */
    left = n;
    base_diag d;
    h = fuse_graph(g, &o, &st, &d);
    cr_expect_null(h, "failure at cost call %d ignored", n);
    cr_expect_eq(d.code, BASE_ERR_IO);
    cr_expect_str_eq(d.msg, "costdb: disk I/O error");
    ir_graph_free(h);
  }
  ir_graph_free(g);
}

/* The big ones are left to the plain build: under ASan their CPU checks
 * took most of this test's 95 s (CI, 2 cores). */
static int big_model(const char *file) {
#ifdef __SANITIZE_ADDRESS__
  static const char *const big[] = {"bert_base.graph",      "nasnet_a.graph",
                                    "inception_v3.graph",   "resnet50.graph",
                                    "resnext50_taso.graph", "tv_resnet50.graph",
                                    "tv_resnext50.graph",   "csrnet.graph"};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++)
    if (!strcmp(file, big[i]))
      return 1;
#else
  (void)file;
#endif
  return 0;
}

/* Every zoo model, fused as it is (batch norms and activations not yet
 * folded, so most of them fuse), passes the end-to-end check (under ASan
 * the small ones). */
Test(fused, zoo_models_fused_pass_the_check, .timeout = 900) {
  DIR *dir = opendir(SRC "/models");
  cr_assert(dir);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name);
    if (len < 7 || strcmp(e->d_name + len - 6, ".graph") ||
        big_model(e->d_name))
      continue;
    char path[1024];
    snprintf(path, sizeof path, SRC "/models/%s", e->d_name);
    base_diag d;
    ir_graph *g = ir_parse_file(path, &d);
    cr_assert(g, "%s: %s", path, d.msg);
    fuse_stats st;
    ir_graph *h = fuse_graph(g, NULL, &st, &d);
    cr_assert(h, "%s: %s", path, d.msg);
    double err = 1;
    cr_assert_eq(ex_check(g, h, 1, &err, &d), BASE_OK, "%s: %s", path, d.msg);
    cr_expect_leq(err, 1e-5, "%s: error %g", e->d_name, err);
    cr_log_info("%s: %d fused nodes for %d operators, error %g", e->d_name,
                st.groups, st.fused_ops, err);
    ir_graph_free(h);
    ir_graph_free(g);
    n++;
  }
  closedir(dir);
  cr_assert_geq(n, 4);
}

/* BERT's heads: matmul, smul, softmax, matmul become one attention node
 * (bit for bit the same outputs: ex_ref_attention runs the same kernels);
 * without the scale too. */
#define ATT_HEAD                                                               \
  "input q: [2,3,5,8]\ninput k: [2,3,8,7]\ninput v: [2,3,7,6]\n"               \
  "weight s: []\n"
/* the scaled chain computing y, and the scores z of a second one */
#define ATT_SCALED                                                             \
  "sc = matmul(q, k)\nsd = smul(sc, s)\np = softmax(sd) axis=3\n"              \
  "y = matmul(p, v)\nz = matmul(q, k)\n"

Test(fused, attention_chain_becomes_one_node) {
  ir_graph *g =
      lu_parse(ATT_HEAD ATT_SCALED "p2 = softmax(z)\n"
                                   "y2 = matmul(p2, v)\noutput y, y2\n");
  fuse_stats st;
  ir_graph *h = fuse(g, NULL, &st);
  cr_assert_eq(st.attention, 2);
  cr_assert_eq(h->nnodes, 2);
  int y = ir_find_tensor(h, "y"), y2 = ir_find_tensor(h, "y2");
  cr_assert(y >= 0 && y2 >= 0);
  lu_node(h, "y", IR_OP_ATTENTION, 4); /* the scale is an input */
  cr_assert_eq(h->nodes[h->tensors[y2].node].nin, 3, "no scale");
  assert_same_outputs(g, h);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A zero weight: the guard's where(., 0, .) (att_zero: its values known). */
static const float att_zero[1] = {0.0f};

static void set_zero(ir_graph *g, const char *name) {
  int t = ir_find_tensor(g, name);
  cr_assert(t >= 0);
  g->tensors[t].data = att_zero;
}

/* The same chain in bf16 (a model converted by --dtype: its smul reads a
 * bf16 scale, its softmax runs in bf16 without casts) becomes one bf16
 * attention node; so do one with a bias and one with SDPA's q and k
 * scalars, a mask and the guard (att_emit's helper nodes in bf16), within
 * bf16's tolerance of the chains. */
Test(fused, attention_chain_in_bf16) {
  ir_graph *g =
      lu_parse("input q: bf16[2,3,5,8]\ninput k: bf16[2,3,8,7]\n"
               "input v: bf16[2,3,7,6]\nweight s: bf16[]\nweight b: bf16[5,7]\n"
               "weight c: bf16[]\nweight zr: bf16[1]\n" ATT_SCALED
               "zb = ewadd(z, b)\np2 = softmax(zb)\ny2 = matmul(p2, v)\n"
               "q3 = ewmul(q, c)\nk3 = ewmul(c, k)\nz3 = matmul(q3, k3)\n"
               "b3 = ewadd(z3, b)\np3 = softmax(b3)\ne3 = equal(p3, p3)\n"
               "n3 = not(e3)\ng3 = where(n3, zr, p3)\ny3 = matmul(g3, v)\n"
               "output y, y2, y3\n");
  set_zero(g, "zr");
  fuse_stats st;
  ir_graph *h = fuse(g, NULL, &st);
  cr_assert_eq(st.attention, 3);
  /* the bf16 scale an input */
  const ir_node *a = lu_node(h, "y", IR_OP_ATTENTION, 4);
  cr_assert_eq(h->tensors[a->out[0]].dtype, IR_DT_BF16);
  /* a bias with no scale: the scale of 1 made for it is bf16 (a cast of
   * the float32 constant), as every operand of the node */
  const ir_node *a2 = lu_node(h, "y2", IR_OP_ATTENTION, 5);
  /* SDPA's two scalars and a mask, guarded: the scalars join the scale
   * (a bf16 product of the two, computed at load), q and k are read as
   * they come */
  const ir_node *a3 = lu_node(h, "y3", IR_OP_ATTENTION, 5);
  cr_assert_eq(a3->a.keepdims, 1, "guard=1");
  cr_assert_eq(a3->in[0], ir_find_tensor(h, "q"));
  cr_assert_eq(a3->in[1], ir_find_tensor(h, "k"));
  cr_assert_eq(ir_find_tensor(h, "q3"), -1, "no q product left");
  cr_assert_eq(h->nodes[h->tensors[a3->in[3]].node].op, IR_OP_EWMUL);
  for (int k = 0; k < 5; k++) {
    cr_assert_eq(h->tensors[a2->in[k]].dtype, IR_DT_BF16, "y2 input %d", k);
    cr_assert_eq(h->tensors[a3->in[k]].dtype, IR_DT_BF16, "y3 input %d", k);
  }
  base_diag d;
  ex_check_opts o;
  ex_check_result r;
  ex_check_opts_default(&o);
  /* values of scale 1 only: at the check's 10 and 1000 this chain's scores
   * reach 1e4 to 1e8, where the chain's own bf16 rounding of them (ulps of
   * 64 and more) decides which key a one-hot softmax picks, and the node
   * keeps them in float32 (as flash kernels and PyTorch's SDPA do) */
  o.rounds = 1;
  cr_assert_eq(ex_check_rounds(g, h, &o, &r, &d), BASE_OK, "%s", d.msg);
  cr_assert_leq(r.worst, 1.0, "outside bf16's tolerance: %g (output %d)",
                r.worst, r.output);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Exported attention (PyTorch's SDPA, T5, Llama): a bias added to the
 * scores (-inf masks: log(relu(-w)), rows of them masked everywhere), the
 * guard where(not(equal(p, p)), 0, p) after the softmax, a bias without a
 * scale (a scale of 1 made for it): attention nodes with b and guard=1,
 * bit for bit the chain's outputs; printed and parsed back the same. */
Test(fused, attention_bias_and_guard) {
  ir_graph *g = lu_parse(
      ATT_HEAD "weight w: [3,5,1]\nweight wb: [5,7]\nweight z: [1]\n"
               "n0 = neg(w)\nm = relu(n0)\nmb = log(m)\n"
               "sc = matmul(q, k)\nsd = smul(sc, s)\nbb = ewadd(sd, mb)\n"
               "p = softmax(bb) axis=3\ne = equal(p, p)\nn = not(e)\n"
               "g0 = where(n, z, p)\ny = matmul(g0, v)\n"
               "sc2 = matmul(q, k)\nbb2 = ewadd(wb, sc2)\np2 = softmax(bb2)\n"
               "y2 = matmul(p2, v)\noutput y, y2\n");
  set_zero(g, "z");
  fuse_stats st;
  ir_graph *h = fuse(g, NULL, &st);
  cr_assert_eq(st.attention, 2);
  const ir_node *a = lu_node(h, "y", IR_OP_ATTENTION, 5);
  cr_assert_eq(a->a.keepdims, 1, "guard=1");
  /* a scale of 1 made for the bias */
  const ir_node *a2 = lu_node(h, "y2", IR_OP_ATTENTION, 5);
  cr_assert_eq(a2->a.keepdims, 0);
  assert_same_outputs(g, h);
  ex_values *v = run(h); /* rows masked everywhere: 0, not NaN */
  int y = ir_find_tensor(h, "y"), zeros = 0;
  for (int64_t i = 0; i < ir_shape_numel(&h->tensors[y].shape); i++) {
    cr_assert(!isnan(v->v[y][i]));
    zeros += v->v[y][i] == 0.0f;
  }
  cr_assert_gt(zeros, 0, "no row masked everywhere: the test tests nothing");
  ex_values_free(v);
  char *text = lu_round_trip(h);
  cr_assert(strstr(text, "guard=1"), "%s", text);
  free(text);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* g fused into *h with one attention node, of nin inputs, computing y:
 * the node. */
static const ir_node *one_attention(const ir_graph *g, int nin, ir_graph **h) {
  fuse_stats st;
  *h = fuse(g, NULL, &st);
  cr_assert_eq(st.attention, 1);
  return lu_node(*h, "y", IR_OP_ATTENTION, nin);
}

/* a's and b's outputs equal up to rounding (ex_check: 1e-5). */
static void close_outputs(const ir_graph *a, const ir_graph *b) {
  base_diag d;
  double err = 1;
  cr_assert_eq(ex_check(a, b, 1, &err, &d), BASE_OK, "%s", d.msg);
  cr_expect_leq(err, 1e-5);
}

/* SDPA's sqrt(scale) on q and on k: both scalars join the attention's
 * scale (weight-only ewmuls), equal up to rounding. */
Test(fused, attention_takes_the_q_and_k_scalars) {
  ir_graph *g = lu_parse(ATT_HEAD "weight c1: []\nweight c2: []\nweight wb: "
                                  "[1,3,5,7]\nq1 = ewmul(q, c1)\n"
                                  "k1 = ewmul(c2, k)\nsc = matmul(q1, k1)\n"
                                  "bb = ewadd(sc, wb)\np = softmax(bb)\n"
                                  "y = matmul(p, v)\noutput y\n");
  ir_graph *h;
  const ir_node *a = one_attention(g, 5, &h);
  cr_assert_eq(a->in[0], ir_find_tensor(h, "q"));
  cr_assert_eq(a->in[1], ir_find_tensor(h, "k"));
  close_outputs(g, h);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Swin's shifted windows: the relative-position bias, then the scores
 * reshaped to [batch, windows, heads, S, T], the windows' mask added, and
 * reshaped back: one attention node whose bias is both (computed once at
 * load), equal up to rounding. */
Test(fused, attention_takes_swins_window_mask) {
  ir_graph *g =
      lu_parse("input q: [4,3,5,8]\ninput k: [4,3,8,5]\ninput v: [4,3,5,6]\n"
               "weight s: []\nweight rb: [1,3,5,5]\nweight mk: [1,4,1,5,5]\n"
               "q1 = ewmul(q, s)\nsc = matmul(q1, k)\nb1 = ewadd(sc, rb)\n"
               "w5 = reshape(b1) shape=[1,4,3,5,5]\nw6 = ewadd(w5, mk)\n"
               "w4 = reshape(w6) shape=[4,3,5,5]\np = softmax(w4)\n"
               "y = matmul(p, v)\noutput y\n");
  ir_graph *h;
  const ir_node *a = one_attention(g, 5, &h);
  char buf[64];
  cr_assert_str_eq(ir_shape_str(&h->tensors[a->in[4]].shape, buf, 64),
                   "[4,3,5,5]");
  close_outputs(g, h);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* MaxViT's einsums: rank-3 products, the scores reshaped to [1, windows,
 * heads, S, T] for the bias and the softmax and the probabilities reshaped
 * back: one attention node on the rank-3 operands, its bias the rank-5
 * bias expanded and reshaped (at load), equal up to rounding. */
Test(fused, attention_through_maxvits_reshapes) {
  ir_graph *g =
      lu_parse("input q: [6,5,8]\ninput k: [6,8,5]\ninput v: [6,5,4]\n"
               "weight rb: [2,5,5]\n"
               "sc = matmul(q, k)\nw5 = reshape(sc) shape=[1,3,2,5,5]\n"
               "b5 = ewadd(w5, rb)\np5 = softmax(b5)\n"
               "p3 = reshape(p5) shape=[6,5,5]\ny = matmul(p3, v)\noutput y\n");
  ir_graph *h;
  const ir_node *a = one_attention(g, 5, &h);
  char buf[64];
  cr_assert_str_eq(ir_shape_str(&h->tensors[a->in[4]].shape, buf, 64),
                   "[6,5,5]");
  close_outputs(g, h);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Not attention: a bias that grows the scores, a where after the softmax
 * that is not the guard (its constant not 0, or no known values). */
Test(fused, attention_bias_refused_outside_its_pattern) {
  static const char *const bodies[] = {
      "sc = matmul(q, k)\nbb = ewadd(sc, wg)\np = softmax(bb)\n"
      "y = matmul(p, vg)\noutput y\n",
      "sc = matmul(q, k)\np = softmax(sc)\ne = equal(p, p)\nn = not(e)\n"
      "g0 = where(n, one, p)\ny = matmul(g0, v)\noutput y\n",
      "sc = matmul(q, k)\np = softmax(sc)\ne = equal(p, p)\nn = not(e)\n"
      "g0 = where(n, z, p)\ny = matmul(g0, v)\noutput y\n",
  };
  for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "%sweight wg: [2,2,3,5,7]\ninput vg: [2,2,3,7,6]\n"
             "weight one: [1]\nweight z: [1]\n%s",
             ATT_HEAD, bodies[i]);
    ir_graph *g = lu_parse(text);
    static const float one[1] = {1.0f};
    g->tensors[ir_find_tensor(g, "one")].data = one;
    fuse_stats st;
    ir_graph *h = fuse(g, NULL, &st);
    cr_expect_eq(st.attention, 0, "case %zu", i);
    ir_graph_free(h);
    ir_graph_free(g);
  }
}

/* What must not become attention: the scores or probabilities read twice
 * or a graph output, a softmax over another axis, a matmul with a bias, a
 * shared k of rank 2; the element-wise chain is fused as usual. */
Test(fused, attention_refused_outside_its_pattern) {
  static const char *const bodies[] = {
      "sc = matmul(q, k)\np = softmax(sc)\ny = matmul(p, v)\n"
      "e = relu(p)\noutput y, e\n",
      "sc = matmul(q, k)\np = softmax(sc)\ny = matmul(p, v)\noutput y, sc\n",
      "sc = matmul(q, k)\np = softmax(sc) axis=2\ny = matmul(p, v)\n"
      "output y\n",
      "sc = matmul(q, k)\np = softmax(sc)\ny = matmul(p, v, b)\noutput y\n",
      "sc = matmul(q, k2)\np = softmax(sc)\ny = matmul(p, v)\noutput y\n",
  };
  for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
    char text[1024];
    snprintf(text, sizeof text, "%sweight b: [6]\nweight k2: [8,7]\n%s",
             ATT_HEAD, bodies[i]);
    ir_graph *g = lu_parse(text);
    fuse_stats st;
    ir_graph *h = fuse(g, NULL, &st);
    cr_expect_eq(st.attention, 0, "case %zu", i);
    assert_same_outputs(g, h);
    ir_graph_free(h);
    ir_graph_free(g);
  }
}

/* Priced above its chain, attention is not made. */
static base_status pricey_attention(void *u, const ir_graph *g, int node,
                                    double *cost, int *estimated,
                                    base_diag *d) {
  (void)u, (void)estimated, (void)d;
  *cost = g->nodes[node].op == IR_OP_ATTENTION ? 1e9 : 1;
  return BASE_OK;
}

/* A graph holding an attention node already (an optimized graph optimized
 * again) besides a chain: the chain is priced against its own node. */
static int att_priced;
static base_status count_attention(void *u, const ir_graph *g, int node,
                                   double *cost, int *estimated, base_diag *d) {
  (void)u, (void)estimated, (void)d;
  cr_assert(node >= 0 && node < g->nnodes, "node %d of %d", node, g->nnodes);
  att_priced += g->nodes[node].op == IR_OP_ATTENTION;
  *cost = g->nodes[node].op == IR_OP_ATTENTION ? 0.5 : 1;
  return BASE_OK;
}

Test(fused, attention_chain_beside_an_attention_node) {
  ir_graph *g = lu_parse(ATT_HEAD "a0 = attention(q, k, v, s)\n"
                                  "sc = matmul(q, k)\nsd = smul(sc, s)\n"
                                  "p = softmax(sd)\ny = matmul(p, v)\n"
                                  "output a0, y\n");
  fuse_options o = {count_attention, NULL};
  fuse_stats st;
  att_priced = 0;
  ir_graph *h = fuse(g, &o, &st);
  cr_assert_eq(st.attention, 1);
  cr_assert_eq(h->nnodes, 2);
  cr_assert_geq(att_priced, 1);
  assert_same_outputs(g, h);
  ir_graph_free(h);
  ir_graph_free(g);
}

Test(fused, attention_refused_by_cost) {
  ir_graph *g =
      lu_parse(ATT_HEAD "sc = matmul(q, k)\nsd = smul(sc, s)\n"
                        "p = softmax(sd)\ny = matmul(p, v)\noutput y\n");
  fuse_options o = {pricey_attention, NULL};
  fuse_stats st;
  ir_graph *h = fuse(g, &o, &st);
  cr_assert_eq(st.attention, 0);
  cr_assert_eq(st.groups, 1, "smul and softmax fused instead");
  ir_graph_free(h);
  ir_graph_free(g);
}

/* fuse_peel: a product whose epilogue adds a bias and a residual, read by a
 * layer norm alone (BERT's post-norm layers). */
static const char peel_text[] = "input x: [2,3,8]\n"
                                "input r: [2,3,8]\n"
                                "weight w: [8,8]\n"
                                "weight b: [8]\n"
                                "weight g: [8]\n"
                                "weight e: [8]\n"
                                "y = matmul(x, w, b, r)\n"
                                "z = layernorm(y, g, e) axis=2\n"
                                "u = matmul(x, w, b)\n"
                                "v = layernorm(u, g, e) axis=2\n"
                                "s = ewadd(u, v)\n"
                                "output z, s\n";

/* Products with an epilogue dear, lone layer norms dear, fused nodes
 * cheap: the peeled graph is priced lower. */
static base_status rows_cheap(void *u, const ir_graph *g, int node,
                              double *cost, int *estimated, base_diag *d) {
  (void)u, (void)estimated, (void)d;
  const ir_node *n = &g->nodes[node];
  *cost = n->op == IR_OP_FUSED       ? 2
          : n->op == IR_OP_MATMUL    ? (n->nin > 2 ? 10 : 5)
          : n->op == IR_OP_LAYERNORM ? 10
                                     : 3;
  return BASE_OK;
}

static int count_nodes(const ir_graph *g, ir_opcode op, int nin) {
  int c = 0;
  for (int i = 0; i < g->nnodes; i++)
    c += g->nodes[i].op == op && (nin < 0 || g->nodes[i].nin == nin);
  return c;
}

/* Only the product the layer norm alone reads is a site (u is read by the
 * sum too); its bias and residual become adds, the same values. */
Test(fused, peel_takes_the_epilogue_out_before_a_lone_layernorm) {
  ir_graph *g = lu_parse(peel_text);
  base_diag d;
  int n = -1;
  ir_graph *p = NULL;
  cr_assert_eq(fuse_peel(g, &p, &n, &d), BASE_OK, "%s", d.msg);
  cr_assert(p);
  cr_assert_eq(n, 1, "y (u is read by the sum too)");
  cr_assert_eq(count_nodes(p, IR_OP_MATMUL, 2), 1);
  cr_assert_eq(count_nodes(p, IR_OP_MATMUL, 3), 1, "u keeps its bias");
  cr_assert_eq(count_nodes(p, IR_OP_EWADD, -1), 3, "y's bias, residual; s");
  close_outputs(g, p);
  ir_graph_free(p);
  ir_graph_free(g);
  /* no site (the fused nodes' test graph): nothing built */
  g = lu_parse(unfused_text);
  cr_assert_eq(fuse_peel(g, &p, &n, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(n, 0);
  cr_assert_null(p);
  ir_graph_free(g);
}

/* fuse_graph keeps the peeled graph where it is priced lower (y's adds and
 * norm one fused node after a plain product), and the graph as given where
 * fused nodes are dear. */
Test(fused, peel_kept_only_where_cheaper) {
  ir_graph *g = lu_parse(peel_text);
  fuse_options o = {rows_cheap, NULL};
  fuse_stats st;
  ir_graph *h = fuse(g, &o, &st);
  cr_assert_eq(st.peeled, 1);
  cr_assert_eq(count_nodes(h, IR_OP_MATMUL, 2), 1);
  cr_assert_eq(count_nodes(h, IR_OP_LAYERNORM, -1), 1, "v stays apart");
  cr_assert_geq(count_nodes(h, IR_OP_FUSED, -1), 1);
  close_outputs(g, h);
  ir_graph_free(h);
  fuse_options dear = {pricey, NULL};
  h = fuse(g, &dear, &st);
  cr_assert_eq(st.peeled, 0);
  cr_assert_eq(count_nodes(h, IR_OP_MATMUL, 4), 1, "y as given");
  ir_graph_free(h);
  ir_graph_free(g);
}
