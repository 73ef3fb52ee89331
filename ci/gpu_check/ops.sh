# ci/gpu_check.sh's `ops` part (sourced by it, with its helpers and variables).
# Every case of tr_bench_ops (tests/bench/: the op micro-benchmarks and the
# launch floor) unless TR_OPS_FILTER picks some; the probes of experiments/ are
# the fusion-probe part's.
if ! [ -x "$BIN/tr_bench_ops" ]; then
  note "ops part skipped: no tr_bench_ops in $BIN"
  return 0
fi
timeout ${TR_T_OPS:-300} "$BIN/tr_bench_ops" --benchmark_min_time=0.01 --benchmark_format=console \
  --benchmark_filter="${TR_OPS_FILTER:-.}" \
  --benchmark_out="$OUT/ops_bench.json" --benchmark_out_format=json > "$OUT/ops_bench.log" 2>&1
note "op micro-benchmarks (exit $?): $OUT/ops_bench.json"
grep -E "^BM_(Launch|OneGraph)" "$OUT/ops_bench.log" | tee -a "$OUT/summary.txt"
