#!/usr/bin/env bash
# The sbatch template (deploy/slurm/stalelearn.sbatch) survives its time
# limit: a job with a 1-minute limit (--signal=B:USR1@30: the warning 30 s
# before it) runs MF training that needs longer (one compute rank slowed down
# three times: without it the run can end in 25 s, before the warning). The warning stops the run at
# a clock boundary with a checkpoint (exit 75), the script requeues the job,
# and the requeued job resumes from the checkpoint; it may take several
# attempts. The test releases Slurm's hold on a requeued job (BeginTime,
# about two minutes) at once. The job must end with a report that says
# resumed_from_clock > 0 and not stopped, test RMSE <= 0.93 (this config,
# 300 epochs, overfits to ~0.92; a fresh model is ~1.1), and a log that shows
# the stop and the requeue.
#   slurm_requeue_test.sh ROOT BIN WORK
set -euo pipefail
ROOT=$1 BIN=$2 WORK=$3
source "$ROOT/tests/cluster/cluster_lib.sh"
require_box_support
rm -rf "$WORK"
mkdir -p "$WORK"
slurm_box_up

export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 UCX_WARN_UNUSED_ENV_VARS=n
export STALELEARN_BIN="$BIN" STALELEARN_CONFIG="$ROOT/apps/mf/movielens.pbtxt" STALELEARN_REPORT="$WORK/requeue.json"
export STALELEARN_CHECKPOINT_DIR="$WORK/checkpoints"
job=$(sbatch --parsable --time=1 --signal=B:USR1@30 --chdir="$WORK" --output="$WORK/slurm-%j.out" \
  "$ROOT/deploy/slurm/stalelearn.sbatch" --set output.quiet=true --set training.epochs=300 \
  --set training.straggler.rank=1 --set training.straggler.slowdown=3)
note "job $job submitted"
deadline=$((SECONDS + 420))
gone=0  # consecutive polls that did not find the job: one can be a busy slurmctld's failed squeue
while :; do
  state=$(squeue -h -j "$job" -o "%T %r" 2>/dev/null || true)
  if [ -z "$state" ]; then
    gone=$((gone + 1))
    [ "$gone" -lt 3 ] || break
    sleep 2
    continue
  fi
  gone=0
  if [ "$state" = "PENDING BeginTime" ]; then
    note "requeued: releasing its BeginTime hold"
    scontrol update JobId="$job" StartTime=now
  fi
  [ "$SECONDS" -lt "$deadline" ] || { scancel "$job"; cat "$WORK"/slurm-*.out >&2; fail "the job did not finish in 7 minutes"; }
  sleep 2
done
log=$(cat "$WORK"/slurm-*.out)
grep -q "requeueing" <<<"$log" || { echo "$log" >&2; fail "the job was never stopped and requeued"; }
grep -q "resuming from" <<<"$log" || { echo "$log" >&2; fail "no attempt resumed"; }
[ -s "$STALELEARN_REPORT" ] || { echo "$log" >&2; fail "the job wrote no report"; }
resumed=$(jq -r '.resumed_from_clock // 0' "$STALELEARN_REPORT")
stopped=$(jq -r '.stopped // empty' "$STALELEARN_REPORT")
rmse=$(jq -r .final.value "$STALELEARN_REPORT")
attempts=$(grep -c "^stalelearn: job $job (attempt" <<<"$log")
note "attempts $attempts, resumed_from_clock $resumed, test RMSE $rmse"
[ "$resumed" -gt 0 ] || fail "the final report has resumed_from_clock $resumed"
[ -z "$stopped" ] || fail "the final report says stopped: $stopped"
awk -v r="$rmse" 'BEGIN { exit !(r > 0 && r <= 0.93) }' || fail "test RMSE $rmse > 0.93"
echo "PASS: stopped by the time limit's warning, requeued, resumed from clock $resumed in $attempts attempts; RMSE $rmse"
