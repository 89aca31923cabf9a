#!/usr/bin/env bash
# optimize's wall time on this 2-core machine, one at a time, the default
# (no flags but --device h200 and --batch), end-to-end check included.
# The transformers' graphs are loan-1843's benchmark imports without
# weight values (device-2026-12-01f's share.sh prep: NET.bB.orig.graph),
# copied to /tmp/d6/graphs on this machine; they are not in the repo.
so=/work/main/build/superopt
export SUPEROPT_DATA=/work/main
out=${1:-/tmp/opt60}
mkdir -p $out
: > $out/times.txt
for b in 1 16; do
  for g in /work/main/models/*.graph; do
    n=$(basename $g .graph)
    s=$(date +%s.%N)
    $so optimize $g --batch $b --device h200 -o $out/$n.b$b.graph > $out/$n.b$b.log 2>&1
    rc=$?
    echo "$n b$b rc=$rc $(echo "$(date +%s.%N) - $s" | bc)" >> $out/times.txt
  done
  for n in bert distilbert llama maxvit_t swin_t t5_encoder vit_b_16; do
    g=/tmp/d6/graphs/$n.b$b.orig.graph
    s=$(date +%s.%N)
    $so optimize $g --device h200 -o $out/$n.b$b.graph > $out/$n.b$b.log 2>&1
    rc=$?
    echo "$n b$b rc=$rc $(echo "$(date +%s.%N) - $s" | bc)" >> $out/times.txt
  done
done
