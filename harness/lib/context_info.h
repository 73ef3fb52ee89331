#pragma once
// The report's context block: when, where, on what, built how.
#include <string>

#include "framework/runtime/device_context.h"
#include "harness/lib/bench_types.h"

namespace tr::bench {

BenchContext collect_context(Backend b, const std::string& command_line);

// CUDA side (context_info_cuda.cpp): device name and driver / runtime / cuDNN /
// NCCL versions of device 0; a CPU-only build fills "none".
void fill_cuda_context(BenchContext& c);

}  // namespace tr::bench
