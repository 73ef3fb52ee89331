#pragma once
// RAII for one stream capture (CaptureGuard; docs/design.md, "Vocabulary") and for the resulting
// executable. If anything throws between begin and end, the guard ends the
// capture and destroys the half-made graph, so the stream is usable again and
// nothing leaks.
#include <cuda_runtime.h>

#include "framework/core/gpu_check_cuda.h"
#include "framework/runtime/captured_graph.h"

namespace tr {

class CaptureGuard {
 public:
  explicit CaptureGuard(cudaStream_t s) : s_(s) {
    // Thread-local mode: other threads (other ranks) may launch freely meanwhile.
    TR_GPU_CHECK(cudaStreamBeginCapture(s_, cudaStreamCaptureModeThreadLocal));
    active_ = true;
  }
  ~CaptureGuard() {
    if (!active_) return;
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(s_, &g);  // fails for an invalidated capture; g may still be set
    if (g) TR_GPU_WARN(cudaGraphDestroy(g));
    cudaGetLastError();  // clear the error of the broken capture
  }
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;

  cudaGraph_t end() {
    active_ = false;
    cudaGraph_t g = nullptr;
    TR_GPU_CHECK(cudaStreamEndCapture(s_, &g));
    return g;
  }

 private:
  cudaStream_t s_;
  bool active_ = false;
};

// One rank's instantiated graph. The graph it came from is kept: a step graph
// clones it as a child node (splice).
class CudaGraphExec final : public NativeExec {
 public:
  // Takes ownership of `graph`, rewrites its memset nodes as kernel nodes
  // (memset_kernels; Note [memset nodes]), counts its kernels and instantiates
  // it; on failure destroys it and throws.
  CudaGraphExec(cudaGraph_t graph, bool memset_kernels, bool programmatic_edges);
  ~CudaGraphExec() override;
  CudaGraphExec(const CudaGraphExec&) = delete;
  CudaGraphExec& operator=(const CudaGraphExec&) = delete;

  void launch(DeviceContext& ctx, StreamKind stream) const override;
  void splice(DeviceContext& ctx, StreamKind stream) const override;
  size_t kernel_nodes() const override { return kernels_; }
  cudaGraphExec_t get() const { return exec_; }
  cudaGraph_t graph() const { return graph_; }  // what was instantiated (for inspection)

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  size_t kernels_ = 0;
};

// Kernel nodes in g, child graphs included.
size_t count_kernel_nodes(cudaGraph_t g);

class CudaContext;

// Captures `nodes` (prepared for ctx) on the stream of `gid` and instantiates
// them. Throws on any failure, leaving no capture open and nothing allocated.
// inject_failure (tests, CaptureFault): throw after the first node, inside the capture.
std::unique_ptr<CudaGraphExec> capture_nodes(const std::vector<PreparedNode>& nodes, CudaContext& ctx, GraphId gid,
                                             bool inject_failure = false);

}  // namespace tr
