/* fuzz_safetensors.c: libFuzzer target for the weights sidecar reader
 * (ir_weights_read_mem: 8-byte header length, JSON header through
 * jansson, raw F32 data) against a small graph with two weights: the
 * values land in the graph, or an error names the file; never a crash,
 * and a failed read leaves the graph as it was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static const char graph_text[] = "input x: [1,3]\n"
                                 "weight w: [3,2]\n"
                                 "weight b: [2]\n"
                                 "y = matmul(x, w, b)\n"
                                 "output y\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  base_diag d;
  ir_graph *g = ir_parse(graph_text, sizeof graph_text - 1, "fuzz.graph", &d);
  if (!g)
    abort(); /* the fixed graph always parses */
  if (ir_weights_read_mem(g, data, len, "fuzz.safetensors", &d) != BASE_OK &&
      ir_weights_count(g) != 0)
    abort(); /* a failed read must leave g unchanged */
  ir_graph_free(g);
  return 0;
}
