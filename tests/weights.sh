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
. "$(dirname "$0")/lib.sh"
test_begin

# st_data FILE: the data bytes of a safetensors file (after its header)
st_data() {
  local n
  n=$(od -An -tu8 -N8 "$1" | tr -d ' ')
  tail -c +$((n + 9)) "$1"
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
# (the headers differ: each records its own graph's hash)
cmp -s <(st_data "$tmp/m.safetensors") <(st_data "$tmp/o.safetensors") ||
  fail "optimize changed the weights' values"

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

# ---- the graph and its weights as one unit (docs/reliability.md) ----
expect 0 "$bin" run "$tmp/m.graph" --seed 3
want=$(grep '^output' "$tmp/out")
# a graph and weights from two writes (a kill between the renames): refused
expect 0 "$bin" print "$tmp/o.graph" -o "$tmp/k.graph"
cp "$tmp/m.graph" "$tmp/k.graph"
expect 2 "$bin" run "$tmp/k.graph"
contains "k.safetensors: error: these weights were written with another graph"
# SIGKILL between the two renames (a test hook, SUPEROPT_TEST_KILL_IN_COMMIT):
# the old graph with the new weights, refused at load
expect 0 "$bin" print "$tmp/o.graph" -o "$tmp/k.graph"
SUPEROPT_TEST_KILL_IN_COMMIT=1 "$bin" print "$tmp/m.graph" -o "$tmp/k.graph" 2>/dev/null
[ $? = 137 ] || fail "the kill hook did not kill"
cmp -s "$tmp/k.graph" "$tmp/o.graph" || fail "the graph was replaced before its weights"
expect 2 "$bin" run "$tmp/k.graph"
contains "these weights were written with another graph"
rm -f "$tmp"/*.tmp.* # a SIGKILL leaves the graph's temporary file
# killed after both renames: the new pair, which loads
SUPEROPT_TEST_KILL_IN_COMMIT=2 "$bin" print "$tmp/m.graph" -o "$tmp/k.graph" 2>/dev/null
expect 0 "$bin" run "$tmp/k.graph" --seed 3
[ "$(grep '^output' "$tmp/out")" = "$want" ] || fail "the new pair runs differently"
# SIGTERM between the two renames waits for the second: the new pair, 143
expect 0 "$bin" print "$tmp/o.graph" -o "$tmp/k.graph"
expect 143 env SUPEROPT_TEST_KILL_IN_COMMIT=1:term "$bin" print "$tmp/m.graph" -o "$tmp/k.graph"
expect 0 "$bin" run "$tmp/k.graph" --seed 3
[ "$(grep '^output' "$tmp/out")" = "$want" ] || fail "SIGTERM between the renames: not the new pair"
ls "$tmp" | grep -q '\.tmp\.' && fail "SIGTERM left temporaries: $(ls "$tmp" | grep '\.tmp\.')"
# SIGINT/SIGTERM in random places of a write: the old pair or the new one
for i in 1 2 3 4 5 6; do
  src_g=$tmp/m.graph
  [ $((i % 2)) = 0 ] && src_g=$tmp/o.graph
  "$bin" print "$src_g" -o "$tmp/k.graph" 2>/dev/null &
  pid=$!
  sleep "0.0$i"
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  expect 0 "$bin" run "$tmp/k.graph" --seed 3
done
# two writers at once to one output: one's pair or the other's, never mixed
for i in 1 2 3 4 5; do
  "$bin" print "$tmp/m.graph" -o "$tmp/c.graph" 2>/dev/null &
  "$bin" print "$tmp/o.graph" -o "$tmp/c.graph" 2>/dev/null &
  wait
  expect 0 "$bin" run "$tmp/c.graph" --seed 3
done
# -o onto a directory: refused before the weights are replaced
mkdir "$tmp/dir.graph"
printf 'old' >"$tmp/dir.safetensors"
expect 2 "$bin" print "$tmp/m.graph" -o "$tmp/dir.graph"
contains "it is a directory"
[ "$(cat "$tmp/dir.safetensors")" = old ] || fail "-o onto a directory replaced the weights"
# -o onto a FIFO nobody reads: refused, nothing written beside it
mkfifo "$tmp/f.graph"
printf 'old' >"$tmp/f.safetensors"
expect 2 "$bin" print "$tmp/m.graph" -o "$tmp/f.graph"
contains "device or pipe"
[ "$(cat "$tmp/f.safetensors")" = old ] || fail "-o onto a FIFO replaced the weights"
expect 2 "$bin" print "$tmp/m.graph" --drop-weights -o "$tmp/f.graph"
contains "a FIFO that nobody reads"
[ "$(cat "$tmp/f.safetensors")" = old ] || fail "-o onto a FIFO removed the weights"
# -o /dev/null, /dev/stdout: the graph only, never a file in /dev
expect 2 "$bin" print "$tmp/m.graph" -o /dev/null
contains "it is a device or pipe, and the graph's 9 weights with values"
[ ! -e /dev/null.safetensors ] || fail "/dev/null.safetensors exists"
expect 0 "$bin" print "$tmp/m.graph" --drop-weights -o /dev/null
expect 0 "$bin" print "$tmp/m.graph" --drop-weights -o /dev/stdout
contains "weight w1: [8,3,3,3]"
expect 2 "$bin" print "$tmp/m.graph" -o /dev/stdout
[ ! -e /dev/stdout.safetensors ] || fail "/dev/stdout.safetensors exists"
# -o through a symlink: the weights go beside the link's target
mkdir "$tmp/real"
ln -s real/t.graph "$tmp/l.graph"
expect 0 "$bin" print "$tmp/m.graph" -o "$tmp/l.graph"
[ -L "$tmp/l.graph" ] || fail "the link was replaced"
[ -s "$tmp/real/t.safetensors" ] || fail "no weights beside the link's target"
[ ! -e "$tmp/l.safetensors" ] || fail "weights beside the link"
expect 0 "$bin" run "$tmp/l.graph" --seed 3
[ "$(grep '^output' "$tmp/out")" = "$want" ] || fail "run through the link lost the weights"
expect 0 "$bin" run "$tmp/real/t.graph" --seed 3
[ "$(grep '^output' "$tmp/out")" = "$want" ] || fail "the target's weights are stale"
# a sidecar without the graph hash (written before it existed) still loads
hl=$(od -An -tu8 -N8 "$tmp/m.safetensors" | tr -d ' ')
head -c $((hl + 8)) "$tmp/m.safetensors" | tail -c "$hl" |
  sed 's/,"graph":"[0-9a-f]*"/                           /' >"$tmp/hdr"
[ "$(wc -c <"$tmp/hdr")" = "$hl" ] || fail "legacy header not made"
{ head -c 8 "$tmp/m.safetensors"; cat "$tmp/hdr"; st_data "$tmp/m.safetensors"; } >"$tmp/legacy.safetensors"
cp "$tmp/m.graph" "$tmp/legacy.graph"
expect 0 "$bin" run "$tmp/legacy.graph" --seed 3
[ "$(grep '^output' "$tmp/out")" = "$want" ] || fail "a legacy sidecar is not used"

test_end weights
