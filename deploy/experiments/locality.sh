#!/usr/bin/env bash
# Locality at scale (the locality planner, framework/README.md "Locality"):
# SGD updates per second of the MF app on the 20 M-rating synthetic set
# against the same build's rate on MovieLens (model in cache), measured in
# the same run, with ranks as threads on the local backend:
#   movielens  --ranks 1:1, 200 epochs, one evaluation at the end (3 runs, the median)
#   synth      --ranks 1:1, 3 epochs, one evaluation at the end (locality grid: 3 runs
#              alternating with movielens', the median; and without the planner, once);
#              steady_updates_per_second: the same with an evaluation every epoch,
#              epochs 2-3 over (wall at epoch 3 - wall at epoch 1): no start-up
#              (working set, replica fill, plan) in it
#   synth 3:1  one epoch: bytes got / bytes put over the compute ranks
# Writes OUT/locality.csv and prints it: per run the samples, the training
# seconds (the report's train_seconds: the clock loop, no start-up and no
# evaluation), updates/s
# and their ratio to MovieLens'; the same over the whole run's wall seconds
# (start-up, plan, replica fill, final read and evaluation included); the
# steady rate; bytes_get/bytes_put; the final test RMSE.
#
#   deploy/experiments/locality.sh [--out DIR]
# The synthetic set is generated once (stalelearn data synth, ~15 s, 367 MB).
# Wall-clock rates, unlike the timing-backend presets: compare the rows of
# one run, not runs on different days.
source "$(dirname "$0")/lib.sh"
experiment_init locality "$@"
command -v python3 >/dev/null || { echo "locality.sh: needs python3 to read the reports" >&2; exit 1; }
./deploy/fetch-data.sh movielens >/dev/null
DATA_DIR=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ ! -f "$DATA_DIR/synth/ratings.tsv" ]; then
  "$BIN" data synth ratings --users 200000 --items 1000000 --ratings 20000000 --rank 20 --seed 1 --out "$DATA_DIR/synth"
fi

run() {  # run NAME ARGS...: one training run, report to $OUT/NAME.json
  local name=$1; shift
  echo "locality.sh: $name" >&2
  "$BIN" train --set output.quiet=true --report "$OUT/$name.json" "$@" >/dev/null
}
# The pair that gives the ratio runs three times, alternating (this kind of VM
# swings by a third between minutes): the medians are compared.
for k in 1 2 3; do
  run movielens_1x1.$k --config apps/mf/movielens.pbtxt --ranks 1:1 --set training.epochs=200 --set training.eval_every_epochs=200
  run synth_1x1.$k --config apps/mf/movielens.pbtxt --set data.name=synth --ranks 1:1 --set training.epochs=3 \
    --set training.eval_every_epochs=3
done
run synth_1x1_unplanned --config apps/mf/movielens.pbtxt --set data.name=synth --ranks 1:1 --set training.epochs=3 \
  --set training.eval_every_epochs=3 --set training.locality=none
run synth_1x1_steady --config apps/mf/movielens.pbtxt --set data.name=synth --ranks 1:1 --set training.epochs=3
run synth_3x1 --config apps/mf/movielens.pbtxt --set data.name=synth --ranks 3:1 --set training.epochs=1

python3 - "$OUT" <<'PY' | tee "$OUT/locality.csv"
import json, os, sys
out = sys.argv[1]
def load_one(name):
    r = json.load(open(f"{out}/{name}.json"))
    compute = [x for x in r["ranks"] if x.get("role") == "compute"]
    samples = sum(int(x.get("samples", 0)) for x in compute)
    got = sum(int(x.get("bytesGet", x.get("bytes_get", 0))) for x in compute)
    put = sum(int(x.get("bytesPut", x.get("bytes_put", 0))) for x in compute)
    curve = r.get("curve", [])
    steady = ""
    if len(curve) >= 3:  # epochs 2..3 of an epoch-evaluated run
        steady = samples * 2 / 3 / (curve[2]["wall_seconds"] - curve[0]["wall_seconds"])
    train = max(float(x.get("train_seconds", 0)) for x in compute)  # the slowest compute rank's loop
    return samples, r["wall_seconds"], got, put, r["final"]["value"], steady, train
def load(name):
    if not os.path.exists(f"{out}/{name}.1.json"):  # a single run (a stale .json of an older run is not read)
        return load_one(name)
    runs = sorted((load_one(f"{name}.{k}") for k in (1, 2, 3)), key=lambda x: x[6])  # by training seconds
    return runs[1]  # the median run
base = None
wall_base = None
print("run,samples,train_seconds,updates_per_second,ratio_to_movielens,wall_seconds,wall_updates_per_second,"
      "wall_ratio,steady_updates_per_second,steady_ratio,bytes_get_over_put,test_rmse")
for name in ["movielens_1x1", "synth_1x1", "synth_1x1_unplanned", "synth_1x1_steady", "synth_3x1"]:
    samples, wall, got, put, rmse, steady, train = load(name)
    rate = samples / train
    base = base or rate
    wall_rate = samples / wall
    wall_base = wall_base or wall_rate
    steady_cols = f"{steady:.0f},{steady / wall_base:.3f}" if steady else ","
    print(f"{name},{samples},{train:.3f},{rate:.0f},{rate / base:.3f},{wall:.3f},{wall_rate:.0f},"
          f"{wall_rate / wall_base:.3f},{steady_cols},{got / put if put else 0:.3f},{rmse:.4f}")
PY
