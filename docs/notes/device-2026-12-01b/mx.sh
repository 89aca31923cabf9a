#!/bin/bash
# mx.sh: MaxViT-T (imp.sh's imports) timed as ab.sh times graphs, three
# rounds interleaved, b1 and b16, KINDS orig default none ro (prep.sh),
# after test_cuda's attention tests (the rank-5 fold and rank-4 rows of
# src/gpu/run/att.c); then the none and ro graphs at b1 run once with
# --check (the GPU against the CPU reference).
. .gpu-pack/bin/env.sh
mkdir -p $W/ab
for g in none ro; do
  timeout 120 $B/superopt run abtest/maxvit_t.b1.$g.graph --device cuda --check > $W/ab/check.$g.log 2>&1
  echo "check $g exit $?: $(grep -iE '^check|max rel' $W/ab/check.$g.log | head -2 | tr '\n' ' ')" >> $W/ab/mx.txt
done
TESTS='cuda/*att*' NETS="maxvit_t.b1 maxvit_t.b16" KINDS="orig default none ro" ROUNDS=3 \
  bash docs/notes/device-2026-11-30/ab.sh mx
