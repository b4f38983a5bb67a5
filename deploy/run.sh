#!/usr/bin/env bash
# Starts a cross-host training job from a hostfile with the mpirun, MCA and
# UCX settings such a job needs (docs/guide/clusters.md):
#
#   deploy/run.sh --hostfile hosts -np 8 [options] -- --config apps/mf/movielens.pbtxt --report r.json
#
# Everything after "--" goes to `stalelearn train`. Options:
#   --hostfile F          OpenMPI hostfile ("host slots=K" lines); without
#                         it every rank runs on this machine (localhost,
#                         -np slots, --oversubscribe)
#   -np N                 ranks in all
#   --memory-hosts H,...  dedicated memory hosts: the last M ranks go to these
#                         hosts (round-robin), the others fill the remaining
#                         hosts of F by their slots; sets cluster.placement=
#                         MEMORY_LAST and cluster.memory_ranks=M (mpirun's
#                         sequential mapper, rmaps seq). Without it ranks fill
#                         hosts in order and cluster.placement decides
#                         (MEMORY_SPREAD: every host gets its share).
#   --memory-ranks M      with --memory-hosts; default: one per memory host
#   --net CIDR            the network MPI's out-of-band and tcp traffic use
#                         (oob_tcp_if_include, btl_tcp_if_include)
#   --ucx-tls LIST        UCX_TLS for every rank (e.g. rc,sm,self or tcp,self)
#   --ucx-devices LIST    UCX_NET_DEVICES (e.g. mlx5_0:1 or eth0)
#   --rsh-agent PATH      how mpirun reaches the hosts (default ssh)
#   --box                 the cluster in a box (deploy/cluster/box.sh): its
#                         net and rsh agent, UCX_TLS=tcp,self and
#                         UCX_NET_DEVICES=eth0 (namespaces share /dev/shm, so
#                         without it UCX silently uses shared memory)
#   --timeout S           mpirun --timeout (the job is killed after S seconds)
#   --restart N           when the job dies (a rank killed or crashed: plain
#                         mpirun then ends the whole job), relaunch it up to N
#                         times, each from the newest complete checkpoint
#                         (`train --resume DIR`; from the start if none is
#                         complete yet). Needs training.checkpoint.dir (in the
#                         config or as --set). The rank mpirun names as dead
#                         is appended to DIR/LOST_RANKS, which the resumed
#                         run reports (`lost { ranks clocks samples }`).
#   --survive S           a compute rank's death does not end the job: mpirun
#                         --continuous --mca async_mpi_finalize 1, and
#                         faults.dead_after_seconds=S (the memory ranks drop
#                         a rank whose heartbeat stood still S seconds)
#   --bin PATH            the stalelearn program (default build/bin/stalelearn)
#   --mpirun-arg ARG      one more mpirun argument (repeatable)
#   --dry-run             print the mpirun command instead of running it
# Signals: SIGINT, SIGTERM and SIGUSR1 stop the run gracefully (forwarded to
# the ranks as SIGUSR1: checkpoint, report, exit 75); a second one ends it.
# Exit code: mpirun's (the last attempt's with --restart); 2 for bad
# arguments; 75 when a signal stopped the run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "run.sh: $*" >&2; exit 2; }

hostfile="" np="" memory_hosts="" memory_ranks="" net="" ucx_tls="" ucx_devices="" agent=""
timeout="" restarts=0 survive="" bin="${STALELEARN_BIN:-$ROOT/${STALELEARN_BUILD_DIR:-build}/bin/stalelearn}" dry_run=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hostfile) hostfile=${2:?--hostfile needs a file}; shift 2 ;;
    -np|--np) np=${2:?-np needs a number}; shift 2 ;;
    --memory-hosts) memory_hosts=${2:?--memory-hosts needs hosts}; shift 2 ;;
    --memory-ranks) memory_ranks=${2:?--memory-ranks needs a number}; shift 2 ;;
    --net) net=${2:?--net needs a CIDR}; shift 2 ;;
    --ucx-tls) ucx_tls=${2:?--ucx-tls needs a list}; shift 2 ;;
    --ucx-devices) ucx_devices=${2:?--ucx-devices needs a list}; shift 2 ;;
    --rsh-agent) agent=${2:?--rsh-agent needs a path}; shift 2 ;;
    --box)
      box_env=$("$ROOT/deploy/cluster/box.sh" env) || die "--box: no box is up (deploy/cluster/box.sh up N)"
      net=$(sed -n 's/^STALELEARN_BOX_NET=//p' <<<"$box_env")
      agent=$(sed -n 's/^STALELEARN_BOX_AGENT=//p' <<<"$box_env")
      ucx_tls=tcp,self ucx_devices=eth0
      shift ;;
    --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
    --restart) restarts=${2:?--restart needs a number}; shift 2 ;;
    --survive) survive=${2:?--survive needs seconds}; shift 2 ;;
    --bin) bin=${2:?--bin needs a path}; shift 2 ;;
    --mpirun-arg) extra+=("${2?--mpirun-arg needs a value}"); shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; break ;;
    *) die "unknown option '$1' (train arguments go after --)" ;;
  esac
done
train_args=("$@")

[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "-np must be a positive number, got '${np}'"
one_machine=0
if [ -z "$hostfile" ]; then
  [ -z "$memory_hosts" ] || die "--memory-hosts needs --hostfile (the hosts it names are in it)"
  one_machine=1
else
  [ -r "$hostfile" ] || die "cannot read hostfile '$hostfile'"
fi
[ -x "$bin" ] || die "no stalelearn program at '$bin' (./deploy/build.sh, or --bin)"
[ -z "$timeout" ] || [[ "$timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be seconds, got '$timeout'"
[[ "$restarts" =~ ^[0-9]+$ ]] || die "--restart must be a number, got '$restarts'"
[ -z "$survive" ] || [[ "$survive" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--survive must be seconds, got '$survive'"

# Hostfile entries: "name slots=K" (slots default 1), comments and blanks skipped.
host_lines=()
if [ "$one_machine" -eq 0 ]; then
  mapfile -t host_lines < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$hostfile")
  [ ${#host_lines[@]} -gt 0 ] || die "hostfile '$hostfile' names no host"
fi

mpirun_args=(--bind-to none -np "$np")
[ "$(id -u)" -ne 0 ] || mpirun_args+=(--allow-run-as-root)
tmp_hostfile=""
cleanup() { [ -z "$tmp_hostfile" ] || rm -f "$tmp_hostfile"; }
trap cleanup EXIT

if [ -n "$memory_hosts" ]; then
  IFS=, read -r -a mem_hosts <<<"$memory_hosts"
  [ -n "$memory_ranks" ] || memory_ranks=${#mem_hosts[@]}
  [[ "$memory_ranks" =~ ^[1-9][0-9]*$ ]] || die "--memory-ranks must be a positive number, got '$memory_ranks'"
  [ "$memory_ranks" -lt "$np" ] || die "--memory-ranks $memory_ranks leaves no compute rank of $np"
  compute_slots=()  # one entry per slot of a non-memory host, in hostfile order
  known=" "
  for line in "${host_lines[@]}"; do
    read -r name rest <<<"$line"
    known+="$name "
    slots=$(grep -o 'slots=[0-9]*' <<<"$rest" | cut -d= -f2 || true)
    if [[ ",$memory_hosts," == *",$name,"* ]]; then continue; fi
    for _ in $(seq 1 "${slots:-1}"); do compute_slots+=("$name"); done
  done
  for h in "${mem_hosts[@]}"; do
    [[ "$known" == *" $h "* ]] || die "memory host '$h' is not in hostfile '$hostfile'"
  done
  [ ${#compute_slots[@]} -gt 0 ] || die "every host of '$hostfile' is a memory host: no room for compute ranks"
  tmp_hostfile=$(mktemp /tmp/stalelearn-seq.XXXXXX)
  compute=$((np - memory_ranks))
  # The sequential mapper puts rank i on line i: compute ranks first (filling
  # slots, wrapping around when oversubscribed), then the memory ranks.
  for i in $(seq 0 $((compute - 1))); do echo "${compute_slots[$((i % ${#compute_slots[@]}))]}"; done >"$tmp_hostfile"
  for i in $(seq 0 $((memory_ranks - 1))); do echo "${mem_hosts[$((i % ${#mem_hosts[@]}))]}"; done >>"$tmp_hostfile"
  mpirun_args+=(--hostfile "$tmp_hostfile" --mca rmaps seq --oversubscribe)
  train_args+=(--set cluster.placement=MEMORY_LAST --set "cluster.memory_ranks=$memory_ranks")
elif [ "$one_machine" -eq 1 ]; then
  # This machine only; more ranks than cores is the usual emulation.
  mpirun_args+=(--host "localhost:$np" --oversubscribe)
else
  mpirun_args+=(--hostfile "$hostfile")
fi

[ -z "$agent" ] || mpirun_args+=(--mca plm_rsh_agent "$agent")
[ -z "$net" ] || mpirun_args+=(--mca oob_tcp_if_include "$net" --mca btl_tcp_if_include "$net")
[ -z "$timeout" ] || mpirun_args+=(--timeout "$timeout")
if [ -n "$survive" ]; then
  # Without async_mpi_finalize, MPI_Finalize hung after a death in about one run in four.
  mpirun_args+=(--continuous --mca async_mpi_finalize 1)
  train_args+=(--set "faults.dead_after_seconds=$survive")
fi
# -x exports to every rank (over ssh the environment does not travel otherwise).
export UCX_WARN_UNUSED_ENV_VARS=${UCX_WARN_UNUSED_ENV_VARS:-n}
mpirun_args+=(-x UCX_WARN_UNUSED_ENV_VARS)
if [ -n "$ucx_tls" ]; then export UCX_TLS=$ucx_tls; mpirun_args+=(-x UCX_TLS); fi
if [ -n "$ucx_devices" ]; then export UCX_NET_DEVICES=$ucx_devices; mpirun_args+=(-x UCX_NET_DEVICES); fi
mpirun_args+=("${extra[@]}")

if [ "$dry_run" -eq 1 ]; then
  [ -z "$tmp_hostfile" ] || { echo "# rank -> host (sequential mapper):"; sed 's/^/#   /' "$tmp_hostfile"; }
  echo "${UCX_TLS:+UCX_TLS=$UCX_TLS }${UCX_NET_DEVICES:+UCX_NET_DEVICES=$UCX_NET_DEVICES }mpirun ${mpirun_args[*]} $bin train ${train_args[*]}"
  exit 0
fi
# A graceful stop (stalelearn train stops at a clock boundary, checkpoints
# and exits 75): SIGINT, SIGTERM and SIGUSR1 reach the ranks as SIGUSR1, at
# once. mpirun would pass SIGTERM/SIGINT on only after its
# odls_base_sigkill_timeout (1 s) and SIGKILL the ranks as long after: too
# soon to checkpoint a large model. mpirun runs in its own session, so a
# Ctrl-C at the terminal reaches it only through this script; a second
# signal ends the job at once (SIGTERM to mpirun).
run_mpirun() {
  setsid mpirun "$@" </dev/null &
  local pid=$! signals=0 status
  trap 'signals=$((signals + 1)); if [ $signals -eq 1 ]; then kill -USR1 $pid; else kill -TERM $pid; fi 2>/dev/null' \
    INT TERM USR1
  while :; do
    wait "$pid"
    status=$?
    kill -0 "$pid" 2>/dev/null || break  # else a trapped signal interrupted the wait
  done
  trap - INT TERM USR1
  return "$status"
}

# One error line for a failed job: mpirun's own banners (-q) repeat what the
# ranks said, and an input error every rank finds alike (a bad config) is
# printed once. (Not with --restart: it reads mpirun's "process rank N" line.)
once_errors() { awk '/^stalelearn: error/ { if (seen[$0]++) next } { print; fflush() }' >&2; }

set +e
if [ "$restarts" -eq 0 ]; then
  exec {errors}> >(once_errors)
  filter=$!
  run_mpirun -q "${mpirun_args[@]}" "$bin" train "${train_args[@]}" 2>&"$errors"
  rc=$?
  exec {errors}>&-  # the filter sees the end and flushes
  wait "$filter"
  exit $rc
fi

# --restart: the checkpoint directory, from a --set or the config file.
checkpoint_dir="" config=""
for ((i = 0; i < ${#train_args[@]}; i++)); do
  case "${train_args[$i]}" in
    training.checkpoint.dir=*) checkpoint_dir=${train_args[$i]#training.checkpoint.dir=} ;;
    --config) config=${train_args[$((i + 1))]:-} ;;
  esac
done
if [ -z "$checkpoint_dir" ] && [ -r "$config" ]; then
  checkpoint_dir=$(tr '\n' ' ' <"$config" | grep -o 'checkpoint *{[^}]*}' | grep -o 'dir: *"[^"]*"' | head -n 1 |
                   sed 's/dir: *"\(.*\)"/\1/' || true)
fi
[ -n "$checkpoint_dir" ] || die "--restart needs training.checkpoint.dir (in the config or --set training.checkpoint.dir=DIR)"
mkdir -p "$checkpoint_dir"
rm -f "$checkpoint_dir/LOST_RANKS"
log=$(mktemp /tmp/stalelearn-run.XXXXXX)
trap 'cleanup; rm -f "$log"' EXIT
args=("${train_args[@]}")
for ((attempt = 0; ; attempt++)); do
  : >"$log"
  run_mpirun "${mpirun_args[@]}" "$bin" train "${args[@]}" 2> >(tee -a "$log" >&2)
  rc=$?
  wait  # for tee
  # 2: bad arguments or config; 75: stopped by a signal (resume it with
  # --resume when you want it to go on); restarting cannot help.
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || [ "$rc" -eq 75 ] || [ "$attempt" -ge "$restarts" ]; then exit $rc; fi
  # "mpirun noticed that process rank 1 with PID ... exited on signal 9 (Killed)."
  dead=$(grep -o 'process rank [0-9]*' "$log" | head -n 1 | grep -o '[0-9]*$' || true)
  [ -z "$dead" ] || echo "$dead" >>"$checkpoint_dir/LOST_RANKS"
  # Relaunch from the newest checkpoint with a manifest (train --resume
  # verifies it and passes over damaged ones), else from the start.
  args=()
  for ((i = 0; i < ${#train_args[@]}; i++)); do
    if [ "${train_args[$i]}" = "--resume" ]; then i=$((i + 1)); continue; fi
    args+=("${train_args[$i]}")
  done
  from="the start (no complete checkpoint yet)"
  if compgen -G "$checkpoint_dir/clock-*/MANIFEST" >/dev/null; then
    args+=(--resume "$checkpoint_dir")
    from="the newest checkpoint in $checkpoint_dir"
  fi
  echo "run.sh: the job ended with exit code $rc${dead:+ (rank $dead died)}; restart $((attempt + 1)) of $restarts from $from" >&2
done
