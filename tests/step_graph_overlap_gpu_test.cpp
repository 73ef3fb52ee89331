// Note [the deep weight gradients finish beside the first layer's backward]
// on the H200: in the cnn's step graph, DEEP_FWD_BWD's kernels sit in the step
// graph itself, a child node after them (FIRST_LAYER_BWD) does not wait for
// the last weight-gradient kernels on COMP_2, and one (the deep gradients'
// cast) waits for all of them. Side streams' kernels carry the least priority
// (Note [stream priorities]), which is how the test tells them apart. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <set>
#include <vector>

#include "framework/runtime/capture_guard_cuda.h"
#include "framework/runtime/graph_nodes_cuda.h"
#include "framework/train/trainer.h"
#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

// The nodes `n` waits for. The edge data must be asked for too: programmatic
// edges carry some, and a query without it fails (cudaErrorLossyQuery).
std::vector<cudaGraphNode_t> dependencies(cudaGraphNode_t n) {
  size_t count = 0;
  EXPECT_EQ(cudaGraphNodeGetDependencies(n, nullptr, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> in(count);
  std::vector<cudaGraphEdgeData> edges(count);
  if (count > 0) {
    EXPECT_EQ(cudaGraphNodeGetDependencies(n, in.data(), edges.data(), &count), cudaSuccess);
  }
  return in;
}

// Every node that `n` waits for, directly or not.
std::set<cudaGraphNode_t> ancestors(cudaGraphNode_t n) {
  std::set<cudaGraphNode_t> seen;
  std::vector<cudaGraphNode_t> todo = dependencies(n);
  while (!todo.empty()) {
    cudaGraphNode_t a = todo.back();
    todo.pop_back();
    if (!seen.insert(a).second) continue;
    for (cudaGraphNode_t b : dependencies(a)) todo.push_back(b);
  }
  return seen;
}

int priority_of(cudaGraphNode_t n) {
  cudaLaunchAttributeValue v{};
  EXPECT_EQ(cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributePriority, &v), cudaSuccess);
  return v.priority;
}

// Kernels of the step graph's own level: [COMP_1's, side streams'].
struct TopKernels {
  std::vector<cudaGraphNode_t> critical, side;
};

TopKernels top_kernels(cudaGraph_t g) {
  int least = 0, greatest = 0;
  EXPECT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  TopKernels k;
  for (cudaGraphNode_t n : graph_nodes(g)) {
    if (node_type(n) != cudaGraphNodeTypeKernel) continue;
    (priority_of(n) == least && least != greatest ? k.side : k.critical).push_back(n);
  }
  return k;
}

cudaGraph_t step_graph(Trainer& t) {
  const NativeExec* e = t.session().steps(0).native(Variant::TrainBase, 0, false);
  const auto* cuda = dynamic_cast<const CudaGraphExec*>(e);
  return cuda ? cuda->graph() : nullptr;
}

TEST(StepGraphOverlapGpu, FirstLayerBackwardDoesNotWaitForTheLastWeightGradients) {
  SKIP_WITHOUT_GPU();
  const auto train = testing::model_data("cnn", 4 * 64, 61);
  RunOptions o = testing::small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 64);
  o.backend = Backend::Cuda;
  o.train.side_streams = true;
  o.train.amp = true;
  o.train.init_loss_scale = 4096.f;
  Trainer t(o, testing::view_of(train), testing::view_of(train));
  cudaGraph_t g = step_graph(t);
  ASSERT_NE(g, nullptr) << "no step graph was built";
  const TopKernels k = top_kernels(g);
  ASSERT_FALSE(k.critical.empty()) << "DEEP_FWD_BWD's kernels are not in the step graph itself";
  ASSERT_FALSE(k.side.empty()) << "no weight gradient on a side stream in the step graph itself";
  // The child nodes after DEEP_FWD_BWD (some of its kernels come before them):
  // FIRST_LAYER_BWD must not wait for every side-stream kernel, and the deep
  // gradients' cast must wait for all of them.
  std::vector<cudaGraphNode_t> all = k.critical;
  all.insert(all.end(), k.side.begin(), k.side.end());
  int after_deep = 0, beside_side = 0, after_side = 0;
  for (cudaGraphNode_t n : graph_nodes(g)) {
    if (node_type(n) != cudaGraphNodeTypeGraph) continue;
    const std::set<cudaGraphNode_t> up = ancestors(n);
    int deep_waited = 0, side_waited = 0;
    for (cudaGraphNode_t c : all) deep_waited += int(up.count(c));
    if (deep_waited == 0) continue;  // before the deep part (the first layer's forward, a transfer)
    ++after_deep;
    for (cudaGraphNode_t s : k.side) side_waited += int(up.count(s));
    if (side_waited < int(k.side.size())) ++beside_side;
    else ++after_side;
  }
  std::printf(
      "[ step graph overlap ] cnn amp: %zu critical-priority and %zu side-stream kernels in the step graph itself; "
      "%d child nodes after them, %d of them beside the last weight gradients, %d after all of them\n",
      k.critical.size(), k.side.size(), after_deep, beside_side, after_side);
  EXPECT_GE(beside_side, 1) << "FIRST_LAYER_BWD waits for every deep weight gradient";
  EXPECT_GE(after_side, 1) << "nothing waits for the deep weight gradients";
}

}  // namespace
}  // namespace tr
