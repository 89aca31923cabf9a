/* test_mutant.c: partially equivalent mutants (src/mutant/): for every class
 * on small shapes, the box analysis marks exactly the positions where f and
 * g differ (brute force over every output position) and exactly the region
 * the class predicts; mutant + correction equals the original on the CPU
 * executor and in the box analysis; a deliberately wrong correction is
 * caught; generation and analysis are deterministic for a seed. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb/costdb.h"
#include "exec/exec.h"
#include "mutant/mutant.h"
#include "mutant/mutant_int.h"

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "%s", d.msg);
  return g;
}

/* A model with one site of each class: c1/c2 share a kernel shape on two
 * inputs of different widths (concat-w), c3 has a 5x5 kernel and a relu
 * (split-h), c4 is dilated (dilated), c5 and c6 share their weights. */
static const char *model_text =
    "graph m\n"
    "input a: [1,3,8,6]\n"
    "input b: [1,3,8,5]\n"
    "input x: [1,2,8,8]\n"
    "input z: [1,2,6,6]\n"
    "weight w1: [4,3,3,3]\n"
    "weight b1: [4]\n"
    "weight w2: [4,3,3,3]\n"
    "weight b2: [4]\n"
    "weight w3: [3,2,5,5]\n"
    "weight w4: [3,2,3,3]\n"
    "weight b4: [3]\n"
    "weight w5: [2,3,3,3]\n"
    "c1 = conv2d(a, w1, b1) pad=same\n"
    "c2 = conv2d(b, w2, b2) pad=same\n"
    "c3 = conv2d(x, w3) pad=same act=relu\n"
    "c4 = conv2d(z, w4, b4) pad=same dilation=[3,3]\n"
    "c5 = conv2d(a, w5) pad=same\n"
    "c6 = conv2d(b, w5) pad=same\n"
    "output c1, c2, c3, c4, c5, c6\n";

static mutant make(ir_graph *m, mutant_class c, int n0, int n1) {
  mutant mu;
  base_diag d;
  int32_t nodes[2] = {n0, n1};
  cr_assert_eq(mutant_make(c, m, nodes, &mu, &d), BASE_OK, "%s", d.msg);
  return mu;
}

/* The analysis against brute force, position by position, every output;
 * returns the number of wrong positions. */
static int64_t check_exact(const mutant *mu, const mutant_boxes *b,
                           uint64_t seed) {
  base_diag d;
  int64_t wrong = 0;
  for (int o = 0; o < mu->f->noutputs; o++) {
    const ir_shape *s = &mu->f->tensors[mu->f->outputs[o]].shape;
    int64_t n = ir_shape_numel(s), idx[IR_MAX_RANK];
    uint8_t *mask = malloc((size_t)n);
    cr_assert_eq(mutant_diff_all(mu->f, mu->g, seed, o, mask, &d), BASE_OK,
                 "%s", d.msg);
    for (int64_t j = 0; j < n; j++) {
      int64_t r = j;
      for (int k = s->rank - 1; k >= 0; k--)
        idx[k] = r % s->dim[k], r /= s->dim[k];
      cr_assert_eq(mutant_in_wrong(b, o, idx), mask[j],
                   "%s output %d position %lld: boxes say %d, brute force %d",
                   mutant_class_name(mu->cls), o, (long long)j,
                   mutant_in_wrong(b, o, idx), mask[j]);
      wrong += mask[j];
    }
    free(mask);
  }
  cr_assert_eq(wrong, b->wrong_numel);
  return wrong;
}

/* Soundness only: every position where brute force finds f != g lies in a
 * wrong box (no false "equal"); returns the number of such positions. */
static int64_t check_sound(const mutant *mu, const mutant_boxes *b,
                           uint64_t seed) {
  base_diag d;
  int64_t wrong = 0;
  for (int o = 0; o < mu->f->noutputs; o++) {
    const ir_shape *s = &mu->f->tensors[mu->f->outputs[o]].shape;
    int64_t n = ir_shape_numel(s), idx[IR_MAX_RANK];
    uint8_t *mask = malloc((size_t)n);
    cr_assert_eq(mutant_diff_all(mu->f, mu->g, seed, o, mask, &d), BASE_OK,
                 "%s", d.msg);
    for (int64_t j = 0; j < n; j++) {
      int64_t r = j;
      for (int k = s->rank - 1; k >= 0; k--)
        idx[k] = r % s->dim[k], r /= s->dim[k];
      cr_assert(!mask[j] || mutant_in_wrong(b, o, idx),
                "output %d position %lld differs outside every wrong box", o,
                (long long)j);
      wrong += mask[j];
    }
    free(mask);
  }
  return wrong;
}

static void analyze(const mutant *mu, uint64_t seed, mutant_boxes *b) {
  base_diag d;
  cr_assert_eq(mutant_analyze(mu->f, mu->g, seed, b, &d), BASE_OK, "%s", d.msg);
}

/* ---- the box analysis finds exactly the wrong region ---------------------
 */

Test(mutant, split_h_rows_next_to_the_cut) {
  ir_graph *m = parse(model_text);
  mutant mu = make(m, MUTANT_SPLIT_H, 2, -1);
  mutant_boxes b;
  analyze(&mu, 7, &b);
  check_exact(&mu, &b, 7);
  check_exact(&mu, &b, 8); /* and under another seed */
  /* 5x5 kernel, cut at row 4: rows 2..5 read across it, every channel
   * and column */
  cr_assert_eq(b.nwrong, 1);
  cr_assert_eq(b.wrong[0].lo[2], 2);
  cr_assert_eq(b.wrong[0].hi[2], 6);
  cr_assert_eq(b.wrong_numel, 3 * 4 * 8);
  cr_assert_lt(b.points, b.numel, "corners only, not every position");
  mutant_boxes_free(&b);
  ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
}

Test(mutant, concat_w_boundary_columns) {
  ir_graph *m = parse(model_text);
  for (int shared = 0; shared < 2; shared++) {
    mutant mu = shared ? make(m, MUTANT_CONCAT_W, 4, 5)
                       : make(m, MUTANT_CONCAT_W, 0, 1);
    mutant_boxes b;
    analyze(&mu, 3, &b);
    check_exact(&mu, &b, 3);
    /* 3x3 kernel: the last column of the first output, the first of the
     * second */
    cr_assert_eq(b.nwrong, 2);
    cr_assert_eq(b.wrong[0].out, 0);
    cr_assert_eq(b.wrong[0].lo[3], 5);
    cr_assert_eq(b.wrong[0].hi[3], 6);
    cr_assert_eq(b.wrong[1].out, 1);
    cr_assert_eq(b.wrong[1].lo[3], 0);
    cr_assert_eq(b.wrong[1].hi[3], 1);
    int64_t o = shared ? 2 : 4;
    cr_assert_eq(b.wrong_numel, 2 * o * 8);
    mutant_boxes_free(&b);
    ir_graph_free(mu.f), ir_graph_free(mu.g);
  }
  ir_graph_free(m);
}

Test(mutant, dilated_is_equal_everywhere) {
  ir_graph *m = parse(model_text);
  mutant mu = make(m, MUTANT_DILATED, 3, -1);
  mutant_boxes b;
  analyze(&mu, 5, &b);
  cr_assert_eq(check_exact(&mu, &b, 5), 0);
  cr_assert_eq(b.nwrong, 0);
  mutant_boxes_free(&b);
  ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
}

/* A wrong mutant: the dilated class with the batch-to-space permutation
 * broken. Its output rows now step through column phases: g translates
 * differently from f inside a box, so a box may mix equal and different
 * positions (reported different: exactness needs f and g to translate
 * alike), but no different position may be missed (the corners argument,
 * docs/mutants.md). */
Test(mutant, broken_mutant_found_exactly) {
  ir_graph *m = parse(model_text);
  mutant mu = make(m, MUTANT_DILATED, 3, -1);
  for (int k = 0; k < mu.g->nnodes; k++) {
    ir_node *n = &mu.g->nodes[k];
    if (n->op == IR_OP_TRANSPOSE && n->a.list[0] == 2 && n->a.list[1] == 3) {
      n->a.list[2] = 1, n->a.list[4] = 0; /* [2,3,1,4,0]: same shape */
      break;
    }
  }
  mutant_boxes b;
  analyze(&mu, 5, &b);
  cr_assert_gt(check_sound(&mu, &b, 5), 0);
  cr_assert_gt(b.nwrong, 0);
  mutant_boxes_free(&b);
  ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
}

/* ---- correction ----------------------------------------------------------
 */

static ir_graph *corrected(const mutant *mu, const mutant_box *w, int n) {
  base_diag d;
  ir_graph *h = NULL;
  cr_assert_eq(mutant_correct(mu->f, mu->g, w, n, &h, &d), BASE_OK, "%s",
               d.msg);
  return h;
}

/* Floating-point operations of g's nodes (costdb's count). */
static double flops(const ir_graph *g) {
  double s = 0;
  for (int k = 0; k < g->nnodes; k++)
    s += cd_node_work(g, k).flops;
  return s;
}

/* Nodes of g with operator op. */
static int count_op(const ir_graph *g, ir_opcode op) {
  int n = 0;
  for (int k = 0; k < g->nnodes; k++)
    n += g->nodes[k].op == op;
  return n;
}

static void check_corrected(const mutant *mu) {
  base_diag d;
  mutant_boxes b, b2;
  double err = 1;
  analyze(mu, 11, &b);
  ir_graph *h = corrected(mu, b.wrong, b.nwrong);
  /* exact on floats and in the box analysis */
  cr_assert_eq(mutant_float_check(mu->f, h, 2, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_lt(err, 1e-5, "%s: corrected error %g", mutant_class_name(mu->cls),
               err);
  cr_assert_eq(mutant_analyze(mu->f, h, 12, &b2, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(b2.nwrong, 0);
  /* the mutant alone is wrong where the boxes say */
  cr_assert_eq(mutant_float_check(mu->f, mu->g, 2, &err, &d), BASE_OK);
  cr_assert(b.nwrong ? err > 1e-3 : err < 1e-5, "%s: mutant error %g",
            mutant_class_name(mu->cls), err);
  /* the correction adds less compute than f's (it never re-runs f) */
  double cf = flops(mu->f), cg = flops(mu->g), ch = flops(h);
  cr_assert_lt(ch - cg, cf, "%s: correction %g flops, f %g",
               mutant_class_name(mu->cls), ch - cg, cf);
  mutant_boxes_free(&b2);
  ir_graph_free(h);

  /* deliberately wrong corrections: a box one row short, or moved */
  for (int i = 0; i < b.nwrong; i++)
    for (int how = 0; how < 2; how++) {
      mutant_box *w = malloc(sizeof *w * (size_t)b.nwrong);
      memcpy(w, b.wrong, sizeof *w * (size_t)b.nwrong);
      const ir_shape *s = &mu->f->tensors[mu->f->outputs[w[i].out]].shape;
      /* a spatial axis (a channel range would widen to whole groups):
       * W unless the box spans it */
      int ax = w[i].hi[3] - w[i].lo[3] < s->dim[3] ? 3 : 2;
      if (w[i].hi[ax] - w[i].lo[ax] == s->dim[ax] || how == 0) {
        ax = w[i].hi[3] - w[i].lo[3] > 1 ? 3 : 2;
        cr_assert_gt(w[i].hi[ax] - w[i].lo[ax], 1, "a 1x1 box");
        w[i].hi[ax]--; /* one short */
      } else if (w[i].hi[ax] < s->dim[ax]) {
        w[i].lo[ax]++, w[i].hi[ax]++; /* moved */
      } else {
        w[i].lo[ax]--, w[i].hi[ax]--;
      }
      h = corrected(mu, w, b.nwrong);
      cr_assert_eq(mutant_float_check(mu->f, h, 2, &err, &d), BASE_OK);
      cr_assert_gt(err, 1e-3, "%s box %d (%d): a wrong correction passed",
                   mutant_class_name(mu->cls), i, how);
      cr_assert_eq(mutant_analyze(mu->f, h, 12, &b2, &d), BASE_OK);
      cr_assert_gt(b2.nwrong, 0);
      mutant_boxes_free(&b2);
      ir_graph_free(h);
      free(w);
    }
  mutant_boxes_free(&b);
}

Test(mutant, correction_makes_every_class_exact) {
  ir_graph *m = parse(model_text);
  int sites[4][3] = {{MUTANT_SPLIT_H, 2, -1},
                     {MUTANT_CONCAT_W, 0, 1},
                     {MUTANT_CONCAT_W, 4, 5},
                     {MUTANT_DILATED, 3, -1}};
  for (int i = 0; i < 4; i++) {
    mutant mu = make(m, (mutant_class)sites[i][0], sites[i][1], sites[i][2]);
    check_corrected(&mu);
    ir_graph_free(mu.f), ir_graph_free(mu.g);
  }
  ir_graph_free(m);
}

/* Strided and grouped convs: the correction widens to whole groups and
 * slices with the stride. split-h on a grouped 3x3 conv. */
Test(mutant, correction_grouped) {
  ir_graph *m = parse("input x: [2,4,10,6]\n"
                      "weight w: [6,2,3,3]\n"
                      "weight b: [6]\n"
                      "y = conv2d(x, w, b) pad=same groups=2 act=relu\n"
                      "output y\n");
  mutant mu = make(m, MUTANT_SPLIT_H, 0, -1);
  mutant_boxes b;
  analyze(&mu, 1, &b);
  check_exact(&mu, &b, 1);
  cr_assert_eq(b.wrong_numel, 2 * 6 * 2 * 6);
  mutant_boxes_free(&b);
  check_corrected(&mu);
  ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
}

/* batch-w: through transposes and reshapes; wrong in the columns next to
 * each join between images (not at the outer edges of the row of images). */
Test(mutant, batch_w_columns_between_images) {
  ir_graph *m = parse("input x: [3,2,6,5]\n"
                      "weight w: [4,2,3,3]\n"
                      "weight b: [4]\n"
                      "y = conv2d(x, w, b) pad=same act=relu\n"
                      "output y\n");
  mutant mu = make(m, MUTANT_BATCH_W, 0, -1);
  mutant_boxes b;
  analyze(&mu, 2, &b);
  cr_assert_eq(check_exact(&mu, &b, 2), 4 * 4 * 6, "one column per join side");
  int64_t last0[4] = {0, 1, 3, 4}, first1[4] = {1, 0, 0, 0},
          first0[4] = {0, 0, 0, 0}, last2[4] = {2, 3, 5, 4};
  cr_assert(mutant_in_wrong(&b, 0, last0) && mutant_in_wrong(&b, 0, first1));
  cr_assert(!mutant_in_wrong(&b, 0, first0) && !mutant_in_wrong(&b, 0, last2));
  mutant_boxes_free(&b);
  check_corrected(&mu);
  ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
}

/* ---- generation ----------------------------------------------------------
 */

/* A convolution with a residual input (conv2d(x, w, b, r): the epilogue
 * the generated rules make, what the default --passes none hands the
 * mutants) is no site: the classes rewrite x, w and the bias, and wrote
 * past a three-input array (UBSan, 2026-12-01, `experiment candidates` on
 * ResNet-34's layer 4). Its plain sibling still is one. */
Test(mutant, residual_convolution_is_no_site) {
  ir_graph *m = parse("input x: [1,8,8,8]\nweight w: [8,8,3,3]\n"
                      "weight v: [8,8,3,3]\nweight b: [8]\n"
                      "y = conv2d(x, w, b, x) pad=same act=relu\n"
                      "z = conv2d(y, v, b) pad=same\noutput z\n");
  mutant_list l = {0};
  base_diag d;
  cr_assert_eq(mutant_generate(m, ~0u, &l, &d), BASE_OK, "%s", d.msg);
  int on_y = 0, on_z = 0;
  for (int i = 0; i < l.n; i++)
    for (int j = 0; j < 2; j++)
      if (l.m[i].site[j] >= 0)
        l.m[i].site[j] == 0 ? on_y++ : on_z++;
  cr_assert_eq(on_y, 0, "%d mutants of the residual convolution", on_y);
  cr_assert_gt(on_z, 0);
  mutant_list_free(&l);
  ir_graph_free(m);
}

Test(mutant, generation_is_deterministic) {
  ir_graph *m = parse(model_text);
  mutant_list l1 = {0}, l2 = {0};
  base_diag d;
  cr_assert_eq(mutant_generate(m, ~0u, &l1, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(mutant_generate(m, ~0u, &l2, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(l1.n, l2.n);
  int count[MUTANT_NCLASSES] = {0};
  for (int i = 0; i < l1.n; i++) {
    char *a = ir_print(l1.m[i].g), *b = ir_print(l2.m[i].g);
    cr_assert_str_eq(a, b);
    free(a), free(b);
    count[l1.m[i].cls]++;
    mutant_boxes x, y;
    analyze(&l1.m[i], 9, &x);
    analyze(&l2.m[i], 9, &y);
    cr_assert_eq(x.nwrong, y.nwrong);
    cr_assert(!x.nwrong ||
              !memcmp(x.wrong, y.wrong, sizeof *x.wrong * (size_t)x.nwrong));
    mutant_boxes_free(&x), mutant_boxes_free(&y);
  }
  /* every conv but c4 splits along H (c4's 7-row window would make every
   * row wrong); c4 is dilated; (c1,c2) and (c5,c6) are concat-w pairs (c1
   * with c5: the same input, refused) */
  cr_assert_eq(count[MUTANT_DILATED], 1);
  cr_assert_eq(count[MUTANT_CONCAT_W], 2, "%d", count[MUTANT_CONCAT_W]);
  cr_assert_eq(count[MUTANT_SPLIT_H], 5, "%d", count[MUTANT_SPLIT_H]);
  mutant_list_free(&l1), mutant_list_free(&l2);
  ir_graph_free(m);
}

Test(mutant, refusals_say_why) {
  ir_graph *m = parse(model_text);
  mutant mu;
  base_diag d;
  int32_t nodes[2] = {0, 4}; /* c1 and c5 read the same input */
  cr_assert_eq(mutant_make(MUTANT_CONCAT_W, m, nodes, &mu, &d), BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "different inputs"), "%s", d.msg);
  nodes[0] = 0;
  cr_assert_eq(mutant_make(MUTANT_DILATED, m, nodes, &mu, &d), BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "dilation"), "%s", d.msg);
  ir_graph_free(m);
}

/* ---- applying mutants to a model -----------------------------------------
 */

/* A toy cost: a conv producing 8 rows or more is expensive, any other node
 * cheap, so split-h pays and concat-w (whose corrections are full-height
 * convs) does not. */
static base_status toy_cost(void *u, const ir_graph *g, int node, double *cost,
                            int *estimated, base_diag *d) {
  const ir_node *n = &g->nodes[node];
  (void)u, (void)estimated, (void)d;
  *cost = n->op == IR_OP_CONV2D && g->tensors[n->out[0]].shape.dim[2] >= 8
              ? 1000
              : 1;
  return BASE_OK;
}

/* toy_cost that fails on the n-th call (*u; < 0: never). */
static base_status failing_cost(void *u, const ir_graph *g, int node,
                                double *cost, int *estimated, base_diag *d) {
  int *left = u;
  if (*left >= 0 && (*left)-- == 0)
    return base_diag_set(d, BASE_ERR_IO, 0, 0, "costdb: disk I/O error");
  return toy_cost(NULL, g, node, cost, estimated, d);
}

Test(mutant, apply_takes_what_pays_and_stays_exact) {
  ir_graph *m = parse(model_text), *out = NULL, *out2 = NULL;
  mutant_apply_stats st, st2;
  base_diag d;
  double err = 1;
  cr_assert_eq(mutant_apply(m, ~0u, 1, toy_cost, NULL, &out, &st, &d), BASE_OK,
               "%s", d.msg);
  /* split-h on c1, c2, c3, c5, c6; not dilated on c4 (6 rows: cheap
   * already); both concat-w pairs overlap taken split-h sites */
  cr_assert_eq(st.considered, 8);
  cr_assert_eq(st.napplied, 5, "applied %d not_cheaper %d refused %d",
               st.napplied, st.not_cheaper, st.refused);
  cr_assert_eq(st.not_cheaper, 1);
  cr_assert_eq(st.overlapping, 2);
  for (int i = 0; i < st.napplied; i++)
    cr_assert_lt(st.applied[i].ms_after, st.applied[i].ms_before);
  cr_assert_eq(mutant_float_check(m, out, 4, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_lt(err, 1e-5);
  cr_assert_eq(out->noutputs, m->noutputs);
  for (int i = 0; i < m->noutputs; i++)
    cr_assert_str_eq(out->tensors[out->outputs[i]].name,
                     m->tensors[m->outputs[i]].name);
  /* deterministic */
  cr_assert_eq(mutant_apply(m, ~0u, 1, toy_cost, NULL, &out2, &st2, &d),
               BASE_OK);
  char *a = ir_print(out), *b = ir_print(out2);
  cr_assert_str_eq(a, b);
  free(a), free(b);
  ir_graph_free(out2), mutant_apply_stats_free(&st2);
  ir_graph_free(out), mutant_apply_stats_free(&st);

  /* concat-w alone: g is cheaper, g + correction is not */
  cr_assert_eq(
      mutant_apply(m, 1u << MUTANT_CONCAT_W, 1, toy_cost, NULL, &out, &st, &d),
      BASE_OK);
  cr_assert_eq(st.napplied, 0);
  cr_assert_eq(st.not_cheaper, 2);
  cr_assert_eq(out->nnodes, m->nnodes);
  ir_graph_free(out), mutant_apply_stats_free(&st);

  /* a cost error fails the pass with its message, at any call */
  int calls = 0, ok = 0;
  for (int n = 0; !ok; n++) {
    int left = n;
    out = NULL;
    base_status s = mutant_apply(m, ~0u, 1, failing_cost, &left, &out, &st, &d);
    ok = s == BASE_OK;
    if (ok) {
      ir_graph_free(out), mutant_apply_stats_free(&st);
      break;
    }
    calls++;
    cr_assert_eq(s, BASE_ERR_IO, "call %d: status %d", n, s);
    cr_assert_str_eq(d.msg, "costdb: disk I/O error");
    cr_assert_null(out);
  }
  cr_expect_gt(calls, 10, "only %d cost calls", calls);
  ir_graph_free(m);
}

static base_status cheap_wide(void *u, const ir_graph *g, int node,
                              double *cost, int *estimated, base_diag *d) {
  const ir_node *n = &g->nodes[node];
  (void)u, (void)estimated, (void)d;
  *cost = n->op == IR_OP_CONV2D && g->tensors[n->out[0]].shape.dim[3] == 6 ? 100
                                                                           : 1;
  return BASE_OK;
}

/* Splicing keeps the graph valid when the first conv's output feeds nodes
 * before the second conv of a concat-w pair. */
Test(mutant, apply_concat_w_with_consumers_between) {
  ir_graph *m = parse("input a: [1,2,8,6]\n"
                      "input b: [1,2,8,6]\n"
                      "weight w: [2,2,3,3]\n"
                      "y1 = conv2d(a, w) pad=same\n"
                      "r1 = relu(y1)\n"
                      "y2 = conv2d(b, w) pad=same\n"
                      "s = ewadd(r1, y2)\n"
                      "output s\n");
  mutant_apply_stats st;
  ir_graph *out = NULL;
  base_diag d;
  double err = 1;
  /* every node costs 1 but a conv over 6 columns: concat-w pays */
  cr_assert_eq(mutant_apply(m, 1u << MUTANT_CONCAT_W, 1, cheap_wide, NULL, &out,
                            &st, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_eq(st.napplied, 1);
  cr_assert_eq(mutant_float_check(m, out, 4, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_lt(err, 1e-5);
  ir_graph_free(out), mutant_apply_stats_free(&st);
  ir_graph_free(m);
}

/* cheap_wide, but every convolution's cost is an estimate */
static base_status cheap_wide_estimated(void *u, const ir_graph *g, int node,
                                        double *cost, int *estimated,
                                        base_diag *d) {
  *estimated = g->nodes[node].op == IR_OP_CONV2D;
  return cheap_wide(u, g, node, cost, NULL, d);
}

/* A mutant cheaper only under estimated costs is not taken (counted as
 * unmeasured) unless the mask has MUTANT_ESTIMATES; measured, it is. */
Test(mutant, estimated_savings_need_a_flag) {
  ir_graph *m = parse("input a: [1,2,8,6]\n"
                      "input b: [1,2,8,6]\n"
                      "weight w: [2,2,3,3]\n"
                      "y1 = conv2d(a, w) pad=same\n"
                      "y2 = conv2d(b, w) pad=same\n"
                      "s = ewadd(y1, y2)\n"
                      "output s\n");
  mutant_apply_stats st;
  ir_graph *out = NULL;
  base_diag d;
  unsigned cw = 1u << MUTANT_CONCAT_W;
  cr_assert_eq(
      mutant_apply(m, cw, 1, cheap_wide_estimated, NULL, &out, &st, &d),
      BASE_OK, "%s", d.msg);
  cr_assert_eq(st.napplied, 0);
  cr_assert_eq(st.unmeasured, 1);
  cr_assert_eq(out->nnodes, m->nnodes, "the graph changed");
  ir_graph_free(out), mutant_apply_stats_free(&st);
  cr_assert_eq(mutant_apply(m, cw | MUTANT_ESTIMATES, 1, cheap_wide_estimated,
                            NULL, &out, &st, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_eq(st.napplied, 1);
  cr_assert_eq(st.unmeasured, 0);
  ir_graph_free(out), mutant_apply_stats_free(&st);
  cr_assert_eq(mutant_apply(m, cw, 1, cheap_wide, NULL, &out, &st, &d), BASE_OK,
               "%s", d.msg);
  cr_assert_eq(st.napplied, 1, "measured costs: taken");
  ir_graph_free(out), mutant_apply_stats_free(&st);
  ir_graph_free(m);
}

/* ---- many shapes ---------------------------------------------------------
 */

/* Every class over a grid of kernel sizes (odd and even: 'same' padding is
 * then asymmetric), dilations, strides along the other axis and sizes: the
 * analysis is exact against brute force and the correction exact on floats.
 * Returns the number of mutants checked. */
static int sweep(mutant_class cls, const char *fmt, const int *v, int nv,
                 int nvals) {
  int checked = 0;
  for (int i = 0; i + nvals <= nv; i += nvals) {
    char text[1024];
    int p[8] = {0};
    memcpy(p, v + i, sizeof *p * (size_t)nvals); /* nvals <= 8 */
    snprintf(text, sizeof text, fmt, p[0], p[1], p[2], p[3], p[4], p[5], p[6],
             p[7]);
    ir_graph *m = parse(text);
    mutant mu;
    base_diag d;
    int32_t nodes[2] = {0, 1};
    if (mutant_make(cls, m, nodes, &mu, &d)) {
      cr_assert_eq(d.code, BASE_ERR_PARAM, "%s", d.msg);
      ir_graph_free(m);
      continue; /* refused: e.g. split-h whose cut rows would be most */
    }
    mutant_boxes b;
    analyze(&mu, 21, &b);
    check_exact(&mu, &b, 21);
    mutant_boxes_free(&b);
    check_corrected(&mu);
    ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
    checked++;
  }
  return checked;
}

Test(mutant, sweep_split_h) {
  /* H, W, kh, kw, dilation h, dilation w, stride w */
  const char *fmt = "input x: [1,2,%d,%d]\n"
                    "weight w: [3,2,%d,%d]\n"
                    "y = conv2d(x, w) pad=same dilation=[%d,%d] "
                    "stride=[1,%d]\n"
                    "output y\n";
  int v[] = {8,  6, 2, 3, 1, 1, 1, 10, 7, 3, 2, 1, 1, 2, 12, 5, 4, 1, 1, 1, 1,
             12, 6, 3, 3, 2, 2, 1, 8,  8, 5, 1, 1, 1, 1, 16, 4, 3, 3, 3, 1, 2};
  cr_assert_eq(sweep(MUTANT_SPLIT_H, fmt, v, sizeof v / sizeof *v, 7), 6);
}

Test(mutant, sweep_concat_w) {
  /* W1, W2, kh, kw, dilation w, groups */
  const char *fmt = "input a: [1,4,5,%d]\n"
                    "input b: [1,4,5,%d]\n"
                    "weight w1: [4,%d,%d,%d]\n"
                    "weight w2: [4,%d,%d,%d]\n"
                    "y1 = conv2d(a, w1) pad=same dilation=[1,%d] groups=%d\n"
                    "y2 = conv2d(b, w2) pad=same dilation=[1,%d] groups=%d\n"
                    "output y1, y2\n";
  int rows[][6] = {{4, 7, 3, 3, 1, 1},
                   {6, 6, 1, 2, 1, 1},
                   {5, 4, 3, 4, 1, 2},
                   {7, 5, 3, 3, 2, 4},
                   {3, 8, 5, 5, 1, 1}};
  int checked = 0;
  for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
    char text[1024];
    int *q = rows[r], cg = 4 / q[5];
    snprintf(text, sizeof text, fmt, q[0], q[1], cg, q[2], q[3], cg, q[2], q[3],
             q[4], q[5], q[4], q[5]);
    ir_graph *m = parse(text);
    mutant mu = make(m, MUTANT_CONCAT_W, 0, 1);
    mutant_boxes b;
    analyze(&mu, 22, &b);
    check_exact(&mu, &b, 22);
    mutant_boxes_free(&b);
    check_corrected(&mu);
    ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
    checked++;
  }
  cr_assert_eq(checked, 5);
}

Test(mutant, sweep_batch_w_and_dilated) {
  /* batch-w: N, H, W, kh, kw, dilation w, stride h */
  const char *bw = "input x: [%d,2,%d,%d]\n"
                   "weight w: [3,2,%d,%d]\n"
                   "y = conv2d(x, w) pad=same dilation=[1,%d] stride=[%d,1]\n"
                   "output y\n";
  int v[] = {2, 4, 5, 3, 3, 1, 1, 4, 3, 4, 1, 2, 1, 1, 3, 6, 6, 3,
             4, 1, 2, 2, 5, 7, 5, 3, 2, 1, 3, 4, 4, 1, 1, 1, 1};
  cr_assert_eq(sweep(MUTANT_BATCH_W, bw, v, sizeof v / sizeof *v, 7), 5);
  /* dilated: N, H, W, kh, kw, dilation */
  const char *dl = "input x: [%d,2,%d,%d]\n"
                   "weight w: [3,2,%d,%d]\n"
                   "weight b: [3]\n"
                   "y = conv2d(x, w, b) pad=same dilation=[%d,%d] act=relu\n"
                   "output y\n";
  int u[] = {1, 6, 4, 3, 3, 2, 2, 2, 6, 9, 3, 5, 3, 3,
             1, 8, 8, 5, 3, 4, 4, 2, 4, 6, 1, 3, 2, 2};
  cr_assert_eq(sweep(MUTANT_DILATED, dl, u, sizeof u / sizeof *u, 7), 4);
}

/* ---- the correction's cost ------------------------------------------------
 */

/* At a realistic size the correction is a small conv fused into the concat
 * that g ends with: its FLOPs are a small fraction of f's, and the corrected
 * split-h graph has no more concats than g (one stacking the halves, one
 * joining the rows, the correction written into the latter) and no split. */
Test(mutant, correction_is_small_and_fused) {
  ir_graph *m = parse("input x: [1,16,56,56]\n"
                      "input y: [1,16,56,40]\n"
                      "weight w: [16,16,3,3]\n"
                      "weight b: [16]\n"
                      "weight v: [16,16,3,3]\n"
                      "c1 = conv2d(x, w, b) pad=same act=relu\n"
                      "weight b2: [16]\n"
                      "c2 = conv2d(y, v, b2) pad=same act=relu\n"
                      "output c1, c2\n");
  struct {
    mutant_class cls;
    int n0, n1;
    double most; /* largest correction FLOPs / f's FLOPs */
  } cases[] = {{MUTANT_SPLIT_H, 0, -1, 0.04}, {MUTANT_CONCAT_W, 0, 1, 0.04}};
  for (int c = 0; c < 2; c++) {
    mutant mu = make(m, cases[c].cls, cases[c].n0, cases[c].n1);
    mutant_boxes b;
    analyze(&mu, 3, &b);
    cr_assert_gt(b.nwrong, 0);
    ir_graph *h = corrected(&mu, b.wrong, b.nwrong);
    double cf = flops(mu.f), cg = flops(mu.g), ch = flops(h);
    cr_assert_gt(ch, cg);
    cr_assert_lt((ch - cg) / cf, cases[c].most, "%s: correction %.4f of f",
                 mutant_class_name(mu.cls), (ch - cg) / cf);
    cr_assert_eq(count_op(h, IR_OP_CONV2D),
                 count_op(mu.g, IR_OP_CONV2D) + b.nwrong);
    if (mu.cls == MUTANT_SPLIT_H) {
      cr_assert_eq(count_op(h, IR_OP_CONCAT), count_op(mu.g, IR_OP_CONCAT));
      cr_assert_eq(count_op(h, IR_OP_SPLIT), 0, "the split is fused away");
    }
    double err = 1;
    base_diag d;
    cr_assert_eq(mutant_float_check(mu.f, h, 5, &err, &d), BASE_OK, "%s",
                 d.msg);
    cr_assert_lt(err, 1e-5);
    mutant_boxes_free(&b);
    ir_graph_free(h), ir_graph_free(mu.f), ir_graph_free(mu.g);
  }
  ir_graph_free(m);
}

/* Sets leaf `name` of g to values v (NULL: none). */
static void set_values(ir_graph *g, const char *name, const float *v) {
  int t = ir_find_tensor(g, name);
  cr_assert_geq(t, 0, "%s", name);
  g->tensors[t].data = v;
}

/* The float check runs the corrected graph h on the values it holds, not
 * on f's namesakes (the end-to-end check's rule): h holding f's w3 passes;
 * h whose w3 holds other values under f's name fails; h whose w3 lost its
 * values is refused, naming it. Before, h ran on f's values by name
 * whatever it held: the last two passed. */
Test(mutant, float_check_runs_the_mutants_own_values) {
  static float w[150], other[150];
  for (int i = 0; i < 150; i++)
    w[i] = other[i] = sinf(0.7f * (float)i + 0.3f);
  other[75] += 1; /* one tap of the kernel */
  ir_graph *m = parse(model_text);
  set_values(m, "w3", w);
  mutant mu = make(m, MUTANT_SPLIT_H, 2, -1);
  mutant_boxes b;
  analyze(&mu, 3, &b);
  ir_graph *h = corrected(&mu, b.wrong, b.nwrong);
  base_diag d;
  double err = 1;
  cr_assert_eq(mutant_float_check(mu.f, h, 2, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_lt(err, 1e-5);
  set_values(h, "w3", other);
  cr_assert_eq(mutant_float_check(mu.f, h, 2, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_gt(err, 1e-3, "other values under w3 passed: %g", err);
  set_values(h, "w3", NULL);
  cr_assert_eq(mutant_float_check(mu.f, h, 2, &err, &d), BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "mutant: ") == d.msg && strstr(d.msg, "'w3'"), "%s",
            d.msg);
  set_values(m, "w3", NULL);
  mutant_boxes_free(&b);
  ir_graph_free(h), ir_graph_free(mu.f), ir_graph_free(mu.g);
  ir_graph_free(m);
}

/* mutant_fuse_moves folds data movement exactly and leaves compute alone. */
Test(mutant, fuse_moves_is_exact) {
  ir_graph *g = parse("input x: [2,3,8,6]\n"
                      "weight w: [3,3,1,1]\n"
                      "a = slice(x) starts=[0,0,0,0] ends=[2,3,5,6]\n"
                      "b = slice(x) starts=[0,0,5,0] ends=[2,3,8,6]\n"
                      "j = concat(a, b) axis=2\n"
                      "s = slice(j) starts=[0,0,1,0] ends=[2,3,4,6]\n"
                      "t = slice(s) starts=[1,0,0,0] ends=[2,3,3,6]\n"
                      "p, q = split(x) axis=0 sizes=[1,1]\n"
                      "u = slice(q) starts=[0,1,0,0] ends=[1,3,8,6]\n"
                      "c = conv2d(j, w)\n"
                      "k = concat(t, t) axis=1\n"
                      "output c, k, u\n");
  ir_graph *h = NULL;
  base_diag d;
  double err = 1;
  cr_assert_eq(mutant_fuse_moves(g, &h, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(mutant_float_check(g, h, 3, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(err, 0);
  /* j = concat of two adjacent slices of x is x; t and u are one slice of
   * x each (the split and s are dead then); k one concat */
  cr_assert_eq(count_op(h, IR_OP_CONCAT), 1);
  cr_assert_eq(count_op(h, IR_OP_SPLIT), 0);
  cr_assert_eq(count_op(h, IR_OP_SLICE), 2);
  cr_assert_eq(count_op(h, IR_OP_CONV2D), 1);
  for (int k = 0; k < h->nnodes; k++)
    if (h->nodes[k].op == IR_OP_CONV2D)
      cr_assert_eq(h->tensors[h->nodes[k].in[0]].kind, IR_T_INPUT,
                   "the conv reads x itself");
  ir_graph_free(h), ir_graph_free(g);
}

/* ---- mutants in the search ------------------------------------------------
 */

/* A cd_cost_fn under which mutants pay: a conv producing at least 8 rows
 * and 8 columns costs 1000 divided by its batch (split-h's half-height conv
 * on twice the batch is cheaper), anything else 1. */
static base_status toy_search_cost(void *u, const ir_graph *g, int node,
                                   double *cost, int *estimated, base_diag *d) {
  const ir_node *n = &g->nodes[node];
  const ir_shape *s = &g->tensors[n->out[0]].shape;
  (void)u, (void)d;
  *cost = n->op == IR_OP_CONV2D && s->dim[2] >= 8 && s->dim[3] >= 8
              ? 1000.0 / (double)s->dim[0]
              : 1;
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

static const char *chain_text = "input x: [1,4,16,16]\n"
                                "weight w1: [4,4,3,3]\n"
                                "weight b1: [4]\n"
                                "weight w2: [4,4,3,3]\n"
                                "weight w3: [4,4,5,5]\n"
                                "weight w4: [4,4,3,3]\n"
                                "y1 = conv2d(x, w1, b1) pad=same act=relu\n"
                                "y2 = conv2d(y1, w2) pad=same\n"
                                "r2 = relu(y2)\n"
                                "y3 = conv2d(r2, w3) pad=same act=relu\n"
                                "y4 = conv2d(y3, w4) pad=same\n"
                                "s = ewadd(y4, y1)\n"
                                "output s\n";

/* mutant_optimize of g with the rules of rs (freed here) and o, seed 1:
 * the result; its search statistics in *st, the mutants in *ms. */
static ir_graph *optimize_with(const ir_graph *g, ir_ruleset *rs,
                               const srch_options *o, unsigned mask,
                               mutant_apply_stats *ms, srch_stats *st) {
  base_diag d;
  rewrite_rules *rules = rewrite_rules_compile(rs, REWRITE_BOTH, 0, &d);
  cr_assert(rules, "%s", d.msg);
  ir_graph *h = mutant_optimize(g, rules, o, mask, 1, st, ms, &d);
  cr_assert(h, "%s", d.msg);
  rewrite_rules_free(rules);
  ir_ruleset_free(rs);
  return h;
}

static ir_graph *optimize(const ir_graph *g, unsigned mask,
                          mutant_apply_stats *ms, double *cost_after) {
  ir_ruleset rs;
  ir_ruleset_init(&rs);
  srch_options o;
  srch_options_default(&o);
  o.cost = toy_search_cost;
  o.region_nodes = 2; /* several regions: mutants per region */
  srch_stats st;
  ir_graph *h = optimize_with(g, &rs, &o, mask, ms, &st);
  cr_assert_gt(st.regions, 1);
  *cost_after = st.cost_after;
  srch_stats_free(&st);
  return h;
}

/* Two runs of one seed, h (cost, ms) and h2 (cost2, ms2), made the same
 * graph at the same cost with the same mutants, and h computes what g
 * does (the end-to-end check optimize runs). */
static void expect_repeatable_and_exact(const ir_graph *g, const ir_graph *h,
                                        const ir_graph *h2, double cost,
                                        double cost2,
                                        const mutant_apply_stats *ms,
                                        const mutant_apply_stats *ms2) {
  char *a = ir_print(h), *b = ir_print(h2);
  cr_assert_str_eq(a, b);
  cr_assert_eq(cost, cost2);
  cr_assert_eq(ms->napplied, ms2->napplied);
  cr_assert_eq(ms->candidates, ms2->candidates);
  free(a), free(b);
  double err = 1;
  base_diag d;
  cr_assert_eq(ex_check(g, h, 1, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_lt(err, 1e-5);
}

/* Mutants join the search region by region under its cost model: they are
 * taken where they pay, the result is exact end to end on floats, cheaper
 * than without mutants, and the same graph for the same seed. */
Test(mutant, search_takes_mutants_per_region) {
  ir_graph *g = parse(chain_text);
  mutant_apply_stats ms, ms2, ms0;
  double with = 0, with2 = 0, without = 0;
  ir_graph *h = optimize(g, MUTANT_ALL, &ms, &with);
  ir_graph *h2 = optimize(g, MUTANT_ALL, &ms2, &with2);
  ir_graph *h0 = optimize(g, 0, &ms0, &without);
  cr_assert_eq(ms.napplied, 4, "applied %d of %d", ms.napplied, ms.considered);
  cr_assert_eq(ms0.napplied, 0);
  cr_assert_eq(ms0.considered, 0);
  cr_assert_lt(with, without);
  for (int i = 0; i < ms.napplied; i++) {
    cr_assert_eq(ms.applied[i].cls, MUTANT_SPLIT_H);
    cr_assert_lt(ms.applied[i].ms_after, ms.applied[i].ms_before);
    cr_assert_gt(ms.applied[i].wrong_numel, 0);
    cr_assert_lt(ms.applied[i].wrong_numel, ms.applied[i].numel / 2);
  }
  expect_repeatable_and_exact(g, h, h2, with, with2, &ms, &ms2);
  mutant_apply_stats_free(&ms), mutant_apply_stats_free(&ms2);
  mutant_apply_stats_free(&ms0);
  ir_graph_free(h), ir_graph_free(h2), ir_graph_free(h0), ir_graph_free(g);
}

/* A deliberately wrong correction spliced into a model is caught by the
 * end-to-end check and by the box analysis: the correction conv of every
 * mutant the search took reads its input slice one row lower. */
Test(mutant, wrong_correction_in_a_model_is_caught) {
  ir_graph *g = parse(chain_text);
  mutant_apply_stats ms;
  double cost = 0;
  ir_graph *h = optimize(g, 1u << MUTANT_SPLIT_H, &ms, &cost);
  cr_assert_gt(ms.napplied, 0);
  int moved = 0;
  for (int k = 0; k < h->nnodes; k++) {
    const ir_node *n = &h->nodes[k];
    const ir_tensor *x = &h->tensors[n->in[0]];
    if (n->op != IR_OP_CONV2D || x->node < 0 ||
        h->nodes[x->node].op != IR_OP_SLICE ||
        h->tensors[n->out[0]].shape.dim[0] != 1)
      continue; /* not a correction: that reads the stacked halves */
    ir_node *sl = &h->nodes[x->node];
    const ir_shape *src = &h->tensors[sl->in[0]].shape;
    if (sl->a.list2[2] < src->dim[2])
      sl->a.list[2]++, sl->a.list2[2]++, moved++;
  }
  cr_assert_gt(moved, 0);
  double err = 0;
  base_diag d;
  cr_assert_eq(ex_check(g, h, 1, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_gt(err, 1e-3, "a wrong correction passed the end-to-end check");
  mutant_boxes b;
  cr_assert_eq(mutant_analyze(g, h, 7, &b, &d), BASE_OK, "%s", d.msg);
  cr_assert_gt(b.nwrong, 0);
  mutant_boxes_free(&b);
  mutant_apply_stats_free(&ms);
  ir_graph_free(h), ir_graph_free(g);
}

/* ---- the joint search: a mutant that enables a rule ----------------------
 */

/* Two 1x1 convolutions over exp(a) and exp(b): concat-w (one conv over
 * the two inputs side by side, exact for 1x1) does not pay by itself under
 * joint_cost, but puts concat(exp(a), exp(b)) in the graph, which the rule
 * below turns into one exp over concat(a, b). */
static const char *joint_text = "input a: [1,4,8,8]\n"
                                "input b: [1,4,8,8]\n"
                                "weight w1: [4,4,1,1]\n"
                                "weight w2: [4,4,1,1]\n"
                                "e1 = exp(a)\n"
                                "e2 = exp(b)\n"
                                "y1 = conv2d(e1, w1)\n"
                                "y2 = conv2d(e2, w2)\n"
                                "output y1, y2\n";

static const char *joint_rule = "# superopt rules v1\n"
                                "rule exp_concat proven\n"
                                "src:\n"
                                "input a: [1,2,2,2]\n"
                                "input b: [1,2,2,2]\n"
                                "t0: [1,2,2,2] = exp(a)\n"
                                "t1: [1,2,2,2] = exp(b)\n"
                                "t2: [1,2,2,4] = concat(t0, t1) axis=3\n"
                                "output t2\n"
                                "dst:\n"
                                "input a: [1,2,2,2]\n"
                                "input b: [1,2,2,2]\n"
                                "t0: [1,2,2,4] = concat(a, b) axis=3\n"
                                "t1: [1,2,2,4] = exp(t0)\n"
                                "output t1\n"
                                "end\n";

/* A conv costs 10 per output column, an exp 50, anything else 1 (all
 * measured): concat-w's conv over twice the width costs what the two did,
 * plus its concat and slices. */
static base_status joint_cost(void *u, const ir_graph *g, int node,
                              double *cost, int *estimated, base_diag *d) {
  const ir_node *n = &g->nodes[node];
  (void)u, (void)d;
  *cost = n->op == IR_OP_CONV2D
              ? 10.0 * (double)g->tensors[n->out[0]].shape.dim[3]
          : n->op == IR_OP_EXP ? 50
                               : 1;
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

/* mutant_optimize on joint_text with joint_rule: the result, its cost, the
 * rule's forward uses, the mutants. */
static ir_graph *joint_optimize(const ir_graph *g, unsigned mask,
                                mutant_apply_stats *ms, double *cost,
                                int *rule_uses) {
  ir_ruleset rs;
  base_diag d;
  cr_assert_eq(ir_rules_parse(joint_rule, strlen(joint_rule), "joint", &rs, &d),
               BASE_OK, "%s", d.msg);
  srch_options o;
  srch_options_default(&o);
  o.cost = joint_cost;
  o.no_passes = 1; /* the rule and the mutants alone */
  o.fuse_k = 0;
  srch_stats st;
  ir_graph *h = optimize_with(g, &rs, &o, mask, ms, &st);
  *cost = st.cost_after;
  *rule_uses = st.applied_fw[0];
  srch_stats_free(&st);
  return h;
}

/* The joint search takes a mutant that does not pay by itself because a
 * rule then applies to what it made; the greedy step (rules first, then
 * mutants that pay) cannot reach that graph. Same graph for the same seed;
 * exact end to end. */
Test(mutant, joint_search_mutant_enables_a_rule) {
  ir_graph *g = parse(joint_text);
  mutant_apply_stats ms, ms2, mg;
  double joint = 0, joint2 = 0, greedy = 0;
  int uses = 0, uses2 = 0, guses = 0;
  /* concat-w only: under joint_cost a grouped conv (group-merge) would
   * cost half of the two convs it replaces */
  unsigned cw = 1u << MUTANT_CONCAT_W;
  ir_graph *h = joint_optimize(g, cw, &ms, &joint, &uses);
  ir_graph *h2 = joint_optimize(g, cw, &ms2, &joint2, &uses2);
  ir_graph *hg = joint_optimize(g, cw | MUTANT_GREEDY, &mg, &greedy, &guses);
  /* greedy: no rule matches the original, and no mutant pays alone */
  cr_assert_eq(mg.napplied, 0);
  cr_assert_eq(guses, 0);
  cr_assert_eq(greedy, 260); /* 2 exp + 2 convs of 8 columns */
  /* joint: concat-w (+3 alone), then the rule (-49) */
  cr_assert_eq(ms.napplied, 1, "applied %d of %d (%d offered)", ms.napplied,
               ms.considered, ms.candidates);
  cr_assert_eq(ms.applied[0].cls, MUTANT_CONCAT_W);
  cr_assert_gt(ms.applied[0].ms_after, ms.applied[0].ms_before,
               "this mutant does not pay by itself");
  cr_assert_eq(uses, 1);
  /* concat(a, b) 1 + exp 50 + one conv of 16 columns 160 + 2 slices 2 */
  cr_assert_eq(joint, 213, "%g", joint);
  cr_assert_eq(count_op(h, IR_OP_EXP), 1);
  cr_assert_eq(ms.considered, ms.napplied + ms.not_cheaper + ms.overlapping +
                                  ms.refused + ms.unmeasured);
  expect_repeatable_and_exact(g, h, h2, joint, joint2, &ms, &ms2);
  mutant_apply_stats_free(&ms), mutant_apply_stats_free(&ms2);
  mutant_apply_stats_free(&mg);
  ir_graph_free(h), ir_graph_free(h2), ir_graph_free(hg), ir_graph_free(g);
}

/* ---- position by position ------------------------------------------------
 */

/* Every tensor of g position by position equals mutant_eval's whole
 * tensors; returns 1 when g qualified for point evaluation. */
static int point_matches_eval(const ir_graph *g, uint64_t seed) {
  if (!mutant_point_ok(g))
    return 0;
  uint32_t **v = NULL;
  base_diag d;
  mutant_pt p;
  cr_assert_eq(mutant_eval(g, seed, &v, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(mutant_pt_init(&p, g, seed, &d), BASE_OK);
  for (int t = 0; t < g->ntensors; t++) {
    const ir_shape *s = &g->tensors[t].shape;
    int64_t n = ir_shape_numel(s), idx[IR_MAX_RANK];
    for (int64_t j = 0; j < n; j++) {
      mutant_unravel(s, j, idx);
      cr_assert_eq(mutant_point(&p, t, idx), v[t][j], "%s position %lld",
                   g->tensors[t].name, (long long)j);
    }
  }
  mutant_vals_free(g, v);
  mutant_pt_free(&p);
  return 1;
}

/* The box analysis reads corners position by position (point.c): the same
 * residues as whole-tensor evaluation, for f, g and the corrected graph of
 * every mutant of the test model, at batch 1 and 2; graphs with a conv over
 * a conv or another operator do not qualify. */
Test(mutant, point_evaluation_equals_whole_tensors) {
  const char *batch2 = "input x: [2,3,8,8]\n"
                       "weight w: [4,3,3,3]\n"
                       "y = conv2d(x, w) pad=same\n"
                       "output y\n";
  ir_graph *models[2] = {parse(model_text), parse(batch2)};
  int checked = 0;
  for (int i = 0; i < 2; i++) {
    mutant_list l = {0};
    base_diag d;
    cr_assert_eq(mutant_generate(models[i], ~0u, &l, &d), BASE_OK, "%s", d.msg);
    for (int k = 0; k < l.n; k++) {
      mutant_boxes b;
      analyze(&l.m[k], 5, &b);
      ir_graph *h = corrected(&l.m[k], b.wrong, b.nwrong);
      checked += point_matches_eval(l.m[k].f, 5);
      checked += point_matches_eval(l.m[k].g, 5);
      checked += point_matches_eval(h, 6);
      ir_graph_free(h);
      mutant_boxes_free(&b);
    }
    mutant_list_free(&l);
  }
  cr_assert_geq(checked, 30, "%d graphs checked", checked);
  ir_graph *chain = parse(chain_text);
  cr_assert(!mutant_point_ok(chain), "a conv over a conv");
  ir_graph_free(chain), ir_graph_free(models[0]), ir_graph_free(models[1]);
}

/* A product's computed operand is kept once read (point.c's cache: the
 * dilated mutant's conv reads its space-to-batch input, pad, reshape,
 * transpose and reshape, up to 9 times a position): each kept residue is
 * the one mutant_eval gives, plus 1, and every output position still
 * matches mutant_eval. */
Test(mutant, point_keeps_a_product_s_computed_operand) {
  ir_graph *m = parse(model_text);
  mutant mu = make(m, MUTANT_DILATED, 3, -1);
  const ir_graph *g = mu.g;
  uint32_t **v = NULL;
  base_diag d;
  mutant_pt p;
  cr_assert_eq(mutant_eval(g, 5, &v, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(mutant_pt_init(&p, g, 5, &d), BASE_OK);
  int conv = -1;
  for (int k = 0; k < g->nnodes; k++)
    conv = g->nodes[k].op == IR_OP_CONV2D ? k : conv;
  cr_assert_geq(conv, 0);
  int x = g->nodes[conv].in[0], y = g->nodes[conv].out[0];
  cr_assert_eq(g->tensors[x].kind, IR_T_VALUE);
  const ir_shape *ys = &g->tensors[y].shape, *xs = &g->tensors[x].shape;
  int64_t idx[IR_MAX_RANK];
  for (int pass = 0; pass < 2; pass++) /* the second from the cache */
    for (int64_t j = 0; j < ir_shape_numel(ys); j++) {
      mutant_unravel(ys, j, idx);
      cr_assert_eq(mutant_point(&p, y, idx), v[y][j], "position %lld",
                   (long long)j);
    }
  cr_assert(p.cache && p.cache[x], "the conv's input is not kept");
  int64_t kept = 0;
  for (int64_t j = 0; j < ir_shape_numel(xs); j++)
    if (p.cache[x][j]) {
      cr_assert_eq(p.cache[x][j], v[x][j] + 1, "position %lld", (long long)j);
      kept++;
    }
  cr_assert_gt(kept, 0);
  cr_assert_eq(*p.cache_bytes, sizeof(uint32_t) * (size_t)ir_shape_numel(xs));
  mutant_vals_free(g, v);
  mutant_pt_free(&p);
  ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
}

/* ---- PET's models ---------------------------------------------------------
 */

/* A cd_cost_fn under which every mutant pays: a conv the model was written
 * with costs 1000, a conv the mutant module wrote (named t<k> in g and its
 * correction, NAME.mut<k> once spliced) and every other node 1. */
static base_status every_mutant_pays(void *u, const ir_graph *g, int node,
                                     double *cost, int *estimated,
                                     base_diag *d) {
  const ir_node *n = &g->nodes[node];
  const char *name = g->tensors[n->out[0]].name;
  int ours = strstr(name, ".mut") ||
             (name[0] == 't' && name[1] &&
              strspn(name + 1, "0123456789") == strlen(name + 1));
  (void)u, (void)d;
  *cost = n->op == IR_OP_CONV2D && !ours ? 1000 : 1;
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

/* The corrected graphs of PET's conv models (models/, written by
 * scripts/gen-zoo.py; BERT-base has no conv, so no mutant of these classes)
 * pass the end-to-end check on the CPU executor, with every mutant the
 * search considers taken (resnet34_l4 at batch 2, where batch-w applies:
 * its 7x7 maps have an odd height, so no split-h). */
Test(mutant, pet_models_corrected_pass_the_end_to_end_check, .timeout = 600) {
  static const struct {
    const char *file;
    int batch;
  } models[] = {
      {"csrnet", 1}, {"resnet18", 1}, {"inception_v3", 1}, {"resnet34_l4", 2}};
  ir_ruleset rs;
  base_diag d;
  ir_ruleset_init(&rs);
  rewrite_rules *rules = rewrite_rules_compile(&rs, REWRITE_BOTH, 0, &d);
  cr_assert(rules, "%s", d.msg);
  for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s.graph", SUPEROPT_SOURCE_DIR,
             models[i].file);
    ir_graph *g = ir_parse_file(path, &d), *r = NULL;
    cr_assert(g, "%s", d.msg);
    if (models[i].batch > 1) {
      cr_assert_eq(ir_rebatch(g, models[i].batch, &r, &d), BASE_OK, "%s",
                   d.msg);
      ir_graph_free(g);
      g = r;
    }
    srch_options o;
    srch_options_default(&o);
    o.cost = every_mutant_pays;
    o.budget = 100; /* no rules: the mutants are the only rewrites */
    srch_stats st;
    mutant_apply_stats ms;
    ir_graph *h = mutant_optimize(g, rules, &o, MUTANT_ALL, 1, &st, &ms, &d);
    cr_assert(h, "%s: %s", models[i].file, d.msg);
    cr_assert_gt(ms.napplied, 0, "%s: no mutant taken", models[i].file);
    int64_t wrong = 0;
    for (int k = 0; k < ms.napplied; k++)
      wrong += ms.applied[k].wrong_numel;
    double err = 1;
    cr_assert_eq(ex_check(g, h, 1, &err, &d), BASE_OK, "%s", d.msg);
    cr_assert_lt(err, 1e-4, "%s: relative error %g", models[i].file, err);
    cr_log_info("%s: %d of %d mutants taken, %lld outputs corrected, error "
                "%.2g",
                models[i].file, ms.napplied, ms.considered, (long long)wrong,
                err);
    mutant_apply_stats_free(&ms);
    srch_stats_free(&st);
    ir_graph_free(h), ir_graph_free(g);
  }
  rewrite_rules_free(rules);
  ir_ruleset_free(&rs);
}

/* ---- PET's further classes: pad-split-h, group-merge, matmul-batch ------
 */

/* pad-split-h (PET's pad-conv-slice) on 7x7 maps, resnet34_l4's: one zero
 * row padded below, split-h, the extra row sliced off. Wrong exactly in
 * the rows next to the cut (rows 3 and 4 of 7 for a 3x3 window at the cut
 * of 8 rows), corrected exactly. */
Test(mutant, pad_split_h_odd_rows) {
  ir_graph *m = parse("input x: [2,3,7,7]\n"
                      "weight w: [4,3,3,3]\n"
                      "weight b: [4]\n"
                      "y = conv2d(x, w, b) pad=same act=relu\n"
                      "output y\n");
  mutant mu = make(m, MUTANT_PAD_SPLIT_H, 0, -1);
  cr_assert_eq(count_op(mu.g, IR_OP_PAD), 1);
  mutant_boxes b;
  analyze(&mu, 3, &b);
  check_exact(&mu, &b, 3);
  check_exact(&mu, &b, 4);
  cr_assert_eq(b.nwrong, 1);
  cr_assert_eq(b.wrong[0].lo[2], 3);
  cr_assert_eq(b.wrong[0].hi[2], 5);
  cr_assert_eq(b.wrong_numel, 2 * 4 * 2 * 7);
  mutant_boxes_free(&b);
  check_corrected(&mu);
  ir_graph_free(mu.f), ir_graph_free(mu.g);
  /* even H is split-h's, not pad-split-h's */
  int32_t nodes[2] = {0, -1};
  base_diag d;
  ir_graph *e = parse("input x: [1,3,8,7]\n"
                      "weight w: [4,3,3,3]\n"
                      "y = conv2d(x, w) pad=same\n"
                      "output y\n");
  cr_assert_eq(mutant_make(MUTANT_PAD_SPLIT_H, e, nodes, &mu, &d),
               BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "odd H"), "%s", d.msg);
  ir_graph_free(e), ir_graph_free(m);
}

Test(mutant, sweep_pad_split_h) {
  /* H, W, kh, kw, dilation h, dilation w, stride w */
  const char *fmt = "input x: [1,2,%d,%d]\n"
                    "weight w: [3,2,%d,%d]\n"
                    "y = conv2d(x, w) pad=same dilation=[%d,%d] "
                    "stride=[1,%d]\n"
                    "output y\n";
  int v[] = {7,  7, 3, 3, 1, 1, 1, 9, 6, 5, 3, 1, 1, 2, 11, 5, 2, 2, 1, 1, 1,
             13, 6, 3, 3, 2, 2, 1, 5, 5, 3, 1, 1, 1, 1, 3,  4, 3, 3, 1, 1, 1};
  /* the last: 3 rows padded to 4, a 3x3 window: every row is next to the
   * cut, still allowed (half of the 4) */
  cr_assert_eq(sweep(MUTANT_PAD_SPLIT_H, fmt, v, sizeof v / sizeof *v, 7), 6);
}

/* group-merge: two grouped (and two depthwise) convs on different inputs
 * of one shape as one conv with twice the groups over the inputs joined
 * along C: equal everywhere, found so by the analysis and brute force. */
Test(mutant, group_merge_is_equal_everywhere) {
  const char *texts[] = {"input a: [2,4,6,5]\n"
                         "input b: [2,4,6,5]\n"
                         "weight w1: [6,2,3,3]\n"
                         "weight b1: [6]\n"
                         "weight w2: [6,2,3,3]\n"
                         "weight b2: [6]\n"
                         "y1 = conv2d(a, w1, b1) pad=same groups=2 act=relu\n"
                         "y2 = conv2d(b, w2, b2) pad=same groups=2 act=relu\n"
                         "output y1, y2\n",
                         "input a: [1,4,7,7]\n"
                         "input b: [1,4,7,7]\n"
                         "weight w1: [4,1,5,5]\n"
                         "weight w2: [4,1,5,5]\n"
                         "y1 = conv2d(a, w1) pad=same groups=4 stride=[2,2]\n"
                         "y2 = conv2d(b, w2) pad=same groups=4 stride=[2,2]\n"
                         "output y1, y2\n",
                         "input a: [1,3,5,5]\n"
                         "input b: [1,3,5,5]\n"
                         "weight w: [2,3,3,3]\n"
                         "y1 = conv2d(a, w) pad=same\n"
                         "y2 = conv2d(b, w) pad=same\n"
                         "output y1, y2\n"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    ir_graph *m = parse(texts[i]);
    mutant mu = make(m, MUTANT_GROUP_MERGE, 0, 1);
    cr_assert_eq(count_op(mu.g, IR_OP_CONV2D), 1);
    mutant_boxes b;
    analyze(&mu, 5, &b);
    cr_assert_eq(check_exact(&mu, &b, 5), 0, "case %zu", i);
    cr_assert_eq(b.nwrong, 0);
    mutant_boxes_free(&b);
    check_corrected(&mu);
    ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
  }
}

/* matmul-batch: BERT's projections (rank 3, a bias, one shared input as Q
 * and K read it) and rank-2 matmuls with an activation, as one batched
 * matmul: equal everywhere; brute force runs position by position (the
 * whole-tensor evaluator has no batched right-hand side). */
Test(mutant, matmul_batch_is_equal_everywhere) {
  const char *texts[] = {"input x: [2,6,8]\n"
                         "weight wq: [8,5]\n"
                         "weight bq: [5]\n"
                         "weight wk: [8,5]\n"
                         "weight bk: [5]\n"
                         "q = matmul(x, wq, bq)\n"
                         "k = matmul(x, wk, bk)\n"
                         "output q, k\n",
                         "input a: [6,8]\n"
                         "input b: [6,8]\n"
                         "weight w1: [8,4]\n"
                         "weight w2: [8,4]\n"
                         "y1 = matmul(a, w1) act=relu\n"
                         "y2 = matmul(b, w2) act=relu\n"
                         "output y1, y2\n"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    ir_graph *m = parse(texts[i]);
    mutant mu = make(m, MUTANT_MATMUL_BATCH, 0, 1);
    cr_assert_eq(count_op(mu.g, IR_OP_MATMUL), 1);
    cr_assert(mutant_point_ok(mu.f) && mutant_point_ok(mu.g));
    mutant_boxes b;
    analyze(&mu, 6, &b);
    cr_assert_eq(check_exact(&mu, &b, 6), 0, "case %zu", i);
    cr_assert_eq(b.nwrong, 0);
    mutant_boxes_free(&b);
    base_diag d;
    double err = 1;
    cr_assert_eq(mutant_float_check(mu.f, mu.g, 3, &err, &d), BASE_OK, "%s",
                 d.msg);
    cr_assert_lt(err, 1e-5, "case %zu: error %g", i, err);
    ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
  }
}

/* The matmul correction kernel: matmul-batch with its stacked weights
 * swapped (each output now computed with the other's weights) is wrong
 * everywhere but in no box the analysis misses; the correction recomputes
 * the boxes (rows of a times columns of b, plus the bias) and is exact;
 * a box one column short is caught. */
Test(mutant, matmul_correction_is_exact) {
  ir_graph *m = parse("input x: [1,6,8]\n"
                      "input z: [1,6,8]\n"
                      "weight w1: [8,5]\n"
                      "weight b1: [5]\n"
                      "weight w2: [8,5]\n"
                      "weight b2: [5]\n"
                      "y1 = matmul(x, w1, b1)\n"
                      "y2 = matmul(z, w2, b2)\n"
                      "output y1, y2\n");
  mutant mu = make(m, MUTANT_MATMUL_BATCH, 0, 1);
  int swapped = 0;
  for (int k = 0; k < mu.g->nnodes; k++) {
    ir_node *n = &mu.g->nodes[k];
    if (n->op == IR_OP_CONCAT && mu.g->tensors[n->out[0]].shape.rank == 3 &&
        mu.g->tensors[n->out[0]].shape.dim[1] == 8) {
      int32_t t = n->in[0];
      n->in[0] = n->in[1], n->in[1] = t, swapped++;
    }
  }
  cr_assert_eq(swapped, 1);
  mutant_boxes b, b2;
  analyze(&mu, 2, &b);
  cr_assert_eq(check_sound(&mu, &b, 2), 2 * 6 * 5);
  cr_assert_eq(b.wrong_numel, 2 * 6 * 5);
  ir_graph *h = corrected(&mu, b.wrong, b.nwrong);
  base_diag d;
  double err = 1;
  cr_assert_eq(mutant_float_check(mu.f, h, 2, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_lt(err, 1e-5, "corrected error %g", err);
  cr_assert_eq(mutant_analyze(mu.f, h, 9, &b2, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(b2.nwrong, 0);
  mutant_boxes_free(&b2);
  ir_graph_free(h);
  mutant_box w = b.wrong[0];
  w.hi[2]--; /* one column short */
  mutant_box two[2] = {w, b.wrong[1]};
  cr_assert_eq(b.nwrong, 2);
  h = corrected(&mu, two, 2);
  cr_assert_eq(mutant_float_check(mu.f, h, 2, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_gt(err, 1e-3, "a wrong correction passed");
  ir_graph_free(h);
  mutant_boxes_free(&b);
  ir_graph_free(mu.f), ir_graph_free(mu.g), ir_graph_free(m);
}

/* Generation finds the new classes where they apply and only there: an odd
 * map (pad-split-h), two independent grouped convs (group-merge), two
 * independent matmuls (matmul-batch); not a chain of grouped convs (ResNeXt's
 * and MobileNet's), not a matmul reading the other, not a batched
 * right-hand side (attention's scores). */
Test(mutant, pet_classes_found_only_where_they_apply) {
  ir_graph *m = parse("input x: [1,4,7,7]\n"
                      "input a: [1,4,6,6]\n"
                      "input b: [1,4,6,6]\n"
                      "input q: [1,6,8]\n"
                      "input k: [1,8,6]\n"
                      "weight w: [4,1,3,3]\n"
                      "weight g1: [4,2,3,3]\n"
                      "weight g2: [4,2,3,3]\n"
                      "weight m1: [8,8]\n"
                      "weight m2: [8,8]\n"
                      "d1 = conv2d(x, w) pad=same groups=4\n"
                      "d2 = conv2d(d1, w) pad=same groups=4\n"
                      "c1 = conv2d(a, g1) pad=same groups=2\n"
                      "c2 = conv2d(b, g2) pad=same groups=2\n"
                      "p1 = matmul(q, m1)\n"
                      "p2 = matmul(p1, m2)\n"
                      "p3 = matmul(q, m2)\n"
                      "s = matmul(q, k)\n"
                      "output d2, c1, c2, p2, p3, s\n");
  unsigned mask = 1u << MUTANT_PAD_SPLIT_H | 1u << MUTANT_GROUP_MERGE |
                  1u << MUTANT_MATMUL_BATCH;
  mutant_list l = {0};
  base_diag d;
  cr_assert_eq(mutant_generate(m, mask, &l, &d), BASE_OK, "%s", d.msg);
  int count[MUTANT_NCLASSES] = {0};
  for (int i = 0; i < l.n; i++) {
    count[l.m[i].cls]++;
    const char *s0 = m->tensors[m->nodes[l.m[i].site[0]].out[0]].name;
    const char *s1 = l.m[i].site[1] >= 0
                         ? m->tensors[m->nodes[l.m[i].site[1]].out[0]].name
                         : "";
    if (l.m[i].cls == MUTANT_GROUP_MERGE)
      cr_assert(!strcmp(s0, "c1") && !strcmp(s1, "c2"), "%s + %s", s0, s1);
    if (l.m[i].cls == MUTANT_MATMUL_BATCH) /* p1, p2 with p3; p2 reads p1 */
      cr_assert(s0[0] == 'p' && s0[1] != '3' && !strcmp(s1, "p3"), "%s + %s",
                s0, s1);
    if (l.m[i].cls == MUTANT_PAD_SPLIT_H)
      cr_assert(s0[0] == 'd', "%s", s0);
    mutant_boxes b;
    analyze(&l.m[i], 1, &b);
    ir_graph *h = corrected(&l.m[i], b.wrong, b.nwrong);
    double err = 1;
    cr_assert_eq(mutant_float_check(l.m[i].f, h, 1, &err, &d), BASE_OK, "%s",
                 d.msg);
    cr_assert_lt(err, 1e-5);
    mutant_boxes_free(&b);
    ir_graph_free(h);
  }
  cr_assert_eq(count[MUTANT_PAD_SPLIT_H], 2);
  cr_assert_eq(count[MUTANT_GROUP_MERGE], 1, "d1 and d2: a chain");
  cr_assert_eq(count[MUTANT_MATMUL_BATCH], 2);
  cr_assert_eq(l.n, 5);
  int32_t nodes[2] = {0, 1};
  mutant mu;
  cr_assert_eq(mutant_make(MUTANT_GROUP_MERGE, m, nodes, &mu, &d),
               BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "different inputs") || strstr(d.msg, "depends"), "%s",
            d.msg);
  nodes[0] = 4, nodes[1] = 5;
  cr_assert_eq(mutant_make(MUTANT_MATMUL_BATCH, m, nodes, &mu, &d),
               BASE_ERR_PARAM);
  cr_assert(strstr(d.msg, "depends"), "%s", d.msg);
  nodes[1] = 7;
  cr_assert_eq(mutant_make(MUTANT_MATMUL_BATCH, m, nodes, &mu, &d),
               BASE_ERR_PARAM);
  mutant_list_free(&l);
  ir_graph_free(m);
}

/* Cheap batched matmuls and grouped convs (a toy cost): the new classes
 * are taken by mutant_apply, the graph stays exact end to end with its
 * output names. */
static base_status merged_cheap(void *u, const ir_graph *g, int node,
                                double *cost, int *estimated, base_diag *d) {
  const ir_node *n = &g->nodes[node];
  (void)u, (void)d;
  int merged =
      (n->op == IR_OP_MATMUL && g->tensors[n->out[0]].shape.dim[0] == 2) ||
      (n->op == IR_OP_CONV2D && n->a.groups == 4);
  *cost =
      n->op == IR_OP_MATMUL || n->op == IR_OP_CONV2D ? (merged ? 5 : 100) : 1;
  if (estimated)
    *estimated = 0;
  return BASE_OK;
}

Test(mutant, apply_takes_group_merge_and_matmul_batch) {
  ir_graph *m = parse("input a: [1,4,6,6]\n"
                      "input b: [1,4,6,6]\n"
                      "input q: [1,6,8]\n"
                      "weight g1: [4,2,3,3]\n"
                      "weight g2: [4,2,3,3]\n"
                      "weight m1: [8,8]\n"
                      "weight n1: [8]\n"
                      "weight m2: [8,8]\n"
                      "weight n2: [8]\n"
                      "c1 = conv2d(a, g1) pad=same groups=2\n"
                      "r = relu(c1)\n"
                      "c2 = conv2d(b, g2) pad=same groups=2\n"
                      "p1 = matmul(q, m1, n1)\n"
                      "p2 = matmul(q, m2, n2)\n"
                      "s = ewadd(p1, p2)\n"
                      "output r, c2, s\n");
  unsigned mask = 1u << MUTANT_GROUP_MERGE | 1u << MUTANT_MATMUL_BATCH;
  mutant_apply_stats st;
  ir_graph *out = NULL;
  base_diag d;
  double err = 1;
  cr_assert_eq(mutant_apply(m, mask, 1, merged_cheap, NULL, &out, &st, &d),
               BASE_OK, "%s", d.msg);
  cr_assert_eq(st.napplied, 2, "applied %d of %d", st.napplied, st.considered);
  cr_assert_eq(st.cls_considered[MUTANT_GROUP_MERGE], 1);
  cr_assert_eq(st.cls_considered[MUTANT_MATMUL_BATCH], 1);
  cr_assert_eq(st.cls_considered[MUTANT_SPLIT_H], 0);
  cr_assert_eq(count_op(out, IR_OP_CONV2D), 1);
  cr_assert_eq(count_op(out, IR_OP_MATMUL), 1);
  cr_assert_eq(ex_check(m, out, 1, &err, &d), BASE_OK, "%s", d.msg);
  cr_assert_lt(err, 1e-5);
  for (int i = 0; i < m->noutputs; i++)
    cr_assert_str_eq(out->tensors[out->outputs[i]].name,
                     m->tensors[m->outputs[i]].name);
  ir_graph_free(out), mutant_apply_stats_free(&st);
  ir_graph_free(m);
}
