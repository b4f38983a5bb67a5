#!/usr/bin/env bash
# The sbatch template (deploy/slurm/stalelearn.sbatch, srun --mpi=pmix) runs
# the same MF training on the Slurm box (3 namespace hosts, one slurmd each)
# and its report matches the mpirun run's on the same hosts: test RMSE within
# 0.01 of it and <= 0.90, the same placement, tcp between the hosts.
#   slurm_test.sh ROOT BIN WORK
set -euo pipefail
ROOT=$1 BIN=$2 WORK=$3
source "$ROOT/tests/cluster/cluster_lib.sh"
require_box_support
mkdir -p "$WORK"
slurm_box_up

# The mpirun reference on the same hosts.
run_mf "$WORK/reference.json"

export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 UCX_WARN_UNUSED_ENV_VARS=n
export STALELEARN_BIN="$BIN" STALELEARN_CONFIG="$ROOT/apps/mf/movielens.pbtxt" STALELEARN_REPORT="$WORK/slurm.json"
rm -f "$STALELEARN_REPORT"
if ! timeout 300 sbatch --wait --chdir="$WORK" --output="$WORK/slurm-%j.out" \
    "$ROOT/deploy/slurm/stalelearn.sbatch" --set output.quiet=true; then
  cat "$WORK"/slurm-*.out >&2 || true
  fail "the sbatch job failed"
fi
[ -s "$STALELEARN_REPORT" ] || { cat "$WORK"/slurm-*.out >&2 || true; fail "the job wrote no report"; }

ref=$(jq -r .final.value "$WORK/reference.json")
got=$(jq -r .final.value "$STALELEARN_REPORT")
note "test RMSE: mpirun $ref, sbatch+srun $got ($(jq -r .wall_seconds "$STALELEARN_REPORT") s)"
check_placement "$STALELEARN_REPORT"
check_tcp_between_hosts "$STALELEARN_REPORT"
awk -v a="$ref" -v b="$got" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && b <= 0.90 && d <= 0.01) }' ||
  fail "sbatch RMSE $got does not match mpirun's $ref (within 0.01, <= 0.90)"
echo "PASS: sbatch template trained to RMSE $got (mpirun: $ref)"
