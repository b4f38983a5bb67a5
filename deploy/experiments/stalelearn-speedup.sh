#!/usr/bin/env bash
# stalelearn-speedup: StaleLearn (Lee & Kim, IEEE TC 2018) reports 3.17x on
# average for GPU + PIM with replicas over running without replicas. Per app
# and memory preset (hmc2, upmem, hbm-pim; pcie4-x16 link, gpu-gtx580
# compute; 4 compute ranks, 1 memory rank, 1 epoch), the simulated time of
# SSP (s=2) against DIRECT (no replicas: rows fetched and merges awaited per
# mini-batch), with the compute/transfer/merge/wait breakdown of both, and
# the geometric mean over all cells beside 3.17x. Then how that geometric
# mean moves when each estimated ([E], tag ESTIMATE) value of these presets
# is halved and doubled (variant presets written under OUT/presets; a
# whole-number field is rounded, e.g. 3 commands -> 2).
#   deploy/experiments/stalelearn-speedup.sh [--out DIR]
source "$(dirname "$0")/lib.sh"
experiment_init stalelearn-speedup "$@"
MEMORY=(hmc2 upmem hbm-pim)
LINK=pcie4-x16
COMPUTE=gpu-gtx580
PRESETS=$(cd "$OUT" && pwd)/presets
rm -rf "$PRESETS"
cp -r backends/timing/presets "$PRESETS"

# variants KIND NAME: writes NAME--FIELD--half/double for each ESTIMATE field
# of preset KIND/NAME and prints their names.
variants() {
  local kind=$1 name=$2 file=$PRESETS/$1/$2.pbtxt line field factor label
  awk '/^ *[a-z_]+ \{$/ { field = $1 } /^ *value:/ { at = NR } /tag: ESTIMATE/ { print at, field }' "$file" |
  while read -r line field; do
    for factor in 0.5 2; do
      label=$([ "$factor" = 2 ] && echo double || echo half)
      awk -v ln="$line" -v f="$factor" -v n="$name--$field--$label" '
        NR == ln { v = $2; x = v * f; if (v == int(v) && x != int(x)) x = int(x + 0.5); sub(/value: .*/, sprintf("value: %.10g", x)) }
        /^name: / { $0 = "name: \"" n "\"" }
        { print }' "$file" > "$PRESETS/$kind/$name--$field--$label.pbtxt"
      echo "$name--$field--$label"
    done
  done
}
MEMORY_VARIANTS=$(for m in "${MEMORY[@]}"; do variants memory "$m"; done | paste -sd,)
LINK_VARIANTS=$(variants link $LINK | paste -sd,)
COMPUTE_VARIANTS=$(variants compute $COMPUTE | paste -sd,)
MEMORY_LIST=$(IFS=,; echo "${MEMORY[*]}")
CELLS=$OUT/cells.csv  # variant,app,memory,speedup
echo "variant,app,memory,speedup" > "$CELLS"

# Shrunk so that the preset stays under 15 minutes on 2 cores: SNN trains on
# 1,024 of its 12,000 images (8 clocks per rank) and scores 500; at 4,000 its
# upmem runs took 35-55 s each (merges of the dense weights), and the [E]
# variants run 28 of them. One epoch of every app.
declare -A SPEEDUP_SETS=([snn]="app.snn.train_limit=1024 app.snn.test_limit=500")

run_app() {  # NAME CONFIG DATASET TARGET SETS
  local name=$1 config=$2 sets=$5 s
  for s in ${SPEEDUP_SETS[$name]:-}; do sets+=" --set $s"; done
  # shellcheck disable=SC2086
  local common=(--config "$config" $sets --set backend.name=timing --set backend.timing.preset_dir="$PRESETS"
                --set backend.timing.link=$LINK --set backend.timing.compute=$COMPUTE --set consistency.staleness=2
                --set training.epochs=1 --ranks 4:1 --baseline consistency.mode=DIRECT --no-plots)
  sweep "${common[@]}" --grid backend.timing.memory="$MEMORY_LIST" --grid consistency.mode=SSP,DIRECT --out "$OUT/$name/base"
  sweep "${common[@]}" --grid backend.timing.memory="$MEMORY_VARIANTS" --grid consistency.mode=SSP,DIRECT --out "$OUT/$name/memory-e"
  sweep "${common[@]}" --grid backend.timing.link="$LINK_VARIANTS" --grid backend.timing.memory="$MEMORY_LIST" \
    --grid consistency.mode=SSP,DIRECT --out "$OUT/$name/link-e"
  sweep "${common[@]}" --grid backend.timing.compute="$COMPUTE_VARIANTS" --grid backend.timing.memory="$MEMORY_LIST" \
    --grid consistency.mode=SSP,DIRECT --out "$OUT/$name/compute-e"
  # speedup.csv columns: row, the grid fields, baseline, time, seconds, baseline_seconds, speedup, ...
  # (speedup: column 8 with two grid fields, 9 with three)
  awk -F, -v app="$name" '$1 == "point" { print "base," app "," $2 "," $8 }' "$OUT/$name/base/speedup.csv" >> "$CELLS"
  awk -F, -v app="$name" '$1 == "point" { m = $2; sub(/--.*/, "", m); print "memory:" $2 "," app "," m "," $8 }' \
    "$OUT/$name/memory-e/speedup.csv" >> "$CELLS"
  local kind
  for kind in link compute; do
    awk -F, -v app="$name" -v k="$kind" '$1 == "point" { print k ":" $2 "," app "," $3 "," $9 }' \
      "$OUT/$name/$kind-e/speedup.csv" >> "$CELLS"
  done
  # The table's rows: SSP against DIRECT per memory preset, breakdowns from the summary.
  awk -F, -v app="$name" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { k = $1 SUBSEP $2; t[k] = $c["sim_seconds_median"]
      b[k] = $c["sim_compute_s_median"] "," $c["sim_transfer_s_median"] "," $c["sim_merge_s_median"] "," $c["sim_wait_s_median"]
      if (!(($1) in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END { for (i = 1; i <= n; i++) { m = order[i]; s = m SUBSEP "SSP"; d = m SUBSEP "DIRECT"
            printf "%s,%s,%s,%s,%.4f,%s,%s\n", app, m, t[s], t[d], t[d] / t[s], b[s], b[d] } }' \
    "$OUT/$name/base/summary.csv" >> "$OUT/rows.csv"
}
: > "$OUT/rows.csv"
for_each_app run_app

{
  echo "app,memory,ssp_s,direct_s,speedup,ssp_compute_s,ssp_transfer_s,ssp_merge_s,ssp_wait_s,direct_compute_s,direct_transfer_s,direct_merge_s,direct_wait_s"
  cat "$OUT/rows.csv"
  awk -F, '{ s += log($5); n++ } END { if (n) printf "geomean,all,,,%.4f,,,,,,,,\n", exp(s / n) }' "$OUT/rows.csv"
  echo "stalelearn_paper,,,,3.17,,,,,,,,"
} > "$OUT/speedup.csv"
rm "$OUT/rows.csv"

# Sensitivity: the geometric mean with each variant's cells in place of the base ones.
awk -F, 'NR == 1 { next }
  $1 == "base" { base[$2 SUBSEP $3] = $4; next }
  { v[$1 SUBSEP $2 SUBSEP $3] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
  END {
    for (k in base) { lb += log(base[k]); nb++ }
    printf "variant,kind,preset,field,factor,geomean,base_geomean,change\n"
    for (i = 1; i <= n; i++) {
      id = order[i]; split(id, p, ":"); kind = p[1]; split(p[2], q, "--")
      s = 0; m = 0
      for (k in base) { split(k, am, SUBSEP); key = id SUBSEP am[1] SUBSEP am[2]
        if (kind == "memory" && am[2] != q[1]) x = base[k]; else x = (key in v) ? v[key] : base[k]
        s += log(x); m++ }
      g = exp(s / m); gb = exp(lb / nb)
      printf "%s,%s,%s,%s,%s,%.4f,%.4f,%+.1f%%\n", p[2], kind, q[1], q[2], q[3] == "half" ? "0.5" : "2", g, gb, 100 * (g / gb - 1)
    } }' "$CELLS" > "$OUT/sensitivity.csv"

echo "== SSP (s=2) against DIRECT, simulated seconds for 1 epoch (breakdown: mean per compute rank; merge: the memory rank)"
print_table "$OUT/speedup.csv"
echo "== the geometric mean when each [E] preset value is halved or doubled"
print_table "$OUT/sensitivity.csv"
echo "stalelearn-speedup: $OUT/speedup.csv, $OUT/sensitivity.csv, per app $OUT/<app>/{base,memory-e,link-e,compute-e}/"
