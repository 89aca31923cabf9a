# the layer norm old/new (micro), then profiles of today's graphs
source .gpu-pack/bin/env.sh
mkdir -p $W/ln $W/prof
for k in old new old new; do .gpu-pack/bin/ln_$k >> $W/ln/$k.txt 2>&1; done
for g in .gpu-pack/bin/prof/*.graph; do
  s=$(basename $g .graph)
  timeout 60 $B/superopt run $g --device cuda --iters 30 --profile --profile-tsv $W/prof/$s.tsv > $W/prof/$s.log 2>&1 || echo "fail $s"
done
echo "call 28 end $(($(date +%s) - t0)) s" >>$W/times.txt
pack
