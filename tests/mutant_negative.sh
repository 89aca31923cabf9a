#!/usr/bin/env bash
# mutant_negative.sh: issue 43's per-class measured negative result,
# reproduced from the checked-in tables without a GPU. For split-h,
# batch-w, pad-split-h, dilated and matmul-batch, the first mutants of a
# benchmark network (superopt mutants --dump) are priced with
# costdb/h200.tsv and costdb/mutants/h200.tsv: every operator of f and of
# the corrected graph is measured (none estimated), and the corrected graph
# costs more than f. (concat-w and group-merge are cheaper on some rows;
# their negative is the graphs' measured latency on the H200, which a CPU
# cannot reproduce: docs/mutants.md, "Measured latency: a negative
# result".)
# usage: tests/mutant_negative.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb
export SUPEROPT_DATA=$src
db="$tmp/m.sqlite"
expect 0 "$bin" costdb import "$src/costdb/mutants/h200.tsv" --db "$db"

# price G: "MS MEASURED ESTIMATED" of costdb estimate's total line
price() {
  "$bin" costdb estimate "$1" --db "$db" --device h200 |
    sed -n 's/^total: \([0-9.]*\) ms ([0-9]* operators: \([0-9]*\) measured, \([0-9]*\) estimated.*/\1 \2 \3/p'
}

# negative MODEL BATCH CLASS: the first two mutants dearer than f, all measured
negative() {
  local d="$tmp/$1.$2.$3" n=0 f c pf pc
  mkdir -p "$d"
  expect 0 "$bin" mutants "$src/models/$1.graph" --batch "$2" --class "$3" \
    --limit 2 --no-check --dump "$d"
  for f in "$d"/m*.f.graph; do
    [ -f "$f" ] || break
    c=${f%.f.graph}.corrected.graph
    read -r pf _ ef <<<"$(price "$f")"
    read -r pc _ ec <<<"$(price "$c")"
    n=$((n + 1))
    [ "${ef:-1}" = 0 ] && [ "${ec:-1}" = 0 ] ||
      fail "$1 b$2 $3 $(basename "$f"): f or its corrected graph not all measured ($ef, $ec estimated)"
    awk -v f="$pf" -v c="$pc" 'BEGIN { exit !(c > f) }' ||
      fail "$1 b$2 $3 $(basename "$f"): corrected $pc ms not dearer than f $pf ms"
  done
  [ "$n" -gt 0 ] || fail "$1 b$2 $3: no mutant dumped"
}

negative resnet50 1 split-h
negative resnet50 16 split-h
negative resnet50 16 batch-w
negative resnet50 1 pad-split-h
negative resnet50 16 pad-split-h
negative csrnet 1 dilated
negative bert_base 1 matmul-batch
negative bert_base 16 matmul-batch
test_end mutant_negative
