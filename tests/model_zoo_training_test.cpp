// The machinery holds for every model of the zoo, on the CPU at 1/8 width and
// 32x32 input: replay equals eager bit for bit (partial = full = split steps),
// over incomplete last batches and, for the resolution-agnostic ResNets, a
// switch from low to full resolution; N ranks x B/N train like 1 rank x B; the
// loss falls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "framework/graph/models/model_lists.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::run_data;
using testing::state_of;
using testing::view_of;
using testing::zoo_models;
using testing::zoo_run;

TEST(ZooTraining, ModesAreBitIdentical) {
  for (const std::string& model : zoo_models())
    testing::expect_modes_bit_identical(zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 16), 3, 81);
}

// One step of 2 ranks x 8 against 1 rank x 16, and the same step on the batch
// reversed: both within Note [rank-split bounds].
TEST(ZooTraining, RanksMatchOneRankWithTheWholeBatch) {
  for (const std::string& model : zoo_models()) {
    RunOptions o = zoo_run(model, OptimizerKind::Sgd, ExecMode::FullCapture, 16);
    o.shuffle = false;
    o.validate = false;
    o.train.bucket_bytes = 64 << 10;  // several gradient buckets (Note [gradient buckets])
    const auto train = run_data(o, 16, 83);
    const auto flipped = testing::reversed(train);
    Trainer one(o, view_of(train), view_of(train));
    const auto init = state_of(one);
    one.run_epoch();
    const auto ref = state_of(one);
    Trainer back(o, view_of(flipped), view_of(flipped));
    back.run_epoch();
    const testing::UpdateDiff noise = testing::update_diff(init, ref, state_of(back));
    o.train.ranks = 2;
    Trainer two(o, view_of(train), view_of(train));
    two.run_epoch();
    const auto s0 = state_of(two, 0), s1 = state_of(two, 1);
    EXPECT_EQ(testing::differing_tensors(s0, s1, model + ": rank 0 vs rank 1"), 0);
    const testing::UpdateDiff u = testing::update_diff(init, ref, s0);
    std::printf(
        "[ zoo dp ] %s: 2 ranks x 8 vs 1 rank x 16, one step: update differs by %.3g overall, worst tensor "
        "%.3g (%s); 1 rank with its batch reversed: %.3g, worst %.3g\n",
        model.c_str(), u.total, u.worst, u.worst_name.c_str(), noise.total, noise.worst);
    EXPECT_LT(u.total, testing::kRankSplitStepTotal) << model;
    EXPECT_LT(u.worst, testing::kRankSplitStepWorst) << model << " " << u.worst_name;
    EXPECT_LT(noise.total, testing::kRankSplitStepTotal) << model << ", the batch reversed";
    EXPECT_LT(noise.worst, testing::kRankSplitStepWorst) << model << ", the batch reversed";
  }
}

// Note [gradient fan-in]: a tensor read by two layers gets the sum of both
// gradients. y + y trains exactly like a layer that doubles y: doubling is exact
// in floating point, so the two runs agree bit for bit, forward and backward,
// over several steps (a missing or doubled contribution would not).
TEST(ZooTraining, ATensorReadTwiceGetsBothGradients) {
  using namespace layer;
  auto run = [](std::vector<LayerSpec> layers) {
    RunOptions o = testing::small_run("mlp", OptimizerKind::Sgd, ExecMode::FullCapture, 16);
    o.model.name = "fan-in";
    o.model.layers = std::move(layers);
    const auto train = run_data(o, 4 * 16, 87);
    Trainer t(o, view_of(train), view_of(train));
    t.run_epoch();
    return state_of(t);
  };
  const auto twice = run({fc("a", 16, false), add("s", "a", "a", false), relu("r"), fc("fc", 10, true)});
  const auto doubled = run({fc("a", 16, false, 2.f), relu("r"), fc("fc", 10, true)});
  ASSERT_EQ(twice.size(), doubled.size());
  EXPECT_EQ(testing::differing_tensors(doubled, twice, "y + y against 2y"), 0);
  // The check can fail: y alone trains differently.
  const auto once = run({fc("a", 16, false), relu("r"), fc("fc", 10, true)});
  EXPECT_NE(std::memcmp(doubled.at("a.w").data(), once.at("a.w").data(), doubled.at("a.w").size() * 4), 0);
}

TEST(ZooTraining, LossFalls) {
  for (const std::string& model : zoo_models()) {
    RunOptions o = zoo_run(model, OptimizerKind::Sgd, ExecMode::FullCapture, 32);
    o.epochs = 3;
    o.lr.base_lr = 0.05f;
    const auto train = run_data(o, 8 * 32, 85);
    const auto val = run_data(o, 64, 86);
    Trainer t(o, view_of(train), view_of(val));
    const EpochStats first = t.run_epoch();
    t.run_epoch();
    const EpochStats last = t.run_epoch();
    std::printf("[ zoo ] %s: train loss %.4f -> %.4f, accuracy %.3f -> %.3f\n", model.c_str(), first.train_loss,
                last.train_loss, first.train_acc, last.train_acc);
    // Learnable synthetic classes (a class pattern per label): three epochs
    // lower the mean loss by far more than 10 %; a lost gradient or update
    // leaves it where it was, within the noise of the batches' order.
    EXPECT_LT(last.train_loss, first.train_loss * 0.9) << model;
  }
}

}  // namespace
}  // namespace tr
