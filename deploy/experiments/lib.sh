# Shared by the experiment presets (deploy/experiments/<name>.sh); sourced, not run.
# Each preset is one command: it fetches the data it needs, runs `stalelearn
# sweep` per app, and writes its tables under OUT (default
# build/experiments/<name>; --out DIR overrides). Everything runs on the
# timing backend with ranks as threads, so a rerun gives identical CSVs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${STALELEARN_BUILD_DIR:-build}/bin/stalelearn

# The apps the presets cover, one line each:
#   name | base config | data set | target (time to target; '<=V' loss, '>=V' accuracy) | --set for every run
# An app that `stalelearn train` does not know (yet), or whose config is
# missing, is skipped with one line. LDA's target is held-out perplexity
# (brown-pim.pbtxt reaches ~4,250 in 20 epochs; the unigram model ~5,540),
# evaluated every epoch (the config's every 5 would make clocks to target
# the same for every setting).
# SNN trains one epoch (mnist-pim.pbtxt): 0.82-0.90 test accuracy here, so
# its target is 0.85.
EXPERIMENT_APPS=(
  "mf|apps/mf/movielens-pim.pbtxt|movielens|<=0.89|"
  "lr|apps/lr/spam.pbtxt|spam|>=0.975|backend.name=timing"
  "lda|apps/lda/brown-pim.pbtxt|brown|<=4800|training.eval_every_epochs=1"
  "snn|apps/snn/mnist-pim.pbtxt|mnist|>=0.85|"
)

experiment_init() {  # experiment_init NAME "$@": parses --out, prepares OUT
  local name=$1; shift
  OUT=${STALELEARN_BUILD_DIR:-build}/experiments/$name
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) OUT=$2; shift 2 ;;
      *) echo "$name.sh: unknown argument '$1' (only --out DIR)" >&2; exit 2 ;;
    esac
  done
  [ -x "$BIN" ] || { echo "$name.sh: $BIN not built; run ./deploy/build.sh" >&2; exit 1; }
  mkdir -p "$OUT"
  EXPERIMENT=$name
  KNOWN_APPS=$("$BIN" --help | sed -n 's/^apps: \([^;]*\);.*/\1/p')
}

# for_each_app FUNCTION: calls FUNCTION NAME CONFIG DATASET TARGET SETS for
# each app of EXPERIMENT_APPS that can run here (SETS: "--set a=b ..." words).
for_each_app() {
  local fn=$1 entry name config data target sets
  for entry in "${EXPERIMENT_APPS[@]}"; do
    IFS='|' read -r name config data target sets <<<"$entry"
    if ! [[ ", $KNOWN_APPS," == *", $name,"* ]]; then
      echo "$EXPERIMENT: skipping $name: stalelearn train does not know app '$name' (apps: $KNOWN_APPS)" >&2
      continue
    fi
    if [ ! -f "$config" ]; then
      echo "$EXPERIMENT: skipping $name: no config $config" >&2
      continue
    fi
    ./deploy/fetch-data.sh "$data" >/dev/null
    local set_args="" s
    for s in $sets; do set_args+=" --set $s"; done
    "$fn" "$name" "$config" "$data" "$target" "$set_args"
  done
}

# sweep ARGS...: stalelearn sweep on the timing backend, quiet.
sweep() { "$BIN" sweep --quiet "$@"; }

# csv_get FILE KEYCOL KEY COL: the value of column COL in the first row whose KEYCOL is KEY.
csv_get() {
  awk -F, -v kc="$2" -v k="$3" -v c="$4" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col[kc] == k { print $col[c]; exit }' "$1"
}

# print_table FILE: a CSV as aligned columns.
print_table() {
  awk -F, '{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
             if (NF > n) n = NF }
           END { for (r = 1; r <= NR; r++) { line = ""
                   for (i = 1; i <= n; i++) line = line sprintf("%-" w[i] + 2 "s", cell[r, i])
                   print line } }' "$1"
}
