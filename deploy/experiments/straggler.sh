#!/usr/bin/env bash
# Straggler experiment (issue 4): one compute rank slowed by a factor; BSP
# against SSP with bounds 2..4. For each setting, runs the job REPEATS times and
# prints the median wall time at which test RMSE first reaches TARGET, and its
# ratio to BSP (> 1: SSP is faster).
#
#   deploy/experiments/straggler.sh [--launch local|mpirun] [--repeats N] [--slowdown F]
#                                   [--target RMSE] [-- extra stalelearn args...]
#
# local: --ranks 3:1 in one process; mpirun: -np 4 over UCX (UCX_TLS from the
# environment, e.g. UCX_TLS=tcp,self for the TCP transport).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${STALELEARN_BUILD_DIR:-build}/bin/stalelearn
LAUNCH=local REPEATS=5 SLOWDOWN=4 TARGET=0.90 STRAGGLER=1
while [ $# -gt 0 ]; do
  case "$1" in
    --launch) LAUNCH=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --slowdown) SLOWDOWN=$2; shift 2 ;;
    --target) TARGET=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "straggler.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$BIN" ] || { echo "straggler.sh: $BIN not built; run ./deploy/build.sh" >&2; exit 1; }
command -v python3 >/dev/null || { echo "straggler.sh: needs python3 to read the reports" >&2; exit 1; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {  # run NAME ARGS...: one training run, report to $OUT/NAME.json
  local name=$1; shift
  local args=(train --config apps/mf/movielens.pbtxt --set training.straggler.rank=$STRAGGLER
              --set training.straggler.slowdown=$SLOWDOWN --set output.quiet=true --report "$OUT/$name.json" "$@")
  if [ "$LAUNCH" = mpirun ]; then
    local mpi=(-np 4 --oversubscribe --bind-to none --timeout 600)
    [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
    UCX_WARN_UNUSED_ENV_VARS=n mpirun "${mpi[@]}" "$BIN" "${args[@]}" </dev/null >/dev/null
  else
    "$BIN" "${args[@]}" --ranks 3:1 >/dev/null
  fi
}

SETTINGS=("bsp:--set consistency.mode=BSP" "ssp2:--set consistency.staleness=2"
          "ssp3:--set consistency.staleness=3" "ssp4:--set consistency.staleness=4")
# Interleave the settings so that machine load drifts affect all alike.
for ((i = 1; i <= REPEATS; i++)); do
  for setting in "${SETTINGS[@]}"; do
    name=${setting%%:*}
    read -r -a extra <<<"${setting#*:}"
    run "$name.$i" "${extra[@]}" "$@"
  done
done

python3 - "$OUT" "$TARGET" "$REPEATS" <<'PY'
import json, statistics, sys
out, target, repeats = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
def time_to_target(path):
    report = json.load(open(path))
    for point in report["curve"]:
        if point["metric_value"] <= target:
            return point["wall_seconds"], report["wall_seconds"], report["final"]["value"]
    return float("inf"), report["wall_seconds"], report["final"]["value"]
rows = {}
for name in ("bsp", "ssp2", "ssp3", "ssp4"):
    runs = [time_to_target(f"{out}/{name}.{i}.json") for i in range(1, repeats + 1)]
    rows[name] = [statistics.median(r[k] for r in runs) for k in range(3)]
print(f"{'setting':8} {'t(rmse<=%.2f) s' % target:>16} {'total s':>9} {'final rmse':>11} {'speedup vs BSP':>15}")
for name, (t, total, rmse) in rows.items():
    print(f"{name:8} {t:16.3f} {total:9.2f} {rmse:11.4f} {rows['bsp'][0] / t:15.2f}")
PY
