#!/usr/bin/env bash
# apps/lda under mpirun (one rank per process, UCX backend): apps/lda/brown.pbtxt
# for 8 epochs with 2 compute ranks and 1 memory rank, in SSP s=2 and ASP; the
# report must show the count invariants kept (every word's counts sum to its
# tokens, no negative count, final counts equal to the ranks' assignments)
# and a perplexity clearly below the unigram model's (~5,540 on this split).
# Exit 77 (skipped) when Brown is not fetched.
#   lda_mpirun_test.sh MPIEXEC STALELEARN_BIN SOURCE_DIR
set -euo pipefail
mpiexec=$1 bin=$2 source_dir=$3
data_dir=${STALELEARN_DATA:-${HOME:-.}/.cache/stalelearn}
if [ ! -f "$data_dir/brown/brown.docs" ]; then
  echo "lda_mpirun_test: $data_dir/brown/brown.docs not fetched: run deploy/fetch-data.sh brown (skipped)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/lda-mpirun.XXXXXX")
trap 'rm -rf "$work"' EXIT
for mode in SSP ASP; do
  "$mpiexec" -n 3 --allow-run-as-root --oversubscribe --bind-to none --stdin none --timeout 100 \
    "$bin" train --config "$source_dir/apps/lda/brown.pbtxt" --set consistency.mode=$mode \
    --set training.epochs=8 --set training.eval_every_epochs=4 --set output.quiet=true \
    --report "$work/$mode.json"
  python3 - "$work/$mode.json" "$mode" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
problems = []
for point in report["curve"]:
    m = point["metrics"]
    if m.get("count_errors", -1) != 0 or m.get("negative_counts", -1) != 0:
        problems.append(f"epoch {point['epoch']}: count_errors {m.get('count_errors')}, negative_counts {m.get('negative_counts')}")
final = report["final"]
if final["metrics"].get("assignment_mismatch", -1) != 0:
    problems.append("final counts differ from the ranks' topic assignments")
if len(report["curve"]) != 2:  # epochs 4 and 8
    problems.append(f"{len(report['curve'])} curve points, expected 2")
if not 0 < final["value"] < 5200:  # measured 4,780-4,880 after 8 epochs; a kernel that learns nothing ~5,540
    problems.append(f"test perplexity {final['value']:.0f} not below the unigram model's ~5,540")
if report["compute_ranks"] != 2 or report["backend"] != "ucx":
    problems.append(f"ran {report['compute_ranks']} compute ranks on backend {report['backend']}")
print(f"lda_mpirun_test {sys.argv[2]}: perplexity {final['value']:.0f}; " + ("; ".join(problems) or "invariants kept"))
sys.exit(1 if problems else 0)
PY
done
