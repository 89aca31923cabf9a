#!/usr/bin/env bash
# optimize_stages.sh: `superopt optimize`'s pipeline stages (src/opt):
# --list-stages names them, --dump-after writes the graph after any of them
# (the last one is the written result, the first the model as read), and on
# a terminal standard error shows the stage and the region searched.
# usage: tests/optimize_stages.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin --costdb

m="$src/models/tv_squeezenet.graph"
# short runs: no rules file; the ablation's passes (--passes rules), so that
# the passes stage has work (its pass rules, not the default's none)
fast=(--no-rules --budget 5 --passes rules)

expect 0 "$bin" optimize --list-stages
for s in rules batch costs passes search splits prune reprove dtype fuse lower check; do
  grep -q "^$s " "$tmp/out" || fail "--list-stages lacks $s"
done
[ "$(wc -l <"$tmp/out")" = 12 ] || fail "--list-stages: not 12 lines"

# all stages dumped beside -o, named by the stage
expect 0 "$bin" optimize "$m" "${fast[@]}" --dump-after all -o "$tmp/sq.graph"
contains "dumped the graph after search to $tmp/sq.search.graph"
for s in rules batch costs passes search splits prune reprove dtype fuse lower check; do
  [ -s "$tmp/sq.$s.graph" ] || fail "no dump after $s"
done
cmp -s "$tmp/sq.check.graph" "$tmp/sq.graph" || fail "the dump after check is not the result"
"$bin" print "$m" >"$tmp/orig.graph" 2>&1
cmp -s "$tmp/sq.rules.graph" "$tmp/orig.graph" || fail "the dump after rules is not the model"
cmp -s "$tmp/sq.passes.graph" "$tmp/sq.rules.graph" && fail "the passes changed nothing"
contains "time: load "
contains ", search "
contains ", write "
# CPU seconds per stage, the check's among them
grep -Eq '^cpu: load [0-9.]+ s, rules .*, check [0-9.]+ s, write [0-9.]+ s; [0-9.]+ s in all$' "$tmp/out" ||
  fail "no cpu: line with the check's CPU seconds"
contains "products of the optimized graph reused from the original's"

# the check at batch 4: round 1 whole, rounds 2-3 on both graphs rebatched
# to 2; a graph the optimization left as it was is not run
expect 0 "$bin" optimize "$m" "${fast[@]}" --batch 4 -o "$tmp/sq4.graph"
contains "8000 elements)" # 4 + 2 + 2 rows of 1000 outputs
contains "check batch: round 1 on the graphs as written, batch 4; rounds 2-3 on both rebatched to 2"
printf 'input x: [4,8]\nweight w: [8,8]\ny = matmul(x, w)\noutput y\n' >"$tmp/mm.graph"
expect 0 "$bin" optimize "$tmp/mm.graph" --no-rules -o "$tmp/mm.opt.graph"
contains "over 0 rounds (not run: the optimized graph is the original"

# one stage, to a prefix of one's own; bad stages and no place refused
expect 0 "$bin" optimize "$m" "${fast[@]}" --no-check --dump-after fuse,passes --dump-prefix "$tmp/p"
[ -s "$tmp/p.fuse.graph" ] && [ -s "$tmp/p.passes.graph" ] && [ ! -e "$tmp/p.search.graph" ] ||
  fail "--dump-after fuse,passes --dump-prefix"
expect 1 "$bin" optimize "$m" --dump-after serach -o "$tmp/x.graph"
contains "unknown stage 'serach' for --dump-after"
expect 1 "$bin" optimize "$m" --dump-after search
contains "--dump-after needs -o OUT or --dump-prefix"

# progress: nothing on standard error without a terminal, the stage and
# region on one (the default: its rules, no pass; a last, wide region pass)
"$bin" optimize "$m" --budget 5 --no-check >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || { fail "progress without a terminal:"; cat "$tmp/err"; }
if command -v script >/dev/null 2>&1; then
  script -qec "$bin optimize $m --budget 5 --no-check" /dev/null >"$tmp/out" 2>&1
  contains "] search: region 1 of "
  contains "(pass 3 of 3)"
  contains "cost after:"
else
  echo "skipped: no 'script' to give optimize a terminal"
fi

test_end optimize_stages
