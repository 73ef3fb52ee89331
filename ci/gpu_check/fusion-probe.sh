# ci/gpu_check.sh's `fusion-probe` part (sourced by it, with its helpers and variables).
if ! [ -x "$BIN/tr_bench_ops" ]; then
  note "fusion-probe part skipped: no tr_bench_ops in $BIN"
  return 0
fi
# cuDNN's runtime fusion of the BN + ReLU before the cnn's convolutions (and
# of the BN statistics after them) against the unfused ops of the same shapes
# (tests/bench/cudnn_fusion_probe.cu), and one cooperative kernel per BatchNorm
# forward against the three kernels (tests/bench/bn_grid_sync_probe.cu), in one run.
timeout ${TR_T_PROBE:-400} "$BIN/tr_bench_ops" --benchmark_format=console \
  --benchmark_filter="${TR_PROBE_FILTER:-cudnn_fusion|BM_BnChain|cnn/b(256|1024)/(conv_fwd|conv_bwd_filter|bn_relu_apply|bn_stats)/.*/f16}" \
  --benchmark_out="$OUT/fusion_probe.json" --benchmark_out_format=json > "$OUT/fusion_probe.log" 2>&1
rc=$?
[ $rc -ne 0 ] && status=1
note "cuDNN runtime fusion probe (exit $rc): $OUT/fusion_probe.json"
grep -E '^\[ cudnn fusion \].*(configs|graph with)|^\[ bn grid sync \]|^BM_BnChain.*median|^cnn/b' "$OUT/fusion_probe.log" | tee -a "$OUT/summary.txt"
