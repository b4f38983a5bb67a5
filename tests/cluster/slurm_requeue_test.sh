#!/usr/bin/env bash
# The sbatch template (deploy/slurm/stalelearn.sbatch) survives its time
# limit: a job with a 1-minute limit (--signal=B:USR1@30: the warning 30 s
# before it) runs MF training that needs longer (one compute rank slowed down
# eight times: three let the run end in 27 s, before the warning, once a
# push stopped waiting for a flush every clock). The warning stops the run at
# a clock boundary with a checkpoint (exit 75), the script requeues the job,
# and the requeued job resumes from the checkpoint; it may take several
# attempts. The test releases Slurm's hold on a requeued job (BeginTime,
# about two minutes) after 3 seconds. The job must end with a report that says
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
  --set training.straggler.rank=1 --set training.straggler.slowdown=8)
note "job $job submitted"
# The job's "STATE REASON" from scontrol, which keeps a finished job for
# MinJobAge (5 min) and says so; squeue lists only queued and running jobs,
# so a job that was just requeued, or that failed at once, looks like one that
# ended. Empty when slurmctld did not answer (busy under a -j2 suite).
job_state() { scontrol -o show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\) Reason=\([^ ]*\).*/\1 \2/p'; }
# Everything Slurm knew, for a failure's message.
show_slurm() {
  cat "$WORK"/slurm-*.out >&2 2>/dev/null || true
  echo "-- states seen: ${seen[*]}" >&2
  scontrol show job "$job" >&2 2>/dev/null || true
  tail -n 40 "$(dirname "$SLURM_CONF")/slurmctld.log" >&2 2>/dev/null || true
}
deadline=$((SECONDS + 420))
seen=()  # each state the job went through, in order
last=""
ended=0  # consecutive polls that found the job in a final state
while :; do
  state=$(job_state "$job")
  if [ -n "$state" ] && [ "$state" != "$last" ]; then seen+=("$state"); last=$state; fi
  case "$state" in
    "PENDING BeginTime")
      # Not at once: slurmd refuses a launch whose credential is no newer
      # than the requeue's revocation (whole seconds), and a release in the
      # requeue's second got "Killing non-startable batch JobId=1: Job
      # credential revoked" (the job FAILED). Slurm's own hold is 2 minutes.
      held_since=${held_since:-$SECONDS}
      if [ $((SECONDS - held_since)) -ge 3 ]; then
        note "requeued: releasing its BeginTime hold"
        scontrol update JobId="$job" StartTime=now || note "the hold was gone before the release"
        held_since=""
      fi ;;
    COMPLETED* | FAILED* | CANCELLED* | TIMEOUT* | NODE_FAIL* | OUT_OF_MEMORY* | BOOT_FAIL* | DEADLINE*)
      ended=$((ended + 1))
      [ "$ended" -lt 2 ] || break ;;  # twice in a row: not a passing state around a requeue
    *) ended=0 ;;
  esac
  [ "$SECONDS" -lt "$deadline" ] || { scancel "$job"; show_slurm; fail "the job did not finish in 7 minutes"; }
  sleep 2
done
note "states seen: ${seen[*]}"
[ "${state%% *}" = COMPLETED ] || { show_slurm; fail "the job ended $state"; }
log=$(cat "$WORK"/slurm-*.out)
grep -q "requeueing" <<<"$log" || { show_slurm; fail "the job was never stopped and requeued"; }
grep -q "resuming from" <<<"$log" || { show_slurm; fail "no attempt resumed"; }
[ -s "$STALELEARN_REPORT" ] || { show_slurm; fail "the job wrote no report"; }
resumed=$(jq -r '.resumed_from_clock // 0' "$STALELEARN_REPORT")
stopped=$(jq -r '.stopped // empty' "$STALELEARN_REPORT")
rmse=$(jq -r .final.value "$STALELEARN_REPORT")
attempts=$(grep -c "^stalelearn: job $job (attempt" <<<"$log")
note "attempts $attempts, resumed_from_clock $resumed, test RMSE $rmse"
[ "$resumed" -gt 0 ] || fail "the final report has resumed_from_clock $resumed"
[ -z "$stopped" ] || fail "the final report says stopped: $stopped"
awk -v r="$rmse" 'BEGIN { exit !(r > 0 && r <= 0.93) }' || fail "test RMSE $rmse > 0.93"
echo "PASS: stopped by the time limit's warning, requeued, resumed from clock $resumed in $attempts attempts; RMSE $rmse"
