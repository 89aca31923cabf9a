#!/usr/bin/env bash
# swin_moves.sh: Swin-T (models/onnx/swin_t.onnx, weights as inputs)
# optimizes with the end-to-end check passing, and the lower stage makes
# its shifts, window partitions and reverses, pads and crops move nodes
# (src/fuse/lower_chain.c): 516 operators were 340 when this was written
# (40 move nodes for 216 operators; 28 for 180 since lower_att takes the
# moves around each attention into its row layout first; 23 for 138 since
# stepped slices import without pads and each shift is cut from its
# window partition, a roll and a strided walk); the result then runs at
# batch 2.
# usage: tests/swin_moves.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb

expect 0 "$bin" optimize "$src/models/onnx/swin_t.onnx" --data-input x \
  --device h100 --no-rules --drop-weights -o "$tmp/swin.graph"
contains "check: max relative error"
line=$(grep '^lower:' "$tmp/out")
made=$(sed -n 's/.*, \([0-9]*\) move nodes replace \([0-9]*\) movement.*/\1 \2/p' <<<"$line")
read -r nodes ops <<<"${made:-0 0}"
[ "$nodes" -ge 20 ] && [ "$ops" -ge 130 ] ||
  fail "$nodes move nodes for $ops operators: $line"
n=$(grep -c '= move(' "$tmp/swin.graph")
[ "$n" = "$nodes" ] || fail "$n move nodes written, $nodes made"
for op in pad concat; do
  k=$(grep -v '= move(' "$tmp/swin.graph" | grep -c "= $op(")
  [ "$k" -le 3 ] || fail "$k $op nodes left"
done
# the result rebatches: its move nodes and row-layout attention follow
# batch 2 (src/ir/rebatch.c; per-sample values: test_lower_att
# rebatch_windows)
expect 0 "$bin" run "$tmp/swin.graph" --batch 2
contains "[2,1000]"
test_end swin_moves
