// Step graphs (framework/runtime/step_graphs.h): in full capture a training
// step is one launch, built for every training variant x A/B x next-transfer;
// other modes and hooked steps keep the sequence of sub-graphs. That a step
// graph trains exactly like the sequence is checked with the modes
// (cpu_training_test.cpp, gpu_training_gpu_test.cpp).
#include <gtest/gtest.h>

#include "harness/lib/bench/bench_driver.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::small_run;
using testing::view_of;

struct Counted {
  int calls = 0;
  static void hook(DeviceContext&, void* u) { ++static_cast<Counted*>(u)->calls; }
};

LaunchTally tally_of(Trainer& t, int64_t steps) {
  bench::BenchDriver drive(t.session());
  drive.prime(Variant::TrainBase);
  return drive.steps(Variant::TrainBase, steps).rank0_tally;
}

TEST(StepGraphs, FullCaptureLaunchesOneGraphPerStep) {
  const auto train = testing::model_data("cnn", 4 * 32 - 8, 11);  // train_base and train_last
  const auto val = testing::model_data("cnn", 32, 12);
  RunOptions o = small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
  Trainer t(o, view_of(train), view_of(val));
  EXPECT_EQ(t.capture().step_graphs, 2 * 2 * 2);  // 2 variants x A/B x next or not
  const LaunchTally l = tally_of(t, 6);
  EXPECT_EQ(l.graph_launches, 6);
  EXPECT_EQ(l.nodes, 0);
}

TEST(StepGraphs, SplitStepsLaunchEverySubGraph) {
  const auto train = testing::model_data("cnn", 4 * 32, 11);
  const auto val = testing::model_data("cnn", 32, 12);
  RunOptions o = small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
  o.step_graphs = false;
  Trainer t(o, view_of(train), view_of(val));
  EXPECT_EQ(t.capture().step_graphs, 0);
  const LaunchTally l = tally_of(t, 6);
  // fp32, one rank, SGD, a model with BN: FIRST_LAYER_FWD, TRANSFER (the next
  // batch), DEEP_FWD_BWD, FIRST_LAYER_BWD, NAN_CHECK_AND_GRAD_SCALING,
  // OPTIMIZER: six per step. ZERO_GRAD runs once an epoch (Note [gradients
  // are overwritten]); with SGD's fused tail UPDATE_STATS and EMA_UPDATE are
  // empty (Note [optimizer tail]), and with fusion ACCUM_METRICS is (Note [the
  // step's scalars in one kernel]), as are the AMP casts and the collectives'
  // graphs here: none of them is launched.
  EXPECT_EQ(l.graph_launches, 6 * 6);
  EXPECT_EQ(l.nodes, 0);
}

TEST(StepGraphs, OnlyFullCaptureBuildsThem) {
  const auto train = testing::model_data("cnn", 2 * 32, 11);
  const auto val = testing::model_data("cnn", 32, 12);
  for (ExecMode mode : {ExecMode::Eager, ExecMode::PartialCapture}) {
    Trainer t(small_run("mlp", OptimizerKind::AdamW, mode, 32), view_of(train), view_of(val));
    EXPECT_EQ(t.capture().step_graphs, 0) << mode_name(mode);
  }
}

TEST(StepGraphs, AHookBetweenSubGraphsRunsTheSequence) {
  // A hook after the backward graphs (tests inject faults there) cannot run in
  // the middle of one graph: those steps fall back to the sequence, and the
  // hook sees every step.
  const auto train = testing::model_data("cnn", 3 * 32, 11);
  const auto val = testing::model_data("cnn", 32, 12);
  RunOptions o = small_run("mlp", OptimizerKind::AdamW, ExecMode::FullCapture, 32);
  Trainer t(o, view_of(train), view_of(val));
  ASSERT_GT(t.capture().step_graphs, 0);
  Counted c;
  t.set_step_hook(StepHook{&Counted::hook, &c});
  const LaunchTally l = tally_of(t, 4);
  EXPECT_EQ(c.calls, 4);
  // AdamW's tail moves the parameters' EMA (Note [optimizer tail]) and the mlp
  // has no BN, so EMA_UPDATE and UPDATE_STATS are empty, and so is
  // ACCUM_METRICS with fusion: six sub-graphs per step, not the one step graph.
  EXPECT_EQ(l.graph_launches, 4 * 6);
}

}  // namespace
}  // namespace tr
