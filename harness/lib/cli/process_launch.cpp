#include "harness/lib/cli/process_launch.h"

#include "framework/core/error.h"
#include "framework/runtime/context_factory.h"

namespace tr {

const char* const kProcessFlagsUsage =
    R"(  --gpus-per-process N     under mpirun or srun: GPUs (CUDA) or rank threads (CPU) each
                           process drives (default 1); ranks = processes x N, rank r in
                           process r / N. --ranks-per-process is the same flag.
)";

std::vector<std::string> process_value_flags() { return {"--gpus-per-process", "--ranks-per-process"}; }

ProcessRanks process_ranks(const CliArgs& a, World* world, Backend b) {
  TR_USER_CHECK(!(a.has("--gpus-per-process") && a.has("--ranks-per-process")),
                "give --gpus-per-process or --ranks-per-process, not both (they are the same flag)");
  const char* flag = a.has("--ranks-per-process") ? "--ranks-per-process" : "--gpus-per-process";
  ProcessRanks r;
  if (world == nullptr) {
    TR_USER_CHECK(!a.has(flag), flag, " needs a launcher (mpirun or srun); without one, --gpus or --ranks ",
                  "sets the rank threads of this process");
    return r;
  }
  r.per_process = static_cast<int>(a.integer(flag, 1, 1, 64));
  r.total = world->processes() * r.per_process;
  r.first_device = first_device_of(*world, r.per_process);
  if (b == Backend::Cuda) {
    const int have = cuda_device_count();
    TR_USER_CHECK(r.first_device + r.per_process <= have, "process ", world->process(), " is number ",
                  world->node_process(), " on its host and drives ", r.per_process, " GPU(s) from GPU ", r.first_device,
                  ", but the host shows ", have, " GPU(s)");
  }
  return r;
}

}  // namespace tr
