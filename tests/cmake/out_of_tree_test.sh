#!/usr/bin/env bash
# An app built outside the tree, as a user builds it (apps/README.md): install this build to a temporary prefix, configure and build
# apps/example from a temporary copy against it with find_package(stalelearn),
# then train it with --ranks 2:1 and under mpirun. The count app's totals are
# exact: 3 epochs x 1000 samples over 16 buckets = 3000, buckets 186..189.
# Any failed step fails the test (never a skip). Cleans up after itself.
# Usage: out_of_tree_test.sh SOURCE_ROOT BUILD_DIR CMAKE CXX_COMPILER BUILD_TYPE MPIEXEC
set -euo pipefail
ROOT=$1 BUILD=$2 CMAKE=$3 CXX=$4 BUILD_TYPE=${5:-RelWithDebInfo} MPIEXEC=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
start=$SECONDS
step() { echo "[$((SECONDS - start)) s] $*"; }
# Runs a step quietly; on failure shows the end of its log.
quiet() {
  local log=$work/$1.log rc=0; shift
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then tail -n 30 "$log" >&2; fail "$* (exit $rc)"; fi
}

step "install $BUILD to a temporary prefix"
quiet install "$CMAKE" --install "$BUILD" --prefix "$work/prefix"
[ -f "$work/prefix/lib/cmake/stalelearn/stalelearnConfig.cmake" ] || fail "no stalelearnConfig.cmake installed"

step "configure and build apps/example against it"
cp -r "$ROOT/apps/example" "$work/src"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$work
fi
quiet configure "$CMAKE" -S "$work/src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "${launcher[@]}"
quiet build "$CMAKE" --build "$work/build" -j 2
program=$work/build/count_example
[ -x "$program" ] || fail "no program built at $program"

# check_report FILE BACKEND: the exact totals of the count app.
check_report() {
  local final
  [ -s "$1" ] || fail "no report at $1"
  final=$(sed -n '/"final": {/,/}/p' "$1")
  grep -q '"value": 3000,\?$' <<<"$final" || fail "$1: final total is not 3000: $final"
  grep -q '"min_bucket": 186,\?$' <<<"$final" || fail "$1: smallest bucket is not 186: $final"
  grep -q '"max_bucket": 189,\?$' <<<"$final" || fail "$1: largest bucket is not 189: $final"
  grep -q '"app": "count"' "$1" || fail "$1: app is not count"
  grep -q "\"backend\": \"$2\"" "$1" || fail "$1: backend is not $2"
  grep -q '"compute_ranks": 2,' "$1" && grep -q '"memory_ranks": 1,' "$1" || fail "$1: not 2 compute + 1 memory ranks"
}

export UCX_WARN_UNUSED_ENV_VARS=n
cd "$work"
step "train with --ranks 2:1"
quiet ranks "$program" train --config "$work/src/count.pbtxt" --ranks 2:1 --report "$work/ranks.json"
check_report "$work/ranks.json" local

step "train under mpirun -np 3"
quiet mpirun "$MPIEXEC" -np 3 --allow-run-as-root --oversubscribe --bind-to none --timeout 120 \
  "$program" train --config "$work/src/count.pbtxt" --report "$work/mpirun.json" </dev/null
backend=$(grep -o '"backend": "[a-z]*"' "$work/mpirun.json" | cut -d'"' -f4)
[ "$backend" = ucx ] || [ "$backend" = local ] || fail "unexpected backend '$backend' under mpirun"
check_report "$work/mpirun.json" "$backend"

step "the timing backend finds the installed presets"
rc=0
out=$("$program" train --config "$work/src/count.pbtxt" --ranks 2:1 --set backend.name=timing \
  --set backend.timing.memory=no-such-preset 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "an unknown preset should exit 2, got $rc: $out"
grep -qF "$work/prefix/share/stalelearn/timing/presets/memory/no-such-preset.pbtxt" <<<"$out" ||
  fail "the default preset directory is not the installed one: $out"
quiet timing "$program" train --config "$work/src/count.pbtxt" --ranks 2:1 --set backend.name=timing \
  --set backend.timing.memory=hmc2 --set backend.timing.link=pcie4-x16 --set backend.timing.compute=gpu-gtx580 --report "$work/timing.json"
check_report "$work/timing.json" timing

step "PASS: built against the installed package and trained (--ranks 2:1, mpirun -np 3 with backend $backend, timing)"
