# prof.sh: per-node profiles (run --profile-tsv) of four transformers' none graphs at b16 (issue 41: where the time goes)
. .gpu-pack/bin/env.sh
mkdir -p $OUT/prof
for n in t5_encoder.b16 swin_t.b16 llama.b16 bert.b16; do
  timeout 100 $B/superopt run abtest/$n.none.graph --device cuda --iters 50 --profile --profile-tsv $OUT/prof/$n.tsv > $OUT/prof/$n.txt 2>&1
done
head -30 $OUT/prof/t5_encoder.b16.txt
