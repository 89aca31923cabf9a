#!/usr/bin/env bash
set -u
. .gpu-pack/bin/env.sh
V=.gpu-pack/bin/val; mkdir -p $W/v
r() { # GPU graph MOVE_CL
  CUDA_VISIBLE_DEVICES=$1 SUPEROPT_MOVE_CL=$3 timeout 40 $B/superopt run $V/$2 --device cuda --iters 100 --warmup 20 > $W/v/$2.$3.log 2>&1
  echo "$2 cl=$3 rc=$? $(grep -o '^time: [0-9.]* ms' $W/v/$2.$3.log)" >> $W/v/sum.$1.txt
}
( r 0 bert16.graph 0; r 0 bert16.old.graph 0; r 0 mv1.0.graph 0; r 0 mv1.1.graph 1; r 0 sw16.0.graph 0; r 0 sw16.1.graph 1; r 0 bert16.graph 0; r 0 mv1.0.graph 0; r 0 mv1.1.graph 1 ) &
( r 1 mvf16.0.graph 0; r 1 mvf16.1.graph 1; r 1 sh16.0.graph 0; r 1 sh16.1.graph 1; r 1 cn16.0.graph 0; r 1 cn16.1.graph 1; r 1 bert16.old.graph 0 ) &
wait
cat $W/v/sum.*.txt
