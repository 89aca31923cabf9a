/* test_lower_se.c: the lower stage's se family (src/fuse/lower_se.c).
 *
 * Squeeze-and-excitation chains become se nodes and channel shuffles
 * concat_shuffle nodes where the CUDA planner used to fold them, and only
 * there (a second reader, a graph output, too many weights); the CPU
 * executor computes the same outputs before and after; the lowered graph
 * prints and parses back, and ir_graph_unfuse (the ONNX export's) turns it
 * back into primitives computing the same. Costs: the roofline prices an
 * se node below its chain, and both operators' cost signatures build their
 * one-node graphs back (costdb measure).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb/costdb.h"
#include "lower_util.h"

/* Chains through f and h lower (relu / sigmoid with biases; none and a
 * clip without), those through k (its hidden result an output), o (its
 * pool read twice) and u (more weights than the kernel takes) do not. */
static const char se_text[] =
    "input x: [2,40,6,5]\ninput z: [2,300,3,4]\nweight w3: [40,40,3,3]\n"
    "weight w1: [10,40,1,1]\nweight b1: [10]\nweight w2: [40,10,1,1]\n"
    "weight b2: [40]\nweight wa: [6,40,1,1]\nweight wb: [40,6,1,1]\n"
    "weight wu: [200,300,1,1]\nweight wv: [300,200,1,1]\n"
    "c = conv2d(x, w3) act=relu\ng = global_avgpool(c)\n"
    "f1 = conv2d(g, w1, b1) act=relu\nf2 = conv2d(f1, w2, b2) act=sigmoid\n"
    "m = ewmul(c, f2)\ng2 = global_avgpool(x)\nh1 = conv2d(g2, wa)\n"
    "h2 = conv2d(h1, wb)\nq = clip(h2) min=0 max=1\nn2 = ewmul(x, q)\n"
    "g3 = global_avgpool(m)\nk1 = conv2d(g3, w1) act=relu\n"
    "k2 = conv2d(k1, w2, b2) act=sigmoid\n"
    "g6 = global_avgpool(c)\no1 = conv2d(g6, w1) act=relu\n"
    "o2 = conv2d(o1, w2)\no3 = ewadd(g6, o2)\n"
    "g7 = global_avgpool(z)\nu1 = conv2d(g7, wu) act=relu\n"
    "u2 = conv2d(u1, wv) act=sigmoid\n"
    "output m, n2, k1, k2, o3, u2\n";

Test(lower_se, squeeze_excitation) {
  ir_graph *g = lu_parse(se_text);
  lower_stats st;
  ir_graph *h = lu_lower(g, &st);
  cr_expect_eq(st.se, 2);
  cr_expect_eq(st.shuffles, 0);
  cr_expect_eq(lu_count_op(h, IR_OP_SE), 2);
  /* 5 convolutions and 3 pools left: k, o and u's chains */
  cr_expect_eq(lu_count_op(h, IR_OP_CONV2D), 1 + 6);
  cr_expect_eq(lu_count_op(h, IR_OP_GLOBAL_AVGPOOL), 3);
  cr_expect_eq(lu_count_op(h, IR_OP_CLIP), 0);
  const ir_node *f = lu_producer(h, "f2"), *q = lu_producer(h, "q");
  cr_assert_eq(f->op, IR_OP_SE);
  cr_expect_eq(f->nin, 5);
  cr_expect_eq(f->a.groups, IR_ACT_RELU, "act1");
  cr_expect_eq(f->a.axis, IR_ACT_SIGMOID, "act2");
  cr_expect(isinf(f->a.lo) && isinf(f->a.hi));
  cr_assert_eq(q->op, IR_OP_SE);
  cr_expect_eq(q->nin, 3);
  cr_expect(q->a.lo == 0.0f && q->a.hi == 1.0f);
  cr_expect_eq(ir_find_tensor(h, "h2"), -1, "the clip's input is gone");
  cr_expect_eq(lu_producer(h, "u2")->op, IR_OP_CONV2D);
  lu_same_outputs(g, h, 1e-5);
  /* $SUPEROPT_SE_MAXW: u's 120000 floats fit under a larger limit */
  setenv("SUPEROPT_SE_MAXW", "200000", 1);
  ir_graph *h2 = lu_lower(g, &st);
  unsetenv("SUPEROPT_SE_MAXW");
  cr_expect_eq(st.se, 3);
  cr_expect_eq(lu_producer(h2, "u2")->op, IR_OP_SE);
  lu_same_outputs(g, h2, 1e-5);
  ir_graph_free(h2);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* Three shuffles: g = 4 of three inputs into three uneven slices (one
 * also an output), one read by a slice and a convolution (written whole),
 * g = 2 into two halves; and one whose transpose has a second reader. */
static const char shuffle_text[] =
    "input x: [2,8,5,6]\ninput z: [2,4,5,6]\nweight w1: [8,8,1,1]\n"
    "weight w2: [4,4,3,3]\nweight w4: [5,20,1,1]\n"
    "a = conv2d(x, w1) act=relu\nb = conv2d(z, w2)\n"
    "k = concat(a, b, z) axis=1\nr = reshape(k) shape=[2,4,4,5,6]\n"
    "t = transpose(r) perm=[0,2,1,3,4]\ns = reshape(t) shape=[2,16,5,6]\n"
    "s1 = slice(s) starts=[0,0,0,0] ends=[2,3,5,6]\n"
    "s2 = slice(s) starts=[0,3,0,0] ends=[2,11,5,6]\n"
    "s3 = slice(s) starts=[0,11,0,0] ends=[2,16,5,6]\n"
    "c2 = conv2d(s2, w1) act=relu\nk2 = concat(s1, c2, s3, b) axis=1\n"
    "r2 = reshape(k2) shape=[2,2,10,5,6]\nt2 = transpose(r2) "
    "perm=[0,2,1,3,4]\ny2 = reshape(t2) shape=[2,20,5,6]\n"
    "q = slice(y2) starts=[0,4,0,0] ends=[2,20,5,6]\nf = conv2d(y2, w4)\n"
    "k3 = concat(x, z) axis=1\nr3 = reshape(k3) shape=[2,2,6,5,6]\n"
    "t3 = transpose(r3) perm=[0,2,1,3,4]\ny3 = reshape(t3) "
    "shape=[2,12,5,6]\n"
    "h1 = slice(y3) starts=[0,0,0,0] ends=[2,6,5,6]\n"
    "h2 = slice(y3) starts=[0,6,0,0] ends=[2,12,5,6]\n"
    "m = ewmul(h1, h2)\n"
    "k4 = concat(x, z) axis=1\nr4 = reshape(k4) shape=[2,3,4,5,6]\n"
    "t4 = transpose(r4) perm=[0,2,1,3,4]\ny4 = reshape(t4) "
    "shape=[2,12,5,6]\nt5 = ewadd(t4, t4)\n"
    "output s3, q, f, m, y4, t5\n";

Test(lower_se, channel_shuffle) {
  ir_graph *g = lu_parse(shuffle_text);
  lower_stats st;
  ir_graph *h = lu_lower(g, &st);
  cr_expect_eq(st.shuffles, 3);
  cr_expect_eq(st.se, 0);
  cr_expect_eq(lu_count_op(h, IR_OP_CONCAT_SHUFFLE), 3);
  cr_expect_eq(lu_count_op(h, IR_OP_TRANSPOSE), 1, "t4 stays");
  cr_expect_eq(lu_count_op(h, IR_OP_SLICE), 1, "q stays");
  cr_expect_eq(lu_count_op(h, IR_OP_CONCAT), 1, "k4 stays");
  const ir_node *n = lu_producer(h, "s2");
  cr_assert_eq(n->op, IR_OP_CONCAT_SHUFFLE);
  cr_expect_eq(n->nout, 3);
  cr_expect_eq(n->a.groups, 4);
  cr_expect_eq(n->a.list[1], 3);
  cr_expect_eq(n->a.list2[1], 11);
  n = lu_producer(h, "y2");
  cr_assert_eq(n->op, IR_OP_CONCAT_SHUFFLE);
  cr_expect_eq(n->nout, 1);
  cr_expect_eq(n->a.list2[0], 20);
  cr_expect_eq(lu_producer(h, "h2")->nout, 2);
  cr_expect_eq(lu_producer(h, "y4")->op, IR_OP_RESHAPE);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* In f16 and bf16 (the graph converted as optimize --dtype converts it)
 * the same three shuffles lower, their tensors keep the half type, and the
 * CPU executor computes the same bits before and after (a move rounds
 * nothing); bf16 ShuffleNet-V2 ran concat, reshape, transpose and slices
 * for each (H200, 2026-11-29: 0.140 ms of its 0.395 at batch 1). */
Test(lower_se, channel_shuffle_half) {
  ir_graph *g = lu_parse(shuffle_text);
  for (int i = 0; i < 2; i++) {
    ir_graph *gh = lu_to_half(g, i);
    lower_stats st;
    ir_graph *h = lu_lower(gh, &st);
    cr_expect_eq(st.shuffles, 3, "type %d", i);
    const ir_node *n = lu_producer(h, "s2");
    cr_assert_eq(n->op, IR_OP_CONCAT_SHUFFLE);
    cr_expect_eq(h->tensors[n->out[1]].dtype, i ? IR_DT_F16 : IR_DT_BF16);
    lu_same_outputs(gh, h, 0);
    ir_graph_free(h);
    ir_graph_free(gh);
  }
  ir_graph_free(g);
}

/* The lowered graphs print and parse back to the same graph, and
 * ir_graph_unfuse (ONNX export) writes them as primitives only. */
Test(lower_se, print_parse_unlower) {
  const char *texts[] = {se_text, shuffle_text};
  for (int k = 0; k < 2; k++) {
    ir_graph *g = lu_parse(texts[k]);
    ir_graph *h = lu_lower(g, NULL);
    free(lu_round_trip(h));
    ir_graph *u = lu_unfused(g, h, k ? 0 : 1e-5);
    cr_expect_eq(
        lu_count_op(u, IR_OP_SE) + lu_count_op(u, IR_OP_CONCAT_SHUFFLE), 0);
    ir_graph_free(u);
    ir_graph_free(h);
    ir_graph_free(g);
  }
}

/* Shape rules reject what the kernels do not compute. */
Test(lower_se, bad_nodes) {
  const char *bad[] = {
      "input x: [1,4,2,2]\nweight a: [2,3,1,1]\nweight b: [4,2,1,1]\n"
      "y = se(x, a, b)\noutput y\n",
      "input x: [1,4,2,2]\nweight a: [2,4,1,1]\nweight b: [4,2,1,1]\n"
      "weight c: [3]\ny = se(x, a, b, c)\noutput y\n",
      "input x: [1,4,2,2]\nweight a: [2,4,1,1]\nweight b: [4,2,1,1]\n"
      "y = se(x, a, b) min=1 max=0\noutput y\n",
      "input x: [1,4,2,2]\ny = concat_shuffle(x, x) groups=3 starts=[0] "
      "ends=[8]\noutput y\n",
      "input x: [1,4,2,2]\ny = concat_shuffle(x, x) groups=2 starts=[0] "
      "ends=[9]\noutput y\n",
      "input x: [1,4,2,2]\ny, z = concat_shuffle(x) groups=2 starts=[0,1] "
      "ends=[1]\noutput y\n",
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    base_diag d;
    ir_graph *g = ir_parse(bad[k], strlen(bad[k]), "t.graph", &d);
    cr_expect_null(g, "accepted:\n%s", bad[k]);
    ir_graph_free(g);
  }
}

/* Sum of the roofline estimates of g's nodes whose outputs are named in
 * names (NULL ended). */
static double estimate(const ir_graph *g, const char *const *names) {
  double t = 0;
  for (int k = 0; names[k]; k++)
    t += cd_estimate(cd_device_at(0), g, lu_producer(g, names[k]) - g->nodes);
  return t;
}

Test(lower_se, costs_and_signatures) {
  ir_graph *g = lu_parse(se_text);
  ir_graph *h = lu_lower(g, NULL);
  const char *chain[] = {"g", "f1", "f2", NULL}, *node[] = {"f2", NULL};
  double before = estimate(g, chain), after = estimate(h, node);
  cr_expect(after > 0 && after < before, "se %g us, chain %g us", after,
            before);
  ir_graph *s = lu_parse(shuffle_text);
  ir_graph *sh = lu_lower(s, NULL);
  const ir_graph *gs[] = {h, sh};
  const char *outs[] = {"f2", "s1"};
  for (int k = 0; k < 2; k++) {
    char sig[CD_SIG_MAX], back[CD_SIG_MAX];
    int i = (int)(lu_producer(gs[k], outs[k]) - gs[k]->nodes);
    cd_node_sig(gs[k], i, sig, sizeof sig);
    base_diag d;
    ir_graph *one = cd_sig_graph(sig, &d);
    cr_assert(one, "%s: %s", sig, d.msg);
    cr_expect_eq(one->nnodes, 1);
    cr_expect_eq(one->nodes[0].nout, gs[k]->nodes[i].nout);
    cd_node_sig(one, 0, back, sizeof back);
    cr_expect_str_eq(back, sig);
    ir_graph_free(one);
  }
  ir_graph_free(sh);
  ir_graph_free(s);
  ir_graph_free(h);
  ir_graph_free(g);
}
