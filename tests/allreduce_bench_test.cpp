// The gradient all-reduce measurements behind tr-bench's all-reduce table
// (BenchDriver::grad_allreduce_messages / allreduce, allreduce_table.h), on
// CPU rank threads: the messages cover every gradient once, both timings are
// real, and the bus-bandwidth arithmetic follows nccl-tests.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/lib/bench/allreduce_table.h"
#include "harness/lib/bench/bench_driver.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::small_run;
using testing::view_of;

// fp32 bytes of all parameters, and how many parameter tensors there are.
std::pair<int64_t, int64_t> param_bytes(const Trainer& t) {
  int64_t n = 0, tensors = 0;
  const ComputationGraph& cg = t.model().cg;
  for (TensorId id = 0; id < cg.num_tensors(); ++id)
    if (cg.tensor(id).role == Role::ParamMaster) {
      n += cg.tensor(id).fixed_shape.numel() * 4;
      ++tensors;
    }
  return {n, tensors};
}

TEST(AllreduceBench, MessagesCoverEveryGradientOnce) {
  const auto train = testing::model_data("cnn", 4 * 32, 31);
  const auto val = testing::model_data("cnn", 32, 32);
  for (bool amp : {false, true}) {
    RunOptions o = small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
    o.train.ranks = 2;
    o.train.amp = amp;
    Trainer t(o, view_of(train), view_of(val));
    const auto msgs = bench::BenchDriver(t.session()).grad_allreduce_messages(Variant::TrainBase);
    ASSERT_FALSE(msgs.empty());
    int64_t bytes = 0;
    for (const auto& m : msgs) {
      EXPECT_EQ(m.dtype, DType::F32) << "gradients are all-reduced in fp32 (AMP casts first)";
      bytes += m.bytes();
    }
    // The buckets are whole gradient regions: every gradient plus the padding
    // that aligns each tensor to 256 bytes (sent too, so counted).
    const auto [pb, tensors] = param_bytes(t);
    EXPECT_GE(bytes, pb) << (amp ? "amp" : "fp32");
    EXPECT_LT(bytes - pb, 256 * tensors) << (amp ? "amp" : "fp32");
    EXPECT_TRUE(bench::BenchDriver(t.session()).grad_allreduce_messages(Variant::ValBase).empty());
  }
  // One rank without forced collectives: nothing to all-reduce.
  Trainer one(small_run("mlp", OptimizerKind::AdamW, ExecMode::FullCapture, 32), view_of(train), view_of(val));
  EXPECT_TRUE(bench::BenchDriver(one.session()).grad_allreduce_messages(Variant::TrainBase).empty());
}

// The timed steps are training steps like any other: after priming, 3 timed
// steps and 2 plain ones leave every state tensor bit-identical to 5 plain
// steps (the all-reduce timed alone works on scratch memory, not on the
// gradients), and both timings are positive and finite.
TEST(AllreduceBench, TimesTheAllreduceInsideTheStepAndAlone) {
  const auto train = testing::model_data("cnn", 4 * 32, 33);
  const auto val = testing::model_data("cnn", 32, 34);
  RunOptions o = small_run("mlp", OptimizerKind::AdamW, ExecMode::FullCapture, 32);
  o.train.ranks = 2;
  auto run = [&](bool timed, bench::BenchDriver::AllreduceTiming* at) {
    Trainer t(o, view_of(train), view_of(val));
    bench::BenchDriver drive(t.session());
    drive.prime(Variant::TrainBase);
    if (timed) *at = drive.allreduce(Variant::TrainBase, 3);
    else drive.steps(Variant::TrainBase, 3);
    drive.steps(Variant::TrainBase, 2);
    return testing::state_of(t);
  };
  bench::BenchDriver::AllreduceTiming at;
  const auto timed = run(true, &at), plain = run(false, nullptr);
  EXPECT_EQ(testing::differing_tensors(plain, timed, "timed all-reduce steps vs plain steps"), 0);
  // Measured with a nanosecond clock around real work: 0 is a timing never taken.
  EXPECT_GT(at.in_step_ms, 0);
  EXPECT_GT(at.alone_ms, 0);
  EXPECT_TRUE(std::isfinite(at.in_step_ms) && std::isfinite(at.alone_ms));
}

TEST(AllreduceBench, BusBandwidthFollowsNcclTests) {
  // 1 GB in 10 ms on 8 ranks: algbw 100 GB/s, busbw 100 x 2 x 7/8 = 175 GB/s.
  EXPECT_DOUBLE_EQ(bench::bus_bandwidth_gbps(1e9, 8, 10.0), 175.0);
  EXPECT_DOUBLE_EQ(bench::bus_bandwidth_gbps(1e9, 2, 10.0), 100.0);
  EXPECT_EQ(bench::bus_bandwidth_gbps(1e9, 1, 10.0), 0.0);  // nothing crosses a link
  EXPECT_EQ(bench::bus_bandwidth_gbps(1e9, 4, 0.0), 0.0);
}

}  // namespace
}  // namespace tr
