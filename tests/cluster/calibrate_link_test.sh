#!/usr/bin/env bash
# deploy/cluster/calibrate-link.sh: a link preset measured across a
# tbf-capped namespace link. The preset it writes loads (the script runs the
# timing backend with it), every quantity is tagged MEASURED with the
# script as its source, and the bandwidth is the cap's: tbf lets no more
# through than the cap, and a measurement that missed the cap (the
# uncapped veth moves hundreds of MB/s) would be far above it. Bad input is
# a one-line error, and a box the script brought up is gone afterwards.
#   calibrate_link_test.sh ROOT BIN WORK
set -euo pipefail
ROOT=$1 BIN=$2 WORK=$3
source "$ROOT/tests/cluster/cluster_lib.sh"
require_box_support
mkdir -p "$WORK"
teardown_on_exit
"$ROOT/deploy/cluster/box.sh" down >/dev/null 2>&1 || true

RATE_MBIT=50
rm -rf "$WORK/presets"
"$ROOT/deploy/cluster/calibrate-link.sh" --out "$WORK/presets" --rate ${RATE_MBIT}mbit --name box-test --bin "$BIN" \
  2>"$WORK/calibrate.err" || fail "calibrate-link.sh failed: $(tail -1 "$WORK/calibrate.err")"
note "$(tail -1 "$WORK/calibrate.err")"
preset="$WORK/presets/link/box-test.pbtxt"
[ -f "$preset" ] || fail "no preset at $preset"
[ -f "$WORK/presets/memory/hmc2.pbtxt" ] || fail "the shipped presets were not copied in"
"$ROOT/deploy/cluster/box.sh" env >/dev/null 2>&1 && fail "the box the script brought up is still up"

measured=$(grep -c "tag: MEASURED" "$preset")
sourced=$(grep -c 'source: "deploy/cluster/calibrate-link.sh in a namespace box capped at 50mbit' "$preset")
[ "$measured" -eq 3 ] && [ "$sourced" -eq 3 ] ||
  fail "expected 3 quantities tagged MEASURED with the script as source, found $measured tags and $sourced sources"

gb=$(awk '/^bandwidth_gb_per_s/ { getline; print $2 }' "$preset")
cap_gb=$(awk -v m=$RATE_MBIT 'BEGIN { print m / 8 / 1000 }')
note "bandwidth ${gb} GB/s against a cap of ${cap_gb} GB/s"
awk -v g="$gb" -v c="$cap_gb" 'BEGIN { exit !(g > 0.5 * c && g <= 1.05 * c) }' ||
  fail "bandwidth ${gb} GB/s is not the ${RATE_MBIT} Mbit/s cap (${cap_gb} GB/s)"

# Bad input: one line naming the problem, exit 2, nothing written.
if "$ROOT/deploy/cluster/calibrate-link.sh" --out "$WORK/bad" --name "Bad Name" 2>"$WORK/bad.err"; then
  fail "a bad --name was accepted"
fi
[ "$(wc -l <"$WORK/bad.err")" -eq 1 ] && grep -q -- "--name 'Bad Name'" "$WORK/bad.err" ||
  fail "a bad --name gave: $(cat "$WORK/bad.err")"
[ ! -e "$WORK/bad" ] || fail "a bad --name wrote $WORK/bad"
echo "PASS"
