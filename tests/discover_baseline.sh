#!/usr/bin/env bash
# discover_baseline.sh: scripts/discover-baseline takes .onnx networks in
# MODELS: each is imported into OUT/NAME.graph (with --data-input x unless
# IMPORT_ARGS says otherwise) and optimized like a .graph, one row per run
# in OUT/discover.tsv. A second or two (a 1-conv model, --no-check).
# usage: tests/discover_baseline.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb

onnx=$src/tests/data/good/small_weighted.onnx # its data input: image
run() { # WANT OUT, then environment assignments
  local want=$1 out=$2
  shift 2
  expect "$want" env SUPEROPT_DATA="$src" MODELS="$onnx" RUNS="default none" \
    "$@" "$src/scripts/discover-baseline" "$out" "$(dirname "$bin")" -- \
    --no-check
}
run 0 "$tmp/a" IMPORT_ARGS=
[ -s "$tmp/a/small_weighted.graph" ] || fail "no imported graph"
for r in default none; do
  grep -q "^small_weighted	$r	" "$tmp/a/discover.tsv" ||
    fail "no $r row for the .onnx network"
done
# the default import options name the data input x, which it lacks
run 2 "$tmp/b"
contains "--data-input 'x'"
test_end discover_baseline
