#!/bin/bash
# gather.sh: khalf.cu's k_gather4 (float32 rows of a multiple of 4, four
# elements a thread): test_cuda's operator graphs, then T5-small's and
# Llama's none graphs at b16 and b1 profiled (the embedding gather's time;
# loan-0619: 8.2 us each at b16) and timed as ab.sh times them beside
# their unoptimized graphs (ab.sh packs $W, these files with it).
. .gpu-pack/bin/env.sh
mkdir -p $W/ab
timeout 240 $B/test_cuda --filter='cuda/*op*' > $W/ab/tests.log 2>&1
echo "tests exit $?: $(tail -1 $W/ab/tests.log)" >> $W/ab/gather.txt
for n in t5_encoder.b16 llama.b16 t5_encoder.b1 llama.b1; do
  timeout 100 $B/superopt run abtest/$n.none.graph --device cuda --iters 50 --profile-tsv $W/ab/$n.tsv > $W/ab/$n.prof.txt 2>&1
  grep -P "\tgather\t" $W/ab/$n.tsv | sed "s/^/$n /" >> $W/ab/gather.txt
done
NETS="t5_encoder.b16 llama.b16 t5_encoder.b1 llama.b1" KINDS="orig none" ROUNDS=3 bash docs/notes/device-2026-11-30/ab.sh gather
