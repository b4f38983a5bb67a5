#!/usr/bin/env bash
# Early stopping under mpirun (framework/runtime/stop_agreement.h): only the
# evaluating compute rank sees the patience run out; the bootstrap announces
# its request to the other processes, which join the stop agreement at their
# next clock. MF on MovieLens (apps/mf/movielens.pbtxt) under mpirun -np 4
# (UCX), 300 epochs that overfit after ~30, patience 3, a checkpoint
# directory: the job must end well before 300 epochs with exit 0, a report
# whose `stopped.reason` is early_stopping at a clock before the end, a
# `best` evaluation that beats the last one, and the best model's file
# beside the checkpoints. A request that reached no other process leaves
# them training (or waiting for it) until mpirun's --timeout fails the job.
# Exit 77 (skipped) when MovieLens is not fetched.
#   early_stopping_mpirun_test.sh MPIEXEC STALELEARN_BIN SOURCE_DIR
set -euo pipefail
mpiexec=$1 bin=$2 source_dir=$3
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ ! -d "$data_dir/movielens" ]; then
  echo "early_stopping_mpirun_test: $data_dir/movielens not fetched: run deploy/fetch-data.sh movielens (skipped)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/early-stopping-mpirun.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "early_stopping_mpirun_test: $*" >&2; tail -5 "$work/err.txt" >&2 || true; exit 1; }

set +e
"$mpiexec" -n 4 --allow-run-as-root --oversubscribe --bind-to none --stdin none --timeout 150 \
  "$bin" train --config "$source_dir/apps/mf/movielens.pbtxt" --set training.epochs=300 \
  --set training.early_stopping.patience=3 --set training.checkpoint.dir="$work/checkpoints" \
  --report "$work/report.json" 2>"$work/err.txt" >/dev/null
rc=$?
set -e
[ "$rc" = 0 ] || fail "exit code $rc, expected 0 (stopped early)"
python3 - "$work/report.json" <<'PY' || fail "report"
import json, os, sys
report = json.load(open(sys.argv[1]))
stopped = report.get("stopped")
assert stopped and stopped.get("reason") == "early_stopping", f"stopped: {stopped}"
curve = report.get("curve", [])
assert curve, "no curve"
last_epoch = max(int(p.get("epoch", 0)) for p in curve)
assert last_epoch < 300, f"trained to epoch {last_epoch}: the stop did not stop the run"
best = report.get("best")
assert best and int(best["epoch"]) < last_epoch, f"best {best} not before the last evaluation (epoch {last_epoch})"
final = report["final"]["value"]
assert best["value"] <= final, f"best {best['value']} worse than the last {final}"
assert best.get("model_file") and os.path.exists(best["model_file"]), f"best model file missing: {best.get('model_file')}"
print(f"stopped at clock {stopped.get('clock')}, epoch {last_epoch}; best epoch {best['epoch']} {best['value']:.4f}, last {final:.4f}")
PY
