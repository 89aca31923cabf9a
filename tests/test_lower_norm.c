/* test_lower_norm.c: the lower stage's add+norm family
 * (src/fuse/lower_norm.c): a residual add read by a layer norm (or an
 * RMSNorm) and by another node becomes one addnorm node writing the sum
 * and the norm, computing bit for bit what the two nodes computed; where
 * the add and norm do not fit (the norm its only reader, an xb, a weight-
 * only add, b not whole rows, the norm's gamma computed after the add) or
 * the cost function does not price it lower, they stay.
 */
#include "lower_util.h"

/* Swin's pre-norm block: the attention's output departitioned (here a
 * transpose) before the residual add, so the add stays out of the
 * projection's epilogue; the MLP's residual add folds into its second
 * matmul (lower_epi.c) and reads the sum again. */
static const char swin[] =
    "input x: [2,6,8]\ninput u: [6,2,8]\n"
    "weight w: [8,8]\nweight b: [8]\nweight g: [8]\nweight be: [8]\n"
    "weight w2: [8,8]\nweight b2: [8]\n"
    "m = matmul(u, w, b)\n"
    "d = transpose(m) perm=[1,0,2]\n"
    "s = ewadd(x, d)\n"
    "y = layernorm(s, g, be)\n"
    "f = matmul(y, w2, b2)\n"
    "r = ewadd(f, s)\n"
    "output r\n";

Test(lower_norm, pre_norm_block_forms_addnorm) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(swin, &g, &st);
  cr_assert_eq(st.addnorms, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_LAYERNORM), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_EWADD), 0, "r folded into f");
  const ir_node *n = lu_node(h, "s", IR_OP_ADDNORM, 4);
  cr_assert_eq(n->nout, 2);
  cr_assert_eq(n->out[1], ir_find_tensor(h, "y"));
  cr_assert_eq(n->in[0], ir_find_tensor(h, "x"));
  cr_assert_eq(n->in[1], ir_find_tensor(h, "d"));
  free(lu_round_trip(h));
  lu_same_and_free(g, h, 0); /* bit for bit, and unfused for ONNX */
}

/* Llama's RMSNorm (no beta), the sum a graph output too, b the add's
 * first operand: the node takes a = the other. */
Test(lower_norm, rmsnorm_and_output_sum) {
  static const char text[] = "input x: [3,8]\ninput u: [8,3]\nweight g: [8]\n"
                             "d = transpose(u) perm=[1,0]\n"
                             "s = ewadd(d, x)\n"
                             "y = layernorm(s, g) eps=1e-06 rms=1\n"
                             "output s\noutput y\n";
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.addnorms, 1);
  const ir_node *n = lu_node(h, "s", IR_OP_ADDNORM, 3);
  cr_assert(ir_ln_rms(&n->a));
  cr_assert_float_eq(n->a.eps, 1e-6f, 1e-12);
  lu_same_and_free(g, h, 0);
}

/* ViT's position embedding [1,S,C] added over the batch, either operand
 * order, the sum read by the next residual add too. */
Test(lower_norm, broadcast_rows_either_order) {
  static const char text[] =
      "input x: [2,5,8]\nweight pos: [1,5,8]\nweight g: [8]\nweight be: "
      "[8]\n"
      "s = ewadd(x, pos)\n"
      "y = layernorm(s, g, be)\n"
      "t = ewadd(pos, x)\n"
      "z = layernorm(t, g, be)\n"
      "e = ewmul(s, y)\n"
      "f = ewmul(t, z)\n"
      "output e\noutput f\n";
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.addnorms, 2);
  const ir_node *n = lu_node(h, "t", IR_OP_ADDNORM, 4);
  cr_assert_eq(n->in[0], ir_find_tensor(h, "x"), "a: the whole shape");
  cr_assert_eq(n->in[1], ir_find_tensor(h, "pos"));
  lu_same_and_free(g, h, 0);
}

/* Sites that stay: the norm the sum's only reader (the fusion pass's),
 * a norm with xb, a weight-only add, b broadcast within rows or not over
 * every normalised axis, gamma computed after the add, a sum with no
 * norm reading it as x. */
Test(lower_norm, unfit_sites_stay) {
  static const char text[] =
      "input x: [2,5,8]\ninput v: [2,1,8]\ninput p: [8]\nweight g: [8]\n"
      "weight be: [8]\n"
      "weight wa: [8]\nweight wb: [8]\nweight c: [8]\nweight g2: [5,8]\n"
      "s1 = ewadd(x, x)\n"
      "y1 = layernorm(s1, g, be)\n"
      "s2 = ewadd(y1, x)\n"
      "y2 = layernorm(s2, g, be, c)\n"
      "e2 = relu(s2)\n"
      "w = ewadd(wa, wb)\n"
      "y3 = layernorm(w, g, be)\n"
      "e3 = relu(w)\n"
      "s4 = ewadd(y2, v)\n"
      "y4 = layernorm(s4, g, be)\n"
      "e4 = relu(s4)\n"
      "s5 = ewadd(y4, wa)\n"
      "y5 = layernorm(s5, g2) axis=1\n"
      "e5 = relu(s5)\n"
      "s6 = ewadd(y5, x)\n"
      "gl = exp(wa)\n"
      "y6 = layernorm(s6, gl, be)\n"
      "e6 = relu(s6)\n"
      "s7 = ewadd(wa, p)\n"
      "y7 = layernorm(y6, s7)\n"
      "e7 = relu(s7)\n"
      "output e2\noutput y3\noutput e3\noutput e4\noutput e5\n"
      "output e6\noutput y7\noutput e7\n";
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.addnorms, 0);
  cr_assert_eq(lu_count_op(h, IR_OP_ADDNORM), 0);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* Two norms read one sum: the first takes it, the second reads s. */
Test(lower_norm, second_norm_reads_the_sum) {
  static const char text[] =
      "input x: [4,8]\ninput u: [8,4]\nweight g: [8]\nweight g2: [8]\n"
      "d = transpose(u) perm=[1,0]\n"
      "s = ewadd(x, d)\n"
      "y = layernorm(s, g)\n"
      "z = layernorm(s, g2) rms=1\n"
      "output y\noutput z\n";
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.addnorms, 1);
  lu_node(h, "s", IR_OP_ADDNORM, 3);
  const ir_node *z = lu_node(h, "z", IR_OP_LAYERNORM, 2);
  cr_assert_eq(z->in[0], ir_find_tensor(h, "s"));
  lu_same_and_free(g, h, 0);
}

/* A cost function pricing every node at 1, and addnorm at `an`. */
static double an_cost;
static base_status fake_cost(void *u, const ir_graph *g, int node, double *cost,
                             int *estimated, base_diag *d) {
  (void)u, (void)d;
  *cost = g->nodes[node].op == IR_OP_ADDNORM ? an_cost : 1;
  if (estimated)
    *estimated = 1;
  return BASE_OK;
}

/* Priced: kept where cheaper than the add and the norm (2), refused
 * where not (the graph as the other families leave it). */
Test(lower_norm, priced_by_the_cost_function) {
  ir_graph *g = lu_parse(swin);
  fuse_options o = {fake_cost, NULL};
  base_diag d;
  double prices[2] = {1.5, 2};
  for (int k = 0; k < 2; k++) {
    lower_stats st;
    an_cost = prices[k];
    ir_graph *h = lower_graph_priced(g, &o, &st, &d);
    cr_assert(h, "%s", d.msg);
    cr_assert_eq(ir_graph_validate(h, &d), BASE_OK, "%s", d.msg);
    cr_assert_eq(st.addnorms, k == 0, "price %g", an_cost);
    cr_assert_eq(lu_count_op(h, IR_OP_ADDNORM), k == 0);
    cr_assert_eq(lu_count_op(h, IR_OP_LAYERNORM), k == 1);
    lu_same_outputs(g, h, 0);
    ir_graph_free(h);
  }
  ir_graph_free(g);
}

/* The node's shape rule: b whole rows of a (ones or nothing before, no
 * more dimensions than a), over every normalised axis; gamma and beta as
 * layernorm's. */
Test(lower_norm, addnorm_shape_rule) {
  ir_graph *g = lu_parse("input a: [2,3,4]\ninput b: [1,3,4]\n"
                         "weight g: [3,4]\n"
                         "s, y = addnorm(a, b, g) axis=1\noutput y\n");
  ir_graph_free(g);
  lu_refused("input a: [2,3,4]\ninput b: [2,1,4]\n"
             "s, y = addnorm(a, b)\noutput y\n",
             "addnorm: b [2,1,4] must be a's shape");
  lu_refused("input a: [2,3,4]\ninput b: [1,1,3,4]\n"
             "s, y = addnorm(a, b)\noutput y\n",
             "addnorm: b [1,1,3,4]");
  lu_refused("input a: [2,3,4]\ninput b: [4]\n"
             "s, y = addnorm(a, b) axis=1\noutput y\n",
             "addnorm: b [4]");
  lu_refused("input a: [2,3,4]\ninput b: [3,4]\nweight g: [3]\n"
             "s, y = addnorm(a, b, g)\noutput y\n",
             "addnorm: gamma [3]");
}

/* A bf16 graph: the node's sum is normalised as computed (float32) and
 * rounded once at the store, the unlowered norm reads the rounded sum:
 * the sums equal bit for bit, the norms within a few bf16 units. */
Test(lower_norm, bf16_within_its_type) {
  static const char text[] =
      "input x: bf16[4,32]\ninput u: bf16[32,4]\nweight g: bf16[32]\n"
      "weight be: bf16[32]\n"
      "d = transpose(u) perm=[1,0]\n"
      "s = ewadd(x, d)\ny = layernorm(s, g, be)\n"
      "output s\noutput y\n";
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.addnorms, 1);
  cr_assert_eq(h->tensors[ir_find_tensor(h, "y")].dtype, IR_DT_BF16);
  lu_same_outputs(g, h, 4 * 0x1p-8);
  ex_values *va = lu_run_as(g, g), *vb = lu_run_as(h, g);
  int sa = ir_find_tensor(g, "s"), sb = ir_find_tensor(h, "s");
  cr_assert(!memcmp(va->v[sa], vb->v[sb], sizeof(float) * 4 * 32));
  ex_values_free(va), ex_values_free(vb);
  ir_graph_free(h), ir_graph_free(g);
}
