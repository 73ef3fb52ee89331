// Note [gradient buckets] as a specification, on the CPU's rank threads: the
// deep gradients are cut in backward order, every bucket but the last is
// all-reduced inside the backward graph on UPDATE, and bucketing changes no
// bit of training in any mode.
#include <gtest/gtest.h>

#include <cstdio>

#include "framework/graph/grad_buckets.h"
#include "harness/lib/bench/bench_driver.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::small_run;
using testing::state_of;
using testing::view_of;

constexpr int64_t kSmallBuckets = 16 << 10;  // 16 KiB: the quarter-width cnn's gradients in 5 buckets

TEST(GradBuckets, CutTheDeepSlotsInBackwardOrder) {
  TrainConfig tc;
  const CompiledModel m = build_model(model_config("cnn", 0.25), tc, 8);
  const auto buckets = grad_buckets(m.cg, kSmallBuckets);
  ASSERT_GT(buckets.size(), 4u);
  int32_t first_deep = INT32_MAX, top = 0;
  int64_t total = 0;
  for (TensorId t = 0; t < m.cg.num_tensors(); ++t) {
    const TensorInfo& ti = m.cg.tensor(t);
    if (ti.role != Role::ParamMaster || ti.group == ParamGroup::First) continue;
    first_deep = std::min(first_deep, ti.slot);
    top = std::max(top, ti.slot);
    total += ti.fixed_shape.numel() * 4;
  }
  EXPECT_EQ(buckets.front().slot_hi, top + 1);  // bucket 0 starts with the classifier
  EXPECT_EQ(buckets.back().slot_lo, first_deep);
  int64_t sum = 0;
  for (size_t k = 0; k < buckets.size(); ++k) {
    if (k > 0) {
      EXPECT_EQ(buckets[k].slot_hi, buckets[k - 1].slot_lo);  // contiguous, descending
    }
    if (k + 1 < buckets.size()) {
      EXPECT_GE(buckets[k].bytes, kSmallBuckets);
    }
    sum += buckets[k].bytes;
  }
  EXPECT_EQ(sum, total);
  EXPECT_EQ(grad_buckets(m.cg, 0).size(), 1u);
  EXPECT_EQ(grad_buckets(m.cg, int64_t(25) << 20).size(), 1u);
}

int allreduces_in(const CompiledModel& m, GraphId g, StreamKind* stream = nullptr) {
  int n = 0;
  for (const Node& node : m.cg.nodes(g))
    if (node.kind == Node::Kind::Range && node.range_op == RangeOp::AllReduceSum &&
        node.label.rfind("bucket", 0) == 0) {
      ++n;
      if (stream) *stream = node.stream;
    }
  return n;
}

TEST(GradBuckets, EarlyBucketsAreAllReducedInsideTheBackward) {
  for (bool amp : {false, true}) {
    TrainConfig tc;
    tc.ranks = 2;
    tc.amp = amp;
    tc.bucket_bytes = kSmallBuckets;
    const CompiledModel m = build_model(model_config("cnn", 0.25), tc, 8);
    const size_t n = grad_buckets(m.cg, kSmallBuckets).size();
    StreamKind s = StreamKind::COUNT;
    EXPECT_EQ(allreduces_in(m, GraphId::DEEP_FWD_BWD, &s), int(n) - 1);
    EXPECT_EQ(s, StreamKind::UPDATE);
    EXPECT_EQ(m.cg.nodes(GraphId::DEEP_COMM).size(), 1u);  // the last bucket
    tc.ranks = 1;                                          // no collectives, no buckets
    EXPECT_EQ(allreduces_in(build_model(model_config("cnn", 0.25), tc, 8), GraphId::DEEP_FWD_BWD), 0);
  }
}

// tr-bench's accounting: the buckets inside the backward and those after it
// add up to every gradient byte, each counted once.
TEST(GradBuckets, TheBenchmarkCountsEveryGradientByteOnce) {
  const auto train = testing::model_data("cnn", 2 * 32, 73);
  RunOptions o = small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
  o.train.ranks = 2;
  o.train.bucket_bytes = kSmallBuckets;
  Trainer t(o, view_of(train), view_of(train));
  const bench::BenchDriver drive(t.session());
  const auto early = drive.in_backward_messages(Variant::TrainBase);
  const auto after = drive.grad_allreduce_messages(Variant::TrainBase);  // DEEP_COMM, FIRST_COMM
  int64_t bytes = 0;
  for (const auto& m : early) bytes += m.bytes();
  for (const auto& m : after) bytes += m.bytes();
  const PlanSet& ps = t.plans();
  const int64_t grads = ps.resolve(t.model().cg, RangeRef::region(Role::Grad), ps.plan(Variant::TrainBase)).elems * 4;
  EXPECT_EQ(early.size(), grad_buckets(t.model().cg, kSmallBuckets).size() - 1);
  EXPECT_EQ(after.size(), 2u);
  EXPECT_EQ(bytes, grads);  // f32 gradients: the whole padded region, once
}

RunOptions bucket_run(ExecMode mode, int64_t bucket_bytes, bool amp) {
  RunOptions o = small_run("cnn", OptimizerKind::Sgd, mode, 32);
  o.train.ranks = 2;
  o.train.bucket_bytes = bucket_bytes;
  o.train.bn_sync = BnSync::Running;  // buckets overlap the backward's other collectives not at all
  o.train.amp = amp;
  o.train.init_loss_scale = amp ? 1024.f : 1.f;
  return o;
}

// Each element is summed over the same ranks in the same order whichever
// message carries it: buckets change no bit, in any mode, fp32 or AMP, and
// with synchronised BN (whose collectives then interleave with the buckets).
TEST(GradBuckets, BucketingChangesNothingInAnyMode) {
  const auto train = testing::model_data("cnn", 6 * 32 - 8, 71);  // an incomplete last batch
  const auto val = testing::model_data("cnn", 64, 72);
  for (bool amp : {false, true})
    for (BnSync sync : {BnSync::Running, BnSync::Batch}) {
      RunOptions o = bucket_run(ExecMode::Eager, 0, amp);
      o.train.bn_sync = sync;
      Trainer one_bucket(o, view_of(train), view_of(val));
      one_bucket.run_epoch();
      const auto ref = state_of(one_bucket, 1);
      for (auto [mode, split] : testing::kModeRuns) {
        RunOptions b = bucket_run(mode, kSmallBuckets, amp);
        b.train.bn_sync = sync;
        b.step_graphs = !split;
        Trainer t(b, view_of(train), view_of(val));
        t.run_epoch();
        const int differing = testing::differing_tensors(
            ref, state_of(t, 1),
            cat(mode_name(mode), split ? " split" : "", amp ? " amp" : "", " BN ", bn_sync_name(sync)));
        std::printf("[ buckets ] %zu buckets, %s%s%s, BN sync %s: %d of %zu state tensors differ from one bucket\n",
                    grad_buckets(t.model().cg, kSmallBuckets).size(), mode_name(mode).c_str(), split ? " (split)" : "",
                    amp ? " amp" : "", bn_sync_name(sync).c_str(), differing, ref.size());
      }
    }
}

}  // namespace
}  // namespace tr
