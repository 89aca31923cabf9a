#!/bin/bash
# ab.sh [TAG]: graphs of a network timed interleaved on one GPU (three
# rounds of `superopt run --device cuda --iters 200`, each graph in turn),
# so that shares near the 98% line do not rest on two GPUs' difference.
# abtest/NET.KIND.graph (not kept: copied in for the loan) for each NET of
# $NETS and KIND of $KINDS; $TESTS, when set, a test_cuda filter run first.
# Results in $W/ab/TAG.txt (TAG: ab). The loans' runs:
#   loan-2203: NETS="t5_encoder.b16 llama.b1 llama.b16 bert.b16 distilbert.b16
#              maxvit_t.b1 vit_b_16.b1" KINDS="orig default none" (loan-2141's
#              graphs: orig its tn/none/NET.graph, default and none its
#              NET.opt.graph), TAG ab
#   loan-2224: NETS="llama.b1 llama.b16" KINDS="orig default none0 none1"
#              (and `superopt run --profile` of the two none graphs at b1)
#              TESTS='cuda/*split*' (none0 loan-2141's, none1 optimized here
#              with nested splits read in place), TAG ab2
#   loan-2258: the same NETS, KINDS="orig default none48 none64" (optimized
#              here at --region-size 48 and 64), TAG ab3
#   loan-2305: NETS="llama.b1 llama.b16 bert.b16 distilbert.b16"
#              KINDS="orig default none56" (tree 49f7e3d's default 56), TAG ab4
#   loan-0015: NETS="t5_encoder.b16 maxvit_t.b1 resnet34_l4.b1"
#              KINDS="orig default none" (loan-2356's graphs), TAG ab5; then
#              ROUNDS=1 the 14 transformer rows' ro graphs (--passes none
#              --no-fuse --no-mutants, optimized here), KINDS=ro, TAG ro
. .gpu-pack/bin/env.sh
tag=${1:-ab}
mkdir -p $W/ab
if [ -n "${TESTS:-}" ]; then
  timeout 150 $B/test_cuda --filter="$TESTS" >$W/ab/tests.log 2>&1
  echo "tests exit $?" >>$W/ab/$tag.txt
  tail -3 $W/ab/tests.log >>$W/ab/$tag.txt
fi
for n in $NETS; do
  for r in $(seq ${ROUNDS:-3}); do for k in $KINDS; do
    ms=$(timeout 60 $B/superopt run abtest/$n.$k.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
    echo "$n $k $r $ms" >>$W/ab/$tag.txt
  done; done
done
cat $W/ab/$tag.txt
pack
