#pragma once
// Library handles and scratch a CUDA kernel launcher may use, owned by the
// rank's DeviceContext (framework/runtime/cuda_context_cuda.*) and passed to
// kernels as ExecEnv::gpu. Opaque pointers keep this header free of CUDA includes.
#include <cstddef>

namespace tr {

class ConvPlanCache;  // framework/ops/conv_plan_cache_cuda.h

constexpr int kSumCounters = 1024;
constexpr size_t kSumCounterBytes = kSumCounters * sizeof(unsigned);

struct GpuHandles {
  int device = 0;
  void* cudnn = nullptr;        // cudnnHandle_t
  void* cublas = nullptr;       // cublasHandle_t
  void* cublaslt = nullptr;     // cublasLtHandle_t
  void* workspace = nullptr;    // device scratch inside the arena (cuDNN / cuBLASLt workspace)
  size_t workspace_bytes = 0;
  // kSumCounters zeroed counters for reductions that finish in their last block
  // (cuda_kernel_util_cuda.h, block_sum_store); every kernel leaves them zero.
  // Per stream, apart from the workspace (which cuDNN overwrites).
  unsigned* sum_counters = nullptr;
  ConvPlanCache* conv_plans = nullptr;  // algorithms chosen once per shape (warm-up), looked up at launch
  bool deterministic = true;    // choose deterministic algorithms only
  int sm_count = 0;             // streaming multiprocessors of `device`, read once when the handles are made
};

// The device's SM count, asked of the driver (CUDA builds only: gpu_handles_cuda.cpp).
int query_sm_count(int device);

}  // namespace tr
