// Note [fusion] (framework/graph/fusion.h) in the small GPT: which of its node
// pairs merge, in which graphs, and how many nodes that saves. (Whether each
// rule changes a bit: Fusion.EachRuleAloneChangesNoBit in fusion_test.cpp.)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "framework/graph/fusion_rules.h"
#include "framework/graph/model_builder.h"

namespace tr {
namespace {

// Compute nodes of kind k over every graph.
int count_nodes(const CompiledModel& c, OpKind k) {
  int n = 0;
  for (int g = 0; g < kGraphIdCount; ++g)
    for (const Node& node : c.cg.nodes(GraphId(g))) n += node.kind == Node::Kind::Compute && node.op == k;
  return n;
}

// The small GPT (a quarter width, windows of 32, AdamW) built with every fusion
// rule but those named in `without` (which must leave some: an empty list means every rule).
CompiledModel small_gpt_without(const std::set<std::string>& without) {
  TrainConfig t;
  t.optimizer = OptimizerKind::AdamW;
  for (const FusionRule& r : fusion_rules())
    if (!without.count(std::string(r.name))) t.fusion_rules.emplace_back(r.name);
  return build_model(model_config("gpt2-d6", 0.25, 0, 0, 0, 32), t, 4);
}

// The small GPT's MLPs: each block's up projection fuses with its GELU in
// every graph that holds the block's forward, and the down projection's data
// gradient with the GELU's backward in the training graph; no GELU node is
// left, and each pair is one node fewer than with every other rule.
TEST(Fusion, GptMlpMergesEveryGelu) {
  TrainConfig t;
  t.optimizer = OptimizerKind::AdamW;
  t.fusion = false;
  const CompiledModel plain = build_model(model_config("gpt2-d6", 0.25, 0, 0, 0, 32), t, 4);
  const CompiledModel fused = small_gpt_without({});
  const CompiledModel others = small_gpt_without({"fc_gelu", "fc_gelu_bwd"});
  const int gelu_fwd = count_nodes(plain, OpKind::GeluFwd), gelu_bwd = count_nodes(plain, OpKind::GeluBwd);
  EXPECT_GE(gelu_fwd, 6) << "six blocks";
  EXPECT_EQ(gelu_bwd, 6) << "one backward per block";
  EXPECT_EQ(fused.fusions.fc_gelu, gelu_fwd);
  EXPECT_EQ(fused.fusions.fc_gelu_bwd, gelu_bwd);
  EXPECT_EQ(count_nodes(fused, OpKind::FcGeluFwd), gelu_fwd);
  EXPECT_EQ(count_nodes(fused, OpKind::FcBwdDataGelu), gelu_bwd);
  EXPECT_EQ(count_nodes(fused, OpKind::GeluFwd) + count_nodes(fused, OpKind::GeluBwd), 0);
  EXPECT_EQ(count_nodes(plain, OpKind::FcFwd) - count_nodes(fused, OpKind::FcFwd),
            gelu_fwd + fused.fusions.fc_residual);
  EXPECT_EQ(count_nodes(plain, OpKind::FcBwdData) - count_nodes(fused, OpKind::FcBwdData), gelu_bwd);
  EXPECT_EQ(others.fusions.fc_gelu + others.fusions.fc_gelu_bwd, 0);
  EXPECT_EQ(others.cg.total_nodes() - fused.cg.total_nodes(), size_t(gelu_fwd + gelu_bwd)) << "a node fewer a pair";
}

// The small GPT's residual joins: each block's attention projection and MLP
// down projection fuse with the Add after them in every graph that holds the
// block's forward, so no forward Add is left there; the backward's gradient
// fan-ins (Adds too, in the training graph) stay.
TEST(Fusion, GptProjectionsTakeTheResidual) {
  const CompiledModel plain = small_gpt_without({"fc_residual"});  // every rule but this one, against every rule
  const CompiledModel fused = small_gpt_without({});
  auto is_join = [](const Node& n) {  // a block's forward Add "h<i>.res<j>.fwd", not a fan-in "h<i>.res<j>.dsum<k>"
    return n.kind == Node::Kind::Compute && n.op == OpKind::Add && n.label.find(".res") != std::string::npos &&
           n.label.ends_with(".fwd");
  };
  int joins = 0;
  for (int g = 0; g < kGraphIdCount; ++g) {
    int adds = 0, fused_nodes = 0, fused_adds = 0;
    for (const Node& n : plain.cg.nodes(GraphId(g))) adds += is_join(n);
    for (const Node& n : fused.cg.nodes(GraphId(g))) {
      fused_nodes += n.kind == Node::Kind::Compute && n.op == OpKind::FcResidualFwd;
      fused_adds += is_join(n);
    }
    EXPECT_EQ(adds % 12, 0) << graph_name(GraphId(g)) << ": two joins in each of six blocks, per forward";
    EXPECT_EQ(fused_nodes, adds) << graph_name(GraphId(g));
    EXPECT_EQ(fused_adds, 0) << graph_name(GraphId(g));
    joins += adds;
  }
  EXPECT_GE(joins, 12);
  EXPECT_EQ(fused.fusions.fc_residual, joins);
  EXPECT_EQ(fused.fusions.total() - plain.fusions.total(), joins) << "no other rule changes";
  EXPECT_EQ(plain.cg.total_nodes() - fused.cg.total_nodes(), size_t(joins)) << "a node fewer a join";
}

// The small GPT's gradient fan-ins: at each block's two LayerNorm inputs the
// residual stream's gradient joins the LayerNorm's, one Add each in the
// training graph; each merges into its LayerNorm's backward.
TEST(Fusion, GptFanInsJoinTheLayerNormBackward) {
  const CompiledModel plain = small_gpt_without({"ln_bwd_add"});  // every rule but this one, against every rule
  const CompiledModel fused = small_gpt_without({});
  EXPECT_EQ(fused.fusions.ln_bwd_add, 12) << "two LayerNorms in each of six blocks";
  EXPECT_EQ(count_nodes(fused, OpKind::LayerNormBwdAdd), 12);
  EXPECT_EQ(count_nodes(plain, OpKind::LayerNormBwd) - count_nodes(fused, OpKind::LayerNormBwd), 12);
  EXPECT_EQ(count_nodes(plain, OpKind::Add) - count_nodes(fused, OpKind::Add), 12);
  EXPECT_EQ(count_nodes(fused, OpKind::LayerNormBwd), 1) << "the final LayerNorm's input has no fan-in";
  EXPECT_EQ(plain.cg.total_nodes() - fused.cg.total_nodes(), size_t(12));
}

}  // namespace
}  // namespace tr
