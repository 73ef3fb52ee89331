#!/usr/bin/env bash
# The whole ctest again under OpenBLAS kernels and thread counts other than
# the ones it picks here, so a result that holds only with one BLAS kernel
# fails on every CPU, not only on some (OpenBLAS picks its kernel by CPU model:
# Prescott on a CPU it does not know, Haswell or SkylakeX on most). Two more
# passes: Prescott (any x86-64) with 1 thread, and the widest kernel this CPU
# runs other than the one picked, with 2 threads.
set -euo pipefail
cd "$(dirname "$0")/.."
picked=$(python3 -c 'import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())')
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
wide=()
has avx512f avx512bw avx512vl avx512dq && wide+=(SkylakeX)
has avx2 fma && wide+=(Haswell)
other=""
for k in "${wide[@]}"; do [ "${k,,}" != "${picked,,}" ] && { other=$k; break; }; done
passes=("Prescott 1")
[ -n "$other" ] && passes+=("$other 2")
echo "blas_kernels: OpenBLAS picks ${picked} here; passes: ${passes[*]/%/ threads}"
for p in "${passes[@]}"; do
  read -r kernel threads <<<"$p"
  log=build/blas_kernels_$kernel.log
  echo "blas_kernels: ctest with OPENBLAS_CORETYPE=$kernel OPENBLAS_NUM_THREADS=$threads (log: $log)"
  # The dry run of the GPU check and the document checks call no BLAS.
  if ! OPENBLAS_CORETYPE=$kernel OPENBLAS_NUM_THREADS=$threads ctest --test-dir build --output-on-failure \
       -j"${TR_TEST_JOBS:-2}" --timeout 900 -E '^(gpu_check[.]dry_run|markdown[.]links|docs[.].*)$' >"$log" 2>&1; then
    grep -E -B2 -A12 'Failure|\(Failed\)|\(Timeout\)' "$log" | head -200
    echo "blas_kernels: failed under $kernel with $threads thread(s)"
    exit 1
  fi
  grep -E 'tests passed' "$log"
done
echo "blas_kernels: ok"
