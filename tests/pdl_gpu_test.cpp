// Note [programmatic dependent launch] (framework/ops/kernels/kernel_launch_cuda.h) on
// the GPU:
// - captured back to back, our kernels are joined by programmatic edges when
//   the handles ask for it and by ordinary edges when they do not, and the
//   replays give the same bits either way;
// - a whole model trains to the same bits with it on and off, in every mode,
//   over an epoch with an incomplete last batch.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/gpu_test_util.h"
#include "tests/ops_gpu_fixture.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using gpu_test::DevTensor;
using gpu_test::F16;
using gpu_test::F32;
using test::HostTensor;

struct EdgeCount {
  int programmatic = 0;
  int other = 0;
};

EdgeCount edge_types(cudaGraph_t g) {
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> from(n), to(n);
  std::vector<cudaGraphEdgeData> data(n);
  EXPECT_EQ(cudaGraphGetEdges(g, from.data(), to.data(), data.data(), &n), cudaSuccess);
  EdgeCount c;
  for (const cudaGraphEdgeData& d : data) {
    if (d.type == cudaGraphDependencyTypeProgrammatic) ++c.programmatic;
    else ++c.other;
  }
  return c;
}

class PdlGpu : public gpu_test::OpsGpu {};

TEST_F(PdlGpu, CapturedKernelsGetProgrammaticEdgesAndTheSameBits) {
  Rng rng(21);
  const int64_t N = 64, H = 8, W = 8, C = 64;
  VariantDims v{N, N, H, W};
  OpAttrs a;
  const HostTensor hx = gpu_test::rnd(F16, {N, H, W, C}, rng);
  const HostTensor hg = gpu_test::rnd(F16, {C}, rng, 0.5, 1.5), hb = gpu_test::rnd(F16, {C}, rng, -0.5, 0.5);
  DevTensor x(hx), gamma(hg), beta(hb);
  DevTensor sums(HostTensor(F32, {2, C})), y(HostTensor(F16, {N, H, W, C})), z(HostTensor(F16, {N, H, W, C}));
  DevTensor batch(HostTensor(F32, {2, C})), affine(HostTensor(F32, {2, C}));
  // BN statistics (partials + finalize), BN-apply + ReLU, ReLU: four kernels in a chain.
  auto chain = [&] {
    call(bn_stats_cuda, {x.ref()}, {sums.ref()}, a, v);
    call(bn_relu_apply_cuda, {x.ref(), sums.ref(), gamma.ref(), beta.ref()}, {y.ref(), batch.ref(), affine.ref()}, a,
         v);
    call(relu_fwd_cuda, {y.ref()}, {z.ref()}, a, v);
  };
  std::vector<HostTensor> results[2];
  for (bool pdl : {false, true}) {
    gh_.programmatic_launch = pdl;
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    chain();
    ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
    const EdgeCount e = edge_types(graph);
    std::printf("[ pdl gpu ] programmatic launch %s: %d programmatic and %d ordinary edges\n", pdl ? "on" : "off",
                e.programmatic, e.other);
    // Four kernels in a chain (the statistics' partials and their finalize, the
    // apply, the ReLU): three edges, all programmatic or all ordinary.
    EXPECT_EQ(e.programmatic, pdl ? 3 : 0);
    EXPECT_EQ(e.other, pdl ? 0 : 3);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (DevTensor* d : {&sums, &y, &z, &batch, &affine}) d->poison();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int rep = 0; rep < 3; ++rep) ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    for (DevTensor* d : {&sums, &y, &z, &batch, &affine}) results[pdl].push_back(d->download());
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_LT(results[1][i].first_non_finite(), 0) << "output " << i;
    EXPECT_TRUE(test::bitwise_equal(results[0][i], results[1][i])) << "output " << i;
  }
}

TEST(PdlGpuTraining, ChangesNoBitInAnyMode) {
  SKIP_WITHOUT_GPU();
  for (const char* model : {"resnet18", "cnn"})
    testing::expect_setting_changes_no_bit(
        model, 99, "pdl gpu", "eager without programmatic launch",
        [](RunOptions& o) { o.algos.programmatic_launch = false; },
        [](RunOptions& o) { o.algos.programmatic_launch = true; });
}

}  // namespace
}  // namespace tr
