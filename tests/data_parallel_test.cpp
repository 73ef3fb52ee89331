// Data parallelism on the CPU (rank threads + shared-memory all-reduce):
// N ranks x B/N = 1 rank x B, modes stay equivalent with several ranks, a
// mismatched collective sequence is refused, and a hung rank trips the watchdog.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "framework/runtime/collective_check.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::small_run;
using testing::state_of;
using testing::view_of;

RunOptions dp_run(int ranks, ExecMode mode) {
  RunOptions o = small_run("cnn", OptimizerKind::Lars, mode, 32);
  o.train.ranks = ranks;
  o.epochs = 1;
  o.validate = true;
  return o;
}

// 20 steps of N ranks x 32/N against 1 rank x 32, each from the same state
// (Note [stepwise rank equivalence]), each within Note [rank-split bounds].
// The training loss is a mean of per-sample values that are the same bits in
// both (the forward is batch-invariant), added in another order: 1e-5 is
// 100 f32 roundings of the mean.
TEST(DataParallel, RanksMatchOneRankWithTheWholeBatch) {
  const auto train = testing::model_data("cnn", 20 * 32, 21);
  auto window = testing::model_data("cnn", 32, 21);
  const auto run = [](int ranks) { return testing::stepwise_run(dp_run(ranks, ExecMode::FullCapture), 20); };
  for (int ranks : {2, 4}) {
    Trainer one(run(1), view_of(window), view_of(window));
    Trainer t(run(ranks), view_of(window), view_of(window));
    ASSERT_EQ(t.steps_per_epoch(), 1);
    const testing::StepwiseDiff d = testing::compare_stepwise(one, t, window, train, 20);
    for (int r = 1; r < ranks; ++r)  // every rank holds bit-identical state
      EXPECT_EQ(testing::differing_tensors(state_of(t, 0), state_of(t, r), cat("rank 0 vs rank ", r)), 0);
    std::printf(
        "[ dp ] %d ranks x %d vs 1 rank x 32, 20 steps from the same state: updates differ by at most %.3g "
        "overall (step %d), worst tensor %.3g (%s, step %d); training loss within %.3g\n",
        ranks, 32 / ranks, d.total, d.total_step, d.worst, d.worst_name.c_str(), d.worst_step, d.loss_rel);
    EXPECT_LT(d.total, testing::kRankSplitStepTotal) << "step " << d.total_step;
    EXPECT_LT(d.worst, testing::kRankSplitStepWorst) << d.worst_name << ", step " << d.worst_step;
    EXPECT_LT(d.loss_rel, 1e-5);
  }
}

// One step of 4 ranks x 8 against 1 rank x 32: Note [rank-split bounds].
TEST(DataParallel, OneStepMatchesOneRank) {
  const auto train = testing::model_data("cnn", 32, 31);
  const auto val = testing::model_data("cnn", 32, 32);
  Trainer one(dp_run(1, ExecMode::FullCapture), view_of(train), view_of(val));
  const auto init = state_of(one);
  one.run_epoch();
  const auto ref = state_of(one);
  Trainer four(dp_run(4, ExecMode::FullCapture), view_of(train), view_of(val));
  four.run_epoch();
  const testing::UpdateDiff u = testing::update_diff(init, ref, state_of(four));
  std::printf("[ dp ] 4 ranks x 8 vs 1 rank x 32, one step: update differs by %.3g overall, worst tensor %.3g (%s)\n",
              u.total, u.worst, u.worst_name.c_str());
  EXPECT_LT(u.total, testing::kRankSplitStepTotal);
  EXPECT_LT(u.worst, testing::kRankSplitStepWorst) << u.worst_name;
}

TEST(DataParallel, ModesStayBitIdenticalWithSeveralRanks) {
  const auto train = testing::model_data("cnn", 10 * 32 - 8, 23);  // incomplete last batch
  const auto val = testing::model_data("cnn", 64, 24);
  for (BnSync sync : {BnSync::Batch, BnSync::Running}) {
    std::map<std::string, std::vector<float>> ref;
    for (ExecMode mode : {ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture}) {
      RunOptions o = dp_run(2, mode);
      o.train.bn_sync = sync;
      Trainer t(o, view_of(train), view_of(val));
      t.run_epoch();
      const auto s = state_of(t, 1);
      if (mode == ExecMode::Eager) {
        ref = s;
        continue;
      }
      testing::differing_tensors(ref, s, cat("eager vs ", mode_name(mode), ", BN sync ", bn_sync_name(sync)));
    }
  }
}

// Note [one collective at a time]: only where both graphs hold collectives
// does the first layer's backward wait for the deep all-reduce.
TEST(DataParallel, FirstLayerBackwardWaitsForTheDeepAllreduceOnlyWhenBothHoldCollectives) {
  auto waits = [](const char* model, int ranks, bool force) {
    const ModelConfig mc = model_config(model, 0.25);
    TrainConfig tc;
    tc.ranks = ranks;
    tc.force_collectives = force;
    return first_layer_bwd_waits_for_deep_comm(build_model(mc, tc, 32).cg);
  };
  EXPECT_TRUE(waits("cnn", 2, false));  // synchronised BN in the first layer
  EXPECT_TRUE(waits("cnn", 1, true));
  EXPECT_FALSE(waits("cnn", 1, false));  // no collectives at all
  EXPECT_FALSE(waits("mlp", 2, false));  // no BatchNorm: the overlap stays
}

TEST(DataParallel, MismatchedCollectiveSequenceIsRefused) {
  std::vector<CollectiveSig> a = {{GraphId::DEEP_FWD_BWD, RangeOp::AllReduceSum, 128, DType::F32},
                                  {GraphId::DEEP_COMM, RangeOp::AllReduceSum, 4096, DType::F32},
                                  {GraphId::FIRST_COMM, RangeOp::AllReduceSum, 512, DType::F32}};
  EXPECT_NO_THROW(verify_collective_sequences({a, a, a}));
  auto b = a;
  b[1].elems = 4095;
  try {
    verify_collective_sequences({a, a, b, a});
    FAIL() << "mismatch not caught";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 2"), std::string::npos) << m;
    EXPECT_NE(m.find("collective #1"), std::string::npos) << m;
    EXPECT_NE(m.find("4095"), std::string::npos) << m;
  }
  auto c = a;
  c.pop_back();
  EXPECT_THROW(verify_collective_sequences({a, c}), Error);
  auto d = a;
  d[0].dtype = DType::F16;
  EXPECT_THROW(verify_collective_sequences({a, d}), Error);
}

TEST(DataParallel, CollectiveHashIsRecordedAtCapture) {
  const auto train = testing::model_data("cnn", 64, 25);
  const auto val = testing::model_data("cnn", 32, 26);
  Trainer t(dp_run(2, ExecMode::FullCapture), view_of(train), view_of(val));
  EXPECT_GT(t.capture().collective, 0);
  EXPECT_NE(t.capture().collective_hash, 0u);
}

TEST(DataParallel, WatchdogNamesTheHungRank) {
  const auto train = testing::model_data("cnn", 4 * 32, 27);
  const auto val = testing::model_data("cnn", 32, 28);
  RunOptions o = dp_run(2, ExecMode::FullCapture);
  // The timeout is far above the skew between two healthy ranks, which under
  // ThreadSanitizer on two cores has reached 300 ms (then the watchdog named
  // the slow rank 0, not the stalled rank 1); the stall is three times the timeout.
  o.watchdog_ms = 2000;
  Trainer t(o, view_of(train), view_of(val));
  // Rank 1 stalls after its backward; rank 0 waits for it in the next all-reduce.
  t.set_step_hook(StepHook{[](DeviceContext& ctx, void*) {
                             if (ctx.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(6000));
                           },
                           nullptr});
  try {
    t.run_epoch();
    FAIL() << "the watchdog did not fire";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("watchdog"), std::string::npos) << m;
    EXPECT_NE(m.find("rank(s) 1 did not reach"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tr

namespace tr {
namespace {

// Collectives forced with one rank (what a single GPU runs to keep NCCL inside
// its graphs): the shared-memory all-reduce over one rank changes nothing.
TEST(DataParallel, ForcedCollectivesWithOneRankChangeNothing) {
  const auto train = testing::model_data("cnn", 10 * 32 - 8, 61);  // a last batch of its own
  const auto val = testing::model_data("cnn", 64, 62);
  for (BnSync sync : {BnSync::Batch, BnSync::Running}) {
    std::map<std::string, std::vector<float>> s[2];
    int collective = 0;
    for (int forced = 0; forced < 2; ++forced) {
      RunOptions o = dp_run(1, ExecMode::FullCapture);
      o.train.force_collectives = forced == 1;
      o.train.bn_sync = sync;
      Trainer t(o, view_of(train), view_of(val));
      if (forced) collective = t.capture().collective;
      t.run_epoch();
      s[forced] = state_of(t);
    }
    std::printf("[ dp ] one rank, collectives forced, BN sync %s: %d captured graphs hold all-reduces\n",
                bn_sync_name(sync).c_str(), collective);
    EXPECT_EQ(collective, testing::kCnnCollectiveGraphs.at(sync));
    for (const auto& [name, v] : s[0]) EXPECT_EQ(0, std::memcmp(v.data(), s[1].at(name).data(), v.size() * 4)) << name;
  }
}

}  // namespace
}  // namespace tr
