#!/usr/bin/env bash
# call 2 of 2026-11-30 03:xx: bf16 only, the 11 CNNs call 1 left, split over the two GPUs
set -u
. .gpu-pack/bin/env.sh
B=.gpu-bundle
# one optimize first: the cost cache created (WAL) before parallel jobs open it
$B/superopt optimize models/resnet34_l4.graph -o /tmp/warm.graph > $W/warm.log 2>&1; echo "warm rc=$? $(($(date +%s) - t0)) s" >> $W/times.txt
A="bert_base tv_mobilenet_v2 tv_squeezenet tv_resnet50 tv_resnext50"
Bn="tv_vgg16 tv_convnext_tiny tv_mobilenet_v3_large tv_regnet_y_800mf tv_shufflenet_v2_x1_0 tv_wide_resnet50_2"
GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=0 OUT=$W/c2/a DTYPES=bf16 STAGES="prep bench" NETS="$A" BUDGET=530 $B/gpu-half >$W/c2a.log 2>&1 &
GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=1 OUT=$W/c2/b DTYPES=bf16 STAGES="prep bench" NETS="$Bn" BUDGET=530 $B/gpu-half >$W/c2b.log 2>&1 &
wait
echo "call c2 end $(($(date +%s) - t0)) s" >>$W/times.txt
pack
