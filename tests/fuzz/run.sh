#!/usr/bin/env bash
# run.sh: runs one fuzz target for SECONDS over its seed corpus: first
# every seed once (the regression cases), then new inputs. New corpus
# entries go to a scratch folder (the tree is not written); a crash, leak,
# sanitizer report or timeout fails, with the input saved under
# $SUPEROPT_FUZZ_ARTIFACTS (default: the scratch folder, printed).
# usage: tests/fuzz/run.sh FUZZ_BINARY CORPUS_DIR SECONDS [libFuzzer args...]
set -u
bin=$1
corpus=$2
seconds=$3
shift 3
work=$(mktemp -d)
art=${SUPEROPT_FUZZ_ARTIFACTS:-$work/artifacts}
mkdir -p "$art" "$work/new"
# the seeds alone first: each must pass (regression cases)
if ! "$bin" -runs=0 "$corpus" >"$work/seeds.log" 2>&1; then
  tail -40 "$work/seeds.log"
  echo "FAIL: $(basename "$bin"): a seed of $corpus fails"
  exit 1
fi
"$bin" "$work/new" "$corpus" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$art/" "$@" >"$work/fuzz.log" 2>&1
rc=$?
grep -E "^(stat::number_of_executed_units|stat::new_units_added)" "$work/fuzz.log"
if [ $rc != 0 ]; then
  tail -60 "$work/fuzz.log"
  echo "FAIL: $(basename "$bin") found a failing input: $(ls "$art")"
  echo "(minimise it with: $bin -minimize_crash=1 -runs=10000 $art/crash-...)"
  [ -z "${SUPEROPT_FUZZ_ARTIFACTS:-}" ] && cp -r "$art" "${TMPDIR:-/tmp}/superopt-fuzz-$$" &&
    echo "saved to ${TMPDIR:-/tmp}/superopt-fuzz-$$"
  rm -rf "$work"
  exit 1
fi
rm -rf "$work"
echo "$(basename "$bin"): ok (${seconds}s)"
