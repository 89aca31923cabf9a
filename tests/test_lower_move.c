/* test_lower_move.c: the lower stage's move family (src/fuse/lower_move.c).
 *
 * A relu on a concat's result or a split's part becomes the concat's or
 * split's act= (acted= per part), a pad and the slice reading it one pad
 * with negative pads; the lowered graph computes the same outputs on the
 * CPU executor, prints and parses back, and ir_graph_unfuse writes it as
 * plain operators again. Patterns that must stay: a concat read by a relu
 * and another node, a relu whose result is an NCHW graph output, a pad
 * with a second reader, weight-only nodes.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costdb/costdb.h"
#include "lower_util.h"
#include "onnx/onnx.h"

/* Lowers text, checks it computes the same, prints and parses back the
 * same, and unlowers (ir_graph_unfuse) to plain operators computing the
 * same. Returns the lowered graph. */
static ir_graph *lower_checked(const ir_graph *g, lower_stats *st) {
  ir_graph *h = lu_lower(g, st);
  lu_same_outputs(g, h, 0);
  free(lu_round_trip(h));
  ir_graph *u = lu_unfused(g, h, 0);
  for (int i = 0; i < u->nnodes; i++)
    cr_assert(!ir_move_lowered(&u->nodes[i]), "node %d still lowered", i);
  ir_graph_free(u);
  return h;
}

/* NASNet-A's patterns: the relu on a concat's result, relus on split parts
 * read by them alone (acted 1) or beside others (acted 2), a pad whose
 * slice drops the first row and column (plus one cropping both sides). */
static const char move_text[] =
    "input x: [2,8,5,5]\ninput u: [2,3,5]\n"
    "weight w: [12,8,3,3]\n"
    "c = conv2d(x, w)\n"
    "a, b, e = split(c) axis=1 sizes=[4,3,5]\n"
    "ar = relu(a)\nbr = relu(b)\nbs = ewadd(b, br)\n"
    "k = concat(ar, bs, e) axis=1\nkr = relu(k)\n"
    "p = pad(kr) pads=[0,0,0,0,0,0,1,1]\n"
    "s = slice(p) starts=[0,0,1,1] ends=[2,12,6,6]\n"
    "q = pad(u) pads=[0,1,0,0,2,0]\n"
    "v = slice(q) starts=[0,2,1] ends=[2,6,4]\n"
    "output s, v\n";

Test(lower_move, folds_relus_and_slices) {
  ir_graph *g = lu_parse(move_text);
  lower_stats st;
  ir_graph *h = lower_checked(g, &st);
  cr_assert_eq(st.moves, 5); /* ar, br, kr; s, v */
  cr_assert_eq(lu_count_op(h, IR_OP_RELU), 0);
  cr_assert_eq(lu_count_op(h, IR_OP_SLICE), 0);
  const ir_node *sp = lu_producer(h, "ar");
  cr_assert_eq(sp->op, IR_OP_SPLIT);
  cr_assert_eq(sp->a.act, IR_ACT_RELU);
  cr_assert_eq(sp->nout, 4); /* ar; b, br; e */
  cr_assert_eq(sp->a.nlist2, 3);
  cr_assert(sp->a.list2[0] == 1 && sp->a.list2[1] == 2 && sp->a.list2[2] == 0);
  cr_assert_eq(ir_find_tensor(h, "a"), -1); /* replaced by its relu */
  const ir_node *k = lu_producer(h, "kr");
  cr_assert(k->op == IR_OP_CONCAT && k->a.act == IR_ACT_RELU);
  const ir_node *p = lu_producer(h, "s");
  cr_assert_eq(p->op, IR_OP_PAD);
  static const int64_t want[8] = {0, 0, -1, -1, 0, 0, 1, 1};
  cr_assert(!memcmp(p->a.list, want, sizeof want));
  const ir_node *q = lu_producer(h, "v");
  static const int64_t wq[6] = {0, -1, -1, 0, 2, -1};
  cr_assert(q->op == IR_OP_PAD && !memcmp(q->a.list, wq, sizeof wq));
  ir_graph_free(g), ir_graph_free(h);
}

/* Left alone: a concat whose result another node reads too; a relu whose
 * result is a spatial graph output (the GPU keeps it NCHW: it would pin the
 * split); a slice of a pad read twice; a weight-only concat and pad. */
Test(lower_move, leaves_what_the_gpu_does_not_fold) {
  ir_graph *g =
      lu_parse("input x: [2,8,5,5]\nweight w: [3,4]\nweight z: [3,4]\n"
               "k = concat(x, x) axis=1\nkr = relu(k)\n"
               "km = ewmul(k, kr)\n"
               "a, b = split(x) axis=1 sizes=[4,4]\nbr = relu(b)\n"
               "p = pad(x) pads=[0,0,1,1,0,0,1,1]\n"
               "s = slice(p) starts=[0,0,1,1] ends=[2,8,6,6]\n"
               "pm = ewadd(p, p)\n"
               "wc = concat(w, z) axis=0\nwr = relu(wc)\n"
               "wp = pad(w) pads=[1,0,1,0]\nws = slice(wp) "
               "starts=[1,0] ends=[4,4]\n"
               "output km, a, br, s, pm, wr, ws\n");
  lower_stats st;
  ir_graph *h = lu_lower(g, &st);
  cr_assert_eq(st.moves, 0);
  cr_assert_eq(h->nnodes, g->nnodes);
  for (int i = 0; i < h->nnodes; i++) {
    cr_assert_eq(h->nodes[i].op, g->nodes[i].op);
    cr_assert(!ir_move_lowered(&h->nodes[i]));
  }
  ir_graph_free(g), ir_graph_free(h);
}

/* A relu whose result is a graph output of no spatial extent folds (the
 * layouts agree there); a second relu on one part does not. */
Test(lower_move, folds_an_output_without_spatial_extent) {
  ir_graph *g = lu_parse("input x: [2,6,1,1]\n"
                         "a, b = split(x) axis=1 sizes=[2,4]\n"
                         "ar = relu(a)\nar2 = relu(a)\nbr = relu(b)\n"
                         "output ar, ar2, br\n");
  lower_stats st;
  ir_graph *h = lower_checked(g, &st);
  cr_assert_eq(st.moves, 2);
  cr_assert_eq(lu_count_op(h, IR_OP_RELU), 1);
  const ir_node *sp = lu_producer(h, "br");
  cr_assert_eq(sp->nout, 3); /* a, ar; br */
  ir_graph_free(g), ir_graph_free(h);
}

/* The forms in .graph text: all parts activated is written act= alone;
 * bad acted= and pads that leave nothing are errors. */
Test(lower_move, graph_text) {
  ir_graph *g = lu_parse("input x: [2,6]\n"
                         "a, b = split(x) axis=1 sizes=[2,4] acted=[1,1] "
                         "act=sigmoid\n"
                         "c = concat(a, b) axis=1 act=tanh\n"
                         "output c\n");
  char *p = ir_print(g);
  cr_assert(strstr(p, "split(x) axis=1 sizes=[2,4] act=sigmoid\n"), "%s", p);
  cr_assert(strstr(p, "concat(a, b) axis=1 act=tanh\n"), "%s", p);
  free(p);
  ir_graph_free(g);
  static const char *bad[] = {
      "input x: [2,6]\na, b = split(x) axis=1 sizes=[2,4] acted=[0,1]\n"
      "output a\n",
      "input x: [2,6]\na, b = split(x) axis=1 sizes=[2,4] act=relu "
      "acted=[1]\noutput a\n",
      "input x: [2,6]\na, b = split(x) axis=1 sizes=[2,4] act=relu "
      "acted=[3,0]\noutput a\n",
      "input x: [2,6]\np = pad(x) pads=[0,-3,0,-3]\noutput p\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    base_diag d;
    ir_graph *b = ir_parse(bad[i], strlen(bad[i]), "t.graph", &d);
    cr_assert_null(b, "%s", bad[i]);
    cr_assert(d.line > 0, "%s: %s", bad[i], d.msg);
  }
}

/* Costs: the activation's work is counted, a crop reads less, and the
 * cost database's signature of a split with acted= builds its graph. */
Test(lower_move, costs_and_signatures) {
  ir_graph *g = lu_parse("input x: [2,8,5,5]\n"
                         "a, b, br = split(x) axis=1 sizes=[4,4] act=relu "
                         "acted=[0,2]\n"
                         "p = pad(x) pads=[0,0,-1,-1,0,0,1,1]\n"
                         "q = pad(x) pads=[0,0,0,0,0,0,1,1]\n"
                         "output a, b, br, p, q\n");
  cd_work w = cd_node_work(g, 0);
  cr_assert_eq(w.flops, 200.0); /* relu: 1 flop on br's 200 elements */
  cr_assert_eq(w.bytes, 4 * (400.0 + 200 + 200 + 200));
  cd_work wp = cd_node_work(g, 1), wq = cd_node_work(g, 2);
  cr_assert_eq(wp.bytes, 4 * (2 * 8 * 4 * 4 + 2 * 8 * 5 * 5.0));
  cr_assert_eq(wq.bytes, 4 * (400 + 2 * 8 * 6 * 6.0));
  char sig[512];
  cd_node_sig(g, 0, sig, sizeof sig);
  cr_assert(strstr(sig, " act=relu acted=[0,2]"), "%s", sig);
  base_diag d;
  ir_graph *s = cd_sig_graph(sig, &d);
  cr_assert(s, "%s: %s", sig, d.msg);
  cr_assert_eq(s->nodes[0].nout, 3);
  char sig2[512];
  cd_node_sig(s, 0, sig2, sizeof sig2);
  cr_assert_str_eq(sig, sig2);
  ir_graph_free(s);
  /* a plain split's key is as stored before act= existed */
  ir_graph *t = lu_parse("input x: [2,8]\na, b = split(x) axis=1 sizes=[4,4]\n"
                         "output a, b\n");
  cd_node_sig(t, 0, sig, sizeof sig);
  cr_assert_str_eq(sig, "split x=[2,8] axis=1 sizes=[4,4]");
  ir_graph_free(t);
  ir_graph_free(g);
}

/* ONNX export writes the lowered graph in ONNX's operators (concat or
 * split, then Relu; Pad of the positive pads, then Slice), computing the
 * same once imported back. */
Test(lower_move, onnx_export_writes_plain_operators) {
  ir_graph *g = lu_parse(move_text), *h = lu_lower(g, NULL);
  char path[] = "/tmp/test_lower_move_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  base_diag d;
  cr_assert_eq(ox_export_file(h, path, &d), BASE_OK, "%s", d.msg);
  ir_graph *back = ox_import_file(path, NULL, &d);
  unlink(path);
  cr_assert(back, "%s", d.msg);
  for (int i = 0; i < back->nnodes; i++)
    cr_assert(!ir_move_lowered(&back->nodes[i]), "node %d lowered", i);
  cr_assert_eq(lu_count_op(back, IR_OP_RELU), 3);
  cr_assert_eq(lu_count_op(back, IR_OP_SLICE), 2);
  cr_assert_eq(lu_count_op(back, IR_OP_PAD), 2);
  lu_same_outputs(g, back, 0);
  ir_graph_free(back), ir_graph_free(h), ir_graph_free(g);
}
