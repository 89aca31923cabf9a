#!/bin/sh
# run-attention.sh: times every form of the attention nodes of
# scripts/micro/att-*.graph (the transformers' shapes at batch 16) on the
# GPU in float32 and in bf16 and f16 (run --dtype), checks each form
# against the CPU executor, and prints one line a graph, type and form:
# the node's engine and time from --profile-tsv and the check's verdict.
#
#   scripts/micro/run-attention.sh [BUILD_DIR] [OUT_DIR] [TYPES]
#
# BUILD_DIR: a CUDA build (default build); OUT_DIR: where the profiles
# and logs go (default $OUT, else a temporary folder); TYPES: the element
# types to run (default "f32 bf16 f16"). Each graph and type runs once
# with SUPEROPT_TUNE_LOG=1 (every form timed by the planner: the
# "superopt: attention ..." lines), then once a form with
# SUPEROPT_ATTENTION=kernel|split|flash (split: float32 only, cuBLAS's
# float32 GEMMs) and --iters 50 --profile-tsv --check. Output lines:
#   att-vit bf16 flash: flash attention kernel, 0.0123 ms, check ok
# Exit status: non-zero when a run or a check fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-build}/superopt
out=${2:-${OUT:-$(mktemp -d)}}
types=${3:-f32 bf16 f16}
mkdir -p "$out" || exit 2
[ -x "$bin" ] || { echo "run-attention.sh: no $bin (build first)" >&2; exit 2; }
status=0
for g in "$here"/att-*.graph; do
  name=$(basename "$g" .graph)
  for ty in $types; do
    dt=""
    forms="kernel split flash"
    if [ "$ty" != f32 ]; then
      dt="--dtype $ty"
      forms="kernel flash"
    fi
    # shellcheck disable=SC2086 # $dt: empty or two words
    SUPEROPT_TUNE_LOG=1 "$bin" run "$g" --device cuda --iters 20 $dt \
      >"$out/$name-$ty-tuned.log" 2>&1 || status=1
    grep "superopt: attention" "$out/$name-$ty-tuned.log" |
      sed "s|^|$name $ty: |"
    for form in $forms; do
      base="$out/$name-$ty-$form"
      # shellcheck disable=SC2086
      if ! SUPEROPT_ATTENTION=$form "$bin" run "$g" --device cuda --iters 50 \
        $dt --check --profile-tsv "$base.tsv" >"$base.log" 2>&1; then
        status=1
      fi
      if ! grep -q "^check " "$base.log"; then
        verdict="not run"
      elif grep "^check " "$base.log" | grep -q FAIL; then
        verdict=FAILED
      else
        verdict=ok
      fi
      [ "$verdict" = ok ] || status=1
      awk -F '\t' -v n="$name" -v t="$ty" -v f="$form" -v c="$verdict" \
        '$3 == "attention" {
           printf "%s %s %s: %s, %s ms, check %s\n", n, t, f, $4, $7, c }' \
        "$base.tsv" 2>/dev/null
    done
  done
done
echo "logs and profiles in $out"
exit $status
