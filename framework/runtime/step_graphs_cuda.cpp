#include "framework/runtime/capture_guard_cuda.h"
#include "framework/runtime/cuda_context_cuda.h"
#include "framework/runtime/step_graphs.h"

namespace tr {

std::unique_ptr<NativeExec> capture_step_cuda(DeviceContext& ctx, const std::function<void()>& body) {
  auto& c = static_cast<CudaContext&>(ctx);
  c.make_current();
  constexpr StreamKind kOrigin = StreamKind::COMP_1;
  cudaGraph_t graph = nullptr;
  {
    CaptureGuard guard(c.stream(kOrigin));
    // Every stream joins the capture at its start (events made before capture),
    // so the step's cross-stream waits stay inside the graph; all join back.
    for (int s = 0; s < kStreamKindCount; ++s) c.stream_wait(StreamKind(s), kOrigin);
    body();
    for (int s = 0; s < kStreamKindCount; ++s) c.stream_wait(kOrigin, StreamKind(s));
    graph = guard.end();
  }
  return std::make_unique<CudaGraphExec>(graph, c.memset_kernels(), c.programmatic_launch());
}

}  // namespace tr
