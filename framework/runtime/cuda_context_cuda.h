#pragma once
// The CUDA rank (DeviceContext; docs/design.md, "Vocabulary"): one cudaMalloc arena sized by the
// memory plan (library workspaces included), pinned staging buffers, streams
// TRANS / COMP_1..3 / UPDATE, events, cuDNN / cuBLAS / cuBLASLt handles and the
// conv plan cache — all created before the first step; RAII throughout.
//
// Note [workspace per stream]: kernels use GpuHandles::workspace as scratch in
// stream order. Streams can run concurrently (LARS groups on COMP_1/2/3), so
// each stream gets its own slice of the arena's workspace: COMP_1 and COMP_2 a
// large one (cuDNN convolutions, cuBLAS), the others a small one (reductions).
#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <memory>

#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"
#include "framework/ops/gpu_handles.h"
#include "framework/runtime/device_context.h"

namespace tr {

class CudaContext final : public DeviceContext {
 public:
  CudaContext(int rank, int ranks, int device, AlgoChoice algos, Communicator* comm);
  ~CudaContext() override;

  Backend backend() const override { return Backend::Cuda; }
  int64_t prepare_workspace(const CompiledModel& m, const std::array<VariantDims, kVariantCount>& dims) override;
  void allocate(const ContextSpec& spec) override;
  void upload(int64_t offset, const void* src, size_t bytes) override;
  void download(int64_t offset, void* dst, size_t bytes) const override;
  void stream_wait(StreamKind waiter, StreamKind on) override;
  void record_transfer_done(int slot) override;
  void wait_transfer_done(int slot) override;
  void synchronize() override;
  void mark_time(StreamKind s, int slot) override;
  double elapsed_ms(int from, int to) const override;

  void make_current() const override;
  cudaStream_t stream(StreamKind s) const { return streams_[static_cast<size_t>(s)]; }
  ConvPlanCache& conv_plans() { return conv_plans_; }
  // How its captured graphs are instantiated (AlgoChoice).
  bool memset_kernels() const { return memset_kernels_; }
  bool programmatic_launch() const { return handles_[0].programmatic_launch; }
  // Device allocations this context made (arena + staging): the test that no
  // allocation happens after planning compares this and cudaMemGetInfo.
  int allocations() const { return allocations_; }

  // Waits for `e` on the host; past spec().watchdog_ms throws an Error naming the
  // rank and what hung (a collective whose peers never came, a kernel that spins)
  // instead of blocking forever.
  void wait_or_throw(cudaEvent_t e, const char* what) const;

  static constexpr int64_t kSmallSlice = int64_t(8) << 20;
  static constexpr int64_t kCublasBytes = int64_t(32) << 20;

 private:
  std::array<cudaStream_t, kStreamKindCount> streams_{};
  std::array<cudaEvent_t, kStreamKindCount> stream_events_{};
  std::array<cudaEvent_t, 2> transfer_done_{};
  std::array<cudaEvent_t, kTimeSlots> time_marks_{};  // timing-enabled, unlike the others
  std::array<GpuHandles, kStreamKindCount> handles_{};
  bool memset_kernels_ = true;
  // Note [a library handle per stream]: cuDNN and cuBLAS keep per-handle state
  // and scratch, so one handle used from two concurrent streams races (seen on
  // the H200: weight gradients on COMP_2 beside data gradients on COMP_1 made
  // runs nondeterministic). Each stream gets its own handles.
  std::array<void*, kStreamKindCount> cudnn_{};
  std::array<void*, kStreamKindCount> cublas_{};
  std::array<void*, kStreamKindCount> cublaslt_{};
  ConvPlanCache conv_plans_;
  int64_t big_slice_ = 0;
  std::array<void*, 2> pinned_{};
  Communicator* comm_ = nullptr;
  int allocations_ = 0;
};

}  // namespace tr
