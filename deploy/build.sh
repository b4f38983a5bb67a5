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
  # ccache hashes the working directory into objects with debug info unless
  # told not to, so a second checkout (a git worktree) missed every time; the
  # price is that such objects name the first checkout's directory as their
  # compilation directory.
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
# Configure when there is no build system yet (a configure that failed, a
# dependency missing, leaves a cache but no Makefile), or when an argument
# asks for a setting the cache does not hold: -DNAME=VALUE arguments the
# cache already has cost nothing (test.sh passes its options on every run).
needs_configure() {
  [ -f "$BUILD_DIR/CMakeCache.txt" ] && [ -f "$BUILD_DIR/Makefile" ] || return 0
  local arg name value
  for arg in "$@"; do
    [[ "$arg" =~ ^-D([A-Za-z0-9_]+)(:[A-Z]+)?=(.*)$ ]] || return 0  # not a cache setting: always configure
    name=${BASH_REMATCH[1]} value=${BASH_REMATCH[3]}
    grep -qxF -e "$name:BOOL=$value" -e "$name:STRING=$value" -e "$name:PATH=$value" \
      -e "$name:FILEPATH=$value" -e "$name:UNINITIALIZED=$value" "$BUILD_DIR/CMakeCache.txt" || return 0
  done
  return 1
}
if needs_configure "$@"; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${STALELEARN_BUILD_TYPE:-RelWithDebInfo} "${LAUNCHER[@]}" "$@" >/dev/null
fi
read -r -a TARGETS <<<"${STALELEARN_TARGETS:-}"
cmake --build "$BUILD_DIR" -j "$JOBS" ${TARGETS[@]+--target "${TARGETS[@]}"}
