#!/usr/bin/env bash
# mpirun's rsh agent for the cluster in a box (deploy/cluster/box.sh): runs a
# command "on" a host by entering its network namespace, with its own UTS
# namespace so that gethostname() returns the host's name (ip netns exec alone
# keeps the machine's name, and OpenMPI and the report would see one host).
#
#   mpirun --mca plm_rsh_agent deploy/cluster/rsh-agent.sh ...
#   rsh-agent.sh [ssh-style options] HOST COMMAND...
#
# Only hosts of the box (namespaces named slnodeN) are accepted.
set -euo pipefail
# OpenMPI may pass ssh options (e.g. -x) before the host: skip them.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
[ $# -ge 2 ] || { echo "rsh-agent.sh: usage: rsh-agent.sh HOST COMMAND..." >&2; exit 2; }
host=$1; shift
[[ "$host" =~ ^slnode[0-9]+$ ]] || { echo "rsh-agent.sh: '$host' is not a box host (slnodeN)" >&2; exit 2; }
ip netns list | awk '{print $1}' | grep -qx "$host" || { echo "rsh-agent.sh: no namespace '$host' (deploy/cluster/box.sh up N)" >&2; exit 2; }
exec ip netns exec "$host" unshare --uts sh -c "hostname $host; $*"
