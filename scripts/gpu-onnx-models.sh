#!/bin/sh
# gpu-onnx-models.sh: the exported networks of models/onnx/ on the GPU:
# each imported, then run on CUDA with --check (every output against the
# CPU reference executor, fp32-strict: relative L2 <= 1e-5) and timed, the
# optimized graph too. For the lead's GPU machine (one command, about 3
# minutes on an H100 after the build); results under $OUT (default ./out).
# usage: scripts/gpu-onnx-models.sh [BUILD_DIR]   (a CUDA build of superopt)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$src/build}/superopt
out=${OUT:-./out}
mkdir -p "$out"
status=0
for m in "$src"/models/onnx/*.onnx; do
  n=$(basename "$m" .onnx)
  g="$out/$n.graph"
  {
    echo "== $n"
    "$bin" import "$m" -o "$g" &&
      "$bin" run "$g" --device cuda --check --fp32-strict --iters 20 &&
      "$bin" optimize "$g" -o "$out/$n.opt.graph" --time-limit 30 \
        --budget 200 &&
      "$bin" run "$out/$n.opt.graph" --device cuda --check --fp32-strict \
        --iters 20
  } >"$out/$n.log" 2>&1 || status=1
  tail -n 4 "$out/$n.log" | sed "s/^/$n: /"
done
exit $status
