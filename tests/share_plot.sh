#!/usr/bin/env bash
# share_plot.sh: scripts/share-plot splits each network's measured gain by
# its source from a gpu-share times.tsv: generated rules (orig - ro),
# fusion and lowering (ro - none), the rest (none - default), in percent
# of orig - default; a row missing a run and a row whose gain is within
# the spread (under 3% of the original) left out; a file with no row to
# plot refused with a message.
# usage: tests/share_plot.sh path/to/superopt path/to/source-dir
set -u
src=$2
. "$(dirname "$0")/lib.sh"
test_begin
if ! command -v gnuplot >/dev/null; then
  echo "share_plot: gnuplot not found (scripts/setup installs it): skipped"
  exit 0
fi
printf 'model\tbatch\trun\tms\n' >"$tmp/times.tsv"
for row in "a 1 orig 1.0" "a 1 ro 0.6" "a 1 none 0.55" "a 1 default 0.5" \
  "b 16 orig 2.0" "b 16 ro 1.5" "b 16 none 1.55" "b 16 default 1.5" \
  "c 1 orig 1.0" "c 1 ro 0.9" "c 1 default 0.9" \
  "d 1 orig 1.0" "d 1 ro 0.99" "d 1 none 0.99" "d 1 default 0.99"; do
  printf '%s\t%s\t%s\t%s\n' $row >>"$tmp/times.tsv"
done
expect 0 "$src/scripts/share-plot" "$tmp/times.tsv" "$tmp/s.png"
[ -s "$tmp/s.png" ] || fail "no png written"
got=$(grep -v '^#' "$tmp/s.dat")
want=$(printf 'a.b1\t80.0\t10.0\t10.0\nb.b16\t100.0\t-10.0\t10.0')
[ "$got" = "$want" ] || fail "plotted numbers: got [$got], want [$want]"
# scripts/share's share.tsv (estimates, one row per model and batch)
printf 'model\tbatch\torig_us\tro_us\tnone_us\tfuse_us\tdefault_us\n' \
  >"$tmp/share.tsv"
printf 'e\t1\t100\t60\t55\t70\t50\n' >>"$tmp/share.tsv"
expect 0 "$src/scripts/share-plot" "$tmp/share.tsv" "$tmp/e.png"
got=$(grep -v '^#' "$tmp/e.dat")
[ "$got" = "$(printf 'e.b1\t80.0\t10.0\t10.0')" ] ||
  fail "estimated: got [$got]"
head -3 "$tmp/times.tsv" >"$tmp/few.tsv"
expect 1 "$src/scripts/share-plot" "$tmp/few.tsv" "$tmp/f.png"
contains "no network with all four runs"
test_end share_plot
