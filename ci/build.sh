#!/usr/bin/env bash
# Configures and builds tr into build/ (executables in build/bin/). The CUDA
# backend is built when nvcc is found (override: TR_CUDA=ON|OFF|AUTO). C++
# warnings are errors (TR_WERROR=ON). TR_EXPERIMENTS=ON builds the probes of
# experiments/ too (tr_experiments; default OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTR_CUDA="${TR_CUDA:-AUTO}" -DTR_MPI="${TR_MPI:-AUTO}" -DTR_EXPERIMENTS="${TR_EXPERIMENTS:-OFF}" -DTR_WERROR=ON >/dev/null
ninja -C build -j"${TR_JOBS:-$(nproc)}"
