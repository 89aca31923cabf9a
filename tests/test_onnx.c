/* test_onnx.c: the ONNX importer and exporter from C: round trips, and a
 * seeded mutation fuzzer that feeds damaged models to the importer (run under
 * ASan+UBSan by scripts/test): every result is either a valid graph or an
 * error with a message, never a crash. Operator coverage against
 * onnxruntime is in tests/onnx_oracle.py, error messages in onnx_errors.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx.h"

#define SRC SUPEROPT_SOURCE_DIR

static char *slurp(const char *path, size_t *len) {
  base_diag d;
  char *s = base_read_file(path, len, &d);
  cr_assert(s, "cannot read %s: %s", path, d.msg);
  return s;
}

/* Exports a .graph to ONNX and returns the bytes. */
static char *exported(const char *graph, size_t *len) {
  base_diag d;
  ir_graph *g = ir_parse_file(graph, &d);
  cr_assert(g, "%s", d.msg);
  char path[] = "/tmp/superopt-test-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(ox_export_file(g, path, &d), BASE_OK, "%s", d.msg);
  char *s = slurp(path, len);
  unlink(path);
  ir_graph_free(g);
  return s;
}

Test(onnx, export_import_round_trip_of_every_op) {
  size_t len;
  char *bytes = exported(SRC "/tests/data/good/every_op.graph", &len);
  base_diag d;
  ir_graph *g =
      ox_import((const uint8_t *)bytes, len, "every_op.onnx", NULL, &d);
  cr_assert(g, "%s", d.msg);
  cr_assert_eq(ir_graph_validate(g, &d), BASE_OK, "%s", d.msg);
  cr_assert_eq(g->noutputs, 28);
  ir_graph_free(g);
  free(bytes);
}

Test(onnx, shape_arg_parsing) {
  ox_shape_arg a;
  cr_assert_eq(ox_parse_shape_arg("input.1=1x3x224x224", &a), 0);
  cr_assert_str_eq(a.name, "input.1");
  cr_assert_eq(a.shape.rank, 4);
  cr_assert_eq(a.shape.dim[3], 224);
  cr_assert_neq(ox_parse_shape_arg("x=", &a), 0);
  cr_assert_neq(ox_parse_shape_arg("=2x2", &a), 0);
  cr_assert_neq(ox_parse_shape_arg("x=2x0", &a), 0);
  cr_assert_eq(ox_parse_shape_arg("x=1x2x3x4x5x6x7x8", &a), 0);
  cr_assert_eq(a.shape.rank, 8);
  cr_assert_neq(ox_parse_shape_arg("x=1x2x3x4x5x6x7x8x9", &a), 0);
}

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Imports `rounds` mutants of data: flipped bytes, random bytes, cuts. */
static void fuzz(const char *label, const char *data, size_t len, int rounds,
                 uint64_t seed) {
  char *buf = malloc(len + 16);
  int parsed = 0;
  for (int r = 0; r < rounds; r++) {
    memcpy(buf, data, len);
    size_t n = len;
    int edits = 1 + (int)(rng(&seed) % 6);
    for (int e = 0; e < edits; e++) {
      size_t at = rng(&seed) % n;
      switch (rng(&seed) % 4) {
      case 0: buf[at] ^= (char)(1u << (rng(&seed) % 8)); break;
      case 1: buf[at] = (char)rng(&seed); break;
      case 2: buf[at] = (char)(rng(&seed) % 2 ? 0x7f : 0xff); break;
      default:
        if (rng(&seed) % 8 == 0)
          n = at + 1; /* truncate */
      }
    }
    base_diag d;
    ir_graph *g = ox_import((const uint8_t *)buf, n, label, NULL, &d);
    if (g) {
      parsed++;
      cr_assert_eq(ir_graph_validate(g, &d), BASE_OK, "%s: %s", label, d.msg);
      ir_graph_free(g);
    } else {
      cr_assert_neq(d.code, BASE_OK);
      cr_assert(d.msg[0], "%s: empty message", label);
    }
  }
  free(buf);
  cr_log_info("%s: %d of %d mutants imported", label, parsed, rounds);
}

Test(onnx_fuzz, every_op_export, .timeout = 120) {
  size_t len;
  char *bytes = exported(SRC "/tests/data/good/every_op.graph", &len);
  fuzz("every_op", bytes, len, 10000, 11);
  free(bytes);
}

/* torchvision networks as torch.onnx.export writes them (models/onnx/,
 * scripts/export-models.py): concat, Clip with Constant bounds, Identity,
 * Gemm. The sanitizer build imports the first 500 mutants of each (the
 * same seeds: the plain build's 2,000 begin with them; the fuzz targets
 * go on under ASan): 2,000 took 35 of test_onnx's 41 s there (CI). */
#ifdef __SANITIZE_ADDRESS__
#define TV_MUTANTS 500
#else
#define TV_MUTANTS 2000
#endif
Test(onnx_fuzz, torchvision_models, .timeout = 300) {
  static const char *models[] = {"squeezenet", "mobilenet_v2", "resnet50"};
  for (int i = 0; i < 3; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/onnx/%s.onnx", SRC, models[i]);
    size_t len;
    char *bytes = slurp(path, &len);
    fuzz(models[i], bytes, len, TV_MUTANTS, 100 + (uint64_t)i);
    free(bytes);
  }
}
