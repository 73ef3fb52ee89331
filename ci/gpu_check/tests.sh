# ci/gpu_check.sh's `tests` part (sourced by it, with its helpers and variables).
timeout ${TR_T_TESTS:-400} "$BIN/tr_tests" --gtest_brief=0 --gtest_filter="${TR_TEST_FILTER:-*}" > "$OUT/tests.log" 2>&1; rc=$?
[ $rc -ne 0 ] && status=1
note "tests (exit $rc): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
grep -E '^\[ (gpu vs cpu|amp|modes|launches|dp|gpu dp|plan|atlas|mlp|diag|nccl|allreduce|zoo[a-z ]*|pdl gpu|side streams gpu|fusion gpu|buckets|augment[a-z ]*|tta) \]|FAILED|Failure' "$OUT/tests.log" | head -120 | tee -a "$OUT/summary.txt"
