#!/usr/bin/env bash
# Installs, from Debian's archive, exactly the packages stalelearn needs that
# are missing. Idempotent: does nothing (and needs no network) when all are present.
#   (no option)  what the `stalelearn` program needs to build and run, and
#                gnuplot for its plots: deploy/quickstart.sh installs this only
#   --tests      adds what the test suites, benchmarks and fuzzers need:
#                GoogleTest, Google Benchmark, clang with libFuzzer and the
#                sanitizer runtimes, the Fashion-MNIST data package
#   --cluster    adds what the cluster in a box and its tests need (deploy/cluster,
#                deploy/slurm): iproute2, util-linux, jq, munge and Slurm
#   --no-plot    leaves out gnuplot (the quickstart installs it while it builds)
# Options combine (deploy/test.sh passes --tests, and --cluster as root).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libucx-dev ucx-utils
  libtbb-dev
  libprotobuf-dev protobuf-compiler
  libcli11-dev libfmt-dev zlib1g-dev libxxhash-dev
  ccache
)
PLOT=(gnuplot-nox)
for option in "$@"; do
  case "$option" in
    --tests)
      PACKAGES+=(libgtest-dev libgmock-dev libbenchmark-dev
        clang libclang-rt-dev  # deploy/fuzz.sh: libFuzzer and the sanitizer runtimes
        dataset-fashion-mnist) ;;
    --cluster) PACKAGES+=(iproute2 util-linux jq munge slurmctld slurmd slurm-client) ;;
    --no-plot) PLOT=() ;;
    *) echo "install-deps: unknown option '$option' (--tests, --cluster, --no-plot)" >&2; exit 2 ;;
  esac
done
PACKAGES+=(${PLOT[@]+"${PLOT[@]}"})

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# dpkg without an fsync per file (as Debian's container images do): a fresh
# machine unpacks some 350 packages; a crash mid-install means running this again.
$SUDO apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${missing[@]}"
