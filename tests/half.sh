#!/usr/bin/env bash
# half.sh: half precision from the command line (docs/half.md): `optimize
# --dtype bf16` of a float32 zoo model passes its check at bf16's tolerance
# and writes a bf16 graph with float32 where the policy says; a half model
# optimized again stays half; `run --dtype f16` computes in f16; a bad
# --dtype is refused.
# usage: tests/half.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb

m="$src/models/tv_squeezenet.graph"
fast=(--budget 5 --no-mutants)

expect 0 "$bin" optimize "$m" "${fast[@]}" --dtype bf16 -o "$tmp/sq.graph"
contains "check: max relative error"
contains "|a-b| <= 0.1"  # 4 * 2^-8 * sqrt(depth), above the f32 1e-05
# the device's bf16 table (costdb/<device>-bf16.tsv) is priced first
contains "cost model: bf16 graphs: a node's row of device "
# on the H200, whose bf16 table is checked in, a node without a row by the
# fit on that table's rows, not by float32's
expect 0 "$bin" optimize "$m" "${fast[@]}" --dtype bf16 --device h200 \
  --no-check -o "$tmp/sq200.graph"
contains "a node without one is priced as bf16 by the fit on "
grep -q "^input input.1: bf16\[1,3,224,224\]$" "$tmp/sq.graph" ||
  fail "the result's input is not bf16"
grep -q "= global_avgpool(.*)$" "$tmp/sq.graph" ||
  fail "no global_avgpool in the result"
grep -q "^t_117: bf16\[1,1000\]" "$tmp/sq.graph" ||
  fail "the output is not bf16"
expect 0 "$bin" check "$tmp/sq.graph"

# a half model stays half through optimize (searched in float32)
expect 0 "$bin" optimize "$tmp/sq.graph" "${fast[@]}" -o "$tmp/sq2.graph"
contains "check: max relative error"
grep -q "^input input.1: bf16" "$tmp/sq2.graph" ||
  fail "the half model did not stay bf16"

# run --dtype: layernorm and softmax in f16 (float32 inside), values rounded
cat >"$tmp/t.graph" <<'G'
input x: [2,8,16]
weight w: [16,16]
weight g: [16]
weight b: [16]
y = matmul(x, w)
n = layernorm(y, g, b)
z = matmul(n, w)
s = softmax(z)
output s
G
expect 0 "$bin" run "$tmp/t.graph"
f32=$(grep '^output' "$tmp/out")
expect 0 "$bin" run "$tmp/t.graph" --dtype f16
f16=$(grep '^output' "$tmp/out")
[ -n "$f16" ] && [ "$f16" != "$f32" ] ||
  fail "run --dtype f16 gave the float32 checksums"

# fusion on the bf16 graph: one fused node computing in float32 inside,
# fewer roundings than the reference, within bf16's tolerance
cat >"$tmp/f.graph" <<'G'
input x: [8,64]
weight b: [64]
weight c: [64]
y = ewadd(x, b)
r = gelu(y)
m = ewmul(r, c)
s = sigmoid(m)
output s
G
expect 0 "$bin" optimize "$tmp/f.graph" --device h100 --budget 5 --dtype bf16 -o "$tmp/fo.graph"
contains "1 fused node replaces 4 operators"
contains "check: max relative error"
grep -q "^s: bf16\[8,64\] = fused(x, b, c)" "$tmp/fo.graph" ||
  fail "no bf16 fused node"

expect 1 "$bin" run "$tmp/t.graph" --dtype i64
contains "bad value 'i64' for --dtype: expected f16 or bf16"
expect 1 "$bin" optimize "$tmp/t.graph" --dtype f32
contains "bad value 'f32' for --dtype: expected f16 or bf16"

test_end half
