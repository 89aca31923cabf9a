/* test_api.c: the NULL and range contracts of the embedding API
 * (src/api/superopt.h, issue 40): no function crashes on a NULL argument;
 * fallible ones return API_ERR_USAGE with a message naming what was NULL or
 * out of range, the accessors -1 or NULL; options outside the CLI's ranges
 * are refused, never clamped.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/superopt.h"

static const char text[] = "graph g\n"
                           "input x: [2,3]\n"
                           "y = relu(x)\n"
                           "output y\n";

static api_graph *load(void) {
  api_graph *g = NULL;
  api_error err;
  cr_assert_eq(api_graph_parse(text, strlen(text), "g.graph", &g, &err), API_OK,
               "%s", err.message);
  return g;
}

Test(api, accessors_answer_for_a_null_graph) {
  int64_t dims[4];
  cr_expect_eq(api_graph_nnodes(NULL), -1);
  cr_expect_eq(api_graph_ninputs(NULL), -1);
  cr_expect_eq(api_graph_noutputs(NULL), -1);
  cr_expect_null(api_graph_input_name(NULL, 0));
  cr_expect_null(api_graph_output_name(NULL, 0));
  cr_expect_eq(api_graph_input_shape(NULL, 0, dims, 4), -1);
  cr_expect_eq(api_graph_output_shape(NULL, 0, dims, 4), -1);
  cr_expect_null(api_graph_print(NULL));
  api_optimize_options_default(NULL);
  api_run_options_default(NULL);
  api_graph_free(NULL);
  api_runner_free(NULL);
}

Test(api, shape_with_null_dims) {
  api_graph *g = load();
  cr_expect_eq(api_graph_input_shape(g, 0, NULL, 0), 2, "the rank alone");
  cr_expect_eq(api_graph_input_shape(g, 0, NULL, 4), -1);
  cr_expect_eq(api_graph_output_shape(g, 0, NULL, 2), -1);
  api_graph_free(g);
}

/* code is API_ERR_USAGE and the message contains want. */
static void expect_usage(api_code code, const api_error *err,
                         const char *want) {
  cr_expect_eq(code, API_ERR_USAGE, "code %d: %s", code, err->message);
  cr_expect(strstr(err->message, want), "'%s' lacks '%s'", err->message, want);
}

Test(api, fallible_functions_refuse_null) {
  api_graph *g = load(), *out = NULL;
  api_error err;
  void *data;
  size_t len;
  char buf[64];
  api_runner *r;
  expect_usage(api_graph_load(NULL, &out, &err), &err, "NULL");
  expect_usage(api_graph_load("x.graph", NULL, &err), &err, "NULL");
  expect_usage(api_graph_parse(NULL, 0, NULL, &out, &err), &err, "NULL");
  expect_usage(api_graph_load_onnx(NULL, 0, NULL, &out, &err), &err, "NULL");
  expect_usage(api_graph_save(NULL, "x.graph", &err), &err, "NULL");
  expect_usage(api_graph_save(g, NULL, &err), &err, "NULL");
  expect_usage(api_graph_export_onnx(NULL, &data, &len, &err), &err, "NULL");
  expect_usage(api_optimize(NULL, NULL, &out, NULL, &err), &err, "NULL");
  expect_usage(api_optimize(g, NULL, NULL, NULL, &err), &err, "NULL");
  expect_usage(api_runner_new(NULL, NULL, &r, &err), &err, "NULL");
  expect_usage(api_graph_run(NULL, NULL, NULL, NULL, &err), &err, "NULL");
  expect_usage(api_data_path(NULL, buf, sizeof buf, &err), &err, "NULL");
  cr_expect_eq(api_graph_load(NULL, &out, NULL), API_ERR_USAGE, "err NULL");
  cr_expect_null(out, "a failed call leaves its output untouched");
  api_graph_free(g);
}

/* A NULL buffer inside the arrays: the output one crashed, the input one
 * was "internal error" (3) from the executor. */
Test(api, runner_refuses_null_buffers) {
  api_graph *g = load();
  api_runner *r = NULL;
  api_error err;
  cr_assert_eq(api_runner_new(g, NULL, &r, &err), API_OK, "%s", err.message);
  float x[6] = {-1, 2, -3, 4, -5, 6}, y[6];
  const float *in[1] = {x}, *in_null[1] = {NULL};
  float *out[1] = {y}, *out_null[1] = {NULL};
  expect_usage(api_runner_run(NULL, in, out, &err), &err, "NULL runner");
  expect_usage(api_runner_run(r, NULL, out, &err), &err, "NULL inputs");
  expect_usage(api_runner_run(r, in, NULL, &err), &err, "NULL outputs");
  expect_usage(api_runner_run(r, in_null, out, &err), &err, "input 0 (x)");
  expect_usage(api_runner_run(r, in, out_null, &err), &err, "output 0 (y)");
  expect_usage(api_graph_run(g, NULL, in, out_null, &err), &err,
               "output 0 (y)");
  expect_usage(api_runner_run_device(r, (const void *const *)in,
                                     (void *const *)out_null, &err),
               &err, "output 0 (y)");
  cr_assert_eq(api_runner_run(r, in, out, &err), API_OK, "%s", err.message);
  cr_expect(y[0] == 0 && y[1] == 2, "the runner still works");
  api_runner_free(r);
  api_graph_free(g);
}

Test(api, run_options_out_of_range) {
  api_graph *g = load();
  api_runner *r = NULL;
  api_error err;
  api_run_options o;
  api_run_options_default(&o);
  o.threads = -1;
  expect_usage(api_runner_new(g, &o, &r, &err), &err, "threads");
  o.threads = 5000;
  expect_usage(api_runner_new(g, &o, &r, &err), &err, "threads");
  api_run_options_default(&o);
  o.fp32_strict = 7;
  expect_usage(api_runner_new(g, &o, &r, &err), &err, "fp32_strict");
  api_run_options_default(&o);
  o.streams = 9;
  expect_usage(api_runner_new(g, &o, &r, &err), &err, "streams");
  cr_expect_null(r);
  api_graph_free(g);
}

/* Case i of the out-of-range options: sets it in o, returns the field the
 * message must name (NULL past the last case). */
static const char *bad_option(api_optimize_options *o, int i) {
  switch (i) {
  case 0: o->alpha = NAN; return "alpha";
  case 1: o->alpha = 0.1; return "alpha";
  case 2: o->budget = -1; return "budget";
  case 3: o->budget = 1000000001; return "budget";
  case 4: o->patience = -5; return "patience";
  case 5: o->max_depth = -2; return "max_depth";
  case 6: o->max_depth = 2000000; return "max_depth";
  case 7: o->time_limit = NAN; return "time_limit";
  case 8: o->time_limit = 1e7; return "time_limit";
  case 9: o->batch = -1; return "batch";
  case 10: o->batch = 2000000; return "batch";
  case 11: o->check = 2; return "check";
  case 12: o->allow_unproven = -1; return "allow_unproven";
  case 13: o->mutants = 3; return "mutants";
  default: return NULL;
  }
}

/* Each refused before any file is opened (no rules or cost tables here). */
Test(api, optimize_options_out_of_range) {
  api_graph *g = load(), *out = NULL;
  api_error err;
  api_optimize_options o;
  const char *field;
  for (int i = 0; api_optimize_options_default(&o), (field = bad_option(&o, i));
       i++)
    expect_usage(api_optimize(g, &o, &out, NULL, &err), &err, field);
  cr_expect_null(out);
  api_graph_free(g);
}
