#include <cuda_profiler_api.h>

#include "framework/core/gpu_check_cuda.h"
#include "harness/lib/bench/profiler_range.h"

namespace tr::bench {

void profiler_start() { TR_GPU_CHECK(cudaProfilerStart()); }
void profiler_stop() { TR_GPU_WARN(cudaProfilerStop()); }

}  // namespace tr::bench
