#!/usr/bin/env bash
# The README's test command: install, build, run every test (GPU tests skip
# without a GPU), then the harness end to end on the CPU (ci/bench_gate.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
ctest --test-dir build --output-on-failure -j"${TR_TEST_JOBS:-2}" --timeout 900
bash ci/bench_gate.sh
