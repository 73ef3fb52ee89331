#pragma once
// The GPU algorithm flags that tr-train and tr-bench share: --cudnn-benchmark,
// --nondeterministic, --no-pdl, --cudnn-filter-grad. The last three are refused
// off CUDA (the CPU's kernels are deterministic, it launches none and has no
// cuDNN), with one line naming the flag.
#include "framework/core/backend.h"
#include "framework/runtime/device_context.h"
#include "harness/lib/cli_args.h"

namespace tr {

AlgoChoice algo_flags(const CliArgs& a, Backend backend);

}  // namespace tr
