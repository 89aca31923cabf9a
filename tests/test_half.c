/* test_half.c: half precision (f16, bf16; docs/half.md): rounding to known
 * values (1/3, ties to even, overflow to infinity, f16 subnormals), every
 * encoding's round trip, the .graph syntax and type rules, the safetensors
 * sidecar's F16/BF16 entries, the conversion of a float32 graph by the
 * mixed-precision policy (and back to float32), the CPU executor's rounding
 * at each tensor, and the end-to-end check at a half type's tolerance. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/superopt.h"
#include "costdb/costdb.h"
#include "exec/exec.h"
#include "ir/ir.h"

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "%s", d.msg);
  return g;
}

/* g converted to type t (ir_graph_to_dtype), which must succeed. */
static ir_graph *converted(const ir_graph *g, ir_dtype t) {
  base_diag d;
  ir_graph *h = ir_graph_to_dtype(g, t, &d);
  cr_assert(h, "%s", d.msg);
  return h;
}

/* h printed: the text want. */
static void expect_printed(const ir_graph *h, const char *want) {
  char *txt = ir_print(h);
  cr_expect_str_eq(txt, want);
  free(txt);
}

/* ---- rounding ------------------------------------------------------------ */

Test(half, one_third) {
  cr_expect_eq(ir_f16_bits(1.0f / 3), 0x3555);
  cr_expect_eq(ir_f16_value(0x3555), 0.333251953125f);
  cr_expect_eq(ir_bf16_bits(1.0f / 3), 0x3eab); /* 0x3eaaaaab rounds up */
  cr_expect_eq(ir_bf16_value(0x3eab), 0.333984375f);
  cr_expect_eq(ir_dtype_round(1.0f / 3, IR_DT_F16), 0.333251953125f);
  cr_expect_eq(ir_dtype_round(1.0f / 3, IR_DT_BF16), 0.333984375f);
  cr_expect_eq(ir_dtype_round(1.0f / 3, IR_DT_F32), 1.0f / 3);
  cr_expect_eq(ir_f16_bits(-2.0f), 0xc000);
}

Test(half, ties_to_even) {
  cr_expect_eq(ir_f16_bits(1.0f + 0x1p-11f), 0x3c00);     /* to 1 */
  cr_expect_eq(ir_f16_bits(1.0f + 3 * 0x1p-11f), 0x3c02); /* to 1+2^-9 */
  cr_expect_eq(ir_f16_bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  cr_expect_eq(ir_bf16_bits(1.0f + 0x1p-8f), 0x3f80);
  cr_expect_eq(ir_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);
  cr_expect_eq(ir_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
}

Test(half, overflow_to_infinity) {
  cr_expect_eq(ir_f16_bits(65504.0f), 0x7bff);
  cr_expect_eq(ir_f16_bits(65519.0f), 0x7bff); /* below the half-way */
  cr_expect_eq(ir_f16_bits(65520.0f), 0x7c00); /* the tie goes to even: inf */
  cr_expect_eq(ir_f16_bits(-1e6f), 0xfc00);
  cr_expect(isinf(ir_dtype_round(70000.0f, IR_DT_F16)));
  cr_expect_eq(ir_dtype_round(70000.0f, IR_DT_BF16), 70144.0f);
  cr_expect_eq(ir_bf16_bits(FLT_MAX), 0x7f80);
  cr_expect_eq(ir_bf16_bits(INFINITY), 0x7f80);
  cr_expect_eq(ir_f16_bits(-INFINITY), 0xfc00);
  cr_expect(isnan(ir_dtype_round(NAN, IR_DT_F16)));
  cr_expect(isnan(ir_dtype_round(NAN, IR_DT_BF16)));
}

Test(half, f16_subnormals) {
  cr_expect_eq(ir_f16_bits(0x1p-14f), 0x0400); /* the smallest normal */
  cr_expect_eq(ir_f16_bits(0x1p-24f), 0x0001); /* the smallest subnormal */
  cr_expect_eq(ir_f16_value(0x0001), 0x1p-24f);
  cr_expect_eq(ir_f16_value(0x03ff), 1023 * 0x1p-24f);
  cr_expect_eq(ir_f16_bits(0x1p-25f), 0x0000);     /* tie: to even, 0 */
  cr_expect_eq(ir_f16_bits(3 * 0x1p-25f), 0x0002); /* tie: to even, 2 */
  cr_expect_eq(ir_f16_bits(-0x1p-24f), 0x8001);
  cr_expect_eq(ir_f16_bits(1e-10f), 0x0000);
  cr_expect_eq(ir_f16_bits(1023.5f * 0x1p-24f), 0x0400); /* up to normal */
}

Test(half, every_encoding_round_trips) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = ir_f16_value((uint16_t)h), b = ir_bf16_value((uint16_t)h);
    if (!isnan(f))
      cr_assert_eq(ir_f16_bits(f), h, "f16 %#x", h);
    else
      cr_assert(isnan(ir_f16_value(ir_f16_bits(f))));
    if (!isnan(b))
      cr_assert_eq(ir_bf16_bits(b), h, "bf16 %#x", h);
  }
}

Test(half, unit_roundoff) {
  cr_expect_eq(ir_dtype_unit_roundoff(IR_DT_F16), 0x1p-11);
  cr_expect_eq(ir_dtype_unit_roundoff(IR_DT_BF16), 0x1p-8);
  cr_expect_eq(ex_half_tolerance(IR_DT_BF16, 16), 4 * 0x1p-8 * 4);
  cr_expect_eq(ex_half_tolerance(IR_DT_F32, 16), 0);
}

/* ---- the .graph syntax and the types ------------------------------------- */

static const char *half_text = "input x: f16[2,4]\n"
                               "input y: bf16[2,3]\n"
                               "weight w: f16[4,3]\n"
                               "m: f16[2,3] = matmul(x, w) act=relu\n"
                               "c: bf16[2,3] = cast(m) to=bf16\n"
                               "s: bf16[2,3] = ewadd(c, y)\n"
                               "t: bf16[3,2] = transpose(s) perm=[1,0]\n"
                               "output t\n";

Test(half, graph_round_trip) {
  ir_graph *g = parse(half_text);
  cr_expect_eq(g->tensors[ir_find_tensor(g, "x")].dtype, IR_DT_F16);
  cr_expect_eq(g->tensors[ir_find_tensor(g, "m")].dtype, IR_DT_F16);
  cr_expect_eq(g->tensors[ir_find_tensor(g, "t")].dtype, IR_DT_BF16);
  cr_expect_eq(ir_graph_float_type(g), IR_DT_F16);
  char *txt = ir_print(g);
  cr_assert(txt);
  cr_expect_str_eq(txt, half_text);
  ir_graph *h = parse(txt);
  char *again = ir_print(h);
  cr_expect_str_eq(again, txt);
  free(txt);
  free(again);
  ir_graph_free(g);
  ir_graph_free(h);
}

Test(half, mixed_float_types_refused) {
  const char *t = "input x: f16[2]\ninput y: bf16[2]\n"
                  "s = ewadd(x, y)\noutput s\n";
  base_diag d;
  ir_graph *g = ir_parse(t, strlen(t), "mixed", &d);
  cr_assert_null(g);
  cr_expect(strstr(d.msg, "ewadd: input 2 (b) must be f16, got bf16"), "%s",
            d.msg);
  const char *u = "input x: i64[2]\ns = relu(x)\noutput s\n";
  cr_assert_null(ir_parse(u, strlen(u), "int", &d));
  cr_expect(strstr(d.msg, "must be f32, f16 or bf16, got i64"), "%s", d.msg);
}

/* ---- the safetensors sidecar --------------------------------------------- */

static const char *st_text = "weight a: f16[5]\nweight b: bf16[5]\n"
                             "input x: f16[5]\ns = ewadd(x, a)\n"
                             "c = cast(s) to=bf16\nt = ewmul(c, b)\n"
                             "output t\n";

Test(half, safetensors_round_trip) {
  ir_graph *g = parse(st_text);
  static const float va[5] = {1.0f / 3, -65504, 0x1p-24f, 0, 2.5f};
  static const float vb[5] = {1.0f / 3, 1e30f, -1e-30f, 0, 2.5f};
  float *pa = malloc(sizeof va), *pb = malloc(sizeof vb);
  for (int i = 0; i < 5; i++) {
    pa[i] = ir_dtype_round(va[i], IR_DT_F16);
    pb[i] = ir_dtype_round(vb[i], IR_DT_BF16);
  }
  g->tensors[ir_find_tensor(g, "a")].data = pa;
  g->tensors[ir_find_tensor(g, "b")].data = pb;
  char *bytes = NULL;
  size_t len = 0;
  base_diag d;
  cr_assert_eq(ir_weights_encode(g, &bytes, &len, &d), BASE_OK, "%s", d.msg);
  uint64_t hl = 0;
  memcpy(&hl, bytes, 8);
  char *header = strndup(bytes + 8, hl);
  cr_expect(strstr(header, "\"F16\""), "%s", header);
  cr_expect(strstr(header, "\"BF16\""), "%s", header);
  free(header);
  /* f16 1/3 is 0x3555, little-endian, right after the header */
  cr_expect_eq((unsigned char)bytes[8 + hl], 0x55);
  cr_expect_eq((unsigned char)bytes[8 + hl + 1], 0x35);
  cr_expect_eq(len, 8 + hl + 10 + 10, "2 bytes a value");
  ir_graph *h = parse(st_text);
  cr_assert_eq(
      ir_weights_read_mem(h, (const uint8_t *)bytes, len, "mem.st", &d),
      BASE_OK, "%s", d.msg);
  const float *ra = h->tensors[ir_find_tensor(h, "a")].data;
  const float *rb = h->tensors[ir_find_tensor(h, "b")].data;
  for (int i = 0; i < 5; i++) {
    cr_expect_eq(ra[i], pa[i], "a[%d]", i);
    cr_expect_eq(rb[i], pb[i], "b[%d]", i);
  }
  cr_expect_eq(ra[0], 0.333251953125f);
  cr_expect_eq(rb[2], ir_dtype_round(-1e-30f, IR_DT_BF16));
  /* an F32 sidecar does not load into the f16 weight */
  ir_graph *f = parse("weight a: [5]\nweight b: bf16[5]\n"
                      "input x: [5]\ns = ewadd(x, a)\n"
                      "c = cast(s) to=bf16\nt = ewmul(c, b)\noutput t\n");
  cr_expect_neq(
      ir_weights_read_mem(f, (const uint8_t *)bytes, len, "mem.st", &d),
      BASE_OK);
  cr_expect(strstr(d.msg, "has dtype F16; the graph says f32"), "%s", d.msg);
  free(bytes);
  ir_graph_free(g);
  ir_graph_free(h);
  ir_graph_free(f);
  free(pa);
  free(pb);
}

/* ---- the policy and the conversion --------------------------------------- */

static const char *f32_text = "input x: [2,8,16]\n"
                              "weight w: [16,16]\n"
                              "weight g: [16]\n"
                              "weight b: [16]\n"
                              "y = matmul(x, w)\n"
                              "n = layernorm(y, g, b)\n"
                              "z = matmul(n, w)\n"
                              "s = softmax(z)\n"
                              "r = relu(s)\n"
                              "output r\n";

Test(half, convert_by_policy) {
  cr_expect_eq(ir_op_half_policy(IR_OP_MATMUL), IR_HALF_RUN);
  cr_expect_eq(ir_op_half_policy(IR_OP_SOFTMAX), IR_HALF_RUN);
  cr_expect_eq(ir_op_half_policy(IR_OP_LAYERNORM), IR_HALF_RUN);
  cr_expect_eq(ir_op_half_policy(IR_OP_BATCHNORM), IR_HALF_RUN);
  cr_expect_eq(ir_op_half_policy(IR_OP_REDUCE_MEAN), IR_HALF_RUN);
  cr_expect_eq(ir_op_half_policy(IR_OP_EXP), IR_HALF_F32);
  cr_expect_eq(ir_op_half_policy(IR_OP_RESHAPE), IR_HALF_KEEP);
  ir_graph *g = parse(f32_text);
  base_diag d;
  ir_graph *h = converted(g, IR_DT_BF16);
  /* no casts around layernorm and softmax: they read and write bf16 */
  expect_printed(h, "input x: bf16[2,8,16]\n"
                    "weight w: bf16[16,16]\n"
                    "weight g: bf16[16]\n"
                    "weight b: bf16[16]\n"
                    "y: bf16[2,8,16] = matmul(x, w)\n"
                    "n: bf16[2,8,16] = layernorm(y, g, b) axis=2\n"
                    "z: bf16[2,8,16] = matmul(n, w)\n"
                    "s: bf16[2,8,16] = softmax(z) axis=2\n"
                    "r: bf16[2,8,16] = relu(s)\n"
                    "output r\n");
  /* and back: the casts between float types go */
  ir_graph *w = ir_graph_to_f32(h, &d);
  cr_assert(w, "%s", d.msg);
  char *txt = ir_print(w);
  char *orig = ir_print(g);
  cr_expect_str_eq(txt, orig);
  free(txt);
  free(orig);
  cr_expect_null(ir_graph_to_dtype(g, IR_DT_I64, &d));
  ir_graph_free(w);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* exp and log stay float32: their inputs are cast up, their results down,
 * a weight only they read stays float32 */
Test(half, exp_stays_f32) {
  ir_graph *g = parse("input x: [4]\nweight c: [4]\ne = exp(c)\n"
                      "y = ewmul(x, e)\noutput y\n");
  ir_graph *h = converted(g, IR_DT_F16);
  expect_printed(h, "input x: f16[4]\n"
                    "weight c: [4]\n"
                    "e: [4] = exp(c)\n"
                    "e.f16: f16[4] = cast(e) to=f16\n"
                    "y: f16[4] = ewmul(x, e.f16)\n"
                    "output y\n");
  ir_graph_free(h);
  ir_graph_free(g);
}

Test(half, weight_values_rounded) {
  ir_graph *g = parse("input x: [3]\nweight c: [3]\ns = ewadd(x, c)\n"
                      "output s\n");
  float v[3] = {1.0f / 3, 70000, 1e-30f};
  g->tensors[ir_find_tensor(g, "c")].data = v;
  ir_graph *h = converted(g, IR_DT_F16);
  const float *r = h->tensors[ir_find_tensor(h, "c")].data;
  cr_expect_eq(r[0], 0.333251953125f);
  cr_expect(isinf(r[1]));
  cr_expect_eq(r[2], 0.0f);
  cr_expect_eq(v[0], 1.0f / 3, "the original keeps its values");
  ir_graph_free(h);
  ir_graph_free(g);
}

/* ---- the executor and the check ------------------------------------------ */

/* Runs g at seed 1 and returns output 0's element i. */
static float run_at(const ir_graph *g, int64_t i) {
  base_diag d;
  ex_values *v = ex_values_new(g);
  cr_assert_eq(ex_fill_random(g, v, 1, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ex_run(g, v, NULL, &d), BASE_OK, "%s", d.msg);
  float r = v->v[g->outputs[0]][i];
  ex_values_free(v);
  return r;
}

Test(half, executor_rounds_each_tensor) {
  ir_graph *g = parse("input x: bf16[4]\nweight c: bf16[4]\n"
                      "s = ewadd(x, c)\nt = ewdiv(s, c)\noutput t\n");
  float c[4] = {16, 16, 16, 16};
  g->tensors[ir_find_tensor(g, "c")].data = c;
  for (int i = 0; i < 4; i++) {
    float y = run_at(g, i);
    cr_expect_eq(y, ir_dtype_round(y, IR_DT_BF16), "a bf16 value");
    /* x + 16 in [15, 17) in bf16 is a multiple of 2^-4; / 16 is exact */
    cr_expect_eq(fmodf(y * 256, 1.0f), 0.0f, "%g", (double)y);
  }
  ir_graph_free(g);
}

/* Softmax, layer norm, batch norm and reduce_mean in bf16 compute in
 * float32 inside and round their results once: each output is exactly the
 * float32 graph's on the same (bf16) values, rounded to bf16. */
Test(half, stats_in_f32_rounded_once) {
  ir_graph *g = parse("input x: [2,96,3,5]\nweight ga: [96]\n"
                      "weight be: [96]\nweight mu: [96]\nweight va: [96]\n"
                      "weight lg: [480]\nweight lb: [480]\n"
                      "r = reshape(x) shape=[6,480]\n"
                      "n = layernorm(r, lg, lb)\n"
                      "s = softmax(r) axis=1\n"
                      "m = reduce_mean(x) axes=[2,3] keepdims=0\n"
                      "b = batchnorm(x, ga, be, mu, va) eps=0.001\n"
                      "output n\noutput s\noutput m\noutput b\n");
  base_diag d;
  ir_graph *h = converted(g, IR_DT_BF16);
  for (int i = 0; i < h->nnodes; i++)
    cr_expect_neq(h->nodes[i].op, IR_OP_CAST, "no cast nodes");
  ex_values *vh = ex_values_new(h), *vg = ex_values_new(g);
  cr_assert_eq(ex_fill_random(h, vh, 1, &d), BASE_OK, "%s", d.msg);
  for (int t = 0; t < g->ntensors; t++) /* g on h's (rounded) values */
    if (g->tensors[t].kind != IR_T_VALUE) {
      size_t sz = (size_t)ir_shape_numel(&g->tensors[t].shape) * 4;
      vg->v[t] = malloc(sz);
      memcpy(vg->v[t], vh->v[ir_find_tensor(h, g->tensors[t].name)], sz);
    }
  cr_assert_eq(ex_run(h, vh, NULL, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ex_run(g, vg, NULL, &d), BASE_OK, "%s", d.msg);
  for (int o = 0; o < g->noutputs; o++) {
    const float *a = vh->v[h->outputs[o]], *b = vg->v[g->outputs[o]];
    int64_t n = ir_shape_numel(&g->tensors[g->outputs[o]].shape), bad = 0;
    for (int64_t i = 0; i < n; i++)
      bad += a[i] != ir_dtype_round(b[i], IR_DT_BF16);
    cr_expect_eq(bad, 0,
                 "output %d: %lld elements not the float32 value "
                 "rounded once",
                 o, (long long)bad);
  }
  ex_values_free(vh);
  ex_values_free(vg);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* The f32_text graph in bf16 on the CPU stays within bf16's tolerance at
 * its depth of the float32 graph (the same drawn values, rounded). */
Test(half, bf16_close_to_f32) {
  ir_graph *g = parse(f32_text);
  ir_graph *h = converted(g, IR_DT_BF16);
  double tol = ex_half_tolerance(IR_DT_BF16, ex_graph_depth(g)), mx = 0;
  float a[256], b[256];
  for (int i = 0; i < 256; i++) {
    a[i] = run_at(h, i);
    b[i] = run_at(g, i);
    mx = fmax(mx, fabs(b[i]));
  }
  for (int i = 0; i < 256; i++)
    cr_expect_leq(fabs(a[i] - b[i]), tol * (mx + fabs(b[i])), "%d: %g %g", i,
                  (double)a[i], (double)b[i]);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* (x + c) - c against x + (c - c), c = 16: float32 loses 2^-20 of x, bf16
 * 2^-4, more than its tolerance at depth 2 (4 * 2^-8 * sqrt 2). */
static double reassoc_worst(const char *type) {
  char a[256], b[256];
  snprintf(a, sizeof a,
           "input x: %s[64]\nweight c: %s[64]\ns = ewadd(x, c)\n"
           "t = ewsub(s, c)\noutput t\n",
           type, type);
  snprintf(b, sizeof b,
           "input x: %s[64]\nweight c: %s[64]\nz = ewsub(c, c)\n"
           "t = ewadd(x, z)\noutput t\n",
           type, type);
  ir_graph *ga = parse(a), *gb = parse(b);
  float c[64];
  for (int i = 0; i < 64; i++)
    c[i] = 16;
  ga->tensors[ir_find_tensor(ga, "c")].data = c;
  gb->tensors[ir_find_tensor(gb, "c")].data = c;
  ex_check_result r;
  base_diag d;
  cr_assert_eq(ex_check_rounds(ga, gb, NULL, &r, &d), BASE_OK, "%s", d.msg);
  if (!strcmp(type, "bf16"))
    cr_expect_eq(r.rtol, ex_half_tolerance(IR_DT_BF16, 2));
  ir_graph_free(ga);
  ir_graph_free(gb);
  return r.worst;
}

Test(half, check_refuses_at_half_tolerance) {
  cr_expect_leq(reassoc_worst("f32"), 1.0, "float32 passes");
  cr_expect_gt(reassoc_worst("bf16"), 1.0, "bf16 fails");
}

/* The check's second test (ex_check_half_second) on the three float32
 * forms of x: (x + c) - c, x + (c - c) and the wrong x + c, c = 16: the
 * model f, the result before its dtype stage (wide) and, converted to
 * bf16, the model's half copy and the result. */
static const char *forms[] = {
    "input x: [64]\nweight c: [64]\ns = ewadd(x, c)\nt = ewsub(s, c)\n"
    "output t\n",
    "input x: [64]\nweight c: [64]\nz = ewsub(c, c)\nt = ewadd(x, z)\n"
    "output t\n",
    "input x: [64]\nweight c: [64]\nt = ewadd(x, c)\noutput t\n",
    "input x: [64]\nweight c: [64]\ns = ewadd(x, c)\nt = ewsub(s, c)\n"
    "output t\n"};
static float sixteen[64], sixty_four[64];

/* Form 3 is form 0 with c = 64: in bf16 x + 64 rounds to steps of 1/2,
 * four times x + 16's. */
static ir_graph *form(int k) {
  ir_graph *g = parse(forms[k]);
  for (int i = 0; i < 64; i++)
    sixteen[i] = 16, sixty_four[i] = 64;
  g->tensors[ir_find_tensor(g, "c")].data = k == 3 ? sixty_four : sixteen;
  return g;
}

static ex_half_second second_test(int model, int result) {
  ir_graph *f = form(model), *wide = form(result);
  ir_graph *ref = converted(f, IR_DT_BF16), *res = converted(wide, IR_DT_BF16);
  ex_half_second h;
  base_diag d;
  cr_assert_eq(ex_check_half_second(f, wide, ref, res, NULL, &h, &d), BASE_OK,
               "%s", d.msg);
  ir_graph *all[] = {f, wide, ref, res};
  for (int i = 0; i < 4; i++) {
    ir_graph_free(all[i]);
  }
  return h;
}

/* A result more accurate in bf16 than the model's own copy, which the
 * check refuses (check_refuses_at_half_tolerance), passes the second
 * test; the other way round it does not; a wrong result fails its float32
 * part. */
Test(half, second_test_takes_what_rounds_no_worse) {
  ex_half_second h = second_test(0, 1);
  cr_expect(h.pass);
  cr_expect_leq(h.wide.worst, 1.0);
  cr_expect_lt(h.res.round_l2[0], h.ref.round_l2[0] / 4);
  cr_expect_eq(h.round, -1);
  h = second_test(1, 0);
  cr_expect_not(h.pass, "the result rounds worse than the model's copy");
  cr_expect_leq(h.wide.worst, 1.0);
  cr_expect_eq(h.round, 0);
  cr_expect_gt(h.res.round_l2[0], 2 * h.ref.round_l2[0]);
  h = second_test(0, 2);
  cr_expect_not(h.pass, "a wrong result");
  cr_expect_gt(h.wide.worst, 1.0);
  cr_expect_eq(h.more_round, -1, "no round judged again: its copy is exact");
}

/* A round over its bound where the model's own copy is over the tolerance
 * too is judged again over more seeds (exec.h): (x + 64) - 64 rounds about
 * four times worse than the model (x + 16) - 16 on every seed, and fails
 * there too; the message names the round and the seeds. */
Test(half, second_test_more_seeds_when_the_copy_is_noise) {
  ex_half_second h = second_test(0, 3);
  cr_expect_gt(h.ref.round_l2[0], h.tol, "the copy itself over the tolerance");
  cr_expect_eq(h.more_round, 0);
  cr_expect_eq(h.more_seeds, 1 + EX_HALF_MORE_SEEDS);
  cr_expect_leq(h.more_wide, 1.0, "the float32 forms agree on the seeds");
  cr_expect_gt(h.more_res, 3 * h.more_ref);
  cr_expect_not(h.more_pass);
  cr_expect_not(h.pass);
  cr_expect_eq(h.round, 0);
  char e[200];
  ex_half_second_rounds(&h, e, sizeof e);
  cr_expect(strstr(e, "; round 1 over 5 seeds: ") != NULL, "%s", e);
}

Test(half, graph_depth) {
  ir_graph *g = parse(f32_text);
  cr_expect_eq(ex_graph_depth(g), 5);
  ir_graph_free(g);
}

/* ---- the embedding API ----------------------------------------------------
 */

/* A half tensor takes and gives float32 buffers (API_F32, not API_I32 whose
 * number IR_DT_F16 shares), its input values rounded to its type. */
Test(half, api_float32_buffers) {
  const char *t = "input x: f16[4]\ny = relu(x)\noutput y\n";
  api_graph *g = NULL;
  api_error err;
  cr_assert_eq(api_graph_parse(t, strlen(t), "h", &g, &err), API_OK);
  cr_expect_eq(api_graph_input_dtype(g, 0), API_F32);
  cr_expect_eq(api_graph_output_dtype(g, 0), API_F32);
  api_runner *r = NULL;
  cr_assert_eq(api_runner_new(g, NULL, &r, &err), API_OK, "%s", err.message);
  float x[4] = {1.0f / 3, 70000, -1, 0x1p-26f}, y[4];
  const float *in[1] = {x};
  float *out[1] = {y};
  cr_assert_eq(api_runner_run(r, in, out, &err), API_OK, "%s", err.message);
  cr_expect_eq(y[0], 0.333251953125f);
  cr_expect(isinf(y[1]));
  cr_expect_eq(y[2], 0.0f);
  cr_expect_eq(y[3], 0.0f);
  cr_expect_eq(x[0], 1.0f / 3, "the caller's buffer is not written");
  api_runner_free(r);
  api_graph_free(g);
}

Test(half, convert_between_half_types) {
  ir_graph *g = parse("input x: bf16[3]\nweight c: bf16[3]\n"
                      "s = ewadd(x, c)\noutput s\n");
  float v[3] = {0.333984375f, 1, 2};
  g->tensors[ir_find_tensor(g, "c")].data = v;
  ir_graph *h = converted(g, IR_DT_F16);
  expect_printed(h, "input x: f16[3]\nweight c: f16[3]\n"
                    "s: f16[3] = ewadd(x, c)\noutput s\n");
  cr_expect_eq(h->tensors[ir_find_tensor(h, "c")].data[0],
               ir_dtype_round(0.333984375f, IR_DT_F16));
  ir_graph_free(h);
  ir_graph_free(g);
}

/* ---- costs ----------------------------------------------------------------
 */

Test(half, cost_signature_and_bytes) {
  ir_graph *h = parse("input x: bf16[2,64]\ny = relu(x)\noutput y\n");
  ir_graph *f = parse("input x: [2,64]\ny = relu(x)\noutput y\n");
  char sig[256];
  cd_node_sig(h, 0, sig, sizeof sig);
  cr_expect_str_eq(sig, "relu x=bf16[2,64]");
  cd_node_sig(f, 0, sig, sizeof sig);
  cr_expect_str_eq(sig, "relu x=[2,64]", "float32 keeps its keys");
  base_diag d;
  ir_graph *back = cd_sig_graph("relu x=bf16[2,64]", &d);
  cr_assert(back, "%s", d.msg);
  cr_expect_eq(back->tensors[back->outputs[0]].dtype, IR_DT_BF16);
  cr_expect_eq(cd_node_work(h, 0).bytes, 2 * 2 * 128.0);
  cr_expect_eq(cd_node_work(f, 0).bytes, 2 * cd_node_work(h, 0).bytes);
  ir_graph_free(back);
  ir_graph_free(h);
  ir_graph_free(f);
}
