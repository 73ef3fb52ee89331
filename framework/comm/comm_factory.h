#pragma once
// The communicator for a backend: shared memory among rank threads on the CPU,
// NCCL (one communicator per GPU, ncclCommInitAll) on CUDA.
#include <chrono>
#include <memory>

#include "framework/comm/communicator.h"
#include "framework/core/backend.h"

namespace tr {

std::unique_ptr<Communicator> make_communicator(Backend b, int ranks, int first_device,
                                                std::chrono::milliseconds watchdog);
std::unique_ptr<Communicator> make_nccl_communicator(int ranks, int first_device);

}  // namespace tr
