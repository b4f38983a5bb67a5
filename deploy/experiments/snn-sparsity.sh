#!/usr/bin/env bash
# snn-sparsity: the sparse spiking network's throughput against activity,
# dense and sparse propagation (`stalelearn bench snn`), and its accuracy
# against max_activity (a sweep). Skipped (one line) while the snn app is
# not built in.
#   deploy/experiments/snn-sparsity.sh [--out DIR]
source "$(dirname "$0")/lib.sh"
experiment_init snn-sparsity "$@"
SNN_ONLY=()
for entry in "${EXPERIMENT_APPS[@]}"; do if [[ $entry == snn\|* ]]; then SNN_ONLY=("$entry"); fi; done
EXPERIMENT_APPS=("${SNN_ONLY[@]}")  # the snn line only

run_app() {  # NAME CONFIG DATASET TARGET SETS
  local name=$1 config=$2 sets=$5
  if "$BIN" bench snn --help >/dev/null 2>&1; then
    "$BIN" bench snn --activity 0.005,0.01,0.02,0.05,0.1,0.2,0.5 > "$OUT/throughput.txt"
    cat "$OUT/throughput.txt"
  else
    echo "$EXPERIMENT: skipping the throughput table: no 'stalelearn bench snn'" >&2
  fi
  # shellcheck disable=SC2086
  sweep --config "$config" $sets --set training.epochs=2 \
    --grid app.snn.max_activity=0.01,0.02,0.05,0.1,0.2 --grid app.snn.propagation=sparse,dense --out "$OUT/$name"
  echo "== $name: final accuracy against max_activity"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print "max_activity,propagation,accuracy,sim_seconds"; next }
           { print $1 "," $2 "," $c["final_median"] "," $c["sim_seconds_median"] }' "$OUT/$name/summary.csv" \
    > "$OUT/$name/table.csv"
  print_table "$OUT/$name/table.csv"
}
for_each_app run_app
