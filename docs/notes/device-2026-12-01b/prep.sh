#!/bin/bash
# prep.sh: abtest/ for ab.sh (docs/notes/device-2026-11-30/ab.sh) on
# MaxViT-T as this tree imports it (imp.sh's graphs and small sidecars,
# in $M), b1 and b16:
#   NET.orig     the graph as imported
#   NET.default  the old default, --passes rules --rules rules/default.rules
#   NET.none     the default now (--passes none, both rules files)
#   NET.ro       the generated rules alone (--no-fuse --no-mutants)
# each optimized here (--drop-weights --no-check --device h200).
set -e
M=${M:-/tmp/m5} S=${S:-build/superopt}
export SUPEROPT_DATA=$PWD
mkdir -p abtest
for b in 1 16; do n=maxvit_t.b$b
  cp $M/$n.graph abtest/$n.orig.graph; cp $M/$n.safetensors abtest/$n.orig.safetensors
  $S optimize $M/$n.graph --no-check --device h200 --passes rules --rules rules/default.rules -o abtest/$n.default.graph --drop-weights > abtest/$n.default.log 2>&1 &
  $S optimize $M/$n.graph --no-check --device h200 -o abtest/$n.none.graph --drop-weights > abtest/$n.none.log 2>&1
  wait
  $S optimize $M/$n.graph --no-check --device h200 --no-fuse --no-mutants -o abtest/$n.ro.graph --drop-weights > abtest/$n.ro.log 2>&1
done
for f in abtest/*.graph; do echo "$f $($S costdb estimate $f --device h200 | grep 'model total' | awk '{print $3}')"; done
du -sh abtest
