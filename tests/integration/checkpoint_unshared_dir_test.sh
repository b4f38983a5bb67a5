#!/usr/bin/env bash
# Checkpoints under mpirun when the ranks do not share the checkpoint
# directory (framework/runtime/checkpointer.h: each rank writes its part and
# an entry, the rank that completes the set writes the manifest). Forced
# here with a relative training.checkpoint.dir and two working directories
# (mpirun MPMD, --wdir): no checkpoint can complete, training itself is fine,
# so the run must exit 0 and say so in one warning line naming the
# directory, and neither directory may hold a manifest. A silent run (no
# checkpoint to resume from, nothing said) fails.
# Exit 77 (skipped) when MovieLens is not fetched.
#   checkpoint_unshared_dir_test.sh MPIEXEC STALELEARN_BIN SOURCE_DIR
set -euo pipefail
mpiexec=$1 bin=$2 source_dir=$3
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ ! -d "$data_dir/movielens" ]; then
  echo "checkpoint_unshared_dir_test: $data_dir/movielens not fetched: run deploy/fetch-data.sh movielens (skipped)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/checkpoint-unshared.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "checkpoint_unshared_dir_test: $*" >&2; tail -5 "$work/err.txt" >&2 || true; exit 1; }
mkdir -p "$work/a" "$work/b"
args=(train --config "$source_dir/apps/mf/movielens.pbtxt" --quiet --set training.epochs=2
  --set training.checkpoint.every_clocks=10 --set training.checkpoint.dir=checkpoints)
set +e
"$mpiexec" --allow-run-as-root --oversubscribe --bind-to none --stdin none --timeout 100 \
  -n 1 --wdir "$work/a" "$bin" "${args[@]}" : -n 2 --wdir "$work/b" "$bin" "${args[@]}" 2>"$work/err.txt" >/dev/null
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "exit $rc"
grep -q "warning: checkpoint checkpoints/clock-[0-9]* has no manifest after every rank wrote its part: training.checkpoint.dir must be one directory every rank sees" "$work/err.txt" ||
  fail "no warning that the checkpoints never completed"
[ "$(grep -c warning "$work/err.txt")" -eq 1 ] || fail "more than one warning line"
! compgen -G "$work/[ab]/checkpoints/clock-*/MANIFEST" >/dev/null || fail "a manifest was written without every part"
echo "PASS: unshared checkpoint directory: exit 0, one warning, no manifest"
