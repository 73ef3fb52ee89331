#include "harness/lib/bench/launch_crosscheck.h"

namespace tr::bench {

bool launch_counts_agree(const StepLaunches& ours, const StepLaunches& cupti) {
  return cupti.graphs == ours.graphs && cupti.memcpys == ours.memcpys && cupti.kernels >= ours.kernels &&
         (ours.kernels == 0) == (cupti.kernels == 0);
}

}  // namespace tr::bench
