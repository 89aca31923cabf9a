#!/usr/bin/env bash
# gen_mpi.sh: gen-rules over MPI. The rules file is byte-identical for 1, 2
# and 3 ranks (and other thread counts; 2 ranks only with
# GEN_MPI_SANITIZED, the sanitizer build) to the one-process run (its
# SHA-256 in tests/data/gen/max-ops-3.sha256, which tests/gen_golden.sh
# checks the one-process run against: not run again here); rank 0
# prints the per-rank table; a rank killed mid-run fails the job, named by
# its rank, with no output file; a run stopped after saving checkpoints
# and resumed on another rank count writes the same file. Skips (77)
# without mpirun or MPI support.
# usage: tests/gen_mpi.sh path/to/superopt source-dir HAVE_MPI(ON|OFF) [mpirun]
set -u
bin=$1
src=$2
have=$3
mpirun=${4:-$(command -v mpirun || true)}
if [ "$have" != ON ] || [ -z "$mpirun" ] || [ ! -x "$mpirun" ]; then
  echo "SKIP: no MPI build or no mpirun"
  exit 77
fi
. "$(dirname "$0")/lib.sh"
test_begin

# Open MPI refuses root without this flag, and more ranks than cores
# without --oversubscribe (CI has 2 cores).
mpi=("$mpirun" --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
export OMPI_MCA_rmaps_base_oversubscribe=1
# containers often forbid the cross-process reads (CMA) of the shared-memory
# transport's single-copy path; copying through shared memory always works
export OMPI_MCA_btl_vader_single_copy_mechanism=none

# same_as_one_process FILE: FILE is the one-process --max-ops 3 file
want=$(cat "$src/tests/data/gen/max-ops-3.sha256")
same_as_one_process() {
  [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$want" ]
}

# the sanitizer build (suite time) compares 2 ranks only; the checkpoint
# runs below still take 2 and 3
ranks="1 2 3"
[ -n "${GEN_MPI_SANITIZED:-}" ] && ranks=2
for n in $ranks; do
  threads=$((n == 2 ? 2 : 1))
  split=$((n == 3 ? 5 : 1)) # first-level branches dealt in parts: same file
  expect 0 "${mpi[@]}" -np $n "$bin" gen-rules --max-ops 3 --split $split \
    --threads $threads -o "$tmp/n$n.rules"
  same_as_one_process "$tmp/n$n.rules" ||
    fail "$n ranks: rules differ from one process"
  [ $n = 2 ] && { contains "RSS MiB"; contains "wrote 2533 rules"; }
done

# --max-ops 5 over every operator: refused where the node's memory (here
# said with --node-memory) cannot hold the ranks' shares; nothing written
expect 1 "${mpi[@]}" -np 2 "$bin" gen-rules --max-ops 5 --node-memory 4 \
  -o "$tmp/n5.rules"
contains "of its 4 GiB"
[ ! -e "$tmp/n5.rules" ] ||
  fail "a refused run wrote its output"

# Checkpoints: 2 ranks stopped after saving 10 branches each fail with no
# output; 3 ranks resume from the saved branches and the saved normal-form
# table and write the same file (branches split in 3 parts both times).
ck=$tmp/ck
expect 2 "${mpi[@]}" -x SUPEROPT_CHECKPOINT_STOP=10 -np 2 "$bin" gen-rules \
  --max-ops 3 --split 3 --threads 1 --checkpoint "$ck" -o "$tmp/resumed.rules"
contains "stopped after saving 10 branches"
[ ! -e "$tmp/resumed.rules" ] ||
  fail "a stopped run wrote its output"
[ "$(ls "$ck"/*.rec | wc -l)" = 20 ] ||
  fail "$(ls "$ck"/*.rec | wc -l) checkpoints, not 20"
[ -s "$ck/nf.tab" ] ||
  fail "no normal-form table saved"
# The saved branches alone (benchmarks: SUPEROPT_SAVED_ONLY=1): the later
# stages run on part of the graphs and find some of the rules; nothing is
# enumerated or saved
SUPEROPT_SAVED_ONLY=1 expect 0 "$bin" gen-rules --max-ops 3 --split 3 \
  --threads 1 --checkpoint "$ck" -o "$tmp/part.rules"
part=$(grep -c '^rule ' "$tmp/part.rules")
[ "$part" -gt 0 ] && [ "$part" -lt 2533 ] ||
  fail "$part rules from the saved branches alone"
[ "$(ls "$ck"/*.rec | wc -l)" = 20 ] ||
  fail "the saved-only run saved branches"
expect 0 "${mpi[@]}" -np 3 "$bin" gen-rules --max-ops 3 --split 3 \
  --threads 1 --checkpoint "$ck" -o "$tmp/resumed.rules"
contains "values (from the checkpoint)"
same_as_one_process "$tmp/resumed.rules" ||
  fail "resumed from checkpoints: rules differ"

# A rank killed mid-run: the job fails naming it; nothing is written.
"${mpi[@]}" -np 2 "$bin" gen-rules --max-ops 3 --threads 1 \
  -o "$tmp/killed.rules" >"$tmp/out" 2>&1 &
job=$!
victim=""
for _ in $(seq 100); do
  for d in /proc/[0-9]*; do # rank 1 of this job (no pgrep needed)
    grep -qzF -- "$tmp/killed.rules" "$d/cmdline" 2>/dev/null &&
      grep -qz '^OMPI_COMM_WORLD_RANK=1$' "$d/environ" 2>/dev/null &&
      victim=${d#/proc/}
  done
  [ -n "$victim" ] && break
  sleep 0.1
done
if [ -z "$victim" ]; then
  fail "rank 1 not found"
else
  sleep 1
  kill -9 "$victim"
fi
wait $job
rc=$?
[ $rc != 0 ] || fail "a killed rank left exit status 0"
contains "rank 1"
[ ! -e "$tmp/killed.rules" ] ||
  fail "a failed run wrote its output"

test_end gen_mpi
