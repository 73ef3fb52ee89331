# ci/gpu_check.sh's `fusion-probe` part (sourced by it, with its helpers and variables).
# The probes of experiments/ (experiments/README.md), from tr_experiments,
# which a build has only with -DTR_EXPERIMENTS=ON (and ci/pack_device.sh packs
# when built).
if ! [ -x "$BIN/tr_experiments" ]; then
  note "fusion-probe part skipped: no tr_experiments in $BIN (configure with -DTR_EXPERIMENTS=ON to build the probes)"
  return 0
fi
# cuDNN's runtime fusion of the BN + ReLU before the cnn's convolutions (and
# of the BN statistics after them) (experiments/cudnn_fusion_probe.cu), and one
# cooperative kernel per BatchNorm forward against the three kernels
# (experiments/bn_grid_sync_probe.cu), in one run; then tr_bench_ops's
# unfused ops of the same shapes, to compare with (about 350 s in all).
# TR_PROBE_FILTER=cudnn_engine runs the engine probe instead
# (experiments/cudnn_engine_probe.cu: every deterministic cuDNN engine for the
# cnn's, resnet50's and vgg16bn's convolutions against the legacy plan tr
# ships, about 250 s); its one line per case goes to the summary.
# TR_PROBE_FILTER=BM_ConvBn runs the fused convolution probes
# (experiments/conv_bn_fused_probe.cu, conv_bn_bwd_fused_probe.cu: a 3x3
# convolution of our own with the BatchNorm work on both sides of it, forward
# and data gradient, against tr's chains of BatchNorm kernels around cuDNN at
# the cnn's shapes, about 200 s).
# With the fused-convolution probes, first a short memcheck of a forward and a
# data-gradient case of each fused kernel (their first run on a GPU may write
# out of bounds; this says where).
if [[ "${TR_PROBE_FILTER:-}" == *BM_ConvBn* ]]; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [ -n "$CS" ]; then
    timeout ${TR_T_SAN:-300} "$CS" --tool memcheck --error-exitcode 9 "$BIN/tr_experiments" --benchmark_min_time=0.001 \
      --benchmark_filter='BM_ConvBn(Bwd)?Fused/shape:1/batch:256/path:(1|4)/minb:(1|2)' \
      > "$OUT/fusion_probe_memcheck.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && status=1
    note "compute-sanitizer memcheck of the fused-convolution probes (exit $rc): $(grep -E 'ERROR SUMMARY' "$OUT/fusion_probe_memcheck.log" | sed 's/^========= //' | paste -sd';' -)"
  else
    note "compute-sanitizer not found: the fused-convolution probes run without memcheck"
  fi
fi
# TR_PROBE_MIN_TIME (seconds per case) shortens a run of many cases.
timeout ${TR_T_PROBE:-400} "$BIN/tr_experiments" --benchmark_format=console ${TR_PROBE_MIN_TIME:+--benchmark_min_time=$TR_PROBE_MIN_TIME} \
  --benchmark_filter="${TR_PROBE_FILTER:-cudnn_fusion|BM_BnChain}" \
  --benchmark_out="$OUT/fusion_probe.json" --benchmark_out_format=json > "$OUT/fusion_probe.log" 2>&1
rc=$?
[ $rc -ne 0 ] && status=1
note "probes of experiments/ (exit $rc): $OUT/fusion_probe.json"
grep -E '^\[ cudnn fusion \].*(configs|graph with)|^\[ bn grid sync \]|^\[ conv bn (bwd )?fused \]|^tr::BM_ConvBn.*(manual_time|ERROR)|^\[ cudnn engine \].*legacy .* in |^BM_BnChain.*median' "$OUT/fusion_probe.log" | tee -a "$OUT/summary.txt"
# The default run's unfused ops of the same shapes (the product's kernels and
# cuDNN's legacy plans), on the same GPU, for the fusion probe's best_det_us.
if [ -z "${TR_PROBE_FILTER:-}" ]; then
  if [ -x "$BIN/tr_bench_ops" ]; then
    timeout ${TR_T_PROBE_OPS:-200} "$BIN/tr_bench_ops" --benchmark_format=console ${TR_PROBE_MIN_TIME:+--benchmark_min_time=$TR_PROBE_MIN_TIME} \
      --benchmark_filter='cnn/b(256|1024)/(conv_fwd|conv_bwd_filter|bn_relu_apply|bn_stats)/.*/f16' \
      --benchmark_out="$OUT/fusion_probe_ops.json" --benchmark_out_format=json > "$OUT/fusion_probe_ops.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && status=1
    note "the unfused ops of the same shapes (exit $rc): $OUT/fusion_probe_ops.json"
    grep -E '^cnn/b' "$OUT/fusion_probe_ops.log" | tee -a "$OUT/summary.txt"
  else
    note "no tr_bench_ops in $BIN: the probes' unfused ops not run"
  fi
fi
