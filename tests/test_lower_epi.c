/* test_lower_epi.c: the lower stage's epilogue family (src/fuse/lower_epi.c).
 *
 * A residual add (and the relu after it) folded into the convolution or
 * matmul computing one operand as its residual input r, a bias vector added
 * to a matmul without bias as its bias: the nodes folded go, the CPU
 * executor computes the same outputs, ONNX export's unfusing brings the add
 * back; a clip (ReLU6) after a convolution as its act=clip; a relu after
 * an element-wise operator as a fused node of the two; a convolution's
 * bias moved into the fused node reading it; ConvNeXt's residual add
 * after a channels-last matmul as the matmul's residual through a
 * transpose; patterns the executor never folded stay; the rewrite matcher
 * does not take a convolution with a residual for a plain one.
 */
#include <stdio.h>
#include <string.h>

#include "lower_util.h"
#include "rewrite/rewrite_int.h"

/* text parsed into *g and lowered, n epilogues folded: the result. */
static ir_graph *lowered(const char *text, ir_graph **g, int n) {
  lower_stats st;
  ir_graph *h = lu_parse_lower(text, g, &st);
  cr_assert_eq(st.epilogues, n, "%d epilogues, expected %d", st.epilogues, n);
  return h;
}

static const char block[] =
    "input x: [1,4,6,6]\n"
    "weight w1: [4,4,3,3]\nweight b1: [4]\nweight w2: [4,4,3,3]\n"
    "weight b2: [4]\n"
    "y = conv2d(x, w1, b1) act=relu\n"
    "z = conv2d(y, w2, b2)\n"
    "a = ewadd(z, x)\n"
    "out = relu(a)\n"
    "output out\n";

Test(lower_epi, conv_residual_and_relu) {
  ir_graph *g, *h = lowered(block, &g, 2);
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_RELU), 0);
  const ir_node *c = lu_node(h, "out", IR_OP_CONV2D, 4);
  cr_assert_eq(c->in[3], ir_find_tensor(h, "x"));
  cr_assert_eq(c->a.act, IR_ACT_RELU);
  lu_same_outputs(g, h, 0);
  char *p1 = lu_round_trip(h); /* printed and parsed back: the same graph */
  cr_assert(strstr(p1, "conv2d(y, w2, b2, x) act=relu"), "%s", p1);
  /* unfused for ONNX: the add and the relu again, the same outputs */
  ir_graph *u = lu_unfused(g, h, 0);
  cr_assert_eq(lu_count_op(u, IR_OP_EWADD), 1);
  cr_assert_eq(lu_count_op(u, IR_OP_RELU), 1);
  cr_assert_eq(lu_producer(u, "out")->op, IR_OP_RELU);
  free(p1);
  ir_graph_free(u), ir_graph_free(h), ir_graph_free(g);
}

Test(lower_epi, matmul_bias_then_residual_stays_one_fold) {
  static const char text[] =
      "input x: [2,3,8]\ninput s: [2,3,5]\n"
      "weight w: [8,5]\nweight b: [5]\nweight w2: [8,5]\nweight b2: [5]\n"
      "m = matmul(x, w)\n"
      "y = ewadd(m, b)\n"
      "r = relu(y)\n"
      "m2 = matmul(x, w2, b2)\n"
      "y2 = ewadd(s, m2)\n"
      "output r\noutput y2\n";
  ir_graph *g, *h = lowered(text, &g, 3);
  /* the bias vector as its bias */
  const ir_node *m = lu_node(h, "r", IR_OP_MATMUL, 3);
  cr_assert_eq(m->in[2], ir_find_tensor(h, "b"));
  cr_assert_eq(m->a.act, IR_ACT_RELU);
  const ir_node *m2 = lu_node(h, "y2", IR_OP_MATMUL, 4);
  cr_assert_eq(m2->in[3], ir_find_tensor(h, "s"));
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD), 0);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* What the executor never folded stays: a second reader of the product,
 * a convolution without bias (a residual needs one before it), an activation
 * already on the product, a residual computed after the product, a
 * matmul's rank-4 image result whose residual may be channels-last (a
 * convolution's), a relu whose input is a graph output. */
Test(lower_epi, leaves_what_the_executor_never_folded) {
  static const char text[] =
      "input x: [1,4,6,6]\n"
      "weight w: [4,4,1,1]\nweight b: [4]\nweight m: [6,6]\nweight mb: [6]\n"
      "c1 = conv2d(x, w, b)\n"
      "a1 = ewadd(c1, x)\n"
      "t1 = ewmul(c1, x)\n"
      "c2 = conv2d(x, w)\n"
      "a2 = ewadd(c2, x)\n"
      "c3 = conv2d(x, w, b) act=relu\n"
      "a3 = ewadd(c3, x)\n"
      "c4 = conv2d(x, w, b)\n"
      "late = conv2d(x, w, b) act=relu\n"
      "a4 = ewadd(c4, late)\n"
      "p = matmul(x, m, mb)\n"
      "a5 = ewadd(p, c1)\n"
      "r5 = relu(a5)\n"
      "c6 = conv2d(x, w, b)\n"
      "r6 = relu(c6)\n"
      "output a1\noutput t1\noutput a2\noutput a3\noutput a4\noutput "
      "r5\noutput a5\noutput c6\noutput r6\n";
  ir_graph *g, *h = lowered(text, &g, 0);
  cr_assert_eq(h->nnodes, g->nnodes);
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD), 5);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* ReLU6 after a convolution, directly and after its residual add: act=clip
 * with the bounds; a matmul's clip stays (only a convolution clamps). */
Test(lower_epi, clip_into_convolutions) {
  static const char text[] =
      "input x: [1,4,6,6]\ninput q: [2,6]\n"
      "weight w: [4,4,3,3]\nweight b: [4]\nweight m: [6,6]\n"
      "weight mb: [6]\n"
      "c1 = conv2d(x, w, b)\n"
      "k1 = clip(c1) min=0 max=6\n"
      "c2 = conv2d(k1, w, b)\n"
      "a2 = ewadd(c2, k1)\n"
      "k2 = clip(a2) min=-1 max=0.5\n"
      "p = matmul(q, m, mb)\n"
      "kp = clip(p) min=0 max=6\n"
      "output k2\noutput kp\n";
  ir_graph *g, *h = lowered(text, &g, 3);
  cr_assert_eq(lu_count_op(h, IR_OP_CLIP), 1); /* the matmul's */
  const ir_node *c1 = lu_producer(h, "k1"), *c2 = lu_producer(h, "k2");
  cr_assert_eq(c1->op, IR_OP_CONV2D);
  cr_assert_eq(c1->a.act, IR_ACT_CLIP);
  cr_assert(c1->a.lo == 0 && c1->a.hi == 6);
  cr_assert_eq(c2->nin, 4);
  cr_assert(c2->a.act == IR_ACT_CLIP && c2->a.lo == -1 && c2->a.hi == 0.5f);
  lu_same_outputs(g, h, 0);
  char *p1 = lu_round_trip(h);
  cr_assert(strstr(p1, "k1: [1,4,6,6] = conv2d(x, w, b) act=clip max=6"), "%s",
            p1);
  ir_graph *u = lu_unfused(g, h, 0);
  cr_assert_eq(lu_count_op(u, IR_OP_CLIP), 3);
  cr_assert_eq(lu_count_op(u, IR_OP_EWADD), 1);
  free(p1);
  ir_graph_free(u), ir_graph_free(h), ir_graph_free(g);
}

/* A convolution's bias moved into the layer norm that reads it through a
 * transpose to channels-last (ConvNeXt), as its xb input; not where the
 * layer norm has no gamma and beta, nor where the transposed result has
 * a second reader. */
Test(lower_epi, conv_bias_into_layernorm) {
  static const char text[] =
      "input x: [1,8,5,5]\nweight wd: [8,1,3,3]\nweight bd: [8]\n"
      "weight g: [8]\nweight be: [8]\n"
      "d = conv2d(x, wd, bd) groups=8\nt = transpose(d) perm=[0,2,3,1]\n"
      "l = layernorm(t, g, be) axis=3\n"
      "d2 = conv2d(x, wd, bd) groups=8\nt2 = transpose(d2) perm=[0,2,3,1]\n"
      "l2 = layernorm(t2) axis=3\n"
      "d3 = conv2d(x, wd, bd) groups=8\nt3 = transpose(d3) perm=[0,2,3,1]\n"
      "l3 = layernorm(t3, g, be) axis=3\nq = relu(t3)\n"
      "output l, l2, l3, q\n";
  ir_graph *g, *h = lowered(text, &g, 1);
  const ir_node *l = lu_producer(h, "l"), *d = lu_producer(h, "d");
  cr_assert_eq(l->nin, 4);
  cr_assert_eq(l->in[3], ir_find_tensor(h, "bd"));
  cr_assert_eq(d->nin, 2, "the bias moved");
  cr_assert_eq(lu_producer(h, "l2")->nin, 1);
  cr_assert_eq(lu_producer(h, "d3")->nin, 3);
  lu_same_outputs(g, h, 0);
  char *p1 = ir_print(h);
  cr_assert(strstr(p1, "= layernorm(t, g, be, bd) axis=3"), "%s", p1);
  ir_graph *u = lu_unfused(g, h, 0);
  cr_assert_eq(lu_producer(u, "l")->nin, 3);
  free(p1);
  ir_graph_free(u), ir_graph_free(h), ir_graph_free(g);
}

/* Bad act=clip parameters: one message each. */
Test(lower_epi, clip_parameters_checked) {
  static const char *const bad[][2] = {
      {"y = conv2d(x, w, b) act=clip min=2 max=1",
       "conv2d: act=clip needs min <= max, got min=2 max=1"},
      {"y = conv2d(x, w, b) act=relu max=6",
       "conv2d: min and max go with act=clip"},
      {"y = matmul(q, m) act=clip",
       "matmul: act=clip is conv2d's only (with min and max)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "input x: [1,4,6,6]\ninput q: [2,6]\nweight w: [4,4,1,1]\n"
             "weight b: [4]\nweight m: [6,6]\n%s\noutput y\n",
             bad[i][0]);
    lu_refused(text, bad[i][1]);
  }
}

Test(lower_epi, residual_shape_checked) {
  static const char text[] = "input x: [1,4,6,6]\ninput r: [1,4,6,5]\n"
                             "weight w: [4,4,1,1]\nweight b: [4]\n"
                             "y = conv2d(x, w, b, r)\noutput y\n";
  lu_refused(text, "residual r [1,4,6,5] must have the result's shape "
                   "[1,4,6,6]");
}

/* A rule's plain convolution (x, w) matches a graph's convolution with a
 * bias (an instance adds it), never one with a residual. */
Test(lower_epi, matcher_skips_a_residual) {
  ir_graph *p = lu_parse("input x: [1,4,6,6]\nweight w: [4,4,1,1]\n"
                         "y = conv2d(x, w)\noutput y\n");
  ir_graph *g = lu_parse("input x: [1,4,6,6]\nweight w: [4,4,1,1]\n"
                         "weight b: [4]\n"
                         "y = conv2d(x, w, b)\nz = conv2d(x, w, b, y)\n"
                         "output z\n");
  cr_assert_eq(rewrite_params_match(&p->nodes[0], &g->nodes[0], 0),
               REWRITE_INSTANCE);
  cr_assert_eq(rewrite_params_match(&p->nodes[0], &g->nodes[1], 0), 0);
  cr_assert_neq(rewrite_node_sig(g, &g->nodes[0]),
                rewrite_node_sig(g, &g->nodes[1]));
  ir_graph_free(p), ir_graph_free(g);
}

/* A relu after an element-wise operator (IR_OPF_RELU_EPILOGUE) that it
 * alone reads: fused(op, relu), as the CUDA executor's fold was; with a
 * second reader, or after a fused node, it stays. */
Test(lower_epi, relu_after_elementwise_fused) {
  static const char text[] =
      "input x: [1,4,6,6]\ninput y: [1,4,6,6]\nweight s: [4]\n"
      "weight bb: [4]\nweight mu: [4]\nweight v: [4]\n"
      "a = ewadd(x, y)\nra = relu(a)\n"
      "n = batchnorm(x, s, bb, mu, v)\nrn = relu(n)\n"
      "m = ewmul(x, y)\nrm = relu(m)\n"
      "f = fused(x) { e = exp($0) }\nrf = relu(f)\n"
      "output ra, rn, rm, m, rf\n";
  ir_graph *g, *h = lowered(text, &g, 2);
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD) + lu_count_op(h, IR_OP_BATCHNORM),
               0);
  cr_assert_eq(lu_count_op(h, IR_OP_RELU), 2, "after m (read twice), after f");
  const ir_node *ra = lu_producer(h, "ra"), *rn = lu_producer(h, "rn");
  cr_assert_eq(ra->op, IR_OP_FUSED);
  cr_assert_eq(rn->op, IR_OP_FUSED);
  cr_assert_eq(rn->nin, 5);
  const ir_body *b = ir_body_get(rn->a.body);
  cr_assert_eq(b->nops, 2);
  cr_assert_eq(b->ops[0].op, IR_OP_BATCHNORM);
  cr_assert_eq(b->ops[1].op, IR_OP_RELU);
  cr_assert_eq(ir_find_tensor(h, "a"), -1, "a is inside the fused node");
  lu_same_outputs(g, h, 0);
  ir_graph *u = lu_unfused(g, h, 0);
  cr_assert_eq(lu_count_op(u, IR_OP_FUSED), 0);
  cr_assert_eq(lu_count_op(u, IR_OP_RELU), 4);
  ir_graph_free(u), ir_graph_free(h), ir_graph_free(g);
}

/* The bias of a convolution that a fused node alone reads moves into the
 * node: the convolution loses it, the node reads it as [C,1,1] and adds
 * it first. Read twice, or by a row reduction: it stays. */
Test(lower_epi, conv_bias_into_fused_reader) {
  static const char text[] =
      "input x: [2,4,5,6]\nweight w: [4,4,3,3]\nweight b: [4]\n"
      "weight w2: [4,4,1,1]\nweight b2: [4]\nweight s: [4]\n"
      "weight bb: [4]\nweight mu: [4]\nweight v: [4]\n"
      "c = conv2d(x, w, b)\nd = conv2d(x, w2, b2)\n"
      "y = fused(c, d) { a = ewsub($0, $1); r = relu(a) }\n"
      "k = conv2d(y, w, b)\nz = fused(k) { e = exp($0) }\nkk = ewadd(k, z)\n"
      "q = conv2d(y, w2, b2)\n"
      "n = fused(x, s, bb, mu, v) { o = batchnorm($0, $1, $2, $3, $4) }\n"
      "m = fused(q, n) { p = ewmul($0, $1) }\n"
      "output kk, m\n";
  /* c and d into y, q into m */
  ir_graph *g, *h = lowered(text, &g, 3);
  cr_assert_eq(lu_producer(h, "c")->nin, 2);
  cr_assert_eq(lu_producer(h, "d")->nin, 2);
  cr_assert_eq(lu_producer(h, "k")->nin, 3, "k is read twice");
  cr_assert_eq(lu_producer(h, "q")->nin, 2);
  const ir_node *y = lu_producer(h, "y");
  cr_assert_eq(y->nin, 4);
  const ir_tensor *bc = &h->tensors[y->in[2]];
  cr_assert_eq(bc->shape.rank, 3);
  cr_assert_eq(bc->shape.dim[0], 4);
  cr_assert_eq(h->nodes[bc->node].op, IR_OP_RESHAPE);
  cr_assert_eq(h->nodes[bc->node].in[0], ir_find_tensor(h, "b"));
  const ir_body *b = ir_body_get(y->a.body);
  cr_assert_eq(b->nops, 4);
  cr_assert_eq(b->ops[0].op, IR_OP_EWADD);
  cr_assert_eq(b->ops[0].in[0], -1);
  cr_assert_eq(b->ops[0].in[1], -3);
  lu_same_outputs(g, h, 0);
  free(lu_round_trip(h)); /* printed and parsed back: the same graph */
  ir_graph *u = lu_unfused(g, h, 0);
  base_diag d;
  ir_graph *r = NULL, *r0 = NULL; /* run --batch: the bias keeps no batch */
  cr_assert_eq(ir_rebatch(h, 3, &r, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ir_rebatch(g, 3, &r0, &d), BASE_OK, "%s", d.msg);
  lu_same_outputs(r0, r, 0);
  ir_graph_free(r), ir_graph_free(r0);
  ir_graph_free(u), ir_graph_free(h), ir_graph_free(g);
  /* a row reduction's input: stays (the generated row kernel loads it) */
  h = lowered("input x: [2,4,5,6]\nweight w: [4,4,1,1]\nweight b: [4]\n"
              "c = conv2d(x, w, b)\nn = fused(c) { o = softmax($0) }\n"
              "output n\n",
              &g, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* ConvNeXt's block end: a matmul over [N,H,W,C] rows, permuted back to
 * images and added to the block's input r: the matmul takes r permuted
 * to [N,H,W,C] as its residual, the permute writes the add's result (also
 * after a bias add folded into the matmul). Not
 * where r is a graph input (NCHW on the GPU: its transpose would be a
 * copy) or the matmul's result is read twice. */
Test(lower_epi, channels_last_matmul_residual) {
  static const char text[] =
      "input x: [1,8,3,3]\nweight w: [8,8,3,3]\nweight cb: [8]\n"
      "weight m: [8,8]\nweight mb: [8]\n"
      "r = conv2d(x, w, cb)\nt = transpose(r) perm=[0,2,3,1]\n"
      "p = matmul(t, m, mb)\nq = transpose(p) perm=[0,3,1,2]\n"
      "y = ewadd(r, q)\n"
      "t2 = transpose(y) perm=[0,2,3,1]\np2 = matmul(t2, m)\n"
      "pb2 = ewadd(mb, p2)\nq2 = transpose(pb2) perm=[0,3,1,2]\n"
      "y2 = ewadd(q2, y)\n"
      "t3 = transpose(x) perm=[0,2,3,1]\np3 = matmul(t3, m, mb)\n"
      "q3 = transpose(p3) perm=[0,3,1,2]\ny3 = ewadd(q3, x)\n"
      "output y2, y3\n";
  /* y, pb2's bias, y2 */
  ir_graph *g, *h = lowered(text, &g, 3);
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD), 1, "y3's stays");
  const ir_node *y = lu_producer(h, "y"), *p = lu_producer(h, "p");
  cr_assert_eq(y->op, IR_OP_TRANSPOSE);
  cr_assert_eq(y->in[0], ir_find_tensor(h, "p"));
  cr_assert_eq(p->nin, 4);
  const ir_node *rv = &h->nodes[h->tensors[p->in[3]].node];
  cr_assert_eq(rv->op, IR_OP_TRANSPOSE);
  cr_assert_eq(rv->in[0], ir_find_tensor(h, "r"));
  cr_assert_eq(lu_producer(h, "y2")->op, IR_OP_TRANSPOSE);
  /* the bias add folded first */
  const ir_node *p2 = lu_node(h, "pb2", IR_OP_MATMUL, 4);
  cr_assert_eq(p2->in[2], ir_find_tensor(h, "mb"));
  cr_assert_eq(lu_producer(h, "p3")->nin, 3);
  lu_same_and_free(g, h, 0);
}

/* The index of the node computing tensor name in g. */
static int node_of(const ir_graph *g, const char *name) {
  int t = ir_find_tensor(g, name);
  cr_assert_geq(t, 0, "%s", name);
  return g->tensors[t].node;
}

/* A ResNet block with a projection shortcut listed after the main chain
 * (r1 -> b2, b2 with a bias and no activation): the add folds into b2
 * with the shortcut as its residual, the shortcut moved to right after
 * the node computing its input (or to the front when it reads only graph
 * inputs); nothing else moves. */
#define BLOCK_HEAD                                                             \
  "input x: [1,4,6,6]\nweight w0: [8,4,1,1]\nweight w1: [8,8,3,3]\n"           \
  "weight w2: [8,8,3,3]\nweight ws: [8,8,1,1]\nweight wx: [8,4,1,1]\n"         \
  "weight b: [8]\ns0 = conv2d(x, w0, b) act=relu\n"
#define CHAIN                                                                  \
  BLOCK_HEAD "r1 = conv2d(s0, w1, b) act=relu\nb2 = conv2d(r1, w2, b)\n"

/* g lowered: checked the same, the shortcuts moved in *n. */
static ir_graph *lower_moved(const char *text, int *n) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  lu_same_outputs(g, h, 0);
  *n = st.shortcuts;
  ir_graph_free(g);
  return h;
}

Test(lower_epi, shortcut_moved_ahead) {
  int n = -1;
  ir_graph *h = lower_moved(CHAIN "ds = conv2d(s0, ws, b)\n"
                                  "a = ewadd(b2, ds)\ny = relu(a)\noutput y\n",
                            &n);
  cr_assert_eq(n, 1);
  cr_assert_eq(node_of(h, "ds"), node_of(h, "s0") + 1);
  cr_assert_lt(node_of(h, "ds"), node_of(h, "r1"));
  const ir_node *y = lu_producer(h, "y");
  cr_assert_eq(y->op, IR_OP_CONV2D, "the add and relu folded into b2");
  cr_assert_eq(y->in[3], ir_find_tensor(h, "ds"));
  ir_graph_free(h);
  h = lower_moved(CHAIN "dx = conv2d(x, wx, b)\na = ewadd(dx, b2)\noutput a\n",
                  &n);
  cr_assert_eq(n, 1, "operands in either order");
  cr_assert_eq(node_of(h, "dx"), 0, "reads only the input: first");
  cr_assert_eq(lu_producer(h, "a")->in[3], ir_find_tensor(h, "dx"));
  ir_graph_free(h);
}

/* The block as the generated rules leave it (e00581 folded the add: b2
 * takes ds as its residual, with the relu): ds still moves ahead of the
 * chain (ResNet-18's `--passes none` graph); left alone where it is first
 * already or its input comes after the chain's first node. */
Test(lower_epi, shortcut_moved_ahead_of_a_folded_residual) {
  int n = -1;
  ir_graph *h = lower_moved(BLOCK_HEAD "r1 = conv2d(s0, w1, b) act=relu\n"
                                       "ds = conv2d(s0, ws, b)\n"
                                       "y = conv2d(r1, w2, b, ds) act=relu\n"
                                       "output y\n",
                            &n);
  cr_assert_eq(n, 1);
  cr_assert_eq(node_of(h, "ds"), node_of(h, "s0") + 1);
  cr_assert_lt(node_of(h, "ds"), node_of(h, "r1"));
  cr_assert_eq(lu_producer(h, "y")->in[3], ir_find_tensor(h, "ds"));
  ir_graph_free(h);
  const char *left[] = {
      BLOCK_HEAD "ds = conv2d(s0, ws, b)\nr1 = conv2d(s0, w1, b) act=relu\n"
                 "y = conv2d(r1, w2, b, ds) act=relu\noutput y\n",
      BLOCK_HEAD "r1 = conv2d(s0, w1, b) act=relu\n"
                 "ds = conv2d(r1, ws, b)\n"
                 "y = conv2d(r1, w2, b, ds) act=relu\noutput y\n",
  };
  for (size_t c = 0; c < sizeof left / sizeof *left; c++) {
    h = lower_moved(left[c], &n);
    cr_assert_eq(n, 0, "case %zu", c);
    cr_assert_lt(node_of(h, "r1"), node_of(h, "y"));
    ir_graph_free(h);
  }
}

/* Left in place: the shortcut already first; the chain's last node with
 * an activation, read twice or without a bias (the add could not fold
 * into it); two siblings of one input (neither is a chain); an add of a
 * shortcut and a non-convolution. */
Test(lower_epi, shortcut_left_alone) {
  const char *cases[] = {
      BLOCK_HEAD "ds = conv2d(s0, ws, b)\nr1 = conv2d(s0, w1, b) act=relu\n"
                 "b2 = conv2d(r1, w2, b)\na = ewadd(b2, ds)\noutput a\n",
      BLOCK_HEAD "r1 = conv2d(s0, w1, b) act=relu\n"
                 "b2 = conv2d(r1, w2, b) act=relu\n"
                 "ds = conv2d(s0, ws, b)\na = ewadd(b2, ds)\noutput a\n",
      CHAIN "ds = conv2d(s0, ws, b)\na = ewadd(b2, ds)\noutput a, b2\n",
      BLOCK_HEAD "r1 = conv2d(s0, w1, b) act=relu\nb2 = conv2d(r1, w2)\n"
                 "ds = conv2d(s0, ws, b)\na = ewadd(b2, ds)\noutput a\n",
      BLOCK_HEAD "c1 = conv2d(s0, ws, b)\nc2 = conv2d(s0, w2, b)\n"
                 "a = ewadd(c1, c2)\noutput a\n",
      BLOCK_HEAD "r1 = conv2d(s0, w1, b) act=relu\n"
                 "b2 = relu(r1)\nds = conv2d(s0, ws, b)\n"
                 "a = ewadd(b2, ds)\noutput a\n",
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    int n = -1;
    ir_graph *g = lu_parse(cases[c]), *h = lower_moved(cases[c], &n);
    cr_assert_eq(n, 0, "case %zu", c);
    for (int i = 0, j = 0; i < g->nnodes; i++) { /* the same order */
      int t = ir_find_tensor(h, g->tensors[g->nodes[i].out[0]].name);
      if (t < 0 || h->tensors[t].kind != IR_T_VALUE)
        continue; /* folded */
      cr_assert_geq(h->tensors[t].node, j, "case %zu: %s moved", c,
                    h->tensors[t].name);
      j = h->tensors[t].node;
    }
    ir_graph_free(h);
    ir_graph_free(g);
  }
}

/* Each node stays after its inputs: a shortcut whose last input is a
 * moved shortcut stays (d2 reads ds), and a node a shortcut was moved to
 * follow does not move itself (s1 follows sx, so sx, itself a shortcut of
 * the later add, stays after b2). */
Test(lower_epi, shortcut_anchors_stay) {
  int n = -1;
  ir_graph *h = lower_moved(CHAIN "ds = conv2d(s0, ws, b)\n"
                                  "a = ewadd(b2, ds)\n"
                                  "r3 = conv2d(a, w1, b) act=relu\n"
                                  "b4 = conv2d(r3, w2, b)\n"
                                  "d2 = conv2d(ds, ws, b)\n"
                                  "a2 = ewadd(b4, d2)\noutput a2\n",
                            &n);
  cr_assert_eq(n, 1, "ds only: d2 would follow the moved ds");
  cr_assert_lt(node_of(h, "ds"), node_of(h, "r1"));
  ir_graph_free(h);
  h = lower_moved(CHAIN "sx = conv2d(s0, ws, b)\n"
                        "t1 = conv2d(sx, w1, b) act=relu\n"
                        "t2 = conv2d(t1, w2, b)\n"
                        "s1 = conv2d(sx, ws, b)\n"
                        "a1 = ewadd(t2, s1)\na2 = ewadd(b2, sx)\n"
                        "output a1, a2\n",
                  &n);
  cr_assert_eq(n, 1, "s1 only: sx is its anchor");
  cr_assert_eq(node_of(h, "s1"), node_of(h, "sx") + 1);
  cr_assert_gt(node_of(h, "sx"), node_of(h, "r1"));
  ir_graph_free(h);
}

/* A matmul without bias (Llama's o_proj and down_proj) takes its residual
 * add after a zero bias made from constants alone (weight-only: computed
 * once), in either operand order; the same outputs, and ONNX export's
 * unfusing brings the add back. */
Test(lower_epi, matmul_without_bias_takes_residual) {
  static const char text[] = "input x: [1,6,8]\ninput s: [1,6,8]\n"
                             "weight w: [8,8]\nweight w2: [8,8]\n"
                             "m = matmul(x, w)\ny = ewadd(s, m)\n"
                             "m2 = matmul(y, w2)\ny2 = ewadd(m2, y)\n"
                             "output y2\n";
  ir_graph *g, *h = lowered(text, &g, 2);
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD), 0);
  unsigned char wonly[32] = {0};
  cr_assert_lt(h->nnodes, 32);
  ir_weight_only(h, wonly);
  const char *outs[] = {"y", "y2"}, *res[] = {"s", "y"};
  for (int k = 0; k < 2; k++) {
    const ir_node *m = lu_producer(h, outs[k]);
    cr_assert_eq(m->op, IR_OP_MATMUL);
    cr_assert_eq(m->nin, 4);
    cr_assert_eq(m->in[3], ir_find_tensor(h, res[k]));
    int b = h->tensors[m->in[2]].node;
    cr_assert(b >= 0 && wonly[b], "the zero bias is weight-only");
    cr_assert_eq(h->tensors[m->in[2]].shape.rank, 1);
    cr_assert_eq(h->tensors[m->in[2]].shape.dim[0], 8);
  }
  lu_same_and_free(g, h, 0);
}

/* In a half graph the zero bias is cast to the matmul's type (a float32
 * bias was refused: "matmul: input 3 (bias) must be f16"). */
Test(lower_epi, half_matmul_zero_bias_in_its_type) {
  static const char text[] = "input x: f16[1,6,8]\ninput s: f16[1,6,8]\n"
                             "weight w: f16[8,8]\n"
                             "m = matmul(x, w)\ny = ewadd(m, s)\noutput y\n";
  ir_graph *g, *h = lowered(text, &g, 1);
  const ir_node *m = lu_node(h, "y", IR_OP_MATMUL, 4);
  cr_assert_eq(h->tensors[m->in[2]].dtype, IR_DT_F16);
  lu_same_outputs(g, h, 4e-3); /* the sum rounded to f16 once, not twice */
  ir_graph_free(h), ir_graph_free(g);
}

/* A transformer layer's two residual adds (ViT-B/16 from torch's legacy
 * exporter): the out projection's rows [B*S,C] reshaped to [B,S,C] before
 * the add, and the MLP's second matmul whose bias add was folded first
 * (matmul -> ewadd(., b) -> ewadd(r, .)); the residual also read by the
 * next layer norm. Each matmul takes its residual after its bias (a
 * reshape of r to its rows for the first; a zero bias for one without). */
Test(lower_epi, residual_through_reshape_and_after_bias) {
  static const char text[] =
      "input x: [2,3,8]\nweight w1: [8,8]\nweight b1: [8]\n"
      "weight g: [8]\nweight be: [8]\nweight w2: [8,8]\nweight b2: [8]\n"
      "weight w3: [8,8]\n"
      "xr = reshape(x) shape=[6,8]\n"
      "m1 = matmul(xr, w1, b1)\n"
      "m1r = reshape(m1) shape=[2,3,8]\n"
      "a1 = ewadd(m1r, x)\n"
      "n1 = layernorm(a1, g, be) axis=2\n"
      "m2 = matmul(n1, w2)\n"
      "y2 = ewadd(m2, b2)\n"
      "a2 = ewadd(a1, y2)\n"
      "a2r = reshape(a2) shape=[6,8]\n"
      "m3 = matmul(a2r, w3)\n"
      "m3r = reshape(m3) shape=[2,3,8]\n"
      "a3 = ewadd(a2, m3r)\n"
      "output a3\n";
  ir_graph *g, *h = lowered(text, &g, 4);
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD), 0);
  const ir_node *m1 = &h->nodes[h->tensors[lu_producer(h, "a1")->in[0]].node];
  cr_assert_eq(lu_producer(h, "a1")->op, IR_OP_RESHAPE);
  cr_assert_eq(m1->op, IR_OP_MATMUL);
  cr_assert_eq(m1->nin, 4);
  cr_assert_eq(m1->in[2], ir_find_tensor(h, "b1"));
  const ir_node *r1 = &h->nodes[h->tensors[m1->in[3]].node];
  cr_assert_eq(r1->op, IR_OP_RESHAPE); /* x seen as [6,8] */
  cr_assert_eq(r1->in[0], ir_find_tensor(h, "x"));
  const ir_node *m2 = lu_node(h, "a2", IR_OP_MATMUL, 4);
  cr_assert_eq(m2->in[2], ir_find_tensor(h, "b2"));
  cr_assert_eq(m2->in[3], ir_find_tensor(h, "a1"));
  const ir_node *m3 = &h->nodes[h->tensors[lu_producer(h, "a3")->in[0]].node];
  cr_assert_eq(m3->op, IR_OP_MATMUL);
  cr_assert_eq(m3->nin, 4); /* a zero bias, then a2 as [6,8] */
  free(lu_round_trip(h));
  lu_same_and_free(g, h, 1e-6);
}

/* The fusion pass's group of a matmul's bias add and the residual add
 * (ViT-B/16 from the dynamo exporter), in either order: the matmul takes
 * both. */
Test(lower_epi, fused_bias_and_residual_into_matmul) {
  static const char text[] =
      "input x: [2,3,8]\ninput b: [8]\nweight w: [8,8]\nweight w2: [8,8]\n"
      "m = matmul(x, w)\n"
      "f = fused(x, m, b) { t0 = ewadd($1, $2); t1 = ewadd($0, t0) }\n"
      "m2 = matmul(f, w2)\n"
      "f2 = fused(m2, f, b) { t0 = ewadd($1, $0); t1 = ewadd(t0, $2) }\n"
      "output f2\n";
  ir_graph *g, *h = lowered(text, &g, 2);
  cr_assert_eq(lu_count_op(h, IR_OP_FUSED), 0);
  const ir_node *m = lu_node(h, "f", IR_OP_MATMUL, 4);
  cr_assert_eq(m->in[2], ir_find_tensor(h, "b"));
  cr_assert_eq(m->in[3], ir_find_tensor(h, "x"));
  const ir_node *m2 = lu_node(h, "f2", IR_OP_MATMUL, -1);
  cr_assert_eq(m2->in[2], ir_find_tensor(h, "b"));
  cr_assert_eq(m2->in[3], ir_find_tensor(h, "f"));
  lu_same_and_free(g, h, 1e-6);
}

/* What stays: a reshape that does not keep the rows, a reshaped product
 * read twice, a residual computed after the matmul. */
Test(lower_epi, residual_reshape_left_alone) {
  static const char text[] =
      "input x: [2,3,8]\ninput s: [2,24]\nweight w: [8,8]\nweight b: [8]\n"
      "m1 = matmul(x, w, b)\n"
      "m1r = reshape(m1) shape=[2,24]\n"
      "a1 = ewadd(m1r, s)\n"
      "m2 = matmul(x, w, b)\n"
      "m2r = reshape(m2) shape=[6,8]\n"
      "xr = reshape(x) shape=[6,8]\n"
      "a2 = ewadd(m2r, xr)\n"
      "t2 = relu(m2r)\n"
      "m3 = matmul(x, w)\n"
      "m3r = reshape(m3) shape=[6,8]\n"
      "late = relu(xr)\n"
      "a3 = ewadd(m3r, late)\n"
      "output a1\noutput a2\noutput t2\noutput a3\n";
  ir_graph *g, *h = lowered(text, &g, 0);
  cr_assert_eq(h->nnodes, g->nnodes);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* Swin's MLP residual: a matmul over [N,H,W,C] rows whose residual, a
 * layer norm's input, is never channels-last on the GPU, takes it; one
 * whose residual a convolution computed (maybe channels-last: the
 * executor reads a matmul's residual unconverted) does not. */
Test(lower_epi, image_rows_matmul_residual) {
  static const char text[] =
      "input x: [2,4,4,8]\ninput y: [2,8,4,4]\nweight g: [8]\n"
      "weight be: [8]\nweight w: [8,8]\nweight b: [8]\n"
      "weight cw: [8,8,1,1]\n"
      "n = layernorm(x, g, be) axis=3\n"
      "m = matmul(n, w, b)\n"
      "a = ewadd(x, m)\n"
      "c = conv2d(y, cw)\n"
      "ct = transpose(c) perm=[0,2,3,1]\n"
      "m2 = matmul(a, w, b)\n"
      "a2 = ewadd(m2, ct)\n"
      "output a2\n";
  ir_graph *g, *h = lowered(text, &g, 1);
  const ir_node *m = lu_node(h, "a", IR_OP_MATMUL, 4);
  cr_assert_eq(m->in[3], ir_find_tensor(h, "x"));
  cr_assert_eq(lu_producer(h, "a2")->op, IR_OP_EWADD);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* In a half graph the same folds keep the matmul's type: its zero bias,
 * bias and residual f16. */
Test(lower_epi, half_residual_folds_keep_the_type) {
  static const char text[] =
      "input x: f16[2,3,8]\ninput b: f16[8]\n"
      "weight w: f16[8,8]\nweight w2: f16[8,8]\n"
      "xr = reshape(x) shape=[6,8]\n"
      "m = matmul(xr, w)\n"
      "mr = reshape(m) shape=[2,3,8]\n"
      "a = ewadd(mr, x)\n"
      "m2 = matmul(a, w2)\n"
      "f = fused(a, m2, b) { t0 = ewadd($1, $2); t1 = ewadd($0, t0) }\n"
      "output f\n";
  ir_graph *g, *h = lowered(text, &g, 2);
  const ir_node *m2 = lu_node(h, "f", IR_OP_MATMUL, 4);
  cr_assert_eq(h->tensors[m2->in[2]].dtype, IR_DT_F16);
  lu_same_outputs(g, h, 4e-3);
  ir_graph_free(h), ir_graph_free(g);
}
