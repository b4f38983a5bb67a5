#!/usr/bin/env bash
# Installs, from Debian's archive, exactly the packages stalelearn needs that
# are missing. Idempotent: does nothing (and needs no network) when all are present.
# --cluster adds what the cluster in a box and its tests need (deploy/cluster,
# deploy/slurm): iproute2, util-linux, jq, munge and Slurm (slurmctld, slurmd, client).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libucx-dev ucx-utils
  libtbb-dev
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev zlib1g-dev libxxhash-dev
  ccache
  clang libclang-rt-dev  # deploy/fuzz.sh: libFuzzer and the sanitizer runtimes
  dataset-fashion-mnist
  gnuplot-nox
)
if [ "${1:-}" = "--cluster" ]; then
  PACKAGES+=(iproute2 util-linux jq munge slurmctld slurmd slurm-client)
elif [ $# -gt 0 ]; then
  echo "install-deps: unknown option '$1' (only --cluster)" >&2
  exit 2
fi

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
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
