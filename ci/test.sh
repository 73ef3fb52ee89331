#!/usr/bin/env bash
# The README's test command: install, check the formatting (ci/format.sh),
# build, run every test (GPU tests skip without a GPU), again under two more
# OpenBLAS kernels (ci/blas_kernels.sh),
# then the harness end to end on the CPU (ci/bench_gate.sh), the parsers' fuzz
# targets (ci/fuzz.sh), and the sanitizer builds (ci/sanitize.sh: ASan+UBSan
# over every CPU test, TSan over the threaded ones).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/format.sh
bash ci/build.sh
ctest --test-dir build --output-on-failure -j"${TR_TEST_JOBS:-2}" --timeout 900
# Again under other OpenBLAS kernels and thread counts (ci/blas_kernels.sh).
bash ci/blas_kernels.sh
bash ci/bench_gate.sh
# The PyTorch peer scripts run only where torch is (ci/gpu_check.sh); here they
# must at least compile, and compare.py must read the committed H200 reports.
# ci/interleave.py (the GPU check's interleave part) runs here on stand-in commands, ci/history_append.py on a
# throw-away repository.
python3 -m py_compile peers/torch_step.py peers/torch_ddp.py peers/torch_tta.py peers/torch_text_tta.py \
  peers/torch_gpt.py peers/machine_state.py peers/step_timing.py peers/gpu_samples.py peers/gpu_watch.py peers/compare.py ci/interleave.py ci/history_append.py
python3 tests/interleave_test.py
python3 tests/history_append_test.py
python3 tests/gpu_samples_test.py
python3 peers/compare.py reports/h200/gpu_check/torch_amp.json reports/h200/gpu_check/bench_cnn_amp.json \
  reports/h200/gpu_check/bench_mlp_amp.json > /dev/null
# The parsers under libFuzzer with ASan and UBSan, 20 s a target (ci/fuzz.sh).
bash ci/fuzz.sh "${TR_FUZZ_SECONDS:-20}"
bash ci/sanitize.sh asan
bash ci/sanitize.sh tsan
echo "test.sh: ok"
