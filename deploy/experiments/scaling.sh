#!/usr/bin/env bash
# Scaling on the timing backend (issue: speed at scale): the MF app's
# StaleLearn config (apps/mf/movielens-pim.pbtxt) on the 20 M-rating
# synthetic set, one epoch, at --ranks 4:1, 16:2, 32:4 and 64:8 (compute :
# memory ranks, ranks as threads, deterministic: a rerun gives the same
# simulated seconds to the last digit, on any machine).
# Writes OUT/scaling.csv and prints it: per row the simulated makespan, the
# speedup over 4:1 and the efficiency (speedup over the compute ranks'
# ratio to 4), the same for the training makespan (the report's
# simulated.training_seconds: the final read and evaluation left out), the final test RMSE, bytes got / bytes put over the compute
# ranks, the peak RSS of the run's process and its wall seconds; then where
# a compute rank's simulated time went, in ms, the mean over compute ranks
# of each loop phase (the report's `phases`, docs/guide/report.md:
# compute + transfer + wait), and the final read of the rank that
# evaluates (the largest); and the memory ranks' mean simulated merge ms,
# a floor under the makespan (every delta pushed is merged once, by the
# row's memory rank). 4:1 must be in the rows for the ratios.
#
#   deploy/experiments/scaling.sh [--out DIR] [--ranks 4:1,16:2,32:4,64:8]
# 64:8 takes about a minute and 4 GiB; the whole table about two minutes.
# The synthetic set is generated once (stalelearn data synth, ~15 s, 367 MB).
source "$(dirname "$0")/lib.sh"
RANKS=4:1,16:2,32:4,64:8
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) [ $# -ge 2 ] || { echo "scaling.sh: --ranks needs a list, e.g. 4:1,64:8" >&2; exit 2; }
             RANKS=$2; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[[ "$RANKS" =~ ^[0-9]+:[0-9]+(,[0-9]+:[0-9]+)*$ ]] ||
  { echo "scaling.sh: --ranks '$RANKS' is not a list of C:M, e.g. 4:1,64:8" >&2; exit 2; }
[[ ",$RANKS," == *",4:1,"* ]] || { echo "scaling.sh: --ranks must include 4:1 (the reference row)" >&2; exit 2; }
experiment_init scaling "${ARGS[@]+"${ARGS[@]}"}"
command -v python3 >/dev/null || { echo "scaling.sh: needs python3 to read the reports" >&2; exit 1; }
DATA_DIR=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ ! -f "$DATA_DIR/synth/ratings.tsv" ]; then
  "$BIN" data synth ratings --users 200000 --items 1000000 --ratings 20000000 --rank 20 --seed 1 --out "$DATA_DIR/synth"
fi

# Each run in its own child of python3, which reads its peak RSS
# (getrusage of the children) and wall seconds, then the report.
python3 - "$BIN" "$OUT" "$RANKS" <<'PY'
import csv, json, resource, subprocess, sys, time

bin_, out = sys.argv[1], sys.argv[2]
# Smallest first: a child's peak RSS is read as the largest of all so far.
ranks = sorted(sys.argv[3].split(","), key=lambda r: [int(x) for x in r.split(":")])
phases = ["hand_over", "gate_refresh", "kernel", "push", "finish"]
rows = []
for r in ranks:
    print(f"scaling.sh: --ranks {r}", file=sys.stderr, flush=True)
    report = f"{out}/{r.replace(':', 'x')}.json"
    cmd = [bin_, "train", "--config", "apps/mf/movielens-pim.pbtxt", "--set", "data.name=synth",
           "--set", "training.epochs=1", "--set", "output.quiet=true", "--ranks", r, "--report", report]
    start = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"scaling.sh: --ranks {r} failed (exit {done.returncode}): {' '.join(cmd)}")
    # ru_maxrss of the children: the largest so far (runs go in increasing size).
    rss_gib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    rep = json.load(open(report))
    compute = [x for x in rep["ranks"] if x.get("role") == "compute"]
    got = sum(int(x.get("bytes_get", 0)) for x in compute)
    put = sum(int(x.get("bytes_put", 0)) for x in compute)
    def ms(p):
        return 1e3 * sum(p.get(k, 0) for k in ("simulated_compute_seconds", "simulated_transfer_seconds",
                                                 "simulated_wait_seconds"))
    mean = {}
    for name in phases:
        mean[name] = sum(ms(p) for x in compute for p in x.get("phases", []) if p["phase"] == name) / len(compute)
    memory = {x["rank"] for x in rep["ranks"] if x.get("role") == "memory"}
    merge = [1e3 * x["merge_seconds"] for x in rep["simulated"]["ranks"] if x["rank"] in memory]
    final_read = max([ms(p) for x in compute for p in x.get("phases", []) if p["phase"] == "final_read"] or [0])
    rows.append({"ranks": r, "compute_ranks": int(r.split(":")[0]),
                 "simulated_seconds": rep["simulated"]["total_seconds"],
                 "training_seconds": rep["simulated"].get("training_seconds", 0), "test_rmse": rep["final"]["value"],
                 "get_over_put": got / put if put else 0, "peak_rss_gib": rss_gib, "wall_seconds": wall,
                 **{f"{n}_ms": v for n, v in mean.items()}, "final_read_ms": final_read,
                 "memory_merge_ms": sum(merge) / len(merge) if merge else 0})
base = next(x for x in rows if x["ranks"] == "4:1")
with open(f"{out}/scaling.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["ranks", "simulated_seconds", "speedup_vs_4x1", "efficiency", "training_seconds",
                "training_speedup", "training_efficiency", "test_rmse", "get_over_put",
                "peak_rss_gib", "wall_seconds"] + [f"{n}_ms" for n in phases] + ["final_read_ms", "memory_merge_ms"])
    for x in rows:
        speedup = base["simulated_seconds"] / x["simulated_seconds"]
        training = base["training_seconds"] / x["training_seconds"] if x["training_seconds"] else 0
        w.writerow([x["ranks"], f"{x['simulated_seconds']:.6f}", f"{speedup:.2f}",
                    f"{speedup / (x['compute_ranks'] / 4):.2f}", f"{x['training_seconds']:.6f}",
                    f"{training:.2f}", f"{training / (x['compute_ranks'] / 4):.2f}", f"{x['test_rmse']:.4f}",
                    f"{x['get_over_put']:.2f}", f"{x['peak_rss_gib']:.1f}", f"{x['wall_seconds']:.0f}"] +
                   [f"{x[f'{n}_ms']:.2f}" for n in phases] + [f"{x['final_read_ms']:.2f}", f"{x['memory_merge_ms']:.2f}"])
PY
print_table "$OUT/scaling.csv"
