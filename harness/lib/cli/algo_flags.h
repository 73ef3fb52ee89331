#pragma once
// The GPU algorithm flags that tr-train and tr-bench share: --cudnn-benchmark,
// --conv-plans FILE, --nondeterministic, --no-pdl, --cudnn-filter-grad,
// --keep-memset-nodes, --grid-sync. All but the first are refused off CUDA (the
// CPU's kernels are deterministic, it launches none, has no cuDNN and captures
// no CUDA graphs), with one line naming the flag. On CUDA the choice carries
// the run's convolution plan book (harness/lib/cli/conv_plans_file.h), read from
// --conv-plans FILE where it names one.
#include "framework/core/backend.h"
#include "framework/runtime/device_context.h"
#include "harness/lib/cli/cli_args.h"

namespace tr {

AlgoChoice algo_flags(const CliArgs& a, Backend backend);

}  // namespace tr
