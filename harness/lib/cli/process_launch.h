#pragma once
// Ranks under a launcher (Note [processes and ranks], framework/comm/world.h):
// mpirun or srun start P processes, each driving --gpus-per-process L ranks
// (default 1; --ranks-per-process is the same flag for the CPU) as threads, on
// the GPUs node_process*L .. + L-1 of its host.
#include <string>
#include <vector>

#include "framework/comm/world.h"
#include "framework/core/backend.h"
#include "harness/lib/cli/cli_args.h"

namespace tr {

extern const char* const kProcessFlagsUsage;
std::vector<std::string> process_value_flags();

struct ProcessRanks {
  int per_process = 1;
  int total = 1;         // processes * per_process
  int first_device = 0;  // this process's first GPU
};
// Without a World the flags are refused (there is nothing to divide); with
// one, the GPUs they name must be visible.
ProcessRanks process_ranks(const CliArgs& a, World* world, Backend b);

// The first GPU of a process that drives `per_process` of them: by its index
// on its own host, so that every host's GPUs count from 0 (a launch over
// several nodes).
inline int first_device_of(const World& world, int per_process) { return world.node_process() * per_process; }

}  // namespace tr
