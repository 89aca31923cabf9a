#!/bin/bash
# fin.sh: (1) fitreg/'s graphs (main's and the fit's seventh round's none
# graphs of Inception-v3 b1/b16 and ResNet-50 b16) timed in turn, three
# rounds, `superopt run G --device cuda --iters 20` (prof.sh without its
# profiles); (2) ViT-B/16 exported by both exporters at full size with
# export-transformers.py's tv_model (no zero head, MHA fast path off) and
# optimized at b1 and b16 with the check (dyn.sh's optimize line), and
# Swin-T's dynamo file exported again with its weights made inputs (the
# stripping now keeps ScatterND's float tables) for models/onnx/exports.
. .gpu-pack/bin/env.sh
export B W
F=docs/notes/device-2026-12-01e/fitreg
for n in inception_v3.b1 inception_v3.b16 resnet50.b16; do
  for r in 1 2 3; do for k in main fitreg; do
    ms=$(timeout 60 $B/superopt run $F/$n.none.$k.graph --device cuda --iters 20 2>&1 | sed -n 's/^time: \([0-9.]*\) ms.*/\1/p')
    echo "$n $k $r $ms" | tee -a $W/fit.txt
  done; done
done
echo "timed $(( $(date +%s) - t0 )) s" >> $W/times.txt
X=$W/x; mkdir -p $X $W/o $W/tv
timeout 100 python3 scripts/export-transformers.py --out $X/vit_b_16 --full --seq 128 --keep-weights --nets vit_b_16 > $W/export.vit_b_16.log 2>&1 &
timeout 100 python3 scripts/export-transformers.py --out $W/tv --full --nets swin_t > $W/export.swin_t.log 2>&1 &
wait
grep -h "bytes\|FAIL" $W/export.*.log
for f in $X/vit_b_16/*.onnx; do for b in 1 16; do echo "$f $b"; done; done |
  xargs -P 4 -L 1 bash -c 'n=$(basename $0 .onnx); s=$(date +%s); timeout 150 $B/superopt optimize $0 --dim batch=$1 --dim seq=128 --batch $1 --device h200 -o $W/o/$n.b$1.graph --drop-weights > $W/o/$n.b$1.log 2>&1; echo "$n b$1 rc=$? $(( $(date +%s) - s )) s; $(grep "^check" $W/o/$n.b$1.log | cut -c1-150)" >> $W/opt.txt'
sort $W/opt.txt
echo "end $(( $(date +%s) - t0 )) s" >> $W/times.txt
cat $W/times.txt
find $W/o -name '*.graph' -o -name '*.safetensors' | xargs rm -f
rm -f $W/tv/*.legacy.onnx
pack
tar czf $OUT/tv.tgz -C $W tv
true
