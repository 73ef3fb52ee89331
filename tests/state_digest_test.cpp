// `tr-train --state-hash` (harness/lib/cli/state_digest.h): the digest is FNV-1a
// over the training state's bytes in tensor-id order, the same for two runs of
// the same work, and different when one bit of the state is.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "framework/core/fnv1a.h"
#include "harness/lib/cli/state_digest.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::view_of;

RunOptions digest_run() {
  RunOptions o = testing::small_run("cnn", OptimizerKind::Lars, ExecMode::FullCapture, 16);
  o.validate = false;
  return o;
}

TEST(StateDigest, IsFnv1aOfTheStateAndTheSameForTheSameRun) {
  const auto train = testing::model_data("cnn", 3 * 16, 71);
  Trainer a(digest_run(), view_of(train), view_of(train)), b(digest_run(), view_of(train), view_of(train));
  a.run_epoch();
  b.run_epoch();
  const StateDigest da = state_digest(a), db = state_digest(b);
  EXPECT_EQ(da.hash, db.hash) << da.str() << " vs " << db.str();
  // The same digest written out: every training-state tensor's floats, in id order.
  Fnv1a f;
  int tensors = 0;
  int64_t floats = 0;
  const MemoryPlan& p = a.plans().plan(Variant::TrainBase);
  for (TensorId id = 0; id < a.model().cg.num_tensors(); ++id) {
    if (!is_training_state(a.model().cg.tensor(id).role)) continue;
    const std::vector<float> v = read_tensor(a.model(), p, a.context(0), id);
    f.bytes(v.data(), v.size() * sizeof(float));
    ++tensors;
    floats += int64_t(v.size());
  }
  EXPECT_EQ(da.hash, f.h);
  EXPECT_EQ(da.tensors, tensors);
  EXPECT_EQ(da.floats, floats);
  EXPECT_EQ(size_t(da.tensors), testing::state_of(a).size());
  std::printf("[ state digest ] two runs of the cnn: %s and %s\n", da.str().c_str(), db.str().c_str());
}

TEST(StateDigest, OneBitOfTheStateChangesIt) {
  const auto train = testing::model_data("cnn", 16, 72);
  Trainer t(digest_run(), view_of(train), view_of(train));
  t.run_epoch();
  const StateDigest before = state_digest(t);
  const auto state = testing::state_of(t);
  int changed = 0;
  for (const auto& [name, v] : state) {  // the lowest bit of the last float of each tensor, one at a time
    auto flipped = state;
    uint32_t bits = 0;
    std::memcpy(&bits, &flipped.at(name).back(), 4);
    bits ^= 1u;
    std::memcpy(&flipped.at(name).back(), &bits, 4);
    testing::load_state(t, 0, flipped);
    changed += state_digest(t).hash != before.hash;
  }
  testing::load_state(t, 0, state);
  EXPECT_EQ(state_digest(t).hash, before.hash) << "the state written back";
  EXPECT_EQ(changed, int(state.size())) << "tensors whose one flipped bit left the digest as it was";
}

}  // namespace
}  // namespace tr
