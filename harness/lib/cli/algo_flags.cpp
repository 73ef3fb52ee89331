#include "harness/lib/cli/algo_flags.h"

#include "framework/core/error.h"
#include "harness/lib/cli/conv_plans_file.h"

namespace tr {

AlgoChoice algo_flags(const CliArgs& a, Backend backend) {
  AlgoChoice c;
  c.benchmark = a.flag("--cudnn-benchmark");
  TR_USER_CHECK(!c.benchmark || backend == Backend::Cuda,
                "--cudnn-benchmark is for --device cuda (the CPU has no cuDNN plans to time)");
  c.deterministic = !a.flag("--nondeterministic");
  TR_USER_CHECK(c.deterministic || backend == Backend::Cuda,
                "--nondeterministic is for --device cuda (the CPU kernels are deterministic)");
  c.programmatic_launch = !a.flag("--no-pdl");
  TR_USER_CHECK(c.programmatic_launch || backend == Backend::Cuda,
                "--no-pdl is for --device cuda (the CPU launches no kernels)");
  c.tc_filter = !a.flag("--cudnn-filter-grad");
  TR_USER_CHECK(c.tc_filter || backend == Backend::Cuda,
                "--cudnn-filter-grad is for --device cuda (the CPU has no cuDNN)");
  c.memset_kernels = !a.flag("--keep-memset-nodes");
  TR_USER_CHECK(c.memset_kernels || backend == Backend::Cuda,
                "--keep-memset-nodes is for --device cuda (the CPU captures no CUDA graphs)");
  c.grid_sync = a.flag("--grid-sync");
  TR_USER_CHECK(!c.grid_sync || backend == Backend::Cuda,
                "--grid-sync is for --device cuda (the CPU launches no kernels)");
  c.conv_plans = open_conv_plans(a.str("--conv-plans", ""), c.benchmark, backend);
  return c;
}

}  // namespace tr
