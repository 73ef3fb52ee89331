#pragma once
// Creates a rank's DeviceContext for a backend. CUDA contexts come from
// cuda_context_cuda.cpp; a build without CUDA refuses them with a clear error.
#include <memory>

#include "framework/runtime/device_context.h"

namespace tr {

std::unique_ptr<DeviceContext> make_context(Backend b, int rank, int ranks, int device, AlgoChoice algos,
                                            Communicator* comm);
std::unique_ptr<DeviceContext> make_cuda_context(int rank, int ranks, int device, AlgoChoice algos,
                                                 Communicator* comm);
int cuda_device_count();  // 0 without CUDA or without a GPU

}  // namespace tr
