#!/bin/bash
# wg.sh [TAG]: kwg.cu's matmul against cuBLASLt and the epilogue kernel in
# whole networks: abtest/NET.default.graph of each NET of $NETS run with
# SUPEROPT_WG=0 (cuBLASLt always) and unset (kwg where gpu_wg_choose takes
# it), interleaved, $ROUNDS rounds of `superopt run --device cuda --iters
# 200`; the choices of one run in $W/wg/NET.tune.txt; $TESTS, when set, a
# test_cuda filter run first. Results in $W/wg/TAG.txt.
. .gpu-pack/bin/env.sh
tag=${1:-wg}
mkdir -p $W/wg
if [ -n "${TESTS:-}" ]; then
  timeout 200 $B/test_cuda --filter="$TESTS" >$W/wg/tests.log 2>&1
  echo "tests exit $?" >>$W/wg/$tag.txt
  tail -3 $W/wg/tests.log >>$W/wg/$tag.txt
fi
for n in $NETS; do
  SUPEROPT_TUNE_LOG=1 timeout 60 $B/superopt run abtest/$n.default.graph --device cuda --iters 20 2>&1 | grep -E "kwg|^time" > $W/wg/$n.tune.txt
  for r in $(seq ${ROUNDS:-3}); do for k in 0 auto; do
    if [ $k = 0 ]; then export SUPEROPT_WG=0; else unset SUPEROPT_WG; fi
    ms=$(timeout 60 $B/superopt run abtest/$n.default.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
    echo "$n $k $r $ms" >>$W/wg/$tag.txt
  done; done
  unset SUPEROPT_WG
done
cat $W/wg/$tag.txt
pack
