#!/usr/bin/env bash
# A cluster in a box: N hosts as Linux network namespaces on one bridge, each
# with its own interface (eth0) and IP address, optionally with a tbf
# bandwidth cap on every link (both directions). mpirun reaches the hosts
# through deploy/cluster/rsh-agent.sh; Slurm through deploy/slurm/box.sh.
#
#   deploy/cluster/box.sh up N [--rate RATE]   # e.g. --rate 100mbit; prints the hostfile
#   deploy/cluster/box.sh hostfile [--slots K] # "slnode1 slots=K" per host
#   deploy/cluster/box.sh env                  # STALELEARN_BOX_* settings (net, agent, hosts)
#   deploy/cluster/box.sh status               # hosts, addresses, qdisc counters
#   deploy/cluster/box.sh down                 # removes every namespace, link and file it made
#
# Needs root, iproute2 (ip, tc) and util-linux (unshare, nsenter). Host i is
# namespace "slnodeI" with address $STALELEARN_BOX_SUBNET.I/24 (default
# subnet 10.77.12); the bridge "slbr0" holds .254 so that processes in the root
# namespace (mpirun, slurmctld) reach the hosts. Nothing is routed beyond the
# bridge. `up` replaces an existing box; `down` is idempotent, and a failed
# `up` removes what it had made. The kernel here has no netem: only caps,
# no added delay or loss.
set -euo pipefail

SUBNET=${STALELEARN_BOX_SUBNET:-10.77.12}
PREFIX=slnode
BRIDGE=slbr0
STATE_DIR=${STALELEARN_BOX_STATE:-/run/stalelearn-box}
HERE=$(cd "$(dirname "$0")" && pwd)

die() { echo "box.sh: $*" >&2; exit 2; }
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

require_tools() {
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
  for tool in ip tc unshare nsenter; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (install iproute2 / util-linux)"
  done
}

# Hosts recorded by `up`, one name per line.
box_hosts() { [ -f "$STATE_DIR/hosts" ] && cat "$STATE_DIR/hosts"; return 0; }

down() {
  # Namespaces named by the state file and any left by an interrupted run.
  local ns
  for ns in $( (box_hosts; ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+$") | sort -u); do
    ip link del "v${ns}" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$STATE_DIR"
}

up() {
  local n=$1 rate=$2
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "N must be 1..200, got '$n'"
  [[ "$SUBNET" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "STALELEARN_BOX_SUBNET must look like 10.77.12, got '$SUBNET'"
  down
  trap 'echo "box.sh: up failed; removing the box" >&2; down' ERR
  mkdir -p "$STATE_DIR"
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i ns
  for i in $(seq 1 "$n"); do
    ns="$PREFIX$i"
    echo "$ns" >>"$STATE_DIR/hosts"
    ip netns add "$ns"
    ip link add "v$ns" type veth peer name eth0 netns "$ns"
    ip link set "v$ns" master "$BRIDGE" up
    ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ -n "$rate" ]; then
      # Both directions: host -> bridge on eth0, bridge -> host on the root end.
      ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
      tc qdisc replace dev "v$ns" root tbf rate "$rate" burst 256kb latency 50ms
    fi
  done
  echo "$SUBNET.0/24" >"$STATE_DIR/net"
  echo "${rate:-none}" >"$STATE_DIR/rate"
  trap - ERR
  hostfile 1
}

hostfile() {
  local slots=$1
  [ -f "$STATE_DIR/hosts" ] || die "no box is up (deploy/cluster/box.sh up N)"
  box_hosts | sed "s/\$/ slots=$slots/"
}

env_lines() {
  [ -f "$STATE_DIR/hosts" ] || die "no box is up (deploy/cluster/box.sh up N)"
  echo "STALELEARN_BOX_NET=$(cat "$STATE_DIR/net")"
  echo "STALELEARN_BOX_AGENT=$HERE/rsh-agent.sh"
  echo "STALELEARN_BOX_HOSTS=$(box_hosts | paste -sd, -)"
  echo "STALELEARN_BOX_RATE=$(cat "$STATE_DIR/rate")"
}

status() {
  [ -f "$STATE_DIR/hosts" ] || { echo "no box"; return 0; }
  local ns
  for ns in $(box_hosts); do
    echo "== $ns $(ip -n "$ns" -br addr show eth0 | awk '{print $3}')"
    ip netns exec "$ns" tc -s qdisc show dev eth0 | sed 's/^/   /'
  done
}

cmd=${1:-}; shift || true
case "$cmd" in
  up)
    [ $# -ge 1 ] || usage
    n=$1; shift; rate=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --rate) [ $# -ge 2 ] || die "--rate needs a value (e.g. 100mbit)"; rate=$2; shift 2 ;;
        *) die "unknown option '$1'" ;;
      esac
    done
    [ -z "$rate" ] || [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?([kmg]?bit|[kmg]?bps)$ ]] || die "--rate wants e.g. 100mbit or 1gbit, got '$rate'"
    require_tools
    up "$n" "$rate" ;;
  down) require_tools; down ;;
  hostfile)
    slots=1
    if [ "${1:-}" = "--slots" ]; then [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--slots needs a number"; slots=$2; fi
    hostfile "$slots" ;;
  env) env_lines ;;
  status) require_tools; status ;;
  *) usage ;;
esac
