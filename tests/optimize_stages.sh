#!/usr/bin/env bash
# optimize_stages.sh: `superopt optimize`'s pipeline stages (src/opt):
# --list-stages names them, --dump-after writes the graph after any of them
# (the last one is the written result, the first the model as read), and on
# a terminal standard error shows the stage and the region searched.
# usage: tests/optimize_stages.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
export SUPEROPT_COSTDB="$tmp/costdb.sqlite"

. "$(dirname "$0")/lib.sh"

m="$src/models/tv_squeezenet.graph"
fast=(--no-rules --budget 5)

expect 0 "$bin" optimize --list-stages
for s in rules batch costs passes search splits prune reprove dtype fuse lower check; do
  grep -q "^$s " "$tmp/out" || { echo "FAIL: --list-stages lacks $s"; fails=$((fails + 1)); }
done
[ "$(wc -l <"$tmp/out")" = 12 ] || { echo "FAIL: --list-stages: not 12 lines"; fails=$((fails + 1)); }

# all stages dumped beside -o, named by the stage
expect 0 "$bin" optimize "$m" "${fast[@]}" --dump-after all -o "$tmp/sq.graph"
contains "dumped the graph after search to $tmp/sq.search.graph"
for s in rules batch costs passes search splits prune reprove dtype fuse lower check; do
  [ -s "$tmp/sq.$s.graph" ] || { echo "FAIL: no dump after $s"; fails=$((fails + 1)); }
done
cmp -s "$tmp/sq.check.graph" "$tmp/sq.graph" || { echo "FAIL: the dump after check is not the result"; fails=$((fails + 1)); }
"$bin" print "$m" >"$tmp/orig.graph" 2>&1
cmp -s "$tmp/sq.rules.graph" "$tmp/orig.graph" || { echo "FAIL: the dump after rules is not the model"; fails=$((fails + 1)); }
cmp -s "$tmp/sq.passes.graph" "$tmp/sq.rules.graph" && { echo "FAIL: the passes changed nothing"; fails=$((fails + 1)); }
contains "time: load "
contains ", search "
contains ", write "

# one stage, to a prefix of one's own; bad stages and no place refused
expect 0 "$bin" optimize "$m" "${fast[@]}" --no-check --dump-after fuse,passes --dump-prefix "$tmp/p"
[ -s "$tmp/p.fuse.graph" ] && [ -s "$tmp/p.passes.graph" ] && [ ! -e "$tmp/p.search.graph" ] ||
  { echo "FAIL: --dump-after fuse,passes --dump-prefix"; fails=$((fails + 1)); }
expect 1 "$bin" optimize "$m" --dump-after serach -o "$tmp/x.graph"
contains "unknown stage 'serach' for --dump-after"
expect 1 "$bin" optimize "$m" --dump-after search
contains "--dump-after needs -o OUT or --dump-prefix"

# progress: nothing on standard error without a terminal, the stage and
# region on one
"$bin" optimize "$m" "${fast[@]}" --no-check >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || { echo "FAIL: progress without a terminal:"; cat "$tmp/err"; fails=$((fails + 1)); }
if command -v script >/dev/null 2>&1; then
  script -qec "$bin optimize $m ${fast[*]} --no-check" /dev/null >"$tmp/out" 2>&1
  contains "] search: region 1 of "
  contains "(pass 2 of 2)"
  contains "cost after:"
else
  echo "skipped: no 'script' to give optimize a terminal"
fi

echo "$fails failure(s)"
[ "$fails" = 0 ]
