#!/bin/bash
# imp.sh: torchvision's maxvit_t exported at b1 and b16 by the legacy
# exporter (as bench-transformers.py exports it) and at b1 by the default
# (dynamo) one, each imported by this tree's importer (the Einsum as a
# full-rank product); the legacy graphs come back with their small
# sidecars (smallw.py) for a local optimize, the import logs with them.
. docs/notes/device-2026-11-30/env.sh
W=/tmp/w10/imp; mkdir -p $W
python3 - $W <<'PY'
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("bt", "scripts/bench-transformers.py")
bt = importlib.util.module_from_spec(spec); spec.loader.exec_module(bt)
w = sys.argv[1]
for b in (1, 16):
    m, args, names = bt.module_and_inputs("maxvit_t", b, 128)
    bt.export(m, args, names, "%s/maxvit_t.b%d.onnx" % (w, b))
m, args, names = bt.module_and_inputs("maxvit_t", 1, 128)
try:
    with torch.no_grad():
        torch.onnx.export(m, args, w + "/maxvit_t.dyn.onnx", input_names=names, output_names=["y"])
except Exception as e:
    print("dynamo export:", str(e)[:300])
PY
for f in $W/*.onnx; do b=$(basename $f .onnx)
  $B/superopt import $f -o $W/$b.graph > $W/$b.import.log 2>&1; echo "$b import rc=$?" | tee -a $W/imp.txt
  $B/superopt check $W/$b.graph 2>&1 | tail -3 >> $W/imp.txt
done
python3 docs/notes/device-2026-11-30/smallw.py $W
for b in 1 16; do cp $W/maxvit_t.b$b.graph $OUT/; cp $W/maxvit_t.b$b.small $OUT/maxvit_t.b$b.safetensors; done
cp $W/*.log $W/imp.txt $OUT/
