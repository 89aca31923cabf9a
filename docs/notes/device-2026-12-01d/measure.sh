#!/bin/bash
# measure.sh: test_cuda's wgmma test, the probe on BERT-base's FFN-up
# (kwg.cu's GELU epilogue against cuBLASLt and the GELU kernel), then the
# float32 matmul signatures of mm-sigs.txt (every h200 matmul row of
# costdb/h200.tsv, plus act=gelu of each biased one) measured into a fresh
# database (no tables imported: each signature timed again with the
# executor as it now is) and exported to $W/m/h200-mm.tsv.
. .gpu-pack/bin/env.sh
mkdir -p $W/m
timeout 200 $B/test_cuda --filter='cuda/matmul_wgmma*' >$W/m/tests.log 2>&1
echo "tests exit $?" >>$W/m/m.txt
tail -2 $W/m/tests.log >>$W/m/m.txt
[ -x .gpu-pack/wg/probe-wg ] && timeout 60 .gpu-pack/wg/probe-wg 2 >$W/m/probe.txt 2>&1
SUPEROPT_COSTDB=$W/m/c.sqlite timeout 400 $B/superopt costdb measure --signatures docs/notes/device-2026-12-01d/mm-sigs.txt --device h200 >$W/m/measure.log 2>&1
echo "measure exit $?" >>$W/m/m.txt
SUPEROPT_COSTDB=$W/m/c.sqlite $B/superopt costdb export --device h200 -o $W/m/h200-mm.tsv >>$W/m/m.txt 2>&1
wc -l $W/m/h200-mm.tsv >>$W/m/m.txt
cat $W/m/m.txt; cat $W/m/probe.txt | cut -c1-110
pack
