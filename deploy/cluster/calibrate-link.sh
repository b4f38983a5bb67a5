#!/usr/bin/env bash
# Calibrates a timing-backend link preset across a tbf-capped namespace link
# (root only): what `stalelearn calibrate --links` does between two ranks of
# this process (apps/cli/link_calibration.h), done with `stalelearn bench rma`
# under mpirun between two hosts of a namespace box (deploy/cluster/box.sh)
# over UCX tcp, since the cap is on the hosts' links:
#   per_op_overhead_ns  origin time per operation of windowed 8-B puts (window 16)
#   latency_ns          (median 8-B get round trip, window 1, - overhead) / 2, at least 1
#   bandwidth_gb_per_s  windowed 1 MiB puts (window 4), 1 GB = 1e9 B
# Each quantity is tagged MEASURED with the measurement as its source, and
# the preset is checked by loading it (a timing run that names it).
#
#   deploy/cluster/calibrate-link.sh --out PRESET_DIR [--rate 50mbit] [--name calibrated-box-tcp] [--bin BIN]
#
# Writes PRESET_DIR/link/NAME.pbtxt (and copies in the shipped presets that
# PRESET_DIR lacks, as `calibrate --out` does). A box that is up is used as it is (its
# first and last hosts); otherwise a 2-host box is brought up with the rate
# and torn down at the end. Use it with --set backend.timing.preset_dir=PRESET_DIR
# --set backend.timing.link=NAME (and backend.timing.shared_ports=true when
# the hosts share it as in the box: docs/guide/timing-backend.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT="" RATE=50mbit NAME=calibrated-box-tcp BIN=build/bin/stalelearn
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    *) echo "calibrate-link.sh: unknown argument '$1' (--out DIR [--rate R] [--name N] [--bin B])" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "calibrate-link.sh: --out PRESET_DIR is required" >&2; exit 2; }
[[ "$NAME" =~ ^[a-z0-9][a-z0-9-]*$ ]] || { echo "calibrate-link.sh: --name '$NAME': lower-case letters, digits and '-' only" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "calibrate-link.sh: needs root (network namespaces and tbf)" >&2; exit 1; }
for tool in ip tc unshare nsenter mpirun python3; do
  command -v "$tool" >/dev/null || { echo "calibrate-link.sh: no $tool (deploy/install-deps.sh --cluster)" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "calibrate-link.sh: no program at $BIN (deploy/build.sh, or --bin)" >&2; exit 1; }
BIN=$(realpath "$BIN")

made_box=0
work=$(mktemp -d)
trap 'rm -rf "$work"; [ "$made_box" -eq 0 ] || ./deploy/cluster/box.sh down >/dev/null 2>&1 || true' EXIT
if ! box_env=$(./deploy/cluster/box.sh env 2>/dev/null); then
  made_box=1
  ./deploy/cluster/box.sh up 2 --rate "$RATE" >/dev/null
  box_env=$(./deploy/cluster/box.sh env)
fi
hosts=$(sed -n 's/^STALELEARN_BOX_HOSTS=//p' <<<"$box_env")
net=$(sed -n 's/^STALELEARN_BOX_NET=//p' <<<"$box_env")
agent=$(sed -n 's/^STALELEARN_BOX_AGENT=//p' <<<"$box_env")

bench() {  # NAME, bench rma arguments...: one JSON result into $work/NAME.json
  local out=$1
  shift
  UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 UCX_WARN_UNUSED_ENV_VARS=n mpirun --allow-run-as-root --oversubscribe \
    --bind-to none --timeout 300 -q -np 2 --host "${hosts%%,*},${hosts##*,}" --mca plm_rsh_agent "$agent" \
    --mca oob_tcp_if_include "$net" --mca btl_tcp_if_include "$net" -x UCX_TLS -x UCX_NET_DEVICES \
    -x UCX_WARN_UNUSED_ENV_VARS "$BIN" bench rma "$@" --backend ucx --json >"$work/$out.json" ||
    { echo "calibrate-link.sh: bench rma $* failed between ${hosts%%,*} and ${hosts##*,}" >&2; exit 1; }
}
bench overhead --op put --size 8 --iters 2000 --warmup 200 --window 16
bench latency --op get --size 8 --iters 500 --warmup 50 --window 1
bench bandwidth --op put --size 1048576 --iters 20 --warmup 2 --window 4

# A preset directory the timing backend can use as it is, as calibrate's:
# the shipped presets copied in (none overwritten).
mkdir -p "$OUT/link"
cp -rn backends/timing/presets/. "$OUT/"
python3 - "$work" "$OUT/link/$NAME.pbtxt" "$NAME" "$RATE" "$(date +%F)" <<'PY'
import json, sys
work, path, name, rate, day = sys.argv[1:]
o, l, b = (json.load(open(f"{work}/{k}.json")) for k in ("overhead", "latency", "bandwidth"))
overhead = o["seconds"] / o["iters"] * 1e9
latency = max(1.0, (l["latency_us"] * 1e3 - overhead) / 2)
gb = b["bandwidth_mb_s"] / 1e3
for what, value in (("per_op_overhead_ns", overhead), ("latency_ns", latency), ("bandwidth_gb_per_s", gb)):
    if not value > 0:
        sys.exit(f"calibrate-link.sh: {what} measured as {value}, expected a value > 0")
src = (f"deploy/cluster/calibrate-link.sh in a namespace box capped at {rate} by tbf, {day}: "
       "stalelearn bench rma over UCX tcp between two box hosts")
q = lambda v, how: f'{{\n  value: {v:.4g}\n  tag: MEASURED\n  source: "{src}, {how}"\n}}'
open(path, "w").write(
    f'name: "{name}"\ndescription: "UCX over tcp across a namespace link capped at {rate} by tbf, measured"\n'
    f'latency_ns {q(latency, "median 8-B get round trip (window 1) minus the overhead, halved")}\n'
    f'bandwidth_gb_per_s {q(gb, "windowed 1 MiB puts (window 4), 1 GB = 1e9 B")}\n'
    f'per_op_overhead_ns {q(overhead, "origin time per operation of windowed 8-B puts (window 16)")}\n')
print(f"calibrate-link.sh: overhead {overhead:.0f} ns, latency {latency:.0f} ns, {gb * 1e3:.2f} MB/s -> {path}",
      file=sys.stderr)
PY
# The timing backend loads it (ValidatePreset's rules): a short run that names it.
./deploy/fetch-data.sh movielens >/dev/null
"$BIN" train --config apps/mf/movielens.pbtxt --ranks 1:1 --set training.epochs=1 --set output.quiet=true \
  --set backend.name=timing --set backend.timing.preset_dir="$(realpath "$OUT")" --set backend.timing.link="$NAME" \
  --report "$work/check.json" >/dev/null ||
  { echo "calibrate-link.sh: the timing backend does not load $OUT/link/$NAME.pbtxt" >&2; exit 1; }
