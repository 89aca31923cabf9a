#!/usr/bin/env bash
# gen_golden.sh: `gen-rules --max-ops 3` writes the same file as before,
# byte for byte (its SHA-256 in tests/data/gen/max-ops-3.sha256). The
# enumeration, fingerprinting, pairing and pruning are sped up without
# changing what they find; this catches a change that does. If a change of
# the file is intended, write the new hash there and say why in the commit
# (rules/default.rules, the --max-ops 4 file, would change too).
# usage: tests/gen_golden.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin

want=$(cat "$src/tests/data/gen/max-ops-3.sha256")
expect 0 "$bin" gen-rules --max-ops 3 --threads 2 -o "$tmp/r3.rules"
got=$(sha256sum "$tmp/r3.rules" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  fail "gen-rules --max-ops 3 wrote another file than before"
  echo "  (sha256 $got, expected $want; $(grep -c '^rule ' "$tmp/r3.rules") rules)"
fi
test_end gen_golden
