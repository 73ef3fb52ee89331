#pragma once
// tr-bench --kernel-trace FILE: every kernel of each case's traced repetition
// (CUPTI, cupti_probe.h) as a Chrome trace, the JSON that Perfetto and
// chrome://tracing open. Where Nsight Systems is not installed it still shows
// which kernels ran beside which (side streams, a graph's parallel branches)
// and where the GPU waited.
//   one process per case (named by BenchCase::name), one thread per CUDA stream,
//   one complete event ("ph": "X") per kernel, memset ("[memset]") and memcpy
//   ("[memcpy]"), timestamps in microseconds from the case's first record.
#include <string>

#include <nlohmann/json.hpp>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

// Cases without records (no CUPTI) are left out.
nlohmann::json kernel_trace_json(const BenchReport& r);

// Writes kernel_trace_json(r) to `path` atomically.
void write_kernel_trace(const BenchReport& r, const std::string& path);

}  // namespace tr::bench
