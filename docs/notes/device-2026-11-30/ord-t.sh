#!/bin/bash
# alternated rounds of the graphs in exp/ord at batch 1
. .gpu-pack/bin/env.sh
B=.gpu-bundle
for r in 1 2 3 4 5; do
  for g in ${GRAPHS:-default.orig none.orig default.dfs none.dfs default.alap none.alap}; do
    $B/superopt run exp/ord/$g.graph --device cuda --iters 200 > /tmp/o.txt 2>&1
    ms=$(sed -n 's/^time: \([0-9.]*\) ms.*/\1/p' /tmp/o.txt)
    [ $r = 1 ] && grep -h "^streams" /tmp/o.txt | sed "s/^/$g /" >> /tmp/streams.txt
    echo "$r $g $ms"
  done
done > $OUT/ord.txt 2>&1
cat /tmp/streams.txt >> $OUT/ord.txt
cat $OUT/ord.txt
