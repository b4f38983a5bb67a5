#!/usr/bin/env bash
# From a fresh Debian 12 machine: installs what is missing, builds, fetches the
# default data (MovieLens, from Debian's r-cran-dslabs), then runs the main job:
# matrix factorisation trained under bounded staleness (SSP, s=2) as a
# single-node emulation under mpirun, 3 compute ranks + 1 memory rank over UCX.
# Progress goes to stderr; the run ends with the final test RMSE, a report and
# a plot of the learning curve (an SVG beside the report).
# Idempotent: later runs skip what is done.
set -euo pipefail
cd "$(dirname "$0")/.."
export STALELEARN_BUILD_DIR=${STALELEARN_BUILD_DIR:-build}
BIN="$STALELEARN_BUILD_DIR/bin/stalelearn"
CONFIG=${STALELEARN_CONFIG:-apps/mf/movielens.pbtxt}
REPORT=${STALELEARN_REPORT:-$STALELEARN_BUILD_DIR/quickstart-report.json}

START=$SECONDS
step() { echo; printf '== quickstart [%d:%02d]: %s\n' $(((SECONDS - START) / 60)) $(((SECONDS - START) % 60)) "$*"; }

step "installing missing packages"
./deploy/install-deps.sh --no-plot
# gnuplot is needed only for the plot at the end: it installs while the
# program builds (apt waits on the network and the disk, the compiler on the
# cores). On any exit the script waits for it rather than leave dpkg midway.
mkdir -p "$STALELEARN_BUILD_DIR"
PLOT_LOG="$STALELEARN_BUILD_DIR/install-gnuplot.log"
./deploy/install-deps.sh >"$PLOT_LOG" 2>&1 &
PLOT_INSTALL=$!
trap 'wait "$PLOT_INSTALL" 2>/dev/null || true' EXIT

step "building the stalelearn program ($STALELEARN_BUILD_DIR; deploy/test.sh builds the tests)"
# A new build directory is configured without the tests and benchmarks (their
# packages are deploy/test.sh's: install-deps.sh --tests) and as a unity build
# (CMakeLists.txt: STALELEARN_UNITY_BUILD, about half the compile time from
# scratch); one that exists keeps its settings. Either way only the program
# and what it links is built.
CONFIGURE=()
if [ ! -f "$STALELEARN_BUILD_DIR/CMakeCache.txt" ]; then
  CONFIGURE=(-DSTALELEARN_BUILD_TESTS=OFF -DSTALELEARN_BUILD_BENCHMARKS=OFF -DSTALELEARN_UNITY_BUILD=ON)
fi
STALELEARN_TARGETS=stalelearn_cli ./deploy/build.sh ${CONFIGURE[@]+"${CONFIGURE[@]}"}
if ! wait "$PLOT_INSTALL"; then
  echo "quickstart: installing gnuplot failed ($PLOT_LOG); the run goes on, without its plot" >&2
fi
step "fetching MovieLens"
./deploy/fetch-data.sh movielens
"$BIN" data info movielens

step "training: mpirun -np 4 (3 compute + 1 memory rank), config $CONFIG"
MPIRUN_ARGS=(-np 4 --oversubscribe --bind-to none --timeout 1800)
if [ "$(id -u)" -eq 0 ]; then MPIRUN_ARGS+=(--allow-run-as-root); fi
./deploy/clean-stale-shm.sh
UCX_WARN_UNUSED_ENV_VARS=n mpirun "${MPIRUN_ARGS[@]}" \
  "$BIN" train --config "$CONFIG" --report "$REPORT" "$@" </dev/null

step "plotting the learning curve"
"$BIN" plot "$REPORT" --out "${REPORT%.json}.svg" || echo "quickstart: no plot (gnuplot failed); the report is complete"

step "done"
echo "report: $REPORT"
echo "plot:   ${REPORT%.json}.svg (stalelearn plot REPORT... overlays several runs)"
