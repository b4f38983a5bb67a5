#!/usr/bin/env bash
# Configures (once) and builds stalelearn into ${STALELEARN_BUILD_DIR:-build}.
# Incremental: fast when nothing changed. Extra arguments go to cmake configure.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${STALELEARN_BUILD_DIR:-build}
JOBS=${STALELEARN_JOBS:-$(nproc)}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${STALELEARN_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
