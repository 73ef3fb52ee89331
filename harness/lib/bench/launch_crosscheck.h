#pragma once
// The framework's own launch counts (LaunchTally, Note [launch accounting])
// against CUPTI's, per step and rank: graph launches and async memcpys must
// be equal; every kernel launch or library call the framework counts is at
// least one launch CUPTI sees (a cuDNN or cuBLAS call may start several); and
// where one side counts none, so must the other. tr-bench writes the verdict
// as launch_crosscheck_ok and warns when it fails.
namespace tr::bench {

struct StepLaunches {
  double graphs = 0;
  double memcpys = 0;
  double kernels = 0;  // the framework: its kernel launches plus library calls; CUPTI: kernel launches
};

bool launch_counts_agree(const StepLaunches& ours, const StepLaunches& cupti);

}  // namespace tr::bench
