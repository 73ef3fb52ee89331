#!/usr/bin/env bash
# Prepares what a GPU check on a machine without our Debian packages needs, under
# .device/ (git-ignored): the executables (with symbols), the shared libraries
# they use that such a machine lacks (OpenBLAS, Google Benchmark, Open MPI's
# libmpi and what it loads, ...), the Fashion-MNIST files and the text corpus's
# token shards (docs/text_data.md; 43 MB, about 5 MB once the pack is xz'd). Run after
# ci/build.sh (and ci/pack_mpi.sh after this one for the mpi part); then carry
# .device to the GPU box and run ci/gpu_check.sh there. The whole tree that
# travels is capped at 64 MiB: TR_PACK_SKIP="tr_bench_ops tr_tests data" leaves
# out what a call does not need ("text" the shards; the parts that need a missing piece say so and
# skip; tr_mpi_tests is for the mpi part's GPU tests as processes,
# tr_experiments, packed when the build has it (-DTR_EXPERIMENTS=ON), for the
# fusion-probe part). With tr_tests and the data together the tree no longer
# fits: the GPU tests need no data (the CPU tests that read it skip without it).
set -euo pipefail
skip=" ${TR_PACK_SKIP:-} "
cd "$(dirname "$0")/.."
rm -rf .device
mkdir -p .device/bin .device/lib .device/data
exes="tr-train tr-bench tr-data tr_tests tr_bench_ops tr_mpi_tests"
# Not a tr_experiments that an earlier configuration left in build/bin.
grep -qx 'TR_EXPERIMENTS:BOOL=ON' build/CMakeCache.txt 2>/dev/null && exes="$exes tr_experiments"
for exe in $exes; do
  # Symbols kept (not stripped): a hang's backtrace must name our functions.
  [[ "$skip" == *" $exe "* ]] && continue
  [ -x "build/bin/$exe" ] && cp "build/bin/$exe" ".device/bin/$exe"
done
# Libraries outside CUDA's own (those come from the GPU machine) and glibc.
for exe in .device/bin/*; do
  ldd "$exe" | awk '/=> \//{print $3}'
done | sort -u | grep -E 'openblas|gfortran|quadmath|benchmark|gtest|gmock|libz\.|libmpi|libopen-rte|libopen-pal|libhwloc|libevent|libudev' | while read -r lib; do
  cp -L "$lib" .device/lib/
done
# The whole tree that travels to the GPU box is capped (64 MiB): OpenBLAS alone
# is 36 MB, so the device copy uses Debian's reference BLAS (0.4 MB, same CBLAS
# symbols) under OpenBLAS's name. Only the CPU reference path runs slower there.
if [ -f /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 ]; then
  rm -f .device/lib/libopenblas.so.0 .device/lib/libgfortran.so.5 .device/lib/libquadmath.so.0
  cp -L /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 .device/lib/libopenblas.so.0
fi
# The NVTX recorder the NVTX tests inject (they look beside the executables first).
[ -f build/libtr_nvtx_recorder.so ] && strip -o .device/bin/libtr_nvtx_recorder.so build/libtr_nvtx_recorder.so
rm -f .device/bin/tr_bench_ops.skip
if [[ "$skip" != *" data "* ]]; then
  cp /usr/share/datasets/fashion-mnist/*.gz .device/data/ 2>/dev/null || echo "pack_device: no Fashion-MNIST here; the GPU accuracy run will be skipped"
fi
if [[ "$skip" != *" text "* ]] && [ -x build/bin/tr-data ]; then
  build/bin/tr-data shards --out .device/data/text >/dev/null ||
    echo "pack_device: no text shards (tr-data shards failed; is linux-doc-6.1 installed?)"
fi
du -sh .device
