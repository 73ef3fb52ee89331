#pragma once
// The communicator for a backend: shared memory among rank threads on the CPU
// (across processes: ProcessComm over the World), NCCL (one communicator per
// GPU, bootstrapped over the World under MPI) on CUDA. `ranks` is global; a
// World's process holds ranks / processes() of them (Note [processes and ranks]).
#include <chrono>
#include <memory>

#include "framework/comm/communicator.h"
#include "framework/comm/world.h"
#include "framework/core/backend.h"

namespace tr {

std::unique_ptr<Communicator> make_communicator(Backend b, int ranks, World* world, int first_device,
                                                std::chrono::milliseconds watchdog);
std::unique_ptr<Communicator> make_nccl_communicator(int ranks, World* world, int first_device,
                                                     std::chrono::milliseconds watchdog);

}  // namespace tr
