// Note [step roofline]: a step's FLOPs counted from its own graph, checked
// against hand counts (the mlp) and against the model formula (GPT-2, Note
// [model FLOPs]); one node's roofline bound on both sides of the ridge; the
// GPUs' peaks; the counters; and tr-bench's report on the CPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "framework/graph/memory_plan.h"
#include "framework/graph/model_builder.h"
#include "harness/lib/bench/model_flops.h"
#include "harness/lib/bench/step_roofline.h"
#include "harness/lib/report/json_report.h"
#include "tests/model_test_util.h"
#include "tests/tool_run.h"

namespace tr::bench {
namespace {

// One training variant of m at per-rank batch b, height (or sequence length) h.
PlanSet train_plan(const CompiledModel& m, int64_t b, int64_t h) {
  std::array<VariantDims, kVariantCount> d{};
  d[vidx(Variant::TrainBase)] = {b, b, h, h};
  d[vidx(Variant::ValBase)] = {b, b, h, h};
  return plan_memory(m, d, 0);
}

// The mlp, 784-1024-512-256-10, at batch 8. Its step's products, by hand:
//   forward          2 B (784 x 1024 + 1024 x 512 + 512 x 256 + 256 x 10)
//   weight gradients the same
//   data gradients   2 B (1024 x 512 + 512 x 256 + 256 x 10): the first fc
//                    has none, its input is the images;
//   = 2 x 8 x (3 x 657,920 + 2 x 802,816) = 57,270,272.
constexpr int64_t kMlpBatch = 8;
constexpr double kMlpProducts = 2.0 * kMlpBatch * (3.0 * (1024 * 512 + 512 * 256 + 256 * 10) + 2.0 * 784 * 1024);
// Its element-wise FLOPs, bounded apart. Per weight (P = 1,462,538 with the
// biases), AdamW's 16, its EMA's 3 and the finite check's 1 (range_node_cost.cpp):
// at least 20 P. The regions add their alignment padding, at most 127
// elements for each of the 8 tensors; and each activation element of a
// sample (784 inputs, 1024 + 512 + 256 + 10 = 1,802 fc outputs) costs at most
// 8 FLOPs in the other nodes (an input's scaling 2; a hidden unit's bias, bias
// gradient, ReLU and ReLU gradient 4; a logit's bias, bias gradient and
// softmax 8): at most 20 (P + 8 x 127) + 8 B (784 + 1,802).
constexpr double kMlpWeightFlops = 20.0 * 1462538;
constexpr double kMlpElementwiseMost = 20.0 * (1462538 + 8 * 127) + 8.0 * kMlpBatch * (784 + 1802);

TEST(StepRoofline, MlpProductsAreTheHandCount) {
  const CompiledModel m = build_model(model_config("mlp"), TrainConfig{}, kMlpBatch);
  ASSERT_EQ(testing::parameter_count(m), 1462538);
  const StepCost s = step_cost(m, train_plan(m, kMlpBatch, 28), Variant::TrainBase, std::nullopt);
  std::printf(
      "[ step roofline ] mlp b%lld: products %.0f (by hand %.0f), element-wise %.0f (in [%.0f, %.0f]), "
      "total %.0f FLOPs, %.0f bytes over %lld nodes\n",
      static_cast<long long>(kMlpBatch), s.flops.products, kMlpProducts, s.flops.elementwise, kMlpWeightFlops,
      kMlpElementwiseMost, s.flops.total(), s.bytes, static_cast<long long>(s.nodes));
  EXPECT_EQ(s.flops.products, kMlpProducts);  // integers below 2^53: exact in doubles
  EXPECT_EQ(s.flops.attention, 0.0);
  EXPECT_GE(s.flops.elementwise, kMlpWeightFlops);
  EXPECT_LE(s.flops.elementwise, kMlpElementwiseMost);
  EXPECT_EQ(s.bound_s, 0.0) << "no peaks, no bound";
  // One step: one input buffer's first layer, no transfer, no once-an-epoch clears.
  const std::vector<GraphId> g = step_graph_ids(m.cg, Variant::TrainBase);
  for (GraphId left_out : {GraphId::TRANSFER_A, GraphId::TRANSFER_B, GraphId::ZERO_GRAD, GraphId::CLEAR_METRICS,
                           GraphId::FIRST_LAYER_FWD_B})
    EXPECT_EQ(std::count(g.begin(), g.end(), left_out), 0) << graph_name(left_out);
  for (GraphId in : {GraphId::FIRST_LAYER_FWD_A, GraphId::DEEP_FWD_BWD, GraphId::FIRST_LAYER_BWD, GraphId::OPTIMIZER})
    EXPECT_EQ(std::count(g.begin(), g.end(), in), 1) << graph_name(in);
  EXPECT_EQ(step_graph_ids(m.cg, Variant::ValBase), (std::vector<GraphId>{GraphId::INF_MAIN_A, GraphId::INF_EMA}));
}

// gpt2-d6 at a quarter width (L = 6 blocks, C = 96 in 6 heads of 16,
// vocabulary V = 264) on B = 2 windows of T = 32 tokens, against Note [model
// FLOPs]' 6 N + 12 L C T per token. The graph's products are the linear
// layers' weights, 12 C^2 per block, and the tied head's V x C, each 6 FLOPs
// per token (forward, data and weight gradient): the formula's 6 N less what
// N holds beyond them, the biases (9 C per block) and LayerNorms' gains and
// shifts (4 C per block, 2 C for the last), which the graph counts as
// element-wise work. The head is the token table, counted once by both; the
// position table is in neither. Attention: the formula's 12 L C T per token
// counts all T^2 pairs, four products forward and backward; the graph counts
// the T (T + 1) / 2 causal pairs the kernels compute, in two products forward
// and five backward (the scores again): 7 L B C T (T + 1). So
//   formula - graph = 6 B T (13 L C + 2 C) + L B C (12 T^2 - 7 T (T + 1)),
// exactly: every term is an integer below 2^53.
TEST(StepRoofline, GptProductsAreTheModelFormulaLessWhatItLeavesOut) {
  const int64_t B = 2, T = 32;
  const CompiledModel m = build_model(model_config("gpt2-d6", 0.25, 0, 0, 0, T), TrainConfig{}, B);
  const SequenceFlops f = sequence_flops(m);
  ASSERT_EQ(f.layers, 6);
  ASSERT_EQ(f.channels, 96);
  const double L = 6, C = 96, V = 264;
  const StepCost s = step_cost(m, train_plan(m, B, T), Variant::TrainBase, std::nullopt);
  const double formula = double(B * T) * f.per_token();
  std::printf(
      "[ step roofline ] gpt2-d6 (C 96) b%lld t%lld: products %.0f, attention %.0f, element-wise %.0f; "
      "6N + 12LCT x tokens %.0f (the graph's products and attention %.4f of it)\n",
      static_cast<long long>(B), static_cast<long long>(T), s.flops.products, s.flops.attention, s.flops.elementwise,
      formula, (s.flops.products + s.flops.attention) / formula);
  EXPECT_EQ(s.flops.products, 6.0 * double(B * T) * (12 * L * C * C + V * C));
  EXPECT_EQ(s.flops.attention, 7 * L * double(B) * C * double(T * (T + 1)));
  EXPECT_EQ(formula - s.flops.products - s.flops.attention,
            6.0 * double(B * T) * (13 * L * C + 2 * C) + L * double(B) * C * double(12 * T * T - 7 * T * (T + 1)));
}

// Fusion merges nodes (Note [fusion]) so that intermediates skip memory: the
// products and the element-wise arithmetic count the same either way (each
// fused kind's rate is the sum of its parts'), the bytes fewer. The cnn holds
// the pool, BatchNorm and head fusions, resnet18 the residual adds'.
TEST(StepRoofline, FusionMovesBytesNotFlops) {
  struct Case {
    const char* model;
    int side;
  };
  for (const Case& k : {Case{"cnn", 28}, Case{"resnet18", 32}}) {
    TrainConfig plain;
    plain.fusion = false;
    const CompiledModel a = build_model(model_config(k.model, 0.25), TrainConfig{}, 4);
    const CompiledModel b = build_model(model_config(k.model, 0.25), plain, 4);
    const StepCost fused = step_cost(a, train_plan(a, 4, k.side), Variant::TrainBase, std::nullopt);
    const StepCost apart = step_cost(b, train_plan(b, 4, k.side), Variant::TrainBase, std::nullopt);
    std::printf("[ step roofline ] %s w0.25 b4: products %.0f, element-wise %.0f; bytes %.0f fused, %.0f apart\n",
                k.model, fused.flops.products, fused.flops.elementwise, fused.bytes, apart.bytes);
    EXPECT_GT(fused.flops.products, 0.0) << k.model;
    EXPECT_EQ(fused.flops.products, apart.flops.products) << k.model;
    EXPECT_EQ(fused.flops.elementwise, apart.flops.elementwise) << k.model;
    EXPECT_LT(fused.bytes, apart.bytes) << k.model;
    EXPECT_LT(fused.nodes, apart.nodes) << k.model;
  }
}

// FcFwd over x [rows,784], w [1024,784], b [1024]: 2 x rows x 784 x 1024 in
// products, a bias add per output, and x, w, b read and y written once.
NodeCost fc_fwd_cost(int64_t rows, DType t) {
  OpAttrs a;
  a.has_bias = true;
  const VariantDims d{rows, rows, 1, 1};
  const TensorRef in[] = {{nullptr, t, {rows, 784}}, {nullptr, t, {1024, 784}}, {nullptr, t, {1024}}};
  const TensorRef out[] = {{nullptr, t, {rows, 1024}}};
  return compute_node_cost(OpKind::FcFwd, OpCall{in, 3, out, 1, &a, &d, nullptr});
}

TEST(StepRoofline, OneNodesBoundOnEitherSideOfTheRidge) {
  // fp32, 8 rows on the H200: 12,853,248 FLOPs over 3,273,216 bytes, an
  // intensity of 3.9 below the ridge 67e12 / 4.8e12 = 14: HBM bounds it.
  const NodeCost small = fc_fwd_cost(8, DType::F32);
  EXPECT_EQ(small.flops.products, 2.0 * 8 * 784 * 1024);
  EXPECT_EQ(small.flops.elementwise, 8.0 * 1024);
  EXPECT_EQ(small.bytes, 4.0 * (8 * 784 + 1024 * 784 + 1024 + 8 * 1024));
  const Peaks f32 = h200_peaks(DType::F32);
  EXPECT_DOUBLE_EQ(node_bound_s(small, f32), 3273216 / 4.8e12);
  // f16, 4096 rows: 6,580,862,976 FLOPs over 16,418,816 bytes, an intensity
  // of 401 above the ridge 989e12 / 4.8e12 = 206: the tensor cores bound it.
  const NodeCost big = fc_fwd_cost(4096, DType::F16);
  EXPECT_EQ(big.flops.total(), 2.0 * 4096 * 784 * 1024 + 4096.0 * 1024);
  EXPECT_EQ(big.bytes, 2.0 * (4096 * 784 + 1024 * 784 + 1024 + 4096 * 1024));
  EXPECT_DOUBLE_EQ(node_bound_s(big, h200_peaks(DType::F16)), 6580862976 / 989e12);
  // FcBwdData reads x for its shape only: dy, w read and dx written.
  OpAttrs none;
  const VariantDims d{8, 8, 1, 1};
  const TensorRef in[] = {
      {nullptr, DType::F32, {8, 1024}}, {nullptr, DType::F32, {1024, 784}}, {nullptr, DType::F32, {8, 784}}};
  const TensorRef out[] = {{nullptr, DType::F32, {8, 784}}};
  const NodeCost bwd = compute_node_cost(OpKind::FcBwdData, OpCall{in, 3, out, 1, &none, &d, nullptr});
  EXPECT_EQ(bwd.flops.products, 2.0 * 8 * 1024 * 784);
  EXPECT_EQ(bwd.bytes, 4.0 * (8 * 1024 + 1024 * 784 + 8 * 784));
}

// AdamW over 1,000 f32 weights (param, grad, m, v): 16 FLOPs a weight; the
// gradient read, the weights, m and v read and written. Its tail's EMA and
// compute copy add theirs.
TEST(StepRoofline, AnOptimizerReadsItsGradientAndMovesItsState) {
  ResolvedRange r;
  r.elems = 1000;
  const ResolvedRange ops[] = {r, r, r, r};
  const NodeCost c = range_node_cost(RangeOp::AdamW, RangeAttrs{}, ops);
  EXPECT_EQ(c.flops.elementwise, 16.0 * 1000);
  EXPECT_EQ(c.bytes, 4.0 * 1000 * (2 + 1 + 2 + 2));
  EXPECT_EQ(range_node_cost(RangeOp::AllReduceSum, RangeAttrs{}, ops).bytes, 0.0) << "the interconnect's";
  // Its tail (attrs.ema): the EMA moved, 3 FLOPs and 8 bytes more a weight;
  // the bf16 compute copy written, 2 bytes. Without an EMA the copy comes
  // straight after v, and is still written only.
  ResolvedRange copy = r;
  copy.dtype = DType::BF16;
  RangeAttrs tail;
  tail.ema = true;
  const ResolvedRange with_ema[] = {r, r, r, r, r, copy};
  const NodeCost e = range_node_cost(RangeOp::AdamW, tail, with_ema);
  EXPECT_EQ(e.flops.elementwise, 19.0 * 1000);
  EXPECT_EQ(e.bytes, 1000 * (4.0 * (2 + 1 + 2 + 2 + 2) + 2));
  tail.ema = false;
  const ResolvedRange without[] = {r, r, r, r, copy};
  const NodeCost w = range_node_cost(RangeOp::AdamW, tail, without);
  EXPECT_EQ(w.flops.elementwise, 16.0 * 1000);
  EXPECT_EQ(w.bytes, 1000 * (4.0 * (2 + 1 + 2 + 2) + 2));
}

// The peaks by the name CUDA gives a GPU: NVIDIA's data sheets (roofline.cpp).
TEST(StepRoofline, PeaksOfTheGpusTheTableKnows) {
  const auto h100 = device_peaks("NVIDIA H100 80GB HBM3", DType::F16);
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->flops, 989e12);
  EXPECT_EQ(h100->bytes, 3.35e12);
  EXPECT_EQ(device_peaks("NVIDIA H100 80GB HBM3", DType::BF16)->flops, 989e12);
  EXPECT_EQ(device_peaks("NVIDIA H100 80GB HBM3", DType::F32)->flops, 67e12);
  EXPECT_EQ(device_peaks("NVIDIA H100 PCIe", DType::F16)->flops, 756e12);
  EXPECT_EQ(device_peaks("NVIDIA H100 PCIe", DType::F32)->bytes, 2.0e12);
  for (DType t : {DType::F16, DType::F32}) {
    EXPECT_EQ(device_peaks("NVIDIA H200", t)->flops, h200_peaks(t).flops);
    EXPECT_EQ(device_peaks("NVIDIA H200", t)->bytes, 4.8e12);
  }
  EXPECT_FALSE(device_peaks("Tesla T4", DType::F16).has_value());
  EXPECT_FALSE(device_peaks("Intel(R) Xeon(R) Processor", DType::F32).has_value());
}

// 3 GFLOP per rank's step over 2 ranks in a 2.5 ms median, with a 1 ms bound.
TEST(StepRoofline, CountersAreEveryRanksFlopsAndOneRanksBound) {
  StepCost s;
  s.flops.products = 3e9;
  s.bound_s = 1e-3;
  const Peaks p = h200_peaks(DType::F16);
  const StepRooflineCounters c = step_roofline_counters(s, 2, 2.5, p);
  EXPECT_EQ(c.flops_per_step, 6e9);
  EXPECT_DOUBLE_EQ(c.tflops_per_gpu, 1.2);  // 3e9 / 2.5e-3 s; a few roundings
  EXPECT_DOUBLE_EQ(*c.flop_utilisation, 1.2e12 / 989e12);
  EXPECT_DOUBLE_EQ(*c.bound_ms, 1.0);
  EXPECT_DOUBLE_EQ(*c.of_roofline, 0.4);
  const StepRooflineCounters cpu = step_roofline_counters(s, 2, 2.5, std::nullopt);
  EXPECT_FALSE(cpu.flop_utilisation || cpu.bound_ms || cpu.of_roofline);
}

// tr-bench on the CPU: the graph's FLOPs and the rate they give, no peaks.
TEST(StepRoofline, TrBenchReportsTheGraphsFlopsOnTheCpu) {
  const std::string json = ::testing::TempDir() + "tr_step_roofline_" + std::to_string(getpid()) + ".json";
  const auto r = testing::run_tool(
      "tr-bench --device cpu --model mlp --batch 8 --mode full-capture --warmup 1 --iters 2 --repetitions 1 --json " +
      json);
  ASSERT_EQ(r.code, 0) << r.err;
  const BenchReport rep = read_report(json);
  ASSERT_EQ(rep.cases.size(), 1u);
  const auto& k = rep.cases[0].counters;
  ASSERT_TRUE(k.count("graph_flops_per_step"));
  const double flops = k.at("graph_flops_per_step");
  std::printf("[ step roofline ] tr-bench mlp b8 on the CPU: graph_flops_per_step %.0f, graph_tflops_per_gpu %g\n",
              flops, k.at("graph_tflops_per_gpu"));
  // The hand count of the products plus the element-wise bounds above.
  EXPECT_GE(flops, kMlpProducts + kMlpWeightFlops);
  EXPECT_LE(flops, kMlpProducts + kMlpElementwiseMost);
  // One repetition: its step time is the median; the same division as the harness's.
  EXPECT_DOUBLE_EQ(k.at("graph_tflops_per_gpu"), flops / 1 / (rep.cases[0].step_ms[0] * 1e-3) / 1e12);
  for (const char* gpu_only : {"graph_flop_utilisation", "roofline_bound_ms", "of_roofline"})
    EXPECT_FALSE(k.count(gpu_only)) << gpu_only << ": a CPU has no peaks in the table";
  std::filesystem::remove(json);
}

}  // namespace
}  // namespace tr::bench
