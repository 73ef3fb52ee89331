#!/usr/bin/env bash
# The README's main command: install, build, train the reference MLP for one
# epoch on Fashion-MNIST (CPU), then run tr-bench's default sweep (the GPU when
# there is one, else the CPU) and write its JSON and HTML reports under
# build/main/. Extra arguments go to tr-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
build/bin/tr-train --model mlp --device cpu --epochs 1
mkdir -p build/main
build/bin/tr-bench --json build/main/bench.json "$@"
build/bin/tr-bench report build/main/bench.json -o build/main/bench.html
