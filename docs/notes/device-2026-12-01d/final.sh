#!/bin/bash
# final.sh: ab2.sh (BERT-base and DistilBERT b16, old default graphs
# against loan-1212's) with a block a tile, then t41.sh's b16 benchmark.
. .gpu-pack/bin/env.sh
bash docs/notes/device-2026-12-01d/ab2.sh > /dev/null 2>&1
cp $W/ab2/ab2.txt $OUT/ 2>/dev/null
mkdir -p $W/f
timeout 390 python3 $B/bench-transformers.py --superopt $B/superopt \
  --out $W/f/a --dtype f32 --nets bert,distilbert,t5_encoder,llama,vit_b_16,swin_t,maxvit_t \
  --batches 16 --budget 370 >$W/f.a.log 2>&1
cat $W/ab2/ab2.txt
cat $W/f/a/transformers.md 2>/dev/null | grep -v "^$" | head -40
find $W/f -name '*.onnx' -o -name '*.data' -o -name '*.safetensors' | xargs rm -f
pack
