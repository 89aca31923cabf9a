# loan-1845: profile each graph of .gpu-pack/bin/prof (the optimized graphs
# of loan-1838, copied there from its tn/default and tn/none) on the GPU,
# after the bundle is unpacked
source .gpu-pack/bin/env.sh
P=$W/prof; mkdir -p $P
for g in .gpu-pack/bin/prof/*.graph; do
  s=$(basename $g .graph)
  timeout 60 $B/superopt run $g --device cuda --iters 30 --profile --profile-tsv $P/$s.tsv > $P/$s.log 2>&1 || echo "fail $s"
done
tar czf $OUT/prof.tgz -C $W prof
