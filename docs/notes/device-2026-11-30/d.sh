#!/usr/bin/env bash
# call D: G1's seven networks in bf16 (GPU0) and f16 (GPU1), b1 and b16,
# optimized with call C's new tables (a fresh user database), timed against
# torch.compile reduce-overhead, accuracy with calibrated batch norms
set -u
. .gpu-pack/bin/env.sh
export SUPEROPT_COSTDB=$W/user-d.sqlite
for dt in bf16 f16; do [ -s $W/tab/$dt/h200-$dt.tsv ] && cp $W/tab/$dt/h200-$dt.tsv costdb/; done
ls -la costdb/ > $W/d-costdb.txt
OUT=$W/d GPUS=2 DTYPES="bf16 f16" STAGES="prep bench" NETS="${DNETS:-$G1}" BUDGET=${DB:-400} JOBS=8 $B/gpu-half > $W/d.log 2>&1
echo "D end $(( $(date +%s) - t0 )) s" >> $W/times.txt
W2=$W; W=/tmp/w10pk; rm -rf $W; mkdir -p $W; cp -a $W2/d $W2/d.log $W2/d-costdb.txt $W2/times.txt $W/; find $W -name '*.graph' -o -name '*.safetensors' | xargs rm -f
pack
