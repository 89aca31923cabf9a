#!/usr/bin/env bash
# call B: GPU0 timed (measlay check, MaxViT MOVE_CL A/B); GPU1 untimed
# (tests, accuracy of the 14 networks at b1 in bf16 and f16 without
# torch.compile, ViT accuracy); CPU: the tables' optimized graphs (--no-check)
set -u
. .gpu-pack/bin/env.sh
mkdir -p $W/tests $W/ml $W/mv $W/acc $W/tab
export SUPEROPT_COSTDB=$W/user.sqlite
graphs14 $W/graphs
# CPU, background: graphs for call C's tables (each dtype, b1 and b16)
(
  for dt in bf16 f16; do for b in 1 16; do for n in $NETS14; do echo "$dt $b $n"; done; done; done |
  xargs -P 8 -L 1 bash -c 'mkdir -p '$W'/tab/$0/$0/opt$1; [ -s '$W'/tab/$0/$0/opt$1/$2.graph ] && exit 0; OMP_NUM_THREADS=1 '$B'/superopt optimize '$W'/graphs/$2.graph --dtype $0 --batch $1 --no-check -o '$W'/tab/$0/$0/opt$1/$2.graph > '$W'/tab/$0.$1.$2.log 2>&1 || echo "fail $0 $1 $2"' > $W/tab/prep.log 2>&1
  echo "tab prep end $(( $(date +%s) - t0 )) s" >> $W/times.txt
) &
(
  export CUDA_VISIBLE_DEVICES=0
  # measlay: ResNet-50 (zoo) optimized bf16 b16, its nodes timed alone (NCHW) vs in the network's layout
  $B/superopt optimize models/resnet50.graph --dtype bf16 --batch 16 --no-check -o $W/ml/r50.graph > $W/ml/opt.log 2>&1
  for L in node network; do
    SUPEROPT_MEASURE_LAYOUT=$L timeout 120 $B/superopt costdb measure $W/ml/r50.graph --device h200-bf16 --db $W/ml/$L.sqlite --no-tables > $W/ml/$L.log 2>&1
    echo "rc=$?" >> $W/ml/$L.log
    $B/superopt costdb export --db $W/ml/$L.sqlite --device h200-bf16 -o $W/ml/$L.tsv >> $W/ml/$L.log 2>&1
  done
  echo "ml end $(( $(date +%s) - t0 )) s" >> $W/times.txt
  # MaxViT-T b16 with and without SUPEROPT_MOVE_CL, bf16 and f32
  for dt in bf16 f32; do for cl in 0 1; do
    D=""; [ $dt = bf16 ] && D="--dtype bf16"
    SUPEROPT_MOVE_CL=$cl timeout 100 $B/superopt optimize models/onnx/exports/maxvit_t.legacy.onnx --data-input x --batch 16 $D --no-check -o $W/mv/mv.$dt.$cl.graph > $W/mv/$dt.$cl.opt.log 2>&1
    SUPEROPT_MOVE_CL=$cl timeout 60 $B/superopt run $W/mv/mv.$dt.$cl.graph --device cuda --iters 100 --warmup 20 --profile --profile-tsv $W/mv/$dt.$cl.tsv > $W/mv/$dt.$cl.run.log 2>&1
    echo "rc=$?" >> $W/mv/$dt.$cl.run.log
  done; done
  # the optimized check on one: run --check with the switch
  SUPEROPT_MOVE_CL=1 timeout 90 $B/superopt run $W/mv/mv.bf16.1.graph --device cuda --iters 3 --check > $W/mv/check.bf16.1.log 2>&1; echo "rc=$?" >> $W/mv/check.bf16.1.log
  echo "mv end $(( $(date +%s) - t0 )) s" >> $W/times.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  for f in 'cuda/move*' 'cuda/measure*'; do
    n=$(echo "$f" | tr -d '/*')
    timeout 150 $B/test_cuda --filter "$f" -j1 > $W/tests/test_$n.txt 2>&1; echo "rc=$? $(( $(date +%s) - t0 )) s" >> $W/tests/test_$n.txt
  done
  # accuracy: the 14 networks optimized at b1 (with the end-to-end check), then bench without torch.compile
  for dt in bf16 f16; do for n in $NETS14; do echo "$dt $n"; done; done |
    xargs -P 8 -L 1 bash -c 'mkdir -p '$W'/acc/$0/opt1; OMP_NUM_THREADS=2 '$B'/superopt optimize '$W'/graphs/$1.graph --dtype $0 -o '$W'/acc/$0/opt1/$1.graph > '$W'/acc/$0/opt1/$1.log 2>&1 || echo "fail $0 $1"' > $W/acc/prep.log 2>&1
  echo "acc prep end $(( $(date +%s) - t0 )) s" >> $W/times.txt
  timeout $(( 500 - ($(date +%s) - t0) )) python3 $B/bench-gpu.py --superopt $B/superopt --models $W/graphs --out $W/acc/bench --dtype bf16,f16 --accuracy --lean --batches 1 --compile-budget 0 --optimized "$W/acc/{dtype}/opt1" > $W/acc/bench.log 2>&1
  echo "acc end $(( $(date +%s) - t0 )) s" >> $W/times.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  sleep 60
  timeout $(( 520 - ($(date +%s) - t0) )) python3 $B/bench-transformers.py --superopt $B/superopt --out $W/vit --dtype bf16,f16 --accuracy --nets vit_b_16 --batches 1 --budget 400 > $W/vit.log 2>&1
  echo "vit end $(( $(date +%s) - t0 )) s" >> $W/times.txt
) &
while [ -n "$(jobs -r)" ] && [ $(( $(date +%s) - t0 )) -lt 548 ]; do sleep 2; done
echo "B pack $(( $(date +%s) - t0 )) s" >> $W/times.txt
W2=$W; W=/tmp/w10pk; rm -rf $W; mkdir -p $W; cp -a $W2/tests $W2/ml $W2/mv $W2/times.txt $W2/vit.log $W; cp -a $W2/vit $W/ 2>/dev/null
mkdir -p $W/acc; cp -a $W2/acc/bench $W2/acc/prep.log $W2/acc/bench.log $W/acc/ 2>/dev/null; rm -rf $W/acc/bench/acc
cp $W2/tab/prep.log $W/tabprep.log; ls $W2/tab/*/*/opt*/ | wc -l > $W/tabcount.txt
pack
