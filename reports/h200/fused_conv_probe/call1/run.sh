# Device call 1 (2026-12-05), binaries of e7e4ddb packed by
# TR_PACK_SKIP="data tr_mpi_tests tr-train tr-bench tr_tests" ci/pack_device.sh:
tar xzf .device/bins.tgz -C .device && mkdir -p $OUT/probe && OUT=$OUT/probe TR_CHECK_PARTS="fusion-probe" \
  TR_PROBE_FILTER='BM_ConvBn|BM_BnChain' TR_T_PROBE=480 TR_T_SAN=90 bash ci/gpu_check.sh
# The probe run reached its 480 s limit (exit 124) in BM_ConvBnBwdFused/shape:2:
# BM_BnChain and the first 39 data-gradient cases ran; the forward cases did not.
