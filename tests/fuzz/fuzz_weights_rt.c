/* fuzz_weights_rt.c: libFuzzer target for writing a graph with its weights
 * (ir_save, ir_weights_encode) and reading the pair back (ir_load).
 *
 * Input: a .graph text, optionally followed by a line "#safetensors" and
 * the bytes of a sidecar for it. A graph that parses gets its weight values
 * from that sidecar (if it reads) or, without one, from the input's bytes
 * (f32: any bit pattern, NaN and infinities included; int64: integers a
 * float holds exactly; bool: 0 or 1). The pair is saved into a scratch
 * folder and loaded again: the write must succeed, the graph's text and
 * every value (bit for bit) must come back, and encoding again must give the
 * same bytes. Never a crash, a sanitizer report or a changed value. The
 * kill part (a write killed between its renames) is tests/weights.sh and
 * tests/reliability.sh. */
#define _GNU_SOURCE /* mkdtemp, memmem */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"

static const char sep[] = "\n#safetensors\n";

static char dir[] = "/tmp/fuzz_weights_rt_XXXXXX", path[256];

static void remove_scratch(void) {
  char side[300];
  ir_weights_path(path, side, sizeof side);
  unlink(side);
  unlink(path);
  rmdir(dir);
}

static const char *scratch_graph(void) {
  if (!path[0]) {
    if (!mkdtemp(dir))
      abort();
    snprintf(path, sizeof path, "%s/g.graph", dir);
    atexit(remove_scratch);
  }
  return path;
}

/* Values from the input's bytes for every weight of g. */
static void synthesize(ir_graph *g, const uint8_t *data, size_t len) {
  size_t at = 0;
  for (int i = 0; i < g->ntensors; i++) {
    ir_tensor *t = &g->tensors[i];
    int64_t n = ir_shape_numel(&t->shape);
    if (t->kind != IR_T_WEIGHT || n > (1 << 16))
      continue;
    float *v = base_arena_alloc(g->arena, (size_t)n * sizeof *v + 1);
    if (!v)
      abort();
    for (int64_t k = 0; k < n; k++) {
      uint32_t u = 0;
      for (int b = 0; b < 4 && len; b++, at++)
        u = u << 8 | data[at % len];
      if (t->dtype == IR_DT_BOOL)
        v[k] = (float)(u & 1);
      else if (t->dtype == IR_DT_I64) /* exact: 24 bits, shifted */
        v[k] = ldexpf((float)((int32_t)(u << 8) >> 8), (int)(u >> 27));
      else { /* a half weight holds values of its type */
        memcpy(&v[k], &u, 4);
        v[k] = ir_dtype_round(v[k], (ir_dtype)t->dtype);
      }
    }
    t->data = v;
  }
}

static void same_values(const ir_graph *g, const ir_graph *h) {
  if (g->ntensors != h->ntensors)
    abort();
  for (int i = 0; i < g->ntensors; i++) { /* by name: the text lists the
                                            inputs first, h has that order */
    const ir_tensor *a = &g->tensors[i];
    int j = ir_find_tensor(h, a->name);
    if (a->kind != IR_T_WEIGHT)
      continue;
    if (j < 0)
      abort(); /* a weight lost */
    const ir_tensor *b = &h->tensors[j];
    if (!a->data != !b->data)
      abort(); /* a weight's values lost or invented */
    size_t n = (size_t)ir_shape_numel(&a->shape);
    if (a->data && memcmp(a->data, b->data, n * sizeof(float)))
      abort(); /* a value changed on the way */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  const uint8_t *side = memmem(data, len, sep, sizeof sep - 1);
  size_t glen = side ? (size_t)(side - data) + 1 : len;
  base_diag d;
  ir_graph *g = ir_parse((const char *)data, glen, "fuzz.graph", &d);
  if (!g)
    return 0;
  if (side) {
    side += sizeof sep - 1;
    if (ir_weights_read_mem(g, side, len - (size_t)(side - data),
                            "fuzz.safetensors", &d)) {
      ir_graph_free(g);
      return 0;
    }
  } else {
    synthesize(g, data, len);
  }
  const char *path = scratch_graph();
  if (ir_save(g, path, 1, &d) != BASE_OK) {
    fprintf(stderr, "ir_save: %s\n", d.msg);
    abort(); /* every value here can be written */
  }
  ir_graph *h = ir_load(path, &d);
  if (!h) {
    fprintf(stderr, "ir_load: %s\n", d.msg);
    abort(); /* what was written must read */
  }
  char *a = ir_print(g), *b = ir_print(h), *e1 = NULL, *e2 = NULL;
  size_t n1 = 0, n2 = 0;
  if (!a || !b || strcmp(a, b))
    abort(); /* the graph changed */
  same_values(g, h);
  if (ir_weights_count(g) &&
      (ir_weights_encode(g, &e1, &n1, &d) ||
       ir_weights_encode(h, &e2, &n2, &d) || n1 != n2 || memcmp(e1, e2, n1)))
    abort(); /* the sidecar is not reproduced byte for byte */
  free(a);
  free(b);
  free(e1);
  free(e2);
  ir_graph_free(h);
  ir_graph_free(g);
  return 0;
}
