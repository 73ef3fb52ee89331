// The registry's GPT models: GPT-2 124M with llm.c's parameter count and
// shapes, the small one of its blocks, their options and refusals, the model
// FLOPs a bench reports for them (Note [model FLOPs]), and, on the CPU and the
// GPU, the small one's loss at initialisation and on one batch it overfits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <span>

#include "datasets/token_window_set.h"
#include "datasets/token_windows.h"
#include "framework/graph/model_builder.h"
#include "framework/graph/model_registry.h"
#include "framework/graph/shape_inference.h"
#include "harness/lib/bench/model_flops.h"
#include "tests/gpu_test_util.h"
#include "tests/model_test_util.h"
#include "tests/ops_cpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::parameter_count;

// 124,475,904: llm.c's count for GPT-2 124M with the vocabulary padded to
// 50,304 (wte 50,304 x 768, wpe 1,024 x 768, 12 blocks of 7,087,872, the
// final LayerNorm's 1,536; the head is the token table). gpt2-d6: 264 x 384
// + 256 x 384 + 6 x 1,774,464 + 768.
TEST(GptModel, ParameterCountsAreLlmcs) {
  const CompiledModel gpt2 = build_model(model_config("gpt2"), TrainConfig{}, 1);
  EXPECT_EQ(parameter_count(gpt2), 124475904);
  const CompiledModel d6 = build_model(model_config("gpt2-d6"), TrainConfig{}, 1);
  EXPECT_EQ(parameter_count(d6), 10847232);
  // --width scales the head dimension: 12 heads of 32 at 0.5.
  const CompiledModel half = build_model(model_config("gpt2", 0.5), TrainConfig{}, 1);
  const int64_t block = 2 * 768 + 1152 * 385 + 384 * 385 + 1536 * 385 + 384 * 1537;  // LNs, qkv, proj, up, down
  EXPECT_EQ(parameter_count(half), 50304 * 384 + 1024 * 384 + 12 * block + 768);
}

TEST(GptModel, FeatureShapesFollowTheSequence) {
  const ModelConfig mc = model_config("gpt2", 1.0, 0, 0, 0, 256);
  EXPECT_EQ(mc.seq_len, 256);
  EXPECT_EQ(mc.classes, 50304);
  const CompiledModel m = build_model(mc, TrainConfig{}, 2);
  const std::vector<Shape> s = infer_shapes(m.cg, Variant::TrainBase, VariantDims{2, 2, 256, 256});
  auto shape = [&](const std::string& name) {
    for (TensorId t = 0; t < m.cg.num_tensors(); ++t)
      if (m.cg.tensor(t).name == name) return s[size_t(t)];
    ADD_FAILURE() << "no tensor " << name;
    return Shape{};
  };
  EXPECT_EQ(shape("h0.qkv.y"), (Shape{2, 256, 2304}));
  EXPECT_EQ(shape("h0.attn.y"), (Shape{2, 256, 768}));
  EXPECT_EQ(shape("h11.up.y"), (Shape{2, 256, 3072}));
  EXPECT_EQ(shape("h11.res2.y"), (Shape{2, 256, 768}));
  EXPECT_EQ(shape("head.y"), (Shape{2, 256, 50304}));
}

TEST(GptModel, OptionsThatDoNotFitAreOneLineUserErrors) {
  using test::user_error;
  EXPECT_NE(user_error([] {
              model_config("gpt2", 1.0, 0, 0, 0, 1025);
            }).find("model gpt2 reads windows of 1 to 1024 tokens (its context), not 1025"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              model_config("gpt2", 1.0, 32);
            }).find("model gpt2 reads tokens: an image size or channel count has no meaning for it"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              model_config("cnn", 1.0, 0, 0, 0, 64);
            }).find("model cnn reads images: a sequence length has no meaning for it"),
            std::string::npos);
  // Width 0.3 leaves heads of 19 channels, which attention does not take.
  EXPECT_NE(user_error([] {
              build_model(model_config("gpt2-d6", 0.3), TrainConfig{}, 1);
            }).find("{width} 0.3 gives heads of 19 channels (64 at 1); attention takes 8, 16, 32, 64 or 128"),
            std::string::npos);
}

// Note [model FLOPs]: 6 N + 12 L C T with N = 124,475,904 - 786,432 (the
// position table) = 123,689,472 and L C T = 12 x 768 x 1024.
TEST(GptModel, ModelFlopsAreSixNPlusTwelveLct) {
  const CompiledModel m = build_model(model_config("gpt2"), TrainConfig{}, 1);
  const bench::SequenceFlops f = bench::sequence_flops(m);
  EXPECT_EQ(f.params, 123689472);
  EXPECT_EQ(f.layers, 12);
  EXPECT_EQ(f.channels, 768);
  EXPECT_EQ(f.seq, 1024);
  EXPECT_EQ(f.per_token(), 6.0 * 123689472 + 12.0 * 12 * 768 * 1024);
  EXPECT_EQ(bench::tensor_peak_flops("NVIDIA H100 80GB HBM3"), 989e12);
  EXPECT_EQ(bench::tensor_peak_flops("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(bench::tensor_peak_flops("NVIDIA H200"), 989e12);
  EXPECT_EQ(bench::tensor_peak_flops("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(bench::tensor_peak_flops("Tesla T4"), 0.0);
}

// gpt2-d6 at a quarter width (6 heads of 16: C = 96) on windows of 32 tokens.
RunOptions small_gpt(Backend backend, ExecMode mode) {
  RunOptions o;
  o.model = model_config("gpt2-d6", 0.25, 0, 0, 0, 32);
  o.backend = backend;
  o.mode = mode;
  o.train.optimizer = OptimizerKind::AdamW;
  o.train.weight_decay = 0.f;
  o.train.label_smoothing = 0.f;
  o.train.max_grad_norm = 1.f;
  o.batch = 2;
  o.epochs = 150;  // at most; one step each
  o.lr.base_lr = 3e-3f;
  o.lr.kind = LrSchedule::Constant;
  o.seed = 5;
  return o;
}

// At initialisation every logit is near 0 (the head reads a LayerNorm's output
// through a table of std 0.02), so the loss is near ln(vocab) = ln 264 = 5.58.
// Then one batch of 2 windows, repeated, is learned by heart: its loss falls
// below 0.1. Eager and full capture give the same bits all the way.
void expect_overfits_one_batch(Backend backend, const testing::PrecisionCase& precision = testing::kPrecisions[0]) {
  const std::vector<uint16_t> stream = data::make_synthetic_tokens(2 * 32 + 1, 264, 9);
  const data::TokenWindowSet batch = data::consecutive_windows(stream, 32, "one batch");
  ASSERT_EQ(batch.count, 2);
  std::map<std::string, std::vector<float>> eager_state;
  for (ExecMode mode : {ExecMode::Eager, ExecMode::FullCapture}) {
    RunOptions o = small_gpt(backend, mode);
    testing::set_precision_case(o.train, precision);
    Trainer t(o, data::data_view(batch), data::data_view(batch));
    const EpochStats first = t.run_epoch();
    EpochStats last = first;
    int steps = 1;  // one per epoch
    for (; steps < 150 && last.train_loss >= 0.05; ++steps) last = t.run_epoch();
    std::printf("[ gpt2-d6 ] %s %s, %s: loss at the first step %.3f (ln 264 = %.3f), after %d steps %.4f\n",
                backend == Backend::Cuda ? "cuda" : "cpu", precision.name, mode_name(mode).c_str(), first.train_loss,
                std::log(264.0), steps, last.train_loss);
    // Within 0.1 of ln 264: the logits' spread at initialisation adds a few
    // hundredths (measured 5.578 on the CPU); a model whose head or embedding were scaled
    // wrong starts far from it.
    EXPECT_NEAR(first.train_loss, std::log(264.0), 0.1);
    EXPECT_LT(last.train_loss, 0.1);
    const auto s = testing::state_of(t);
    if (mode == ExecMode::Eager) {
      eager_state = s;
      continue;
    }
    testing::differing_tensors(eager_state, s, "eager vs full capture");
  }
}

// GPT-2 124M itself, one step on 8 windows of 16 tokens. At initialisation
// the head's logits are the final LayerNorm's unit-variance rows times a table
// of std 0.02: Gaussian with variance 768 x 0.02^2 = 0.307, so the expected
// loss is ln 50304 + 0.307 / 2 = 10.98. The label's logit varies by token
// (std 0.55): the mean over 128 tokens by 0.05, hence 0.15. A head untied or
// scaled wrong, or a missing LayerNorm, is off by far more.
void expect_gpt2_starts_at_ln_vocab(Backend backend) {
  const std::vector<uint16_t> stream = data::make_synthetic_tokens(8 * 16 + 1, 50304, 4);
  const data::TokenWindowSet batch = data::consecutive_windows(stream, 16, "one batch");
  RunOptions o = small_gpt(backend, ExecMode::FullCapture);
  o.model = model_config("gpt2", 1.0, 0, 0, 0, 16);
  o.epochs = 1;
  o.batch = 8;
  o.validate = false;
  Trainer t(o, data::data_view(batch), data::data_view(batch));
  const double loss = t.run_epoch().train_loss;
  const double expected = std::log(50304.0) + 768 * 0.02 * 0.02 / 2;
  std::printf("[ gpt2 ] %s: loss at the first step %.4f (ln 50304 + 0.154 = %.4f)\n",
              backend == Backend::Cuda ? "cuda" : "cpu", loss, expected);
  EXPECT_NEAR(loss, expected, 0.15);
}

TEST(GptModel, Gpt2StartsAtLnVocab) { expect_gpt2_starts_at_ln_vocab(Backend::Cpu); }

TEST(GptModelGpu, Gpt2StartsAtLnVocab) {
  SKIP_WITHOUT_GPU();
  expect_gpt2_starts_at_ln_vocab(Backend::Cuda);
}

TEST(GptModel, TheSmallGptStartsAtLnVocabAndOverfitsOneBatch) { expect_overfits_one_batch(Backend::Cpu); }

TEST(GptModelGpu, TheSmallGptStartsAtLnVocabAndOverfitsOneBatch) {
  SKIP_WITHOUT_GPU();
  expect_overfits_one_batch(Backend::Cuda);
}

// The same in bf16 and fp16 AMP on the GPU: the tensor-core attention and
// cuBLASLt in either 16-bit type.
TEST(GptModelGpu, TheSmallGptOverfitsOneBatchInBf16AndAmp) {
  SKIP_WITHOUT_GPU();
  for (const testing::PrecisionCase& p : testing::kPrecisions)
    if (p.amp) expect_overfits_one_batch(Backend::Cuda, p);
}

}  // namespace
}  // namespace tr
