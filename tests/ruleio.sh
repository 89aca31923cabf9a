#!/usr/bin/env bash
# ruleio.sh: end-to-end tests of `superopt import-rules` and `export-rules`:
# counts on stderr, exit codes, messages with positions, no output file
# after an error, and that exported rules import back. On TASO-text rules
# of our own (tests/data/rules/taso_terms.txt) and our rules exported as
# TASO .pb; then on TASO's published rule sets where they are (SHARED_DIR/
# reference/taso, default ../shared beside the source tree), skipped with a
# message where they are not; -o - for stdout.
# usage: tests/ruleio.sh path/to/superopt path/to/source-dir [SHARED_DIR]
set -u
bin=$1
src=$2
taso=${3:-$src/../shared}/reference/taso
ours=$src/tests/data/rules/taso_terms.txt
. "$(dirname "$0")/lib.sh"
test_begin

# absent FILE : FILE was not written
absent() {
  if [ -e "$1" ]; then
    fail "$1 exists after an error"
  fi
}

expect 0 "$bin" --help
contains "import-rules"
contains "export-rules"
expect 0 "$bin" import-rules --help
contains "usage: superopt import-rules"

# import: counts and reasons
expect 0 "$bin" import-rules "$ours" -o "$tmp/t.rules"
contains "imported 34 rules; 1 unsupported"
contains "unknown term 'Iewmul' (lines 47)"
cp "$ours" "$tmp/rules.dat"
expect 0 "$bin" import-rules "$tmp/rules.dat" --format taso-text -o "$tmp/d.rules"
contains "imported 34 rules; 1 unsupported"
[ "$(grep -c '^rule ' "$tmp/d.rules")" = 34 ] ||
  fail "--format taso-text"

# export: proven only by default, everything with --all; round trip via .pb
expect 0 "$bin" export-rules "$tmp/t.rules" --format tensat -o "$tmp/none.tensat"
contains "exported 0 rules, 34 not proven left out"
expect 0 "$bin" export-rules "$tmp/t.rules" --format taso-pb --all -o "$tmp/t.pb"
contains "exported 29 rules; 5 unsupported"
contains "an output is an input (rules 9, 11, 13, 14, 26)"
expect 0 "$bin" import-rules "$tmp/t.pb" -o "$tmp/back.rules"
contains "imported 29 rules; 0 unsupported"
if command -v protoc >/dev/null 2>&1; then
  expect 0 sh -c "protoc --decode_raw < '$tmp/t.pb'"
fi
# our proven rules (the default: proven only) through TASO's format and back
expect 0 "$bin" export-rules "$src/tests/data/rules/basic.rules" \
  --format taso-pb -o "$tmp/basic.pb"
contains "exported 6 rules; 2 unsupported"
contains "matmul has no TASO equivalent (rules 6)"
expect 0 "$bin" import-rules "$tmp/basic.pb" -o "$tmp/basic.rules"
contains "imported 6 rules; 0 unsupported"
expect 0 "$bin" export-rules "$tmp/t.rules" --format json --all -o "$tmp/t.json"
contains "exported 34 rules"
expect 0 "$bin" export-rules "$tmp/t.rules" --format tensat --all -o "$tmp/t.tensat"
contains "exported 23 rules, 1 duplicates left out; 10 unsupported"
# one rule a line, no newline after the last (Tensat splits on '\n'), no
# line twice once variables are renamed
n=$(sed -n 's/^exported \([0-9]*\) rules.*/\1/p' "$tmp/out")
[ "$(($(wc -l <"$tmp/t.tensat") + 1))" = "$n" ] ||
  fail "tensat export is not $n lines"
[ "$(tail -c 1 "$tmp/t.tensat" | od -An -c | tr -d ' ')" = ")" ] ||
  fail "tensat export ends with a newline"
[ -z "$(sort "$tmp/t.tensat" | uniq -d)" ] ||
  fail "a tensat line twice"
grep -q '^(matmul 0 (matmul 0 ?input_1 ?input_4) ?input_5)=>' "$tmp/t.tensat" ||
  fail "no Tensat matmul with its activation"
expect 0 "$bin" export-rules "$tmp/t.rules" --format tensat-multi --all -o "$tmp/t.multi"
contains "exported"

# errors: usage (1), bad input (2) with position, nothing written
expect 1 "$bin" import-rules "$tmp/rules.dat" -o "$tmp/x.rules"
contains "cannot tell the format"
expect 1 "$bin" export-rules "$tmp/t.rules" --format onnx -o "$tmp/x"
contains "--format must be"
expect 1 "$bin" export-rules "$tmp/t.rules" --format json
printf 'relu(input_1) == relu(input_1)\nrelu(input_1 == input_1\n' >"$tmp/bad.txt"
expect 2 "$bin" import-rules "$tmp/bad.txt" -o "$tmp/bad.rules"
contains "bad.txt:2:14: error:"
absent "$tmp/bad.rules"
head -c 1000 "$tmp/t.pb" >"$tmp/cut.pb"
expect 2 "$bin" import-rules "$tmp/cut.pb" -o "$tmp/cut.rules"
contains "truncated"
absent "$tmp/cut.rules"
expect 2 "$bin" export-rules "$tmp/missing.rules" --format json -o "$tmp/m.json"
absent "$tmp/m.json"
expect 2 "$bin" export-rules "$ours" --format json -o "$tmp/m.json"
contains "taso_terms.txt:12:1: error:"
absent "$tmp/m.json"

# TASO's published rule sets (peer data, outside the repository)
if [ -r "$taso/taso_rules.txt" ] && [ -r "$taso/graph_subst.pb" ]; then
  expect 0 "$bin" import-rules "$taso/taso_rules.txt" -o "$tmp/taso.rules"
  contains "imported 928 rules; 3 unsupported"
  contains "unknown term 'Iewmul' (lines 257, 258, 259)"
  expect 0 "$bin" import-rules "$taso/graph_subst.pb" -o "$tmp/p.rules"
  contains "imported 133 rules; 0 unsupported"
  expect 0 "$bin" export-rules "$tmp/taso.rules" --format taso-pb --all \
    -o "$tmp/taso.pb"
  contains "exported 928 rules; 0 unsupported"
  expect 0 "$bin" import-rules "$tmp/taso.pb" -o "$tmp/taso-back.rules"
  contains "imported 928 rules; 0 unsupported"
  expect 0 "$bin" export-rules "$tmp/taso.rules" --format tensat --all \
    -o "$tmp/taso.tensat"
  [ -z "$(sort "$tmp/taso.tensat" | uniq -d)" ] ||
    fail "a tensat line twice (TASO)"
  head -c 1000 "$taso/graph_subst.pb" >"$tmp/cut.pb"
  expect 2 "$bin" import-rules "$tmp/cut.pb" -o "$tmp/cut.rules"
  contains "truncated"
  absent "$tmp/cut.rules"
else
  echo "SKIP: TASO's published rule sets not in $taso: comparison with them skipped"
fi
# The project's own rules (the first 510 of rules/default.rules: duplicates
# once variables are renamed, two-output rules from r00496 on): export to
# stdout with -o - (no file named '-'), the same bytes as to a file, and the
# rules left out counted by kind, duplicates and two-output rules apart from
# the unsupported ones.
awk '/^rule r00511 /{exit} {print}' "$src/rules/default.rules" >"$tmp/few.rules"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
cd "$tmp" || exit 1
"$bin" export-rules few.rules --format tensat -o - >few.stdout 2>out ||
  fail "export-rules -o - exited $?"
absent "$tmp/-"
expect 0 "$bin" export-rules "$tmp/few.rules" --format tensat -o "$tmp/few.tensat"
cmp -s "$tmp/few.stdout" "$tmp/few.tensat" ||
  fail "-o - differs from -o FILE"
# "exported N rules, D duplicates left out, M for the other Tensat format
# left out; U unsupported" with D, M and U the sums of their reasons
head -1 "$tmp/out" >"$tmp/head"
kinds=$(sed -n 's/^exported [0-9]* rules, \([0-9]*\) duplicates left out, \([0-9]*\) for the other Tensat format left out; \([0-9]*\) unsupported$/\1 \2 \3/p' "$tmp/head")
sums=$(awk 'NR > 1 { if (/same as an earlier rule/) d += $1; else if (/written by --format/) m += $1; else u += $1 }
  END { print d + 0, m + 0, u + 0 }' "$tmp/out")
if [ -z "$kinds" ] || [ "$kinds" != "$sums" ] || [ "${kinds%% *}" = 0 ]; then
  fail "counts by kind '$kinds', by reason '$sums'"
  sed 's/^/  | /' "$tmp/out"
fi
expect 0 "$bin" export-rules "$tmp/few.rules" --format tensat-multi -o -
contains "for the other Tensat format left out; 0 unsupported"
contains "one output (written by --format tensat)"
absent "$tmp/-"
expect 0 "$bin" export-rules --help
contains "or - for stdout"

test_end ruleio
