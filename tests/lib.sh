# lib.sh: helpers shared by the shell tests (sourced, not run): test_begin
# (the scratch folder $tmp, removed at exit, and the failure count), expect,
# contains and fail (each failure counted and shown), test_end (the summary
# and the exit status). A test that makes its own $tmp sets fails=0 itself.

# test_begin [--costdb] : $tmp, a scratch folder removed at exit; fails=0;
# --costdb: the cost database in it (SUPEROPT_COSTDB), not the user's
test_begin() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fails=0
  if [ "${1:-}" = --costdb ]; then
    export SUPEROPT_COSTDB="$tmp/costdb.sqlite"
  fi
}

# fail MESSAGE... : one failure
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# test_end NAME : "NAME: all passed" and exit 0, else the number of
# failures and exit 1
test_end() {
  if [ "$fails" != 0 ]; then
    echo "$1: $fails failure(s)"
    exit 1
  fi
  echo "$1: all passed"
  exit 0
}

# expect CODE CMD... : runs CMD, checks the exit status; output in $tmp/out
expect() {
  local want=$1
  shift
  "$@" >"$tmp/out" 2>&1
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: '$*' exited $got, expected $want"
    sed 's/^/  | /' "$tmp/out"
    fails=$((fails + 1))
  fi
}

# contains TEXT : the last command's output contains TEXT
contains() {
  if ! grep -qF -- "$1" "$tmp/out"; then
    echo "FAIL: output lacks '$1'"
    sed 's/^/  | /' "$tmp/out"
    fails=$((fails + 1))
  fi
}
