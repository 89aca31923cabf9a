#!/usr/bin/env bash
# prof.sh [SUPEROPT]: Inception-v3's batch-1 `--passes none` graph as main
# (a97a9d6) writes it (inception_v3.b1.none.main.graph: 0.4925 ms in
# loan-1431-share) against the one the fit's seventh round writes
# (inception_v3.b1.none.fitreg.graph, the same operators as the graph of
# the tree before the fit's fifth round, b41026e: 0.4681 ms in
# loan-0948): both timed in turn, three rounds (`superopt run G --device
# cuda --iters 20`), then one per-node profile each (--profile-tsv), so
# that the nodes where the two differ (Mixed_7b/7c: six 1x3/3x1
# convolutions and Mixed_7c's merged 1x1 with or without their bias and
# relu; six batch norms and five fused batch norm + relu nodes in main's)
# are timed as the network runs them (docs/notes/results.md, "The fitted
# model's seventh round"). The same for Inception-v3 and ResNet-50 at
# batch 16 (inception_v3.b16.*: the seventh round's graph merges two of
# Mixed_7b/7c's three 1x1s where main's merges all three, and keeps one
# 1x3/3x1 pair that main pads into a 3x3; resnet50.b16.*: main leaves one
# downsample's batch norm unfolded). Two to three minutes of an H200.
# From a bundle of scripts/bundle-gpu (device tool: carry [".gpu-bundle"],
# command "docs/notes/device-2026-12-01e/fitreg/prof.sh"); OUT (default
# /tmp/fitreg-prof) gets times.txt and the profiles.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../../.." && pwd)
here=$(cd "$(dirname "$0")" && pwd)
so=${1:-$root/.gpu-bundle/superopt}
d=$(dirname "$so")
[ -d "$d/lib" ] && export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ldd "$so" | grep -q 'libnvrtc.*not found'; then # as scripts/gpu-share
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13", "lib") for p in nvidia.__path__))' 2>/dev/null); do
    if ls "$dir"/libnvrtc.so.1* >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
      break
    fi
  done
fi
export SUPEROPT_DATA=$root
OUT=${OUT:-/tmp/fitreg-prof}
mkdir -p "$OUT"
for n in inception_v3.b1 inception_v3.b16 resnet50.b16; do
  for r in 1 2 3; do
    for k in main fitreg; do
      ms=$(timeout 60 "$so" run "$here/$n.none.$k.graph" --device cuda --iters 20 2>&1 |
        sed -n 's/^time: \([0-9.]*\) ms.*/\1/p')
      echo "$n $k $r $ms" | tee -a "$OUT/times.txt"
    done
  done
  for k in main fitreg; do
    timeout 60 "$so" run "$here/$n.none.$k.graph" --device cuda --iters 20 \
      --profile-tsv "$OUT/$n.$k.prof.tsv" >"$OUT/$n.$k.prof.log" 2>&1
    echo "$n $k profile rc=$?" | tee -a "$OUT/times.txt"
  done
done
