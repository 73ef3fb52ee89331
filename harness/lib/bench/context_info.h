#pragma once
// The report's context block: when, where, on what, built how.
#include <string>

#include "framework/comm/world.h"
#include "framework/runtime/device_context.h"
#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

// With a World, the launch kind, process count, hosts and MPI library too.
BenchContext collect_context(Backend b, const std::string& command_line, World* world = nullptr);

// CUDA side (context_info_cuda.cpp): device name and driver / runtime / cuDNN /
// NCCL versions of device 0; a CPU-only build fills "none".
void fill_cuda_context(BenchContext& c);

}  // namespace tr::bench
