#!/usr/bin/env bash
# costdb_oom.sh: `costdb estimate` when malloc fails inside SQLite (issue
# 40): SQLite allocates with libc's malloc, out of reach of
# $SUPEROPT_FAIL_ALLOC, so failmalloc.so (tests/failmalloc.c, LD_PRELOAD)
# fails the Nth call, for N spread over a clean run past start-up. Each run
# ends with the clean run's table (exit 0) or the out-of-memory error (exit
# 3); before, some said "corrupt cost database (quick_check: ... error
# code=7)" or "not a usable cost database: out of memory" and exited 2.
#
# usage: tests/costdb_oom.sh path/to/superopt path/to/source-dir path/to/failmalloc.so
set -u
bin=$1
src=$2
shim=$3
graph=$src/tests/data/good/every_op.graph
. "$(dirname "$0")/lib.sh"
test_begin
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export SUPEROPT_COSTDB=$tmp/c.sqlite

calls() { sed -n 's/^failmalloc: \([0-9]*\) calls$/\1/p' "$tmp/err"; }
"$bin" costdb estimate "$graph" >/dev/null 2>&1 || { echo "FAIL: setup"; exit 1; }
cp "$tmp/c.sqlite" "$tmp/ref.sqlite"
# start-up (loading the libraries) makes the first calls: not ours
FAILMALLOC_COUNT=1 LD_PRELOAD=$shim "$bin" costdb >/dev/null 2>"$tmp/err"
start=$(calls)
FAILMALLOC_COUNT=1 LD_PRELOAD=$shim "$bin" costdb estimate "$graph" \
  >"$tmp/want" 2>"$tmp/err" || { echo "FAIL: the clean run"; exit 1; }
total=$(calls)

runs=${COSTDB_OOM_RUNS:-40} noom=0 nsame=0
for ((k = 0; k < runs; k++)); do
  n=$((start + 1 + k * (total - start) / runs))
  cp "$tmp/ref.sqlite" "$tmp/c.sqlite"
  rm -f "$tmp"/c.sqlite-*
  FAILMALLOC_AT=$n LD_PRELOAD=$shim "$bin" costdb estimate "$graph" \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 3 ] && grep -q 'out of memory' "$tmp/err"; then
    noom=$((noom + 1))
  elif [ "$rc" = 0 ] && cmp -s "$tmp/out" "$tmp/want"; then
    nsame=$((nsame + 1))
  else
    fail "malloc call $n failing: exit $rc"
    head -2 "$tmp/err" | sed 's/^/  | /'
  fi
done
echo "costdb_oom: calls $start..$total, $runs runs: $noom out of memory," \
  "$nsame unchanged, $fails wrong"
[ "$fails" = 0 ]
