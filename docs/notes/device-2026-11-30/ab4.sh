#!/bin/bash
# (abtest/ held, for that loan only, NET.{orig,default}.graph from loan-2141 and
# none56, optimized here with the default region size 56, tree 49f7e3d)
. .gpu-pack/bin/env.sh
mkdir -p $W/ab
for n in llama.b1 llama.b16 bert.b16 distilbert.b16; do
  for r in 1 2 3; do for k in orig default none56; do
    ms=$(timeout 60 $B/superopt run abtest/$n.$k.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
    echo "$n $k $r $ms" >> $W/ab/ab4.txt
  done; done
done
cat $W/ab/ab4.txt
pack
