#!/usr/bin/env bash
# gpu_layers.sh: scripts/check-gpu-layers passes on this tree's compiled
# src/gpu (its calls between files follow the layers of
# docs/architecture.md) and fails, naming the problem, on a graph with a
# cycle through 4 files, on one with a call to a higher layer and on a
# file outside the layer folders. usage: tests/gpu_layers.sh SRC BUILD
set -u
src=$1
build=$2
check=$src/scripts/check-gpu-layers
. "$(dirname "$0")/lib.sh"
test_begin

expect 0 "$check" "$build"
contains "0 problem(s)"

# a cycle through 4 files of one layer (3 is the most allowed)
printf '%s\n' 'run/a.c: run/b.c' 'run/b.c: run/c.c' 'run/c.c: run/d.c' \
  'run/d.c: run/a.c' >"$tmp/cycle4"
expect 1 "$check" --graph "$tmp/cycle4"
contains "call cycle group of 4 files (max 3): run/a.c run/b.c run/c.c run/d.c"

# a cycle of 3 is allowed
printf '%s\n' 'run/a.c: run/b.c' 'run/b.c: run/c.c' 'run/c.c: run/a.c' \
  >"$tmp/cycle3"
expect 0 "$check" --graph "$tmp/cycle3"

# the runtime calling the planner: upward
printf '%s\n' 'rt/err.c: plan/plan.c' 'plan/plan.c: rt/err.c kern/kew.cu' \
  >"$tmp/up"
expect 1 "$check" --graph "$tmp/up"
contains "src/gpu/rt/err.c calls src/gpu/plan/plan.c: a higher layer (plan above rt)"

# a file in no layer folder
printf '%s\n' 'misc/x.c: rt/err.c' >"$tmp/stray"
expect 1 "$check" --graph "$tmp/stray"
contains "src/gpu/misc/x.c: not in a layer folder"

test_end gpu_layers
