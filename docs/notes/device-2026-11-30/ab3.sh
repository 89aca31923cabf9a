#!/bin/bash
# (abtest/ held, for that loan only, llama.bB.{orig,default}.graph from loan-2141
# and none48/none64, optimized here at --region-size 48 and 64)
. .gpu-pack/bin/env.sh
mkdir -p $W/ab
for n in llama.b1 llama.b16; do
  for r in 1 2 3; do for k in orig default none48 none64; do
    ms=$(timeout 60 $B/superopt run abtest/$n.$k.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
    echo "$n $k $r $ms" >> $W/ab/ab3.txt
  done; done
done
cat $W/ab/ab3.txt
pack
