#!/usr/bin/env bash
# Does the timing backend predict real runs? (docs/guide/timing-backend.md "Is the model right?")
# 1. `stalelearn calibrate` measures this machine: OUT/presets. Each app's
#    compute step is measured again right before that app's rows run
#    (calibrate --config, into OUT/presets-<config name>, its compute preset
#    copied into OUT/presets): this kind of VM drifts by a fifth to a half
#    within minutes, and a step measured minutes before the runs it prices
#    carried that drift into every row (all rows +22% to +55% once).
# 2. Each configuration below runs for real (local backend with ranks as
#    threads, or mpirun over UCX), then on the timing backend priced by the
#    calibrated presets, with the ranks sharing this machine's cores
#    (timing option cores = nproc).
# 3. OUT/validation.csv: config, measured training seconds (the slowest
#    compute rank's clock loop, report field train_seconds; the median of 3
#    runs), predicted
#    (simulated makespan), relative error (predicted / measured - 1), and
#    each side's breakdown; OUT/validation.png plots predicted against
#    measured (gnuplot). The summary line gives the median |error| and the
#    worst ratio.
#
#   deploy/experiments/timing-validation.sh [--out DIR]
# About 2 minutes on 2 cores. Wall-clock measurements: rerun on a quiet machine.
source "$(dirname "$0")/lib.sh"
experiment_init timing-validation "$@"
command -v python3 >/dev/null || { echo "timing-validation.sh: needs python3 to read the reports" >&2; exit 1; }
./deploy/fetch-data.sh movielens spam brown >/dev/null
CORES=$(nproc)
PRESETS=$OUT/presets
echo "timing-validation: calibrating into $PRESETS" >&2
"$BIN" calibrate --out "$PRESETS" > "$OUT/calibration.txt"
cat "$OUT/calibration.txt" >&2

# calibrate_step CONFIG: measures CONFIG's compute step now, into
# $PRESETS/compute/calibrated-cpu-<its name>.pbtxt.
calibrate_step() {
  local config=$1 name
  name=$(sed -n 's/^name: "\(.*\)"/\1/p' "$config")
  echo "timing-validation: measuring the step of $name" >&2
  "$BIN" calibrate --out "$OUT/presets-$name" --links local --config "$config" >> "$OUT/calibration.txt"
  cp "$OUT/presets-$name/compute/calibrated-cpu-$name.pbtxt" "$PRESETS/compute/"
}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none --timeout 600)
REPEATS=3  # real runs per configuration (this kind of VM swings by a third between runs)

# name | launcher (threads C:M, or mpi NP) | config | memory preset | link preset | --set ...
# The compute preset is calibrated-cpu-<the config's name>: its step measured at 1:1. The
# memory presets are the cached ones: every model here is about 1 MiB or less.
ROWS=(  # grouped by app: its step is measured before its first row
  "mf-1x1-ssp|threads 1:1|apps/mf/movielens.pbtxt|calibrated-host-cached|calibrated-local|training.epochs=20"
  "mf-3x1-ssp|threads 3:1|apps/mf/movielens.pbtxt|calibrated-host-cached|calibrated-local|training.epochs=20"
  "mf-3x1-bsp|threads 3:1|apps/mf/movielens.pbtxt|calibrated-host-cached|calibrated-local|training.epochs=20 consistency.mode=BSP"
  "mf-3x1-asp|threads 3:1|apps/mf/movielens.pbtxt|calibrated-host-cached|calibrated-local|training.epochs=20 consistency.mode=ASP"
  "mf-2x2-ssp|threads 2:2|apps/mf/movielens.pbtxt|calibrated-host-cached|calibrated-local|training.epochs=20 cluster.memory_ranks=2"
  "mf-3x1-adam|threads 3:1|apps/mf/movielens.pbtxt|calibrated-host-cached-adam|calibrated-local|training.epochs=20 merge.*.policy=adam"
  "mf-mpirun4-ssp|mpi 4|apps/mf/movielens.pbtxt|calibrated-host-cached|calibrated-ucx-shm|training.epochs=20"
  "mf-mpirun2-ssp|mpi 2|apps/mf/movielens.pbtxt|calibrated-host-cached|calibrated-ucx-shm|training.epochs=20"
  "lr-1x1-ssp|threads 1:1|apps/lr/spam.pbtxt|calibrated-host-cached-adagrad|calibrated-local|"
  "lr-3x1-ssp|threads 3:1|apps/lr/spam.pbtxt|calibrated-host-cached-adagrad|calibrated-local|"
  "lr-mpirun2-ssp|mpi 2|apps/lr/spam.pbtxt|calibrated-host-cached-adagrad|calibrated-ucx-shm|"
  "lda-1x1-ssp|threads 1:1|apps/lda/brown.pbtxt|calibrated-host-cached|calibrated-local|training.epochs=3 training.eval_every_epochs=3"
  "lda-3x1-ssp|threads 3:1|apps/lda/brown.pbtxt|calibrated-host-cached|calibrated-local|training.epochs=3 training.eval_every_epochs=3"
  "lda-mpirun2-ssp|mpi 2|apps/lda/brown.pbtxt|calibrated-host-cached|calibrated-ucx-shm|training.epochs=3 training.eval_every_epochs=3"
)

stepped=""
for row in "${ROWS[@]}"; do
  IFS='|' read -r name launcher config memory link sets <<<"$row"
  if [ "$config" != "$stepped" ]; then
    calibrate_step "$config"
    stepped=$config
  fi
  compute=calibrated-cpu-$(sed -n 's/^name: "\(.*\)"/\1/p' "$config")
  read -r how ranks <<<"$launcher"
  set_args=(--set output.quiet=true)
  for s in $sets; do set_args+=(--set "$s"); done
  echo "timing-validation: $name" >&2
  for k in $(seq "$REPEATS"); do  # measured REPEATS times: the median is compared
    if [ "$how" = mpi ]; then
      "${MPIRUN[@]}" -np "$ranks" "$BIN" train --config "$config" "${set_args[@]}" --report "$OUT/$name.measured.$k.json" >/dev/null
      threads=$(( ranks - 1 )):1  # the prediction emulates the same ranks as threads
    else
      "$BIN" train --config "$config" --ranks "$ranks" "${set_args[@]}" --report "$OUT/$name.measured.$k.json" >/dev/null
      threads=$ranks
    fi
  done
  "$BIN" train --config "$config" --ranks "$threads" "${set_args[@]}" --report "$OUT/$name.predicted.json" \
    --set backend.name=timing --set backend.timing.preset_dir="$PRESETS" --set backend.timing.compute="$compute" \
    --set backend.timing.memory="$memory" --set backend.timing.link="$link" --set backend.timing.cores="$CORES" >/dev/null
done

# A capped link between hosts: 3 network namespaces (deploy/cluster/box.sh,
# root only), every link capped at 50 Mbit/s by tbf, MF under mpirun over UCX
# tcp; predicted as threads with the link measured across the capped link
# (link/calibrated-box-tcp),
# each host's one link shared by what it serves (backend.timing.shared_ports:
# both compute ranks refresh from the memory host).
box_row() {
  local name=mf-box3-tcp-50mbit tool
  [ "$(id -u)" -eq 0 ] || { echo "timing-validation: skipping $name: needs root" >&2; return; }
  for tool in ip tc unshare nsenter mpirun; do
    command -v "$tool" >/dev/null || { echo "timing-validation: skipping $name: no $tool (install-deps.sh --cluster)" >&2; return; }
  done
  calibrate_step apps/mf/movielens.pbtxt  # now, as for the rows above
  echo "timing-validation: $name" >&2
  trap './deploy/cluster/box.sh down >/dev/null 2>&1 || true' EXIT
  ./deploy/cluster/box.sh up 3 --rate 50mbit >/dev/null
  ./deploy/cluster/box.sh hostfile >"$OUT/box-hosts"
  # The capped link as it is, measured as `calibrate` measures a link, with
  # `bench rma` between a compute host and the memory host over UCX tcp
  # (deploy/cluster/calibrate-link.sh, on this box): the preset
  # link/calibrated-box-tcp.
  local hosts
  hosts=$(./deploy/cluster/box.sh env | sed -n 's/^STALELEARN_BOX_HOSTS=//p')
  ./deploy/cluster/calibrate-link.sh --out "$PRESETS" --rate 50mbit --bin "$BIN"
  ./deploy/run.sh --hostfile "$OUT/box-hosts" -np 3 --box --memory-hosts "${hosts##*,}" --timeout 300 --bin "$BIN" -- \
    --config apps/mf/movielens.pbtxt --set output.quiet=true --set training.epochs=3 \
    --report "$OUT/$name.measured.1.json" >/dev/null
  ./deploy/cluster/box.sh down >/dev/null
  trap - EXIT
  "$BIN" train --config apps/mf/movielens.pbtxt --ranks 2:1 --set output.quiet=true --set training.epochs=3 \
    --report "$OUT/$name.predicted.json" --set backend.name=timing --set backend.timing.preset_dir="$PRESETS" \
    --set backend.timing.compute=calibrated-cpu-mf-movielens --set backend.timing.memory=calibrated-host-cached \
    --set backend.timing.link=calibrated-box-tcp \
    --set backend.timing.cores="$CORES" --set backend.timing.shared_ports=true >/dev/null
  ROWS+=("$name")
}
box_row

python3 - "$OUT" "${ROWS[@]}" <<'PY'
import glob, json, statistics, sys
out, rows = sys.argv[1], sys.argv[2:]
lines = ["config,measured_seconds,predicted_seconds,relative_error,measured_stall_seconds,"
         "predicted_compute,predicted_transfer,predicted_merge,predicted_wait"]
errors = []
for row in rows:
    name = row.split("|")[0]
    runs = []  # (slowest compute rank's train_seconds, its stalls) per repeat
    for path in sorted(glob.glob(f"{out}/{name}.measured.*.json")):
        compute = [r for r in json.load(open(path))["ranks"] if r.get("role") == "compute"]
        runs.append((max(float(r.get("train_seconds", 0)) for r in compute),
                     max(float(r.get("stall_seconds", 0)) for r in compute)))
    runs.sort()
    measured, stall = runs[len(runs) // 2]
    p = json.load(open(f"{out}/{name}.predicted.json"))
    compute_ranks = sum(1 for r in p["ranks"] if r.get("role") == "compute")
    sim = p["simulated"]
    predicted = float(sim["total_seconds"])
    ranks = [r for r in sim["ranks"] if r["rank"] < compute_ranks]  # compute ranks come first
    parts = [statistics.mean(float(r.get(k, 0)) for r in ranks)
             for k in ("compute_seconds", "transfer_seconds", "merge_seconds", "wait_seconds")]
    error = predicted / measured - 1
    errors.append(error)
    lines.append(f"{name},{measured:.4f},{predicted:.4f},{error:+.3f},{stall:.4f}," + ",".join(f"{x:.4f}" for x in parts))
open(f"{out}/validation.csv", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
worst = max(max(1 + e, 1 / (1 + e)) for e in errors)
print(f"rows {len(errors)}, median |error| {statistics.median(abs(e) for e in errors):.1%}, "
      f"worst ratio {worst:.2f}x")
PY

if command -v gnuplot >/dev/null; then
  gnuplot -e "set terminal pngcairo size 800,600; set output '$OUT/validation.png'; set datafile separator ',';
    set key off; set logscale xy; set xlabel 'measured training seconds'; set ylabel 'predicted (timing backend)';
    set title 'timing backend against real runs (calibrated presets)';
    plot '$OUT/validation.csv' every ::1 using 2:3 with points pt 7, x with lines dt 2, 1.2*x with lines dt 3, 0.8*x with lines dt 3,
    '' every ::1 using 2:3:1 with labels offset 1,0.5 font ',8' left" 2>/dev/null || echo "timing-validation: plot skipped" >&2
fi
echo "timing-validation: $OUT/validation.csv" >&2
