#!/bin/bash
# dyn.sh opt|ort|all: issue 41's first acceptance line at full size (all:
# opt, then ort if less than 330 s have gone).
#   opt  the seven transformers exported by both torch exporters
#        (scripts/export-transformers.py --full --seq 128 --keep-weights:
#        dynamo, the default, weights in NAME.dynamo.onnx.data; legacy,
#        weights inline), each optimized at batch 1 and 16 from the .onnx
#        (`optimize F.onnx --dim batch=B --dim seq=128 --batch B --device
#        h200`: a dynamic batch bound at import, a batch fixed at 1
#        rebatched; the end-to-end check included)
#   ort  where onnxruntime is installed, tests/onnx_models.py --optimize
#        --dropin on each file (batch 2, sequence 16: the imported and the
#        optimized graph and the drop-in ONNX against onnxruntime on the
#        original); the torchvision files with their weights made inputs
#        (small) packed as $OUT/tv.tgz
# From a bundle (docs/notes/device-2026-12-01d/README.md); W=/tmp/w10 is
# kept between the two calls of one warm machine.
. .gpu-pack/bin/env.sh
export B W
X=$W/x; mkdir -p $X $W/o
nets=bert,distilbert,t5_encoder,llama,vit_b_16,swin_t,maxvit_t
if [ "$1" = opt ] || [ "$1" = all ]; then
  for n in ${nets//,/ }; do
    timeout 200 python3 scripts/export-transformers.py --out $X/$n --full --seq 128 --keep-weights --nets $n > $W/export.$n.log 2>&1 &
  done
  wait
  echo "exported $(( $(date +%s) - t0 )) s" >> $W/times.txt
  grep -h "bytes\|FAIL" $W/export.*.log
  for f in $X/*/*.onnx; do for b in 1 16; do echo "$f $b"; done; done |
    xargs -P 14 -L 1 bash -c 'n=$(basename $0 .onnx); s=$(date +%s); timeout 280 $B/superopt optimize $0 --dim batch=$1 --dim seq=128 --batch $1 --device h200 -o $W/o/$n.b$1.graph --drop-weights > $W/o/$n.b$1.log 2>&1; echo "$n b$1 rc=$? $(( $(date +%s) - s )) s; $(grep "^check: " $W/o/$n.b$1.log | cut -c1-60)" >> $W/opt.txt'
  echo "optimized $(( $(date +%s) - t0 )) s" >> $W/times.txt
  sort $W/opt.txt
  python3 -c "import onnxruntime" 2>&1 | tail -1
fi
if [ "$1" = ort ] || { [ "$1" = all ] && [ $(( $(date +%s) - t0 )) -lt 330 ]; }; then
  if python3 -c "import onnxruntime, onnx" 2>/dev/null; then
    ls $X/*/*.onnx | xargs -P 14 -I{} sh -c 'timeout 200 python3 tests/onnx_models.py $B/superopt --optimize --dropin {} > $W/o/$(basename {} .onnx).ort.txt 2>&1'
    cat $W/o/*.ort.txt | grep -v "^onnx models"
  else
    echo "no onnxruntime here" | tee $W/ort.txt
  fi
  mkdir -p $W/tv
  for f in $X/{vit_b_16,swin_t,maxvit_t}/*.onnx; do
    cp $f $W/tv/; [ -f $f.data ] && cp $f.data $W/tv/
    python3 -c "import sys, importlib; sys.path.insert(0, 'scripts'); importlib.import_module('export-transformers').strip_weights(sys.argv[1])" $W/tv/$(basename $f) 2>> $W/tv/strip.log
  done
fi
echo "$1 end $(( $(date +%s) - t0 )) s" >> $W/times.txt
cat $W/times.txt
find $W/o -name '*.graph' -o -name '*.safetensors' | xargs rm -f
pack
[ -d $W/tv ] && tar czf $OUT/tv.tgz -C $W tv
true
