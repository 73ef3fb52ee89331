// Note [device memory] (device_memory.h) on CUDA.
#include <cuda_runtime.h>

#include "harness/lib/bench/device_memory.h"

namespace tr::bench {

std::optional<int64_t> device_memory_used(int device) {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  size_t free_bytes = 0, total_bytes = 0;
  const bool ok = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  if (!ok) (void)cudaGetLastError();
  (void)cudaSetDevice(current);
  if (!ok) return std::nullopt;
  return int64_t(total_bytes - free_bytes);
}

}  // namespace tr::bench
