#!/usr/bin/env bash
# Installs what tr needs on a fresh Debian 12 machine (as root, or with sudo),
# skipping apt entirely when everything is already there.
set -euo pipefail
packages=(cmake ninja-build g++ clang-format pkg-config libgtest-dev libbenchmark-dev libbenchmark-tools
          nlohmann-json3-dev zlib1g-dev libopenblas-dev dataset-fashion-mnist linux-doc-6.1 python3
          python3-numpy python3-scipy chromium fonts-dejavu-core openmpi-bin libopenmpi-dev libclang-rt-14-dev
          slurmd slurmctld slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# The text corpus is linux-doc-6.1's documentation sources (docs/text_data.md).
# Slim images tell dpkg to skip /usr/share/doc; this path is let through, and a
# package installed without it is installed again (dpkg needs the folder above
# let through too, or it cannot create the path).
corpus_dir=/usr/share/doc/linux-doc-6.1/html/_sources
keep_corpus=(-o "DPkg::Options::=--path-include=${corpus_dir%/*}" -o "DPkg::Options::=--path-include=$corpus_dir*")
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${keep_corpus[@]}" "${missing[@]}"
fi
if [ ! -d "$corpus_dir" ]; then
  echo "ci/setup.sh: $corpus_dir is missing (dpkg skipped /usr/share/doc); installing linux-doc-6.1 again with it"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --reinstall "${keep_corpus[@]}" linux-doc-6.1
  [ -d "$corpus_dir" ] || { echo "ci/setup.sh: $corpus_dir still missing" >&2; exit 1; }
fi
