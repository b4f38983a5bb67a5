#!/usr/bin/env bash
# A failed job under deploy/run.sh says what went wrong in one line (issue 27):
#   bad input every rank finds alike (a config field out of range): exit 2,
#   one line naming the field, not one per rank nor mpirun's banners;
#   a failure during training (MF diverges at learning rate 100): exit 1,
#   one line naming the divergence.
# Exit 77 (skipped) when MovieLens is not fetched.
#   runsh_errors_test.sh STALELEARN_BIN SOURCE_DIR
set -uo pipefail
bin=$1 source_dir=$2
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
[ -d "$data_dir/movielens" ] || { echo "SKIP: MovieLens not fetched (deploy/fetch-data.sh movielens)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_WARN_UNUSED_ENV_VARS=n
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# check NAME EXPECTED_RC PATTERN -- TRAIN ARGS...: one stderr line matching PATTERN.
check() {
  local name=$1 expected=$2 pattern=$3; shift 4
  "$source_dir/deploy/run.sh" -np 4 --timeout 120 --bin "$bin" -- --config "$source_dir/apps/mf/movielens.pbtxt" \
    --quiet "$@" >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  [ "$rc" -eq "$expected" ] || fail "$name: exit $rc, expected $expected; stderr: $(cat "$work/$name.err")"
  local lines
  lines=$(grep -c . "$work/$name.err")
  [ "$lines" -eq 1 ] || fail "$name: $lines lines on stderr, expected one:"$'\n'"$(cat "$work/$name.err")"
  grep -q -- "$pattern" "$work/$name.err" || fail "$name: '$pattern' not in: $(cat "$work/$name.err")"
  echo "ok: $name: $(cat "$work/$name.err")"
}
check bad_config 2 "app.mf.rank must be in \[1, 65536\], got -1" -- --set app.mf.rank=-1
check diverged 1 "diverged: table" -- --set app.mf.learning_rate=100
echo "PASS"
