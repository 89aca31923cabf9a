#!/usr/bin/env bash
# threads.sh: the commands that run the CPU executor let their OpenMP threads
# sleep when idle (OMP_WAIT_POLICY=passive, src/cli/main.c) unless the
# variable is set; other commands are left as they are. libgomp prints its
# settings with OMP_DISPLAY_ENV=verbose (the last print is the one in force:
# a re-executed process prints twice).
# usage: tests/threads.sh path/to/superopt path/to/source-dir
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
test_begin

g="$src/tests/data/good/every_op.graph"
# spin CMD...: GOMP_SPINCOUNT in force for CMD, into $spin
spin() {
  expect 0 env OMP_DISPLAY_ENV=verbose "$@"
  spin=$(sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p" "$tmp/out" | tail -1)
}

spin "$bin" run "$g"
[ "$spin" = 0 ] || fail "run spins ($spin), expected passive"
spin "$bin" optimize "$g" --no-rules -o "$tmp/o.graph"
[ "$spin" = 0 ] || fail "optimize spins ($spin)"
spin env OMP_WAIT_POLICY=active "$bin" run "$g"
[ "${spin:-0}" -gt 0 ] || fail "OMP_WAIT_POLICY=active not kept"
spin "$bin" check "$g" # not an executor command: libgomp's default
[ "${spin:-0}" -gt 0 ] || fail "check changed the wait policy"

test_end threads
