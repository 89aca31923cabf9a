#!/usr/bin/env bash
# z3oom.sh: the Z3 stages under allocation failure (issue 40). Z3's own
# allocations are out of reach of $SUPEROPT_FAIL_ALLOC (tests/oom.sh), so
# failmalloc.so (tests/failmalloc.c, LD_PRELOAD) fails libc's malloc
# itself: the Nth call once, then from the Nth call on, for N spread over a
# clean run of `verify-rules` on a two-rule file. Each run must end with
# the clean run's answer (exit 2: one rule does not hold) or the
# out-of-memory error (exit 3, "out of memory" on stderr), never a signal:
# before, about one run in four died by SIGSEGV or SIGABRT inside libz3.
#
# usage: tests/z3oom.sh path/to/superopt path/to/source-dir path/to/failmalloc.so
set -u
bin=$1
src=$2
shim=$3
rules=$src/tests/data/rules/unproven.rules
. "$(dirname "$0")/lib.sh"
test_begin
# OpenBLAS would start one thread per core at load; one is enough here
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

FAILMALLOC_COUNT=1 LD_PRELOAD=$shim "$bin" verify-rules "$rules" --threads 1 \
  >"$tmp/want" 2>"$tmp/err"
rc=$?
total=$(sed -n 's/^failmalloc: \([0-9]*\) calls$/\1/p' "$tmp/err")
if [ "$rc" != 2 ] || [ -z "$total" ]; then
  echo "FAIL: the clean run: exit $rc"; cat "$tmp/err"; exit 1
fi
sed -i 's/ ([0-9.]* s)$//' "$tmp/want"

runs=${Z3OOM_RUNS:-15} noom=0 nsame=0
for persist in 0 1; do
  for ((k = 0; k < runs; k++)); do
    n=$((1 + k * total / runs + (k * 7919 + persist * 104729) % (total / runs)))
    FAILMALLOC_AT=$n FAILMALLOC_PERSIST=$persist LD_PRELOAD=$shim \
      timeout 60 "$bin" verify-rules "$rules" --threads 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    sed -i 's/ ([0-9.]* s)$//' "$tmp/out"
    if [ "$rc" = 3 ] && grep -q 'out of memory' "$tmp/err"; then
      noom=$((noom + 1))
    elif [ "$rc" = 2 ] && cmp -s "$tmp/out" "$tmp/want"; then
      nsame=$((nsame + 1))
    else
      fail "malloc call $n failing (persist=$persist): exit $rc"
      grep -v '^stage' "$tmp/err" | tail -3 | sed 's/^/  | /'
    fi
  done
done
echo "z3oom: $total malloc calls, $((2 * runs)) runs: $noom out of memory," \
  "$nsame unchanged, $fails wrong"
[ "$fails" = 0 ]
