#!/bin/bash
# check.sh: issue 43, the end-to-end check on the seven transformers with
# their weights. export.py (device-2026-12-01f: bench-transformers.py's
# exports at b1 and b16, imported with their weights), then each graph
# optimized with the default and the check on (`optimize --device h200`,
# nothing else), 7 at a time; then T5-small's graphs without their weight
# values (the check draws them), as the local run of 2026-12-01 did.
. .gpu-pack/bin/env.sh
D=docs/notes/device-2026-12-01f
mkdir -p $W/graphs/w $W/logs $OUT
SO=$B/superopt timeout 300 python3 $D/export.py $W/graphs/w > $OUT/export.txt 2>&1
cat $OUT/export.txt
echo "exported $(( $(date +%s) - t0 )) s"
export B W
ls $W/graphs/w/*.orig.graph | xargs -P 7 -n 1 bash -c '
  f=$0 n=$(basename $0 .orig.graph) s=$(date +%s)
  OMP_NUM_THREADS=2 timeout 250 $B/superopt optimize $f --device h200 -o $W/graphs/$n.opt.graph > $W/logs/$n.log 2>&1
  echo "$n weights rc=$? $(( $(date +%s) - s )) s $(grep -E "^check:|differ" $W/logs/$n.log | cut -c1-160)" >> $W/check.txt'
for b in 1 16; do
  f=$W/graphs/w/t5_encoder.b$b.orig.graph
  grep -v '^#' $f > $W/t5.b$b.nw.graph
  s=$(date +%s)
  OMP_NUM_THREADS=8 timeout 120 $B/superopt optimize $W/t5.b$b.nw.graph --device h200 -o $W/t5.b$b.nw.opt.graph > $W/logs/t5.b$b.nw.log 2>&1
  echo "t5_encoder.b$b no-weights rc=$? $(( $(date +%s) - s )) s $(grep -E "^check:|differ" $W/logs/t5.b$b.nw.log | cut -c1-200)" >> $W/check.txt
done
sort $W/check.txt | tee $OUT/check.txt
cp $W/logs/*.log $OUT/ 2>/dev/null
echo "done $(( $(date +%s) - t0 )) s"
