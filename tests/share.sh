#!/usr/bin/env bash
# share.sh: scripts/share writes the five graphs of a model and one row of
# share.tsv; with rules/extended.rules the rules alone (ro) fold a residual
# add and the relu after it into the convolution (the third tier's
# e-rules), so the lower stage has nothing left (its line all zeros: the
# row is still written); generated.tsv counts the rule in the ro run and
# not in the default's. A few seconds (a 3-operator graph, --no-check).
# usage: tests/share.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb

cat >"$tmp/res.graph" <<'G'
graph res
input x: [1,8,8,8]
input s: [1,8,8,8]
weight w: [8,8,3,3]
weight b: [8]
y: [1,8,8,8] = conv2d(x, w, b) pad=[1,1,1,1]
z: [1,8,8,8] = ewadd(y, s)
o: [1,8,8,8] = relu(z)
output o
G
expect 0 env SUPEROPT_DATA="$src" MODELS="$tmp/res.graph" \
  "$src/scripts/share" "$tmp/s" "$(dirname "$bin")"
for r in orig ro none fuse default; do
  [ -s "$tmp/s/res.b1.$r.graph" ] || fail "no $r graph"
done
grep -q "^res	1	" "$tmp/s/share.tsv" || fail "no row for the model"
grep -q "= conv2d(x, w, b, s).* act=relu$" \
  "$tmp/s/res.b1.ro.graph" ||
  fail "the rules alone did not fold the residual and the relu"
grep -q "^e005" "$tmp/s/generated-ro.txt" ||
  fail "no third-tier rule among the generated ones applied"
# the union: each e rule the ro run applied, in one pair, none by default
awk -F'\t' '$1 ~ /^e005/ && $2 == 1 && $3 >= 1 && $4 == 0 { ok = 1 }
  END { exit !ok }' "$tmp/s/generated.tsv" ||
  fail "generated.tsv lacks the ro run's e rule: $(cat "$tmp/s/generated.tsv")"
[ -f "$tmp/s/pass-default.txt" ] || fail "no pass-default.txt"
test_end share
