#!/usr/bin/env bash
# The README's main command: install, build, then train the reference MLP for
# one epoch on Fashion-MNIST on the CPU (extra arguments go to tr-train).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
exec build/bin/tr-train --model mlp --device cpu --epochs 1 "$@"
