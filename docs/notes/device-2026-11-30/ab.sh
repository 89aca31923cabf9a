#!/bin/bash
# (abtest/ held, for that loan only, loan-2141's opt graphs NET.default.graph,
# NET.none.graph and its unoptimized NET.orig.graph, copied from its tn/ folders)
# ab.sh: default, none and unoptimized graphs of one network timed on one GPU, interleaved
. .gpu-pack/bin/env.sh
mkdir -p $W/ab
for n in t5_encoder.b16 llama.b1 llama.b16 bert.b16 distilbert.b16 maxvit_t.b1 vit_b_16.b1; do
  for r in 1 2 3; do for k in orig default none; do
    ms=$(timeout 60 $B/superopt run abtest/$n.$k.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
    echo "$n $k $r $ms" >> $W/ab/ab.txt
  done; done
done
cat $W/ab/ab.txt
pack
