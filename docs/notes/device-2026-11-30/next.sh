#!/usr/bin/env bash
# next.sh CALL: issue 42's whole benchmark in one nvidia-h200-x2 loan
# (docs/notes/benchmarks.md, "The whole of issue 42 in one loan"), written
# 2026-11-30, not yet run. After `SKIP_OPTIMIZED=1 PACK=2 scripts/bundle-gpu`
# here, copy env.sh and this file into .gpu-pack/bin/; on the device, the
# libs call, then (carry [".gpu-pack/bin"]) the first call with
#   tar xJf .gpu-pack/bin/bundle.tar.xz && cp -a /tmp/gpu-libs/. .gpu-bundle/lib/ && bash .gpu-pack/bin/next.sh 1
# and the others with `bash .gpu-pack/bin/next.sh N`, each within 30 s of
# the last. Results come back as $OUT/r.tgz (pack in env.sh).
set -u
. .gpu-pack/bin/env.sh
B=.gpu-bundle
case ${1:-} in
1) # the seven CNNs of G1, bf16 on GPU 0 and f16 on GPU 1
  OUT=$W/c1 GPUS=2 STAGES="prep bench" NETS="$G1" BUDGET=540 $B/gpu-half >$W/c1.log 2>&1 ;;
2) # G2, and whatever call 1 left without both batches
  rest=$(missing $W "$G1")
  OUT=$W/c2 GPUS=2 STAGES="prep bench" NETS="$G2 $rest" BUDGET=540 $B/gpu-half >$W/c2.log 2>&1 ;;
3 | 4) # the seven transformers in one type, split over the two GPUs
  dt=bf16; [ "$1" = 4 ] && dt=f16
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=0 OUT=$W/t$dt/a DTYPES=$dt STAGES=transformers \
    TF_NETS=bert,t5_encoder,vit_b_16,swin_t BUDGET=520 $B/gpu-half >$W/t$dt.a.log 2>&1 &
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=1 OUT=$W/t$dt/b DTYPES=$dt STAGES=transformers \
    TF_NETS=distilbert,llama,maxvit_t BUDGET=520 $B/gpu-half >$W/t$dt.b.log 2>&1 &
  wait ;;
*) echo "usage: next.sh 1|2|3|4" >&2; exit 2 ;;
esac
echo "call $1 end $(($(date +%s) - t0)) s" >>$W/times.txt
pack
