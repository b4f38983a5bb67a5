#!/usr/bin/env bash
# staleness-sensitivity: Dai et al. (ICLR 2019): the number of clocks
# (mini-batches per rank) to reach a target grows with the staleness bound.
# Per app: SSP with s in {0,1,2,4,8,16}, no stragglers, 3 repeats with
# different model seeds (the data split fixed), timing backend. A run whose
# model diverged (NaN/inf) is counted in the table's `diverged` column and
# never reaches the target.
#   deploy/experiments/staleness-sensitivity.sh [--out DIR]
source "$(dirname "$0")/lib.sh"
experiment_init staleness-sensitivity "$@"

run_app() {  # NAME CONFIG DATASET TARGET SETS
  local name=$1 config=$2 target=$4 sets=$5
  [ -n "$target" ] || { echo "$EXPERIMENT: skipping $name: no target in lib.sh" >&2; return; }
  # shellcheck disable=SC2086
  sweep --config "$config" $sets --set consistency.mode=SSP --set data.split_seed=42 \
    --grid consistency.staleness=0,1,2,4,8,16 --repeats 3 --repeat-seed seed --target "$target" --out "$OUT/$name"
  echo "== $name: clocks to $target against the staleness bound (median, min, max of 3 seeds)"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print "s,reached,diverged,clocks_median,clocks_min,clocks_max,final_median"; next }
           { print $1 "," $c["reached"] "/" $c["runs"] "," $c["diverged"] "," $c["clocks_to_target_median"] "," $c["clocks_to_target_min"] "," \
                   $c["clocks_to_target_max"] "," $c["final_median"] }' "$OUT/$name/summary.csv" > "$OUT/$name/table.csv"
  print_table "$OUT/$name/table.csv"
}
for_each_app run_app
echo "staleness-sensitivity: $OUT/<app>/{results,summary,table}.csv, plots/to_target_vs_consistency.staleness.png"
