#!/usr/bin/env bash
# oom.sh: out-of-memory at every allocation (docs/architecture.md, "Out of
# memory"). For each workload (a small gen-rules, optimize, import without
# and with weight values, run on the CPU) it counts the allocations K of a clean run, then reruns it with
# $SUPEROPT_FAIL_ALLOC=N (the Nth allocation fails) for N = 1, 1+S, 1+2S..
# up to K, and asserts that each run either ends with the out-of-memory
# error (exit 3, "out of memory" on stderr, no output file written) or
# succeeds with output byte-identical to the clean run's (a .graph together
# with its .safetensors sidecar). Never a crash, a
# wrong answer, or another error.
#
# usage: tests/oom.sh path/to/superopt path/to/source-dir [WORKLOAD...]
# $OOM_RUNS (default 300) caps the runs per workload: S = ceil(K / OOM_RUNS),
# so CI samples the large walks with a stride; OOM_RUNS=0 walks every N.
# The costly workloads cap their own runs lower (gen-rules and optimize at
# 100, import-weights at 60: their runs take most of the test's time under
# ASan); import and run, a few hundred allocations each, are walked whole.
set -u
bin=$1
src=$2
shift 2
. "$(dirname "$0")/lib.sh"
test_begin --costdb
runs=${OOM_RUNS:-300}

# The workloads' inputs, made without fault injection.
cat >"$tmp/two.graph" <<'G'
input x: [1,8,6,6]
input y: [4,8]
weight a: [8,8,1,1]
weight ab: [8]
weight b: [8,8,1,1]
weight bb: [8]
weight w1: [8,8]
weight w2: [8,8]
ya = conv2d(x, a, ab)
yb = conv2d(x, b, bb)
za = relu(ya)
zb = relu(yb)
p = matmul(y, w1)
q = matmul(y, w2)
r = ewadd(p, q)
s = transpose(r) perm=[1,0]
t = relu(s)
u = transpose(t) perm=[1,0]
output za, zb, u
G
"$bin" export "$tmp/two.graph" -o "$tmp/two.onnx" >/dev/null || exit 1
"$bin" gen-rules --max-ops 2 --ops matmul,transpose,relu,ewadd --threads 1 \
  -o "$tmp/small.rules" >/dev/null 2>&1 || exit 1

# workload NAME: sets cmd (the command line, writing $tmp/out.* when it
# writes a file) and outf (the file to compare, or "" to compare stdout).
workload() {
  cap=$runs # runs of this workload at most
  case $1 in
  gen-rules)
    cmd=("$bin" gen-rules --max-ops 2 --ops matmul,transpose,relu,ewadd
      --threads 1 -o "$tmp/out.rules")
    outf=$tmp/out.rules
    cap=100 ;; # 7,061 allocations; about 0.25 CPU-s a run under ASan
  optimize)
    cmd=("$bin" optimize "$tmp/two.graph" --rules "$tmp/small.rules"
      -o "$tmp/out.graph")
    outf=$tmp/out.graph
    cap=100 ;; # about 20,000 allocations; as gen-rules
  import)
    cmd=("$bin" import "$tmp/two.onnx" -o "$tmp/out.graph")
    outf=$tmp/out.graph ;;
  import-weights) # initializers: a .graph and its .safetensors sidecar
    cmd=("$bin" import "$src/tests/data/good/small_weighted.onnx" -o "$tmp/out.graph")
    outf=$tmp/out.graph
    cap=60 ;; # about 8 s
  run)
    cmd=("$bin" run "$tmp/two.onnx" --threads 1 --seed 7)
    outf="" ;;
  *) echo "oom.sh: unknown workload $1"; exit 1 ;;
  esac
}

# attempt N: runs the workload with the Nth allocation failing (N huge: no
# failure); leaves stdout (timings dropped) in $tmp/stdout, stderr in
# $tmp/stderr, the compared output in $tmp/got, the exit status in rc and
# the allocation count in count.
attempt() {
  rm -f "$tmp"/out.* "$tmp/got"
  cp "$tmp/costdb.ref" "$SUPEROPT_COSTDB" 2>/dev/null
  SUPEROPT_FAIL_ALLOC=$1 "${cmd[@]}" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  count=$(sed -n 's/^superopt: SUPEROPT_FAIL_ALLOC: \([0-9]*\) allocations$/\1/p' "$tmp/stderr")
  if [ -n "$outf" ]; then # the file and its weights sidecar, if any
    [ -e "$outf" ] && cat "$outf" "${outf%.graph}.safetensors" >"$tmp/got" 2>/dev/null
  else
    grep '^output' "$tmp/stdout" >"$tmp/got"
  fi
}

walk() {
  workload "$1"
  rm -f "$tmp/costdb.ref" "$SUPEROPT_COSTDB"
  attempt 1000000000000
  if [ "$rc" != 0 ] || [ -z "$count" ] || [ ! -e "$tmp/got" ]; then
    fail "$1: the clean run failed (exit $rc)"
    sed 's/^/  | /' "$tmp/stderr"
    return
  fi
  cp "$tmp/got" "$tmp/want"
  [ -e "$SUPEROPT_COSTDB" ] && cp "$SUPEROPT_COSTDB" "$tmp/costdb.ref"
  local total=$count stride=1 n nrun=0 noom=0 nsame=0 nmiss=0 bad=0
  [ "$runs" -gt 0 ] && [ "$cap" -lt "$runs" ] && runs_here=$cap || runs_here=$runs
  [ "$runs_here" -gt 0 ] && stride=$(((total + runs_here - 1) / runs_here))
  for ((n = 1; n <= total; n += stride)); do
    attempt "$n"
    nrun=$((nrun + 1))
    if [ "$rc" = 3 ] && grep -q 'out of memory' "$tmp/stderr" &&
      { [ -z "$outf" ] || [ ! -e "$outf" ]; } &&
      { [ -z "$outf" ] || [ ! -e "${outf%.graph}.safetensors" ]; }; then
      noom=$((noom + 1))
    elif [ "$rc" = 0 ] && cmp -s "$tmp/got" "$tmp/want"; then
      # the same answer: the failure was handled (a cache that can do
      # without), or this run made fewer than n allocations
      if [ -n "$count" ] && [ "$count" -lt "$n" ]; then
        nmiss=$((nmiss + 1))
      else
        nsame=$((nsame + 1))
      fi
    else
      bad=$((bad + 1))
      if [ "$bad" -le 5 ]; then
        echo "FAIL: $1: allocation $n failed: exit $rc," \
          "$(cmp -s "$tmp/got" "$tmp/want" && echo same || echo different) output"
        grep -v SUPEROPT_FAIL_ALLOC "$tmp/stderr" | tail -3; tail -2 "$tmp/stdout" | sed 's/^/  | /'
      fi
    fi
  done
  echo "$1: $total allocations, $nrun runs (stride $stride): $noom out of" \
    "memory, $nsame unchanged, $nmiss not reached, $bad wrong"
  fails=$((fails + bad))
}

[ $# -gt 0 ] || set -- import import-weights run optimize gen-rules
for w in "$@"; do
  walk "$w"
done
test_end oom
