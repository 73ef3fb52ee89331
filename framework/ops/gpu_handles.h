#pragma once
// Library handles and scratch a CUDA kernel launcher may use, owned by the
// rank's DeviceContext (framework/runtime/cuda_context_cuda.*) and passed to
// kernels as ExecEnv::gpu. Opaque pointers keep this header free of CUDA includes.
#include <cstddef>

namespace tr {

class ConvPlanCache;  // framework/ops/conv_plans/conv_plan_cache_cuda.h

struct GpuHandles {
  int device = 0;
  void* cudnn = nullptr;      // cudnnHandle_t
  void* cublas = nullptr;     // cublasHandle_t
  void* cublaslt = nullptr;   // cublasLtHandle_t
  void* workspace = nullptr;  // device scratch inside the arena (cuDNN / cuBLASLt workspace)
  size_t workspace_bytes = 0;
  ConvPlanCache* conv_plans = nullptr;  // algorithms chosen once per shape (warm-up), looked up at launch
  bool deterministic = true;            // choose deterministic algorithms only
  // Launch our kernels with programmatic dependencies (Note [programmatic
  // dependent launch], kernel_launch_cuda.h); false: --no-pdl.
  bool programmatic_launch = true;
  // Kernels whose grid fits on the GPU at once add their per-channel partials
  // behind a grid barrier, not in a second kernel, and a BatchNorm's phases
  // run as one kernel (Note [sums finished behind a grid barrier],
  // channel_sums_cuda.h); true: --grid-sync.
  bool grid_sync_sums = false;
  int sm_count = 0;  // streaming multiprocessors of `device`, read once when the handles are made
};

// The device's SM count, asked of the driver (CUDA builds only: gpu_handles_cuda.cpp).
int query_sm_count(int device);

}  // namespace tr
