/* fuzz_taso_pb.c: libFuzzer target for TASO's GraphSubst.RuleCollection
 * import (ruleio_import_taso_pb_mem): rules or an error, never a crash. */
#include <stdint.h>

#include "ruleio/ruleio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  base_diag d;
  ir_ruleset rs;
  ruleio_stats st;
  ruleio_stats_init(&st);
  ruleio_import_taso_pb_mem(data, len, "fuzz.pb", &rs, &st, &d);
  ir_ruleset_free(&rs); /* empty after an error */
  ruleio_stats_free(&st);
  return 0;
}
