#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, conformance,
# multi-rank under mpirun, cluster across namespace hosts), each under a
# deadline. Exit code: CTest's.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests' packages (GoogleTest, Google Benchmark, clang for the fuzzers);
# as root the cluster tests can run (network namespaces): add what they need
# (iproute2, jq, munge, Slurm); otherwise they are reported as skipped.
if [ "$(id -u)" -eq 0 ]; then ./deploy/install-deps.sh --tests --cluster; else ./deploy/install-deps.sh --tests; fi
# Every target, tests and benchmarks included (a build directory the
# quickstart configured without them is reconfigured once).
./deploy/build.sh -DSTALELEARN_BUILD_TESTS=ON -DSTALELEARN_BUILD_BENCHMARKS=ON
# The real-data tests (MovieLens md5, MF convergence, heart_scale, the
# SpamAssassin bag of words, the Brown and State of the Union corpora, MNIST
# and Fashion-MNIST; the quality label: tests/README.md) need the data;
# fetching is idempotent and needs no network once cached.
./deploy/fetch-data.sh movielens heart_scale spam brown sotu mnist fashion-mnist
BUILD_DIR=${STALELEARN_BUILD_DIR:-build}
# Stray shared-memory segments of this user's earlier killed runs make vader
# fail; other jobs' segments are left alone.
./deploy/clean-stale-shm.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_WARN_UNUSED_ENV_VARS=n
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600 -j "${STALELEARN_TEST_JOBS:-2}" "$@"
