#!/bin/bash
# check-mi.sh: the seven transformers' mi graphs (the discovered rules
# alone: rules/default.rules, extended.rules' enumerated rules, as
# scripts/mine-rules' awk keeps them, and rules/mined.rules; --no-fuse
# --no-mutants, as device-2026-12-01f's share.sh optimized them there
# with --no-check) optimized with the end-to-end check on, from the
# imports check.sh left in $W/graphs/w (exported again on a fresh
# machine), with their weights, 7 at a time.
. .gpu-pack/bin/env.sh
mkdir -p $W/logs-mi $W/graphs/w $OUT
ls $W/graphs/w/*.orig.graph >/dev/null 2>&1 ||
  SO=$B/superopt timeout 300 python3 docs/notes/device-2026-12-01f/export.py $W/graphs/w > $OUT/export-mi.txt 2>&1
awk '/^rule e/ { id = substr($2, 2) + 0
                 keep = !(id >= 750 && id <= 759 || id >= 769 && id <= 815 || id >= 830) }
     /^rule / { on = 1 } !on || keep' rules/extended.rules >$W/enumerated.rules
export B W
ls $W/graphs/w/*.orig.graph | xargs -P 7 -n 1 bash -c '
  f=$0 n=$(basename $0 .orig.graph) s=$(date +%s)
  OMP_NUM_THREADS=2 timeout 250 $B/superopt optimize $f --device h200 --no-fuse --no-mutants --rules rules/default.rules --rules $W/enumerated.rules --rules rules/mined.rules -o $W/graphs/$n.mi.graph > $W/logs-mi/$n.log 2>&1
  echo "$n mi rc=$? $(( $(date +%s) - s )) s $(grep -E "^check:|differ" $W/logs-mi/$n.log | cut -c1-160)" >> $W/check-mi.txt'
sort $W/check-mi.txt | tee $OUT/check-mi.txt
grep -h "rules applied:" $W/logs-mi/*.log | grep -o "m[0-9a-f]\{10\}" | sort -u | wc -l | sed "s/^/distinct mined rules applied: /" | tee -a $OUT/check-mi.txt
echo "done $(( $(date +%s) - t0 )) s"
