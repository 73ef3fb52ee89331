#pragma once
// How every kernel of framework/ops is launched (*_cuda.cu only).
//
// Note [programmatic dependent launch]
// Inside a graph, a kernel that depends on the one before it on its stream
// normally starts only after that kernel has finished and the driver has then
// scheduled the new grid: between short kernels the GPU idles 1-3 us per edge.
// Hopper can launch the dependent grid early (CUDA "programmatic dependent
// launch"): with the launch attribute ProgrammaticStreamSerialization, and in a
// captured graph a programmatic edge, the next grid's blocks are placed on the
// SMs while the previous grid still runs, and they wait in
// `griddepcontrol.wait` until it has finished and its writes are visible.
//
// The rules that keep this exact (same bits, no race):
// - Every __global__ function here starts with grid_dependency_begin(): it
//   waits for the grids this one depends on before touching any memory, reads
//   and writes alike (a later kernel may reuse the buffer an earlier one reads:
//   memory_plan.cpp), then allows the next grid to be launched early. The wait
//   covers whole grids, so waiting is transitive along the stream.
// - Only launch_kernel() below launches them, and only it sets the attribute.
//   Kernels of cuDNN, cuBLAS and NCCL are launched without it and keep full
//   dependencies on both sides.
// - The early launch is only scheduling: the dependent grid starts computing
//   after the wait, so results do not depend on it (the GPU equivalence tests
//   compare modes bit for bit with it on).
// GpuHandles::programmatic_launch (--no-pdl turns it off) keeps the ordinary
// launch available, so its gain is measured in the same run.
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "framework/core/gpu_check_cuda.h"
#include "framework/ops/gpu_handles.h"
#include "framework/ops/op_call.h"

namespace tr::cuda {

// First statement of every kernel in framework/ops (Note [programmatic dependent
// launch]). Without a programmatic dependency both instructions are no-ops.
__device__ __forceinline__ void grid_dependency_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Grid shape of one launch.
struct LaunchShape {
  LaunchShape(dim3 g, dim3 b, size_t dynamic_smem = 0) : grid(g), block(b), smem(dynamic_smem) {}
  dim3 grid;
  dim3 block;
  size_t smem = 0;           // dynamic shared memory, bytes
  unsigned cluster_x = 0;    // > 0: thread-block clusters of this many blocks along x
  bool cooperative = false;  // every block resident at once: grid barriers allowed (fits_at_once first)
};

// Whether a cooperative launch of kernel in `shape` fits: every block resident
// on the device's `sms` SMs at once, by the occupancy the driver reports for
// the kernel's registers and shared memory on the current device (asked once
// per device, kernel, block and shared-memory size: a host may hold GPUs of
// different kinds, and blocks per SM depend on the SM's kind).
template <typename... Params>
bool fits_at_once(void (*kernel)(Params...), const LaunchShape& shape, int sms) {
  static std::mutex mu;
  // (device, kernel, threads, smem) -> blocks per SM
  static std::map<std::tuple<int, const void*, unsigned, size_t>, int> per_sm;
  const unsigned threads = shape.block.x * shape.block.y * shape.block.z;
  int device = 0;
  TR_GPU_CHECK(cudaGetDevice(&device));
  int blocks = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto key = std::make_tuple(device, reinterpret_cast<const void*>(kernel), threads, shape.smem);
    auto it = per_sm.find(key);
    if (it == per_sm.end()) {
      TR_GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, int(threads), shape.smem));
      it = per_sm.emplace(key, blocks).first;
    }
    blocks = it->second;
  }
  return uint64_t(shape.grid.x) * shape.grid.y * shape.grid.z <= uint64_t(blocks) * uint64_t(sms);
}

// Whether the rank launches its kernels with programmatic dependencies.
inline bool programmatic_launch(const ExecEnv* env) {
  return env != nullptr && env->gpu != nullptr && static_cast<const GpuHandles*>(env->gpu)->programmatic_launch;
}

// Launches kernel<<<shape>>>(args...) on env's stream, counting it (Note [launch
// accounting]).
template <typename... Params, typename... Args>
void launch_kernel(const ExecEnv* env, const LaunchShape& shape, void (*kernel)(Params...), Args&&... args) {
  TR_CHECK(env != nullptr, "kernel launch: no ExecEnv");
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = shape.grid;
  cfg.blockDim = shape.block;
  cfg.dynamicSmemBytes = shape.smem;
  cfg.stream = static_cast<cudaStream_t>(env->stream);
  cudaLaunchAttribute attrs[3] = {};
  unsigned n = 0;
  if (programmatic_launch(env)) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (shape.cluster_x > 0) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n++].val.clusterDim = {shape.cluster_x, 1, 1};
  }
  if (shape.cooperative) {
    attrs[n].id = cudaLaunchAttributeCooperative;
    attrs[n++].val.cooperative = 1;
  }
  cfg.attrs = n > 0 ? attrs : nullptr;
  cfg.numAttrs = n;
  TR_GPU_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
  TR_LAUNCH_CHECK();
}

}  // namespace tr::cuda
