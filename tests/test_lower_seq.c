/* test_lower_seq.c: the lower stage's seq-first family
 * (src/fuse/lower_seq.c): torch MHA's transpose to [S,B,C] before the
 * projection a seq-first attention reads goes, the projection runs on the
 * batch-first rows and the attention reads them so; the CPU executor
 * computes the same outputs; what else reads the transpose or the
 * projection keeps it.
 */
#include "lower_util.h"

static const char vit[] =
    "input x: [2,5,8]\nweight w: [8,24]\nweight b: [24]\nweight s: []\n"
    "t = transpose(x) perm=[1,0,2]\n"
    "p = matmul(t, w, b)\n"
    "a = attention(p, p, p, s) heads=2 cols=[0,8,16] hdim=[4,4] "
    "seqfirst=1\n"
    "output a\n";

Test(lower_seq, transpose_before_seqfirst_projection_goes) {
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(vit, &g, &st);
  cr_assert_eq(st.moves, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 0);
  const ir_node *a = lu_node(h, "a", IR_OP_ATTENTION, -1);
  cr_assert_eq(a->a.axis, 0, "seqfirst dropped");
  const ir_node *p = lu_node(h, "p", IR_OP_MATMUL, -1);
  cr_assert_eq(p->in[0], ir_find_tensor(h, "x"));
  const ir_shape *ps = &h->tensors[p->out[0]].shape;
  cr_assert(ps->rank == 3 && ps->dim[0] == 2 && ps->dim[1] == 5 &&
            ps->dim[2] == 24);
  lu_same_and_free(g, h, 1e-6);
}

/* The transpose read by another node too, the projection read by another
 * node too, q from another projection: all stay seq-first. */
Test(lower_seq, shared_transpose_or_projection_stays) {
  static const char text[] =
      "input x: [2,5,8]\nweight w: [8,24]\nweight b: [24]\nweight s: []\n"
      "t = transpose(x) perm=[1,0,2]\n"
      "p = matmul(t, w, b)\n"
      "a = attention(p, p, p, s) heads=2 cols=[0,8,16] hdim=[4,4] "
      "seqfirst=1\n"
      "r = relu(t)\n"
      "t2 = transpose(x) perm=[1,0,2]\n"
      "p2 = matmul(t2, w, b)\n"
      "a2 = attention(p2, p2, p2, s) heads=2 cols=[0,8,16] hdim=[4,4] "
      "seqfirst=1\n"
      "e2 = exp(p2)\n"
      "p3 = matmul(t2, w)\n"
      "a3 = attention(p, p3, p3, s) heads=2 cols=[0,8,16] hdim=[4,4] "
      "seqfirst=1\n"
      "output a\noutput r\noutput a2\noutput e2\noutput a3\n";
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.moves, 0);
  cr_assert_eq(lu_count_op(h, IR_OP_TRANSPOSE), 2);
  lu_same_outputs(g, h, 0);
  ir_graph_free(h), ir_graph_free(g);
}

/* lower_patch.c: ViT's patch embedding, a convolution whose kernel is its
 * stride reshaped and transposed to rows, becomes a move node's patches
 * and a matmul (the bias its bias); the CPU executor computes the same.
 * Left alone: padding, a stride other than the kernel, the convolution or
 * the reshape read by another node too. */
Test(lower_patch, patch_embedding_becomes_matmul) {
  static const char text[] =
      "input x: [2,3,8,12]\nweight w: [5,3,4,4]\nweight b: [5]\n"
      "c = conv2d(x, w, b) stride=[4,4] pad=[0,0,0,0]\n"
      "r = reshape(c) shape=[2,5,6]\n"
      "t = transpose(r) perm=[0,2,1]\n"
      "y = relu(t)\noutput y\n"; /* the relu then its epilogue */
  lower_stats st;
  ir_graph *g, *h = lu_parse_lower(text, &g, &st);
  cr_assert_eq(st.patches, 1);
  cr_assert_eq(lu_count_op(h, IR_OP_CONV2D), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_MOVE), 1);
  const ir_node *t = lu_node(h, "y", IR_OP_MATMUL, -1);
  cr_assert_eq(t->nin, 3, "the convolution's bias");
  cr_assert_eq(t->a.act, IR_ACT_RELU);
  lu_same_and_free(g, h, 1e-5);
  static const char *const kept[] = {
      "input x: [2,3,8,12]\nweight w: [5,3,4,4]\n"
      "c = conv2d(x, w) stride=[4,4] pad=[1,1,1,1]\n"
      "r = reshape(c) shape=[2,5,6]\nt = transpose(r) perm=[0,2,1]\n"
      "output t\n",
      "input x: [2,3,8,12]\nweight w: [5,3,4,4]\n"
      "c = conv2d(x, w) stride=[2,2] pad=[0,0,0,0]\n"
      "r = reshape(c) shape=[2,5,15]\nt = transpose(r) perm=[0,2,1]\n"
      "output t\n",
      "input x: [2,3,8,12]\nweight w: [5,3,4,4]\n"
      "c = conv2d(x, w) stride=[4,4] pad=[0,0,0,0]\n"
      "r = reshape(c) shape=[2,5,6]\nt = transpose(r) perm=[0,2,1]\n"
      "output t, c\n",
  };
  for (size_t k = 0; k < sizeof kept / sizeof *kept; k++) {
    ir_graph *g2, *h2 = lu_parse_lower(kept[k], &g2, &st);
    cr_assert_eq(st.patches, 0, "case %zu", k);
    cr_assert_eq(lu_count_op(h2, IR_OP_CONV2D), 1, "case %zu", k);
    lu_same_and_free(g2, h2, 1e-5);
  }
}
