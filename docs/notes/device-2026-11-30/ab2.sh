#!/bin/bash
# (abtest/ held, for that loan only, llama.bB.{orig,default,none0}.graph from
# loan-2141 and none1, optimized here with the nested-split pricing)
. .gpu-pack/bin/env.sh
mkdir -p $W/ab
timeout 150 $B/test_cuda --filter='cuda/*split*' > $W/ab/splittests.log 2>&1; echo "split tests exit $?" >> $W/ab/ab2.txt
tail -3 $W/ab/splittests.log >> $W/ab/ab2.txt
for n in llama.b1 llama.b16; do
  for r in 1 2 3; do for k in orig default none0 none1; do
    ms=$(timeout 60 $B/superopt run abtest/$n.$k.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
    echo "$n $k $r $ms" >> $W/ab/ab2.txt
  done; done
done
for k in none0 none1; do timeout 60 $B/superopt run abtest/llama.b1.$k.graph --device cuda --iters 30 --profile --profile-tsv $W/ab/$k.b1.tsv > $W/ab/$k.b1.prof.log 2>&1; done
cat $W/ab/ab2.txt
pack
