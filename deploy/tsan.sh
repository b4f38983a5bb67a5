#!/usr/bin/env bash
# Builds the multi-threaded tests (the local backend's training runs with
# ranks as threads, the sync layer, the in-process transport:
# STALELEARN_TSAN_TESTS in tests/CMakeLists.txt) with clang's ThreadSanitizer
# into ${STALELEARN_TSAN_BUILD_DIR:-build-tsan-clang} and runs them (CTest
# label tsan). STALELEARN_TSAN_CXX picks another compiler (default clang++);
# a build dir configured with another compiler is configured afresh.
#
#   deploy/tsan.sh                 build and run all of them
#   deploy/tsan.sh -R Backpressure extra arguments go to ctest
#
# A data race fails its test with TSan's report (halt_on_error). The
# suppressions, each with its reason, are in tests/tsan/suppressions.txt.
# The set: sync_batch_codec_test, sync_ring_test, sync_merge_policy_test,
# inprocess_bootstrap_test, local_backend_test, and the training runs
# train_invariants_test (SSP/BSP/ASP exactly once, resume, staleness,
# nothing torn, backpressure), parallel_kernel_test (threads_per_rank: oneTBB
# workers on a compute rank), stall_inspector_test, merge_policy_train_test,
# app_api_test, readme_trace_test; none filtered, each under 3x its usual
# deadline. And tests/tsan/planted_race_selftest: passes only when TSan
# reports its planted race in a parallel_for body (the suppressions have teeth).
# Measured here (clang 14, 2 cores shared with other jobs): 144 tests
# (12 binaries), clean, 21 s with -j2 when built (42 s of test time; the
# longest, ParallelKernelTraining.MfWithTwoThreadsIsDeterministicAndTrainsAsWell,
# 8-11 s; it took 56-208 s before TBB's ordering was annotated, when TSan
# reported, and the suppressions matched, the chunks' unordered accesses;
# not profiled further). Building from scratch: about 5 minutes.
# Why clang: g++ 12's libtsan crashed (SEGV in __tsan_read8, "high value
# address") in each rank thread of a training run at its first read of the
# config's protobuf map, before any race report; g++ was not retried.
# target_clones is off under TSan (framework/core/target_clones.h: the loader
# runs the instrumented ifunc resolvers before the runtime is up). Our
# parallel_for loops tell TSan the ordering libtbb (uninstrumented) provides
# (TbbHappensBefore, framework/core/sanitizer.h), so their bodies are checked.
# Not in CI: the TSan build is a second full build of the framework.
# Exit code: CTest's.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${STALELEARN_TSAN_BUILD_DIR:-build-tsan-clang}
CXX_COMPILER=${STALELEARN_TSAN_CXX:-clang++}
JOBS=${STALELEARN_JOBS:-$(nproc)}
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
fi
# A build dir configured with another compiler (an old g++ build-tsan passed as
# STALELEARN_TSAN_BUILD_DIR) is configured afresh: CMake cannot switch compilers in place.
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  configured=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
  if [ "$(basename "$configured")" != "$(basename "$CXX_COMPILER")" ]; then
    rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
  fi
fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  # -O1 -g: TSan slows code 5-15x; optimised code keeps the runs short, -g the reports readable.
  cmake -S . -B "$BUILD_DIR" -DCMAKE_CXX_COMPILER="$CXX_COMPILER" -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O1 -g" -DSTALELEARN_SANITIZE=thread \
    -DSTALELEARN_BUILD_BENCHMARKS=OFF -DSTALELEARN_WITH_UCX=OFF "${LAUNCHER[@]}" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$JOBS" --target tsan_tests
ctest --test-dir "$BUILD_DIR" -L tsan --output-on-failure --timeout 600 -j "${STALELEARN_TEST_JOBS:-2}" "$@"
