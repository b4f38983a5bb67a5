#!/usr/bin/env bash
# ssp-convergence: the SSP paper's experiment (Ho et al., NIPS 2013). Every
# app under transient stragglers (each clock, each compute rank delayed with
# probability 0.1 by an exponential extra compute of mean 4x), BSP (s=0), SSP
# with s in {1,2,4,8}, ESSP (eager SSP) with s=2 and ASP, 3 repeats (straggler seeds 1..3), on the
# timing backend with CPU-core compute (compute-bound workers, as on the
# paper's cluster). Per app: metric against clocks and against simulated
# time, the time to the app's target, and the speedup over BSP.
#   deploy/experiments/ssp-convergence.sh [--out DIR]
source "$(dirname "$0")/lib.sh"
experiment_init ssp-convergence "$@"

run_app() {  # NAME CONFIG DATASET TARGET SETS
  local name=$1 config=$2 target=$4 sets=$5
  [ -n "$target" ] || { echo "$EXPERIMENT: skipping $name: no target in lib.sh" >&2; return; }
  # shellcheck disable=SC2086
  sweep --config "$config" $sets --set backend.timing.compute=cpu-core \
    --set training.straggler.transient_probability=0.1 --set training.straggler.transient_delay=4 \
    --grid consistency.mode:consistency.staleness=SSP:0,SSP:1,SSP:2,SSP:4,SSP:8,ESSP:2,ASP:0 \
    --repeats 3 --target "$target" --baseline consistency.mode:consistency.staleness=SSP:0 --out "$OUT/$name"
  echo "== $name: median of 3 repeats, target $target (SSP:0 is BSP; times simulated)"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
                     print "setting,reached,diverged,clocks_to_target,sim_s_to_target,final,sim_compute_s,sim_transfer_s,sim_wait_s"; next }
           { print $1 "," $c["reached"] "/" $c["runs"] "," $c["diverged"] "," $c["clocks_to_target_median"] "," $c["sim_seconds_to_target_median"] \
                 "," $c["final_median"] "," $c["sim_compute_s_median"] "," $c["sim_transfer_s_median"] "," $c["sim_wait_s_median"] }' \
    "$OUT/$name/summary.csv" > "$OUT/$name/table.csv"
  print_table "$OUT/$name/table.csv"
  echo "speedup over BSP (time to target): $(awk -F, '$1 == "point" { printf "%s %s  ", $2, $10 }' "$OUT/$name/speedup.csv")"
}
for_each_app run_app
echo "ssp-convergence: $OUT/<app>/{results,summary,curves,speedup,table}.csv, plots/metric_vs_{clock,time}.png"
