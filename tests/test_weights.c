/* test_weights.c: the safetensors sidecar of a .graph (src/ir/weights.c).
 *
 * Writes a graph's weight values, reads them into a fresh parse of the same
 * graph and writes them again: the two files are byte-identical and the
 * values equal. Reads a file laid out as another writer would (other key
 * order, metadata, unpadded header). Malformed files and mismatches with the
 * graph are errors naming the file and the problem, and leave the graph's
 * weights untouched.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/ir.h"

static const char graph_text[] = "graph g\n"
                                 "input x: [1,2]\n"
                                 "weight w: [2,3]\n"
                                 "weight b: [3]\n"
                                 "weight s: []\n"
                                 "y = matmul(x, w, b)\n"
                                 "z = smul(y, s)\n"
                                 "output z\n";

static ir_graph *parse(void) {
  base_diag d;
  ir_graph *g = ir_parse(graph_text, strlen(graph_text), "g.graph", &d);
  cr_assert(g, "%s", d.msg);
  return g;
}

static void set_values(ir_graph *g, const char *name, float first) {
  int t = ir_find_tensor(g, name);
  cr_assert(t >= 0);
  int64_t n = ir_shape_numel(&g->tensors[t].shape);
  float *v = base_arena_alloc(g->arena, (size_t)n * sizeof *v + 1);
  cr_assert(v);
  for (int64_t i = 0; i < n; i++)
    v[i] = first + 0.25f * (float)i;
  g->tensors[t].data = v;
}

static char *tmp_path(void) {
  char *p = strdup("/tmp/test_weights_XXXXXX");
  int fd = mkstemp(p);
  cr_assert(fd >= 0);
  close(fd);
  return p;
}

static char *slurp(const char *path, size_t *len) {
  base_diag d;
  char *s = base_read_file(path, len, &d);
  cr_assert(s, "%s", d.msg);
  return s;
}

Test(weights, round_trip_byte_identical) {
  base_diag d;
  ir_graph *g = parse();
  set_values(g, "w", -1.5f);
  set_values(g, "s", 3.0f); /* b stays without values */
  cr_assert_eq(ir_weights_count(g), 2);
  char *p1 = tmp_path(), *p2 = tmp_path();
  cr_assert_eq(ir_weights_write(g, p1, &d), BASE_OK, "%s", d.msg);
  ir_graph *h = parse();
  cr_assert_eq(ir_weights_read(h, p1, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(ir_weights_count(h), 2);
  int w = ir_find_tensor(h, "w");
  for (int i = 0; i < 6; i++)
    cr_assert_eq(h->tensors[w].data[i], -1.5f + 0.25f * (float)i);
  cr_assert_eq(h->tensors[ir_find_tensor(h, "s")].data[0], 3.0f);
  cr_assert_null(h->tensors[ir_find_tensor(h, "b")].data);
  cr_assert_eq(ir_weights_write(h, p2, &d), BASE_OK, "%s", d.msg);
  size_t n1, n2;
  char *a = slurp(p1, &n1), *b = slurp(p2, &n2);
  cr_assert_eq(n1, n2);
  cr_assert(!memcmp(a, b, n1), "the rewritten sidecar differs");
  /* layout: 8-byte length, header padded to 8, 7 floats */
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--)
    hl = (hl << 8) | (unsigned char)a[i];
  cr_assert_eq(hl % 8, 0);
  cr_assert_eq(n1, 8 + hl + 7 * 4);
  cr_assert(strstr(a + 8, "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                          "\"data_offsets\":[0,24]}"));
  free(a);
  free(b);
  unlink(p1);
  unlink(p2);
  free(p1);
  free(p2);
  ir_graph_free(g);
  ir_graph_free(h);
}

/* A sidecar as another writer lays it out: keys in another order, its own
 * metadata, no padding. */
Test(weights, foreign_layout) {
  const char hdr[] = "{\"s\":{\"data_offsets\":[12,16],\"shape\":[],"
                     "\"dtype\":\"F32\"},\"__metadata__\":{\"by\":\"other\"},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[3],"
                     "\"data_offsets\":[0,12]}}";
  size_t hl = strlen(hdr), n = 8 + hl + 16;
  uint8_t *buf = calloc(n, 1);
  buf[0] = (uint8_t)hl;
  memcpy(buf + 8, hdr, hl);
  float v[4] = {1, 2, 3, 9};
  memcpy(buf + 8 + hl, v, sizeof v); /* little-endian host */
  ir_graph *g = parse();
  base_diag d;
  cr_assert_eq(ir_weights_read_mem(g, buf, n, "o.safetensors", &d), BASE_OK,
               "%s", d.msg);
  cr_assert_eq(g->tensors[ir_find_tensor(g, "b")].data[2], 3.0f);
  cr_assert_eq(g->tensors[ir_find_tensor(g, "s")].data[0], 9.0f);
  free(buf);
  ir_graph_free(g);
}

/* Reads header `hdr` followed by `data` bytes of zeros; expects an error
 * whose message contains `want`, and no weight changed. */
static void expect_bad(const char *hdr, size_t data, const char *want) {
  size_t hl = strlen(hdr), n = 8 + hl + data;
  uint8_t *buf = calloc(n, 1);
  for (int i = 0; i < 8; i++)
    buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, hdr, hl);
  ir_graph *g = parse();
  base_diag d;
  cr_assert_neq(ir_weights_read_mem(g, buf, n, "bad.safetensors", &d), BASE_OK,
                "no error for %s", hdr);
  cr_assert_str_eq(d.file, "bad.safetensors");
  cr_assert(strstr(d.msg, want), "'%s' lacks '%s'", d.msg, want);
  cr_assert_eq(ir_weights_count(g), 0, "a weight was set despite the error");
  free(buf);
  ir_graph_free(g);
}

#define GOOD_B "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}"

Test(weights, malformed) {
  base_diag d;
  ir_graph *g = parse();
  uint8_t tiny[5] = {0};
  cr_assert_neq(ir_weights_read_mem(g, tiny, 5, "t.safetensors", &d), BASE_OK);
  cr_assert(strstr(d.msg, "no 8-byte header length"), "%s", d.msg);
  uint8_t big[12] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
  cr_assert_neq(ir_weights_read_mem(g, big, 12, "t.safetensors", &d), BASE_OK);
  cr_assert(strstr(d.msg, "header length 200 exceeds the 4 bytes"), "%s",
            d.msg);
  ir_graph_free(g);
  expect_bad("{\"b\": [1,", 0, "header (JSON) at byte");
  expect_bad("[1, 2]", 0, "header is not a JSON object");
  expect_bad("{" GOOD_B ", \"w\":{\"dtype\":\"F16\",\"shape\":[2,3],"
             "\"data_offsets\":[12,24]}}",
             24, "tensor 'w' has dtype F16; the graph says f32 (F32)");
  expect_bad("{" GOOD_B ", \"q\":{\"dtype\":\"F32\",\"shape\":[1],"
             "\"data_offsets\":[12,16]}}",
             16, "tensor 'q' is not a weight of the graph");
  expect_bad("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,2],"
             "\"data_offsets\":[0,8]}}",
             8, "tensor 'x' is not a weight of the graph");
  expect_bad("{" GOOD_B ", \"w\":{\"dtype\":\"F32\",\"shape\":[3,2],"
             "\"data_offsets\":[12,36]}}",
             36, "tensor 'w' has shape [3,2]; the graph says [2,3]");
  expect_bad("{\"b\":{\"dtype\":\"F32\",\"shape\":[3],"
             "\"data_offsets\":[0,12]}}",
             8, "data_offsets [0, 12] do not hold its 3 values");
  expect_bad("{\"b\":{\"dtype\":\"F32\",\"shape\":[3]}}", 12,
             "lacks dtype, shape or data_offsets");
  expect_bad("{" GOOD_B "," GOOD_B "}", 12, "header (JSON) at byte");
}

Test(weights, sidecar_path) {
  char buf[64];
  ir_weights_path("dir/model.graph", buf, sizeof buf);
  cr_assert_str_eq(buf, "dir/model.safetensors");
  ir_weights_path("model.txt", buf, sizeof buf);
  cr_assert_str_eq(buf, "model.txt.safetensors");
}

/* int64 and bool weights (folded index tables and masks) travel as I64
 * (8 bytes each) and BOOL (one byte each) and come back equal; a type that
 * differs from the graph's is refused. */
Test(weights, int64_and_bool) {
  static const char text[] = "input e: [5,2]\nweight i: i64[3]\n"
                             "weight m: bool[3,2]\ny = gather(e, i)\n"
                             "z = where(m, y, y)\noutput z\n";
  base_diag d;
  ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
  cr_assert(g, "%s", d.msg);
  static const float iv[3] = {4, 0, 2}, mv[6] = {1, 0, 0, 1, 1, 1};
  g->tensors[ir_find_tensor(g, "i")].data = iv;
  g->tensors[ir_find_tensor(g, "m")].data = mv;
  char *p = tmp_path();
  cr_assert_eq(ir_weights_write(g, p, &d), BASE_OK, "%s", d.msg);
  size_t n;
  char *a = slurp(p, &n);
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--)
    hl = (hl << 8) | (unsigned char)a[i];
  cr_assert_eq(n, 8 + hl + 3 * 8 + 6);
  cr_assert(strstr(a + 8, "\"i\":{\"dtype\":\"I64\""), "%.*s", (int)hl, a + 8);
  cr_assert(strstr(a + 8, "\"m\":{\"dtype\":\"BOOL\""));
  ir_graph *h = ir_parse(text, strlen(text), "t.graph", &d);
  cr_assert_eq(ir_weights_read(h, p, &d), BASE_OK, "%s", d.msg);
  for (int k = 0; k < 3; k++)
    cr_assert_eq(h->tensors[ir_find_tensor(h, "i")].data[k], iv[k]);
  for (int k = 0; k < 6; k++)
    cr_assert_eq(h->tensors[ir_find_tensor(h, "m")].data[k], mv[k]);
  static const char other[] = "input e: [5,2]\nweight i: [3]\n"
                              "weight m: [3,2]\ny = ewmul(i, i)\n"
                              "z = ewmul(m, m)\noutput y, z\n";
  ir_graph *f = ir_parse(other, strlen(other), "t.graph", &d);
  cr_assert(f, "%s", d.msg);
  cr_assert_neq(ir_weights_read(f, p, &d), BASE_OK);
  cr_assert(strstr(d.msg, "has dtype I64; the graph says f32"), "%s", d.msg);
  free(a);
  unlink(p);
  free(p);
  ir_graph_free(f);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* The sidecar records its graph's hash: read with another graph (a kill
 * between the renames of ir_save, or an edit) it is refused, and nothing
 * is set. */
Test(weights, graph_hash_mismatch_refused) {
  base_diag d;
  ir_graph *g = parse();
  set_values(g, "w", 1.0f);
  char *p = tmp_path();
  cr_assert_eq(ir_weights_write(g, p, &d), BASE_OK, "%s", d.msg);
  size_t n;
  char *a = slurp(p, &n);
  cr_assert(strstr(a + 8, "\"graph\":\""), "no graph hash in the header");
  static const char other[] = "graph g\ninput x: [1,2]\nweight w: [2,3]\n"
                              "weight b: [3]\nweight s: []\n"
                              "y = matmul(x, w, b)\nz = smul(y, s)\n"
                              "r = relu(z)\noutput r\n";
  ir_graph *h = ir_parse(other, strlen(other), "o.graph", &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(ir_weights_read(h, p, &d), BASE_ERR_SYNTAX);
  cr_assert(strstr(d.msg, "written with another graph"), "%s", d.msg);
  cr_assert_null(h->tensors[ir_find_tensor(h, "w")].data);
  /* the same graph, reprinted differently (comments, spacing): accepted */
  static const char same[] = "graph g # a comment\ninput x: [1,2]\n"
                             "weight w:[2,3]\nweight b: [3]\nweight s: []\n"
                             "y = matmul(x,  w, b)\nz = smul(y, s)\noutput z\n";
  ir_graph *k = ir_parse(same, strlen(same), "s.graph", &d);
  cr_assert(k, "%s", d.msg);
  cr_assert_eq(ir_weights_read(k, p, &d), BASE_OK, "%s", d.msg);
  free(a);
  unlink(p);
  free(p);
  ir_graph_free(k);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* A sidecar for `weight i: i64[1]` holding value v (no graph hash). */
static void write_i64_sidecar(const char *path, int64_t v) {
  static const char js[] = "{\"i\":{\"dtype\":\"I64\",\"shape\":[1],"
                           "\"data_offsets\":[0,8]}}";
  size_t hl = (sizeof js - 1 + 7) / 8 * 8;
  unsigned char buf[256] = {0};
  buf[0] = (unsigned char)hl;
  memcpy(buf + 8, js, sizeof js - 1);
  memset(buf + 8 + sizeof js - 1, ' ', hl - (sizeof js - 1));
  for (int k = 0; k < 8; k++)
    buf[8 + hl + (size_t)k] = (unsigned char)((uint64_t)v >> (8 * k));
  base_diag d;
  cr_assert_eq(base_write_atomic(path, (char *)buf, 8 + hl + 8, &d), BASE_OK);
}

/* int64 values a float cannot hold exactly are refused rather than changed
 * (16777217 used to become 16777216, INT64_MAX became INT64_MIN); exact
 * ones, also large, come back equal. */
Test(weights, int64_exact_or_refused) {
  static const char text[] = "input e: [5,2]\nweight i: i64[1]\n"
                             "y = gather(e, i)\noutput y\n";
  static const int64_t good[] = {0, -3, 16777216, (int64_t)1 << 40, INT64_MIN};
  static const int64_t badv[] = {16777217, INT64_MAX, -16777217,
                                 ((int64_t)1 << 40) + 1};
  base_diag d;
  char *p = tmp_path(), *q = tmp_path();
  for (size_t k = 0; k < sizeof good / sizeof *good; k++) {
    ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
    cr_assert(g, "%s", d.msg);
    write_i64_sidecar(p, good[k]);
    cr_assert_eq(ir_weights_read(g, p, &d), BASE_OK, "%s", d.msg);
    cr_assert_eq(ir_weights_write(g, q, &d), BASE_OK, "%s", d.msg);
    ir_graph *h = ir_parse(text, strlen(text), "t.graph", &d);
    cr_assert_eq(ir_weights_read(h, q, &d), BASE_OK, "%s", d.msg);
    size_t n;
    char *b = slurp(q, &n);
    int64_t back = 0;
    for (int j = 7; j >= 0; j--)
      back = (int64_t)(((uint64_t)back << 8) | (unsigned char)b[n - 8 + j]);
    cr_assert_eq(back, good[k], "%lld came back as %lld", (long long)good[k],
                 (long long)back);
    free(b);
    ir_graph_free(h);
    ir_graph_free(g);
  }
  for (size_t k = 0; k < sizeof badv / sizeof *badv; k++) {
    ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
    write_i64_sidecar(p, badv[k]);
    cr_assert_eq(ir_weights_read(g, p, &d), BASE_ERR_SYNTAX, "%lld accepted",
                 (long long)badv[k]);
    cr_assert(strstr(d.msg, "cannot hold exactly"), "%s", d.msg);
    cr_assert_null(g->tensors[ir_find_tensor(g, "i")].data);
    ir_graph_free(g);
  }
  /* writing: a value that is not an integer in range is refused */
  static const float nan_v[1] = {NAN}, huge[1] = {1e30f}, frac[1] = {2.5f};
  const float *const wrong[] = {nan_v, huge, frac};
  for (int k = 0; k < 3; k++) {
    ir_graph *g = ir_parse(text, strlen(text), "t.graph", &d);
    g->tensors[ir_find_tensor(g, "i")].data = wrong[k];
    cr_assert_eq(ir_weights_write(g, q, &d), BASE_ERR_PARAM);
    cr_assert(strstr(d.msg, "not an integer in range"), "%s", d.msg);
    ir_graph_free(g);
  }
  unlink(p);
  unlink(q);
  free(p);
  free(q);
}

/* f32 weights with NaN, infinities and huge values are written bit for
 * bit (the writer converted every value to int64 first: undefined for
 * these, UBSan's 97 reports at weights.c:106). */
Test(weights, f32_special_values_bit_exact) {
  base_diag d;
  ir_graph *g = parse();
  static float v[6];
  const float special[6] = {NAN, INFINITY, -INFINITY, 3e38f, -1e30f, -0.0f};
  memcpy(v, special, sizeof v);
  g->tensors[ir_find_tensor(g, "w")].data = v;
  char *p = tmp_path();
  cr_assert_eq(ir_weights_write(g, p, &d), BASE_OK, "%s", d.msg);
  ir_graph *h = parse();
  cr_assert_eq(ir_weights_read(h, p, &d), BASE_OK, "%s", d.msg);
  cr_assert(!memcmp(h->tensors[ir_find_tensor(h, "w")].data, v, sizeof v));
  unlink(p);
  free(p);
  ir_graph_free(h);
  ir_graph_free(g);
}

/* ---- the pair as one unit: ir_save / ir_load (src/ir/pair.c) ---------- */

static char *tmp_dir(void) {
  char *p = strdup("/tmp/test_pair_XXXXXX");
  cr_assert(mkdtemp(p));
  return p;
}

static void rm_dir(char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  free(dir);
}

static void path_in(char *buf, size_t n, const char *dir, const char *name) {
  snprintf(buf, n, "%s/%s", dir, name);
}

static int exists(const char *p) {
  struct stat sb;
  return lstat(p, &sb) == 0;
}

/* Saved and loaded through a symlink: the weights go beside the link's
 * target (they went beside the link, the target keeping stale ones). */
Test(pair, symlink_weights_beside_target) {
  base_diag d;
  char *dir = tmp_dir(), sub[512], real[512], link[512], side[512];
  path_in(sub, sizeof sub, dir, "real");
  cr_assert_eq(mkdir(sub, 0777), 0);
  path_in(real, sizeof real, dir, "real/r.graph");
  path_in(link, sizeof link, dir, "l.graph");
  cr_assert_eq(symlink("real/r.graph", link), 0);
  ir_graph *g = parse();
  set_values(g, "w", 2.0f);
  cr_assert_eq(ir_save(g, link, 1, &d), BASE_OK, "%s", d.msg);
  path_in(side, sizeof side, dir, "real/r.safetensors");
  cr_assert(exists(side), "no sidecar beside the link's target");
  path_in(side, sizeof side, dir, "l.safetensors");
  cr_assert(!exists(side), "a sidecar beside the link");
  struct stat sb;
  cr_assert(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode), "link replaced");
  ir_graph *h = ir_load(link, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(h->tensors[ir_find_tensor(h, "w")].data[1], 2.25f);
  ir_graph *k = ir_load(real, &d);
  cr_assert(k, "%s", d.msg);
  cr_assert_eq(ir_weights_count(k), 1);
  ir_graph_free(k);
  ir_graph_free(h);
  ir_graph_free(g);
  rm_dir(dir);
}

/* A destination (graph or sidecar) that is a directory: refused before
 * anything is replaced (the weights used to be replaced first). */
Test(pair, directory_destination_changes_nothing) {
  base_diag d;
  char *dir = tmp_dir(), gp[512], sp[512];
  path_in(gp, sizeof gp, dir, "x.graph");
  path_in(sp, sizeof sp, dir, "x.safetensors");
  cr_assert_eq(mkdir(gp, 0777), 0);
  cr_assert_eq(base_write_atomic(sp, "old", 3, &d), BASE_OK);
  ir_graph *g = parse();
  set_values(g, "w", 2.0f);
  cr_assert_neq(ir_save(g, gp, 1, &d), BASE_OK);
  cr_assert(strstr(d.msg, "it is a directory"), "%s", d.msg);
  size_t n;
  char *s = slurp(sp, &n);
  cr_assert(n == 3 && !memcmp(s, "old", 3), "the sidecar was replaced");
  free(s);
  /* the sidecar's place a directory: the graph is not written either */
  path_in(gp, sizeof gp, dir, "y.graph");
  path_in(sp, sizeof sp, dir, "y.safetensors");
  cr_assert_eq(mkdir(sp, 0777), 0);
  cr_assert_neq(ir_save(g, gp, 1, &d), BASE_OK);
  cr_assert(!exists(gp), "the graph was written");
  cr_assert_neq(ir_save(g, gp, 0, &d), BASE_OK); /* cannot remove it */
  cr_assert(!exists(gp), "the graph was written");
  ir_graph_free(g);
  rm_dir(dir);
}

/* A character device gets the graph only, and only without values: no
 * /dev/null.safetensors (it used to be created). */
Test(pair, device_graph_only) {
  base_diag d;
  int before = exists("/dev/null.safetensors");
  ir_graph *g = parse();
  set_values(g, "w", 2.0f);
  cr_assert_neq(ir_save(g, "/dev/null", 1, &d), BASE_OK);
  cr_assert(strstr(d.msg, "device or pipe"), "%s", d.msg);
  cr_assert_eq(ir_save(g, "/dev/null", 0, &d), BASE_OK, "%s", d.msg);
  cr_assert(before || !exists("/dev/null.safetensors"));
  ir_graph_free(g);
}

/* Written without values, a stale sidecar goes; with values, both come
 * back; a legacy sidecar (no graph hash) still loads. */
Test(pair, stale_sidecar_removed) {
  base_diag d;
  char *dir = tmp_dir(), gp[512], sp[512];
  path_in(gp, sizeof gp, dir, "m.graph");
  path_in(sp, sizeof sp, dir, "m.safetensors");
  ir_graph *g = parse();
  set_values(g, "w", 2.0f);
  cr_assert_eq(ir_save(g, gp, 1, &d), BASE_OK, "%s", d.msg);
  cr_assert(exists(sp));
  ir_graph *h = ir_load(gp, &d);
  cr_assert(h, "%s", d.msg);
  cr_assert_eq(ir_weights_count(h), 1);
  cr_assert_eq(ir_save(g, gp, 0, &d), BASE_OK, "%s", d.msg);
  cr_assert(!exists(sp), "stale sidecar left");
  ir_graph_free(h);
  ir_graph_free(g);
  rm_dir(dir);
}
