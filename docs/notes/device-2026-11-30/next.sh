#!/usr/bin/env bash
# next.sh CALL: issue 42's whole benchmark in one nvidia-h200-x2 loan
# (docs/notes/benchmarks.md, "The whole of issue 42 in one loan"),
# rewritten 2026-11-30 04:00 after the loan of 03:00 (results.md): each
# type's 14 CNNs in one call balanced over the two GPUs (the zoo's four
# graph-ro rows take about 450 s of one GPU: NASNet-A's interpreter
# compiles for 80-100 s a row), then that type's transformers split over
# the two GPUs. After `SKIP_OPTIMIZED=1 PACK=2 scripts/bundle-gpu` here,
# copy env.sh and this file into .gpu-pack/bin/; on the device, the libs
# call (carry [".gpu-pack/libs"]: tar xJf .gpu-pack/libs/libs.tar.xz -C /tmp),
# then (carry [".gpu-pack/bin"]) the first call with
#   tar xJf .gpu-pack/bin/bundle.tar.xz && cp -a /tmp/gpu-libs/. .gpu-bundle/lib/ && bash .gpu-pack/bin/next.sh 1
# (a short loan for what issue 42 still lacks: the libs call, then
# `next.sh 5`, about 600 s) and the others with `bash .gpu-pack/bin/next.sh N` (2: bf16 and f16
# transformers in one bench-transformers run a GPU, one export for both
# types, then Llama b16 bf16's split views A/B and profile; 3: f16 CNNs),
# each within 30 s of the last. Revised 2026-11-30 06:40: the f16
# transformers joined call 2 (a loan is 1,800 s with the machine's start;
# four calls came to about 1,700 s), call 1 runs the CUDA tests of the
# split views first. Results come back as $OUT/r.tgz (pack in env.sh).
set -u
. .gpu-pack/bin/env.sh
B=.gpu-bundle
# GPU 0 about 450 s, GPU 1 about 430 s by the 03:00 loan's rows
A="nasnet_a bert_base tv_squeezenet tv_mobilenet_v2 tv_shufflenet_v2_x1_0 tv_vgg16"
Z="resnet50 resnext50_taso tv_resnet50 tv_resnext50 tv_convnext_tiny tv_wide_resnet50_2 tv_mobilenet_v3_large tv_regnet_y_800mf"
cnns() { # DTYPE
  $B/superopt optimize models/resnet34_l4.graph -o /tmp/warm.graph >/dev/null 2>&1 # the cost cache made once
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=0 OUT=$W/c$1/a DTYPES=$1 STAGES="prep bench" \
    NETS="$A" BUDGET=530 $B/gpu-half >$W/c$1.a.log 2>&1 &
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=1 OUT=$W/c$1/b DTYPES=$1 STAGES="prep bench" \
    NETS="$Z" BUDGET=530 $B/gpu-half >$W/c$1.b.log 2>&1 &
  wait
}
transformers() { # DTYPE
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=0 OUT=$W/t$1/a DTYPES=$1 STAGES=transformers \
    TF_NETS=bert,t5_encoder,vit_b_16,swin_t BUDGET=300 $B/gpu-half >$W/t$1.a.log 2>&1 &
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=1 OUT=$W/t$1/b DTYPES=$1 STAGES=transformers \
    TF_NETS=distilbert,llama,maxvit_t BUDGET=300 $B/gpu-half >$W/t$1.b.log 2>&1 &
  wait
}
splittests() { # the split views' CUDA tests (layout.c), before anything is timed
  timeout 120 $B/test_cuda --filter='cuda/split_read_in_place*' >$W/splittests.log 2>&1
  echo "split tests exit $?" >>$W/times.txt
}
gate() { # after splittests in the same call: a failure turns the views off
  grep -q "Failing: 0 | Crashing: 0" $W/splittests.log || {
    export SUPEROPT_SPLIT_VIEWS=0; echo "split views off" >>$W/times.txt; }
}
both() { # bf16 and f16 transformers, one export a network for both types
  CUDA_VISIBLE_DEVICES=0 timeout 585 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/t/a --dtype bf16,f16 --accuracy --nets bert,t5_encoder,vit_b_16,swin_t \
    --batches 1,16 --budget 530 >$W/t.a.log 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 585 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/t/b --dtype bf16,f16 --accuracy --nets distilbert,llama,maxvit_t \
    --batches 1,16 --budget 500 >$W/t.b.log 2>&1 &
  wait
  L=$W/t/b/llama.b16.bf16.opt.graph # the split views A/B, then the profile
  for v in 0 1 0 1; do
    SUPEROPT_SPLIT_VIEWS=$v timeout 30 $B/superopt run $L --device cuda --iters 200 2>&1 |
      grep -E "^time|error" | sed "s/^/views=$v /" >>$W/llama-ab.txt
  done
  timeout 30 $B/superopt run $L --device cuda --iters 50 --profile >$W/llama-b16-bf16.profile.txt 2>&1
}
# a failed split-view test turns the views off for what is timed after it
[ -f $W/splittests.log ] && ! grep -q "Failing: 0 | Crashing: 0" $W/splittests.log &&
  export SUPEROPT_SPLIT_VIEWS=0 && echo "split views off" >>$W/times.txt
rest() { # what issue 42 still lacks after the 06:12 loan (notes/benchmarks.md):
  # f16 rows of the three networks its budget missed and the two refused,
  # bf16 RegNetY again (its b16 graph, refused then: a99eba4)
  $B/superopt optimize models/resnet34_l4.graph -o /tmp/warm.graph >/dev/null 2>&1
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=0 OUT=$W/r/f16 DTYPES=f16 STAGES="prep bench" \
    NETS="tv_squeezenet tv_vgg16 tv_wide_resnet50_2 tv_mobilenet_v3_large tv_regnet_y_800mf" \
    BUDGET=520 $B/gpu-half >$W/r.f16.log 2>&1 &
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=1 OUT=$W/r/bf16 DTYPES=bf16 STAGES="prep bench" \
    NETS="tv_regnet_y_800mf" BUDGET=300 $B/gpu-half >$W/r.bf16.log 2>&1 &
  wait
}
f32() { # issue 41: the seven transformers in float32 (TF32 both sides), then
  # the b16 graphs' profiles (where the time goes at b16)
  CUDA_VISIBLE_DEVICES=0 timeout 520 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/f/a --dtype f32 --nets bert,t5_encoder,vit_b_16,swin_t \
    --batches 1,16 --budget 470 >$W/f.a.log 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 520 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/f/b --dtype f32 --nets distilbert,llama,maxvit_t \
    --batches 1,16 --budget 470 >$W/f.b.log 2>&1 &
  wait
  for g in $W/f/a/bert.b16.opt.graph $W/f/b/distilbert.b16.opt.graph \
    $W/f/b/llama.b16.opt.graph $W/f/b/maxvit_t.b16.opt.graph; do
    [ -f $g ] && timeout 20 $B/superopt run $g --device cuda --iters 50 --profile \
      >$W/$(basename $g .opt.graph).f32.profile.txt 2>&1
  done
}
mb3() { # MobileNet-V3 f16 again (refused at b1 in call 5: the second test's
  # round 2 on one seed; 974de4f judges such a round over five seeds)
  $B/superopt optimize models/resnet34_l4.graph -o /tmp/warm.graph >/dev/null 2>&1
  GPU_HALF_ONE=1 CUDA_VISIBLE_DEVICES=0 OUT=$W/m/f16 DTYPES=f16 STAGES="prep bench" \
    NETS="tv_mobilenet_v3_large" BUDGET=300 $B/gpu-half >$W/m.f16.log 2>&1
}
sweep() { # issue 41: cuBLASLt's candidates per algorithm id (SUPEROPT_MM_SWEEP)
  # against the heuristic's 24, fresh tuning both (exp/: call 6's float32
  # graphs, weights drawn), alternately; GPU 0 and GPU 1 split the graphs
  one() { # GPU graphs...
    local gpu=$1; shift
    for g in "$@"; do
      n=$(basename $g .opt.graph)
      vs="0 1 0 1"; case $n in maxvit*) vs="0 1" ;; esac
      for v in $vs; do
        if [ $v = 1 ]; then e="SUPEROPT_MM_SWEEP=1 SUPEROPT_TUNE_LOG=1"; else e="SUPEROPT_TUNE_CACHE=off"; fi
        env CUDA_VISIBLE_DEVICES=$gpu $e timeout 100 $B/superopt run $g --device cuda --iters 200 \
          >$W/sw.$n.$v.out 2>$W/sw.$n.$v.err
        echo "$n sweep=$v $(grep -E '^time' $W/sw.$n.$v.out | head -1)" >>$W/sweep.$gpu.txt
      done
    done
  }
  one 0 exp/bert.b16.opt.graph exp/vit_b_16.b16.opt.graph exp/t5_encoder.b16.opt.graph exp/swin_t.b16.opt.graph &
  one 1 exp/distilbert.b16.opt.graph exp/llama.b16.opt.graph exp/bert.b1.opt.graph exp/maxvit_t.b16.opt.graph &
  wait
}
concats() { # issue 43: the float32 concat rows of costdb/h200.tsv and
  # costdb/mutants/h200.tsv measured again with today's executor (one launch
  # for all inputs; the rows of 2026-11-22 and 11-28 timed a launch an input)
  for f in h200 mut; do
    rm -f /tmp/c$f.db
    timeout 200 $B/superopt costdb measure --signatures exp/concat-$f.sigs --device h200 \
      --db /tmp/c$f.db --no-tables >$W/concat-$f.log 2>&1
    $B/superopt costdb export --db /tmp/c$f.db --device h200 -o $W/concat-$f.tsv >>$W/concat-$f.log 2>&1
  done
}
all32() { # issue 43: every row of costdb/h200.tsv measured again (the rows of
  # 11-22 and 11-29 05:46 predate kernels changed since: flash trims, row
  # kernels, one-launch concats)
  rm -f /tmp/call.db
  timeout 400 $B/superopt costdb measure --signatures exp/all-h200.sigs --device h200 \
    --db /tmp/call.db --no-tables >$W/all-h200.log 2>&1
  $B/superopt costdb export --db /tmp/call.db --device h200 -o $W/all-h200.tsv >>$W/all-h200.log 2>&1
}
mmtests() { # the matmul tests, the sweep's among them (tests/test_cuda.c)
  timeout 200 $B/test_cuda --filter='cuda/*matmul*' >$W/mmtests.log 2>&1
  echo "matmul tests exit $?" >>$W/times.txt
}
share() { # issue 43: the measured shares (default, ro, none) of the 12 zoo
  # graphs at b1 and b16 with the tree's h200 table (scripts/gpu-share)
  OUT=$W/share BUDGET=390 timeout 420 scripts/gpu-share $B/superopt >$W/share.log 2>&1
}
fitatt() { # issue 43, evening: the shares again with attention priced by
  # its padded tiles (BERT-base b16 --passes none: 50 matmuls, 68 before) on
  # GPU 0; on GPU 1 every node's time of exp/*.graph (Inception-v3 b1 none
  # and default, BERT-base b16 none and default, DeiT-tiny b1 with the old
  # and the new fit)
  CUDA_VISIBLE_DEVICES=0 OUT=$W/share BUDGET=390 timeout 420 scripts/gpu-share $B/superopt >$W/share.log 2>&1 &
  for g in exp/*.graph; do
    n=$(basename $g .graph)
    CUDA_VISIBLE_DEVICES=1 timeout 60 $B/superopt run $g --device cuda --iters 50 \
      --profile --profile-tsv $W/$n.profile.tsv >$W/$n.profile.txt 2>&1
  done
  wait
}
wheres() { # issue 43: test_cuda whole (k_where_scalar4 among the op
  # graphs), then the two where rows of costdb/h200.tsv measured again and
  # three attention signatures the fit prices (exp/where.sigs)
  timeout 300 $B/test_cuda >$W/test_cuda.log 2>&1
  echo "test_cuda exit $?" >>$W/times.txt
  rm -f /tmp/cw.db
  timeout 100 $B/superopt costdb measure --signatures exp/where.sigs --device h200 \
    --db /tmp/cw.db --no-tables >$W/where.log 2>&1
  $B/superopt costdb export --db /tmp/cw.db --device h200 -o $W/where.tsv >>$W/where.log 2>&1
}
final() { # issue 43: the shares with today's tree (attention fit, the
  # where rows and kernel, 12,288 instance proofs) on GPU 0; Inception-v3
  # alone again on GPU 1 (ITERS 50: a second sample of its rows), after
  # the first on a machine of one GPU
  local g1=1
  [ "$(nvidia-smi -L | wc -l)" -ge 2 ] || g1=0
  CUDA_VISIBLE_DEVICES=0 OUT=$W/share BUDGET=390 timeout 420 scripts/gpu-share $B/superopt >$W/share.log 2>&1 &
  [ $g1 = 1 ] || wait
  CUDA_VISIBLE_DEVICES=$g1 MODELS=models/inception_v3.graph ITERS=50 OUT=$W/inc BUDGET=150 \
    timeout 170 scripts/gpu-share $B/superopt >$W/inc.log 2>&1 &
  wait
}
small() { # issue 43: the batch-1 rows that moved by 2-11 points between
  # the 11:10 and 11:49 loans with byte-identical graphs (ResNet-34's
  # layer 4, SqueezeNet, NASNet-A, Inception-v3), twice at ITERS 200
  for k in 1 2; do
    BATCHES=1 ITERS=200 OUT=$W/small$k BUDGET=200 MODELS="models/resnet34_l4.graph \
      models/tv_squeezenet.graph models/nasnet_a.graph models/inception_v3.graph" \
      timeout 220 scripts/gpu-share $B/superopt >$W/small$k.log 2>&1
  done
}
rounds() { # gpu-share's ROUNDS (7061879): NASNet-A and ResNet-34's layer 4
  # at batch 1, three alternated rounds
  BATCHES=1 ROUNDS=3 ITERS=100 OUT=$W/rounds BUDGET=250 MODELS="models/resnet34_l4.graph \
    models/nasnet_a.graph" timeout 270 scripts/gpu-share $B/superopt >$W/rounds.log 2>&1
}
wide() { # issue 43 (e03b3ed, the wider last pass under --passes none):
  # the dilated and matmul-batch mutants' signatures (exp/mut.sigs, CSRNet
  # and BERT-base at batch 1 and 16), then NASNet-A's shares at batch 1 and
  # 16 in five alternated rounds and BERT-base's at 16 in three
  rm -f /tmp/cm.db
  timeout 120 $B/superopt costdb measure --signatures exp/mut.sigs --device h200 \
    --db /tmp/cm.db --no-tables >$W/mut.log 2>&1
  $B/superopt costdb export --db /tmp/cm.db --device h200 -o $W/mut.tsv >>$W/mut.log 2>&1
  echo "mut end $(($(date +%s) - t0)) s" >>$W/times.txt
  BATCHES="1 16" ROUNDS=5 ITERS=100 OUT=$W/wide BUDGET=300 MODELS="models/nasnet_a.graph" \
    timeout 320 scripts/gpu-share $B/superopt >$W/wide.log 2>&1
  echo "nasnet end $(($(date +%s) - t0)) s" >>$W/times.txt
  BATCHES=16 ROUNDS=3 ITERS=50 OUT=$W/wideb BUDGET=120 MODELS="models/bert_base.graph" \
    timeout 140 scripts/gpu-share $B/superopt >$W/wideb.log 2>&1
}
orders() { # issue 43 (aed1345, run's node orders): the CUDA tests of node
  # orders and streams, then the shares at batch 1 of the four networks
  # whose rows moved between samples, three alternated rounds
  timeout 200 $B/test_cuda --filter 'cuda/node_orders*' >$W/test_orders.log 2>&1
  echo "test node_orders exit $?" >>$W/times.txt
  timeout 200 $B/test_cuda --filter 'cuda/branches*' >>$W/test_orders.log 2>&1
  echo "test branches exit $?" >>$W/times.txt
  BATCHES=1 ROUNDS=3 ITERS=100 OUT=$W/orders BUDGET=330 MODELS="models/nasnet_a.graph \
    models/inception_v3.graph models/resnet34_l4.graph models/tv_squeezenet.graph" \
    timeout 350 scripts/gpu-share $B/superopt >$W/orders.log 2>&1
}
whole() { # issue 43: the shares of all 12 networks at b1 and b16 with
  # the tree of 14:13 (the wider pass, run's node orders), one round
  ITERS=50 OUT=$W/whole BUDGET=230 timeout 260 scripts/gpu-share $B/superopt >$W/whole.log 2>&1
}
canon1() { # issue 43 (the canonical node order, run's tries drawn from
  # it): the CUDA tests of node orders and streams, the 12 networks'
  # shares at batch 1 in three alternated rounds, then --check of NASNet-A's
  # none graph (run plans its canonical order)
  timeout 120 $B/test_cuda --filter 'cuda/node_orders*' >$W/test_orders.log 2>&1
  echo "test node_orders exit $?" >>$W/times.txt
  timeout 120 $B/test_cuda --filter 'cuda/branches*' >>$W/test_orders.log 2>&1
  echo "test branches exit $?" >>$W/times.txt
  BATCHES=1 ROUNDS=3 ITERS=50 OUT=$W/c1 BUDGET=480 timeout 500 scripts/gpu-share $B/superopt >$W/c1.log 2>&1
  timeout 60 $B/superopt run $W/c1/nasnet_a.b1.none.graph --device cuda --check >$W/check.txt 2>&1
  echo "check exit $?" >>$W/times.txt
}
canon16() { # issue 43: the 12 networks' shares at batch 16, two rounds
  BATCHES=16 ROUNDS=2 ITERS=30 OUT=$W/c16 BUDGET=540 timeout 570 scripts/gpu-share $B/superopt >$W/c16.log 2>&1
}
rot1() { # issue 43: the 12 networks' shares at batch 1, four rounds, each
  # starting one graph later (gpu-share's rotation)
  BATCHES=1 ROUNDS=4 ITERS=40 OUT=$W/r1 BUDGET=480 timeout 500 scripts/gpu-share $B/superopt >$W/r1.log 2>&1
}
rot16() { # issue 43: the same at batch 16
  BATCHES=16 ROUNDS=4 ITERS=20 OUT=$W/r16 BUDGET=545 timeout 570 scripts/gpu-share $B/superopt >$W/r16.log 2>&1
}
resmerge() { # issue 43 (the eighth tier's residual merges e00770-1):
  # ResNet-50 and ResNeXt-50 (TASO) at b1 and b16, four rotated rounds
  BATCHES="1 16" ROUNDS=4 ITERS=30 OUT=$W/rm BUDGET=330 MODELS="models/resnet50.graph \
    models/resnext50_taso.graph" timeout 350 scripts/gpu-share $B/superopt >$W/rm.log 2>&1
}
tfnone() { # issue 43 (written 2026-11-30 16:45, not yet run; nvidia-h200-x2
  # after a fresh bundle-gpu: bench-transformers.py --optimize-args): the
  # seven transformers in float32 at b1 and b16, the default on GPU 0 and
  # `--passes none` with the generated rules on GPU 1, to see whether the
  # none path holds 98% of the default's gain where the search's model
  # says it does not (Llama 92%, the small BERT and DistilBERT 95.8%)
  cat rules/default.rules rules/extended.rules >$W/both.rules
  CUDA_VISIBLE_DEVICES=0 timeout 560 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/tn/default --dtype f32 --batches 1,16 --budget 500 >$W/tn.d.log 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 560 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/tn/none --dtype f32 --batches 1,16 --budget 500 \
    --optimize-args "--passes none --rules $W/both.rules" >$W/tn.n.log 2>&1 &
  wait
}
tfall() { # issue 43 (written 2026-11-30 20:20, not yet run; nvidia-h200-x2
  # after a fresh bundle-gpu): the seven transformers in float32 at b1 and
  # b16 with their unoptimized times (shares per GPU), the default on GPU 0
  # and --passes none on GPU 1; then the small sidecars of every graph
  # (smallw.py, for `optimize --device h200` here on the same graphs with
  # their constants) and the profiles of MaxViT-T b16's and Llama's
  # optimized graphs, default and none (the two rows still short)
  cat rules/default.rules rules/extended.rules >$W/both.rules
  CUDA_VISIBLE_DEVICES=0 timeout 540 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/tn/default --unoptimized --dtype f32 --batches 1,16 --budget 480 >$W/tn.d.log 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 540 python3 $B/bench-transformers.py --superopt $B/superopt \
    --out $W/tn/none --unoptimized --dtype f32 --batches 1,16 --budget 480 \
    --optimize-args "--passes none --rules $W/both.rules" >$W/tn.n.log 2>&1 &
  wait
}
tfpost() { # after tfall in the same loan (2026-11-30 21:40: split from
  # tfall, whose benchmark takes the call's 600 s): the sidecars, profiles
  python3 docs/notes/device-2026-11-30/smallw.py $W/tn
  mkdir -p $W/prof
  for k in default none; do for g in maxvit_t.b16 llama.b1 llama.b16; do
    [ -e $W/tn/$k/$g.opt.graph ] && timeout 60 $B/superopt run $W/tn/$k/$g.opt.graph \
      --device cuda --iters 30 --profile --profile-tsv $W/prof/$k.$g.tsv >$W/prof/$k.$g.log 2>&1
  done; done
}
tfmm() { # issue 43 (2026-11-30 22:30): the matmul and attention
  # signatures the seven transformers' searches priced by the fit alone
  # (tf-mm.sig, optimize --emit-signatures here on the benchmark's own
  # graphs, default and none; ViT-B/16 b1's out_proj with its residual was
  # measured, 8.5 us, the plain one fitted at 5.6, so the search kept the
  # transpose the ninth tier sinks), into a fresh database
  rm -f /tmp/tfmm.db
  timeout 400 $B/superopt costdb measure --signatures docs/notes/device-2026-11-30/tf-mm.sig \
    --device h200 --db /tmp/tfmm.db --no-tables >$W/tfmm.log 2>&1
  $B/superopt costdb export --db /tmp/tfmm.db --device h200 -o $W/tfmm.tsv >>$W/tfmm.log 2>&1
}
cnn56() { # issue 43 (2026-12-01 00:00, tree c83510a: regions of 56): the
  # 12 graphs of models/ (default, ro, none; scripts/gpu-share), batch 1 in
  # three rotated rounds on GPU 0, batch 16 in two on GPU 1, after tfall
  # in the same loan: the whole benchmark at 56 before the flip
  CUDA_VISIBLE_DEVICES=0 BATCHES=1 ROUNDS=3 ITERS=40 OUT=$W/s1 BUDGET=500 \
    timeout 530 scripts/gpu-share $B/superopt >$W/s1.log 2>&1 &
  CUDA_VISIBLE_DEVICES=1 BATCHES=16 ROUNDS=2 ITERS=20 OUT=$W/s16 BUDGET=500 \
    timeout 530 scripts/gpu-share $B/superopt >$W/s16.log 2>&1 &
  wait
}
final2() { # issue 43 (2026-12-01 01:25, the final tree: the flip, the
  # broadcast encoding and instances, the mutant site fix): the 12 graphs'
  # shares at b1 and b16 in one round on one GPU (gpu-share: default = the
  # old default, --passes rules; none = the new default's pipeline)
  BATCHES="1 16" ROUNDS=1 ITERS=20 OUT=$W/f2 BUDGET=450 \
    timeout 480 scripts/gpu-share $B/superopt >$W/f2.log 2>&1
}
case ${1:-} in
36) final2 ;; # after the libs call on one nvidia-h200 (about 450 s)
35) cnn56 ;; # after 32 in the same loan (about 540 s)
32) tfall ;; # a fresh loan of nvidia-h200-x2: the libs call, then this (about 560 s)
34) tfmm ;; # after the libs call (about 120 s)
33) tfpost ;; # after 32, without removing /tmp/w10 (about 200 s)
26) tfnone ;; # a fresh loan of nvidia-h200-x2: the libs call, then this (about 570 s)
25) resmerge ;; # after the libs call (about 250 s)
23) rot1 ;; # after the libs call (about 500 s)
24) rot16 ;; # after 23 (about 570 s)
21) canon1 ;; # after the libs call (about 560 s)
22) canon16 ;; # after 21 (about 570 s)
20) whole ;; # after the libs call (about 260 s: b1, then b16 as far as BUDGET goes)
19) orders ;; # after the libs call (about 400 s)
18) wide ;; # after the libs call (about 500 s)
17) rounds ;; # after the libs call (about 150 s)
16) small ;; # after the libs call (about 300 s)
15) final ;; # after the libs call (about 300 s)
14) wheres ;; # after the libs call (about 150 s)
13) fitatt ;; # after the libs call (about 400 s)
12) share ;; # after the libs call (about 400 s)
11) mmtests ;; # after the libs call (about 30 s)
10) all32 ;; # after the libs call (about 60 s)
9) concats ;; # after the libs call (about 60 s)
8) sweep ;; # after the libs call (about 200 s)
7) mb3 ;; # a short loan: the libs call, then this (about 150 s)
6) f32 ;; # after 5, in the same loan (about 560 s)
5) splittests; gate; rest ;; # a short loan: the libs call, then this (about 600 s)
1) splittests; gate; cnns bf16 ;;
2) both ;;
3) cnns f16 ;;
4) transformers f16 ;; # the old call 4, if call 2 ran bf16 alone
*) echo "usage: next.sh 1|2|...|22" >&2; exit 2 ;;
esac
echo "call $1 end $(($(date +%s) - t0)) s" >>$W/times.txt
pack
