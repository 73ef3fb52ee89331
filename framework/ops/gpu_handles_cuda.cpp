#include "framework/ops/gpu_handles.h"

#include <cuda_runtime.h>

#include "framework/core/gpu_check_cuda.h"

namespace tr {

int query_sm_count(int device) {
  int n = 0;
  TR_GPU_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n > 0 ? n : 1;
}

}  // namespace tr
