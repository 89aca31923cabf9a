#!/usr/bin/env bash
# run_io.sh: `superopt run --inputs FILE --outputs FILE` (docs/half.md,
# "Accuracy against float32"): outputs written as safetensors feed another
# graph's inputs, which then computes what the composed graph computes on
# the same drawn values; a half run takes float32 inputs (rounded); a file
# naming a tensor that is not an input, or of another shape, is refused with
# the file's name and nothing written.
# usage: tests/run_io.sh path/to/superopt path/to/source-dir
set -u
bin=$1
. "$(dirname "$0")/lib.sh"
test_begin

cat >"$tmp/a.graph" <<'G'
input a: [2,3]
x = relu(a)
output x
G
cat >"$tmp/b.graph" <<'G'
input x: [2,3]
y = ewadd(x, x)
output y
G
cat >"$tmp/c.graph" <<'G'
input a: [2,3]
x = relu(a)
y = ewadd(x, x)
output y
G
sum() { grep '^output' "$tmp/out" | sed 's/.*xxh3=//'; }

expect 0 "$bin" run "$tmp/a.graph" --outputs "$tmp/x.safetensors"
[ -s "$tmp/x.safetensors" ] || fail "run --outputs wrote no file"
expect 0 "$bin" run "$tmp/c.graph"
whole=$(sum)
expect 0 "$bin" run "$tmp/b.graph" --inputs "$tmp/x.safetensors" \
  --outputs "$tmp/y.safetensors"
[ "$(sum)" = "$whole" ] ||
  fail "b(a's outputs) is not the composed graph's output"
expect 0 "$bin" run "$tmp/b.graph"
[ "$(sum)" != "$whole" ] || fail "without --inputs the same output"
# an outputs file is not the inputs of a graph whose input it does not name
expect 2 "$bin" run "$tmp/b.graph" --inputs "$tmp/y.safetensors"
contains "y.safetensors: error: tensor 'y' is not an input of the graph"

# a bf16 run takes the float32 file, rounded: not the drawn values
expect 0 "$bin" run "$tmp/b.graph" --dtype bf16
drawn=$(sum)
expect 0 "$bin" run "$tmp/b.graph" --dtype bf16 --inputs "$tmp/x.safetensors"
[ "$(sum)" != "$drawn" ] || fail "run --dtype bf16 ignored --inputs"

# another shape: refused, no outputs written
sed 's/\[2,3\]/[3,2]/' "$tmp/b.graph" >"$tmp/b32.graph"
expect 2 "$bin" run "$tmp/b32.graph" --inputs "$tmp/x.safetensors" \
  --outputs "$tmp/no.safetensors"
contains "tensor 'x' has shape [2,3]; the graph says [3,2]"
[ ! -e "$tmp/no.safetensors" ] || fail "a refused run wrote its outputs"
printf 'junk' >"$tmp/j.safetensors"
expect 2 "$bin" run "$tmp/b.graph" --inputs "$tmp/j.safetensors"
contains "not a safetensors file"

test_end run_io
