/* test_costdb.c: the cost database and cost model: signatures (stable,
 * name-independent), roofline figures worked out by hand, put/lookup,
 * TSV import/export round trips and errors, refusing corrupt or
 * newer databases, surviving a writer killed mid-transaction, checked-in
 * tables imported on first use and re-imported when they change, and the
 * cost of ResNet-50 (finite, all estimated with an empty database, fast
 * when cached). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "costdb/costdb.h"

/* cd_sum_cost's value (the tests do not run out of memory). */
static double sum_cost(const ir_graph *g, cd_cost_fn f, void *u, int *est) {
  double c = 0;
  base_diag d;
  cr_assert_eq(cd_sum_cost(g, f, u, &c, est, &d), BASE_OK);
  return c;
}

/* cd_model_cost's value (the tests do not run out of memory). */
static double model_cost(void *u, const ir_graph *g, int node, int *est) {
  double c = 0;
  base_diag d;
  cr_assert_eq(cd_model_cost(u, g, node, &c, est, &d), BASE_OK);
  return c;
}

#define SRC SUPEROPT_SOURCE_DIR

static char dir[64];

static void mkdir_tmp(void) {
  snprintf(dir, sizeof dir, "/tmp/test_costdb.XXXXXX");
  cr_assert(mkdtemp(dir));
}

static void rm_tmp(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(costdb, .init = mkdir_tmp, .fini = rm_tmp);

static const char *tmp(const char *name) {
  static char paths[8][256];
  static int k;
  char *p = paths[k++ % 8];
  snprintf(p, 256, "%s/%s", dir, name);
  return p;
}

static ir_graph *parse(const char *text) {
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "test", &d);
  cr_assert(g, "line %d: %s", d.line, d.msg);
  return g;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(text, f);
  fclose(f);
}

static cd_db *open_db(const char *path) {
  base_diag d;
  cd_db *db = cd_open(path, &d);
  cr_assert(db, "%s", d.msg);
  return db;
}

static char *export_all(cd_db *db) {
  base_diag d;
  char *t = cd_export_text(db, NULL, &d);
  cr_assert(t, "%s", d.msg);
  return t;
}

#define HDR "device\tsig\tms\tstddev_ms\tsamples\tgpu_name\tmeasured_at\n"

/* ---- signatures ---------------------------------------------------------- */

Test(costdb, signature_exact_and_name_independent) {
  ir_graph *a = parse("input x: [1,64,56,56]\nweight w: [64,64,3,3]\n"
                      "y = conv2d(x, w) act=relu\noutput y\n");
  ir_graph *b = parse("input img: [1,64,56,56]\nweight k: [64,64,3,3]\n"
                      "out = conv2d(img, k) pad=[1,1,1,1] act=relu\n"
                      "output out\n");
  char sa[CD_SIG_MAX], sb[CD_SIG_MAX];
  cd_node_sig(a, 0, sa, sizeof sa);
  cd_node_sig(b, 0, sb, sizeof sb);
  cr_assert_str_eq(sa, "conv2d x=[1,64,56,56] w=[64,64,3,3] stride=[1,1] "
                       "pad=[1,1,1,1] dilation=[1,1] groups=1 act=relu");
  cr_assert_str_eq(sa, sb, "pad=same and the equal explicit pads differ");
  ir_graph_free(a);
  ir_graph_free(b);
}

Test(costdb, signature_depends_on_shapes_params_and_truncates) {
  ir_graph *g =
      parse("input x: [2,8]\ninput y: [2,8]\nweight s: []\n"
            "a = ewadd(x, y)\nb = ewadd(a, x)\nc = ewmul(a, x)\n"
            "d = smul(c, s)\ne = concat(a, b, c) axis=1\n"
            "f = softmax(e) axis=0\nh = softmax(e)\noutput d, f, h\n");
  char s[6][CD_SIG_MAX];
  for (int i = 0; i < 6; i++)
    cd_node_sig(g, i, s[i], sizeof s[i]);
  cr_assert_str_eq(s[0], s[1], "ewadd on equal shapes: one key");
  cr_assert_str_neq(s[1], s[2]);
  cr_assert_str_eq(s[3], "smul a=[2,8] s=[]");
  cr_assert_str_eq(s[4], "concat x0=[2,8] x1=[2,8] x2=[2,8] axis=1");
  char f[CD_SIG_MAX], h[CD_SIG_MAX], small[10];
  cd_node_sig(g, 5, f, sizeof f);
  cd_node_sig(g, 6, h, sizeof h);
  cr_assert_str_neq(f, h, "softmax axis is part of the key");
  size_t n = cd_node_sig(g, 4, small, sizeof small);
  cr_assert_eq(n, strlen(s[4]));
  cr_assert_str_eq(small, "concat x0");
  ir_graph_free(g);
}

/* ---- roofline ------------------------------------------------------------ */

static const cd_device *dev(const char *name) {
  base_diag d;
  const cd_device *v = cd_device_find(name, &d);
  cr_assert(v, "%s", d.msg);
  return v;
}

Test(costdb, roofline_conv_matmul_by_hand) {
  ir_graph *g = parse("input x: [1,64,56,56]\nweight w: [64,64,3,3]\n"
                      "y = conv2d(x, w) act=relu\n"
                      "input a: [128,256]\nweight b: [256,512]\n"
                      "m = matmul(a, b)\nr = reshape(m) shape=[512,128]\n"
                      "output y, r\n");
  /* conv: 64*56*56 = 200704 outputs, each 64*3*3 = 576 multiply-adds and a
   * relu: 200704 * 1153 = 231411712 flops; bytes 4 * (200704 + 36864 +
   * 200704) = 1753088; compute-bound on the H100: 231411712 / 66.9e12 s */
  cd_work w = cd_node_work(g, 0);
  cr_assert_float_eq(w.flops, 231411712.0, 0.5);
  cr_assert_float_eq(w.bytes, 1753088.0, 0.5);
  double want = 231411712.0 / 66.9e12 * 1e3 + 0.004;
  cr_assert_float_eq(cd_estimate(dev("h100"), g, 0), want, 1e-12);
  /* matmul 128x256x512: 2*128*256*512 = 33554432 flops, bytes 4 * (32768 +
   * 131072 + 65536) = 917504. FP32 on the H200: compute-bound; TF32 on the
   * H100: memory-bound (917504 / 3.35e12 s > 33554432 / 494.7e12 s). */
  w = cd_node_work(g, 1);
  cr_assert_float_eq(w.flops, 33554432.0, 0.5);
  cr_assert_float_eq(w.bytes, 917504.0, 0.5);
  cr_assert_float_eq(cd_estimate(dev("h200"), g, 1),
                     33554432.0 / 66.9e12 * 1e3 + 0.004, 1e-12);
  cr_assert_float_eq(cd_estimate(dev("h100-tf32"), g, 1),
                     917504.0 / 3.35e12 * 1e3 + 0.004, 1e-12);
  cr_assert_eq(cd_estimate(dev("h100"), g, 2), 0.0, "reshape is a view");
  ir_graph_free(g);
}

/* A fused node: one launch, its inputs (a broadcast one at its own size)
 * read once and its output written once, the body's flops per element. */
Test(costdb, roofline_fused_node_by_hand) {
  ir_graph *g = parse("input x: [2,8,6,12]\nweight b: [8,1,1]\n"
                      "y = fused(x, b) { a = ewadd($0, $1); r = relu(a) }\n"
                      "output y\n");
  cd_work w = cd_node_work(g, 0);
  double per = ir_op(IR_OP_EWADD)->flops + ir_op(IR_OP_RELU)->flops;
  cr_assert_eq(w.launches, 1);
  cr_assert_eq(w.matrix, 0);
  cr_assert_float_eq(w.bytes, 4.0 * (1152 + 8 + 1152), 0.5);
  cr_assert_float_eq(w.flops, 1152 * per, 0.5);
  /* memory-bound on the H100: 9248 B / 3.35e12 B/s, plus one launch */
  cr_assert_float_eq(cd_estimate(dev("h100"), g, 0),
                     9248.0 / 3.35e12 * 1e3 + 0.004, 1e-12);
  ir_graph_free(g);
}

Test(costdb, views_copies_and_unknown_device) {
  ir_graph *g = parse("input x: [1,6,4,4]\n"
                      "a, b = split(x) axis=1 sizes=[2,4]\n"
                      "c, e = split(x) axis=2 sizes=[1,3]\n"
                      "t = transpose(x) perm=[1,0,2,3]\n"
                      "u = transpose(x) perm=[0,1,3,2]\n"
                      "output a, b, c, e, t, u\n");
  /* a view to the IR, but the CUDA executor copies it (channels-last) */
  cr_assert_eq(cd_node_work(g, 0).launches, 1, "channel split copies");
  cr_assert_float_eq(cd_node_work(g, 0).bytes, 4.0 * 2 * 96, 0.5);
  cr_assert_eq(cd_node_work(g, 1).launches, 1, "row split copies");
  cr_assert_float_eq(cd_node_work(g, 1).bytes, 4.0 * 2 * 96, 0.5);
  cr_assert_eq(cd_node_work(g, 2).launches, 0, "moves only a size-1 dim");
  cr_assert_eq(cd_node_work(g, 3).launches, 1);
  base_diag d;
  cr_assert_null(cd_device_find("tpu", &d));
  cr_assert(strstr(d.msg, "unknown device 'tpu'") && strstr(d.msg, "h100") &&
                strstr(d.msg, "h200") && strstr(d.msg, "cpu"),
            "%s", d.msg);
  ir_graph_free(g);
}

/* A split along the last axis that only fused nodes read, directly or
 * through a reshape of the last dimension (Llama's merged projections),
 * runs no copy on the CUDA executor (gpu_layout_fused_splits) and costs 0
 * in the roofline and the model; read by a plain operator, or an output,
 * it copies. */
Test(costdb, split_read_in_place_costs_nothing) {
  const char *body =
      "input x: [2,5,16]\nweight w: [16,32]\ny = matmul(x, w)\n"
      "a, b = split(y) axis=2 sizes=[16,16]\nbs = reshape(b) shape=[2,5,4,4]\n"
      "g = fused(a, a) { t0 = ewmul($0, $1) }\n"
      "h = fused(bs) { t0 = sigmoid($0) }\n";
  char text[3][512];
  snprintf(text[0], sizeof text[0], "%soutput g, h\n", body);
  snprintf(text[1], sizeof text[1], "%sr = relu(a)\noutput g, h, r\n", body);
  snprintf(text[2], sizeof text[2], "%soutput g, h, b\n", body);
  for (int k = 0; k < 3; k++) {
    ir_graph *g = parse(text[k]);
    double c = -1;
    base_diag d;
    cr_assert_eq(cd_model_cost(NULL, g, 1, &c, NULL, &d), BASE_OK, "%s", d.msg);
    if (k == 0) {
      cr_assert(ir_split_read_in_place(g, 1, NULL, NULL));
      cr_assert_eq(cd_node_work(g, 1).launches, 0);
      cr_assert_eq(c, 0);
    } else {
      cr_assert(!ir_split_read_in_place(g, 1, NULL, NULL), "graph %d", k);
      cr_assert_eq(cd_node_work(g, 1).launches, 1, "graph %d", k);
      cr_assert_gt(c, 0, "graph %d", k);
    }
    ir_graph_free(g);
  }
}

/* A split of a part read in place along the same last axis (the search's
 * merge of three projections, two parts split in two again: Llama under
 * --passes none) is read in place with its parts, and so is the outer
 * split; one of the inner parts an output, neither is. */
Test(costdb, nested_split_read_in_place) {
  const char *body = "input x: [2,5,16]\nweight w: [16,48]\ny = matmul(x, w)\n"
                     "v, p = split(y) axis=2 sizes=[16,32]\n"
                     "q, r = split(p) axis=2 sizes=[16,16]\n"
                     "qs = reshape(q) shape=[2,5,4,4]\n"
                     "g = fused(r, v) { t0 = ewmul($0, $1) }\n"
                     "h = fused(qs) { t0 = sigmoid($0) }\n";
  char text[2][512];
  snprintf(text[0], sizeof text[0], "%soutput g, h\n", body);
  snprintf(text[1], sizeof text[1], "%soutput g, h, r\n", body);
  for (int k = 0; k < 2; k++) {
    ir_graph *g = parse(text[k]);
    cr_assert_eq(g->nodes[1].op, IR_OP_SPLIT);
    cr_assert_eq(g->nodes[2].op, IR_OP_SPLIT);
    cr_assert_eq(ir_split_read_in_place(g, 1, NULL, NULL), !k, "graph %d", k);
    cr_assert_eq(ir_split_read_in_place(g, 2, NULL, NULL), !k, "graph %d", k);
    cr_assert_eq(cd_node_work(g, 1).launches, k, "graph %d", k);
    ir_graph_free(g);
  }
}

/* ---- database ------------------------------------------------------------ */

Test(costdb, put_lookup_round_trip_and_cache_invalidation) {
  cd_db *db = open_db(tmp("a.sqlite"));
  ir_graph *g = parse("input x: [1,8]\ny = relu(x)\noutput y\n");
  base_diag d;
  cd_cost c0, c1;
  cr_assert_eq(cd_graph_cost(db, dev("h100"), g, &c0, &d), BASE_OK, "%s",
               d.msg);
  cr_assert_eq(c0.nestimated, 1);
  char sig[CD_SIG_MAX];
  cd_node_sig(g, 0, sig, sizeof sig);
  cd_entry e = {0.25, 0.01, 10, "test", "NVIDIA H100", "2025-01-02"};
  cr_assert_eq(cd_put(db, "h100", sig, &e, &d), BASE_OK, "%s", d.msg);
  double ms = 0;
  int found = 0;
  cr_assert_eq(cd_lookup(db, "h100", sig, &ms, &found, &d), BASE_OK);
  cr_assert(found);
  cr_assert_eq(ms, 0.25);
  cr_assert_eq(cd_lookup(db, "h200", sig, &ms, &found, &d), BASE_OK);
  cr_assert(!found, "costs are per device");
  cr_assert_eq(cd_graph_cost(db, dev("h100"), g, &c1, &d), BASE_OK);
  cr_assert_eq(c1.nmeasured, 1, "the cache kept a stale estimate");
  cr_assert_eq(c1.ms, 0.25);
  /* an older measurement does not replace a newer one */
  cd_entry old = {9.0, 0, 1, "test", "", "2024-01-01"};
  cr_assert_eq(cd_put(db, "h100", sig, &old, &d), BASE_OK);
  cr_assert_eq(cd_lookup(db, "h100", sig, &ms, &found, &d), BASE_OK);
  cr_assert_eq(ms, 0.25);
  cd_entry bad = {-1, 0, 1, "test", "", NULL};
  cr_assert_neq(cd_put(db, "h100", sig, &bad, &d), BASE_OK);
  cr_assert_neq(cd_put(db, "tpu", sig, &e, &d), BASE_OK);
  cr_assert_neq(cd_put(db, "h100", "nosuchop x=[1]", &e, &d), BASE_OK);
  ir_graph_free(g);
  cd_close(db);
}

Test(costdb, batch_rollback_drops_rows) {
  cd_db *db = open_db(tmp("b.sqlite"));
  base_diag d;
  cd_entry e = {1.0, 0, 1, "test", "", NULL};
  cr_assert_eq(cd_begin(db, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(cd_put(db, "cpu", "relu x=[1]", &e, &d), BASE_OK);
  cr_assert_eq(cd_rollback(db, &d), BASE_OK);
  cr_assert_eq(cd_begin(db, &d), BASE_OK);
  cr_assert_eq(cd_put(db, "cpu", "relu x=[2]", &e, &d), BASE_OK);
  cr_assert_eq(cd_commit(db, &d), BASE_OK);
  double ms;
  int found;
  cr_assert_eq(cd_lookup(db, "cpu", "relu x=[1]", &ms, &found, &d), BASE_OK);
  cr_assert(!found);
  cr_assert_eq(cd_lookup(db, "cpu", "relu x=[2]", &ms, &found, &d), BASE_OK);
  cr_assert(found);
  cd_close(db);
}

Test(costdb, corrupt_file_refused) {
  const char *p = tmp("garbage.sqlite");
  FILE *f = fopen(p, "wb");
  for (int i = 0; i < 8192; i++)
    fputc((i * 7919 + 13) & 0xff, f);
  fclose(f);
  base_diag d;
  cr_assert_null(cd_open(p, &d));
  cr_assert_str_eq(d.file, p);
  cr_assert(strstr(d.msg, "not a usable cost database") &&
                strstr(d.msg, "not a database"),
            "%s", d.msg);
}

Test(costdb, damaged_page_refused) {
  const char *p = tmp("damaged.sqlite");
  cd_db *db = open_db(p);
  base_diag d;
  cr_assert_eq(cd_begin(db, &d), BASE_OK);
  for (int i = 0; i < 2000; i++) {
    char sig[64];
    snprintf(sig, sizeof sig, "relu x=[%d]", i + 1);
    cd_entry e = {1.0 + i, 0, 1, "test", "", "2025-01-01"};
    cr_assert_eq(cd_put(db, "h100", sig, &e, &d), BASE_OK);
  }
  cr_assert_eq(cd_commit(db, &d), BASE_OK);
  cd_close(db);              /* checkpoints the WAL into the main file */
  FILE *f = fopen(p, "r+b"); /* the cell contents of every page but 1 */
  cr_assert(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  for (long page = 4096; page < size; page += 4096) {
    fseek(f, page + 2048, SEEK_SET);
    for (int i = 0; i < 2048; i++)
      fputc(0xA5, f);
  }
  fclose(f);
  db = cd_open(p, &d);
  cr_assert_null(db, "a damaged database opened");
  cr_assert(strstr(d.msg, "corrupt") || strstr(d.msg, "malformed"), "%s",
            d.msg);
}

static void set_meta(const char *path, const char *sql) {
  sqlite3 *s;
  cr_assert_eq(sqlite3_open(path, &s), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(s);
}

Test(costdb, schema_version_mismatch_refused) {
  const char *p = tmp("v.sqlite");
  cd_close(open_db(p));
  set_meta(p, "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  base_diag d;
  cr_assert_null(cd_open(p, &d));
  cr_assert(strstr(d.msg, "schema version 2") &&
                strstr(d.msg, "reads version 1"),
            "%s", d.msg);
  const char *q = tmp("other.sqlite");
  set_meta(q, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
  cr_assert_null(cd_open(q, &d));
  cr_assert(strstr(d.msg, "not a superopt cost database"), "%s", d.msg);
}

/* ---- TSV ---------------------------------------------------------------- */

static const char canonical[] =
    HDR "cpu\trelu x=[4]\t0.1\t0\t3\t\t2025-03-01\n"
        "h100\tconv2d x=[1,3,224,224] w=[64,3,7,7] stride=[2,2] "
        "pad=[3,3,3,3] dilation=[1,1] groups=1 act=none\t0.0123456789012345"
        "67\t0.30000000000000004\t100\tNVIDIA H100 80GB HBM3\t"
        "2025-03-01T10:00:00Z\n"
        "h100\trelu x=[1,64,112,112]\t0.0071\t2.5e-07\t50\tNVIDIA H100 80GB "
        "HBM3\t2025-03-01\n";

Test(costdb, tsv_round_trip_byte_identical) {
  const char *in = tmp("in.tsv"), *out = tmp("out.tsv");
  write_file(in, canonical);
  cd_db *db = open_db(tmp("rt.sqlite"));
  base_diag d;
  int rows = 0;
  cr_assert_eq(cd_import_tsv(db, &in, 1, &rows, &d), BASE_OK, "%s:%d: %s",
               d.file, d.line, d.msg);
  cr_assert_eq(rows, 3);
  cr_assert_eq(cd_export_tsv(db, NULL, out, &d), BASE_OK, "%s", d.msg);
  size_t n;
  char *text = base_read_file(out, &n, &d);
  cr_assert_str_eq(text, canonical);
  free(text);
  text = cd_export_text(db, "cpu", &d);
  cr_assert_str_eq(text, HDR "cpu\trelu x=[4]\t0.1\t0\t3\t\t2025-03-01\n");
  free(text);
  cd_close(db);
}

Test(costdb, tsv_calendar_dates_accepted) {
  const char *in = tmp("dates.tsv");
  write_file(in,
             HDR "cpu\trelu x=[4]\t0.1\t0\t3\t\t2024-02-29\n"
                 "cpu\trelu x=[5]\t0.1\t0\t3\t\t2000-02-29T23:59\n"
                 "cpu\trelu x=[6]\t0.1\t0\t3\t\t2016-12-31T23:59:60.5+01:00\n");
  cd_db *db = open_db(tmp("dates.sqlite"));
  base_diag d;
  int rows = 0;
  cr_assert_eq(cd_import_tsv(db, &in, 1, &rows, &d), BASE_OK, "%s:%d: %s",
               d.file, d.line, d.msg);
  cr_assert_eq(rows, 3);
  cd_close(db);
}

Test(costdb, header_only_table_imports_nothing) {
  const char *in = tmp("empty.tsv");
  write_file(in, HDR);
  cd_db *db = open_db(tmp("e.sqlite"));
  base_diag d;
  int rows = -1;
  cr_assert_eq(cd_import_tsv(db, &in, 1, &rows, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(rows, 0);
  char *all = export_all(db);
  cr_assert_str_eq(all, HDR);
  free(all);
  cd_close(db);
}

/* Imports text as a table; expects an error at line:col naming why. */
static void expect_bad(const char *text, int line, int col, const char *why) {
  const char *good = tmp("good.tsv"), *bad = tmp("bad.tsv");
  write_file(good, HDR "h200\trelu x=[9]\t1\t0\t1\tgpu\t2025-01-01\n");
  write_file(bad, text);
  cd_db *db = open_db(tmp("bad.sqlite"));
  const char *both[2] = {good, bad};
  base_diag d;
  cr_assert_neq(cd_import_tsv(db, both, 2, NULL, &d), BASE_OK, "accepted: %s",
                text);
  cr_assert_str_eq(d.file, bad);
  cr_assert_eq(d.line, line, "%s: %s", text, d.msg);
  cr_assert_eq(d.col, col, "%s: %s", text, d.msg);
  cr_assert(strstr(d.msg, why), "%s", d.msg);
  char *all = export_all(db);
  cr_assert_str_eq(all, HDR, "an import that failed left rows behind");
  free(all);
  cd_close(db);
}

Test(costdb, tsv_bad_lines_import_nothing) {
  const char *row = "h100\trelu x=[1]\t1.5\t0\t5\tgpu\t2025-01-01\n";
  char t[1024];
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\tfast\t0\t5\tgpu\t2025-01-01\n");
  expect_bad(t, 3, 17, "ms: expected a number");
  expect_bad("device\tsig\n", 1, 1, "expected the header line");
  expect_bad("", 1, 1, "empty file");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "tpu\trelu x=[2]\t1\t0\t5\tg\t2025-01-01\n");
  expect_bad(t, 3, 1, "unknown device 'tpu'");
  snprintf(t, sizeof t, HDR "%s%s", row, "h100\trelu x=[2]\t1\t0\t5\tg\n");
  expect_bad(t, 3, 1, "expected 7 tab-separated fields, found 6");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\tfoo x=[2]\t1\t0\t5\tg\t2025-01-01\n");
  expect_bad(t, 3, 6, "unknown operator 'foo'");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\t-1\t0\t5\tg\t2025-01-01\n");
  expect_bad(t, 3, 17, "ms must be a finite number > 0");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\t1\t0\t0\tg\t2025-01-01\n");
  expect_bad(t, 3, 21, "samples");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\t1\t0\t5\tg\tyesterday\n");
  expect_bad(t, 3, 25, "measured_at");
  snprintf(t, sizeof t, HDR "%s%s", row, row);
  expect_bad(t, 3, 1, "duplicate row for device h100: first at");
  /* dates are calendar dates; CRLF names the carriage return */
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\t1\t0\t5\tg\t2025-13-45\n");
  expect_bad(t, 3, 25, "measured_at must be a calendar date");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\t1\t0\t5\tg\t2025-02-29\n");
  expect_bad(t, 3, 25, "measured_at");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\t1\t0\t5\tg\t2025-01-01T25:00:00Z\n");
  expect_bad(t, 3, 25, "measured_at");
  expect_bad("device\tsig\tms\tstddev_ms\tsamples\tgpu_name\tmeasured_at\r\n",
             1, 53, "a carriage return (CRLF line endings?)");
  snprintf(t, sizeof t, HDR "%s%s", row,
           "h100\trelu x=[2]\t1\t0\t5\tg\t2024-02-29T23:59:60.5+01:00\r\n");
  expect_bad(t, 3, 52, "carriage return");
}

/* ---- killed mid-write ---------------------------------------------------- */

static void writer(const char *path, int fd) {
  base_diag d;
  cd_db *db = cd_open(path, &d);
  if (!db)
    _exit(1);
  for (int i = 0;; i++) {
    char sig[64];
    cd_entry e = {1.0 + i, 0.5, 3, "writer", "gpu", "2025-01-01"};
    if (cd_begin(db, &d))
      _exit(2);
    for (int k = 0; k < 3; k++) {
      snprintf(sig, sizeof sig, "relu x=[%d,%d]", i + 1, k + 1);
      if (cd_put(db, "h100", sig, &e, &d))
        _exit(3);
    }
    if (cd_commit(db, &d))
      _exit(4);
    if (write(fd, &i, sizeof i) != sizeof i)
      _exit(5);
  }
}

Test(costdb, killed_mid_write_keeps_committed_rows) {
  const char *p = tmp("killed.sqlite");
  cd_close(open_db(p));
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    close(fds[0]);
    writer(p, fds[1]);
  }
  close(fds[1]);
  int i, n = 0, last = -1;
  while (n < 300 && read(fds[0], &i, sizeof i) == sizeof i)
    last = i, n++;
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  cr_assert(WIFSIGNALED(status), "the writer stopped on its own: %d", status);
  while (read(fds[0], &i, sizeof i) == sizeof i) /* reported before dying */
    last = i, n++;
  close(fds[0]);
  cr_assert_geq(n, 300);
  cd_db *db = open_db(p);
  base_diag d;
  cr_assert_eq(cd_check(db, &d), BASE_OK, "%s", d.msg);
  for (int r = 0; r <= last; r++)
    for (int k = 0; k < 3; k++) {
      char sig[64];
      double ms = 0;
      int found = 0;
      snprintf(sig, sizeof sig, "relu x=[%d,%d]", r + 1, k + 1);
      cr_assert_eq(cd_lookup(db, "h100", sig, &ms, &found, &d), BASE_OK);
      cr_assert(found && ms == 1.0 + r, "committed row %d lost", r);
    }
  cr_log_info("writer killed after %d committed transactions", n);
  cd_close(db);
}

/* ---- tables and graph cost ---------------------------------------------- */

static ir_graph *resnet(void) {
  base_diag d;
  ir_graph *g = ir_parse_file(SRC "/models/resnet50.graph", &d);
  cr_assert(g, "%s", d.msg);
  return g;
}

Test(costdb, resnet50_all_estimated_with_empty_db) {
  ir_graph *g = resnet();
  cd_db *db = open_db(tmp("empty.sqlite"));
  base_diag d;
  cd_cost c;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(cd_graph_cost(db, dev("h100"), g, &c, &d), BASE_OK, "%s", d.msg);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double cold = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
                 (double)(t1.tv_nsec - t0.tv_nsec)) /
                1e3;
  cr_assert(isfinite(c.ms) && c.ms > 0, "%g", c.ms);
  cr_assert_eq(c.nmeasured, 0);
  cr_assert_eq(c.nestimated + c.nfolded, g->nnodes);
  cr_assert_eq(c.nfolded, 0, "resnet50 has no weight-only operators");
  cd_cost e;
  cr_assert_eq(cd_graph_cost(NULL, dev("h100"), g, &e, &d), BASE_OK);
  cr_assert_eq(e.ms, c.ms, "the cache changed a cost");
  cd_cost h200;
  cr_assert_eq(cd_graph_cost(db, dev("h200"), g, &h200, &d), BASE_OK);
  cr_assert_lt(h200.ms, c.ms, "more bandwidth, same compute: faster");
  /* warm: a graph cost is a cache hit per node */
  int iters = 2000;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int k = 0; k < iters; k++)
    cd_graph_cost(db, dev("h100"), g, &e, &d);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
               (double)(t1.tv_nsec - t0.tv_nsec)) /
              iters / 1e3;
  cr_log_info("resnet50 (%d nodes) h100 cost %.4f ms; graph cost: first "
              "%.0f us, warm %.2f us",
              g->nnodes, c.ms, cold, us);
  cr_assert_lt(us, 1000.0, "warm graph cost took %.1f us", us);
  cr_assert_eq(e.ms, c.ms);
  ir_graph_free(g);
  cd_close(db);
}

Test(costdb, weight_only_operators_fold) {
  ir_graph *g = parse("input x: [1,4,8,8]\nweight w: [4,4,1,1]\n"
                      "k = enlarge(w) kernel=[3,3]\ny = conv2d(x, k)\n"
                      "i = const_ones() shape=[4,1,1]\nz = ewadd(y, i)\n"
                      "output z\n");
  cd_cost c;
  base_diag d;
  cr_assert_eq(cd_graph_cost(NULL, dev("cpu"), g, &c, &d), BASE_OK);
  cr_assert_eq(c.nfolded, 2, "enlarge(w) and const_ones fold");
  cr_assert_eq(c.nestimated, 2);
  ir_graph_free(g);
}

/* The optimizer's cost (cd_model): measured nodes cost their measurement;
 * unmeasured nodes the fitted model's prediction once cd_model_fit ran
 * (the plain estimate before); weight-only nodes are skipped. */
Test(costdb, model_uses_measurements_then_the_fit) {
  cd_db *db = open_db(tmp("m.sqlite"));
  ir_graph *g = parse("input x: [1,64]\nweight w: [64]\n"
                      "a = relu(x)\nb = relu(a)\nc = ewadd(b, x)\n"
                      "v = relu(w)\nd = ewadd(c, v)\noutput d\n");
  const cd_device *h = dev("h100");
  base_diag d;
  char sig[CD_SIG_MAX];
  cd_node_sig(g, 0, sig, sizeof sig); /* a and b share the signature */
  double ea = cd_estimate(h, g, 0), ec = cd_estimate(h, g, 2);
  cd_entry e = {3 * ea, 0, 5, "test", "", "2025-01-02"};
  cr_assert_eq(cd_put(db, "h100", sig, &e, &d), BASE_OK, "%s", d.msg);
  cd_model m;
  cd_model_init(&m, db, h);
  int est = -1;
  cr_assert_float_eq(model_cost(&m, g, 2, &est), 1000 * ec, 1e-9,
                     "not fitted: the roofline estimate");
  cr_assert_eq(cd_model_fit(&m, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(m.fit.rows, 1);
  cr_assert_float_eq(model_cost(&m, g, 0, &est), 3000 * ea, 1e-9);
  cr_assert_eq(est, 0, "measured");
  double pc = cd_fit_predict(&m.fit, h, g, 2);
  cr_assert_float_eq(model_cost(&m, g, 2, &est), 1000 * pc, 1e-9);
  cr_assert_eq(est, 1, "estimated");
  /* the graph sum skips the weight-only relu(w) */
  double sum = sum_cost(g, cd_model_cost, &m, &est);
  cr_assert_float_eq(sum, 2 * 3000 * ea + 2000 * pc, 1e-9);
  cr_assert_eq(est, 1);
  /* no model: the plain h100 estimate */
  cr_assert_float_eq(model_cost(NULL, g, 0, &est), 1000 * ea, 1e-12);
  ir_graph_free(g);
  cd_close(db);
}

/* The unmeasured hook sees each unmeasured node that runs a kernel with
 * its signature; what it measures is the cost. */
typedef struct hook_log {
  int calls;
  char last[CD_SIG_MAX];
  double give; /* > 0: "measure" at this cost */
} hook_log;

static base_status hook(void *u, const ir_graph *g, int node, const char *sig,
                        double *ms, int *measured, base_diag *d) {
  (void)g, (void)node, (void)d;
  hook_log *l = u;
  l->calls++;
  snprintf(l->last, sizeof l->last, "%s", sig);
  *measured = l->give > 0;
  *ms = l->give;
  return BASE_OK;
}

Test(costdb, model_hook_sees_unmeasured_kernels) {
  ir_graph *g = parse("input x: [1,4,8]\ny = relu(x)\n"
                      "r = reshape(y) shape=[1,32]\noutput r\n");
  cd_model m;
  cd_model_init(&m, NULL, dev("h100"));
  hook_log l = {0};
  m.unmeasured = hook;
  m.unmeasured_u = &l;
  int est;
  model_cost(&m, g, 0, &est);
  cr_assert_eq(l.calls, 1);
  cr_assert_str_eq(l.last, "relu x=[1,4,8]");
  cr_assert_eq(est, 1);
  model_cost(&m, g, 1, &est); /* a view: no kernel to measure */
  cr_assert_eq(l.calls, 1);
  l.give = 0.25;
  cr_assert_float_eq(model_cost(&m, g, 0, &est), 250, 1e-9);
  cr_assert_eq(est, 0, "measured by the hook");
  ir_graph_free(g);
}

/* Every signature of the committed tables rebuilds a one-node graph that
 * signs the same (the fit reads the tables through this). */
Test(costdb, signatures_of_the_tables_rebuild_their_graphs) {
  const char *dv[] = {"h100", "h200"};
  for (int k = 0; k < 2; k++) {
    cd_db *db = open_db(tmp(k ? "s2.sqlite" : "s1.sqlite"));
    base_diag d;
    cr_assert_eq(cd_set_tables(db, SRC "/costdb", &d), BASE_OK, "%s", d.msg);
    cr_assert_eq(cd_sync_tables(db, dev(dv[k]), &d), BASE_OK, "%s", d.msg);
    char *t = cd_export_text(db, dv[k], &d);
    cr_assert(t);
    int rows = 0;
    for (char *line = strchr(t, '\n') + 1; *line;) {
      char *end = strchr(line, '\n'), *sig = strchr(line, '\t') + 1;
      *strchr(sig, '\t') = 0;
      ir_graph *g = cd_sig_graph(sig, &d);
      cr_assert(g, "%s: %s", sig, d.msg);
      cr_assert_eq(g->nnodes, 1);
      char back[CD_SIG_MAX];
      cd_node_sig(g, 0, back, sizeof back);
      cr_assert_str_eq(back, sig);
      ir_graph_free(g);
      rows++;
      line = end + 1;
    }
    cr_assert_gt(rows, 100, "%s: %d rows", dv[k], rows);
    free(t);
    cd_close(db);
  }
  base_diag d;
  /* integer and boolean inputs: their type is the operator's, not
   * written (gather's indices, where's condition) */
  const char *typed[] = {"gather data=[128,1] indices=[1,1,1,128] axis=0",
                         "where cond=[1,1,8,8] a=[2,4,8,8] b=[]"};
  for (int k = 0; k < 2; k++) {
    ir_graph *g = cd_sig_graph(typed[k], &d);
    cr_assert(g, "%s: %s", typed[k], d.msg);
    char back[CD_SIG_MAX];
    cd_node_sig(g, 0, back, sizeof back);
    cr_assert_str_eq(back, typed[k]);
    ir_graph_free(g);
  }
  cr_assert_null(cd_sig_graph("nosuchop x=[1]", &d));
  cr_assert_null(cd_sig_graph("relu x=[1,0]", &d));
}

/* The fitted model on the committed tables: on rows held out of the fit
 * (5-fold) it beats the single factor per operator it replaced, at the
 * median and the 90th percentile; its parameters are positive (a fixed
 * cost below the class's median time, throughputs not negative); the
 * fit does not depend on the order rows come in. */
Test(costdb, fit_beats_single_factor_on_held_out_rows) {
  const char *dv[] = {"h100", "h200"};
  for (int k = 0; k < 2; k++) {
    cd_db *db = open_db(tmp(k ? "f2.sqlite" : "f1.sqlite"));
    base_diag d;
    cr_assert_eq(cd_set_tables(db, SRC "/costdb", &d), BASE_OK, "%s", d.msg);
    cd_sample *s;
    int n, skipped;
    cr_assert_eq(cd_samples(db, dev(dv[k]), &s, &n, &skipped, &d), BASE_OK,
                 "%s", d.msg);
    cr_assert_gt(n, 100);
    cd_fit_report r;
    cr_assert_eq(cd_fit_crossval(s, n, 5, &r, &d), BASE_OK);
    cr_assert_eq(r.fit.n, n, "every row held out once");
    cr_log_info("%s: held-out median %.3f p90 %.3f; single factor %.3f %.3f",
                dv[k], r.fit.median, r.fit.p90, r.single.median, r.single.p90);
    cr_assert_lt(r.fit.median, r.single.median, "%s", dv[k]);
    cr_assert_lt(r.fit.p90, r.single.p90, "%s", dv[k]);
    cd_fit f, g;
    cr_assert_eq(cd_fit_samples(s, n, NULL, &f, &d), BASE_OK);
    int own = 0;
    for (int o = 0; o < CD_NCLASSES; o++) {
      const cd_fit_op *p = &f.op[o];
      if (p->from == CD_FIT_NONE)
        continue;
      cr_assert_gt(p->c[0], 0, "%s fixed cost", cd_class_name(o));
      for (int j = 1; j < CD_NFEAT; j++)
        cr_assert_geq(p->c[j], 0);
      if (p->from != CD_FIT_OWN)
        continue;
      own++;
      double *m = malloc(sizeof *m * (size_t)n); /* the class's times */
      int k = 0;
      for (int i = 0; i < n; i++)
        if (s[i].op == o)
          m[k++] = s[i].ms;
      int below = 0; /* the fixed cost is below the class's median time */
      for (int i = 0; i < k; i++)
        below += p->c[0] < m[i];
      cr_assert_geq(2 * below, k, "%s: fixed %g ms above most of its rows",
                    cd_class_name(o), p->c[0]);
      free(m);
    }
    cr_assert_gt(own, 10, "%s: %d operators with their own fit", dv[k], own);
    cr_assert_eq(f.op[IR_OP_CONV2D].from, CD_FIT_OWN);
    cr_assert_gt(f.op[IR_OP_CONV2D].c[2], 0, "conv2d pays for its flops");
    /* the same rows reversed: the same fit (up to rounding) */
    for (int i = 0; i < n / 2; i++) {
      cd_sample t = s[i];
      s[i] = s[n - 1 - i];
      s[n - 1 - i] = t;
    }
    cr_assert_eq(cd_fit_samples(s, n, NULL, &g, &d), BASE_OK);
    for (int o = 0; o < CD_NCLASSES; o++)
      for (int j = 0; j < CD_NFEAT; j++)
        cr_assert_float_eq(f.op[o].c[j], g.op[o].c[j],
                           1e-9 * fabs(f.op[o].c[j]) + 1e-15, "%s",
                           cd_class_name(o));
    free(s);
    cd_close(db);
  }
}

/* Rows the fitted model misses by more than 2x, by table and class: known
 * and open (issue 43; docs/costdb.md, "The fitted model"). Every other
 * class must be within 2x on every row, and these counts must not grow. */
static const struct {
  const char *dev, *cls;
  int max;
} beyond_2x[] = {
    /* Counts after the fifth round (2026-12-01, issue 43: a depthwise
     * convolution's taps, a k x k one's main-loop steps, whole waves of
     * output tiles, a 1x1's no-GEMM fixed cost, a float32 convolution's
     * epilogue kernel, a half 1x1's rows not 16 bytes, a matmul of one
     * row, a half transpose to or from channels-last a copy). Before:
     * h100 13 rows, worst 2.75; h200 0, 1.99; h200+mutants 24, 2.76;
     * h200-bf16 20, 3.89; h200-f16 12, 3.86; after: 8 (2.75), 0 (1.95), 7
     * (2.61), 8 (3.89), 9 (3.86); after the sixth round's pad steps (a
     * float32 pad's warp a row, 32 elements a step): 8 (2.75), 0 (1.92),
     * 6 (2.56), 8 (3.89), 9 (3.86). Earlier rounds: 20, 16, 54, 55, 46;
     * 23, 22, 61, 126 (the old bf16 table); 38, 54, 230.
     *
     * h100 (rows of 2026-11-22, no H100 since to measure them again):
     * 1x1 convolutions of SqueezeNet's [16,128,55,55] to 16 channels
     * (2.4x under) and a strided [16,256,56,56] (2.1x under). */
    {"h100", "conv2d/1x1", 3},
    /* the mutants' k x k convolutions the model does not follow: 7x7 ones
     * of 128-192 channels over 17 x 17 pixels at batch 1 (2.1-2.6x under;
     * 3x3 ones of as many steps take a quarter of their time: another
     * cuDNN kernel), the RGB stems at batch 1 without bias (2.2x over: the
     * class's fixed cost, 7.5 us with the mutants' rows, the stems 5-6
     * us; a class of their own for the CUDA-core kernels fixed them but
     * put ConvNeXt's stem at batch 16 2.00x over on the h200) and a 3x1
     * over [1,44,28,28] (2.1x under; its 1x3 twin is 2.9x faster, every
     * other 3x1 / 1x3 pair of the table alike: one slow timing). The
     * eighth round's epilogue bytes for a k x k (the stems with bias
     * 2.6-21.6 us dearer than without) put this class at 9 */
    {"h200+mutants", "conv2d/kxk", 6},
    /* NASNet's float32 3x3 average pools over 11 and 44 channels at batch 16
     * (2.0-2.1x under): kred.cu's scalar kernel reads each window element
     * apart; priced by its window reads they were within 2x (h100 avgpool
     * held-out median 18.7% -> 9.1%), but the H200's float32 rows, batch
     * 1 only, fitted that term at 1046 GB/s, pricing Inception-v3's
     * average pools at batch 16 at ~190 us each: taken for half rows
     * only */
    {"h100", "avgpool", 2},
    /* concats: the H100's rows (2026-11-22) timed the executor of then, a
     * launch an input: NASNet's six-input concats 7.3-7.9 us, 2.3-2.8x
     * under (no H100 since to measure them again). Half: ShuffleNet's,
     * whose output the channel shuffle's reshape needs NCHW while its
     * inputs are channels-last: a layout conversion the signature does not
     * show (2.3-3.9x under; the concat_shuffle of the same inputs, more
     * work, takes 2.1-4.5 us against 6.5-8.2) */
    {"h100", "concat", 3},
    {"h200-bf16", "concat", 5},
    {"h200-f16", "concat", 5},
    /* half tables (measured 2026-11-30 00:31 UTC, tree 345c2cb, every node
     * in the whole graph's layout): ShuffleNet's 1x1 convolutions after
     * its channel shuffle, [16,232,14,14] (both, 2.2x under) and f16's
     * [16,116,28,28] (2.1x), whose input the shuffle's reshape leaves NCHW
     * (a conversion the signature does not show, as the concats'; with
     * a relu the same convolutions take 4.5 and 8.0-8.6 us, not 8.3 and
     * 13.5-13.8),
     * MobileNet-V2's [16,32,28,28] -> 192 with its clip (2.2x under; its
     * batch-16 clips are all 1.4-2.2x under: the executor times cuBLASLt
     * with a clip pass against cuDNN's fused engines, and what it took is
     * not in the row) and VGG-16's 1x1 average pool of [16,512,7,7]
     * (2.2-2.4x under: the flatten's reshape reads its output NCHW, so it
     * converts its channels-last input; the strided 1x1 pools of
     * channels-last tensors run 3x faster a byte). The layout rows need
     * the conversion in the key or a measurement without it
     * (docs/costdb.md, "The fitted model") */
    {"h200-bf16", "conv2d/1x1", 2},
    {"h200-f16", "conv2d/1x1", 3},
    {"h200-bf16", "avgpool", 1},
    {"h200-f16", "avgpool", 1},
};

static int beyond_2x_allowed(const char *dv, const char *cls) {
  for (size_t i = 0; i < sizeof beyond_2x / sizeof *beyond_2x; i++)
    if (!strcmp(beyond_2x[i].dev, dv) && !strcmp(beyond_2x[i].cls, cls))
      return beyond_2x[i].max;
  return 0;
}

static void count_miss(void *u, const char *sig, int cls, double ms, double p) {
  cr_assert(sig && cls >= 0 && cls < CD_NCLASSES);
  cr_assert(fmax(p / ms, ms / p) > 2, "%s", sig);
  (*(int *)u)++;
}

/* The fitted model against every measured row of each committed table
 * (fitted on all of them): within 2x of the measurement, but for the
 * known rows above; the worst ratio per table is printed. "h200+mutants":
 * the H200's table with the mutants' measured table imported
 * (costdb/mutants/h200.tsv, what `optimize --db` reads to decide mutants),
 * fitted on both; "h200-bf16": the bf16 table (costdb/h200-bf16.tsv). */
Test(costdb, fit_within_2x_of_every_measured_row) {
  const char *dv[] = {"h100", "h200", "h200", "h200-bf16", "h200-f16"};
  const char *name[] = {"h100", "h200", "h200+mutants", "h200-bf16",
                        "h200-f16"};
  for (int k = 0; k < 5; k++) {
    char file[32];
    snprintf(file, sizeof file, "w%d.sqlite", k + 1);
    cd_db *db = open_db(tmp(file));
    base_diag d;
    cr_assert_eq(cd_set_tables(db, SRC "/costdb", &d), BASE_OK, "%s", d.msg);
    const char *mut = SRC "/costdb/mutants/h200.tsv";
    if (k == 2)
      cr_assert_eq(cd_import_tsv(db, &mut, 1, NULL, &d), BASE_OK, "%s", d.msg);
    cd_sample *s;
    int n;
    cr_assert_eq(cd_samples(db, dev(dv[k]), &s, &n, NULL, &d), BASE_OK);
    cd_fit f;
    cr_assert_eq(cd_fit_samples(s, n, NULL, &f, &d), BASE_OK);
    int beyond[CD_NCLASSES] = {0}, total = 0;
    double worst = 1;
    for (int i = 0; i < n; i++) {
      const double *c = f.op[s[i].op].c;
      double p = 0;
      for (int j = 0; j < CD_NFEAT; j++)
        p += c[j] * s[i].x[j];
      cr_assert_gt(p, 0);
      double r = fmax(p / s[i].ms, s[i].ms / p);
      worst = fmax(worst, r);
      if (r > 2) {
        beyond[s[i].op]++;
        total++;
      }
    }
    cr_log_info("%s: %d rows, worst predicted/measured ratio %.2f, %d rows "
                "beyond 2x",
                name[k], n, worst, total);
    /* cd_fit_beyond (`costdb fit --beyond 2`) lists the same rows */
    int listed = -1, called = 0;
    cr_assert_eq(
        cd_fit_beyond(db, dev(dv[k]), &f, 2, count_miss, &called, &listed, &d),
        BASE_OK, "%s", d.msg);
    cr_assert_eq(listed, total, "%s: %d listed", name[k], listed);
    cr_assert_eq(called, total);
    for (int o = 0; o < CD_NCLASSES; o++)
      if (beyond[o])
        cr_log_info("  %s %s: %d", name[k], cd_class_name(o), beyond[o]);
    for (int o = 0; o < CD_NCLASSES; o++)
      cr_expect_leq(beyond[o], beyond_2x_allowed(name[k], cd_class_name(o)),
                    "%s %s: %d rows beyond 2x", name[k], cd_class_name(o),
                    beyond[o]);
    free(s);
    cd_close(db);
  }
}
/* One measured row of signature sig on device devname (a table of that
 * row alone, in folder tag), as the fit sees it. */
static cd_sample one_sample(const char *tag, const char *devname,
                            const char *sig) {
  char text[512], file[300];
  const char *td = tmp(tag);
  cr_assert_eq(mkdir(td, 0755), 0);
  snprintf(file, sizeof file, "%s/%s.tsv", td, devname);
  snprintf(text, sizeof text, HDR "%s\t%s\t0.01\t0\t9\tgpu\t2026-11-29\n",
           devname, sig);
  write_file(file, text);
  char name[48];
  snprintf(name, sizeof name, "%s.sqlite", tag);
  cd_db *db = open_db(tmp(name));
  base_diag d;
  cr_assert_eq(cd_set_tables(db, td, &d), BASE_OK, "%s", d.msg);
  cd_sample *s, r;
  int n;
  cr_assert_eq(cd_samples(db, dev(devname), &s, &n, NULL, &d), BASE_OK, "%s",
               d.msg);
  cr_assert_eq(n, 1, "%s", sig);
  r = s[0];
  free(s);
  cd_close(db);
  return r;
}

/* The fit's features on hand-computed rows (docs/costdb.md, "The fitted
 * model"): x[1] the bytes moved (a slice's or gather's only what it
 * shows), x[3] the same bytes when they go through an irregular path
 * (an inner broadcast, runs that are not a multiple of 4 floats), else 0;
 * a conv2d with one input channel a group is its own class. */
Test(costdb, fit_features_of_hand_computed_rows) {
  static const struct {
    const char *sig;
    double bytes; /* moved, float32 */
    int irregular, cls;
  } row[] = {
      /* [C,1,1,1] over [C,K,1,1]: inner broadcast */
      {"ewmul a=[1024,2048,1,1] b=[1024,1,1,1]", 4.0 * (2 * 1024 * 2048 + 1024),
       1, IR_OP_EWMUL},
      /* runs of 128x128 floats: the float4 broadcast path */
      {"ewadd a=[16,12,128,128] b=[16,1,128,128]",
       4.0 * (2 * 16 * 12 * 128 * 128 + 16 * 128 * 128), 0, IR_OP_EWADD},
      /* runs of 49x49 */
      {"ewadd a=[16,64,3,49,49] b=[1,64,1,49,49]",
       4.0 * (2 * 16 * 64 * 3 * 49 * 49 + 64 * 49 * 49), 1, IR_OP_EWADD},
      /* a suffix: the contiguous path */
      {"ewadd a=[16,197,768] b=[768]", 4.0 * (2 * 16 * 197 * 768 + 768), 0,
       IR_OP_EWADD},
      /* runs of 55 floats; reads only the 15x64x56x55 it shows */
      {"slice x=[16,64,56,56] starts=[0,0,0,0] ends=[15,64,56,55]",
       8.0 * 15 * 64 * 56 * 55, 1, IR_OP_SLICE},
      /* one image of 16: one run of 64x56x56 */
      {"slice x=[16,64,56,56] starts=[15,0,0,0] ends=[16,64,56,56]",
       8.0 * 64 * 56 * 56, 0, IR_OP_SLICE},
      {"transpose x=[16,1024,14,14] perm=[1,2,0,3]", 8.0 * 16 * 1024 * 196, 1,
       IR_OP_TRANSPOSE}, /* runs of 14 */
      {"transpose x=[16,128,12,64] perm=[0,2,1,3]", 8.0 * 16 * 128 * 12 * 64, 0,
       IR_OP_TRANSPOSE}, /* runs of 64 */
      {"transpose x=[1000,2048] perm=[1,0]", 8.0 * 1000 * 2048, 1,
       IR_OP_TRANSPOSE}, /* the innermost axis moves */
      {"concat x0=[16,352,14,14] x1=[16,352,14,14] axis=3",
       16.0 * 16 * 352 * 196, 1, IR_OP_CONCAT}, /* runs of 14 */
      {"concat x0=[16,352,14,14] x1=[16,352,14,14] axis=1",
       16.0 * 16 * 352 * 196, 0, IR_OP_CONCAT},
      /* 16x128 rows of 768 of a 50257-row table, and the indices */
      {"gather data=[50257,768] indices=[16,128] axis=0",
       4.0 * (2 * 16 * 128 * 768 + 16 * 128), 0, IR_OP_GATHER},
      {"conv2d x=[16,88,14,14] w=[88,1,7,7] stride=[1,1] pad=[3,3,3,3] "
       "dilation=[1,1] groups=88 act=none",
       -1, 0, CD_CLASS_CONV_DEPTHWISE},
      {"conv2d x=[16,256,17,17] w=[256,128,1,7] stride=[1,1] pad=[0,3,0,3] "
       "dilation=[1,1] groups=2 act=none",
       -1, 0, CD_CLASS_CONV_GROUPED},
  };
  const cd_device *h200 = dev("h200");
  for (size_t k = 0; k < sizeof row / sizeof *row; k++) {
    char tag[32];
    snprintf(tag, sizeof tag, "feat%zu", k);
    cd_sample s = one_sample(tag, "h200", row[k].sig);
    cr_assert_eq(s.op, row[k].cls, "%s: class %s", row[k].sig,
                 cd_class_name(s.op));
    if (row[k].bytes > 0) {
      double x1 = 1e3 * row[k].bytes / h200->mem_bw;
      cr_assert_float_eq(s.x[1], x1, 1e-9 * x1, "%s: %g ms, want %g",
                         row[k].sig, s.x[1], x1);
    }
    cr_assert_eq(s.x[3], row[k].irregular ? s.x[1] : 0, "%s: x[3] %g",
                 row[k].sig, s.x[3]);
  }
}

/* Attention's terms (docs/costdb.md, "The fitted model"): x[2] the flops
 * of kflash.cu's padded tiles (64 query rows a block, keys in tiles of 64)
 * at the TF32 rate, x[3] the same where a row of q, k or v is not
 * contiguous (a head layout's k as [b,h,d,t]), x[4] the blocks an SM
 * (132 SMs) times the key tiles, in thousands. BERT's
 * heads read from Q, K and V merged in one [B,S,2304] tensor have the
 * features of the same heads read from three [B,S,768] tensors: the merge
 * the search weighs is priced by the matmuls alone (the heads in one
 * tensor were priced 22 us by the bytes-plus-flops fit where the separate
 * ones measured 13.7). */
Test(costdb, fit_features_of_attention) {
  static const struct {
    const char *sig;
    double flops, waves; /* padded tiles' flops; waves x key tiles */
    int gather;
  } row[] = {
      {"attention q=[16,128,768] k=[16,128,768] v=[16,128,768] s=[] guard=0 "
       "heads=12 cols=[0,0,0] hdim=[64,64]",
       16.0 * 12 * 128 * 128 * 256, 3 * 2, 0},
      {"attention q=[16,128,2304] k=[16,128,2304] v=[16,128,2304] s=[] "
       "guard=0 heads=12 cols=[1536,768,0] hdim=[64,64]",
       16.0 * 12 * 128 * 128 * 256, 3 * 2, 0},
      /* Swin's windows: 49 rows and keys in one 64 x 64 tile; 3072 blocks
       * over 132 SMs */
      {"attention q=[1024,3,49,32] k=[1024,3,32,49] v=[1024,3,49,32] s=[] "
       "b=[1,3,49,49] guard=0",
       1024.0 * 3 * 64 * 64 * 128, 24, 1},
      /* ViT's 197 tokens: 4 blocks a head (768: 6 an SM), 4 key tiles */
      {"attention q=[16,12,197,64] k=[16,12,64,197] v=[16,12,197,64] guard=0",
       16.0 * 12 * 256 * 256 * 256, 6 * 4, 1},
  };
  const cd_device *h200 = dev("h200");
  cd_sample s[4];
  for (int k = 0; k < 4; k++) {
    char tag[32];
    snprintf(tag, sizeof tag, "att%d", k);
    s[k] = one_sample(tag, "h200", row[k].sig);
    cr_assert_eq(s[k].op, IR_OP_ATTENTION);
    double x2 = 1e3 * row[k].flops / h200->tf32_flops;
    cr_assert_float_eq(s[k].x[2], x2, 1e-9 * x2, "%s: x[2] %g, want %g",
                       row[k].sig, s[k].x[2], x2);
    cr_assert_eq(s[k].x[3], row[k].gather ? s[k].x[2] : 0, "%s: x[3] %g",
                 row[k].sig, s[k].x[3]);
    cr_assert_float_eq(s[k].x[4], 1e-3 * row[k].waves, 1e-12, "%s: x[4] %g",
                       row[k].sig, s[k].x[4]);
  }
  for (int j = 0; j < CD_NFEAT; j++)
    cr_assert_float_eq(s[0].x[j], s[1].x[j], 1e-12, "x[%d]: %g and %g", j,
                       s[0].x[j], s[1].x[j]);
}

/* The fourth round's terms on hand-computed rows (docs/costdb.md, "The
 * fitted model"): x[5] the launches of the kernels the executor adds
 * beside the node's own, whose bytes x[1] counts too; x[3] of a half pool
 * its window reads one element at a time, of a float32 batch norm over planes
 * not a multiple of 4 floats its bytes, of a half depthwise convolution
 * over channels not a multiple of 8 its flops at the FP32 rate; x[4] the
 * bytes of a float32 operator with a scalar operand; x[0] a half
 * concat's one launch, a float32 concat's one launch a CXK_PARTS inputs. */
Test(costdb, fit_features_of_side_kernels) {
  enum { F = 4, H = 2 }; /* bytes an element */
  static const struct {
    const char *dev, *sig;
    double x0, bytes, side; /* launches; moved (x[1]); side launches */
    int x3;        /* 0: none, 1: x[1], 2: window reads, 3: FP32 flops, 4:
                      irregular bytes (the node's own, not its side's) */
    double x3_arg; /* the window, the flops or the bytes */
    int x4;        /* x[4] == x[1] */
  } row[] = {
      /* NASNet's stride-2 "same" padding: padded into scratch (float32:
       * one copy; half: zeros, then the input) */
      {"h200",
       "conv2d x=[16,88,28,28] w=[88,1,5,5] stride=[2,2] pad=[1,1,2,2] "
       "dilation=[1,1] groups=88 act=none",
       1,
       F * (16 * 88 * 784 + 88 * 25 + 16 * 88 * 196) +
           2.0 * F * 16 * 88 * 31 * 31,
       1, 0, 0, 0},
      {"h200-bf16",
       "conv2d x=bf16[16,88,28,28] w=bf16[88,1,5,5] stride=[2,2] "
       "pad=[1,1,2,2] dilation=[1,1] groups=88 act=none",
       1,
       H * (16 * 88 * 784 + 88 * 25 + 16 * 88 * 196) +
           2.0 * H * 16 * 88 * 31 * 31 + H * 16 * 88 * 784,
       2, 0, 0, 0},
      /* a half 1x1's clip after cuBLASLt's GEMM */
      {"h200-bf16",
       "conv2d x=bf16[16,32,28,28] w=bf16[192,32,1,1] b=bf16[192] "
       "stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=clip min=0 "
       "max=6",
       1,
       H * (16 * 32 * 784 + 192 * 32 + 192 + 16 * 192 * 784) +
           2.0 * H * 16 * 192 * 784,
       1, 0, 0, 0},
      /* 11 channels (channels-last): no pairs of halves, a copy an input,
       * runs of 22 bytes; the relu a pass of its own */
      {"h200-bf16",
       "concat x0=bf16[16,11,56,56] x1=bf16[16,11,56,56] axis=1 act=relu", 1,
       H * 4.0 * 16 * 11 * 3136 + 2.0 * H * 2 * 16 * 11 * 3136, 2, 4,
       H * 4.0 * 16 * 11 * 3136, 0},
      {"h200-bf16", "concat x0=bf16[16,88,14,14] x1=bf16[16,88,14,14] axis=1",
       1, H * 4.0 * 16 * 88 * 196, 0, 0, 0, 0},
      {"h200", "concat x0=[16,352,14,14] x1=[16,352,14,14] axis=1", 1,
       F * 4.0 * 16 * 352 * 196, 0, 0, 0, 0},
      /* nine inputs: two launches (eight a launch) */
      {"h200",
       "concat x0=[1,8,4,4] x1=[1,8,4,4] x2=[1,8,4,4] x3=[1,8,4,4] "
       "x4=[1,8,4,4] x5=[1,8,4,4] x6=[1,8,4,4] x7=[1,8,4,4] x8=[1,8,4,4] "
       "axis=1",
       2, F * 2.0 * 9 * 8 * 16, 0, 0, 0, 0},
      /* the exact gelu after the GEMM */
      {"h200", "matmul a=[16,128,768] b=[768,3072] bias=[3072] act=gelu", 1,
       F * (16 * 128 * 768 + 768 * 3072 + 3072 + 16 * 128 * 3072) +
           2.0 * F * 16 * 128 * 3072,
       1, 0, 0, 0},
      {"h200", "matmul a=[16,128,768] b=[768,3072] bias=[3072] act=relu", 1,
       F * (16 * 128 * 768 + 768 * 3072 + 3072 + 16 * 128 * 3072), 0, 0, 0, 0},
      /* pools: half over 44 channels reads each window element apart;
       * half over 64 channels: 8 a thread; float32: not counted */
      {"h200",
       "avgpool x=[16,44,28,28] kernel=[3,3] stride=[1,1] pad=[1,1,1,1] "
       "count_include_pad=0",
       1, F * 2.0 * 16 * 44 * 784, 0, 0, 0, 0},
      {"h200-bf16",
       "avgpool x=bf16[16,44,28,28] kernel=[3,3] stride=[1,1] pad=[1,1,1,1] "
       "count_include_pad=0",
       1, H * 2.0 * 16 * 44 * 784, 0, 2, 9, 0},
      {"h200-bf16",
       "avgpool x=bf16[16,64,28,28] kernel=[3,3] stride=[1,1] pad=[1,1,1,1] "
       "count_include_pad=0",
       1, H * 2.0 * 16 * 64 * 784, 0, 0, 0, 0},
      /* planes of 111 x 111 floats: the scalar kernel; 56 x 56: float4 */
      {"h200",
       "batchnorm x=[16,32,111,111] scale=[32] bias=[32] mean=[32] var=[32] "
       "eps=9.99999975e-06",
       1, F * (2.0 * 16 * 32 * 12321 + 4 * 32), 0, 1, 0, 0},
      {"h200",
       "batchnorm x=[16,32,56,56] scale=[32] bias=[32] mean=[32] var=[32] "
       "eps=9.99999975e-06",
       1, F * (2.0 * 16 * 32 * 3136 + 4 * 32), 0, 0, 0, 0},
      /* a scalar operand: one float a thread (float32), 16 bytes (half) */
      {"h200", "ewmul a=[16,128,3072] b=[]", 1, F * (2.0 * 16 * 128 * 3072 + 1),
       0, 0, 0, 1},
      {"h200-bf16", "ewmul a=bf16[16,128,3072] b=bf16[]", 1,
       H * (2.0 * 16 * 128 * 3072 + 1), 0, 0, 0, 0},
      /* kdwt.cu's tiles need channels a multiple of 8 */
      {"h200-bf16",
       "conv2d x=bf16[16,22,56,56] w=bf16[22,1,7,7] stride=[1,1] "
       "pad=[3,3,3,3] dilation=[1,1] groups=22 act=none",
       1, H * (2.0 * 16 * 22 * 3136 + 22 * 49), 0, 3, 16.0 * 22 * 3136 * 98, 0},
  };
  for (size_t k = 0; k < sizeof row / sizeof *row; k++) {
    const cd_device *v = dev(row[k].dev);
    char tag[32];
    snprintf(tag, sizeof tag, "side%zu", k);
    cd_sample s = one_sample(tag, row[k].dev, row[k].sig);
    const double *x = s.x;
    double x1 = 1e3 * row[k].bytes / v->mem_bw;
    cr_assert_float_eq(x[1], x1, 1e-9 * x1, "%s: x[1] %g, want %g", row[k].sig,
                       x[1], x1);
    cr_assert_eq(x[0], row[k].x0, "%s: x[0] %g", row[k].sig, x[0]);
    cr_assert_eq(x[5], row[k].side, "%s: x[5] %g", row[k].sig, x[5]);
    double x3 = row[k].x3 == 1 ? x[1]
                : row[k].x3 == 2
                    ? 1e3 * row[k].x3_arg * row[k].bytes / 2 / v->mem_bw
                : row[k].x3 == 3 ? 1e3 * row[k].x3_arg / v->fp32_flops
                : row[k].x3 == 4 ? 1e3 * row[k].x3_arg / v->mem_bw
                                 : 0;
    cr_assert_float_eq(x[3], x3, 1e-9 * x3, "%s: x[3] %g, want %g", row[k].sig,
                       x[3], x3);
    if (row[k].x3 == 3)
      cr_assert_eq(x[2], 0, "%s: x[2] %g", row[k].sig, x[2]);
    if (s.op < IR_NOPS && s.op != IR_OP_CONV2D && s.op != IR_OP_MATMUL)
      cr_assert_eq(x[4], row[k].x4 ? x[1] : 0, "%s: x[4] %g", row[k].sig,
                   x[4]); /* conv2d's, matmul's: fit_features_fifth_round */
  }
}

/* The third round's features on hand-computed rows (docs/costdb.md, "The
 * fitted model"): a dense convolution whose input channels are not
 * 16-byte runs (4 floats, 8 halves) has its flops at the FP32 rate in
 * x[3] and no TF32 term (x[2] 0); a softmax over its innermost axis, one
 * block a row, has x[4] = rows / 132 SMs x 1 us (in ms), 0 where the half
 * kernel packs rows (a multiple of 8 up to 2048) or along another axis. */
Test(costdb, fit_features_cuda_cores_and_softmax_waves) {
  static const struct {
    const char *sig;
    double fp32_flops; /* expected x[3] * FP32 peak / 1e3; 0: aligned */
    double rows;       /* expected x[4] * 132 / 1e-3 */
    int cls;
  } row[] = {
      /* ViT's patch embedding: 16 x 768 x 14 x 14 outputs, 3 x 16 x 16
       * products each */
      {"conv2d x=[16,3,224,224] w=[768,3,16,16] stride=[16,16] "
       "pad=[0,0,0,0] dilation=[1,1] groups=1 act=none",
       2.0 * 16 * 768 * 14 * 14 * 3 * 16 * 16, 0, IR_OP_CONV2D},
      /* 4 floats: 16 bytes, the tensor cores' path */
      {"conv2d x=[1,4,8,8] w=[16,4,3,3] stride=[1,1] pad=[1,1,1,1] "
       "dilation=[1,1] groups=1 act=none",
       0, 0, IR_OP_CONV2D},
      /* 4 halves: 8 bytes */
      {"conv2d x=bf16[1,4,8,8] w=bf16[16,4,3,3] stride=[1,1] pad=[1,1,1,1] "
       "dilation=[1,1] groups=1 act=none",
       2.0 * 16 * 64 * 4 * 9, 0, IR_OP_CONV2D},
      {"conv2d x=[1,6,8,8] w=[16,6,1,1] stride=[1,1] pad=[0,0,0,0] "
       "dilation=[1,1] groups=1 act=none",
       2.0 * 16 * 64 * 6, 0, CD_CLASS_CONV_1X1},
      /* Swin's windows: 1024 x 3 x 49 rows of 49 */
      {"softmax x=[1024,3,49,49] axis=3", 0, 1024.0 * 3 * 49, IR_OP_SOFTMAX},
      {"softmax x=bf16[16,12,49,49] axis=3", 0, 16.0 * 12 * 49, IR_OP_SOFTMAX},
      /* rows of 128 halves: 16 lanes a row, several rows a block */
      {"softmax x=bf16[16,12,128,128] axis=3", 0, 0, IR_OP_SOFTMAX},
      {"softmax x=[16,12,128,128] axis=2", 0, 0, IR_OP_SOFTMAX},
  };
  const cd_device *h200 = dev("h200");
  for (size_t k = 0; k < sizeof row / sizeof *row; k++) {
    char tag[32];
    snprintf(tag, sizeof tag, "feat5_%zu", k);
    cd_sample s = one_sample(tag, "h200", row[k].sig);
    cr_assert_eq(s.op, row[k].cls, "%s: class %s", row[k].sig,
                 cd_class_name(s.op));
    double x3 = 1e3 * row[k].fp32_flops / h200->fp32_flops;
    cr_assert_float_eq(s.x[3], x3, 1e-9 * x3, "%s: x[3] %g, want %g",
                       row[k].sig, s.x[3], x3);
    if (row[k].cls != IR_OP_SOFTMAX)
      cr_assert(row[k].fp32_flops > 0 ? s.x[2] == 0 : s.x[2] > 0, "%s: x[2] %g",
                row[k].sig, s.x[2]);
    double x4 = 1e-3 * row[k].rows / 132;
    if (row[k].cls == IR_OP_SOFTMAX) /* conv2d's: fit_features_fifth_round */
      cr_assert_float_eq(s.x[4], x4, 1e-9 * x4, "%s: x[4] %g, want %g",
                         row[k].sig, s.x[4], x4);
  }
}

/* The fifth round's features on hand-computed rows (issue 43; fit.c's
 * header, docs/costdb.md, "The fitted model"): x[4] a depthwise
 * convolution's taps, a k x k one's main-loop steps (taps x 32-channel
 * steps x waves of 128 x 64 output tiles), a 1x1's or a matmul's flag
 * (no plain GEMM; more than one row), each in thousands; a dense
 * convolution's flops those of whole waves of tiles (x[2]); a float32
 * convolution's bias or activation a launch of its own (x[5]; its bytes
 * but for a k x k); a half 1x1 whose rows are not 16 bytes its bytes
 * irregular; a half transpose to or from channels-last a copy; a float32
 * pad's serial steps (waves of a warp a row x 32-element steps of its
 * rows, in thousands). */
Test(costdb, fit_features_fifth_round) {
  enum { F = 4, H = 2 }; /* bytes an element */
  static const struct {
    const char *dev, *sig;
    int cls;
    double x4;    /* expected x[4] / 1e-3 */
    double flops; /* expected x[2] * TF32 peak / 1e3; < 0: not checked */
    double side;  /* expected x[5] */
    double bytes; /* expected x[1] * bandwidth / 1e3; 0: not checked */
    int x3;       /* 0: x[3] 0; 1: x[1]; -1: not checked */
  } row[] = {
      /* one channel in and out, groups 1: the depthwise kernel's */
      {"h200",
       "conv2d x=[1,1,14,2] w=[1,1,3,3] stride=[1,1] pad=[1,1,1,0] "
       "dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_DEPTHWISE, 9, -1, 1, 0, 0},
      {"h200",
       "conv2d x=[1,11,12,56] w=[11,1,7,7] stride=[1,1] pad=[0,3,0,3] "
       "dilation=[1,1] groups=11 act=none",
       CD_CLASS_CONV_DEPTHWISE, 49, -1, 0, 0, 0},
      /* a depthwise convolution's bias: kconv.cu's kernel adds it */
      {"h200",
       "conv2d x=[1,11,12,56] w=[11,1,7,7] b=[11] stride=[1,1] "
       "pad=[0,3,0,3] dilation=[1,1] groups=11 act=relu",
       CD_CLASS_CONV_DEPTHWISE, 49, -1, 0, 0, 0},
      /* 289 x 128 outputs: 3 x 2 tiles, one wave; 49 taps x 4 steps of
       * 32 channels */
      {"h200",
       "conv2d x=[1,128,17,17] w=[128,128,7,7] stride=[1,1] pad=[3,3,3,3] "
       "dilation=[1,1] groups=1 act=none",
       IR_OP_CONV2D, 196, 2.0 * 128 * 49 * 132 * 128 * 64, 0,
       F * (2.0 * 128 * 289 + 128 * 128 * 49), -1},
      /* the relu a kernel of its own; a k x k's bytes unchanged */
      {"h200",
       "conv2d x=[1,128,17,17] w=[128,128,7,7] stride=[1,1] pad=[3,3,3,3] "
       "dilation=[1,1] groups=1 act=relu",
       IR_OP_CONV2D, 196, (2.0 * 128 * 49 + 1) * 132 * 128 * 64, 1,
       F * (2.0 * 128 * 289 + 128 * 128 * 49), -1},
      /* 784 x 2048 outputs: 7 x 32 = 224 tiles, two waves */
      {"h200",
       "conv2d x=[16,512,7,7] w=[2048,512,1,1] stride=[1,1] pad=[0,0,0,0] "
       "dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, 2.0 * 512 * 2 * 132 * 128 * 64, 0, 0, 0},
      /* the seventh round's split-K: 49 x 512 outputs, 8 tiles; 16 copies
       * fit on the SMs, 2048 channels in 4 slices of 512: a wave's flops
       * over 4 */
      {"h200",
       "conv2d x=[1,2048,7,7] w=[512,2048,1,1] stride=[1,1] pad=[0,0,0,0] "
       "dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, 2.0 * 2048 * 132 * 128 * 64 / 4, 0, 0, 0},
      /* 784 x 512 outputs: 56 tiles, two copies: 2 slices */
      {"h200",
       "conv2d x=[16,2048,7,7] w=[512,2048,1,1] stride=[1,1] pad=[0,0,0,0] "
       "dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, 2.0 * 2048 * 132 * 128 * 64 / 2, 0, 0, 0},
      /* 512 channels: one slice, a whole wave */
      {"h200",
       "conv2d x=[1,512,7,7] w=[2048,512,1,1] stride=[1,1] pad=[0,0,0,0] "
       "dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, 2.0 * 512 * 132 * 128 * 64, 0, 0, 0},
      /* half: not split */
      {"h200-bf16",
       "conv2d x=bf16[1,2048,7,7] w=bf16[512,2048,1,1] stride=[1,1] "
       "pad=[0,0,0,0] dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, 2.0 * 2048 * 132 * 128 * 64, 0, 0, 0},
      /* strided: cuDNN's engines, no plain GEMM */
      {"h200",
       "conv2d x=[1,256,56,56] w=[512,256,1,1] stride=[2,2] pad=[0,0,0,0] "
       "dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 1, -1, 0, 0, 0},
      /* a float32 1x1's bias: a pass over the output */
      {"h200",
       "conv2d x=[16,16,112,112] w=[96,16,1,1] b=[96] stride=[1,1] "
       "pad=[0,0,0,0] dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, -1, 1,
       F * (16.0 * 16 * 12544 + 96 * 16 + 96 + 3 * 16.0 * 96 * 12544), 0},
      /* half: the bias in cuBLASLt's epilogue; rows of 11 halves */
      {"h200-bf16",
       "conv2d x=bf16[16,32,111,111] w=bf16[11,32,1,1] b=bf16[11] "
       "stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, -1, 0,
       H * (16.0 * 32 * 12321 + 11 * 32 + 11 + 16.0 * 11 * 12321), 1},
      {"h200-bf16",
       "conv2d x=bf16[16,32,56,56] w=bf16[64,32,1,1] stride=[1,1] "
       "pad=[0,0,0,0] dilation=[1,1] groups=1 act=none",
       CD_CLASS_CONV_1X1, 0, -1, 0, 0, 0},
      {"h200", "matmul a=[1,128] b=[128,128] act=none", IR_OP_MATMUL, 0, -1, 0,
       0, 0},
      {"h200", "matmul a=[16,128] b=[128,128] act=none", IR_OP_MATMUL, 1, -1, 0,
       0, 0},
      {"h200", "matmul a=[1,12,128,64] b=[1,12,64,128] act=none", IR_OP_MATMUL,
       1, -1, 0, 0, 0},
      /* channels-last to NCHW and back: half copies, float32 transposes */
      {"h200-bf16", "transpose x=bf16[16,96,56,56] perm=[0,2,3,1]",
       IR_OP_TRANSPOSE, 0, -1, 0, 0, 0},
      {"h200-bf16", "transpose x=bf16[16,56,56,96] perm=[0,3,1,2]",
       IR_OP_TRANSPOSE, 0, -1, 0, 0, 0},
      {"h200", "transpose x=[16,96,56,56] perm=[0,2,3,1]", IR_OP_TRANSPOSE, 0,
       -1, 0, 0, 1},
      {"h200-bf16", "transpose x=bf16[1000,768] perm=[1,0]", IR_OP_TRANSPOSE, 0,
       -1, 0, 0, 1},
      /* runs of 196 elements: 49 x 16 bytes of floats, not of halves */
      {"h200-bf16", "transpose x=bf16[16,2,116,14,14] perm=[0,2,1,3,4]",
       IR_OP_TRANSPOSE, 0, -1, 0, 0, 1},
      {"h200", "transpose x=[16,2,116,14,14] perm=[0,2,1,3,4]", IR_OP_TRANSPOSE,
       0, -1, 0, 0, 0},
      /* a float32 pad's rows a warp each, 32 elements a step: 49 rows of
       * 768 (one wave of warps) take 24 steps */
      {"h200", "pad x=[1,7,7,768] pads=[0,0,0,0,0,0,0,0] value=0", IR_OP_PAD,
       24, -1, 0, F * 2.0 * 49 * 768, 0},
      /* 36,864 rows of 35: five waves of 8448 warps, two steps each */
      {"h200", "pad x=[16,64,35,35] pads=[0,0,0,0,0,0,1,0] value=0", IR_OP_PAD,
       10, -1, 0, 0, 0},
      /* rows of 14: an element a thread; a half pad: fill, then copy */
      {"h200", "pad x=[1,64,13,13] pads=[0,0,0,0,0,0,1,0] value=0", IR_OP_PAD,
       0, -1, 0, 0, 0},
      {"h200-bf16", "pad x=bf16[1,7,7,768] pads=[0,0,0,0,0,0,0,0] value=0",
       IR_OP_PAD, 0, -1, 0, 0, 0},
  };
  for (size_t k = 0; k < sizeof row / sizeof *row; k++) {
    const cd_device *v = dev(row[k].dev);
    char tag[32];
    snprintf(tag, sizeof tag, "fifth%zu", k);
    cd_sample s = one_sample(tag, row[k].dev, row[k].sig);
    cr_assert_eq(s.op, row[k].cls, "%s: class %s", row[k].sig,
                 cd_class_name(s.op));
    cr_assert_float_eq(s.x[4], 1e-3 * row[k].x4, 1e-12, "%s: x[4] %g",
                       row[k].sig, s.x[4]);
    double x2 = 1e3 * row[k].flops / v->tf32_flops;
    if (row[k].flops >= 0)
      cr_assert_float_eq(s.x[2], x2, 1e-9 * x2, "%s: x[2] %g, want %g",
                         row[k].sig, s.x[2], x2);
    cr_assert_eq(s.x[5], row[k].side, "%s: x[5] %g", row[k].sig, s.x[5]);
    double x1 = 1e3 * row[k].bytes / v->mem_bw;
    if (row[k].bytes > 0)
      cr_assert_float_eq(s.x[1], x1, 1e-9 * x1, "%s: x[1] %g, want %g",
                         row[k].sig, s.x[1], x1);
    if (row[k].x3 >= 0)
      cr_assert_eq(s.x[3], row[k].x3 ? s.x[1] : 0, "%s: x[3] %g", row[k].sig,
                   s.x[3]);
  }
}

/* CSRNet (batch 1; no operator of it in either table): the fitted model
 * prices it within 2x of the 0.2896 ms its graph measured on an H200
 * (docs/notes/results.md, "src/gpu in layers"), and the H200 (the H100's
 * compute, more bandwidth) no dearer than the H100. Before the wave
 * feature of dense convolutions the H200's fit said 1.95 ms, as its table
 * (batch 1 only) extrapolated small kernels' throughput to large ones. */
Test(costdb, fit_prices_csrnet_near_its_measurement) {
  base_diag d;
  ir_graph *g = ir_parse_file(SRC "/models/csrnet.graph", &d);
  cr_assert(g, "%s", d.msg);
  cd_db *db = open_db(tmp("csr.sqlite"));
  cr_assert_eq(cd_set_tables(db, SRC "/costdb", &d), BASE_OK, "%s", d.msg);
  double us[2];
  const char *dv[] = {"h100", "h200"};
  for (int k = 0; k < 2; k++) {
    cd_model m;
    cd_model_init(&m, db, dev(dv[k]));
    cr_assert_eq(cd_model_fit(&m, &d), BASE_OK, "%s", d.msg);
    int est = 0;
    us[k] = sum_cost(g, cd_model_cost, &m, &est);
    cr_assert(est, "%s: csrnet is not in the table", dv[k]);
    cr_log_info("csrnet fitted on %s: %.1f us", dv[k], us[k]);
  }
  cr_assert(us[1] > 289.6 / 2 && us[1] < 289.6 * 2, "h200: %.1f us", us[1]);
  /* within 10%: the H200's table has the transformers' rows (batch 16
   * element-wise and data movement) that move its fit; it priced CSRNet
   * at 542 us against the H100's 510 after they came (289.6 measured) */
  cr_assert_leq(us[1], us[0] * 1.1, "h200 %.1f us, h100 %.1f us", us[1], us[0]);
  ir_graph_free(g);
  cd_close(db);
}

Test(costdb, tables_imported_on_first_use_and_when_changed) {
  ir_graph *g = resnet();
  char sig[CD_SIG_MAX], text[CD_SIG_MAX + 256];
  cd_node_sig(g, 0, sig, sizeof sig);
  const char *tdir = tmp("tables");
  cr_assert_eq(mkdir(tdir, 0755), 0);
  snprintf(text, sizeof text, HDR "h100\t%s\t0.5\t0\t9\tgpu\t2025-01-01\n",
           sig);
  write_file(tmp("tables/h100.tsv"), text);
  const char *p = tmp("tables.sqlite");
  base_diag d;
  cd_db *db = open_db(p);
  cr_assert_eq(cd_set_tables(db, tdir, &d), BASE_OK);
  double ms;
  int est;
  cr_assert_eq(cd_node_cost(db, dev("h100"), g, 0, &ms, &est, &d), BASE_OK,
               "%s", d.msg);
  cr_assert(!est && ms == 0.5, "table not imported: %g %d", ms, est);
  cr_assert_eq(cd_node_cost(db, dev("h200"), g, 0, &ms, &est, &d), BASE_OK);
  cr_assert(est, "no h200 table: estimated");
  cd_stat st[8];
  int n;
  cr_assert_eq(cd_stats(db, st, 8, &n, &d), BASE_OK);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(st[0].device, "h100");
  cr_assert_eq(st[0].rows, 1);
  cr_assert_eq(st[0].imported, 1);
  cr_assert_str_eq(st[0].table, "h100.tsv");
  cd_close(db);
  /* same content: not imported again (a local row stays) */
  db = open_db(p);
  cd_entry local = {0.7, 0, 1, "cuda-exec", "gpu", "2025-06-01"};
  cr_assert_eq(cd_put(db, "h100", sig, &local, &d), BASE_OK);
  cr_assert_eq(cd_set_tables(db, tdir, &d), BASE_OK);
  cr_assert_eq(cd_node_cost(db, dev("h100"), g, 0, &ms, &est, &d), BASE_OK);
  cr_assert_eq(ms, 0.7);
  cd_close(db);
  /* new content, newer measurement: imported */
  snprintf(text, sizeof text, HDR "h100\t%s\t0.3\t0\t9\tgpu\t2025-07-01\n",
           sig);
  write_file(tmp("tables/h100.tsv"), text);
  db = open_db(p);
  cr_assert_eq(cd_set_tables(db, tdir, &d), BASE_OK);
  cr_assert_eq(cd_node_cost(db, dev("h100"), g, 0, &ms, &est, &d), BASE_OK);
  cr_assert_eq(ms, 0.3);
  cd_close(db);
  /* a broken table is an error with its position, not a silent estimate */
  write_file(tmp("tables/h100.tsv"),
             HDR "h100\trelu x=[1]\tx\t0\t1\tg\t2025-01-01\n");
  db = open_db(p);
  cr_assert_eq(cd_set_tables(db, tdir, &d), BASE_OK);
  cr_assert_neq(cd_node_cost(db, dev("h100"), g, 0, &ms, &est, &d), BASE_OK);
  cr_assert_eq(d.line, 2);
  cd_close(db);
  ir_graph_free(g);
}

Test(costdb, default_path_from_environment) {
  char buf[512];
  base_diag d;
  setenv("SUPEROPT_COSTDB", tmp("env/x.sqlite"), 1);
  cr_assert_eq(cd_default_path(buf, sizeof buf, &d), BASE_OK, "%s", d.msg);
  cr_assert_str_eq(buf, tmp("env/x.sqlite"));
  unsetenv("SUPEROPT_COSTDB");
  setenv("XDG_CACHE_HOME", tmp("cache"), 1);
  cr_assert_eq(cd_default_path(buf, sizeof buf, &d), BASE_OK, "%s", d.msg);
  char want[512];
  snprintf(want, sizeof want, "%s/superopt/costdb.sqlite", tmp("cache"));
  cr_assert_str_eq(buf, want);
  cd_close(open_db(buf)); /* the folder was created */
}

/* Writes proc/driver/nvidia/gpus/<bus>/information with model's line
 * (NULL: a file without one) under the test's folder. */
static void fake_gpu(const char *bus, const char *model) {
  char path[512], text[256];
  snprintf(path, sizeof path, "mkdir -p '%s/proc/driver/nvidia/gpus/%s'", dir,
           bus);
  cr_assert_eq(system(path), 0);
  snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%s/information", dir,
           bus);
  snprintf(text, sizeof text, "%s\nIRQ:\t\t 42\n",
           model ? model : "Bus Location:\t 0000:18:00.0");
  write_file(path, text);
}

/* The default device: the CPU without an NVIDIA driver's GPU list, else
 * the GPU's model (the lowest bus id), the H100's for a GPU without one;
 * why says which. */
Test(costdb, default_device_is_the_gpu_present_else_the_cpu) {
  char why[160], root[128];
  snprintf(root, sizeof root, "%s/proc", dir);
  const cd_device *v = cd_device_default(root, why, sizeof why);
  cr_assert_str_eq(v->name, "cpu");
  cr_assert_str_eq(why, "no GPU on this machine");
  fake_gpu("0000:3b:00.0", "Model:\t\t NVIDIA H100 80GB HBM3");
  fake_gpu("0000:18:00.0", "Model:\t\t NVIDIA H200");
  v = cd_device_default(root, why, sizeof why);
  cr_assert_str_eq(v->name, "h200");
  cr_assert_str_eq(why, "the GPU present, NVIDIA H200");
  fake_gpu("0000:01:00.0", "Model:\t\t NVIDIA A100-SXM4-80GB");
  v = cd_device_default(root, why, sizeof why);
  cr_assert_str_eq(v->name, "h100");
  cr_assert(strstr(why, "NVIDIA A100-SXM4-80GB, has no cost model"), "%s", why);
  fake_gpu("0000:00:00.0", NULL);
  v = cd_device_default(root, why, sizeof why);
  cr_assert_str_eq(v->name, "h100");
  cr_assert(strstr(why, "an NVIDIA GPU"), "%s", why);
  cr_assert_str_eq(cd_device_for_gpu("NVIDIA H100 PCIe")->name, "h100");
  cr_assert_null(cd_device_for_gpu("Tesla V100-SXM2-16GB"));
}

/* As a runtime runs a graph: weight preprocessing over weights with values
 * is folded at load (free), over weights without values it runs every
 * time (priced, and counted). */
Test(costdb, runtime_cost_prices_preprocessing_of_input_weights) {
  static const float ones[4] = {1, 1, 1, 1};
  ir_graph *g = parse("input x: [1,4,8,8]\nweight w: [4,4,1,1]\n"
                      "weight s: [4,1,1,1]\nk = ewmul(w, s)\n"
                      "y = conv2d(x, k)\noutput y\n");
  double plain, run, conv;
  int kept = -1, est = 0;
  base_diag d;
  plain = sum_cost(g, cd_model_cost, NULL, NULL);
  conv = model_cost(NULL, g, 1, NULL);
  cr_assert_float_eq(plain, conv, 1e-9, "cd_sum_cost skips ewmul(w, s)");
  cr_assert_eq(
      cd_sum_cost_runtime(g, cd_model_cost, NULL, &run, &est, &kept, &d),
      BASE_OK);
  cr_assert_eq(kept, 1);
  cr_assert_eq(est, 1);
  cr_assert_float_eq(run, conv + model_cost(NULL, g, 0, NULL), 1e-9);
  cr_assert_gt(run, plain);
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i].kind == IR_T_WEIGHT)
      g->tensors[i].data = ones;
  cr_assert_eq(
      cd_sum_cost_runtime(g, cd_model_cost, NULL, &run, NULL, &kept, &d),
      BASE_OK);
  cr_assert_eq(kept, 0, "initializers: folded at load");
  cr_assert_float_eq(run, plain, 1e-9);
  ir_graph_free(g);
}

/* A lowered convolution (a residual input and act=relu, src/fuse/lower.h)
 * without a measurement of its own costs its plain form's measurement plus
 * what the roofline adds for reading the residual and the activation. */
Test(costdb, lowered_conv_priced_from_its_plain_form) {
  cd_db *db = open_db(tmp("lowered.sqlite"));
  ir_graph *g = parse("input x: [1,8,6,6]\nweight w: [8,8,3,3]\n"
                      "weight b: [8]\n"
                      "y = conv2d(x, w, b, x) act=relu\noutput y\n");
  ir_graph *p = parse("input x: [1,8,6,6]\nweight w: [8,8,3,3]\n"
                      "weight b: [8]\ny = conv2d(x, w, b)\noutput y\n");
  const cd_device *h = dev("h100");
  base_diag d;
  char sig[CD_SIG_MAX];
  cd_node_sig(p, 0, sig, sizeof sig);
  double ep = cd_estimate(h, p, 0), eg = cd_estimate(h, g, 0);
  cr_assert_gt(eg, ep, "the residual read and the relu cost something");
  cd_entry e = {3 * ep, 0, 5, "test", "", "2025-01-02"};
  cr_assert_eq(cd_put(db, "h100", sig, &e, &d), BASE_OK, "%s", d.msg);
  cd_model m;
  cd_model_init(&m, db, h);
  int est = -1;
  cr_assert_float_eq(model_cost(&m, g, 0, &est), 1000 * (3 * ep + eg - ep),
                     1e-9);
  cr_assert_eq(est, 0, "the plain form is measured");
  ir_graph_free(g);
  ir_graph_free(p);
  cd_close(db);
}

/* cd_model_cost_bound: a fused node without a row at the dearer of the
 * fit and the roofline (rows measured at a tenth of the roofline make the
 * fit cheaper than it), a measured fused node and any other estimated node
 * as cd_model_cost prices them. */
Test(costdb, bound_prices_unmeasured_fused_nodes_at_least_at_the_roofline) {
  cd_db *db = open_db(tmp("bound.sqlite"));
  const cd_device *h = dev("h100");
  base_diag d;
  for (int k = 1; k <= 6; k++) { /* relu rows at a tenth of the roofline */
    char src[96], sig[CD_SIG_MAX];
    snprintf(src, sizeof src, "input x: [1,%d,32,32]\ny = relu(x)\noutput y\n",
             8 * k);
    ir_graph *r = parse(src);
    cd_node_sig(r, 0, sig, sizeof sig);
    cd_entry e = {0.1 * cd_estimate(h, r, 0), 0, 5, "test", "", "2025-01-02"};
    cr_assert_eq(cd_put(db, "h100", sig, &e, &d), BASE_OK, "%s", d.msg);
    ir_graph_free(r);
  }
  ir_graph *g = parse("input x: [1,16,32,32]\nweight b: [16,1,1]\n"
                      "y = fused(x, b) { a = ewadd($0, $1); r = relu(a) }\n"
                      "z = ewmul(y, x)\noutput z\n");
  cd_model m;
  cd_model_init(&m, db, h);
  cr_assert_eq(cd_model_fit(&m, &d), BASE_OK, "%s", d.msg);
  int est = -1;
  double fit = model_cost(&m, g, 0, &est), roof = 1000 * cd_estimate(h, g, 0);
  cr_assert_eq(est, 1);
  cr_assert_lt(fit, roof, "the fit flatters the fused node here");
  double c = 0;
  cr_assert_eq(cd_model_cost_bound(&m, g, 0, &c, &est, &d), BASE_OK);
  cr_assert_float_eq(c, roof, 1e-9);
  cr_assert_eq(est, 1);
  /* another estimated operator: as cd_model_cost */
  cr_assert_eq(cd_model_cost_bound(&m, g, 1, &c, &est, &d), BASE_OK);
  cr_assert_float_eq(c, model_cost(&m, g, 1, NULL), 1e-9);
  /* the fused node measured: its row */
  char sig[CD_SIG_MAX];
  cd_node_sig(g, 0, sig, sizeof sig);
  cd_entry e = {0.5 * fit / 1000, 0, 5, "test", "", "2025-01-02"};
  cr_assert_eq(cd_put(db, "h100", sig, &e, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(cd_model_cost_bound(&m, g, 0, &c, &est, &d), BASE_OK);
  cr_assert_float_eq(c, 0.5 * fit, 1e-9);
  cr_assert_eq(est, 0);
  ir_graph_free(g);
  cd_close(db);
}

/* A half node without a row (a graph already in bf16: after optimize's
 * dtype stage, or a bf16 model), and a float32 node of the search as its
 * bf16 form, are predicted by the fit over the half device's rows at its
 * rates, not by the float32 fit: cd_model_fit fits both once
 * cd_model_set_half named a half device with rows. The bf16
 * rows here are 1/40 of the float32 ones; BERT-base's bf16 attention at
 * batch 16 was priced 21.9 us by the float32 fit, 6.8 us by the bf16
 * rows' fit, 8.7 us measured (2026-11-30), and fusion refused it. */
Test(costdb, half_fit_prices_unmeasured_half_nodes) {
  char tables[300];
  snprintf(tables, sizeof tables, "%s/tables", dir);
  cr_assert_eq(mkdir(tables, 0755), 0);
  char *f32 = NULL, *b16 = NULL;
  size_t nf = 0, nb = 0;
  FILE *a = open_memstream(&f32, &nf), *b = open_memstream(&b16, &nb);
  fputs(HDR, a);
  fputs(HDR, b);
  for (int k = 1; k <= 64; k *= 2) {
    fprintf(a, "h200\trelu x=[%d,4096]\t%g\t0\t3\t\t2026-11-30\n", k * 64,
            0.01 * k);
    fprintf(b, "h200-bf16\trelu x=bf16[%d,4096]\t%g\t0\t3\t\t2026-11-30\n",
            k * 64, 0.00025 * k);
  }
  fclose(a);
  fclose(b);
  write_file(tmp("tables/h200.tsv"), f32);
  write_file(tmp("tables/h200-bf16.tsv"), b16);
  free(f32);
  free(b16);
  ir_graph *g = parse("input x: bf16[3000,4096]\n"
                      "r = relu(x)\n"
                      "output r\n");
  cd_db *db = open_db(tmp("halffit.sqlite"));
  base_diag d;
  cr_assert_eq(cd_set_tables(db, tables, &d), BASE_OK, "%s", d.msg);
  cd_model m;
  cd_model_init(&m, db, cd_device_find("h200", &d));
  cr_assert_eq(cd_model_fit(&m, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(m.half_fitted, 0);
  int est = 0;
  double by_f32 = model_cost(&m, g, 0, &est);
  cr_assert_eq(est, 1);
  char name[64];
  cd_model_set_half(&m, IR_DT_BF16, name, sizeof name);
  cr_assert_eq(cd_model_fit(&m, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(m.half_fitted, 1);
  double by_half = model_cost(&m, g, 0, &est);
  cr_assert_eq(est, 1);
  cr_assert_float_eq(
      by_half, 1000 * cd_fit_predict(&m.half_fit, m.half_dev, g, 0), 1e-9);
  cr_assert_lt(by_half, by_f32 / 10, "half fit %g us, float32 fit %g us",
               by_half, by_f32);
  /* the search's float32 node: priced as its bf16 form by the same fit */
  ir_graph *f = parse("input x: [3000,4096]\n"
                      "r = relu(x)\n"
                      "output r\n");
  cr_assert_float_eq(model_cost(&m, f, 0, &est), by_half, 1e-9);
  cr_assert_eq(est, 1);
  ir_graph_free(f);
  ir_graph_free(g);
  cd_close(db);
}

/* optimize --dtype bf16 on h200 (cd_model_set_half): the tables folder's
 * h200-bf16.tsv is imported on first use, and a float32 node (the search
 * runs on float32 graphs) takes that table's row of its bf16 signature
 * before h200's row of its own; exp, kept in float32 by the half policy,
 * is looked up with float32 inputs (layernorm, half, with bf16 ones);
 * without a bf16 row, h200's. */
/* A table whose new version drops a row: the row goes with it (a cache
 * database kept across updates fitted rows the table no longer had: 2,382
 * h200-bf16 rows against the table's 2,045 on 2026-11-30), while a row
 * measured here and one `costdb import` brought from a file of the same
 * name stay. */
Test(costdb, table_rows_dropped_with_the_table) {
  ir_graph *g = resnet();
  char sig[3][CD_SIG_MAX], text[3 * CD_SIG_MAX + 512];
  for (int i = 0; i < 3; i++)
    cd_node_sig(g, i, sig[i], sizeof sig[i]);
  cr_assert(strcmp(sig[0], sig[1]) && strcmp(sig[0], sig[2]) &&
            strcmp(sig[1], sig[2]));
  const char *tdir = tmp("drop"), *idir = tmp("dropimp");
  cr_assert_eq(mkdir(tdir, 0755), 0);
  cr_assert_eq(mkdir(idir, 0755), 0);
  snprintf(text, sizeof text,
           HDR "h100\t%s\t0.5\t0\t9\tgpu\t2025-01-01\n"
               "h100\t%s\t0.6\t0\t9\tgpu\t2025-01-01\n",
           sig[0], sig[1]);
  write_file(tmp("drop/h100.tsv"), text);
  snprintf(text, sizeof text, HDR "h100\t%s\t0.8\t0\t9\tgpu\t2025-01-01\n",
           sig[2]);
  write_file(tmp("dropimp/h100.tsv"), text);
  const char *imp = tmp("dropimp/h100.tsv");
  base_diag d;
  cd_db *db = open_db(tmp("drop.sqlite"));
  cr_assert_eq(cd_set_tables(db, tdir, &d), BASE_OK);
  double ms;
  int est;
  cr_assert_eq(cd_node_cost(db, dev("h100"), g, 1, &ms, &est, &d), BASE_OK);
  cr_assert(!est && ms == 0.6);
  cr_assert_eq(cd_import_tsv(db, &imp, 1, NULL, &d), BASE_OK, "%s", d.msg);
  cd_close(db);
  /* the table's next version: row 1 dropped, row 0 measured again */
  snprintf(text, sizeof text, HDR "h100\t%s\t0.4\t0\t9\tgpu\t2025-02-01\n",
           sig[0]);
  write_file(tmp("drop/h100.tsv"), text);
  db = open_db(tmp("drop.sqlite"));
  cr_assert_eq(cd_set_tables(db, tdir, &d), BASE_OK);
  cr_assert_eq(cd_node_cost(db, dev("h100"), g, 0, &ms, &est, &d), BASE_OK);
  cr_assert(!est && ms == 0.4, "%g %d", ms, est);
  cr_assert_eq(cd_node_cost(db, dev("h100"), g, 1, &ms, &est, &d), BASE_OK);
  cr_assert(est, "the dropped row stayed: %g", ms);
  cr_assert_eq(cd_node_cost(db, dev("h100"), g, 2, &ms, &est, &d), BASE_OK);
  cr_assert(!est && ms == 0.8, "the imported row went: %g %d", ms, est);
  cd_stat st[4];
  int n;
  cr_assert_eq(cd_stats(db, st, 4, &n, &d), BASE_OK);
  cr_assert_eq(n, 1);
  cr_assert_eq(st[0].rows, 2);
  cr_assert_eq(st[0].imported, 2);
  cd_close(db);
  ir_graph_free(g);
}

Test(costdb, half_table_row_comes_first) {
  char tables[300];
  snprintf(tables, sizeof tables, "%s/tables", dir);
  cr_assert_eq(mkdir(tables, 0755), 0);
  write_file(tmp("tables/h200.tsv"),
             HDR "h200\trelu x=[2,64]\t0.5\t0\t3\t\t2026-11-29\n"
                 "h200\tsigmoid x=[2,64]\t0.25\t0\t3\t\t2026-11-29\n");
  write_file(tmp("tables/h200-bf16.tsv"),
             HDR "h200-bf16\trelu x=bf16[2,64]\t0.125\t0\t3\t\t2026-11-29\n"
                 "h200-bf16\texp x=[2,64]\t0.0625\t0\t3\t\t2026-11-29\n");
  ir_graph *g = parse("input x: [2,64]\n"
                      "r = relu(x)\n"
                      "s = sigmoid(r)\n"
                      "n = exp(s)\n"
                      "l = layernorm(n)\n"
                      "output l\n");
  char sig[CD_SIG_MAX];
  cd_node_sig_as(g, 0, IR_DT_BF16, sig, sizeof sig);
  cr_assert_str_eq(sig, "relu x=bf16[2,64]");
  cd_node_sig_as(g, 2, IR_DT_BF16, sig, sizeof sig);
  cr_assert_str_eq(sig, "exp x=[2,64]");
  cd_node_sig_as(g, 3, IR_DT_BF16, sig, sizeof sig);
  cr_assert_str_eq(sig, "layernorm x=bf16[2,64] axis=1 eps=9.99999975e-06");
  cd_db *db = open_db(tmp("half.sqlite"));
  base_diag d;
  cr_assert_eq(cd_set_tables(db, tables, &d), BASE_OK, "%s", d.msg);
  cd_model m;
  cd_model_init(&m, db, cd_device_find("h200", &d));
  int est = -1;
  cr_assert_float_eq(model_cost(&m, g, 0, &est), 500.0, 1e-9);
  char name[64];
  cd_model_set_half(&m, IR_DT_BF16, name, sizeof name);
  cr_assert_str_eq(name, "h200-bf16");
  cr_assert_float_eq(model_cost(&m, g, 0, &est), 125.0, 1e-9);
  cr_assert_eq(est, 0);
  cr_assert_float_eq(model_cost(&m, g, 1, &est), 250.0, 1e-9);
  cr_assert_float_eq(model_cost(&m, g, 2, &est), 62.5, 1e-9);
  cr_assert_eq(est, 0);
  /* no rows of f16 for the device, rows of bf16: f16 nodes priced by the
   * bf16 rows of their bf16 signatures (one tensor-core rate, the same
   * bytes), not by float32's */
  cd_model_set_half(&m, IR_DT_F16, name, sizeof name);
  cr_assert_str_eq(name, "h200-bf16");
  cr_assert_eq(m.half, IR_DT_F16);
  cr_assert_eq(m.half_as, IR_DT_BF16);
  cr_assert_float_eq(model_cost(&m, g, 0, &est), 125.0, 1e-9);
  cr_assert_eq(est, 0);
  /* neither half table (h100): the f16 device, which has no rows: the
   * float32 rows and the fit price every node */
  cd_model_init(&m, db, cd_device_find("h100", &d));
  cd_model_set_half(&m, IR_DT_F16, name, sizeof name);
  cr_assert_str_eq(name, "h100-f16");
  cr_assert_eq(m.half_as, IR_DT_F16);
  cd_model_init(&m, db, cd_device_find("cpu", &d));
  cd_model_set_half(&m, IR_DT_BF16, name, sizeof name);
  cr_assert_str_eq(name, "");
  cr_assert_null(m.half_dev);
  ir_graph_free(g);
  cd_close(db);
}
