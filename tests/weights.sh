#!/usr/bin/env bash
# weights.sh: weight values are never lost between commands: `import` and
# `print`/`optimize -o x.graph` write them to x.safetensors beside the
# .graph, every command that reads x.graph reads them back, a command that
# would drop them (a .graph to standard output) refuses unless
# --drop-weights, and a malformed sidecar is one clear error.
# usage: tests/weights.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
model=$src/tests/data/good/small_weighted.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

. "$(dirname "$0")/lib.sh"

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# import: to stdout refuses, --drop-weights allows it, -o writes the sidecar
expect 1 "$bin" import "$model"
contains "the graph has 9 weights with values, which standard output would drop"
expect 0 "$bin" import "$model" --drop-weights
contains "weight w1: [8,3,3,3]"
expect 0 "$bin" import "$model" -o "$tmp/m.graph"
[ -s "$tmp/m.safetensors" ] || fail "import -o wrote no m.safetensors"
# 8-byte header length, then the JSON header
head -c 9 "$tmp/m.safetensors" | tail -c 1 | grep -q '{' ||
  fail "m.safetensors does not start with a header length and '{'"

# read and written again: byte-identical
expect 0 "$bin" print "$tmp/m.graph" -o "$tmp/p.graph"
cmp -s "$tmp/m.safetensors" "$tmp/p.safetensors" || fail "sidecar round trip differs"
cmp -s "$tmp/m.graph" "$tmp/p.graph" || fail "graph round trip differs"
expect 1 "$bin" print "$tmp/m.graph"
contains "--drop-weights"

# the values are used: run with the sidecar differs from run without it
expect 0 "$bin" run "$tmp/m.graph" --seed 3
with=$(cat "$tmp/out")
expect 0 "$bin" print "$tmp/m.graph" --drop-weights -o "$tmp/d.graph"
[ ! -e "$tmp/d.safetensors" ] || fail "--drop-weights wrote a sidecar"
expect 0 "$bin" run "$tmp/d.graph" --seed 3
[ "$with" != "$(cat "$tmp/out")" ] || fail "run ignores the sidecar's values"

# a stale sidecar is removed when the graph is written without values
cp "$tmp/m.safetensors" "$tmp/d.safetensors"
expect 0 "$bin" print "$tmp/m.graph" --drop-weights -o "$tmp/d.graph"
[ ! -e "$tmp/d.safetensors" ] || fail "stale d.safetensors left beside d.graph"

# optimize keeps them (the result's weights are the model's)
expect 0 "$bin" optimize "$tmp/m.graph" --rules "$src/tests/data/rules/basic.rules" -o "$tmp/o.graph"
[ -s "$tmp/o.safetensors" ] || fail "optimize -o wrote no o.safetensors"
cmp -s "$tmp/m.safetensors" "$tmp/o.safetensors" || fail "optimize changed the weights' values"

# malformed or mismatched sidecars: one clear error naming the file
printf 'abc' >"$tmp/p.safetensors"
expect 2 "$bin" print "$tmp/p.graph" --drop-weights
contains "p.safetensors: error: not a safetensors file"
printf '\010\000\000\000\000\000\000\000{"w1":1}' >"$tmp/p.safetensors"
expect 2 "$bin" run "$tmp/p.graph"
contains "p.safetensors: error: header entry 'w1' is not an object"
printf '\020\000\000\000\000\000\000\000{"zz":{}}       ' >"$tmp/p.safetensors"
expect 2 "$bin" optimize "$tmp/p.graph" --rules "$src/tests/data/rules/basic.rules" -o "$tmp/never.graph"
contains "p.safetensors: error: tensor 'zz' lacks dtype"
[ ! -e "$tmp/never.graph" ] || fail "optimize wrote output after a bad sidecar"

if [ "$fails" != 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "weights: all passed"
