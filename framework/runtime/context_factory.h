#pragma once
// Creates a rank's DeviceContext for a backend. CUDA contexts come from
// cuda_context_cuda.cpp; a build without CUDA refuses them with a clear error.
#include <memory>

#include "framework/runtime/device_context.h"

namespace tr {

std::unique_ptr<DeviceContext> make_context(Backend b, int rank, int ranks, int device, AlgoChoice algos,
                                            Communicator* comm);
std::unique_ptr<DeviceContext> make_cuda_context(int rank, int ranks, int device, AlgoChoice algos, Communicator* comm);
// The CUDA GPUs this process sees: 0 in a build without CUDA, on a machine
// without an NVIDIA driver, or where the driver finds no device. Any other
// CUDA error (a driver too old for the runtime, a device in a bad state)
// throws an Error naming it: a broken GPU machine must not pass for one
// without GPUs.
int cuda_device_count();

}  // namespace tr
