# BERT, DistilBERT, ViT-B/16, Llama with their unoptimized graphs timed too
# (shares): default on GPU 0, --passes none on GPU 1 (tree beec75d: fuse_peel)
source .gpu-pack/bin/env.sh
cat rules/default.rules rules/extended.rules >$W/both.rules
N=bert,distilbert,vit_b_16,llama
CUDA_VISIBLE_DEVICES=0 timeout 420 python3 $B/bench-transformers.py --superopt $B/superopt \
  --out $W/tn/default --nets $N --unoptimized --dtype f32 --batches 1,16 --budget 380 >$W/tn.d.log 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 420 python3 $B/bench-transformers.py --superopt $B/superopt \
  --out $W/tn/none --nets $N --unoptimized --dtype f32 --batches 1,16 --budget 380 \
  --optimize-args "--passes none --rules $W/both.rules" >$W/tn.n.log 2>&1 &
wait
echo "call 29 end $(($(date +%s) - t0)) s" >>$W/times.txt
pack
