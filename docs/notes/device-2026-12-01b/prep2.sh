#!/bin/bash
# prep2.sh: abtest/ for ab.sh over the seven transformers, b1 and b16
# (NET.orig/default/none/ro as docs/notes/device-2026-12-01/prep.sh):
# MaxViT-T from prep.sh's graphs of this tree's import ($MX), the six
# others from the benchmark's imports ($S, with their small sidecars),
# their none and ro graphs optimized on this tree ($NEW: /tmp/ro/cmp.sh),
# the old default's from $OD (last session's; that pipeline is unchanged).
set -e
S=${S:-/tmp/sig} OD=${OD:-/tmp/ro/olddef} NEW=${NEW:-/tmp/m5/c6} MX=${MX:-/tmp/m5/abtest.keep}
mkdir -p abtest
for g in $S/*.graph; do b=$(basename $g .graph)
  case $b in maxvit*) continue ;; esac
  cp $g abtest/$b.orig.graph; cp $S/$b.safetensors abtest/$b.orig.safetensors
  cp $OD/$b.graph abtest/$b.default.graph
  cp $NEW/$b.none.graph abtest/$b.none.graph; cp $NEW/$b.ro.graph abtest/$b.ro.graph
done
cp $MX/maxvit_t.* abtest/
rm -f abtest/*.log
du -sh abtest
