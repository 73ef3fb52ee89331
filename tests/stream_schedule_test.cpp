// Note [streams inside a graph] on the CPU: which cross-stream waits the
// StreamSchedule issues for a backward graph with weight gradients on a side
// stream, and the memory plan keeping a side node's tensors alive until the join.
// (On the GPU the same schedule orders eager launches and captures.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/graph/memory_plan.h"
#include "framework/graph/model_builder.h"
#include "framework/runtime/cpu_context.h"
#include "framework/runtime/graph_runner.h"
#include "framework/runtime/stream_schedule.h"

namespace tr {
namespace {

// A CPU context that records every cross-stream wait instead of ignoring it.
class RecordingContext final : public CpuContext {
 public:
  RecordingContext() : CpuContext(0, 1) {}
  void stream_wait(StreamKind waiter, StreamKind on) override {
    waits.push_back(std::string(stream_name(waiter)) + "<-" + std::string(stream_name(on)));
  }
  std::vector<std::string> waits;
};

struct Fixture {
  CompiledModel m;
  PlanSet plans;
  RecordingContext ctx;
  explicit Fixture(bool side_streams = true) {
    ModelConfig mc = model_config("cnn", 0.25);
    TrainConfig tc;
    tc.side_streams = side_streams;
    tc.optimizer = OptimizerKind::Sgd;
    m = build_model(mc, tc, 16);
    std::array<VariantDims, kVariantCount> d{};
    d[vidx(Variant::TrainBase)] = {16, 16, 28, 28};
    plans = plan_memory(m, d, 0);
    ContextSpec s;
    s.arena_bytes = plans.arena_bytes;
    s.scalars_offset = plans.scalars_offset;
    s.staging_image_bytes = 16 * 28 * 28;
    s.staging_label_count = 16;
    ctx.allocate(s);
  }
};

TEST(StreamSchedule, SideNodesForkAfterOriginWorkAndJoinAtTheEnd) {
  Fixture f;
  const GraphId g = GraphId::DEEP_FWD_BWD;
  StreamSchedule sched(f.ctx, stream_for(g));
  int side_nodes = 0, forks_expected = 0;
  bool origin_since_side = true;
  for (const Node& n : f.m.cg.nodes(g)) {
    const StreamKind s = node_stream(n, g);
    const PreparedNode p = prepare_node(n, f.m.cg, f.plans, f.plans.plan(Variant::TrainBase), f.ctx, s);
    if (s != stream_for(g)) {
      ++side_nodes;
      if (origin_since_side) ++forks_expected;  // new origin work since the side stream last waited
      origin_since_side = false;
    } else {
      origin_since_side = true;
    }
    sched.before(p, s);
    sched.after(p, s);
  }
  sched.join();
  // cnn: 7 convolution weight gradients and one fc weight gradient on COMP_2.
  EXPECT_EQ(side_nodes, 7);  // the first conv's filter gradient lives in FIRST_LAYER_BWD
  ASSERT_FALSE(f.ctx.waits.empty());
  int forks = 0, joins = 0;
  for (const auto& w : f.ctx.waits) {
    forks += w == "COMP_2<-COMP_1";
    joins += w == "COMP_1<-COMP_2";
  }
  EXPECT_EQ(forks, forks_expected);
  EXPECT_EQ(joins, 1) << "no origin node reads a weight gradient; one join at the end";
  EXPECT_EQ(f.ctx.waits.back(), "COMP_1<-COMP_2");
}

TEST(StreamSchedule, OriginReadingASideOutputWaitsForIt) {
  Fixture f;
  const GraphId g = GraphId::DEEP_FWD_BWD;
  StreamSchedule sched(f.ctx, stream_for(g));
  // A side node (a weight gradient), then an origin node that reads what it wrote.
  const Node* side = nullptr;
  for (const Node& n : f.m.cg.nodes(g))
    if (n.stream == StreamKind::COMP_2) side = &n;
  ASSERT_NE(side, nullptr);
  const MemoryPlan& plan = f.plans.plan(Variant::TrainBase);
  const PreparedNode ps = prepare_node(*side, f.m.cg, f.plans, plan, f.ctx, StreamKind::COMP_2);
  Node reader = compute(OpKind::ReluFwd, {side->out[0]}, {side->in[0]}, "reads the gradient");
  const PreparedNode pr = prepare_node(reader, f.m.cg, f.plans, plan, f.ctx, StreamKind::COMP_1);
  sched.before(ps, StreamKind::COMP_2);
  sched.after(ps, StreamKind::COMP_2);
  sched.before(pr, StreamKind::COMP_1);
  ASSERT_EQ(f.ctx.waits.size(), 2u);
  EXPECT_EQ(f.ctx.waits[0], "COMP_2<-COMP_1");
  EXPECT_EQ(f.ctx.waits[1], "COMP_1<-COMP_2");
}

TEST(StreamSchedule, JoinExceptLeavesTheWeightGradientsStreamOpen) {
  Fixture f;
  const GraphId g = GraphId::DEEP_FWD_BWD;
  StreamSchedule sched(f.ctx, stream_for(g));
  for (const Node& n : f.m.cg.nodes(g)) {
    const StreamKind s = node_stream(n, g);
    const PreparedNode p = prepare_node(n, f.m.cg, f.plans, f.plans.plan(Variant::TrainBase), f.ctx, s);
    sched.before(p, s);
    sched.after(p, s);
  }
  EXPECT_TRUE(sched.join_except(StreamKind::COMP_2));
  for (const auto& w : f.ctx.waits) EXPECT_NE(w, "COMP_1<-COMP_2");
  // Nothing is left to join after that: a second join waits for nothing.
  f.ctx.waits.clear();
  EXPECT_FALSE(sched.join_except(StreamKind::COMP_2));
  sched.join();
  EXPECT_TRUE(f.ctx.waits.empty());
}

// Note [the deep weight gradients finish beside the first layer's backward]:
// when a step graph may leave COMP_2 open past DEEP_FWD_BWD.
TEST(StreamSchedule, DeepWeightGradientsMayFinishBesideTheFirstLayerBackward) {
  Fixture with_side;
  EXPECT_TRUE(deep_side_stream_may_stay_open(with_side.m.cg));
  Fixture one_stream(false);
  EXPECT_FALSE(deep_side_stream_may_stay_open(one_stream.m.cg)) << "no side stream to leave open";
  // A first-layer node that reads a deep weight gradient must wait for it.
  ComputationGraph cg = with_side.m.cg;
  const Node* side = nullptr;
  for (const Node& n : cg.nodes(GraphId::DEEP_FWD_BWD))
    if (n.stream == StreamKind::COMP_2) side = &n;
  ASSERT_NE(side, nullptr);
  std::vector<Node> first = cg.nodes(GraphId::FIRST_LAYER_BWD);
  ASSERT_FALSE(first.empty());
  first.push_back(compute(OpKind::ReluFwd, {side->out[0]}, {first.back().out[0]}, "reads a deep weight gradient"));
  cg.set_nodes(GraphId::FIRST_LAYER_BWD, first);
  EXPECT_FALSE(deep_side_stream_may_stay_open(cg));
  // So must a first-layer node on COMP_2 (it would share COMP_2's workspace).
  ComputationGraph cg2 = with_side.m.cg;
  std::vector<Node> first2 = cg2.nodes(GraphId::FIRST_LAYER_BWD);
  first2.back().stream = StreamKind::COMP_2;
  cg2.set_nodes(GraphId::FIRST_LAYER_BWD, first2);
  EXPECT_FALSE(deep_side_stream_may_stay_open(cg2));
}

TEST(StreamSchedule, PlanKeepsSideTensorsAliveThroughTheFirstLayerBackward) {
  Fixture f;
  const ComputationGraph& cg = f.m.cg;
  const MemoryPlan& plan = f.plans.plan(Variant::TrainBase);
  auto span = [&](TensorId t) {
    const int64_t a = plan.offset_of(t);
    return std::make_pair(a, a + plan.shape_of(t).numel() * int64_t(dtype_size(cg.tensor(t).dtype)));
  };
  int checked = 0;
  for (const Node& side : cg.nodes(GraphId::DEEP_FWD_BWD)) {
    if (side.stream != StreamKind::COMP_2) continue;
    std::vector<TensorId> touched = side.in;
    touched.insert(touched.end(), side.out.begin(), side.out.end());
    for (TensorId t : touched) {
      if (cg.tensor(t).role != Role::Activation) continue;
      const auto [a0, a1] = span(t);
      for (const Node& n : cg.nodes(GraphId::FIRST_LAYER_BWD)) {
        for (TensorId out : n.out) {
          if (cg.tensor(out).role != Role::Activation) continue;
          const auto [b0, b1] = span(out);
          EXPECT_FALSE(a0 < b1 && b0 < a1)
              << n.label << " overwrites " << cg.tensor(t).name << " while " << side.label << " may still use it";
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(StreamSchedule, PlanKeepsSideInputsAliveUntilTheGraphEnds) {
  Fixture f;
  const ComputationGraph& cg = f.m.cg;
  const MemoryPlan& plan = f.plans.plan(Variant::TrainBase);
  const GraphId g = GraphId::DEEP_FWD_BWD;
  const auto& nodes = cg.nodes(g);
  // For every side node, no tensor first written later in the graph may share
  // memory with the side node's inputs.
  int checked = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].stream != StreamKind::COMP_2) continue;
    for (TensorId in : nodes[i].in) {
      const int64_t a0 = plan.offset_of(in);
      const int64_t a1 = a0 + plan.shape_of(in).numel() * int64_t(dtype_size(cg.tensor(in).dtype));
      for (size_t j = i + 1; j < nodes.size(); ++j) {
        for (TensorId out : nodes[j].out) {
          if (cg.tensor(out).role != Role::Activation) continue;
          const int64_t b0 = plan.offset_of(out);
          const int64_t b1 = b0 + plan.shape_of(out).numel() * int64_t(dtype_size(cg.tensor(out).dtype));
          EXPECT_FALSE(a0 < b1 && b0 < a1) << nodes[j].label << " overwrites " << cg.tensor(in).name << " while "
                                           << nodes[i].label << " may still read it";
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
}  // namespace tr
