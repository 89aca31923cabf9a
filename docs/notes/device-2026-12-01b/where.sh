#!/bin/bash
# where.sh: kew.cu's k_where_row4 (T5's masked position bias, four outputs
# of a row a thread): test_cuda's operator graphs (every operator against
# the CPU, float32 and half), then T5-small's none graphs at b1 and b16
# profiled (the where node's time; loan-0552's tree: 22.9 us at b16) and
# timed as ab.sh times them beside the unoptimized and old default graphs
# (ab.sh packs $W, these files with it, into $OUT/r.tgz).
. .gpu-pack/bin/env.sh
mkdir -p $W/ab
timeout 240 $B/test_cuda --filter='cuda/*op*' > $W/ab/tests.log 2>&1
echo "tests exit $?: $(tail -1 $W/ab/tests.log)" >> $W/ab/where.txt
for b in 1 16; do
  timeout 100 $B/superopt run abtest/t5_encoder.b$b.none.graph --device cuda --iters 50 --profile-tsv $W/ab/t5.b$b.tsv > $W/ab/t5.b$b.prof.txt 2>&1
  grep -P "\twhere\t" $W/ab/t5.b$b.tsv >> $W/ab/where.txt
done
NETS="t5_encoder.b1 t5_encoder.b16" KINDS="orig default none" ROUNDS=3 bash docs/notes/device-2026-11-30/ab.sh where
