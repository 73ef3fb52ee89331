// Memory plan and atlas invariants (docs/design.md, "Vocabulary"): alignment, no overlap between
// live tensors, identical offsets across variants, reuse beats no reuse, and
// shape-invariant graphs deduplicated across the six variants.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "framework/graph/graph_atlas.h"
#include "framework/graph/memory_plan.h"
#include "framework/graph/model_builder.h"
#include "framework/graph/shape_inference.h"

namespace tr {
namespace {

std::array<VariantDims, kVariantCount> six_variants() {
  std::array<VariantDims, kVariantCount> d{};
  d[vidx(Variant::TrainBase)] = {64, 64, 28, 28};
  d[vidx(Variant::TrainLast)] = {40, 40, 28, 28};
  d[vidx(Variant::TrainLowres)] = {64, 64, 20, 20};
  d[vidx(Variant::TrainLowresLast)] = {40, 40, 20, 20};
  d[vidx(Variant::ValBase)] = {100, 100, 28, 28};
  d[vidx(Variant::ValLast)] = {10, 10, 28, 28};
  return d;
}

CompiledModel cnn(bool amp, OptimizerKind opt = OptimizerKind::Lars) {
  ModelConfig m = model_config("cnn", 0.5);
  TrainConfig t;
  t.amp = amp;
  t.optimizer = opt;
  t.schedule_len = 10;
  return build_model(m, t, 100);
}

// Live ranges as the planner sees them: node positions over GraphId order.
std::vector<std::pair<int, int>> live_ranges(const ComputationGraph& cg) {
  std::vector<std::pair<int, int>> r(static_cast<size_t>(cg.num_tensors()), {-1, -1});
  int pos = 0;
  for (int g = 0; g < kGraphIdCount; ++g) {
    for (const Node& n : cg.nodes(static_cast<GraphId>(g))) {
      auto touch = [&](TensorId t) {
        auto& x = r[static_cast<size_t>(t)];
        if (x.first < 0) x.first = pos;
        x.second = pos;
      };
      for (TensorId t : n.in) touch(t);
      for (TensorId t : n.out) touch(t);
      for (const RangeRef& rr : n.operands)
        if (rr.is_tensor) touch(rr.tensor);
      ++pos;
    }
  }
  return r;
}

TEST(MemoryPlan, InvariantsHoldForEveryVariant) {
  for (bool amp : {false, true}) {
    const CompiledModel m = cnn(amp);
    const PlanSet ps = plan_memory(m, six_variants(), 4096);
    const auto live = live_ranges(m.cg);
    const ComputationGraph& cg = m.cg;
    const MemoryPlan& base = ps.plan(Variant::TrainBase);
    for (Variant v : kAllVariants) {
      const MemoryPlan& p = ps.plan(v);
      ASSERT_TRUE(p.present());
      // Note [same offset in every variant].
      EXPECT_EQ(p.offsets, base.offsets) << variant_name(v);
    }
    // Slot size = max over variants; check alignment, bounds and overlap.
    std::vector<int64_t> bytes(static_cast<size_t>(cg.num_tensors()), 0);
    for (Variant v : kAllVariants)
      for (TensorId t = 0; t < cg.num_tensors(); ++t)
        bytes[size_t(t)] =
            std::max(bytes[size_t(t)], ps.plan(v).shape_of(t).numel() * int64_t(dtype_size(cg.tensor(t).dtype)));
    for (TensorId t = 0; t < cg.num_tensors(); ++t) {
      const int64_t off = base.offset_of(t);
      if (bytes[size_t(t)] == 0) continue;
      ASSERT_GE(off, 0) << cg.tensor(t).name;
      EXPECT_EQ(off % 256, 0) << cg.tensor(t).name << " misaligned";
      EXPECT_LE(off + bytes[size_t(t)], ps.arena_bytes) << cg.tensor(t).name;
    }
    int checked = 0;
    for (TensorId a = 0; a < cg.num_tensors(); ++a) {
      for (TensorId b = a + 1; b < cg.num_tensors(); ++b) {
        if (!bytes[size_t(a)] || !bytes[size_t(b)]) continue;
        const bool act_a = cg.tensor(a).role == Role::Activation, act_b = cg.tensor(b).role == Role::Activation;
        if (act_a && act_b) {
          const auto la = live[size_t(a)], lb = live[size_t(b)];
          if (la.second < lb.first || lb.second < la.first) continue;  // never live together: may share
        }
        const int64_t oa = base.offset_of(a), ob = base.offset_of(b);
        const bool overlap = oa < ob + bytes[size_t(b)] && ob < oa + bytes[size_t(a)];
        EXPECT_FALSE(overlap) << cg.tensor(a).name << " overlaps " << cg.tensor(b).name;
        ++checked;
      }
    }
    EXPECT_GT(checked, 1000);
    EXPECT_LT(ps.activation_pool_bytes, ps.activation_no_reuse_bytes);
    std::printf("[ plan ] cnn width 0.5 %s: arena %lld B, activations %lld B with reuse vs %lld B without (%.1f%%)\n",
                amp ? "amp" : "fp32", (long long)ps.arena_bytes, (long long)ps.activation_pool_bytes,
                (long long)ps.activation_no_reuse_bytes,
                100.0 * ps.activation_pool_bytes / ps.activation_no_reuse_bytes);
  }
}

TEST(MemoryPlan, ParallelRegionsShareSegments) {
  const CompiledModel m = cnn(true, OptimizerKind::AdamW);
  const PlanSet ps = plan_memory(m, six_variants(), 0);
  const MemoryPlan& p = ps.plan(Variant::TrainBase);
  const ResolvedRange master = ps.resolve(m.cg, RangeRef::region(Role::ParamMaster), p);
  const ResolvedRange grad16 = ps.resolve(m.cg, RangeRef::region(Role::Grad), p);
  const ResolvedRange deep = ps.resolve(m.cg, RangeRef::region(Role::GradMaster, kDeepGroups), p);
  const ResolvedRange first = ps.resolve(m.cg, RangeRef::region(Role::GradMaster, group_bit(ParamGroup::First)), p);
  EXPECT_EQ(master.dtype, DType::F32);
  EXPECT_EQ(grad16.dtype, DType::F16);
  EXPECT_EQ(master.elems, grad16.elems);
  ASSERT_EQ(master.segs.size(), grad16.segs.size());
  for (size_t i = 0; i < master.segs.size(); ++i) {
    EXPECT_EQ(master.segs[i].offset, grad16.segs[i].offset);
    EXPECT_EQ(master.segs[i].offset % kRegionAlignElems, 0);
  }
  EXPECT_EQ(first.elems + deep.elems, master.elems);  // first then deep: contiguous buckets
  EXPECT_EQ(first.offset + first.elems * 4, deep.offset);
  EXPECT_EQ(master.offset % 256, 0);
  EXPECT_EQ(grad16.offset % 256, 0);
}

TEST(MemoryPlan, ShapeInferenceFollowsVariants) {
  const CompiledModel m = cnn(false);
  const PlanSet ps = plan_memory(m, six_variants(), 0);
  // The loss gradient (the logits' shape) is [N, 10] per variant: an output of
  // the fused classifier head (Note [fusion]), or of the loss unfused.
  TensorId logits = kNoTensor;
  for (const Node& n : m.cg.nodes(GraphId::DEEP_FWD_BWD)) {
    if (n.kind == Node::Kind::Compute && n.op == OpKind::SoftmaxXent) logits = n.out[0];
    if (n.kind == Node::Kind::Compute && (n.op == OpKind::ClassifierHead || n.op == OpKind::BnReluClassifierHead))
      logits = n.out[1];
  }
  ASSERT_NE(logits, kNoTensor);
  EXPECT_EQ(ps.plan(Variant::TrainBase).shape_of(logits), (Shape{64, 10}));
  EXPECT_EQ(ps.plan(Variant::TrainLowresLast).shape_of(logits), (Shape{40, 10}));
  EXPECT_EQ(ps.plan(Variant::TrainLowres).shape_of(m.images[0]), (Shape{100, 28, 28, 1}));  // invariant buffer
}

TEST(MemoryPlan, MlpRejectsLowResolution) {
  ModelConfig mc;
  TrainConfig t;
  const CompiledModel m = build_model(mc, t, 64);
  EXPECT_FALSE(m.supports_lowres);
  auto d = six_variants();
  EXPECT_THROW(plan_memory(m, d, 0), UserError);
}

TEST(GraphAtlas, ShapeInvariantGraphsCapturedOnce) {
  const CompiledModel m = cnn(true);
  const PlanSet ps = plan_memory(m, six_variants(), 0);
  GraphAtlas atlas = build_atlas(m.cg, ps);
  const DedupResult r = dedup(atlas);
  // Every shape-invariant graph appears in several variants and is captured once.
  int invariant_unique = 0, dependent_unique = 0;
  for (const UniqueGraph& u : r.graphs) (u.shape_id == kShapeInvariant ? invariant_unique : dependent_unique)++;
  int invariant_ids = 0;
  for (int g = 0; g < kGraphIdCount; ++g)
    if (m.cg.has(GraphId(g)) && is_shape_invariant(GraphId(g))) ++invariant_ids;
  EXPECT_EQ(invariant_unique, invariant_ids);
  // Shape-dependent: 4 train graph ids x 4 train shapes + 3 inference ids x 2 val shapes.
  EXPECT_EQ(dependent_unique, 4 * 4 + 3 * 2);
  EXPECT_EQ(r.unique + r.reused, r.total_slots);
  EXPECT_EQ(atlas.slot(Variant::TrainBase, GraphId::ZERO_GRAD).captured_idx,
            atlas.slot(Variant::TrainLowresLast, GraphId::ZERO_GRAD).captured_idx);
  EXPECT_EQ(atlas.slot(Variant::TrainBase, GraphId::TRANSFER_A).captured_idx,
            atlas.slot(Variant::ValLast, GraphId::TRANSFER_A).captured_idx);
  EXPECT_NE(atlas.slot(Variant::TrainBase, GraphId::DEEP_FWD_BWD).captured_idx,
            atlas.slot(Variant::TrainLast, GraphId::DEEP_FWD_BWD).captured_idx);
  EXPECT_FALSE(atlas.slot(Variant::ValBase, GraphId::OPTIMIZER).present());
  std::printf("[ atlas ] %d slots, %d unique, %d reused\n", r.total_slots, r.unique, r.reused);
}

TEST(GraphAtlas, EqualShapesShareShapeDependentGraphs) {
  const CompiledModel m = cnn(false);
  auto d = six_variants();
  d[vidx(Variant::ValBase)] = d[vidx(Variant::TrainBase)];
  const PlanSet ps = plan_memory(m, d, 0);
  GraphAtlas atlas = build_atlas(m.cg, ps);
  dedup(atlas);
  EXPECT_EQ(atlas.slot(Variant::ValBase, GraphId::INF_EMA).shape_id,
            atlas.slot(Variant::TrainBase, GraphId::DEEP_FWD_BWD).shape_id);
}

}  // namespace
}  // namespace tr
