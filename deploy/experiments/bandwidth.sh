#!/usr/bin/env bash
# bandwidth: SSP (s=2) over BSP against the link bandwidth (the timing
# backend's link_bandwidth_gb_per_s option replacing pcie4-x16's 31.5 GB/s).
# Speedup of the simulated time for the same epochs and of the time to the
# target. Measured here: the speedup grows with the bandwidth (MF 1.14x at
# 0.25 GB/s, 1.60x at 31.5): on a thin link both modes are bound by the same
# delta puts (equal bytes_put), which SSP cannot save; on a fast one by
# BSP's per-clock snapshot reads, which it can.
#   deploy/experiments/bandwidth.sh [--out DIR]
source "$(dirname "$0")/lib.sh"
experiment_init bandwidth "$@"

# Epochs per app: 12, but SNN 3 (its epoch takes ~3 s here against MF's
# 0.1 s, and 10 runs of 12 would take the preset past 15 minutes).
declare -A BANDWIDTH_EPOCHS=([snn]=3)

run_app() {  # NAME CONFIG DATASET TARGET SETS
  local name=$1 config=$2 target=$4 sets=$5 epochs=${BANDWIDTH_EPOCHS[$1]:-12}
  # shellcheck disable=SC2086
  sweep --config "$config" $sets --set training.epochs="$epochs" \
    --grid backend.timing.link_bandwidth_gb_per_s=0.25,1,4,16,31.5 \
    --grid consistency.mode:consistency.staleness=SSP:0,SSP:2 ${target:+--target "$target"} \
    --baseline consistency.mode:consistency.staleness=SSP:0 --out "$OUT/$name"
  echo "== $name: SSP s=2 over BSP against link GB/s (simulated, $epochs epochs)"
  awk -F, 'BEGIN { print "link_gb_per_s,bsp_s,ssp_s,speedup,speedup_to_target" }
           $1 == "point" { print $2 "," $7 "," $6 "," $8 "," $11 }' "$OUT/$name/speedup.csv" > "$OUT/$name/table.csv"
  print_table "$OUT/$name/table.csv"
}
for_each_app run_app
echo "bandwidth: $OUT/<app>/{results,summary,speedup,table}.csv, plots/"
