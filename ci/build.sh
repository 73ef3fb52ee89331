#!/usr/bin/env bash
# Configures and builds tr into build/ (executables in build/bin/). The CUDA
# backend is built when nvcc is found (override: TR_CUDA=ON|OFF|AUTO).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTR_CUDA="${TR_CUDA:-AUTO}" >/dev/null
ninja -C build -j"${TR_JOBS:-$(nproc)}"
