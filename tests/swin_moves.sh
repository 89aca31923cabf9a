#!/usr/bin/env bash
# swin_moves.sh: Swin-T (models/onnx/swin_t.onnx, weights as inputs)
# optimizes with the end-to-end check passing, and the lower stage makes
# its shifts, window partitions and reverses, pads and crops move nodes
# (src/fuse/lower_chain.c): 516 operators were 340 when this was written.
# usage: tests/swin_moves.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
export SUPEROPT_COSTDB="$tmp/costdb.sqlite"

. "$(dirname "$0")/lib.sh"

expect 0 "$bin" optimize "$src/models/onnx/swin_t.onnx" --data-input x \
  --device h100 --no-rules --drop-weights -o "$tmp/swin.graph"
contains "check: max relative error"
line=$(grep '^lower:' "$tmp/out")
made=$(sed -n 's/.*, \([0-9]*\) move nodes replace \([0-9]*\) movement.*/\1 \2/p' <<<"$line")
read -r nodes ops <<<"${made:-0 0}"
[ "$nodes" -ge 30 ] && [ "$ops" -ge 150 ] ||
  { echo "FAIL: $nodes move nodes for $ops operators: $line"; fails=$((fails + 1)); }
n=$(grep -c '= move(' "$tmp/swin.graph")
[ "$n" = "$nodes" ] || { echo "FAIL: $n move nodes written, $nodes made"; fails=$((fails + 1)); }
for op in pad concat; do
  k=$(grep -v '= move(' "$tmp/swin.graph" | grep -c "= $op(")
  [ "$k" -le 3 ] || { echo "FAIL: $k $op nodes left"; fails=$((fails + 1)); }
done
exit $((fails > 0))
