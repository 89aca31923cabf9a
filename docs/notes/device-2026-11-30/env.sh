# sourced by d9*.sh: libraries, the source-dir link, W
B=.gpu-bundle
export SUPEROPT_DATA=$PWD
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13", "lib") for p in nvidia.__path__))' 2>/dev/null); do
  ls $d/libnvrtc.so* >/dev/null 2>&1 && { export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d; break; }
done
t0=$(date +%s)
src=$(cat $B/source-dir)
[ -e "$src/models" ] || { mkdir -p "$(dirname "$src")"; ln -sfn "$PWD/$B/tree" "$src"; }
W=/tmp/w10; mkdir -p $W
G1="nasnet_a resnet50 resnext50_taso tv_mobilenet_v2 tv_squeezenet tv_resnet50 tv_resnext50"
G2="bert_base tv_convnext_tiny tv_mobilenet_v3_large tv_regnet_y_800mf tv_shufflenet_v2_x1_0 tv_vgg16 tv_wide_resnet50_2"
# networks of $2 with a batch missing from the bench.json files under $1
missing() {
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
have = {}
for f in glob.glob(sys.argv[1] + "/**/bench.json", recursive=True):
    for r in json.load(open(f))["rows"]:
        if r.get("ours-opt") and (r.get("tv-ro") or r.get("graph-ro")):
            have.setdefault(r["graph"], set()).add(int(r["batch"]))
print(" ".join(n for n in sys.argv[2].split() if have.get(n, set()) != {1, 16}))
PY
}
pack() {
  nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv > $W/nvsmi.txt 2>&1
  tar czf /tmp/r.tgz -C $W --exclude='*.safetensors' --exclude='*.onnx' --exclude='*.data' --exclude='*.sqlite' --exclude='graphs' . && rm -rf $OUT/* && mv /tmp/r.tgz $OUT/
}
NETS14="$G1 $G2"
# the 14 networks as graphs in $1 (zoo .graph copied, torchvision ONNX imported)
graphs14() {
  mkdir -p "$1"
  for n in $NETS14; do
    if [ -f models/$n.graph ]; then cp models/$n.graph "$1/"
    else $B/superopt import models/onnx/${n#tv_}.onnx --data-input x -o "$1/$n.graph" > /dev/null 2>> "$1/import.log"; fi
  done
}
