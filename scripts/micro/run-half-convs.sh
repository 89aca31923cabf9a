#!/usr/bin/env bash
# run-half-convs.sh [SUPEROPT [TEST_CUDA]]: issue 42's slow bf16
# convolutions on the GPU, ksmallk.cu's tensor-core kernel (kern/ksmallk.cu:
# stems of at most 4 input channels, pointwise convolutions of at most 32)
# against what the executor chose without it. Builds nothing: SUPEROPT
# (default build/superopt, or .gpu-bundle/superopt where there is no
# build) and TEST_CUDA (default beside it; skipped where absent).
#
# Also kdwt.cu's tiled depthwise kernel (ConvNeXt-T's 7x7 layers at 56x56
# and 28x28: before = kconv.cu's shapes alone, $SUPEROPT_DWT=0).
#
# For each shape (MobileNet-V2's 3 -> 32 stem and 16 -> 96 and 24 -> 144
# expansions, ConvNeXt-T's 4x4 stride-4 stem, ShuffleNet-V2's 3 -> 24
# stem; batch 1 and 16, bf16) a graph of that convolution (its input made
# channels-last by a 1x1 convolution before it where the network's is,
# read by one after it, so that its result is channels-last as in the
# network) is run with `--check --profile-tsv`, the tuning cache off:
#   before  $SUPEROPT_SK=off $SUPEROPT_DWT=0 (cuDNN, cuBLASLt or kconv.cu
#           as before)
#   after   the default (ksmallk.cu or kdwt.cu wherever 3% faster)
#   forced  $SUPEROPT_SK=always (ksmallk.cu's fastest tile, whatever the
#           rest; the depthwise rows: the default again)
# and the table gives the node's engine and time (us) in each, with the
# candidates the autotuning timed ($SUPEROPT_TUNE_LOG). Then test_cuda's
# half small-K and tiled depthwise cases, the other half convolution and
# fused cases. Logs in $OUT
# (or a temporary folder).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bin=${1:-build/superopt}
[ -x "$bin" ] || bin=.gpu-bundle/superopt
tc=${2:-$(dirname "$bin")/test_cuda}
[ -x "$tc" ] || tc=build/tests/test_cuda
# a bundle's libraries (scripts/bundle-gpu: lib/ beside the binary), and
# NVRTC from the image where the binary does not find it (as gpu-check)
d=$(dirname "$bin")
[ -d "$d/lib" ] && export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ldd "$bin" | grep -q 'libnvrtc.*not found'; then
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    if ls "$dir"/libnvrtc.so* >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
      break
    fi
  done
fi
[ -e "$d/libsuperopt_gpu.so" ] && export SUPEROPT_GPU_LIB="$d/libsuperopt_gpu.so"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SUPEROPT_TUNE_CACHE=off

# name, x's channels, h, w, output channels, kernel, stride, pad, act,
# channels-last x (1: made so by a 1x1 convolution first)
shapes='
mnv2_stem 3 224 224 32 3 2 1 clip 0
mnv2_expand16 16 112 112 96 1 1 0 clip 1
mnv2_expand24 24 56 56 144 1 1 0 clip 1
convnext_stem 3 224 224 96 4 4 0 none 0
shufflenet_stem 3 224 224 24 3 2 1 relu 0
convnext_dw7 96 56 56 96 7 1 3 none 1
convnext_dw7_28 192 28 28 192 7 1 3 none 1
'

graph() { # name c h w o k s pad act cl batch
  local name=$1 c=$2 h=$3 w=$4 o=$5 k=$6 s=$7 pd=$8 act=$9 cl=${10} n=${11}
  local a=""
  [ "$act" = clip ] && a=" act=clip max=6"
  [ "$act" = relu ] && a=" act=relu"
  echo "graph $1"
  echo "input x: bf16[$n,$c,$h,$w]"
  local gr=""
  if [ "$name" != "${name%_dw7*}" ]; then # depthwise: groups = channels
    echo "weight w: bf16[$o,1,$k,$k]"
    gr=" groups=$c"
  else
    echo "weight w: bf16[$o,$c,$k,$k]"
  fi
  echo "weight b: bf16[$o]"
  echo "weight wi: bf16[$c,$c,1,1]"
  echo "weight wo: bf16[8,$o,1,1]"
  local x=x
  if [ "$cl" = 1 ]; then
    echo "xc = conv2d(x, wi)"
    x=xc
  fi
  echo "y = conv2d($x, w, b) stride=[$s,$s] pad=[$pd,$pd,$pd,$pd]$gr$a"
  echo "z = conv2d(y, wo)"
  echo "output z"
}

printf 'shape\tbatch\tbefore engine\tbefore us\tafter engine\tafter us\tforced us\tafter/before\n' |
  tee "$out/half-convs.tsv"
fail=0
while read -r name c h w o k s pd act cl; do
  [ -n "$name" ] || continue
  for n in 1 16; do
    g="$tmp/$name.b$n.graph"
    graph "$name" "$c" "$h" "$w" "$o" "$k" "$s" "$pd" "$act" "$cl" "$n" >"$g"
    declare -A eng=() us=()
    for mode in before after forced; do
      case $mode in
        before) export SUPEROPT_SK=off SUPEROPT_DWT=0 ;;
        after) unset SUPEROPT_SK SUPEROPT_DWT ;;
        forced) export SUPEROPT_SK=always ;;
      esac
      log="$out/$name.b$n.$mode.log"
      if ! SUPEROPT_TUNE_LOG=1 "$bin" run "$g" --device cuda --check \
        --iters 100 --profile-tsv "$tmp/p.tsv" >"$log" 2>&1; then
        echo "FAIL: $name batch $n $mode (see $log)" >&2
        fail=$((fail + 1))
        eng[$mode]=FAIL us[$mode]=nan
        continue
      fi
      # node y's row (columns: node, line, operator, engine, output, shape, ms)
      read -r e t < <(awk -F'\t' '$5 == "y" { gsub(/ /, "_", $4); print $4, $7 * 1000 }' "$tmp/p.tsv")
      eng[$mode]=$e us[$mode]=$t
    done
    unset SUPEROPT_SK SUPEROPT_DWT
    printf '%s\t%s\t%s\t%.1f\t%s\t%.1f\t%.1f\t%s\n' "$name" "$n" \
      "${eng[before]}" "${us[before]}" "${eng[after]}" "${us[after]}" \
      "${us[forced]}" \
      "$(awk -v a="${us[after]}" -v b="${us[before]}" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')" |
      tee -a "$out/half-convs.tsv"
  done
done <<<"$shapes"

echo
echo "autotuning of the convolutions y (tune: lines, after):"
grep -h "tune:.*small-K\|tune: conv2d line .* as GEMM\|own depthwise shape" \
  "$out"/*.after.log | sed 's/^/  /' | head -80

if [ -x "$tc" ]; then
  echo
  echo "test_cuda: half small-K, tiled depthwise, convolution and fused cases"
  unset SUPEROPT_TUNE_CACHE
  for f in 'cuda/half_smallk*' 'cuda/half_tiled*' 'cuda/half_conv*' \
    'cuda/half_own_depthwise' 'cuda/half_fused*' 'cuda/*fused_source*'; do
    "$tc" --verbose --filter "$f" >>"$out/tests.log" 2>&1 || fail=$((fail + 1))
  done
  grep -E "^\[(PASS|FAIL|SKIP)\] cuda::(half|fused)" "$out/tests.log" |
    grep -v "Test is disabled"
  # a test that skipped (no device found) has not run
  if grep -q "^\[SKIP\] cuda::half_smallk_convs: no CUDA" "$out/tests.log"; then
    echo "half_smallk_convs skipped: the GPU library was not found"
    fail=$((fail + 1))
  fi
else
  echo "test_cuda not found at $tc: tests skipped"
fi
echo "logs: $out; failing steps: $fail"
exit $((fail > 0))
