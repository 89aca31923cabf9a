#!/usr/bin/env bash
# soundness.sh: nothing wrong gets out of optimize. A rule labelled proven
# that is false (clip(x) min=0 max=6 -> relu(x)) is re-proven after the
# search, demoted and the graph optimized again without it; the end-to-end
# check sees what it would have done (issue 40).
# usage: tests/soundness.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb

# an add and a ReLU6 (after a convolution the lower stage makes the clip
# the convolution's act=clip, priced as its act=relu would be: the false
# rule would gain nothing there, and the search would not take it)
cat >"$tmp/clip.graph" <<'G'
input x: [1,8,16,16]
input y: [1,8,16,16]
s = ewadd(x, y)
z = clip(s) min=0 max=6
output z
G
cat >"$tmp/false.rules" <<'R'
# superopt rules v1
rule clip_relu proven
src:
input x: [1,2,3,3]
y: [1,2,3,3] = clip(x) min=0 max=6
output y
dst:
input x: [1,2,3,3]
y: [1,2,3,3] = relu(x)
output y
end
R

# the rule is applied by the search (a relu costs less than a clip),
# re-proven, demoted, and the graph optimized again without it
expect 0 "$bin" optimize "$tmp/clip.graph" --rules "$tmp/false.rules" \
  -o "$tmp/opt.graph"
contains "false.rules:2: rule 'clip_relu' is labelled proven but the verifier does not prove it"
contains "demoted 1 labelled proven but not proven: clip_relu"
contains "rules applied: none"
# (the clip inside the fused node's body)
grep -Eq 'clip\(' "$tmp/opt.graph" ||
  fail "the optimized graph lost its clip"
grep -q 'relu' "$tmp/opt.graph" && fail "the optimized graph has a relu in place of the clip"

# the same rule through $SUPEROPT_RULES and --allow-unproven: never applied
SUPEROPT_RULES="$tmp/false.rules" expect 0 "$bin" optimize "$tmp/clip.graph" \
  --allow-unproven -o "$tmp/opt2.graph"
contains "demoted 1 labelled proven but not proven: clip_relu"
grep -q 'relu' "$tmp/opt2.graph" && fail "--allow-unproven applied the demoted rule"

# labelled unverified and used with --allow-unproven, the rule is not
# re-proven (it claims nothing): the end-to-end check alone must refuse the
# result, at the scales where the activations pass 6
sed 's/clip_relu proven/clip_relu unverified/' "$tmp/false.rules" >"$tmp/unverified.rules"
expect 3 "$bin" optimize "$tmp/clip.graph" --rules "$tmp/unverified.rules" \
  --allow-unproven -o "$tmp/never.graph"
contains "clip_relu x1"
contains "1 applied rule not labelled proven (--allow-unproven)"
contains "the optimized graph's outputs differ from the original's: output 1 element"
contains ", not 6 (seed"
[ ! -e "$tmp/never.graph" ] || fail "optimize wrote a graph its check refused"

# the pass rules the search applies (--passes rules, the ablation) are
# re-proven (and stay)
expect 0 "$bin" optimize "$tmp/clip.graph" --no-rules --passes rules
contains "re-proof: re-proved 0 applied rules"
printf 'input x: [1,8,16,16]\nweight w: [16,8,3,3]\nweight b: [16]\ny = conv2d(x, w, b)\nz = relu(y)\noutput z\n' >"$tmp/relu.graph"
expect 0 "$bin" optimize "$tmp/relu.graph" --no-rules --passes rules -o "$tmp/relu.opt.graph"
contains "re-proof: re-proved 1 applied rule with the verifier"
grep -q 'act=relu' "$tmp/relu.opt.graph" || fail "the proven pass rule was not applied"

test_end soundness
