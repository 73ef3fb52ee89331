#!/usr/bin/env bash
# Prepares what a GPU check on a machine without our Debian packages needs, under
# .device/ (git-ignored): stripped executables, the shared libraries they use
# that such a machine lacks (OpenBLAS, Google Benchmark, ...), and the
# Fashion-MNIST files. Run after ci/build.sh; then carry .device to the GPU box
# and run ci/gpu_check.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device
mkdir -p .device/bin .device/lib .device/data
for exe in tr-train tr-bench tr_tests tr_bench_ops; do
  [ -x "build/bin/$exe" ] && strip -o ".device/bin/$exe" "build/bin/$exe"
done
# Libraries outside CUDA's own (those come from the GPU machine) and glibc.
for exe in .device/bin/*; do
  ldd "$exe" | awk '/=> \//{print $3}'
done | sort -u | grep -E 'openblas|gfortran|quadmath|benchmark|gtest|gmock|libz\.' | while read -r lib; do
  cp -L "$lib" .device/lib/
done
cp /usr/share/datasets/fashion-mnist/*.gz .device/data/ 2>/dev/null || echo "pack_device: no Fashion-MNIST here; the GPU accuracy run will be skipped"
du -sh .device
