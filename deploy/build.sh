#!/usr/bin/env bash
# Configures (once) and builds stalelearn into ${STALELEARN_BUILD_DIR:-build}.
# Incremental: fast when nothing changed. Extra arguments go to cmake configure.
# STALELEARN_TARGETS="t1 t2": build only those targets and what they link
# (quickstart.sh builds the program alone; test.sh builds everything).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${STALELEARN_BUILD_DIR:-build}
JOBS=${STALELEARN_JOBS:-$(nproc)}
# ccache (installed by install-deps.sh) makes rebuilds in fresh checkouts and
# worktrees cheap; CCACHE_BASEDIR keeps hits across checkout locations.
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
fi
# A configure that failed (a dependency missing) leaves a cache but no build
# system: configure again rather than asking make for a Makefile.
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] || [ ! -f "$BUILD_DIR/Makefile" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${STALELEARN_BUILD_TYPE:-RelWithDebInfo} "${LAUNCHER[@]}" "$@" >/dev/null
fi
read -r -a TARGETS <<<"${STALELEARN_TARGETS:-}"
cmake --build "$BUILD_DIR" -j "$JOBS" ${TARGETS[@]+--target "${TARGETS[@]}"}
