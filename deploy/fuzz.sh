#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan, libFuzzer
# coverage) into ${STALELEARN_FUZZ_BUILD_DIR:-build-fuzz} and runs them:
#
#   deploy/fuzz.sh                  every target, 60 s each
#   deploy/fuzz.sh libsvm 600       one target for 10 minutes
#   deploy/fuzz.sh all 20           every target, 20 s each (what CI runs)
#   deploy/fuzz.sh --list           the targets
#   deploy/fuzz.sh --build          build only
#
# Targets are the files tests/fuzz/<target>_fuzzer.cc. Each run starts from
# the committed seeds (tests/fuzz/corpus/<target>, read only) and the working
# corpus <build>/fuzz-corpus/<target> (new inputs go there; it persists
# between runs, is never committed). A crash, a failed property
# (FUZZ_CHECK), a leak, a timeout (> 10 s per input) or an out-of-memory
# (> 2 GiB) stops the target; its input is saved as
# <build>/fuzz-artifacts/<target>/crash-* (or leak-, timeout-, oom-) and the
# script goes on with the next target and exits 1 at the end. To keep a fixed
# bug fixed, copy the input into tests/fuzz/corpus/<target>/: the normal build
# replays every corpus file (CTest fuzz_replay.<target>).
#
# Prints one line per target: "fuzz <target>: N executions in S s, C crashes".
# Reproduce an artifact: <build>/fuzz/fuzz_<target> <file>.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${STALELEARN_FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${STALELEARN_JOBS:-$(nproc)}

targets=()
for source in tests/fuzz/*_fuzzer.cc; do
  name=$(basename "$source" _fuzzer.cc)
  targets+=("$name")
done

case "${1:-all}" in
  --list) printf '%s\n' "${targets[@]}"; exit 0 ;;
  --build) selected=() ;;
  all) selected=("${targets[@]}") ;;
  *)
    if [ ! -f "tests/fuzz/$1_fuzzer.cc" ]; then
      echo "fuzz.sh: unknown target '$1' (targets: ${targets[*]})" >&2
      exit 2
    fi
    selected=("$1")
    ;;
esac
SECONDS_EACH=${2:-60}
if ! [[ "$SECONDS_EACH" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: SECONDS must be a positive integer, got '$SECONDS_EACH'" >&2
  exit 2
fi

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ is missing (./deploy/install-deps.sh --tests installs it)" >&2
  exit 2
fi
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  # -O1 -g with assertions on: the usual fuzzing trade-off of speed against
  # readable stacks; no tests, benchmarks or UCX (the targets need none).
  cmake -S . -B "$BUILD_DIR" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O1 -g" \
    -DSTALELEARN_FUZZ=ON -DSTALELEARN_SANITIZE=address -DSTALELEARN_BUILD_TESTS=OFF \
    -DSTALELEARN_BUILD_BENCHMARKS=OFF -DSTALELEARN_WITH_UCX=OFF "${LAUNCHER[@]}" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$JOBS" --target fuzzers

status=0
for name in "${selected[@]}"; do
  corpus="$BUILD_DIR/fuzz-corpus/$name"
  artifacts="$BUILD_DIR/fuzz-artifacts/$name"
  log="$BUILD_DIR/fuzz-logs/$name.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  options=(-max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
           -artifact_prefix="$artifacts/")
  if [ -f "tests/fuzz/$name.dict" ]; then options+=(-dict="tests/fuzz/$name.dict"); fi
  marker="$artifacts/.started"
  touch "$marker"
  rc=0
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$BUILD_DIR/fuzz/fuzz_$name" "${options[@]}" "$corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1 || rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)
  seconds=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' || true)
  crashes=$(find "$artifacts" -type f -newer "$marker" | wc -l)  # this run's only
  echo "fuzz $name: ${runs:-?} executions in ${seconds:-?} s, $crashes crashes (log $log)"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    grep -E 'ERROR|FUZZ_CHECK|SUMMARY|Test unit written' "$log" | head -8 >&2 || true
  fi
done
exit $status
