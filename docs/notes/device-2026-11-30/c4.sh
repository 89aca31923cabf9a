#!/usr/bin/env bash
# call 4: the two torchvision networks whose bf16 check failed, exported with their weights (to reproduce on the CPU), and the f16 transformers in what is left
set -u
tar xJf .gpu-pack/bin/bundle.tar.xz && cp -a /tmp/gpu-libs/. .gpu-bundle/lib/
. .gpu-pack/bin/env.sh
B=.gpu-bundle
mkdir -p $OUT/tv
( python3 $B/bench-gpu.py --superopt $B/superopt --models $OUT/tv --export-tv tv_mobilenet_v3_large,tv_regnet_y_800mf > $OUT/tv/export.log 2>&1; echo "export rc=$? $(($(date +%s) - t0)) s" >> $W/times.txt ) &
$B/superopt optimize models/resnet34_l4.graph -o /tmp/warm.graph > $W/warm.log 2>&1
dt=f16
GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=0 OUT=$W/t$dt/a DTYPES=$dt STAGES=transformers TF_NETS=bert,t5_encoder,vit_b_16,swin_t BUDGET=270 timeout 290 $B/gpu-half >$W/t$dt.a.log 2>&1 &
GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=1 OUT=$W/t$dt/b DTYPES=$dt STAGES=transformers TF_NETS=distilbert,llama,maxvit_t BUDGET=270 timeout 290 $B/gpu-half >$W/t$dt.b.log 2>&1 &
wait
echo "call 4 end $(($(date +%s) - t0)) s" >>$W/times.txt
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv > $W/nvsmi.txt 2>&1
tar czf $OUT/r.tgz -C $W --exclude='*.graph' --exclude='*.safetensors' --exclude='*.onnx' --exclude='*.data' --exclude='*.sqlite' --exclude='graphs' .
ls -la $OUT/tv; cat $W/times.txt
