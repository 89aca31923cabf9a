/* test_api.c: the NULL and range contracts of the embedding API
 * (src/api/superopt.h, issue 40): no function crashes on a NULL argument;
 * fallible ones return API_ERR_USAGE with a message naming what was NULL or
 * out of range, the accessors -1 or NULL; options outside the CLI's ranges
 * are refused, never clamped. And what issue 44 added: typed buffers
 * (int64, int32, bool) with their checks, weight values set on a graph and
 * on a runner, `superopt import`'s options, `export --like`, gen-rules and
 * export-rules as calls. And optimize's default (no pass, the rules of
 * default.rules and extended.rules) and its passes option.
 */
#define _GNU_SOURCE /* mkstemps */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/superopt.h"

#ifndef SUPEROPT_SOURCE_DIR
#define SUPEROPT_SOURCE_DIR "."
#endif
#define BERT SUPEROPT_SOURCE_DIR "/models/onnx/exports/bert.legacy.onnx"

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
  case 14: o->region_size = 0; return "region_size";
  case 15: o->fuse_candidates = 1001; return "fuse_candidates";
  case 16: o->merge = 2; return "merge";
  case 17: o->no_rules = 1, o->rules = "x.rules"; return "no_rules";
  case 18: o->passes = API_PASSES_RULES + 1; return "passes";
  case 19: o->passes = -1; return "passes";
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

/* The rules of a rules file of the source tree ("rule " lines). */
static int rules_in(const char *rel) {
  char path[4096], line[4096];
  snprintf(path, sizeof path, "%s/%s", SUPEROPT_SOURCE_DIR, rel);
  FILE *f = fopen(path, "r");
  cr_assert(f, "cannot open %s", path);
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += !strncmp(line, "rule ", 5);
  fclose(f);
  return n;
}

/* The default, as `superopt optimize`'s: no pass, the rules of the data
 * folder's default.rules and extended.rules (rules_read counts both);
 * API_PASSES_RULES, the ablation, reads the pass rules in front. */
Test(api, optimize_default_reads_both_rules_files) {
  api_graph *g = load(), *h = NULL;
  api_error err;
  api_report r;
  api_optimize_options o;
  char dir[] = "/tmp/superopt_api_XXXXXX", db[64];
  cr_assert(mkdtemp(dir));
  snprintf(db, sizeof db, "%s/costdb.sqlite", dir);
  unsetenv("SUPEROPT_RULES");
  api_optimize_options_default(&o);
  cr_expect_eq(o.passes, API_PASSES_NONE);
  o.device = "cpu", o.db = db, o.budget = 5;
  int both = rules_in("rules/default.rules") + rules_in("rules/extended.rules");
  cr_assert_eq(api_optimize(g, &o, &h, &r, &err), API_OK, "%s", err.message);
  cr_expect_eq(r.rules_read, both);
  api_graph_free(h);
  o.passes = API_PASSES_RULES;
  cr_assert_eq(api_optimize(g, &o, &h, &r, &err), API_OK, "%s", err.message);
  cr_expect_eq(r.rules_read, both + rules_in("rules/passes.rules"));
  api_graph_free(h);
  api_graph_free(g);
  remove(db);
  rmdir(dir);
}

/* ---- typed buffers and weights (issue 44) ----------------------------- */

static const char typed_text[] = "graph t\n"
                                 "input ids: i64[2,3]\n"
                                 "input m: bool[2,3]\n"
                                 "weight e: [7,4]\n"
                                 "g: [2,3,4] = gather(e, ids)\n"
                                 "r: i64[3,2] = reshape(ids) shape=[3,2]\n"
                                 "n: bool[2,3] = not(m)\n"
                                 "output g, r, n\n";

static api_graph *load_typed(void) {
  api_graph *g = NULL;
  api_error err;
  cr_assert_eq(
      api_graph_parse(typed_text, strlen(typed_text), "t.graph", &g, &err),
      API_OK, "%s", err.message);
  return g;
}

static float table[7][4];
static const int64_t table_dims[2] = {7, 4};

static api_tensor buf(int dtype, void *data, size_t nbytes) {
  return (api_tensor){dtype, data, nbytes};
}

static void fill_table(void) {
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 4; j++)
      table[i][j] = (float)(10 * i + j);
}

Test(api, dtypes_of_the_interface) {
  api_graph *g = load_typed();
  cr_expect_eq(api_graph_input_dtype(g, 0), API_I64);
  cr_expect_eq(api_graph_input_dtype(g, 1), API_BOOL);
  cr_expect_eq(api_graph_input_dtype(g, 2), -1);
  cr_expect_eq(api_graph_output_dtype(g, 0), API_F32);
  cr_expect_eq(api_graph_output_dtype(g, 1), API_I64);
  cr_expect_eq(api_graph_output_dtype(g, 2), API_BOOL);
  cr_expect_eq(api_graph_output_dtype(NULL, 0), -1);
  cr_expect_str_eq(api_dtype_name(API_I32), "int32");
  cr_expect_null(api_dtype_name(9));
  cr_expect_eq(api_dtype_size(API_I64), 8);
  cr_expect_eq(api_graph_nweights(g), 1);
  cr_expect_str_eq(api_graph_weight_name(g, 0), "e");
  int64_t dims[4];
  cr_expect_eq(api_graph_weight_shape(g, 0, dims, 4), 2);
  cr_expect(dims[0] == 7 && dims[1] == 4);
  cr_expect_eq(api_graph_weight_dtype(g, 0), API_F32);
  cr_expect_eq(api_graph_weight_has_values(g, 0), 0);
  cr_expect_null(api_graph_weight_name(g, 1));
  api_graph_free(g);
}

/* int64 token ids in, int64 and bool out; int32 ids give the same. */
Test(api, typed_run_int64_int32_bool) {
  api_graph *g = load_typed();
  api_runner *r = NULL;
  api_error err;
  fill_table();
  api_tensor e = buf(API_F32, table, sizeof table);
  cr_assert_eq(api_runner_new(g, NULL, &r, &err), API_OK, "%s", err.message);
  cr_assert_eq(api_runner_set_weight(r, "e", &e, table_dims, 2, &err), API_OK,
               "%s", err.message);
  int64_t ids[6] = {6, 0, 3, 2, 5, 1}, rr[6];
  int32_t ids32[6] = {6, 0, 3, 2, 5, 1}, rr32[6];
  uint8_t m[6] = {1, 0, 1, 0, 0, 7}, n[6];
  float gg[24], gg32[24];
  api_tensor in[2] = {buf(API_I64, ids, sizeof ids), buf(API_BOOL, m, 6)};
  api_tensor out[3] = {buf(API_F32, gg, sizeof gg), buf(API_I64, rr, sizeof rr),
                       buf(API_BOOL, n, 6)};
  cr_assert_eq(api_runner_run_typed(r, in, out, &err), API_OK, "%s",
               err.message);
  for (int k = 0; k < 6; k++) {
    cr_expect_eq(gg[4 * k + 1], table[ids[k]][1], "row %d", k);
    cr_expect_eq(rr[k], ids[k]);
    cr_expect_eq(n[k], !m[k]);
  }
  in[0] = buf(API_I32, ids32, sizeof ids32);
  out[0] = buf(API_F32, gg32, sizeof gg32);
  out[1] = buf(API_I32, rr32, sizeof rr32);
  cr_assert_eq(api_runner_run_typed(r, in, out, &err), API_OK, "%s",
               err.message);
  cr_expect_arr_eq(gg, gg32, sizeof gg);
  for (int k = 0; k < 6; k++)
    cr_expect_eq(rr32[k], ids32[k]);
  api_runner_free(r);
  api_graph_free(g);
}

Test(api, typed_run_refuses_wrong_types_and_sizes) {
  api_graph *g = load_typed();
  api_runner *r = NULL;
  api_error err;
  cr_assert_eq(api_runner_new(g, NULL, &r, &err), API_OK, "%s", err.message);
  float fids[6] = {0};
  int64_t ids[6] = {0}, rr[6];
  uint8_t m[6] = {0}, n[6];
  float gg[24];
  api_tensor in[2] = {buf(API_F32, fids, sizeof fids), buf(API_BOOL, m, 6)};
  api_tensor out[3] = {buf(API_F32, gg, sizeof gg), buf(API_I64, rr, sizeof rr),
                       buf(API_BOOL, n, 6)};
  expect_usage(api_runner_run_typed(r, in, out, &err), &err,
               "input 0 (ids) is int64, not float32");
  in[0] = buf(API_I64, ids, sizeof ids - 8);
  expect_usage(api_runner_run_typed(r, in, out, &err), &err,
               "input 0 (ids): 40 bytes, expected 6 int64 elements (48");
  in[0] = buf(API_I64, ids, sizeof ids);
  out[1] = buf(API_F32, gg, 24);
  expect_usage(api_runner_run_typed(r, in, out, &err), &err,
               "output 1 (r) is int64, not float32");
  out[1] = buf(API_I64, NULL, sizeof rr);
  expect_usage(api_runner_run_typed(r, in, out, &err), &err,
               "output 1 (r) is NULL");
  out[1] = buf(API_I64, rr, sizeof rr);
  ids[4] = (int64_t)1 << 25; /* beyond the float32 slots */
  cr_expect_eq(api_runner_run_typed(r, in, out, &err), API_ERR_INPUT);
  cr_expect(strstr(err.message, "input 0 (ids): element 4 is 33554432"), "%s",
            err.message);
  ids[4] = 1;
  cr_expect_eq(api_runner_run_typed(r, in, out, &err), API_OK, "%s",
               err.message);
  expect_usage(api_runner_run_typed(NULL, in, out, &err), &err, "NULL");
  expect_usage(api_runner_run_typed(r, NULL, out, &err), &err, "NULL inputs");
  api_runner_free(r);
  api_graph_free(g);
}

Test(api, set_weight_checks_name_shape_and_type) {
  api_graph *g = load_typed();
  api_runner *r = NULL;
  api_error err;
  fill_table();
  cr_assert_eq(api_runner_new(g, NULL, &r, &err), API_OK, "%s", err.message);
  api_tensor e = buf(API_F32, table, sizeof table);
  int64_t bad_dims[2] = {4, 7};
  cr_expect_eq(api_runner_set_weight(r, "nosuch", &e, table_dims, 2, &err),
               API_ERR_INPUT);
  cr_expect(strstr(err.message, "no weight 'nosuch'"), "%s", err.message);
  cr_expect_eq(api_runner_set_weight(r, "ids", &e, table_dims, 2, &err),
               API_ERR_INPUT);
  cr_expect(strstr(err.message, "not a weight"), "%s", err.message);
  cr_expect_eq(api_runner_set_weight(r, "e", &e, bad_dims, 2, &err),
               API_ERR_INPUT);
  cr_expect(strstr(err.message, "weight 'e' has shape [7,4], not [4,7]"), "%s",
            err.message);
  cr_expect_eq(api_runner_set_weight(r, "e", &e, table_dims, 1, &err),
               API_ERR_INPUT);
  api_tensor e64 = buf(API_I64, table, sizeof table);
  expect_usage(api_runner_set_weight(r, "e", &e64, table_dims, 2, &err), &err,
               "weight 'e' is float32, not int64");
  expect_usage(api_runner_set_weight(r, NULL, &e, table_dims, 2, &err), &err,
               "NULL");
  expect_usage(api_graph_set_weight(g, "e", NULL, table_dims, 2, &err), &err,
               "NULL");
  api_runner_free(r);
  api_graph_free(g);
}

/* Values set on the graph: a runner made after uses them; set on a runner:
 * the runs after use them, the graph keeps its own. */
Test(api, set_weight_on_graph_and_runner) {
  api_graph *g = load_typed();
  api_runner *r = NULL, *r2 = NULL;
  api_error err;
  fill_table();
  api_tensor e = buf(API_F32, table, sizeof table);
  cr_assert_eq(api_graph_set_weight(g, "e", &e, table_dims, 2, &err), API_OK,
               "%s", err.message);
  cr_expect_eq(api_graph_weight_has_values(g, 0), 1);
  cr_assert_eq(api_runner_new(g, NULL, &r, &err), API_OK, "%s", err.message);
  int64_t ids[6] = {1, 2, 3, 4, 5, 6}, rr[6];
  uint8_t m[6] = {0}, n[6];
  float gg[24];
  api_tensor in[2] = {buf(API_I64, ids, sizeof ids), buf(API_BOOL, m, 6)};
  api_tensor out[3] = {buf(API_F32, gg, sizeof gg), buf(API_I64, rr, sizeof rr),
                       buf(API_BOOL, n, 6)};
  cr_assert_eq(api_runner_run_typed(r, in, out, &err), API_OK, "%s",
               err.message);
  cr_expect_eq(gg[4 * 5 + 3], table[6][3], "the graph's values");
  float twice[7][4];
  for (int i = 0; i < 28; i++)
    twice[i / 4][i % 4] = 2 * table[i / 4][i % 4];
  api_tensor e2 = buf(API_F32, twice, sizeof twice);
  cr_assert_eq(api_runner_set_weight(r, "e", &e2, table_dims, 2, &err), API_OK,
               "%s", err.message);
  cr_assert_eq(api_runner_run_typed(r, in, out, &err), API_OK, "%s",
               err.message);
  cr_expect_eq(gg[4 * 5 + 3], 2 * table[6][3], "the runner's new values");
  cr_assert_eq(api_runner_new(g, NULL, &r2, &err), API_OK, "%s", err.message);
  cr_assert_eq(api_runner_run_typed(r2, in, out, &err), API_OK, "%s",
               err.message);
  cr_expect_eq(gg[4 * 5 + 3], table[6][3], "the graph's own, unchanged");
  api_runner_free(r);
  api_runner_free(r2);
  api_graph_free(g);
}

/* ---- import options, export --like (issue 44) ------------------------- */

Test(api, import_options_as_the_cli) {
  api_graph *g = NULL;
  api_error err;
  cr_expect_eq(api_graph_load(BERT, &g, &err), API_ERR_INPUT,
               "dynamic axes without shapes");
  cr_expect(strstr(err.message, "--input-shape"), "%s", err.message);
  const char *bad[] = {"input_ids=2xq"};
  api_import_options o = {.input_shapes = bad, .ninput_shapes = 1};
  expect_usage(api_graph_load_ex(BERT, &o, &g, &err), &err,
               "bad --input-shape 'input_ids=2xq' (expected "
               "NAME=1x3x224x224)");
  const char *shapes[] = {"input_ids=2x16", "attention_mask=2x16"};
  const char *nosuch[] = {"nosuch"};
  o = (api_import_options){.input_shapes = shapes,
                           .ninput_shapes = 2,
                           .data_inputs = nosuch,
                           .ndata_inputs = 1};
  cr_expect_eq(api_graph_load_ex(BERT, &o, &g, &err), API_ERR_INPUT);
  cr_expect(strstr(err.message, "--data-input 'nosuch'"), "%s", err.message);
  o = (api_import_options){.input_shapes = shapes, .ninput_shapes = 2};
  expect_usage(api_graph_load_ex("x.graph", &o, &g, &err), &err,
               "import options are for ONNX");
  o.ninput_shapes = -1;
  expect_usage(api_graph_load_ex(BERT, &o, &g, &err), &err, "negative");
  cr_expect_null(g);
  o.ninput_shapes = 2;
  cr_assert_eq(api_graph_load_ex(BERT, &o, &g, &err), API_OK, "%s",
               err.message);
  int64_t dims[4];
  cr_expect_eq(api_graph_input_shape(g, 0, dims, 4), 2);
  cr_expect(dims[0] == 2 && dims[1] == 16);
  cr_expect_eq(api_graph_input_dtype(g, 0), API_I64, "token ids");
  api_graph_free(g);
}

/* --dim (issue 41): the model's named dynamic dimensions bound, the same
 * graph as with every input's shape given; the CLI's messages. */
Test(api, import_option_dims_as_the_cli) {
  api_graph *g = NULL, *h = NULL;
  api_error err;
  const char *bad[] = {"seq"}, *dims[] = {"batch=2", "seq=16"};
  api_import_options o = {.dims = bad, .ndims = 1};
  expect_usage(api_graph_load_ex(BERT, &o, &g, &err), &err,
               "bad --dim 'seq' (expected NAME=SIZE, e.g. seq=128)");
  o = (api_import_options){.dims = dims, .ndims = -1};
  expect_usage(api_graph_load_ex(BERT, &o, &g, &err), &err,
               "NULL dims with a count");
  o.ndims = 2;
  expect_usage(api_graph_load_ex("x.graph", &o, &g, &err), &err,
               "import options are for ONNX");
  cr_expect_null(g);
  cr_assert_eq(api_graph_load_ex(BERT, &o, &g, &err), API_OK, "%s",
               err.message);
  const char *shapes[] = {"input_ids=2x16", "attention_mask=2x16"};
  o = (api_import_options){.input_shapes = shapes, .ninput_shapes = 2};
  cr_assert_eq(api_graph_load_ex(BERT, &o, &h, &err), API_OK, "%s",
               err.message);
  char *a = api_graph_print(g), *b = api_graph_print(h);
  cr_assert(a && b);
  cr_expect_str_eq(a, b);
  free(a);
  free(b);
  api_graph_free(g);
  api_graph_free(h);
}

/* export --like: the original's names and opset; a missing original is an
 * error that writes nothing. */
Test(api, export_like_the_original) {
  api_graph *g = NULL;
  api_error err;
  const char *shapes[] = {"input_ids=1x8", "attention_mask=1x8"};
  api_import_options o = {.input_shapes = shapes, .ninput_shapes = 2};
  cr_assert_eq(api_graph_load_ex(BERT, &o, &g, &err), API_OK, "%s",
               err.message);
  void *plain = NULL, *like = NULL;
  size_t nplain = 0, nlike = 0;
  api_export_report rp, rl;
  cr_assert_eq(api_graph_export_onnx_ex(g, NULL, &plain, &nplain, &rp, &err),
               API_OK, "%s", err.message);
  api_export_options eo = {BERT};
  cr_assert_eq(api_graph_export_onnx_ex(g, &eo, &like, &nlike, &rl, &err),
               API_OK, "%s", err.message);
  cr_expect_eq(rp.like_opset, 0);
  cr_expect_eq(rp.renamed, 0);
  cr_expect_eq(rp.opset, 17);
  cr_expect_eq(rl.like_opset, 17);
  cr_expect_gt(rl.renamed, 0, "names given back");
  cr_expect_gt(rl.folded, 0);
  cr_expect_neq(nplain, 0);
  api_graph *back = NULL;
  cr_assert_eq(api_graph_load_onnx(like, nlike, "like.onnx", &back, &err),
               API_OK, "%s", err.message);
  cr_expect_str_eq(api_graph_input_name(back, 0), "input_ids");
  cr_expect_str_eq(api_graph_output_name(back, 0), "y");
  free(plain);
  free(like);
  api_graph_free(back);
  char path[] = "/tmp/superopt-test-api-XXXXXX.onnx";
  int fd = mkstemps(path, 5);
  cr_assert_geq(fd, 0);
  close(fd);
  unlink(path);
  eo.like = "/nonexistent/orig.onnx";
  cr_expect_eq(api_graph_save_onnx(g, path, &eo, NULL, &err), API_ERR_INPUT);
  cr_expect(strstr(err.message, "/nonexistent/orig.onnx"), "%s", err.message);
  cr_expect_neq(access(path, F_OK), 0, "nothing written");
  eo.like = BERT;
  cr_expect_eq(api_graph_save_onnx(g, path, &eo, &rl, &err), API_OK, "%s",
               err.message);
  cr_expect_eq(access(path, F_OK), 0);
  unlink(path);
  api_graph_free(g);
}

/* ---- gen-rules and export-rules (issue 44) ---------------------------- */

Test(api, gen_rules_and_export_rules) {
  char path[] = "/tmp/superopt-test-api-XXXXXX.rules";
  int fd = mkstemps(path, 6);
  cr_assert_geq(fd, 0);
  close(fd);
  api_gen_options o;
  api_gen_report rep;
  api_error err;
  api_gen_options_default(&o);
  cr_expect_eq(o.max_ops, 3);
  o.max_ops = 2;
  o.ops = "relu,ewadd";
  o.threads = 1;
  cr_assert_eq(api_gen_rules(&o, path, &rep, &err), API_OK, "%s", err.message);
  cr_expect_gt(rep.written, 0);
  cr_expect_eq(rep.written, rep.proven);
  void *data = NULL;
  size_t len = 0;
  api_rules_export_report xr;
  cr_assert_eq(api_export_rules_mem(path, "json", 0, &data, &len, &xr, &err),
               API_OK, "%s", err.message);
  cr_expect_eq(xr.exported, rep.written);
  cr_expect(len > 0 && (((char *)data)[0] == '{' || ((char *)data)[0] == '['),
            "JSON");
  free(data);
  expect_usage(
      api_export_rules_mem(path, "taso-text", 0, &data, &len, &xr, &err), &err,
      "format must be taso-pb, tensat, tensat-multi or json");
  o.ops = "nosuch";
  expect_usage(api_gen_rules(&o, path, NULL, &err), &err,
               "'nosuch' is not a generation operator");
  o.ops = NULL;
  o.max_ops = 9;
  expect_usage(api_gen_rules(&o, path, NULL, &err), &err,
               "max_ops must be 1..5, not 9");
  api_gen_options_default(&o);
  o.pairs = "some";
  expect_usage(api_gen_rules(&o, path, NULL, &err), &err, "pairs must be");
  expect_usage(api_gen_rules(NULL, NULL, NULL, &err), &err, "NULL");
  unlink(path);
  cr_expect_eq(
      api_export_rules("/nonexistent.rules", "json", 0, path, NULL, &err),
      API_ERR_INPUT);
  cr_expect_neq(access(path, F_OK), 0, "nothing written");
}

/* CUDA runners take the same typed buffers and give what the CPU gives
 * (gather, reshape and not are exact); weights are set on the graph first,
 * a CUDA runner refuses new ones. Skipped without a GPU. */
Test(api, typed_run_on_cuda) {
  if (!api_cuda_available())
    cr_skip_test("no CUDA GPU here");
  api_graph *g = load_typed();
  api_runner *rc = NULL, *rg = NULL;
  api_error err;
  api_run_options o;
  fill_table();
  api_tensor e = buf(API_F32, table, sizeof table);
  cr_assert_eq(api_graph_set_weight(g, "e", &e, table_dims, 2, &err), API_OK,
               "%s", err.message);
  api_run_options_default(&o);
  cr_assert_eq(api_runner_new(g, &o, &rc, &err), API_OK, "%s", err.message);
  o.device = "cuda";
  o.fp32_strict = 1;
  cr_assert_eq(api_runner_new(g, &o, &rg, &err), API_OK, "%s", err.message);
  cr_expect_eq(api_runner_set_weight(rg, "e", &e, table_dims, 2, &err),
               API_ERR_UNSUPPORTED);
  int64_t ids[6] = {6, 0, 3, 2, 5, 1}, rr[2][6];
  uint8_t m[6] = {1, 0, 1, 0, 0, 1}, n[2][6];
  float gg[2][24];
  api_tensor in[2] = {buf(API_I64, ids, sizeof ids), buf(API_BOOL, m, 6)};
  for (int k = 0; k < 2; k++) {
    api_tensor out[3] = {buf(API_F32, gg[k], sizeof gg[k]),
                         buf(API_I64, rr[k], sizeof rr[k]),
                         buf(API_BOOL, n[k], 6)};
    cr_assert_eq(api_runner_run_typed(k ? rg : rc, in, out, &err), API_OK, "%s",
                 err.message);
  }
  cr_expect_arr_eq(gg[0], gg[1], sizeof gg[0]);
  cr_expect_arr_eq(rr[0], rr[1], sizeof rr[0]);
  cr_expect_arr_eq(n[0], n[1], sizeof n[0]);
  cr_expect_eq(gg[1][4 * 5 + 2], table[1][2]);
  api_runner_free(rc);
  api_runner_free(rg);
  api_graph_free(g);
}
