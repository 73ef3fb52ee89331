// Note [fusion] (framework/graph/fusion.h) on the CPU: which node pairs merge in
// each model, the fused ops against the pairs they replace, and a whole run
// with fusion against one without, bit for bit in f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "framework/graph/fusion_rules.h"
#include "framework/graph/memory_plan.h"
#include "framework/graph/model_builder.h"
#include "framework/graph/recipe_graphs.h"
#include "framework/ops/compute/add.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/bn_relu_pool.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/op_signature.h"
#include "tests/fusion_test_util.h"
#include "tests/ops_cpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using test::HostTensor;
using test::OpRunner;

struct NodeTally {
  int residual_apply = 0;    // BnAddReluApply
  int two_grad_relu = 0;     // ReluBwdAdd, alone or in front of a reduce
  int relu_bwd = 0;          // ReluBwd and ReluBwdAdd nodes left in the training graphs
  int relu_grad_reduce = 0;  // a BatchNorm backward reduce with the ReLU's gradient in front
  int pool_stats = 0;        // a max pool with the BatchNorm statistics (MaxPoolStatsFwd, PoolBnReluApply)
  int bn_pool = 0;           // BnReluPool
  int head = 0;              // ClassifierHead, BnReluClassifierHead
  int fc_fwd = 0;            // FcFwd nodes left in the training graphs
  int add = 0;               // Add nodes left in the training graphs
  int bn_stats = 0;          // BnStats nodes left in the training graphs
  int bn_apply = 0;          // BatchNorm forward applies left in the training graphs
  int stats_apply = 0;       // BnStatsReluApply
  int pool_bn = 0;           // PoolBnReluApply
  int bwd_phases = 0;        // BnReluBwdReduceApply
  int bwd_reduce = 0;        // BatchNorm backward reduces left in the training graphs
};

NodeTally tally(const CompiledModel& m) {
  NodeTally t;
  for (GraphId g :
       {GraphId::FIRST_LAYER_FWD_A, GraphId::FIRST_LAYER_FWD_B, GraphId::FIRST_LAYER_BWD, GraphId::DEEP_FWD_BWD})
    for (const Node& n : m.cg.nodes(g)) {
      if (n.kind != Node::Kind::Compute) continue;
      const OpKind k = n.op;
      t.residual_apply += k == OpKind::BnAddReluApply;
      t.two_grad_relu += k == OpKind::ReluBwdAdd || k == OpKind::ReluBwdAddBnReduce;
      t.relu_bwd += k == OpKind::ReluBwd || k == OpKind::ReluBwdAdd;
      t.relu_grad_reduce += k == OpKind::ReluBwdBnReduce || k == OpKind::ReluBwdAddBnReduce;
      t.pool_stats += k == OpKind::MaxPoolStatsFwd || k == OpKind::PoolBnReluApply;
      t.pool_bn += k == OpKind::PoolBnReluApply;
      t.stats_apply += k == OpKind::BnStatsReluApply;
      t.bwd_phases += k == OpKind::BnReluBwdReduceApply;
      t.bwd_reduce += k == OpKind::BnReluBwdReduce || k == OpKind::ReluBwdBnReduce || k == OpKind::ReluBwdAddBnReduce;
      t.bn_pool += k == OpKind::BnReluPool;
      t.head += k == OpKind::ClassifierHead || k == OpKind::BnReluClassifierHead;
      t.fc_fwd += k == OpKind::FcFwd;
      t.add += k == OpKind::Add;
      t.bn_stats += k == OpKind::BnStats;
      t.bn_apply += k == OpKind::BnReluApply || k == OpKind::BnStatsReluApply || k == OpKind::BnAddReluApply;
    }
  return t;
}

CompiledModel build(const std::string& model, bool fusion) {
  TrainConfig t;
  t.fusion = fusion;
  return build_model(model_config(model, 0.125, 32, 3, 10), t, 4);
}

// Every residual block's BatchNorm + Add + ReLU merges (8 in resnet18, 16 in
// resnet50). Every block input that is an earlier block's output gets its two
// gradients summed right before that block's ReLU backward: 7 and 15 (the
// first block's input comes from the stem's BN+ReLU or max pool, whose
// backward is not a ReluBwd). The cnn's three BatchNorms right after a 2x2
// max pool take their statistics from the pool (the training forward runs in
// one graph). vgg16bn's five BatchNorm + ReLU + 2x2 pools become one node each
// (the ResNet stem's pool is 3x3). The cnn's global max pool, fc and loss with
// their backward become one ClassifierHead (five nodes into one), which also
// takes in the BatchNorm + ReLU before it; the zoo's heads average-pool and
// the mlp's has a bias, so they stay. The mlp has nothing to merge.
// Then every BatchNorm's phases merge (Note [one kernel per BatchNorm]): the
// statistics into each BnReluApply that is left with four inputs (those that
// took a residual or a pool keep their statistics apart), the pool with its
// statistics into the BnReluApply after it (the cnn's three), and every
// backward's reduce into its apply (vgg16bn 13, cnn 7) but where the reduce has
// taken the ReLU's gradient in front (Note [the ReLU's gradient in the
// reduce]): each residual block's ReluBwd (8 in resnet18, 16 in resnet50)
// takes in the reduce of the block's last BatchNorm, so resnet18 merges 20 - 8
// phases and resnet50 53 - 16. The first layer's forward is in the A and B
// graphs: its statistics + apply merge twice. With AdamW (TrainConfig's
// default) a model without BatchNorm (the mlp) also fuses the optimizer's tail
// (Note [optimizer tail]): the EMA's Lerp goes, and UpdateLossScale rides in
// AdvanceStep: 2 nodes.
TEST(Fusion, MergesEveryPair) {
  struct Want {
    const char* model;
    int bn_add, add_relu_bwd, pool_stats, bn_pool, head, head_bn, stats_apply, pool_bn, bwd_phases, relu_grad_reduce;
    int tail = 0;
  };
  for (const Want& w :
       {Want{"resnet18", 8, 7, 0, 0, 0, 0, 13, 0, 12, 8}, Want{"resnet50", 16, 15, 0, 0, 0, 0, 38, 0, 37, 16},
        Want{"vgg16bn", 0, 0, 0, 5, 0, 0, 9, 0, 13, 0}, Want{"cnn", 0, 0, 3, 0, 1, 1, 4, 3, 7, 0},
        Want{"mlp", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}}) {
    SCOPED_TRACE(w.model);
    const CompiledModel fused = build(w.model, true), plain = build(w.model, false);
    const FusionCounts& n = fused.fusions;
    EXPECT_EQ(n.bn_add, w.bn_add);
    EXPECT_EQ(n.add_relu_bwd, w.add_relu_bwd);
    EXPECT_EQ(n.pool_stats, w.pool_stats);
    EXPECT_EQ(n.bn_pool, w.bn_pool);
    EXPECT_EQ(n.head, w.head);
    EXPECT_EQ(n.head_bn, w.head_bn);
    EXPECT_EQ(n.stats_apply, w.stats_apply);
    EXPECT_EQ(n.pool_bn, w.pool_bn);
    EXPECT_EQ(n.bwd_phases, w.bwd_phases);
    EXPECT_EQ(n.relu_grad_reduce, w.relu_grad_reduce);
    EXPECT_EQ(plain.fusions.total(), 0);
    const NodeTally f = tally(fused), p = tally(plain);
    EXPECT_EQ(f.residual_apply, w.bn_add);
    EXPECT_EQ(f.two_grad_relu, w.add_relu_bwd);
    EXPECT_EQ(f.pool_stats, w.pool_stats);
    EXPECT_EQ(f.bn_pool, w.bn_pool);
    EXPECT_EQ(f.head, w.head);
    EXPECT_EQ(f.stats_apply, w.stats_apply);
    EXPECT_EQ(f.pool_bn, w.pool_bn);
    EXPECT_EQ(f.bwd_phases, w.bwd_phases);
    EXPECT_EQ(f.relu_grad_reduce, w.relu_grad_reduce);
    EXPECT_EQ(p.residual_apply + p.two_grad_relu + p.pool_stats + p.bn_pool + p.head + p.stats_apply + p.pool_bn +
                  p.bwd_phases + p.relu_grad_reduce,
              0);
    EXPECT_EQ(p.relu_bwd - f.relu_bwd, w.relu_grad_reduce) << "each ReLU gradient fusion removes one ReluBwd";
    EXPECT_EQ(p.fc_fwd - f.fc_fwd, w.head) << "each head fusion removes the fc's forward";
    EXPECT_EQ(p.add - f.add, w.bn_add + w.add_relu_bwd) << "each fusion removes one Add";
    EXPECT_EQ(p.bn_stats - f.bn_stats, w.pool_stats + w.stats_apply)
        << "each pool fusion and each statistics + apply fusion removes one BnStats";
    EXPECT_EQ(p.bn_apply - f.bn_apply, w.bn_pool + w.head_bn + w.pool_bn)
        << "each BatchNorm + pool, BatchNorm + head or pool + BatchNorm fusion removes one BnReluApply";
    EXPECT_EQ(p.bwd_reduce - f.bwd_reduce, w.bwd_phases) << "each backward fusion removes one BnReluBwdReduce";
    // One more: the metrics' Accumulate rides in AdvanceStep (Note [the
    // step's scalars in one kernel], recipe_graphs.h).
    EXPECT_EQ(plain.cg.total_nodes() - fused.cg.total_nodes(),
              size_t(w.bn_add + w.add_relu_bwd + w.pool_stats + w.bn_pool + 4 * w.head + w.head_bn + w.stats_apply +
                     w.pool_bn + w.bwd_phases + w.relu_grad_reduce + 1 + w.tail));
  }
}

// The head fuses only where the GPU has its kernels (at most
// kSmallFcMaxOutputs classes, fc.h): the cnn with 33 classes keeps its nodes.
TEST(Fusion, ClassifierHeadNeedsFewClasses) {
  TrainConfig t;
  t.fusion = true;
  EXPECT_EQ(build_model(model_config("cnn", 0.125, 32, 3, int(kSmallFcMaxOutputs)), t, 4).fusions.head, 1);
  const CompiledModel many = build_model(model_config("cnn", 0.125, 32, 3, int(kSmallFcMaxOutputs) + 1), t, 4);
  EXPECT_EQ(many.fusions.head, 0);
  EXPECT_EQ(tally(many).head, 0);
}

// Note [the check in the casts] and Note [the check's flag]: with AMP on one
// rank and fusion on, the two gradient casts carry the NaN check and no
// CheckFinite is left; without fusion, or with collectives, CheckFinite stays
// and the casts do not check. AdvanceStep comes right after the check, before
// every reader of found_inf, and only the casts' and the check's graphs hold
// a node that sets the flag (those graphs stay out of the warm-up).
TEST(Fusion, TheNanCheckRidesInTheCastsOnOneRankWithAmp) {
  for (bool fusion : {true, false})
    for (bool collectives : {false, true}) {
      SCOPED_TRACE(cat("fusion ", fusion, ", collectives ", collectives));
      TrainConfig t;
      t.fusion = fusion;
      t.amp = true;
      t.force_collectives = collectives;
      const CompiledModel m = build_model(model_config("cnn", 0.125, 32, 3, 10), t, 4);
      const bool in_casts = fusion && !collectives;
      int checking_casts = 0, check_nodes = 0;
      for (int g = 0; g < kGraphIdCount; ++g)
        for (const Node& n : m.cg.nodes(GraphId(g))) {
          if (!sets_the_check_flag(n)) continue;
          if (n.range_op == RangeOp::Cast) {
            ++checking_casts;
            EXPECT_TRUE(GraphId(g) == GraphId::CAST_DEEP_GRAD_FP16_TO_FP32 ||
                        GraphId(g) == GraphId::CAST_FIRST_GRAD_FP16_TO_FP32)
                << graph_name(GraphId(g));
          } else {
            ++check_nodes;
            EXPECT_EQ(GraphId(g), GraphId::NAN_CHECK_AND_GRAD_SCALING);
          }
        }
      EXPECT_EQ(checking_casts, in_casts ? 2 : 0);
      EXPECT_EQ(check_nodes, in_casts ? 0 : 1);
      const std::vector<Node>& nan = m.cg.nodes(GraphId::NAN_CHECK_AND_GRAD_SCALING);
      const size_t first = in_casts ? 0 : 1;
      ASSERT_GT(nan.size(), first);
      EXPECT_EQ(nan[first].range_op, RangeOp::AdvanceStep);
    }
}

// The BatchNorm + pool leaves y unstored: no node of any graph reads or
// writes it, the memory plan gives it no place, and each pool's backward
// reads the BatchNorm's input for the shape instead. (Fusion only rewrites
// nodes, so tensor ids are those of the unfused build.)
TEST(Fusion, BatchNormPoolLeavesItsOutputUnstored) {
  const CompiledModel fused = build("vgg16bn", true), plain = build("vgg16bn", false);
  std::map<TensorId, TensorId> y_to_x;  // pooled BatchNorm outputs of the unfused build -> the BatchNorm's input
  for (const Node& pool : plain.cg.nodes(GraphId::DEEP_FWD_BWD)) {
    if (pool.kind != Node::Kind::Compute || pool.op != OpKind::MaxPoolArgmaxFwd) continue;
    for (const Node& bn : plain.cg.nodes(GraphId::DEEP_FWD_BWD))
      if (bn.kind == Node::Kind::Compute && bn.op == OpKind::BnReluApply && bn.out[0] == pool.in[0])
        y_to_x[bn.out[0]] = bn.in[0];
  }
  ASSERT_EQ(y_to_x.size(), 5u);
  int pool_bwd_from_x = 0;
  for (int g = 0; g < kGraphIdCount; ++g)
    for (const Node& n : fused.cg.nodes(GraphId(g))) {
      if (n.kind != Node::Kind::Compute) continue;
      for (TensorId t : n.in) EXPECT_EQ(y_to_x.count(t), 0u) << n.label << " reads " << fused.cg.tensor(t).name;
      for (TensorId t : n.out) EXPECT_EQ(y_to_x.count(t), 0u) << n.label << " writes " << fused.cg.tensor(t).name;
      if (n.op != OpKind::MaxPoolArgmaxBwd) continue;
      for (const auto& [y, x] : y_to_x) pool_bwd_from_x += n.in[1] == x;
    }
  EXPECT_EQ(pool_bwd_from_x, 5);
  std::array<VariantDims, kVariantCount> dims{};
  dims[size_t(Variant::TrainBase)] = VariantDims{4, 4, 32, 32};
  const PlanSet pf = plan_memory(fused, dims, 4096), pp = plan_memory(plain, dims, 4096);
  for (const auto& [y, x] : y_to_x) {
    EXPECT_EQ(pf.plan(Variant::TrainBase).offset_of(y), -1) << fused.cg.tensor(y).name;
    EXPECT_GE(pp.plan(Variant::TrainBase).offset_of(y), 0) << plain.cg.tensor(y).name;
  }
  EXPECT_LT(pf.activation_no_reuse_bytes, pp.activation_no_reuse_bytes);
  std::printf("[ fusion ] vgg16bn width 0.125, batch 4: activations %lld B without reuse fused, %lld B unfused\n",
              static_cast<long long>(pf.activation_no_reuse_bytes),
              static_cast<long long>(pp.activation_no_reuse_bytes));
}

// g = ReluBwdAdd(a, y, b) gives the bits of ReluBwd(Add(a, b), y), f16 included.
TEST(Fusion, TwoGradientReluBackwardIsAddThenReluBackward) {
  Rng rng(61);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    SCOPED_TRACE(dtype_name(t));
    const Shape s{3, 5, 4, 8};
    const HostTensor a = test::random_tensor(t, s, rng, -3, 3), b = test::random_tensor(t, s, rng, -3, 3);
    const HostTensor y = test::random_tensor(t, s, rng, -1, 1);
    HostTensor sum(t, s), want(t, s), got(t, s);
    OpRunner run;
    run.attrs.relu = false;  // the fan-in Add sums only
    run.run(add_cpu, {&a, &b}, {&sum});
    run.run(relu_bwd_cpu, {&sum, &y}, {&want});
    run.run(relu_bwd_add_cpu, {&a, &y, &b}, {&got});
    int64_t masked = 0;
    for (int64_t i = 0; i < y.numel(); ++i) masked += !(y.get(i) > 0);
    EXPECT_GT(masked, 0);
    EXPECT_TRUE(test::bitwise_equal(want, got));
  }
}

// ReluBwdBnReduce and ReluBwdAddBnReduce (Note [the ReLU's gradient in the
// reduce]) against ReluBwd (ReluBwdAdd) then BnReluBwdReduce, bit for bit; its
// shapes are those of the two ops, and any other operand count is refused.
TEST(Fusion, ReluGradientInTheReduceIsReluBwdThenReduce) {
  Rng rng(67);
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const Shape& xs : {Shape{2, 6, 4, 8}, Shape{3, 5, 7, 3}})
      for (bool relu : {true, false})
        for (bool two : {false, true}) {
          SCOPED_TRACE(cat(dtype_name(t), " ", xs.str(), relu ? " relu" : "", two ? " two gradients" : ""));
          test::BnChain bn(t, xs, rng, relu, 2);
          bn.forward();
          const HostTensor a = test::random_tensor(t, xs, rng, -1, 1), b = test::random_tensor(t, xs, rng, -1, 1);
          const HostTensor y = test::random_tensor(t, xs, rng, -1, 1);
          std::vector<const HostTensor*> relu_in = {&a, &y};
          if (two) relu_in.push_back(&b);
          HostTensor g(t, xs);
          bn.run.run(two ? relu_bwd_add_cpu : relu_bwd_cpu, relu_in, {&g});
          bn.backward(g);
          const int64_t C = xs[3];
          HostTensor got_g(t, xs), dgamma(t, {C}), dbeta(t, {C}), dsums(bn.dsums.dtype(), {2, C});
          std::vector<const HostTensor*> in = {&a, &bn.affine, &bn.x, &bn.batch, &y};
          if (two) in.push_back(&b);
          bn.run.run(two ? relu_bwd_add_bn_reduce_cpu : relu_bwd_bn_reduce_cpu, in, {&dgamma, &dbeta, &dsums, &got_g});
          EXPECT_TRUE(test::bitwise_equal(got_g, g));
          EXPECT_TRUE(test::bitwise_equal(dgamma, bn.dgamma));
          EXPECT_TRUE(test::bitwise_equal(dbeta, bn.dbeta));
          EXPECT_TRUE(test::bitwise_equal(dsums, bn.dsums));
          EXPECT_NE(bn.dsums.get(0), 0.0);

          const Shape ps{2, C}, in_shapes[6] = {xs, ps, xs, ps, xs, xs};
          Shape out[4];
          const ShapeFn rule = two ? relu_bwd_add_bn_reduce_shapes : relu_bwd_bn_reduce_shapes;
          rule(ShapeCtx{in_shapes, two ? 6 : 5, &bn.run.attrs, &bn.run.variant}, out, 4);
          EXPECT_EQ(out[0], (Shape{C}));
          EXPECT_EQ(out[2], ps);
          EXPECT_EQ(out[3], xs);
          EXPECT_THROW(check_operand_counts(two ? OpKind::ReluBwdAddBnReduce : OpKind::ReluBwdBnReduce, two ? 6 : 5, 3,
                                            bn.run.attrs),
                       Error);
          const Shape bad_y[5] = {xs, ps, xs, ps, Shape{xs[0], xs[1], xs[2], C + 1}};
          EXPECT_THROW(relu_bwd_bn_reduce_shapes(ShapeCtx{bad_y, 5, &bn.run.attrs, &bn.run.variant}, out, 4),
                       UserError);
        }
}

// MaxPoolStatsFwd against MaxPoolArgmaxFwd then BnStats, bit for bit; any
// window but 2x2 / stride 2 without padding is refused.
TEST(Fusion, PoolWithStatsIsPoolThenBnStats) {
  Rng rng(63);
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const Shape& s : {Shape{3, 8, 8, 16}, Shape{2, 7, 9, 5}}) {
      SCOPED_TRACE(cat(dtype_name(t), " ", s.str()));
      const HostTensor x = test::random_tensor(t, s, rng, -3, 3);
      const Shape ys{s[0], s[1] / 2, s[2] / 2, s[3]};
      HostTensor y(t, ys), argmax(DType::U8, ys), sums(DType::F32, Shape{2, s[3]});
      HostTensor fy(t, ys), fargmax(DType::U8, ys), fsums(DType::F32, Shape{2, s[3]});
      OpRunner run;
      run.attrs.kernel = 2;
      run.attrs.stride = 2;
      run.variant.batch = run.variant.global_batch = s[0];
      run.run(maxpool_argmax_fwd_cpu, {&x}, {&y, &argmax});
      run.run(bn_stats_cpu, {&y}, {&sums});
      run.run(maxpool_stats_fwd_cpu, {&x}, {&fy, &fargmax, &fsums});
      EXPECT_TRUE(test::bitwise_equal(y, fy));
      EXPECT_TRUE(test::bitwise_equal(argmax, fargmax));
      EXPECT_TRUE(test::bitwise_equal(sums, fsums));
      EXPECT_NE(fsums.get(s[3]), 0.0);  // sum y^2 of channel 0
    }
  const HostTensor x = test::random_tensor(DType::F32, Shape{2, 8, 8, 4}, rng, -1, 1);
  HostTensor y(DType::F32, Shape{2, 4, 4, 4}), argmax(DType::U8, Shape{2, 4, 4, 4}), sums(DType::F32, Shape{2, 4});
  OpRunner run;
  run.attrs.kernel = 3;
  run.attrs.stride = 2;
  run.attrs.pad = 1;
  EXPECT_THROW(run.run(maxpool_stats_fwd_cpu, {&x}, {&y, &argmax, &sums}), Error);
}

// BnReluPool against BnReluApply then MaxPoolArgmaxFwd, bit for bit, odd H and W
// included; without the ReLU too.
TEST(Fusion, BatchNormPoolIsApplyThenPool) {
  Rng rng(64);
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const Shape& xs : {Shape{2, 6, 4, 8}, Shape{3, 5, 7, 3}})
      for (bool relu : {true, false}) {
        SCOPED_TRACE(cat(dtype_name(t), " ", xs.str(), relu ? " relu" : ""));
        test::BnChain bn(t, xs, rng, relu, 2);
        bn.forward();  // the unfused BatchNorm output bn.y, with bn.batch and bn.affine
        const Shape ps{xs[0], xs[1] / 2, xs[2] / 2, xs[3]};
        HostTensor want(t, ps), want_arg(DType::U8, ps), got(t, ps), got_arg(DType::U8, ps);
        HostTensor batch(bn.batch.dtype(), bn.batch.shape()), affine(bn.affine.dtype(), bn.affine.shape());
        OpRunner run = bn.run;
        run.attrs.kernel = 2;
        run.attrs.stride = 2;
        run.run(maxpool_argmax_fwd_cpu, {&bn.y}, {&want, &want_arg});
        run.run(bn_relu_pool_cpu, {&bn.x, &bn.sums, &bn.gamma, &bn.beta}, {&got, &got_arg, &batch, &affine});
        EXPECT_TRUE(test::bitwise_equal(want, got));
        EXPECT_TRUE(test::bitwise_equal(want_arg, got_arg));
        EXPECT_TRUE(test::bitwise_equal(batch, bn.batch));
        EXPECT_TRUE(test::bitwise_equal(affine, bn.affine));
        int64_t winners_off_corner = 0;
        for (int64_t i = 0; i < got_arg.numel(); ++i) winners_off_corner += got_arg.get(i) != 0;
        EXPECT_GT(winners_off_corner, 0);
      }
}

// A BatchNorm's phases in one node (Note [one kernel per BatchNorm]) against
// the nodes apart, bit for bit: BnStatsReluApply is BnStats then BnReluApply;
// BnReluBwdReduceApply is BnReluBwdReduce then BnReluBwdApply;
// PoolBnReluApply is MaxPoolStatsFwd, then BnReluApply of its y. Shape
// inference gives each merged node the outputs of the nodes apart, and any
// other operand count is refused.
TEST(Fusion, BatchNormPhasesInOneNodeAreThePhasesApart) {
  Rng rng(66);
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const Shape& xs : {Shape{2, 6, 4, 8}, Shape{3, 5, 7, 3}})
      for (bool relu : {true, false}) {
        SCOPED_TRACE(cat(dtype_name(t), " ", xs.str(), relu ? " relu" : ""));
        test::BnChain bn(t, xs, rng, relu, 2);
        bn.forward();
        const HostTensor dy = test::random_tensor(t, xs, rng, -1, 1);
        bn.backward(dy);
        const DType st = bn.sums.dtype();
        const int64_t C = xs[3];
        HostTensor y(t, xs), batch(st, {2, C}), affine(st, {2, C}), sums(st, {2, C});
        bn.run.run(bn_stats_relu_apply_cpu, {&bn.x, &bn.gamma, &bn.beta}, {&y, &batch, &affine, &sums});
        EXPECT_TRUE(test::bitwise_equal(y, bn.y));
        EXPECT_TRUE(test::bitwise_equal(batch, bn.batch));
        EXPECT_TRUE(test::bitwise_equal(affine, bn.affine));
        EXPECT_TRUE(test::bitwise_equal(sums, bn.sums));

        HostTensor dx(t, xs), dgamma(t, {C}), dbeta(t, {C}), dsums(st, {2, C});
        bn.run.run(bn_relu_bwd_reduce_apply_cpu, {&dy, &bn.affine, &bn.x, &bn.batch, &bn.gamma},
                   {&dx, &dgamma, &dbeta, &dsums});
        EXPECT_TRUE(test::bitwise_equal(dx, bn.dx));
        EXPECT_TRUE(test::bitwise_equal(dgamma, bn.dgamma));
        EXPECT_TRUE(test::bitwise_equal(dbeta, bn.dbeta));
        EXPECT_TRUE(test::bitwise_equal(dsums, bn.dsums));

        // The pool in front: x is pooled 2x2 first, then normalised.
        const Shape ps{xs[0], xs[1] / 2, xs[2] / 2, C};
        OpRunner run = bn.run;
        run.attrs.kernel = 2;
        run.attrs.stride = 2;
        HostTensor p(t, ps), arg(DType::U8, ps), psums(st, {2, C}), py(t, ps), pbatch(st, {2, C}), paff(st, {2, C});
        run.run(maxpool_stats_fwd_cpu, {&bn.x}, {&p, &arg, &psums});
        run.run(bn_relu_apply_cpu, {&p, &psums, &bn.gamma, &bn.beta}, {&py, &pbatch, &paff});
        std::vector<HostTensor> got;
        for (const HostTensor* h : {&p, &arg, &psums, &py, &pbatch, &paff}) got.emplace_back(h->dtype(), h->shape());
        run.run(pool_bn_relu_apply_cpu, {&bn.x, &bn.gamma, &bn.beta},
                {&got[0], &got[1], &got[2], &got[3], &got[4], &got[5]});
        const HostTensor* want[6] = {&p, &arg, &psums, &py, &pbatch, &paff};
        for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(test::bitwise_equal(got[i], *want[i])) << "output " << i;

        // Shapes: the merged nodes' outputs are those of the nodes apart.
        const Shape gs{C};
        Shape out[6];
        const Shape fwd_in[3] = {xs, gs, gs};
        bn_stats_relu_apply_shapes(ShapeCtx{fwd_in, 3, &bn.run.attrs, &bn.run.variant}, out, 4);
        EXPECT_EQ(out[0], xs);
        EXPECT_EQ(out[3], (Shape{2, C}));
        EXPECT_THROW(check_operand_counts(OpKind::BnStatsReluApply, 3, 3, bn.run.attrs), Error);
        const Shape bwd_in[5] = {xs, Shape{2, C}, xs, Shape{2, C}, gs};
        bn_relu_bwd_reduce_apply_shapes(ShapeCtx{bwd_in, 5, &bn.run.attrs, &bn.run.variant}, out, 4);
        EXPECT_EQ(out[0], xs);
        EXPECT_EQ(out[1], gs);
        EXPECT_EQ(out[3], (Shape{2, C}));
        EXPECT_THROW(check_operand_counts(OpKind::BnReluBwdReduceApply, 5, 1, bn.run.attrs), Error);
        pool_bn_relu_apply_shapes(ShapeCtx{fwd_in, 3, &run.attrs, &run.variant}, out, 6);
        EXPECT_EQ(out[0], ps);
        EXPECT_EQ(out[3], ps);
        EXPECT_EQ(out[5], (Shape{2, C}));
        EXPECT_THROW(check_operand_counts(OpKind::PoolBnReluApply, 3, 3, run.attrs), Error);
      }
}

// BnAddReluApply against BnReluApply then Add (+ ReLU): bit for
// bit in f32 and f64 (the BatchNorm's output is exact there before the sum);
// in f16 within one rounding of the output.
TEST(Fusion, ResidualApplyIsApplyThenAdd) {
  Rng rng(62);
  for (DType t : {DType::F32, DType::F64, DType::F16})
    for (bool relu : {false, true}) {
      SCOPED_TRACE(cat(dtype_name(t), relu ? " relu" : ""));
      const Shape xs{2, 4, 3, 8};
      test::BnChain bn(t, xs, rng, false, 2);
      bn.forward();  // the unfused BatchNorm output, bn.y
      const HostTensor r = test::random_tensor(t, xs, rng, -2, 2);
      HostTensor want(t, xs), got(t, xs), batch = bn.batch, affine = bn.affine;
      OpRunner add = bn.run;
      add.attrs.relu = relu;
      add.run(add_cpu, {&bn.y, &r}, {&want});
      OpRunner fused = bn.run;
      fused.attrs.relu = relu;
      fused.run(bn_add_relu_apply_cpu, {&bn.x, &bn.sums, &bn.gamma, &bn.beta, &r}, {&got, &batch, &affine});
      if (t == DType::F16) {
        // Apart, the BatchNorm's output is rounded to f16 before the sum; fused,
        // only the sum is: one f16 rounding (2^-11 relative, 4.9e-4) of the
        // BatchNorm's output, the sum's own rounding once more; 2e-3 leaves 2x.
        for (int64_t i = 0; i < want.numel(); ++i)
          ASSERT_NEAR(got.get(i), want.get(i), 2e-3 * (1 + std::abs(want.get(i))));
      } else {
        EXPECT_TRUE(test::bitwise_equal(want, got));
      }
      EXPECT_TRUE(test::bitwise_equal(batch, bn.batch));
      EXPECT_TRUE(test::bitwise_equal(affine, bn.affine));
    }
}

// Whole runs, every mode, over an epoch with an incomplete last batch: fusion
// on and off leave the same bits in every state tensor (f32).
TEST(Fusion, ChangesNoBitOfATrainingRunInF32) {
  for (const std::string& model :
       {std::string("resnet18"), std::string("resnet50"), std::string("cnn"), std::string("vgg16bn")}) {
    RunOptions o = testing::zoo_run(model, OptimizerKind::Sgd, ExecMode::FullCapture, 16);
    const auto train = testing::run_data(o, 3 * 16 - 5, 88);
    o.train.fusion = false;
    Trainer plain(o, testing::view_of(train), testing::view_of(train));
    plain.run_epoch();
    const auto ref = testing::state_of(plain);
    for (ExecMode mode : {ExecMode::Eager, ExecMode::FullCapture}) {
      o.mode = mode;
      o.train.fusion = true;
      Trainer fused(o, testing::view_of(train), testing::view_of(train));
      const FusionCounts& n = fused.model().fusions;
      EXPECT_GT(n.bn_add + n.pool_stats + n.bn_pool, 0);
      fused.run_epoch();
      EXPECT_EQ(testing::differing_tensors(ref, testing::state_of(fused), cat(model, " fused, ", mode_name(mode))), 0);
    }
  }
}

// A model a rule fires in, at 16 samples (the small GPT: a quarter width,
// windows of 32 tokens, AdamW as it trains).
RunOptions rule_run(const std::string& model) {
  if (model != "gpt2-d6") return testing::zoo_run(model, OptimizerKind::Sgd, ExecMode::FullCapture, 16);
  RunOptions o = testing::small_run("mlp", OptimizerKind::AdamW, ExecMode::FullCapture, 16);
  o.model = model_config(model, 0.25, 0, 0, 0, 32);
  return o;
}

// Each rule of the table alone (with the rule it builds on), over an epoch of
// full capture in f32: the same bits in every state tensor as without fusion,
// and the rule fires while no other does.
TEST(Fusion, EachRuleAloneChangesNoBit) {
  struct Case {
    std::vector<std::string> rules;  // the rule checked last, after what it builds on
    std::string model;
  };
  const std::vector<Case> cases = {{{"head"}, "cnn"},
                                   {{"head", "head_bn"}, "cnn"},
                                   {{"bn_add"}, "resnet18"},
                                   {{"add_relu_bwd"}, "resnet18"},
                                   {{"relu_grad_reduce"}, "resnet18"},
                                   {{"bn_pool"}, "vgg16bn"},
                                   {{"pool_stats"}, "cnn"},
                                   {{"stats_apply"}, "resnet18"},
                                   {{"pool_stats", "pool_bn"}, "cnn"},
                                   {{"bwd_phases"}, "resnet18"},
                                   {{"fc_gelu"}, "gpt2-d6"},
                                   {{"fc_gelu_bwd"}, "gpt2-d6"},
                                   {{"fc_residual"}, "gpt2-d6"},
                                   {{"ln_bwd_add"}, "gpt2-d6"}};
  std::set<std::string> covered;
  for (const Case& k : cases) covered.insert(k.rules.back());
  for (const FusionRule& r : fusion_rules())
    EXPECT_EQ(covered.count(std::string(r.name)), 1u) << "rule " << r.name << " has no case here";
  std::map<std::string, std::map<std::string, std::vector<float>>> plain;  // per model, the unfused run's state
  for (const Case& k : cases) {
    SCOPED_TRACE(cat(k.model, ": ", k.rules.back()));
    RunOptions o = rule_run(k.model);
    const auto train = testing::run_data(o, 3 * 16 - 5, 88);
    if (!plain.count(k.model)) {
      o.train.fusion = false;
      Trainer t(o, testing::view_of(train), testing::view_of(train));
      t.run_epoch();
      plain[k.model] = testing::state_of(t);
    }
    o.train.fusion = true;
    o.train.fusion_rules = k.rules;
    Trainer fused(o, testing::view_of(train), testing::view_of(train));
    const FusionCounts& n = fused.model().fusions;
    for (const FusionRule& r : fusion_rules()) {
      const bool on = std::find(k.rules.begin(), k.rules.end(), r.name) != k.rules.end();
      if (on) EXPECT_GT(n.*r.count, 0) << r.name << " did not fire";
      else EXPECT_EQ(n.*r.count, 0) << r.name << " fired but was not asked for";
    }
    fused.run_epoch();
    EXPECT_EQ(testing::differing_tensors(plain[k.model], testing::state_of(fused), k.rules.back()), 0);
  }
}

// f16 storage on the CPU (AMP): fusion rounds the BatchNorm + residual once
// instead of twice; its update is no further from f32's than the unfused one
// (resnet18 only: expect_amp_fusion_no_worse says why).
TEST(Fusion, ChangesAmpUpdatesOnlyByRounding) {
  RunOptions o = testing::zoo_run("resnet18", OptimizerKind::Sgd, ExecMode::FullCapture, 16);
  testing::expect_amp_fusion_no_worse(testing::one_step_amp_vs_f32(o, 16, 99), "resnet18");
}

}  // namespace
}  // namespace tr
