#!/usr/bin/env bash
# Fuzzes the parsers (Note [fuzzing], cmake/fuzz.cmake): builds the libFuzzer
# targets of tests/fuzz/ with clang, ASan and UBSan into build-fuzz/ (CPU-only),
# then runs each for SECONDS (default 20) on a fresh copy of its seed corpus
# (tests/fuzz/corpus/<name>/). Prints one line per target: executions, and ok
# or the crash file; exits 1 when any target crashed.
# Usage: ci/fuzz.sh [SECONDS [TARGET...]]; TARGETs are names without fuzz_
# (idx_reader ...); none means all. With TR_FUZZ_NO_BUILD=1 it uses the targets
# already built, so a second run beside the first shares its build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
if [ "${TR_FUZZ_NO_BUILD:-0}" != 1 ]; then
bash ci/setup.sh
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/fuzz.sh: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build-fuzz -G Ninja -DTR_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build-fuzz -j"${TR_JOBS:-$(nproc)}" tr_fuzz
fi

bins=()
if (($#)); then
  for target in "$@"; do
    [ -x "build-fuzz/bin/fuzz_$target" ] || { echo "ci/fuzz.sh: no fuzz target '$target' in build-fuzz/bin"; exit 2; }
    bins+=("build-fuzz/bin/fuzz_$target")
  done
else
  bins=(build-fuzz/bin/fuzz_*)
fi
work=build-fuzz/work
failed=0
summary=()
for bin in "${bins[@]}"; do
  name="$(basename "$bin")"
  target="${name#fuzz_}"
  rm -rf "$work/$target"
  mkdir -p "$work/$target/corpus" "$work/$target/crashes"
  cp tests/fuzz/corpus/"$target"/* "$work/$target/corpus/"
  log="$work/$target/log.txt"
  # A timeout per input of 10 s and 2 GiB of memory: past either is a finding too.
  rc=0
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/$target/crashes/" "$work/$target/corpus" >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  if ((rc == 0)); then
    summary+=("$name: ${execs:-?} execs in ${seconds} s, ok")
  else
    failed=1
    crash="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)"
    summary+=("$name: CRASHED (exit $rc) after ${execs:-?} execs: ${crash:-no crash file}; log $log")
    grep -m1 -E "ERROR: |runtime error|uncaught exception|terminate called|deadly signal" "$log" | sed 's/^/    /' || true
  fi
done
printf '%s\n' "${summary[@]}"
((failed == 0)) || { echo "ci/fuzz.sh: a fuzz target crashed (crash files and logs in $work)"; exit 1; }
echo "ci/fuzz.sh: ok"
