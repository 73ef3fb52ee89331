# ci/gpu_check.sh's `tests` part (sourced by it, with its helpers and variables).
# TR_REQUIRE_GPU=1 (set by ci/gpu_check.sh) fails a GPU test that finds no GPU;
# the tests of the Fashion-MNIST files themselves (CPU tests, which CI runs)
# are left out by name, and said so, where the pack did not carry the data.
filter=${TR_TEST_FILTER:-*}
if [ ! -f "$TR_DATA_DIR/train-images-idx3-ubyte.gz" ]; then
  [[ "$filter" == *-* ]] && filter+=":FashionMnistRealDataTest.*" || filter+="-FashionMnistRealDataTest.*"
  note "tests: no Fashion-MNIST in $TR_DATA_DIR: FashionMnistRealDataTest.* (CPU tests of the files) left out"
fi
timeout ${TR_T_TESTS:-400} "$BIN/tr_tests" --gtest_brief=0 --gtest_filter="$filter" > "$OUT/tests.log" 2>&1; rc=$?
[ $rc -ne 0 ] && status=1
note "tests (exit $rc, TR_REQUIRE_GPU=${TR_REQUIRE_GPU:-0}): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
grep -E '^\[ (gpu vs cpu|amp|modes|launches|dp|gpu dp|plan|atlas|mlp|diag|nccl|allreduce|zoo[a-z ]*|pdl gpu|side streams gpu|fusion gpu|buckets|augment[a-z ]*|tta|text|gpt[a-z ]*|op table[a-z ]*|grad norm|clip|bigram|transformer|gpt2-d6) \]|FAILED|Failure|SKIPPED \]' "$OUT/tests.log" | head -160 | tee -a "$OUT/summary.txt"
