#!/usr/bin/env bash
# `stalelearn sweep --launch mpirun`: a 2-point grid (BSP, SSP s=2) of
# logistic regression on a generated LIBSVM file, 2 epochs, each run
# `mpirun -np 3` on the UCX backend under --run-timeout (which also gives
# mpirun its own --timeout). Both runs must finish (status ok), reach an
# accuracy only a model that learned reaches, and report 2 compute ranks on
# the ucx backend.
#   sweep_mpirun_test.sh STALELEARN_BIN
set -euo pipefail
bin=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/sweep-mpirun.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_WARN_UNUSED_ENV_VARS=n
# 240 points, label = sign(2 x1 - x2 + 0.5 x3): separable.
awk 'BEGIN { srand(5); for (i = 0; i < 240; i++) { s = ""; for (j = 1; j <= 5; j++) { x[j] = 2 * rand() - 1; s = s " " j ":" x[j] }
             print (2 * x[1] - x[2] + 0.5 * x[3] > 0 ? "+1" : "-1") s } }' > "$work/data.libsvm"
cat > "$work/base.pbtxt" <<EOT
seed: 7
app { name: "lr" lr { learning_rate: 0.5 } }
data { path: "$work/data.libsvm" test_fraction: 0.25 }
training { epochs: 2 samples_per_clock: 10 }
EOT
"$bin" sweep --config "$work/base.pbtxt" --launch mpirun --np 3 --run-timeout 60 \
  --grid consistency.mode:consistency.staleness=BSP:0,SSP:2 --target '>=0.8' --no-plots --out "$work/out" </dev/null
python3 - "$work/out" <<'PY'
import csv, json, os, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
problems = []
if len(rows) != 2:
    problems.append(f"{len(rows)} rows in results.csv, expected 2")
for row in rows:
    report = json.load(open(os.path.join(out, "runs", row["run"], "report.json")))
    if row["status"] != "ok":
        problems.append(f"{row['run']}: status {row['status']}")
    if not float(row["final"] or 0) >= 0.8:  # a model that learned nothing: ~0.5
        problems.append(f"{row['run']}: test accuracy {row['final']} below 0.8")
    if report["backend"] != "ucx" or report["compute_ranks"] != 2:
        problems.append(f"{row['run']}: ran {report['compute_ranks']} compute ranks on backend {report['backend']}")
    command = open(os.path.join(out, "runs", row["run"], "command.txt")).read()
    if not command.startswith("mpirun -np 3 ") or " --timeout 90 " not in command:
        problems.append(f"{row['run']}: launched as {command.strip()}")
print("sweep_mpirun_test: " + ("; ".join(problems) or "2 runs under mpirun, both trained"))
sys.exit(1 if problems else 0)
PY
