#!/usr/bin/env bash
# One run of the sanitize part: sanitize_one.sh NAME TOOL PROGRAM ARGS..., with
# CS (compute-sanitizer), BIN and SAN_DIR from the environment. PROGRAM is
# tr-train (ARGS are its flags) or `ops CASES`: the op table's GPU test on the
# cases TR_OP_CASES names (per_token: "per token"; all: every case). Writes SAN_DIR/NAME.log and
# SAN_DIR/NAME.result, one line: "NAME (exit RC): the tool's summary lines".
set -uo pipefail
name=$1 tool=$2 program=$3
shift 3
extra=()
[ "$tool" = memcheck ] && extra=(--leak-check full)
if [ "$program" = ops ]; then
  cases=$1
  [ "$cases" = per_token ] && cases="per token"
  [ "$cases" = all ] && cases=""
  TR_OP_CASES=$cases timeout "${TR_T_SAN:-300}" "$CS" --tool "$tool" "${extra[@]}" --error-exitcode 9 \
    "$BIN/tr_tests" --gtest_filter=OpsGpu.OpTableEveryCaseMatchesTheCpu > "$SAN_DIR/$name.log" 2>&1
else
  # synccheck follows every barrier: over cuBLAS's and cuDNN's kernels a model run took minutes. In the model
  # runs it checks tr's own kernels, those in namespace tr (the name's substring, demangled or mangled); the op
  # table runs above check every kernel. TR_SAN_ALL_KERNELS=1 checks every kernel here too. racecheck takes no
  # filter: under compute-sanitizer 2025.3.1 any --kernel-name filter, even one that matches no kernel, made the
  # 16-bit cuBLASLt GEMMs it left unchecked fail ("The Sanitizer failed to handle a hardware exception"; mlp,
  # eager, AMP, H100), while the same run without the filter was clean.
  if [[ $tool == synccheck ]] && [ "${TR_SAN_ALL_KERNELS:-0}" != 1 ]; then
    extra=(--kernel-name kns=tr:: --kernel-name kns=2tr)
  fi
  # A sanitized kernel may run for minutes: tr-train's watchdog must not take that for a hang. The
  # program runs under a shell (the tool follows it into the child) that names how it ended: the
  # tool says only "process didn't terminate successfully", whether it exited 1 or died of a signal (128 + N).
  timeout "${TR_T_SAN:-300}" "$CS" --tool "$tool" "${extra[@]}" --error-exitcode 9 bash -c \
    '"$@"; rc=$?; [ $rc -eq 0 ] || echo "sanitize_one: ${1##*/} ended with status $rc" >&2; exit $rc' _ \
    "$BIN/$program" "$@" --watchdog-ms 3600000 > "$SAN_DIR/$name.log" 2>&1
fi
rc=$?
# memcheck adds a LEAK SUMMARY; racecheck says RACECHECK SUMMARY instead of ERROR SUMMARY.
summary=$(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|^sanitize_one: ' "$SAN_DIR/$name.log" | sed 's/^========= //' | paste -sd';' -)
[ $rc -eq 124 ] && summary="timed out after ${TR_T_SAN:-300} s; $summary"
echo "$name (exit $rc): $summary" > "$SAN_DIR/$name.result"
