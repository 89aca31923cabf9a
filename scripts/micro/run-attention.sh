#!/bin/sh
# run-attention.sh: times every form of the attention nodes of
# scripts/micro/att-*.graph (the transformers' shapes at batch 16) on the
# GPU, checks the flash form against the CPU executor, and prints one line
# a graph and form: the node's time from --profile-tsv.
#
#   scripts/micro/run-attention.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR: a CUDA build (default build); OUT_DIR: where the profiles
# and logs go (default $OUT, else a temporary folder). Each graph runs
# with SUPEROPT_TUNE_LOG=1 (every form timed by the planner: the
# "superopt: attention ..." lines), then once a form with
# SUPEROPT_ATTENTION=kernel|split|flash (--iters 50 --profile-tsv), then
# flash with --check. Exit status: non-zero when a run or a check fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-build}/superopt
out=${2:-${OUT:-$(mktemp -d)}}
mkdir -p "$out" || exit 2
[ -x "$bin" ] || { echo "run-attention.sh: no $bin (build first)" >&2; exit 2; }
status=0
for g in "$here"/att-*.graph; do
  name=$(basename "$g" .graph)
  SUPEROPT_TUNE_LOG=1 "$bin" run "$g" --device cuda --iters 20 \
    >"$out/$name-tuned.log" 2>&1 || status=1
  grep "superopt: attention" "$out/$name-tuned.log" | sed "s|^|$name: |"
  for form in kernel split flash; do
    tsv="$out/$name-$form.tsv"
    SUPEROPT_ATTENTION=$form "$bin" run "$g" --device cuda --iters 50 \
      --profile-tsv "$tsv" >"$out/$name-$form.log" 2>&1 || status=1
    awk -F '\t' -v n="$name" -v f="$form" \
      '$3 == "attention" { printf "%s %s: %s, %s ms\n", n, f, $4, $7 }' \
      "$tsv" 2>/dev/null
  done
  SUPEROPT_ATTENTION=flash "$bin" run "$g" --device cuda --check \
    >"$out/$name-check.log" 2>&1 || { status=1; echo "$name: check FAILED"; }
  grep -i "check" "$out/$name-check.log" | sed "s|^|$name: |"
done
echo "logs and profiles in $out"
exit $status
