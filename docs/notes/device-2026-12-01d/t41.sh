#!/bin/bash
# t41.sh [BATCHES]: issue 41's seven transformers in float32 (default at
# b16) against torch.compile(mode="reduce-overhead") with this tree
# (kwg.cu, the re-measured matmul rows), on one GPU: each row's ours and
# anchor in one call.
. .gpu-pack/bin/env.sh
mkdir -p $W/f
timeout 560 python3 $B/bench-transformers.py --superopt $B/superopt \
  --out $W/f/a --dtype f32 --nets bert,distilbert,t5_encoder,llama,vit_b_16,swin_t,maxvit_t \
  --batches ${1:-16} --budget 520 >$W/f.a.log 2>&1
echo "end $(( $(date +%s) - t0 )) s" >> $W/times.txt
cat $W/f/a/transformers.md 2>/dev/null | grep -v "^$" | head -60
find $W/f -name '*.onnx' -o -name '*.data' -o -name '*.safetensors' | xargs rm -f
pack
