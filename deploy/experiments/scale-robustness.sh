#!/usr/bin/env bash
# scale-robustness: does one config converge at every scale? Every app's
# shipped config, unchanged but for ranks and the staleness bound, over
# ranks 1:1, 3:1, 8:2 (ranks as threads, local backend) and 16:4, 64:8
# (timing backend) x SSP staleness 0, 2, 8, 16. Per cell: reached the app's
# target or not, diverged or not, the final metric, and the clocks (and
# simulated seconds on the timing backend) to the target.
#   deploy/experiments/scale-robustness.sh [--out DIR] [--apps mf,lr,lda,snn] [--ranks 1:1,3:1,...]
# --ranks keeps only those rows (each app's cells at the others are skipped).
# The configs, each the app's shortest that reaches its target:
#   mf   apps/mf/movielens.pbtxt (threads), movielens-pim.pbtxt (timing); RMSE <= 0.885
#   lr   apps/lr/spam.pbtxt (backend.name=timing on the timing rows); accuracy >= 0.985
#   lda  apps/lda/brown.pbtxt at 20 of its 50 epochs (threads), brown-pim.pbtxt (timing); perplexity <= 4400
#   snn  apps/snn/mnist.pbtxt at 2 epochs of its 4 (1 leaves cells at 0.943-0.949); accuracy >= 0.95;
#        its timing rows with backend.timing.quantum_ns=10000 (turns in 10 us
#        windows, against clocks of ~2 ms simulated: 64:8 half the wall time,
#        simulated time within 0.1%, every cell at its target as before)
# The thread rows run first, one run at a time (their ranks share the cores).
# Then the timing rows: a timing run takes its ranks' turns one at a time on
# one core, and its result does not depend on the machine, so they run one
# sweep per staleness value, as many at once as there are cores.
# Writes OUT/table.csv (one row per cell) and OUT/<app>/<ranks>/ (the sweeps;
# the timing rows' in OUT/<app>/<ranks>/s<staleness>/).
source "$(dirname "$0")/lib.sh"
APPS=mf,lr,lda,snn
RANKS=1:1,3:1,8:2,16:4,64:8
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --apps) APPS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
THREAD_RANKS=(1:1 3:1 8:2)
TIMING_RANKS=(16:4 64:8)
for r in ${RANKS//,/ }; do
  [[ " ${THREAD_RANKS[*]} ${TIMING_RANKS[*]} " == *" $r "* ]] ||
    { echo "scale-robustness: --ranks: no row '$r' (rows: ${THREAD_RANKS[*]} ${TIMING_RANKS[*]})" >&2; exit 2; }
done
experiment_init scale-robustness "${ARGS[@]}"

STALENESS=0,2,8,16

# app | data set | target | thread config and --set | timing config and --set
CELLS=(
  "mf|movielens|<=0.885|apps/mf/movielens.pbtxt|apps/mf/movielens-pim.pbtxt"
  "lr|spam|>=0.985|apps/lr/spam.pbtxt|apps/lr/spam.pbtxt backend.name=timing"
  "lda|brown|<=4400|apps/lda/brown.pbtxt training.epochs=20 training.eval_every_epochs=5|apps/lda/brown-pim.pbtxt"
  "snn|mnist|>=0.95|apps/snn/mnist.pbtxt training.epochs=2|apps/snn/mnist.pbtxt training.epochs=2 backend.name=timing backend.timing.quantum_ns=10000"
)

TABLE=$OUT/table.csv
echo "app,ranks,backend,staleness,reached,diverged,final,clocks_to_target,sim_seconds_to_target" > "$TABLE"

# table_rows APP RANKS BACKEND SUMMARY...: the cells of the sweeps' summaries.
table_rows() {
  local app=$1 ranks=$2 backend=$3; shift 3
  awk -F, -v app="$app" -v ranks="$ranks" -v backend="$backend" '
    FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { print app "," ranks "," backend "," $1 "," $c["reached"] "/" $c["runs"] "," $c["diverged"] "," $c["final_median"] "," \
            $c["clocks_to_target_median"] "," (c["sim_seconds_to_target_median"] ? $c["sim_seconds_to_target_median"] : "") }' \
    "$@"
}

ROWS_IN_ORDER=()  # "app|ranks|backend|out dir": the table's rows, written at the end

thread_cell() {  # APP RANKS TARGET CONFIG [SET...]: one sweep over the staleness values
  local app=$1 ranks=$2 target=$3 config=$4; shift 4
  local sets=() s out=$OUT/$app/${ranks/:/x}
  for s in "$@"; do sets+=(--set "$s"); done
  sweep --no-plots --config "$config" "${sets[@]}" --ranks "$ranks" --grid consistency.staleness=$STALENESS \
    --target "$target" --out "$out" || true
  ROWS_IN_ORDER+=("$app|$ranks|local|$out")
}

JOBS=$(nproc 2>/dev/null || echo 1)
timing_cell() {  # APP RANKS TARGET CONFIG [SET...]: one sweep per staleness value, in the background
  local app=$1 ranks=$2 target=$3 config=$4; shift 4
  local sets=() s k out=$OUT/$app/${ranks/:/x}
  for s in "$@"; do sets+=(--set "$s"); done
  for k in ${STALENESS//,/ }; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    sweep --no-plots --config "$config" "${sets[@]}" --ranks "$ranks" --grid consistency.staleness="$k" \
      --target "$target" --out "$out/s$k" &
  done
  ROWS_IN_ORDER+=("$app|$ranks|timing|$out")
}

for pass in local timing; do
  for entry in "${CELLS[@]}"; do
    IFS='|' read -r app data target threads timing <<<"$entry"
    [[ ",$APPS," == *",$app,"* ]] || continue
    ./deploy/fetch-data.sh "$data" >/dev/null
    if [ "$pass" = local ]; then
      for ranks in "${THREAD_RANKS[@]}"; do
        [[ ",$RANKS," == *",$ranks,"* ]] || continue
        # shellcheck disable=SC2086
        thread_cell "$app" "$ranks" "$target" $threads
      done
    else
      for ranks in "${TIMING_RANKS[@]}"; do
        [[ ",$RANKS," == *",$ranks,"* ]] || continue
        # shellcheck disable=SC2086
        timing_cell "$app" "$ranks" "$target" $timing
      done
    fi
  done
done
wait  # the timing sweeps (a failed run is a row of its summary, as in the thread rows)

# The table in app order, thread rows before timing rows, as the cells list them.
for entry in "${CELLS[@]}"; do
  IFS='|' read -r app _ <<<"$entry"
  for row in "${ROWS_IN_ORDER[@]}"; do
    IFS='|' read -r row_app ranks backend out <<<"$row"
    [ "$row_app" = "$app" ] || continue
    if [ "$backend" = local ]; then
      [ -f "$out/summary.csv" ] && table_rows "$app" "$ranks" "$backend" "$out/summary.csv" >> "$TABLE"
    else
      for k in ${STALENESS//,/ }; do
        [ -f "$out/s$k/summary.csv" ] && table_rows "$app" "$ranks" "$backend" "$out/s$k/summary.csv" >> "$TABLE"
      done
    fi
  done
done

print_table "$TABLE"
awk -F, 'NR > 1 { n++; if ($5 ~ /^1\//) ok++; if ($6 > 0) bad++ }
         END { printf "scale-robustness: %d of %d cells reached their target, %d diverged\n", ok, n, bad }' "$TABLE"
echo "scale-robustness: $TABLE"
