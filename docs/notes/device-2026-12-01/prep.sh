#!/bin/bash
# prep.sh: abtest/ for ab.sh (docs/notes/device-2026-11-30/ab.sh) on the
# seven transformers' benchmark graphs (their small sidecars: constants
# kept, big weights drawn) and models/bert_base.graph, b1 and b16:
#   NET.orig     the graph as imported (with its sidecar)
#   NET.default  the old default, --passes rules --rules rules/default.rules
#   NET.none     the default now (--passes none, both rules files)
#   NET.ro       the generated rules alone (--no-fuse --no-mutants)
#   NET.prev     (bert_base) the default of the tree before the twelfth tier
# from the optimized graphs of this machine's runs (dirs below, written
# --drop-weights --no-check --device h200).
set -e
S=${S:-/tmp/sig} OD=${OD:-/tmp/ro/olddef} NEW=${NEW:-/tmp/ro/t12d} CNN=${CNN:-/tmp/ro/cnn} PREV=${PREV:-/tmp/snd/cnnb}
mkdir -p abtest
for g in $S/*.graph; do b=$(basename $g .graph)
  cp $g abtest/$b.orig.graph; cp $S/$b.safetensors abtest/$b.orig.safetensors
  cp $OD/$b.graph abtest/$b.default.graph
  cp $NEW/$b.none.graph abtest/$b.none.graph; cp $NEW/$b.ro.graph abtest/$b.ro.graph
done
for bb in 1; do b=bert_base.b$bb # (b16: the zoo graph is b1; not rebatched here)
  cp models/bert_base.graph abtest/$b.orig.graph; cp models/bert_base.safetensors abtest/$b.orig.safetensors 2>/dev/null || true
  cp $OD/$b.graph abtest/$b.default.graph 2>/dev/null || true
  cp $CNN/$b.graph abtest/$b.none.graph; cp $PREV/$b.graph abtest/$b.prev.graph
done
du -sh abtest
