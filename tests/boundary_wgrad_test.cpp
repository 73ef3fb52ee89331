// Note [the boundary layer's weight gradient] (model_builder.cpp) on the CPU:
// which node moves to FIRST_LAYER_BWD and which gradient slots then belong to
// the first cast and all-reduce, and that the move changes no bit of a
// training run, with one rank and with two (gradient buckets, BN sync).
#include <gtest/gtest.h>

#include "framework/graph/model_builder.h"
#include "framework/graph/model_registry.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

CompiledModel build(const std::string& model, bool first, int ranks = 1, int64_t bucket_bytes = 0) {
  TrainConfig t;
  t.amp = true;
  t.ranks = ranks;
  t.bucket_bytes = bucket_bytes;
  t.side_streams = true;
  t.boundary_wgrad_first = first;
  return build_model(model_config(model, 0.125, 32, 3, 10), t, 4);
}

// Labels of graph g's nodes that compute a weight gradient.
std::vector<std::string> weight_grads(const CompiledModel& m, GraphId g) {
  std::vector<std::string> out;
  for (const Node& n : m.cg.nodes(g))
    if (n.op == OpKind::ConvBwdFilter || n.op == OpKind::FcBwdWeight) out.push_back(n.label);
  return out;
}

// The slot range a cast or all-reduce graph's first operand covers.
std::pair<int32_t, int32_t> slots_of(const CompiledModel& m, GraphId g) {
  const auto& nodes = m.cg.nodes(g);
  if (nodes.empty()) return {-1, -1};
  const RangeRef& r = nodes.front().operands.front();
  return {r.slot_lo, r.slot_hi};
}

// The layer after the first group: the cnn's second convolution, VGG's
// second, the first block's first convolution in the ResNets (after the
// stem's BatchNorm, or its max pool in ResNet-50), the mlp's second fully
// connected layer (weight and bias: two slots).
TEST(BoundaryWgrad, TheLayerAfterTheFirstGroupMovesItsWeightGradient) {
  struct Want {
    const char* model;
    const char* moved;
    int slots;  // gradient slots that move with it
  };
  for (const Want& w : {Want{"cnn", "l2.conv.bwd_filter", 1}, Want{"vgg16bn", "g1.1.conv.bwd_filter", 1},
                        Want{"resnet18", "s1.b0.a.conv.bwd_filter", 1}, Want{"resnet50", "s1.b0.a.conv.bwd_filter", 1},
                        Want{"mlp", "l2.fc.bwd_weight", 2}}) {
    SCOPED_TRACE(w.model);
    const CompiledModel on = build(w.model, true), off = build(w.model, false);
    const auto first_on = weight_grads(on, GraphId::FIRST_LAYER_BWD), first_off = weight_grads(off, GraphId::FIRST_LAYER_BWD);
    const auto deep_on = weight_grads(on, GraphId::DEEP_FWD_BWD), deep_off = weight_grads(off, GraphId::DEEP_FWD_BWD);
    EXPECT_EQ(first_on.size(), first_off.size() + 1);
    EXPECT_EQ(deep_on.size() + 1, deep_off.size());
    ASSERT_FALSE(first_on.empty());
    EXPECT_EQ(first_on.front(), w.moved) << "the moved node runs first, beside the first layer's backward";
    for (const std::string& l : deep_on) EXPECT_NE(l, w.moved);
    for (const Node& n : on.cg.nodes(GraphId::FIRST_LAYER_BWD)) {
      if (n.label == w.moved) {
        EXPECT_EQ(n.stream, StreamKind::COMP_2) << "on the side stream";
      }
    }
    // The first cast covers [0, hi) and the deep cast starts at hi, the moved
    // layer's slots further than without the move.
    const auto cf_on = slots_of(on, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32);
    const auto cf_off = slots_of(off, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32);
    const auto cd_on = slots_of(on, GraphId::CAST_DEEP_GRAD_FP16_TO_FP32);
    EXPECT_EQ(cf_on.first, 0);
    EXPECT_EQ(cf_on.second, cf_off.second + w.slots);
    EXPECT_EQ(cd_on.first, cf_on.second);
  }
}

// With several ranks and buckets small enough that the last one holds only the
// moved weight, DEEP_COMM and its cast have nothing left: they are not emitted,
// and FIRST_COMM all-reduces the moved gradient.
TEST(BoundaryWgrad, ALastBucketOfOnlyTheMovedWeightLeavesNoDeepComm) {
  const CompiledModel m = build("cnn", true, 2, 1);
  EXPECT_FALSE(m.cg.has(GraphId::DEEP_COMM));
  EXPECT_FALSE(m.cg.has(GraphId::CAST_DEEP_GRAD_FP16_TO_FP32));
  const auto fc = slots_of(m, GraphId::FIRST_COMM);
  EXPECT_EQ(fc.first, 0);
  EXPECT_EQ(fc.second, slots_of(m, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32).second);
  const CompiledModel big = build("cnn", true, 2, int64_t(25) << 20);
  EXPECT_TRUE(big.cg.has(GraphId::DEEP_COMM));
  EXPECT_EQ(slots_of(big, GraphId::DEEP_COMM).first, fc.second);
}

// The same kernels on the same inputs: moving the node changes no bit of the
// state, in every mode, in f32 and AMP, with one rank and with two (small
// buckets, so some are issued during the backward).
TEST(BoundaryWgrad, ChangesNoBitOfATrainingRun) {
  for (const std::string& model : {std::string("cnn"), std::string("resnet18")}) {
    for (int ranks : {1, 2}) {
      for (bool amp : {false, true}) {
        RunOptions o = testing::zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 16);
        o.train.ranks = ranks;
        o.train.amp = amp;
        o.train.init_loss_scale = amp ? 1024.f : 1.f;
        o.train.bucket_bytes = 4096;
        o.train.side_streams = true;
        const auto train = testing::run_data(o, 3 * 16 - 5, 91);
        o.train.boundary_wgrad_first = false;
        Trainer deep(o, testing::view_of(train), testing::view_of(train));
        deep.run_epoch();
        const auto ref = testing::state_of(deep);
        for (ExecMode mode : {ExecMode::Eager, ExecMode::FullCapture}) {
          o.mode = mode;
          o.train.boundary_wgrad_first = true;
          Trainer moved(o, testing::view_of(train), testing::view_of(train));
          moved.run_epoch();
          const std::string what = cat(model, " ", ranks, " rank(s) ", amp ? "amp " : "f32 ", mode_name(mode));
          const int differ = testing::differing_tensors(ref, testing::state_of(moved), what);
          EXPECT_EQ(differ, 0);
          std::printf("[ boundary ] %s: %zu state tensors, %d differ from the weight gradient in the deep backward\n",
                      what.c_str(), ref.size(), differ);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tr
