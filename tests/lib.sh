# lib.sh: helpers shared by the shell tests (sourced, not run). The caller
# sets $tmp (a scratch folder) and fails=0 before using them.

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
