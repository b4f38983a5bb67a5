#!/usr/bin/env bash
# A rank dies halfway through `mpirun -np 4` MF (apps/mf/movielens.pbtxt, 3
# compute ranks + 1 memory rank, UCX backend, a checkpoint every 20 clocks):
# a planted kill (debug.kill_rank / kill_at_clock: SIGKILL, as kill -9)
# takes down compute rank 1 (`compute`) or the memory rank 3 (`memory`).
# Plain mpirun then ends the whole job (README, "Faults"), and
# deploy/run.sh --restart 1 relaunches it from the newest complete
# checkpoint. The run must end with exit 0, test RMSE <= 0.90, and a report
# that says it resumed and what it lost: the dead rank, at most one
# checkpoint interval (plus the staleness bound's run-ahead) of clocks.
# Exit 77 (skipped) when MovieLens is not fetched.
#   faults_mpirun_test.sh compute|memory STALELEARN_BIN SOURCE_DIR
set -euo pipefail
case=$1 bin=$2 source_dir=$3
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ ! -d "$data_dir/movielens" ]; then
  echo "faults_mpirun_test: $data_dir/movielens not fetched: run deploy/fetch-data.sh movielens (skipped)"
  exit 77
fi
case "$case" in
  compute) rank=1 ;;
  memory) rank=3 ;;
  *) echo "faults_mpirun_test: case must be compute or memory, got '$case'" >&2; exit 2 ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/faults-mpirun.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "localhost slots=4" >"$work/hosts"
every=20 kill_at=130  # 30 clocks an epoch, 8 epochs: about halfway, mid-interval
set +e
"$source_dir/deploy/run.sh" --hostfile "$work/hosts" -np 4 --timeout 45 --restart 1 --bin "$bin" \
  --mpirun-arg --oversubscribe -- \
  --config "$source_dir/apps/mf/movielens.pbtxt" --set training.epochs=8 --set output.quiet=true \
  --set training.checkpoint.every_clocks=$every --set training.checkpoint.dir="$work/checkpoints" \
  --set debug.kill_rank=$rank --set debug.kill_at_clock=$kill_at --report "$work/report.json" 2>"$work/err.txt"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  cat "$work/err.txt" >&2
  echo "faults_mpirun_test $case: run.sh exited $rc" >&2
  exit 1
fi
grep -q "rank $rank kills itself" "$work/err.txt" || { cat "$work/err.txt" >&2; echo "no planted kill happened" >&2; exit 1; }
python3 - "$work/report.json" "$case" "$rank" "$every" "$kill_at" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
case, rank, every, kill_at = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
problems = []
rmse = report["final"]["value"]
if not 0 < rmse <= 0.90:
    problems.append(f"test RMSE {rmse:.4f} > 0.90")
resumed = int(report.get("resumed_from_clock", 0))
if not kill_at - 2 * every <= resumed <= kill_at:
    problems.append(f"resumed from clock {resumed}, expected the last checkpoint before clock {kill_at}")
lost = report.get("lost", {})
if lost.get("ranks") != [rank]:
    problems.append(f"lost.ranks {lost.get('ranks')}, expected [{rank}]")
clocks, samples = int(lost.get("clocks", 0)), int(lost.get("samples", 0))
if not 0 < clocks <= every + 3 or samples <= 0:  # one interval, plus s + 1 clocks of run-ahead (SSP s = 2)
    problems.append(f"lost {clocks} clocks and {samples} samples, expected 1..{every + 3} clocks and some samples")
print(f"faults_mpirun_test {case}: RMSE {rmse:.4f}, resumed from clock {resumed}, lost {lost}; "
      + ("; ".join(problems) or "ok"))
sys.exit(1 if problems else 0)
PY
