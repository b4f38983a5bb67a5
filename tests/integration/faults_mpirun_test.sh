#!/usr/bin/env bash
# A rank dies halfway through `mpirun -np 4` MF (apps/mf/movielens.pbtxt, 3
# compute ranks + 1 memory rank, UCX backend): a planted kill
# (debug.kill_rank / kill_at_clock: SIGKILL, as kill -9) takes down
#   inplace  compute rank 1, under `mpirun --continuous --mca
#            async_mpi_finalize 1` (without it MPI_Finalize hung in about one
#            run in four) with faults.dead_after_seconds=2: the memory rank
#            notices the stopped heartbeat and drops the rank, the others
#            finish the run;
#   rank0    compute rank 0 (world rank 0), in place as inplace: it
#            evaluates the whole model and world rank 0 writes the report,
#            so compute rank 1 takes over the final evaluation and world
#            rank 1 writes the report (its curve: the final point only);
#   compute  compute rank 1 (deploy/run.sh without a hostfile: this machine), and
#   memory   the memory rank 3, with a checkpoint every 40 clocks: plain
#            mpirun ends the job and deploy/run.sh --restart 1 relaunches it
#            from the newest complete checkpoint.
# The run must end with exit 0, a test RMSE within 0.01 of the same run
# without the fault (run first, plain mpirun -np 4), and a report that says
# what was lost: the dead rank and its clocks (in place: the rest of the
# run; restarted: at most one checkpoint interval plus the staleness bound's
# run-ahead). Exit 77 (skipped) when MovieLens is not fetched.
#   faults_mpirun_test.sh inplace|rank0|compute|memory MPIEXEC STALELEARN_BIN SOURCE_DIR
set -euo pipefail
case=$1 mpiexec=$2 bin=$3 source_dir=$4
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ ! -d "$data_dir/movielens" ]; then
  echo "faults_mpirun_test: $data_dir/movielens not fetched: run deploy/fetch-data.sh movielens (skipped)"
  exit 77
fi
case "$case" in
  inplace|compute) rank=1 ;;
  rank0) rank=0 ;;
  memory) rank=3 ;;
  *) echo "faults_mpirun_test: case must be inplace, rank0, compute or memory, got '$case'" >&2; exit 2 ;;
esac
# Checkpoints in memory when possible: fsync on a busy disk can take seconds,
# and this test is about behaviour, not durability.
scratch=${TMPDIR:-/tmp}
if [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch=/dev/shm; fi
work=$(mktemp -d "$scratch/faults-mpirun.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "localhost slots=4" >"$work/hosts"
every=40 kill_at=130  # about 30 clocks an epoch, 8 epochs: about halfway, mid-interval
train=(--config "$source_dir/apps/mf/movielens.pbtxt" --set training.epochs=8 --set output.quiet=true
       --set debug.kill_rank=$rank --set debug.kill_at_clock=$kill_at --report "$work/report.json")
# The same run without the fault: what the faulted run's RMSE is held to.
"$mpiexec" -n 4 --allow-run-as-root --oversubscribe --bind-to none --stdin none --timeout 90 \
  "$bin" train --config "$source_dir/apps/mf/movielens.pbtxt" --set training.epochs=8 --set output.quiet=true \
  --report "$work/baseline.json" 2>"$work/baseline-err.txt" ||
  { cat "$work/baseline-err.txt" >&2; echo "faults_mpirun_test $case: the run without a fault failed" >&2; exit 1; }
set +e
if [ "$case" = inplace ] || [ "$case" = rank0 ]; then
  "$mpiexec" -n 4 --allow-run-as-root --oversubscribe --bind-to none --stdin none --timeout 90 --continuous --mca async_mpi_finalize 1 \
    "$bin" train "${train[@]}" --set faults.dead_after_seconds=2 2>"$work/err.txt"
else
# compute: run.sh on this machine without a hostfile; memory: with one.
hosts=(--hostfile "$work/hosts" --mpirun-arg --oversubscribe)
[ "$case" = compute ] && hosts=()
"$source_dir/deploy/run.sh" "${hosts[@]}" -np 4 --timeout 90 --restart 1 --bin "$bin" -- \
  --config "$source_dir/apps/mf/movielens.pbtxt" --set training.epochs=8 --set output.quiet=true \
  --set training.checkpoint.every_clocks=$every --set training.checkpoint.dir="$work/checkpoints" \
  --set debug.kill_rank=$rank --set debug.kill_at_clock=$kill_at --report "$work/report.json" 2>"$work/err.txt"
fi
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  cat "$work/err.txt" >&2
  echo "faults_mpirun_test $case: run.sh exited $rc" >&2
  exit 1
fi
grep -q "rank $rank kills itself" "$work/err.txt" || { cat "$work/err.txt" >&2; echo "no planted kill happened" >&2; exit 1; }
python3 - "$work/report.json" "$case" "$rank" "$every" "$kill_at" "$work/baseline.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
case, rank, every, kill_at = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
baseline = json.load(open(sys.argv[6]))["final"]["value"]
problems = []
rmse = report["final"]["value"]
if not (0 < rmse and abs(rmse - baseline) <= 0.01):
    problems.append(f"test RMSE {rmse:.4f}, the run without a fault {baseline:.4f}: more than 0.01 apart")
resumed = int(report.get("resumed_from_clock", 0))
lost = report.get("lost", {})
if lost.get("ranks") != [rank]:
    problems.append(f"lost.ranks {lost.get('ranks')}, expected [{rank}]")
clocks, samples = int(lost.get("clocks", 0)), int(lost.get("samples", 0))
if not report.get("model_checksum"):
    problems.append("no model checksum")
curve = report.get("curve", [])
if not curve or int(curve[-1].get("epoch", 0)) != 8:
    problems.append(f"the curve should end with epoch 8's point, got epochs {[p.get('epoch') for p in curve]}")
if case in ("inplace", "rank0"):
    # The run's clocks, as a survivor counted them (the deal sets an epoch's clocks).
    total = max(int(r.get("clocks", 0)) for r in report["ranks"] if r.get("role") == "compute")
    if resumed != 0:
        problems.append(f"resumed from clock {resumed}: the job should have gone on in place")
    if not total - kill_at <= clocks <= total - kill_at + 3 or samples <= 0:  # died at kill_at, up to s + 1 ahead
        problems.append(f"lost {clocks} clocks and {samples} samples, expected about {total - kill_at} clocks")
    if len(report["ranks"]) != 3 or any(r["rank"] == rank for r in report["ranks"]):
        problems.append(f"the report should list the 3 surviving ranks, got {[r['rank'] for r in report['ranks']]}")
else:
    if not kill_at - 2 * every <= resumed <= kill_at:
        problems.append(f"resumed from clock {resumed}, expected the last checkpoint before clock {kill_at}")
    if not 0 < clocks <= every + 3 or samples <= 0:  # one interval, plus s + 1 clocks of run-ahead (SSP s = 2)
        problems.append(f"lost {clocks} clocks and {samples} samples, expected 1..{every + 3} clocks and some samples")
print(f"faults_mpirun_test {case}: RMSE {rmse:.4f} (without the fault {baseline:.4f}), resumed from clock {resumed}, lost {lost}, "
      f"{len(curve)} curve points, wall {report.get('wall_seconds', 0):.1f} s; "
      + ("; ".join(problems) or "ok"))
sys.exit(1 if problems else 0)
PY
