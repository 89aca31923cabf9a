#!/usr/bin/env bash
# check_ew.sh: scripts/check-ew passes on this tree's src/ and fails, naming
# file and line, on planted operator ternaries: one inside a case group of
# two operators, one chain choosing between operators; a ternary on an
# operator outside any case group, one in a single-operator case and one in
# a comment or string pass. usage: tests/check_ew.sh SRC
set -u
src=$1
check=$src/scripts/check-ew
. "$(dirname "$0")/lib.sh"
test_begin

expect 0 "$check" "$src"

mkdir -p "$tmp/root/src/m"
cat >"$tmp/root/src/m/ok.c" <<'C'
/* op == IR_OP_A ? 1 : 2 in a comment */
static int f(int op, int k) {
  const char *s = "op == IR_OP_A ? 1 : 2";
  switch (op) {
  case IR_OP_A:
    return k == IR_OP_B ? 1 : 2;
  case IR_OP_C: {
    int x = 1;
    return x;
  }
  }
  return op == IR_OP_MATMUL ? 3 : (int)s[0];
}
C
expect 0 "$check" "$tmp/root"

cat >"$tmp/root/src/m/bad.c" <<'C'
static int g(int op) {
  switch (op) {
  case IR_OP_TANH:
  case IR_OP_ERF:
  case IR_OP_SQRT:
    return op == IR_OP_TANH ? 1 : 2;
  default:
    return 0;
  }
}
static int h(int k) {
  return k == 1   ? IR_OP_RELU
         : k == 2 ? IR_OP_SIGMOID
                  : IR_OP_TANH;
}
C
expect 1 "$check" "$tmp/root"
contains "src/m/bad.c:6: operator ternary in a case group"
contains "src/m/bad.c:12: chain of operator ternaries"
contains "check-ew: 2 operator ternaries"

# an ew_cases.h include is a group of many operators
cat >"$tmp/root/src/m/bad.c" <<'C'
static int g(int op) {
  switch (op) {
#include "../ir/ew_cases.h"
    return op == IR_OP_NEG ? 1 : 2;
  default:
    return 0;
  }
}
C
expect 1 "$check" "$tmp/root"
contains "src/m/bad.c:4: operator ternary in a case group"

test_end check_ew
