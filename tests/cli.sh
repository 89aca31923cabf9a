#!/usr/bin/env bash
# cli.sh: end-to-end tests of the superopt command line: help, exit codes,
# error messages with positions, atomic output, stable checksums.
# usage: tests/cli.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

. "$(dirname "$0")/lib.sh"

expect 0 "$bin" --help
contains "commands:"
contains "run"
expect 0 "$bin" run --help
contains "--seed"
expect 0 "$bin" help check
contains "usage: superopt check"
expect 1 "$bin"
expect 1 "$bin" frobnicate
contains "unknown command 'frobnicate'"
expect 1 "$bin" run
expect 1 "$bin" run "$src/models/resnet50.graph" --device tpu
contains "unknown device 'tpu'"
expect 1 "$bin" run "$src/models/resnet50.graph" --seed abc
contains "bad value 'abc' for --seed"
expect 1 "$bin" run "$src/models/resnet50.graph" --bogus
expect 1 "$bin" check --bogus
contains "unknown option '--bogus'"
contains "(see 'superopt check --help')"
# option errors come from the command's option table (src/cli/opts.c)
expect 1 "$bin" run "$src/models/resnet50.graph" --seed
contains "option '--seed' needs a value"
expect 1 "$bin" run "$src/models/resnet50.graph" --threads 5000
contains "--threads must be 0..1024, not '5000'"
expect 1 "$bin" optimize "$src/models/resnet50.graph" --alpha 1,2
contains "bad value '1,2' for --alpha"
expect 1 "$bin" print "$src/models/resnet50.graph" -x
contains "unknown option '-x'"
# run --no-fold (GPU relu/clip folding) is not optimize's --no-fuse
expect 1 "$bin" run "$src/models/resnet50.graph" --no-fold
contains "--no-fold, --legacy-conv, --nchw, --fast-gelu, --streams and --warmup need --device cuda"
expect 1 "$bin" run "$src/models/resnet50.graph" --streams 2
contains "--streams and --warmup need --device cuda"
expect 1 "$bin" run "$src/models/resnet50.graph" --device cuda --streams 9
contains "--streams must be 0..8, not '9'"
expect 1 "$bin" run "$src/models/resnet50.graph" --no-fuse
contains "unknown option '--no-fuse'"

expect 0 "$bin" check "$src/models/resnet50.graph"
contains "175 operators"
contains "conv2d           53"
contains "batchnorm        53"

expect 2 "$bin" check "$src/tests/data/bad/unknown_op.graph"
contains "unknown_op.graph:3:5: error: unknown operator 'conv3d'"
contains "    ^"
expect 2 "$bin" check "$tmp/missing.graph"
contains "cannot open"
expect 2 "$bin" run "$src/tests/data/bad/cycle.graph"
contains "dependency cycle"

# print: canonical and atomic; a failing print writes nothing
expect 0 "$bin" print "$src/tests/data/good/every_op.graph" -o "$tmp/a.graph"
expect 0 "$bin" print "$tmp/a.graph" -o "$tmp/b.graph"
cmp -s "$tmp/a.graph" "$tmp/b.graph" || { echo "FAIL: print not stable"; fails=$((fails + 1)); }
expect 2 "$bin" print "$src/tests/data/bad/cycle.graph" -o "$tmp/c.graph"
[ ! -e "$tmp/c.graph" ] || { echo "FAIL: output written on error"; fails=$((fails + 1)); }
ls "$tmp" | grep -q tmp && { echo "FAIL: temporary file left behind"; fails=$((fails + 1)); }
expect 2 "$bin" print "$src/models/resnet50.graph" -o "$tmp/no/such/dir/x.graph"
contains "cannot"

# run: checksums are stable across runs and thread counts, change with seed
g="$src/tests/data/good/every_op.graph"
expect 0 "$bin" run "$g" --seed 3 --threads 1
grep '^output' "$tmp/out" >"$tmp/r1"
expect 0 "$bin" run "$g" --seed 3 --threads 2 --iters 3
contains "median of 3 runs"
grep '^output' "$tmp/out" >"$tmp/r2"
expect 0 "$bin" run "$g" --seed 4
grep '^output' "$tmp/out" >"$tmp/r3"
cmp -s "$tmp/r1" "$tmp/r2" || { echo "FAIL: checksums differ between runs"; fails=$((fails + 1)); }
cmp -s "$tmp/r1" "$tmp/r3" && { echo "FAIL: seed has no effect"; fails=$((fails + 1)); }
[ "$(wc -l <"$tmp/r1")" = 27 ] || { echo "FAIL: expected 27 outputs"; fails=$((fails + 1)); }

# gen-rules / verify-rules / compare-rules
expect 1 "$bin" gen-rules --max-ops 0
contains "--max-ops must be 1..5"
expect 1 "$bin" gen-rules --max-ops 5
contains "--max-ops 5 needs --ops"
expect 1 "$bin" gen-rules --max-ops 99
expect 1 "$bin" gen-rules --ops matmul,frobnicate
contains "frobnicate"
expect 0 "$bin" gen-rules --max-ops 2 --ops matmul,transpose -o "$tmp/g1.rules" --threads 1
contains "stage"
contains "proven (verify)"
expect 0 "$bin" gen-rules --max-ops 2 --ops matmul,transpose -o "$tmp/g2.rules" --threads 2
cmp -s "$tmp/g1.rules" "$tmp/g2.rules" || { echo "FAIL: gen-rules output depends on threads"; fails=$((fails + 1)); }
grep -q "= transpose(" "$tmp/g1.rules" || { echo "FAIL: no transpose rule found"; fails=$((fails + 1)); }
expect 0 "$bin" verify-rules "$tmp/g1.rules"
contains "rules proven"
expect 0 "$bin" compare-rules "$tmp/g1.rules" "$tmp/g1.rules" --max-ops 2
contains "(100.0%)"
expect 1 "$bin" gen-rules --max-ops 2 --pairs frob
contains "--pairs must be spanning, smallest or all"
expect 1 "$bin" compare-rules "$tmp/g1.rules" "$tmp/g1.rules" --depth 99
contains "--depth must be 0..8"
# a rule the library derives (associativity twice) but does not contain
m3='input a: [2,4]\ninput b: [2,4]\ninput c: [2,4]\n'
mm="${m3}input d: [2,4]\n"
printf "rule assoc proven\nsrc:\n${m3}t = ewadd(a, b)\nu = ewadd(t, c)\noutput u\ndst:\n${m3}t = ewadd(b, c)\nu = ewadd(a, t)\noutput u\nend\n" >"$tmp/lib.rules"
printf "rule g1 unverified\nsrc:\n${mm}t = ewadd(a, b)\nu = ewadd(t, c)\nv = ewadd(u, d)\noutput v\ndst:\n${mm}t = ewadd(c, d)\nu = ewadd(b, t)\nv = ewadd(a, u)\noutput v\nend\n" >"$tmp/goal.rules"
expect 0 "$bin" compare-rules "$tmp/goal.rules" "$tmp/lib.rules"
contains "in the library up to renaming:   0 (0.0%)"
contains "(<= 4 steps): 1 (100.0% with the above)"
expect 0 "$bin" compare-rules "$tmp/goal.rules" "$tmp/lib.rules" --depth 0
contains "missing: 1"
printf 'rule r1 proven\nsrc:\ninput a: [2,4]\nt = relu(b)\noutput t\ndst:\ninput a: [2,4]\noutput a\nend\n' >"$tmp/bad.rules"
expect 2 "$bin" verify-rules "$tmp/bad.rules"
contains "bad.rules:4:10: error: undefined name 'b'"
printf 'rule r1 unverified\nsrc:\ninput a: [2,4]\nt = relu(a)\noutput t\ndst:\ninput a: [2,4]\noutput a\nend\n' >"$tmp/false.rules"
expect 2 "$bin" verify-rules "$tmp/false.rules"
contains "rule r1 not proven"

# optimize: two biased 1x1 convs on one input merge; bad inputs refused
export SUPEROPT_COSTDB="$tmp/costdb.sqlite"
printf 'input x: [1,8,6,6]\nweight a: [8,8,1,1]\nweight ab: [8]\nweight b: [8,8,1,1]\nweight bb: [8]\nya = conv2d(x, a, ab)\nyb = conv2d(x, b, bb)\noutput ya, yb\n' >"$tmp/two.graph"
expect 0 "$bin" optimize "$tmp/two.graph" -o "$tmp/two.opt.graph"
# the bias-free merge rule through a proven biased instance, or the biased rule
contains "rules applied: pass.merge2.conv"
# each with the change of estimated cost its uses made (a merge saves)
grep -qE '^rules applied: pass\.merge2\.conv[^,]* x1 \(-[0-9]+\.[0-9]+ us\)' "$tmp/out" ||
  { echo "FAIL: rules applied: no saving printed for the merge"; fails=$((fails + 1)); }
# the counts say who merged: the pass rule (the hand pass counted 0 here)
contains "1 sibling groups merged (1 by pass rules)"
contains "rules applied in all: 1 (1 of them pass rules)"
contains "check: max relative error"
[ "$(grep -c '= conv2d(' "$tmp/two.opt.graph")" = 1 ] || { echo "FAIL: the two convs were not merged"; fails=$((fails + 1)); }
# the same by the hand-written pass; by the pass rules alone
expect 0 "$bin" optimize "$tmp/two.graph" --passes hand
contains "1 sibling groups merged (0 by pass rules)"
expect 0 "$bin" optimize "$tmp/two.graph" --no-rules
contains "pass.merge2.conv"
# --passes none: no pass at all (and no rules here): nothing merges
expect 0 "$bin" optimize "$tmp/two.graph" --passes none --no-rules -o "$tmp/two.none.graph"
contains "0 sibling groups merged (0 by pass rules)"
[ "$(grep -c '= conv2d(' "$tmp/two.none.graph")" = 2 ] || { echo "FAIL: --passes none merged"; fails=$((fails + 1)); }
expect 1 "$bin" optimize "$tmp/two.graph" --passes maybe
contains "bad value 'maybe'"
contains "expected rules, hand or none"
expect 1 "$bin" optimize "$tmp/two.graph" --no-rules --rules "$tmp/false.rules"
contains "--no-rules and --rules conflict"
expect 0 "$bin" optimize "$tmp/two.graph" --batch 3 -o "$tmp/two3.graph"
grep -q '^input x: \[3,8,6,6\]' "$tmp/two3.graph" || { echo "FAIL: optimize --batch 3 did not rebatch"; fails=$((fails + 1)); }
expect 1 "$bin" optimize "$tmp/two.graph" --device tpu -o "$tmp/never.graph"
contains "tpu"
expect 1 "$bin" optimize "$tmp/two.graph" --batch 0
printf 'rule r1 unverified\nsrc:\ninput a: [2,4]\nt = relu(a)\nu = relu(t)\noutput u\ndst:\ninput a: [2,4]\nt = relu(a)\noutput t\nend\n' >"$tmp/unproven.rules"
expect 2 "$bin" optimize "$tmp/two.graph" --rules "$tmp/unproven.rules" -o "$tmp/never.graph"
contains "only proven rules are used"
[ ! -e "$tmp/never.graph" ] || { echo "FAIL: optimize wrote output after an error"; fails=$((fails + 1)); }
printf 'input x: [1,4]\ny = reshape(x) shape=[4]\nz = softmax(y) axis=0\noutput z\n' >"$tmp/pinned.graph"
expect 2 "$bin" optimize "$tmp/pinned.graph" --batch 2
contains "cannot rebatch softmax 'z': it normalises along the batch axis"
# the default rules file missing: a message and exit 2, not a crash
SUPEROPT_RULES="$tmp/none.rules" expect 2 "$bin" optimize "$tmp/two.graph"
contains "no rules file: the default $tmp/none.rules does not exist"
expect 1 "$bin" costdb measure "$tmp/two.graph" --batch 0
contains "--batch must be 1..1000000"
# the signatures the search costed without a measurement, one a line, each
# rebuilt by cd_sig_graph (costdb measure --signatures reads them)
expect 0 "$bin" optimize "$tmp/two.graph" --emit-signatures "$tmp/two.sigs"
contains "operator signatures without a measurement"
grep -q '^conv2d x=\[1,8,6,6\] w=\[16,8,1,1\] b=\[16\]' "$tmp/two.sigs" || { echo "FAIL: --emit-signatures lacks the merged conv"; fails=$((fails + 1)); }
[ "$(grep -vc '^#' "$tmp/two.sigs")" = "$(grep -v '^#' "$tmp/two.sigs" | sort -u | wc -l)" ] || { echo "FAIL: --emit-signatures repeats signatures"; fails=$((fails + 1)); }
# --measure without a GPU: a clear error, exit 2, nothing written
if ! command -v nvidia-smi >/dev/null 2>&1; then
  expect 2 "$bin" optimize "$tmp/two.graph" --measure -o "$tmp/never.graph"
  contains "--measure needs a GPU"
  [ ! -e "$tmp/never.graph" ] || { echo "FAIL: optimize --measure wrote output without a GPU"; fails=$((fails + 1)); }
fi
expect 1 "$bin" experiment search "$tmp/two.graph" --depth 1 --alpha 1 --budget 1 --measure
contains "are for 'optimize'"
# costdb fit: parameters per class and the held-out error, from the tables
expect 0 "$bin" costdb fit --device h200
contains "conv2d/1x1"
contains "held out (5-fold"
# experiment search: progress on stderr; the figures' script names model
# and device, draws the original's cost, tells series apart
"$bin" experiment search "$tmp/two.graph" --depth 0,1 --alpha 1,1.1 --budget 5,50 -o "$tmp/exp" >"$tmp/out" 2>"$tmp/err"
[ $? = 0 ] || { echo "FAIL: experiment search"; cat "$tmp/out" "$tmp/err"; fails=$((fails + 1)); }
grep -q '^experiment: run 8/8: ' "$tmp/err" || { echo "FAIL: experiment progress"; fails=$((fails + 1)); }
orig=$(awk -F, 'NR == 2 {print $10}' "$tmp/exp/results.csv")
for want in "ORIGINAL = $orig" "MODEL = 'two'" "DEVICE = 'h100'" \
  "set title sprintf('%s on %s: search cost vs max depth', MODEL, DEVICE)" \
  "ORIGINAL with lines" "dt 1 + i % 5 pt 1 + i % 13" "set key"; do
  grep -qF -- "$want" "$tmp/exp/plot.gp" || { echo "FAIL: plot.gp lacks '$want'"; fails=$((fails + 1)); }
done
# the script it writes is the repository's (carried in the binary), after
# the values it sets
diff <(sed '1,/^ORIGINAL = /d' "$tmp/exp/plot.gp") "$src/scripts/plot-experiment.gp" >/dev/null || { echo "FAIL: scripts/plot-experiment.gp differs from the script experiment search writes"; fails=$((fails + 1)); }
grep -q '^experiment: warm-up: depth 1, alpha 1.1, budget 50 (not timed)' "$tmp/err" || { echo "FAIL: experiment warm-up"; fails=$((fails + 1)); }
[ -n "$orig" ] && [ "$(awk -F, 'NR > 1 {print $10}' "$tmp/exp/results.csv" | sort -u)" = "$orig" ] || { echo "FAIL: results.csv original_cost"; fails=$((fails + 1)); }
unset SUPEROPT_COSTDB

# mutants: boxes, correction and float check per class; listing only
m="$src/tests/data/good/mutants.graph"
expect 0 "$bin" mutants "$m" --dump "$tmp/mut"
contains "4 mutants"
contains "concat-w at c1 (node 0) + c2 (node 1)"
contains "wrong box output 0 [0:1,0:4,0:8,5:6]"
contains "wrong box output 1 [0:1,0:4,0:8,0:1]"
contains "wrong box output 0 [0:1,0:4,3:5,0:6]"
contains "by class: concat-w 1 split-h 2 dilated 1"
grep -q FAILED "$tmp/out" && { echo "FAIL: mutant float check"; fails=$((fails + 1)); }
[ -s "$tmp/mut/m001.corrected.graph" ] || { echo "FAIL: mutants --dump"; fails=$((fails + 1)); }
expect 0 "$bin" check "$tmp/mut/m001.corrected.graph"
expect 0 "$bin" mutants "$m" --class dilated --no-check
contains "1 mutants"
contains "0 different"
expect 1 "$bin" mutants "$m" --class winograd
contains "unknown class 'winograd'"
expect 2 "$bin" mutants "$tmp/missing.graph"
expect 0 "$bin" optimize "$m" -o "$tmp/mut/opt.graph"
contains "mutants applied: 0 of 4 considered (4 not cheaper"
contains "verified by the box argument and the end-to-end check (mutants): 0"
expect 0 "$bin" optimize "$m" --mutants-estimated
contains "mutants applied: 0 of 4 considered (4 not cheaper, 0 overlapping, 0 refused, 0 cheaper by estimates only)"
expect 0 "$bin" optimize "$m" --no-mutants
grep -q "mutants applied" "$tmp/out" && { echo "FAIL: --no-mutants"; fails=$((fails + 1)); }
expect 0 "$bin" optimize "$m" --proven-only
grep -q "mutants applied" "$tmp/out" && { echo "FAIL: --proven-only"; fails=$((fails + 1)); }
expect 1 "$bin" optimize "$m" --proven-only --allow-unproven
contains "conflict"

if [ "$fails" != 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "cli: all passed"
