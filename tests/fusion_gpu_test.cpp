// Note [fusion] (framework/graph/fusion.h) on the GPU: the ResNets and vgg16bn
// at reduced width, and the cnn, train to the same bits with fusion on and off in f32
// (printed: BatchNorm + residual, fan-in + ReluBwd, ReluBwd + reduce, pool +
// statistics, BatchNorm + pool pairs), in
// eager and full-capture mode, over an epoch with an incomplete last batch. With AMP the
// fused BatchNorm + residual rounds once instead of twice, so one step's update
// differs by rounding, and is no further from the f32 update than the unfused
// AMP update is. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/fusion_test_util.h"
#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::run_data;
using testing::state_of;
using testing::view_of;
using testing::zoo_run;

RunOptions gpu_run(const std::string& model, bool amp) {
  RunOptions o = zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 32, 0.25);
  o.backend = Backend::Cuda;
  o.train.amp = amp;
  if (amp) o.train.init_loss_scale = 1024.f;
  return o;
}

TEST(FusionGpu, ChangesNoBitInF32) {
  SKIP_WITHOUT_GPU();
  for (const std::string& model :
       {std::string("resnet18"), std::string("resnet50"), std::string("cnn"), std::string("vgg16bn")}) {
    RunOptions o = gpu_run(model, false);
    const auto train = run_data(o, 5 * 32 - 8, 97);
    o.train.fusion = false;
    Trainer plain(o, view_of(train), view_of(train));
    plain.run_epoch();
    const auto ref = state_of(plain);
    for (ExecMode mode : {ExecMode::Eager, ExecMode::FullCapture}) {
      o.mode = mode;
      o.train.fusion = true;
      Trainer fused(o, view_of(train), view_of(train));
      fused.run_epoch();
      const int differing = testing::differing_tensors(ref, state_of(fused), cat(model, " fused, ", mode_name(mode)));
      const FusionCounts& n = fused.model().fusions;
      std::printf(
          "[ fusion gpu ] %s f32 %s: %d+%d+%d+%d+%d pairs and %d heads fused, %d of %zu state tensors "
          "differ from unfused\n",
          model.c_str(), mode_name(mode).c_str(), n.bn_add, n.add_relu_bwd, n.relu_grad_reduce, n.pool_stats, n.bn_pool,
          n.head, differing, ref.size());
      EXPECT_GT(n.bn_add + n.pool_stats + n.bn_pool, 0);
    }
  }
}

// The pool fusions round nothing differently (the statistics are BnStats's
// own sums, y is rounded to f16 before the max as when stored), and a
// BatchNorm's phases in one node run the kernels apart or, with --grid-sync,
// one cooperative kernel of the same arithmetic (Note [one kernel per
// BatchNorm]): so with AMP too the cnn and vgg16bn train to the same bits with
// fusion on and off, with and without grid sync.
TEST(FusionGpu, PoolFusionsChangeNoBitWithAmp) {
  SKIP_WITHOUT_GPU();
  for (const std::string& model : {std::string("cnn"), std::string("vgg16bn")}) {
    RunOptions o = gpu_run(model, true);
    const auto train = run_data(o, 3 * 32 - 8, 96);
    o.train.fusion = false;
    Trainer plain(o, view_of(train), view_of(train));
    plain.run_epoch();
    for (bool grid_sync : {false, true}) {
      o.mode = ExecMode::FullCapture;
      o.train.fusion = true;
      o.algos.grid_sync = grid_sync;
      Trainer fused(o, view_of(train), view_of(train));
      fused.run_epoch();
      const FusionCounts& n = fused.model().fusions;
      const int differing = testing::differing_tensors(state_of(plain), state_of(fused), cat(model, " amp fused"));
      std::printf(
          "[ fusion gpu ] %s amp, full capture fused%s vs eager unfused: %d+%d pairs, %d heads, %d+%d+%d "
          "BatchNorm phases fused, %d differ\n",
          model.c_str(), grid_sync ? " with grid sync" : "", n.pool_stats, n.bn_pool, n.head, n.stats_apply, n.pool_bn,
          n.bwd_phases, differing);
      EXPECT_GT(n.pool_stats + n.bn_pool, 0);
      EXPECT_GT(n.stats_apply + n.bwd_phases, 0);
    }
  }
}

// As Fusion.ChangesAmpUpdatesOnlyByRounding, on the GPU (resnet18 only:
// expect_amp_fusion_no_worse says why).
TEST(FusionGpu, ChangesAmpUpdatesOnlyByRounding) {
  SKIP_WITHOUT_GPU();
  RunOptions o = gpu_run("resnet18", true);
  o.mode = ExecMode::FullCapture;
  testing::expect_amp_fusion_no_worse(testing::one_step_amp_vs_f32(o, 32, 98), "resnet18");
}

}  // namespace
}  // namespace tr
