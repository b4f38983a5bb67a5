#!/usr/bin/env bash
# From a fresh Debian 12 machine: installs what is missing, builds, fetches the
# default data (MovieLens), and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
./deploy/build.sh
BUILD_DIR=${STALELEARN_BUILD_DIR:-build}
echo "quickstart: training is not built yet"
