#!/bin/bash
# share.sh prep | time B: issue 43, the seven transformers' discovered
# share on this tree (rules/mined.rules with the sequence-first row
# layout, ViT-B/16's head split) against the rules of 4fbb5d9
# (mined-4fbb5d9.rules), in one lease.
#   prep: export.py (bench-transformers.py's exports at b1 and b16,
#         imported with their weights), then per graph, 14 at a time,
#         `optimize --device h200 --no-check --drop-weights`:
#           default  the default
#           ro       --no-fuse --no-mutants (the stated rules too)
#           mi       --no-fuse --no-mutants, the discovered rules:
#                    rules/default.rules, extended.rules' enumerated
#                    rules (mine-rules' awk), rules/mined.rules
#           mi0      the same with mined-4fbb5d9.rules
#         and the import's graph text (orig: weights drawn when run);
#         all to $OUT/graphs.tar.xz, the logs in the pack.
#   time B: the batch-B graphs (from $W/graphs, else .gpu-pack/graphs'
#         graphs.tar.xz) timed in turn, two rounds, `superopt run
#         --device cuda --iters 200` (ab.sh's line).
. .gpu-pack/bin/env.sh
D=docs/notes/device-2026-12-01f
KINDS="orig default ro mi mi0"
case $1 in
prep)
  mkdir -p $W/graphs/w $W/logs
  awk '/^rule e/ { id = substr($2, 2) + 0
                   keep = !(id >= 750 && id <= 759 || id >= 769 && id <= 815 || id >= 830) }
       /^rule / { on = 1 } !on || keep' rules/extended.rules >$W/enumerated.rules
  SO=$B/superopt timeout 300 python3 $D/export.py $W/graphs/w > $W/export.txt 2>&1
  cat $W/export.txt
  echo "exported $(( $(date +%s) - t0 )) s" >> $W/times.txt
  export B W D
  for f in $W/graphs/w/*.orig.graph; do
    n=$(basename $f .orig.graph)
    for k in default ro mi mi0; do echo "$n $k"; done
  done | xargs -P 14 -L 1 bash -c '
    n=$0 k=$1 f=$W/graphs/w/$n.orig.graph
    case $k in
    default) a="" ;;
    ro) a="--no-fuse --no-mutants" ;;
    mi) a="--no-fuse --no-mutants --rules rules/default.rules --rules $W/enumerated.rules --rules rules/mined.rules" ;;
    mi0) a="--no-fuse --no-mutants --rules rules/default.rules --rules $W/enumerated.rules --rules $D/mined-4fbb5d9.rules" ;;
    esac
    s=$(date +%s)
    timeout 280 $B/superopt optimize $f --device h200 --no-check --drop-weights $a -o $W/graphs/$n.$k.graph > $W/logs/$n.$k.log 2>&1
    echo "$n $k rc=$? $(( $(date +%s) - s )) s" >> $W/opt.txt'
  for f in $W/graphs/w/*.orig.graph; do
    n=$(basename $f .orig.graph)
    cp $f $W/graphs/$n.orig.graph # the import, its weights drawn when run
  done
  sort $W/opt.txt
  echo "optimized $(( $(date +%s) - t0 )) s" >> $W/times.txt
  ;;
time)
  [ -d $W/graphs ] || { mkdir -p $W && tar xJf .gpu-pack/graphs/graphs.tar.xz -C $W; }
  for n in $(ls $W/graphs | sed -n "s/^\(.*\.b$2\)\.orig\.graph$/\1/p"); do
    for r in 1 2; do for k in $KINDS; do
      ms=$(timeout 60 $B/superopt run $W/graphs/$n.$k.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
      echo "$n $k $r $ms" | tee -a $W/t$2.txt
    done; done
  done
  echo "timed b$2 $(( $(date +%s) - t0 )) s" >> $W/times.txt
  ;;
esac
cat $W/times.txt
find $W -name '*.safetensors' -o -name '*.onnx' | xargs rm -f 2>/dev/null
pack
[ "$1" = prep ] && tar cJf $OUT/graphs.tar.xz -C $W --exclude=w graphs
true
