# Shared by the cluster tests (sourced): skipping, failing, the box's
# teardown on every exit, running MF across the box's hosts, and reading the
# veth byte counters. The tests run as CTest tests with SKIP_RETURN_CODE 77.
#
# Expects ROOT (repository), BIN (stalelearn program), WORK (a scratch dir).

SKIP_CODE=77
skip() { echo "SKIPPED: $*"; exit "$SKIP_CODE"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

# Skips unless this machine can make namespace hosts: root, iproute2, jq,
# and a kernel/container that allows network namespaces and veth pairs.
require_box_support() {
  [ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces (run ./deploy/test.sh as root)"
  local tool
  for tool in ip tc unshare nsenter jq mpirun; do
    command -v "$tool" >/dev/null 2>&1 || skip "'$tool' not found (./deploy/install-deps.sh --cluster)"
  done
  local probe="slprobe$$"
  if ! ip netns add "$probe" 2>/dev/null; then skip "cannot create network namespaces here (ip netns add failed)"; fi
  if ! ip link add "v$probe" type veth peer name eth0 netns "$probe" 2>/dev/null; then
    ip netns del "$probe" 2>/dev/null
    skip "cannot create veth pairs here"
  fi
  ip link del "v$probe" 2>/dev/null || true
  ip netns del "$probe"
  [ -x "$BIN" ] || fail "no stalelearn program at $BIN"
  BIN=$(realpath "$BIN")  # jobs start elsewhere (Slurm: in another directory)
  local data="${STALELEARN_DATA:-$HOME/.cache/stalelearn}/movielens"
  [ -d "$data" ] || skip "MovieLens not fetched ($data; ./deploy/fetch-data.sh movielens)"
}

# Tears the box down when the test exits, whatever the outcome.
# slurm_box_up: skips unless Slurm and munge are installed, then brings the
# Slurm box up on 3 hosts (torn down on exit) and exports its SLURM_CONF.
slurm_box_up() {
  local tool
  for tool in munged mungekey slurmctld slurmd sbatch srun scontrol squeue sinfo; do
    command -v "$tool" >/dev/null 2>&1 || skip "'$tool' not found (./deploy/install-deps.sh --cluster installs Slurm and munge)"
  done
  teardown_on_exit
  eval "export $("$ROOT/deploy/slurm/box.sh" up 3)"
}

teardown_on_exit() {
  trap '"$ROOT/deploy/slurm/box.sh" down >/dev/null 2>&1 || true; "$ROOT/deploy/cluster/box.sh" down >/dev/null 2>&1 || true' EXIT
}

# Bytes the host sent / received: counters of the root end of its veth (what
# the root end receives, the host sent).
host_tx_bytes() { cat "/sys/class/net/v$1/statistics/rx_bytes"; }
host_rx_bytes() { cat "/sys/class/net/v$1/statistics/tx_bytes"; }

# run_mf REPORT [train args...]: MF on MovieLens across the box's 3 hosts
# under mpirun, compute ranks on slnode1 and slnode2, the memory rank on
# slnode3 (deploy/run.sh --memory-hosts).
run_mf() {
  local report=$1; shift
  "$ROOT/deploy/cluster/box.sh" hostfile >"$WORK/hosts"
  "$ROOT/deploy/run.sh" --hostfile "$WORK/hosts" -np 3 --box --memory-hosts slnode3 --timeout 240 --bin "$BIN" -- \
    --config "$ROOT/apps/mf/movielens.pbtxt" --set output.quiet=true --report "$report" "$@" ||
    fail "training across the box failed (rc $?)"
  [ -s "$report" ] || fail "no report written at $report"
}

# check_tcp_between_hosts REPORT: every rank's endpoint to every other rank
# uses only UCX tcp transports (no shared memory fallback between namespaces).
check_tcp_between_hosts() {
  local bad
  bad=$(jq -r '.ranks[] as $r | ($r.endpoints // [])[] | select(.peer != $r.rank)
               | select((.transports // []) | (length == 0 or any(startswith("tcp/") | not)))
               | "rank \($r.rank) -> peer \(.peer): \(.transports)"' "$1")
  [ -z "$bad" ] || fail "endpoints not on tcp: $bad"
  local count
  count=$(jq '[.ranks[] as $r | ($r.endpoints // [])[] | select(.peer != $r.rank)] | length' "$1")
  [ "$count" -eq 6 ] || fail "expected 6 endpoints between 3 ranks in the report, found $count"
}

# check_placement REPORT: ranks 0 and 1 compute on slnode1/slnode2, rank 2 memory on slnode3.
check_placement() {
  local got
  got=$(jq -r '[.ranks[] | "\(.rank):\(.role):\(.host)"] | join(" ")' "$1")
  [ "$got" = "0:compute:slnode1 1:compute:slnode2 2:memory:slnode3" ] || fail "placement: $got"
}
