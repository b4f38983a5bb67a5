#!/usr/bin/env bash
# Early stopping for apps that evaluate in parts (framework/runtime/
# eval_parts_exchange.h): every compute rank scores its part of the test set,
# compute rank 0 adds the parts of each evaluation as they arrive and decides.
# LR (apps/lr/spam.pbtxt, 60 epochs: its accuracy stops rising after a few)
# and LDA (apps/lda/brown.pbtxt, 100 epochs evaluated every epoch: its
# perplexity flattens out after ~40), patience 3, with a checkpoint directory,
# as threads (--ranks 3:1) or under mpirun -np 4 (UCX). Each run must end
# before its last epoch with exit 0, `stopped.reason` early_stopping, and a
# `best` that is the best point of the report's curve (whose points are the
# parts added up at the end: the value compute rank 0 decided on must be
# the same to the bit), before the last evaluation, with its model file
# beside the checkpoints. Without the exchange the run is refused (exit 2),
# or trains every epoch.
# Exit 77 (skipped) when neither data set is fetched.
#   early_stopping_parts_test.sh threads|mpirun STALELEARN_BIN SOURCE_DIR [MPIEXEC]
set -euo pipefail
how=$1 bin=$2 source_dir=$3 mpiexec=${4:-mpirun}
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
work=$(mktemp -d "${TMPDIR:-/tmp}/early-stopping-parts.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "early_stopping_parts_test ($how): $*" >&2; tail -5 "$work/err.txt" >&2 || true; exit 1; }

ran=0
case_run() {  # NAME DATASET CONFIG EPOCHS [--set ...]
  local name=$1 dataset=$2 config=$3 epochs=$4
  shift 4
  if [ ! -d "$data_dir/$dataset" ]; then
    echo "early_stopping_parts_test: $data_dir/$dataset not fetched: $name skipped"
    return 0
  fi
  local args=(train --config "$source_dir/$config" --set training.epochs="$epochs"
              --set training.early_stopping.patience=3 --set training.checkpoint.dir="$work/$name-checkpoints"
              --report "$work/$name.json" "$@")
  set +e
  if [ "$how" = mpirun ]; then
    "$mpiexec" -n 4 --allow-run-as-root --oversubscribe --bind-to none --stdin none --timeout 120 \
      "$bin" "${args[@]}" 2>"$work/err.txt" >/dev/null
  else
    timeout 120 "$bin" "${args[@]}" --ranks 3:1 2>"$work/err.txt" >/dev/null
  fi
  local rc=$?
  set -e
  [ "$rc" = 0 ] || fail "$name: exit code $rc, expected 0 (stopped early)"
  python3 - "$work/$name.json" "$epochs" "$name" "$how" <<'PY' || fail "$name: report"
import json, os, sys
report = json.load(open(sys.argv[1]))
epochs, name, how = int(sys.argv[2]), sys.argv[3], sys.argv[4]
stopped = report.get("stopped")
assert stopped and stopped.get("reason") == "early_stopping", f"stopped: {stopped}"
curve = report.get("curve", [])
assert curve, "no curve"
last_epoch = max(int(p.get("epoch", 0)) for p in curve)
assert last_epoch < epochs, f"trained to epoch {last_epoch} of {epochs}: the stop did not stop the run"
best = report.get("best")
assert best, "no best evaluation in the report"
higher = "accuracy" in best["metric"]
values = [p["metric_value"] for p in curve]
top = max(values) if higher else min(values)
assert best["value"] == top, f"best {best['value']} is not the curve's best {top}"
assert any(int(p["epoch"]) == int(best["epoch"]) and p["metric_value"] == best["value"] for p in curve), \
    f"best {best} is no point of the curve"
# The patience: three evaluations during the run after the best did not beat it.
assert sum(1 for p in curve[:-1] if int(p["epoch"]) > int(best["epoch"])) >= 3 or curve[-1]["metric_value"] == top, \
    f"stopped before the patience ran out: best {best}, curve {[(p['epoch'], p['metric_value']) for p in curve]}"
assert best.get("model_checksum"), "the best names no model"
assert best.get("model_file") and os.path.exists(best["model_file"]), f"best model file missing: {best.get('model_file')}"
print(f"{name} ({how}): stopped at clock {stopped.get('clock')}, epoch {last_epoch}; "
      f"best {best['metric']} {best['value']:.4f} after epoch {best['epoch']}, last {report['final']['value']:.4f}")
PY
  ran=$((ran + 1))
}

case_run lr spam apps/lr/spam.pbtxt 60
case_run lda brown apps/lda/brown.pbtxt 100 --set training.eval_every_epochs=1 --set training.checkpoint.every_clocks=200
[ "$ran" -gt 0 ] || { echo "early_stopping_parts_test: neither spam nor brown fetched (skipped)"; exit 77; }
