#!/usr/bin/env bash
# Installs what tr needs on a fresh Debian 12 machine (as root, or with sudo),
# skipping apt entirely when everything is already there.
set -euo pipefail
packages=(cmake ninja-build g++ clang-format pkg-config libgtest-dev libbenchmark-dev libbenchmark-tools
          nlohmann-json3-dev zlib1g-dev libopenblas-dev dataset-fashion-mnist python3
          python3-numpy python3-scipy chromium fonts-dejavu-core openmpi-bin libopenmpi-dev libclang-rt-14-dev
          slurmd slurmctld slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
