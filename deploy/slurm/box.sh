#!/usr/bin/env bash
# Slurm on the cluster in a box: the namespace hosts of deploy/cluster/box.sh
# become Slurm nodes, so that deploy/slurm/stalelearn.sbatch and `srun
# --mpi=pmix` run for real on one machine.
#
#   deploy/slurm/box.sh up N [--rate RATE]  # box of N hosts + munged, slurmctld, one slurmd per host
#   deploy/slurm/box.sh env                 # SLURM_CONF=... to export for sbatch/srun/sinfo
#   deploy/slurm/box.sh down                # stops the daemons it started, removes the box
#
# Everything lives under $STALELEARN_SLURM_STATE (default /run/stalelearn-slurm):
# slurm.conf, its own munge key and socket (a system munged, if any, is left
# alone), logs, spool and per-node TmpFS (PMIx steps of different nodes
# collide in a shared /tmp otherwise). slurmctld runs in the root namespace
# on the bridge address; each slurmd runs inside its host's network
# namespace with its own hostname, entered with nsenter (not `ip netns exec`,
# which remounts /sys and makes slurmd fail its cgroup detection). Needs root
# and the packages of `deploy/install-deps.sh --cluster`.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BOX="$HERE/../cluster/box.sh"
STATE=${STALELEARN_SLURM_STATE:-/run/stalelearn-slurm}
CONF="$STATE/slurm.conf"
MUNGE_DIR="$STATE/munge"

die() { echo "slurm/box.sh: $*" >&2; exit 2; }
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

require_tools() {
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, daemons)"
  for tool in munged mungekey slurmctld slurmd scontrol sinfo srun sbatch nsenter unshare; do
    command -v "$tool" >/dev/null 2>&1 ||
      die "'$tool' not found: run ./deploy/install-deps.sh --cluster"
  done
}

# Kills the process in pid file $1 if it is still the daemon $2 we started.
stop_pidfile() {
  local file=$1 name=$2 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  if [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$name" ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

down() {
  if [ -f "$CONF" ] && [ -s "$STATE/slurmctld.pid" ] && [ -e "/proc/$(cat "$STATE/slurmctld.pid")" ]; then
    # Cancels jobs and stops slurmctld and every slurmd; pid files catch the rest.
    SLURM_CONF="$CONF" timeout 10 scancel --quiet --full -u root >/dev/null 2>&1 || true
    SLURM_CONF="$CONF" timeout 10 scontrol shutdown >/dev/null 2>&1 || true
    sleep 0.5
  fi
  local f
  for f in "$STATE"/slurmd-*.pid; do [ -e "$f" ] && stop_pidfile "$f" slurmd; done
  stop_pidfile "$STATE/slurmctld.pid" slurmctld
  stop_pidfile "$MUNGE_DIR/munged.pid" munged
  rm -rf "$STATE"
  "$BOX" down
}

write_conf() {
  local net_prefix=$1; shift
  local hosts=("$@") i=0 h
  cat >"$CONF" <<CONF
# Written by deploy/slurm/box.sh for the cluster in a box; removed by 'down'.
ClusterName=stalelearn-box
SlurmctldHost=$(hostname -s)($net_prefix.254)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_DIR/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
TmpFS=$STATE/tmp/%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd-%n.log
CONF
  for h in "${hosts[@]}"; do
    i=$((i + 1))
    echo "NodeName=$h NodeAddr=$net_prefix.$i NodeHostname=$h CPUs=2 State=UNKNOWN" >>"$CONF"
  done
  echo "PartitionName=box Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
}

up() {
  local n=$1; shift
  down
  trap 'echo "slurm/box.sh: up failed; removing everything (logs were in $STATE)" >&2; tail -n 5 "$STATE"/*.log 2>/dev/null >&2 || true; down' ERR
  "$BOX" up "$n" "$@" >/dev/null
  local box_env net_prefix hosts h
  box_env=$("$BOX" env)
  net_prefix=$(sed -n 's/^STALELEARN_BOX_NET=\(.*\)\.0\/24$/\1/p' <<<"$box_env")
  IFS=, read -r -a hosts <<<"$(sed -n 's/^STALELEARN_BOX_HOSTS=//p' <<<"$box_env")"

  mkdir -p "$STATE/ctld" "$MUNGE_DIR"
  chmod 755 "$STATE"
  for h in "${hosts[@]}"; do mkdir -p "$STATE/spool/$h" "$STATE/tmp/$h"; done
  write_conf "$net_prefix" "${hosts[@]}"

  # munged refuses to run as root and checks that its directories are private.
  chown munge:munge "$MUNGE_DIR"
  chmod 755 "$MUNGE_DIR"  # clients need to reach the socket
  runuser -u munge -- mungekey --create --keyfile="$MUNGE_DIR/munge.key" >/dev/null
  runuser -u munge -- munged --socket="$MUNGE_DIR/munge.socket" --key-file="$MUNGE_DIR/munge.key" \
    --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" --seed-file="$MUNGE_DIR/munged.seed"

  slurmctld -f "$CONF"
  for h in "${hosts[@]}"; do
    nsenter --net="/run/netns/$h" unshare --uts sh -c "hostname $h; exec slurmd -f '$CONF' -N $h"
  done
  # Wait until every node is idle.
  local idle=0
  for _ in $(seq 1 100); do
    idle=$(SLURM_CONF="$CONF" sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2=="idle"' | wc -l)
    [ "$idle" -eq "${#hosts[@]}" ] && break
    sleep 0.2
  done
  [ "$idle" -eq "${#hosts[@]}" ] || { echo "slurm/box.sh: only $idle of ${#hosts[@]} nodes idle" >&2; false; }
  trap - ERR
  echo "SLURM_CONF=$CONF"
}

cmd=${1:-}; shift || true
case "$cmd" in
  up)
    [ $# -ge 1 ] || usage
    require_tools
    up "$@" ;;
  down) [ "$(id -u)" -eq 0 ] || die "needs root"; down ;;
  env) [ -f "$CONF" ] || die "no Slurm box is up (deploy/slurm/box.sh up N)"; echo "SLURM_CONF=$CONF" ;;
  *) usage ;;
esac
