#!/usr/bin/env bash
# A 100 Mbit cap on every link makes the same cross-host MF run measurably
# slower. Compared on the memory host's link throughput (bytes it sent and
# received per second of training), not on a wall-clock threshold: capped, it
# cannot exceed the cap (tc's counters also show the cap was hit); uncapped,
# it must be at least twice that. Short runs (3 epochs) keep it cheap.
#   cap_test.sh ROOT BIN WORK
set -euo pipefail
ROOT=$1 BIN=$2 WORK=$3
source "$ROOT/tests/cluster/cluster_lib.sh"
require_box_support
mkdir -p "$WORK"
teardown_on_exit

# 50, not 100: refreshes move only changed rows, so an uncapped run moves
# ~190 Mbit/s here and the cap must sit well below half of that to bind.
RATE_MBIT=50
EPOCHS=3

# run_once NAME [box options]: prints "seconds bytes" of the memory host's link.
run_once() {
  local name=$1; shift
  "$ROOT/deploy/cluster/box.sh" up 3 "$@" >/dev/null
  local tx0 rx0
  tx0=$(host_tx_bytes slnode3) rx0=$(host_rx_bytes slnode3)
  run_mf "$WORK/$name.json" --set training.epochs=$EPOCHS
  check_tcp_between_hosts "$WORK/$name.json"
  local bytes=$(($(host_tx_bytes slnode3) - tx0 + $(host_rx_bytes slnode3) - rx0))
  echo "$(jq -r .wall_seconds "$WORK/$name.json") $bytes"
}

read -r t_free b_free < <(run_once uncapped)
read -r t_cap b_cap < <(run_once capped --rate ${RATE_MBIT}mbit)
# Bytes the memory host's own qdisc sent and how often it had to hold packets back.
qdisc=$(ip netns exec slnode3 tc -s qdisc show dev eth0)
overlimits=$(sed -n 's/.*overlimits \([0-9]*\).*/\1/p' <<<"$qdisc" | head -1)
note "uncapped: ${t_free} s, $b_free bytes on the memory host's link"
note "capped ${RATE_MBIT} Mbit: ${t_cap} s, $b_cap bytes; tbf overlimits ${overlimits:-?}"

# Rates in Mbit/s of the memory host's link (both directions, each capped).
rate() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%.1f", b * 8 / t / 1e6 }'; }
r_free=$(rate "$b_free" "$t_free") r_cap=$(rate "$b_cap" "$t_cap")
note "throughput: uncapped $r_free Mbit/s, capped $r_cap Mbit/s (cap $RATE_MBIT per direction)"
[ "${overlimits:-0}" -gt 0 ] || fail "the tbf qdisc never held a packet back: the cap was not hit"
# Two directions of at most RATE each, plus the initial bursts.
awk -v r="$r_cap" -v cap=$RATE_MBIT 'BEGIN { exit !(r <= 2 * cap * 1.1) }' ||
  fail "capped run moved $r_cap Mbit/s, above the cap"
awk -v f="$r_free" -v c="$r_cap" 'BEGIN { exit !(f >= 2 * c) }' ||
  fail "uncapped throughput $r_free Mbit/s is not at least twice the capped $r_cap Mbit/s"
awk -v f="$t_free" -v c="$t_cap" 'BEGIN { exit !(c > f) }' || fail "capped run ($t_cap s) not slower than uncapped ($t_free s)"
echo "PASS: the ${RATE_MBIT} Mbit cap slowed the run from ${t_free} s to ${t_cap} s ($r_free -> $r_cap Mbit/s)"
