#!/usr/bin/env bash
# MF trains across 3 namespace hosts under mpirun (compute ranks on two
# hosts, the memory rank on the third) and converges (test RMSE <= 0.90); the
# report names each rank's host and shows tcp between every pair of ranks; the
# veth byte counters moved at least what the report says was put and got.
#   mpirun_test.sh ROOT BIN WORK
set -euo pipefail
ROOT=$1 BIN=$2 WORK=$3
source "$ROOT/tests/cluster/cluster_lib.sh"
require_box_support
mkdir -p "$WORK"
teardown_on_exit
"$ROOT/deploy/cluster/box.sh" up 3 >/dev/null

declare -A tx0 rx0
for h in slnode1 slnode2 slnode3; do tx0[$h]=$(host_tx_bytes $h); rx0[$h]=$(host_rx_bytes $h); done
report="$WORK/mpirun.json"
run_mf "$report"

rmse=$(jq -r '.final.value' "$report")
note "test RMSE $rmse in $(jq -r .wall_seconds "$report") s; hosts: $(jq -r '[.ranks[] | .host] | join(",")' "$report")"
awk -v v="$rmse" 'BEGIN { exit !(v > 0 && v <= 0.90) }' || fail "test RMSE $rmse > 0.90"
check_placement "$report"
check_tcp_between_hosts "$report"

# Each host's link carried at least its rank's puts (out) and gets (in); the
# memory host's link at least everyone's.
for r in 0 1 2; do
  host=$(jq -r ".ranks[$r].host" "$report")
  put=$(jq -r ".ranks[$r].bytes_put" "$report")
  got=$(jq -r ".ranks[$r].bytes_get" "$report")
  tx=$(($(host_tx_bytes "$host") - tx0[$host]))
  rx=$(($(host_rx_bytes "$host") - rx0[$host]))
  note "rank $r on $host: bytes_put $put, sent $tx; bytes_get $got, received $rx"
  [ "$tx" -ge "$put" ] || fail "$host sent $tx bytes, less than rank $r's bytes_put $put"
  [ "$rx" -ge "$got" ] || fail "$host received $rx bytes, less than rank $r's bytes_get $got"
done
all_put=$(jq '[.ranks[].bytes_put] | add' "$report")
all_get=$(jq '[.ranks[].bytes_get] | add' "$report")
[ "$all_put" -gt 1000000 ] || fail "only $all_put bytes put in all: did training move data?"
mem_rx=$(($(host_rx_bytes slnode3) - rx0[slnode3]))
mem_tx=$(($(host_tx_bytes slnode3) - tx0[slnode3]))
[ "$mem_rx" -ge "$all_put" ] || fail "memory host received $mem_rx bytes < total bytes_put $all_put"
[ "$mem_tx" -ge "$all_get" ] || fail "memory host sent $mem_tx bytes < total bytes_get $all_get"
echo "PASS: cross-host MF converged (RMSE $rmse) over tcp; links carried >= bytes_put $all_put, bytes_get $all_get"
