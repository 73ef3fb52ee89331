#pragma once
// Engine plans for cuDNN convolutions: one engine config of cuDNN's backend
// API built into an execution plan for a ConvKey, and run on a handle.
//
// Note [engine plans for convolutions]
// The legacy API (cudnnConvolutionForward & co.) picks an algorithm; cuDNN
// then runs one engine with the tile and split settings its heuristic
// prefers. The backend API names engine configs: the same engines with other
// settings, some faster at a given shape and some without the workspace clear
// before the kernel. Only timing tells which (the H200 lab log's "cuDNN's
// engines against the legacy plan", docs/results.md, "Earlier measurements": the cnn's 3x3x256 data gradient at batch
// 256 takes 10.1 us against the legacy plan's 15.5; the 14x14 data gradients run
// in one kernel instead of a clear and a kernel). So engine plans serve
// --cudnn-benchmark only (ConvPlanCache::Options::benchmark, Note [timed
// convolution plans] in conv_plan_cache_cuda.h): the default keeps the
// heuristic's legacy plan, the same in every process.
// Candidates: heuristic mode A's configs in its order; only deterministic
// ones when determinism is asked for, none compiled at run time (each would
// take a compilation), none on tensor cores for f32 keys (that would be TF32),
// none asking for more workspace than the limit.
// Host-only header.
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"
#include "framework/ops/conv_plans/cudnn_graph_cuda.h"

namespace tr {

// One engine config's execution plan for a key, with the descriptors it refers to.
// Members in the order they may be destroyed last: the plan goes first.
struct ConvEnginePlan {
  // The operation graph (last) and the tensors, convolution and operation it
  // refers to; shared by the candidates of one key.
  std::shared_ptr<const std::vector<cudnn_graph::Desc>> graph;
  std::vector<cudnn_graph::Desc> config;  // the engine config (one)
  cudnn_graph::Desc plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  int64_t engine = -1;  // cuDNN's global engine index
  int candidate = -1;   // its position among the key's candidates (conv_engine_plans)
  size_t workspace_bytes = 0;
};

// The operation graph of the convolution `key` (direction, shapes, window,
// stride, padding, dtype; f32 accumulation) on handle h. `keep` receives the
// descriptors the graph refers to, which must outlive it.
cudnn_graph::Desc conv_operation_graph(cudnnHandle_t h, const ConvKey& key, std::vector<cudnn_graph::Desc>& keep);

// Execution plans of the first `most` candidates (Note [engine plans for
// convolutions]) for `key` on h; empty where no engine takes the graph.
std::vector<std::shared_ptr<const ConvEnginePlan>> conv_engine_plans(cudnnHandle_t h, const ConvKey& key,
                                                                     bool deterministic, size_t workspace_limit,
                                                                     int most);

// Runs an execution plan built from conv_operation_graph's graph (a
// ConvEnginePlan's `plan`) on h's stream over x[N,H,W,C], w[K,R,R,C],
// y[N,Ho,Wo,K]: the direction's output (y, x or w) is written, the other two
// are read.
cudnnStatus_t run_conv_execution_plan(cudnnHandle_t h, const cudnn_graph::Desc& plan, void* x, void* w, void* y,
                                      void* workspace);

}  // namespace tr
