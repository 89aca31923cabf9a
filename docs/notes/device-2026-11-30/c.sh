#!/usr/bin/env bash
# call C: the bf16 and f16 tables (GPU0 bf16, GPU1 f16), in the network's
# layout when call B's test and ResNet-50 comparison say so
set -u
. .gpu-pack/bin/env.sh
export SUPEROPT_COSTDB=$W/user.sqlite
for dt in bf16 f16; do for b in 1 16; do for n in $NETS14; do echo "$dt $b $n"; done; done; done |
  xargs -P 16 -L 1 bash -c 'mkdir -p '$W'/tab/$0/$0/opt$1; [ -s '$W'/tab/$0/$0/opt$1/$2.graph ] && exit 0; OMP_NUM_THREADS=2 '$B'/superopt optimize '$W'/graphs/$2.graph --dtype $0 --batch $1 --no-check -o '$W'/tab/$0/$0/opt$1/$2.graph > '$W'/tab/$0.$1.$2.log 2>&1 || echo "fail $0 $1 $2"' >> $W/tab/prep.log 2>&1
echo "C prep end $(( $(date +%s) - t0 )) s" >> $W/times.txt
L=node
if grep -q "Failing: 0 | Crashing: 0" $W/tests/test_cudameasure.txt 2>/dev/null && [ -s $W/ml/network.tsv ]; then
  L=$(python3 - $W/ml/node.tsv $W/ml/network.tsv 2>> $W/times.txt <<'PY'
import sys
def rows(p):
    r = {}
    for l in open(p).read().splitlines()[1:]:
        f = l.split("\t")
        if f[1].startswith("conv"): r[f[1]] = float(f[2])
    return r
a, b = rows(sys.argv[1]), rows(sys.argv[2])
k = set(a) & set(b)
sa, sb = sum(a[x] for x in k), sum(b[x] for x in k)
print("network" if k and sb < 0.98 * sa else "node")
print("conv rows %d: node %.4f ms, network %.4f ms" % (len(k), sa, sb), file=sys.stderr)
PY
)
fi
echo "C layout $L" >> $W/times.txt
SUPEROPT_MEASURE_LAYOUT=$L GPUS=2 OUT=$W/tab DTYPES="bf16 f16" STAGES=measure MEASURE_S=520 BUDGET=$(( 560 - ($(date +%s) - t0) )) $B/gpu-half > $W/tab/gpu-half.log 2>&1
echo "C end $(( $(date +%s) - t0 )) s" >> $W/times.txt
W2=$W; W=/tmp/w10pk; rm -rf $W; mkdir -p $W
cp -a $W2/times.txt $W2/tab/prep.log $W2/tab/gpu-half.log $W2/tab/*.tsv $W/ 2>/dev/null
for dt in bf16 f16; do cp -a $W2/tab/$dt/h200-$dt.tsv $W2/tab/$dt/summary.md $W2/tab/$dt/$dt.measure.log $W/ 2>/dev/null; mv $W/summary.md $W/summary.$dt.md 2>/dev/null; done
pack
