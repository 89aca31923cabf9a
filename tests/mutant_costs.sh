#!/usr/bin/env bash
# mutant_costs.sh: scripts/mutant-costs on a small graph without a GPU:
# prepare lists the unmeasured signatures of the mutant candidates once
# each, the mutants' own first, none the tables measure; measure without a
# bundle says what to do.
# usage: tests/mutant_costs.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb
cat >"$tmp/pet.graph" <<'G'
graph pet
input x: [1,2,7,7]
input a: [1,4,6,5]
input b: [1,4,6,5]
weight w: [3,2,3,3]
weight g1: [4,2,3,3]
weight g2: [4,2,3,3]
y = conv2d(x, w) pad=same act=relu
c1 = conv2d(a, g1) pad=same groups=2
c2 = conv2d(b, g2) pad=same groups=2
output y, c1, c2
G
sigs="$tmp/pending.sigs"
expect 0 env SUPEROPT="$bin" OUT="$tmp/out.d" SIGS="$sigs" JOBS=1 \
  "$src/scripts/mutant-costs" prepare "$tmp/pet.graph"
contains "wrote $sigs"
[ -s "$sigs" ] || fail "prepare wrote no list"
grep -q '^pad x=\[1,2,7,7\] pads=\[0,0,0,0,0,0,1,0\] value=0$' "$sigs" ||
  fail "pad-split-h's pad at batch 1 not listed"
grep -q '^pad x=\[16,2,7,7\] pads=\[0,0,0,0,0,0,1,0\] value=0$' "$sigs" ||
  fail "pad-split-h's pad at batch 16 not listed"
grep -q '^conv2d x=\[1,8,6,5\] w=\[8,2,3,3\] .*groups=4 ' "$sigs" ||
  fail "group-merge's conv not listed"
body=$(grep -v '^#' "$sigs")
[ "$(printf '%s\n' "$body" | wc -l)" = "$(printf '%s\n' "$body" | sort -u | wc -l)" ] ||
  fail "a signature listed twice"
# none of the checked-in tables' signatures
cut -f2 "$src/costdb/h200.tsv" "$src/costdb/mutants/h200.tsv" | sort -u >"$tmp/known"
[ -z "$(printf '%s\n' "$body" | sort -u | comm -12 - "$tmp/known")" ] ||
  fail "a measured signature listed"
n=$(sed -n 's/^# first \([0-9]*\) of the f, g.*/\1/p' "$sigs")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "no count of the mutants' own signatures"
expect 2 env BUNDLE="$tmp/none" OUT="$tmp/out.d" "$src/scripts/mutant-costs" measure
contains "run scripts/bundle-gpu --lean first"
expect 2 "$src/scripts/mutant-costs" frobnicate
contains "usage: scripts/mutant-costs prepare"
test_end mutant_costs
