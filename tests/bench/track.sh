#!/usr/bin/env bash
# Throughput tracked (ctest label `bench`): runs the merge, codec, MF-kernel,
# LDA-kernel and scheduler Google Benchmarks briefly and MF on MovieLens at --ranks 1:1
# (SGD updates per training second), writes every figure to
# $STALELEARN_BENCH_DIR/latest.csv (default: bench-history beside the
# binaries) and compares each with the previous run's file, kept as
# previous.csv. A figure more than 25% below the previous one is a WARNING
# line, not a failure: absolute rates move 2-3x between machines and with
# load on a shared one. Fails only when a benchmark does not run.
#   track.sh BENCH_BIN_DIR STALELEARN_BIN SOURCE_DIR
# CSV columns: name, metric, value, unit. Rates (*_per_second) and merge_bench's
# vs_triad and scheduler_bench's vs_handoff are compared (higher is better); other counters are recorded only.
set -euo pipefail
bench_dir=$1 bin=$2 source_dir=$3
history=${STALELEARN_BENCH_DIR:-$(dirname "$bin")/bench-history}
mkdir -p "$history"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-track.XXXXXX")
trap 'rm -rf "$work"' EXIT
for bench in merge codec mf_kernel lda_kernel scheduler; do
  "$bench_dir/${bench}_bench" --benchmark_min_time=0.05 --benchmark_format=json \
    --benchmark_out="$work/$bench.json" --benchmark_out_format=json >/dev/null
done
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ -d "$data_dir/movielens" ]; then
  "$bin" train --config "$source_dir/apps/mf/movielens.pbtxt" --ranks 1:1 --set training.epochs=50 \
    --set training.eval_every_epochs=50 --set output.quiet=true --report "$work/mf.json" 2>"$work/mf.err" ||
    { cat "$work/mf.err" >&2; echo "track.sh: the MF 1:1 run failed" >&2; exit 1; }
fi
python3 - "$work" "$history" <<'PY'
import csv, glob, json, os, sys
work, history = sys.argv[1:3]
STANDARD = {"family_index", "per_family_instance_index", "run_name", "run_type", "repetitions", "repetition_index",
            "threads", "iterations", "real_time", "cpu_time", "time_unit", "items_per_second", "bytes_per_second",
            "name", "aggregate_name", "aggregate_unit", "label", "error_occurred", "error_message"}
rows = []
for path in sorted(p for p in glob.glob(os.path.join(work, "*.json")) if not p.endswith("mf.json")):
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        # A benchmark's own counters (merge_bench's vs_triad: the merge's
        # rate over a triad on the same buffers) are figures too.
        for key, value in b.items():
            if key not in STANDARD and isinstance(value, (int, float)) and not isinstance(value, bool):
                rows.append((b["name"], key, value, ""))
        if "items_per_second" in b:
            rows.append((b["name"], "items_per_second", b["items_per_second"], "1/s"))
        elif "bytes_per_second" in b:
            rows.append((b["name"], "bytes_per_second", b["bytes_per_second"], "B/s"))
        else:
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
            rows.append((b["name"], "runs_per_second", 1.0 / (b["real_time"] * scale), "1/s"))
mf = os.path.join(work, "mf.json")
if os.path.exists(mf):
    report = json.load(open(mf))
    samples = sum(int(r.get("samples", 0)) for r in report["ranks"] if r.get("role") == "compute")
    curve = report.get("curve", [])
    seconds = float(curve[-1]["wall_seconds"] if curve else report["wall_seconds"])  # to the end of training
    rows.append(("mf_movielens_1x1", "updates_per_second", samples / seconds, "1/s"))
if not rows:
    print("track.sh: no figures were measured")
    sys.exit(1)
latest, previous = os.path.join(history, "latest.csv"), os.path.join(history, "previous.csv")
before = {}
if os.path.exists(latest):
    os.replace(latest, previous)
    with open(previous) as f:
        before = {(r["name"], r["metric"]): float(r["value"]) for r in csv.DictReader(f)}
with open(latest, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["name", "metric", "value", "unit"])
    w.writerows(rows)
slower = 0
for name, metric, value, unit in rows:
    old = before.get((name, metric))
    rate = metric.endswith("_per_second") or metric in ("vs_triad", "vs_handoff")  # higher is better
    if rate and old and value < 0.75 * old:
        slower += 1
        print(f"WARNING: {name} {metric} {value:.4g} {unit}, {value / old:.2f}x the previous run's {old:.4g}")
print(f"track.sh: {len(rows)} figures in {latest}; "
      + (f"compared with the previous run: {slower} more than 25% slower" if before else "no previous run to compare"))
PY
