#!/usr/bin/env bash
# The whole tr_bench_ops catalogue in one call (binaries of db91e6e: inputs
# filled on the GPU), through the GPU check's ops part: ops_bench.json and
# ops_bench.log in detail.tgz.
t0=$(date +%s)
TR_CHECK_PARTS=ops TR_T_OPS=420 OUT=$OUT bash ci/gpu_check.sh > $OUT/check_call.log 2>&1
echo "ops part: $(( $(date +%s) - t0 )) s" >> $OUT/check_call.log
tar xzf $OUT/detail.tgz -C /tmp && grep -c manual_time /tmp/detail/ops_bench.log; tail -2 /tmp/detail/ops_bench.log; cat $OUT/check_call.log | tail -5
