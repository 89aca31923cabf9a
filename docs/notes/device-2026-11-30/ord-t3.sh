#!/bin/bash
# NASNet-A and Inception-v3 b1: orig, default, none with --orders 1 and 8, 3 alternated rounds
. .gpu-pack/bin/env.sh
SO=$B/superopt
t0=$(date +%s)
$SO run exp/ord/default.orig.graph --device cuda --iters 20 --check > $OUT/check.txt 2>&1; echo "check exit $? $(($(date +%s)-t0)) s" >> $OUT/check.txt
for r in 1 2 3; do
  for g in orig default.orig none.orig inc.orig inc.default inc.none; do
    for k in 1 8; do
      s=$(date +%s%N)
      $SO run exp/ord/$g.graph --device cuda --iters 200 --orders $k > /tmp/o.txt 2>&1
      e=$(date +%s%N)
      echo "$r $g $k $(sed -n 's/^time: \([0-9.]*\) ms.*/\1/p' /tmp/o.txt) $(( (e - s) / 1000000 ))ms $(grep -h '^orders' /tmp/o.txt)"
    done
  done
done > $OUT/t3.txt 2>&1
cat $OUT/t3.txt | tail -40; tail -3 $OUT/check.txt
