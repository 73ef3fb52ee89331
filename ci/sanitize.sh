#!/usr/bin/env bash
# Sanitizer builds of the CPU code (TR_CUDA=OFF), called by ci/test.sh:
#   ci/sanitize.sh asan   ASan + UBSan over the whole CPU test suite, in build-asan/
#   ci/sanitize.sh tsan   TSan over the threaded tests (rank threads, barrier and
#                         watchdog, shared-memory communicator), in build-tsan/
# Any report fails the test that caused it (halt_on_error, no UB recovery).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-}"
case "$kind" in
  asan) sanitize=address,undefined ;;
  tsan) sanitize=thread ;;
  *) echo "usage: ci/sanitize.sh asan|tsan" >&2; exit 2 ;;
esac
dir="build-$kind"
bash ci/setup.sh
# RelWithDebInfo: optimised like CI's Release build, with line numbers in the reports.
# Without MPI: Open MPI's own allocations and threads are not ours to judge (its
# libraries are not built with the sanitizers); the multi-process tests run in
# the plain build.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTR_CUDA=OFF -DTR_MPI=OFF -DTR_WERROR=ON \
  -DTR_SANITIZE="$sanitize" >/dev/null
t0=$SECONDS
ninja -C "$dir" -j"${TR_JOBS:-$(nproc)}" tr_tests tr-train tr-bench tr_fuzz_replay
build_s=$((SECONDS - t0))

# Tests left out, each with its reason (a ctest regex per line).
exclude=()
case "$kind" in
  asan)
    export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0:strict_string_checks=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    # One BLAS thread per caller: the sanitizers judge our code, and OpenBLAS's
    # spinning workers beside two tests at once on two cores made the run four
    # times slower (CpuTraining.ReplayEqualsEagerBitForBit: 62 s, 18 s with one).
    # Two threads are the plain ctest's and ci/blas_kernels.sh's.
    export OPENBLAS_NUM_THREADS=1
    include='.'
    ;;
  tsan)
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:history_size=4
    # OpenBLAS's own worker threads synchronise in code TSan does not see (it is
    # not built with TSan): every GEMM they share with a rank thread reads as a
    # race in sgemm_beta. One BLAS thread per caller leaves TSan our threads only.
    export OPENBLAS_NUM_THREADS=1
    # The tests that start rank threads: data parallelism, BN sync, gradient
    # buckets, the all-reduce benchmark, weak scaling, the zoo's and the
    # augmentation's N ranks x B/N checks, tr-bench runs with --ranks 2, and
    # the plan books that processes (threads here) hand on.
    include='^(DataParallel|BnSync|GradBuckets|AllreduceBench|WeakScaling|ProcessComm)\.|Ranks(Match|Agree)|^TrBenchCli\.(TraceMarks|BatchPerGpu)|^ConvPlanBook\.EveryProcess'
    ;;
esac
args=(-R "$include")
if ((${#exclude[@]})); then
  args+=(-E "$(IFS='|'; echo "${exclude[*]}")")
fi
t0=$SECONDS
ctest --test-dir "$dir" --output-on-failure -j"${TR_TEST_JOBS:-2}" --timeout 1500 "${args[@]}"
echo "sanitize.sh $kind: ok (build ${build_s} s, tests $((SECONDS - t0)) s)"
