// Note [memset nodes] (framework/runtime/memset_nodes_cuda.h) on the GPU:
// - a graph's memset nodes (1-, 2- and 4-byte elements, one run or 2D with a
//   pitch, aligned or not) become kernel nodes that write the same bytes, in the
//   same order against each other, with programmatic edges or without;
// - a model trains to the same bits with the rewrite on and off, in every mode.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "framework/runtime/graph_nodes_cuda.h"
#include "framework/runtime/memset_nodes_cuda.h"
#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

constexpr size_t kBytes = 1 << 20;

// Records on `s`: order-dependent memsets over `buf` (a later one overwrites
// part of an earlier one), unaligned and 2D ones; then adds 2- and 4-byte
// memset nodes after them. Returns the graph.
cudaGraph_t memset_graph(cudaStream_t s, char* buf) {
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(buf, 0x11, kBytes, s), cudaSuccess);                // all of it, 16-byte runs
  EXPECT_EQ(cudaMemsetAsync(buf + 3, 0x22, 1000, s), cudaSuccess);              // unaligned, over the first
  EXPECT_EQ(cudaMemset2DAsync(buf + 4096, 256, 0x33, 100, 7, s), cudaSuccess);  // 7 rows of 100 in a pitch of 256
  EXPECT_EQ(cudaMemsetAsync(buf + 65536, 0x44, 4, s), cudaSuccess);             // cuDNN's 4-byte clear
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  // 2- and 4-byte elements (cudaMemsetAsync only makes 1-byte ones), after the rest.
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetNodes(g, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(n);
  EXPECT_EQ(cudaGraphGetNodes(g, nodes.data(), &n), cudaSuccess);
  cudaGraphNode_t last = nullptr;
  for (cudaGraphNode_t node : nodes) {
    size_t out = 0;
    EXPECT_EQ(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &out), cudaSuccess);
    if (out == 0) last = node;
  }
  // A memset node of `elem`-byte elements after `after`.
  auto add = [&](char* dst, unsigned elem, unsigned value, size_t width, size_t height, size_t pitch,
                 cudaGraphNode_t after) {
    cudaMemsetParams p{};
    p.dst = dst;
    p.elementSize = elem;
    p.value = value;
    p.width = width;
    p.height = height;
    p.pitch = pitch;
    cudaGraphNode_t node = nullptr;
    EXPECT_EQ(cudaGraphAddMemsetNode(&node, g, &after, 1, &p), cudaSuccess);
    return node;
  };
  const cudaGraphNode_t n16 = add(buf + 8192, 2, 0xbeef, 333, 1, 0, last);
  add(buf + 8192 + 64, 4, 0xcafef00d, 16, 3, 128, n16);  // inside the 2-byte run: must come after it
  return g;
}

// What memset_graph writes, computed on the host.
std::vector<char> expected_bytes() {
  std::vector<char> b(kBytes, 0x11);
  for (size_t i = 3; i < 1003; ++i) b[i] = 0x22;
  for (size_t r = 0; r < 7; ++r)
    for (size_t i = 0; i < 100; ++i) b[4096 + r * 256 + i] = 0x33;
  for (size_t i = 0; i < 4; ++i) b[65536 + i] = 0x44;
  for (size_t i = 0; i < 333; ++i) {
    const uint16_t v = 0xbeef;
    std::memcpy(&b[8192 + 2 * i], &v, 2);
  }
  for (size_t r = 0; r < 3; ++r)
    for (size_t i = 0; i < 16; ++i) {
      const uint32_t v = 0xcafef00d;
      std::memcpy(&b[8192 + 64 + r * 128 + 4 * i], &v, 4);
    }
  return b;
}

TEST(MemsetNodesGpu, BecomeKernelsThatWriteTheSameBytesInTheSameOrder) {
  SKIP_WITHOUT_GPU();
  char* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, kBytes), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const std::vector<char> want = expected_bytes();
  for (int variant = 0; variant < 3; ++variant) {  // kept, kernels, kernels with programmatic edges
    cudaGraph_t g = memset_graph(s, buf);
    ASSERT_EQ(count_graph_nodes(g, cudaGraphNodeTypeMemset), 6u);
    ASSERT_EQ(count_graph_nodes(g, cudaGraphNodeTypeKernel), 0u);
    if (variant > 0) {
      EXPECT_EQ(replace_memset_nodes(g, variant == 2), 6u);
      EXPECT_EQ(count_graph_nodes(g, cudaGraphNodeTypeMemset), 0u);
      EXPECT_EQ(count_graph_nodes(g, cudaGraphNodeTypeKernel), 6u);
    }
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
    std::vector<char> got(kBytes);
    for (int rep = 0; rep < 3; ++rep) {
      ASSERT_EQ(cudaMemsetAsync(buf, 0x7f, kBytes, s), cudaSuccess);  // poison
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaMemcpyAsync(got.data(), buf, kBytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      size_t differ = 0;
      for (size_t i = 0; i < kBytes; ++i) differ += got[i] != want[i];
      EXPECT_EQ(differ, 0u) << "variant " << variant << ", replay " << rep;
    }
    std::printf("[ memset nodes ] %s: 6 memsets over 1 MiB, the expected bytes in 3 replays\n",
                variant == 0   ? "kept"
                : variant == 1 ? "as kernels"
                               : "as kernels, programmatic edges");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
  }
  cudaStreamDestroy(s);
  cudaFree(buf);
}

TEST(MemsetNodesGpuTraining, ChangesNoBitInAnyMode) {
  SKIP_WITHOUT_GPU();
  for (const char* model : {"cnn", "resnet18"})
    testing::expect_setting_changes_no_bit(
        model, 7, "memset nodes", "eager with memset nodes kept", [](RunOptions& o) { o.algos.memset_kernels = false; },
        [](RunOptions& o) { o.algos.memset_kernels = true; });
}

}  // namespace
}  // namespace tr
