# session 2026-11-30 evening: the layer norm's block size (old/new), then
# the seven transformers default (GPU 0) and --passes none (GPU 1)
source .gpu-pack/bin/env.sh
mkdir -p $W/ln
( nvcc -O3 -std=c++17 -arch=sm_90 -Isrc/gpu/kern -o /tmp/ln_new scripts/micro-layernorm.cu &&
  cd .gpu-pack/bin/old && nvcc -O3 -std=c++17 -arch=sm_90 -Isrc/gpu/kern -o /tmp/ln_old scripts/micro-layernorm.cu ) > $W/ln/build.log 2>&1
CUDA_VISIBLE_DEVICES=0 /tmp/ln_old > $W/ln/old.txt 2>&1
CUDA_VISIBLE_DEVICES=0 /tmp/ln_new > $W/ln/new.txt 2>&1
CUDA_VISIBLE_DEVICES=0 /tmp/ln_old > $W/ln/old2.txt 2>&1
echo "ln done $(($(date +%s) - t0)) s" >> $W/times.txt
cat rules/default.rules rules/extended.rules >$W/both.rules
CUDA_VISIBLE_DEVICES=0 timeout 480 python3 $B/bench-transformers.py --superopt $B/superopt \
  --out $W/tn/default --dtype f32 --batches 1,16 --budget 450 >$W/tn.d.log 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 480 python3 $B/bench-transformers.py --superopt $B/superopt \
  --out $W/tn/none --dtype f32 --batches 1,16 --budget 450 \
  --optimize-args "--passes none --rules $W/both.rules" >$W/tn.n.log 2>&1 &
wait
echo "call 27 end $(($(date +%s) - t0)) s" >>$W/times.txt
pack
