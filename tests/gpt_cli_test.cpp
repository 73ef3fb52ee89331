// The GPT models through the tools: tr-train learns synthetic tokens, and
// tr-bench reports tokens/s and the model FLOPs behind them (Note [model
// FLOPs]); on the CPU there is no tensor peak, so no MFU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include <fstream>

#include "harness/lib/report/json_report.h"
#include "harness/lib/text/text_corpora.h"
#include "tests/dataset_test_util.h"
#include "tests/tool_run.h"

namespace {

using tr::testing::run_tool;

TEST(GptCli, TrTrainLearnsSyntheticTokens) {
  const auto r = run_tool(
      "tr-train --model gpt2-d6 --width 0.25 --seq 32 --synthetic --train-subset 256 --val-subset 16 --batch 16 "
      "--epochs 2 --lr 3e-3 --clip-grad-norm 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("model gpt2-d6 (width 0.25, 32-token windows, vocabulary 264)"), std::string::npos) << r.out;
  // The last line: epoch 2's losses. The synthetic stream's best loss is about
  // 1.9 at this vocabulary (3 tokens in 4 follow a fixed successor); ln 264 =
  // 5.58 is where an untrained model stands. 32 steps take it below 4.5.
  const size_t last = r.out.rfind("\n    2 ");
  ASSERT_NE(last, std::string::npos) << r.out;
  double train_loss = 0;
  int epoch = 0, res = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str() + last, "%d %d %lf", &epoch, &res, &train_loss), 3) << r.out;
  EXPECT_EQ(res, 32);
  EXPECT_LT(train_loss, 4.5) << r.out;
}

// --val-every N: a validation line after run steps 8 and 24 (epoch 1 is
// steps 1..16, epoch 2 17..32; steps 16 and 32 are the epochs' own
// validations), and a negative N is refused.
TEST(GptCli, TrTrainValidatesEveryNSteps) {
  const auto r = run_tool(
      "tr-train --model gpt2-d6 --width 0.25 --seq 32 --synthetic --train-subset 256 --val-subset 16 --batch 16 "
      "--epochs 2 --lr 3e-3 --val-every 8");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* step : {"  step 8: val_loss ", "  step 24: val_loss "})
    EXPECT_NE(r.out.find(step), std::string::npos) << step << " missing:\n" << r.out;
  for (const char* step : {"  step 16: ", "  step 32: "}) EXPECT_EQ(r.out.find(step), std::string::npos) << r.out;
  const auto bad = run_tool("tr-train --model gpt2-d6 --synthetic --val-every -1");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--val-every"), std::string::npos) << bad.err;
}

TEST(GptCli, TrBenchReportsTokensAndModelFlops) {
  const std::string json = testing::TempDir() + "tr_gpt_bench_" + std::to_string(getpid()) + ".json";
  const auto r = run_tool(
      "tr-bench --device cpu --model gpt2-d6 --width 0.25 --seq 16 --batch 4 --mode eager,full-capture --warmup 1 "
      "--iters 2 --repetitions 1 --json " +
      json);
  ASSERT_EQ(r.code, 0) << r.err;
  const tr::bench::BenchReport rep = tr::bench::read_report(json);
  ASSERT_EQ(rep.cases.size(), 2u);
  for (const auto& c : rep.cases) {
    const auto& k = c.counters;
    ASSERT_TRUE(k.count("tokens_per_second")) << c.mode;
    EXPECT_DOUBLE_EQ(k.at("tokens_per_second"), 16 * k.at("samples_per_second"));
    // 6 N + 12 L C T: N = 264 x 96 + 6 blocks of 111,840 + 192 (C = 96; the
    // position table left out), L = 6, C = 96, T = 16.
    const double n = 264.0 * 96 + 6 * (2 * 192 + 288 * 97 + 96 * 97 + 384 * 97 + 96 * 385) + 192;
    EXPECT_DOUBLE_EQ(k.at("model_flops_per_token"), 6 * n + 12.0 * 6 * 96 * 16);
    EXPECT_DOUBLE_EQ(k.at("model_tflops_per_gpu"), k.at("tokens_per_second") * k.at("model_flops_per_token") / 1e12);
    EXPECT_FALSE(k.count("mfu")) << "a CPU has no tensor peak in the table";
  }
  std::filesystem::remove(json);
  tr::testing::expect_tool_user_error("tr-train --model gpt2-d6 --synthetic --seq 32 --seq-warmup 32",
                                      "--seq-warmup must be in [4, 32), got 32");
  tr::testing::expect_tool_user_error("tr-bench --device cpu --model gpt2-d6 --image-size 32",
                                      "--image-size is for image models");
  tr::testing::expect_tool_user_error("tr-bench --device cpu --model cnn --seq 32", "--seq is for GPT models");
  tr::testing::expect_tool_user_error("tr-bench --device cpu --model gpt2-d6 --seq 512",
                                      "model gpt2-d6 reads windows of 1 to 256 tokens (its context), not 512");
}

// `tr-bench tta` for text (Note [tta targets]): 128 windows at batch 16 are 8
// steps, validated after steps 2, 4 and 6 and at the end; the JSON holds the
// four validations and the loss target. The image target's flag is refused.
TEST(GptCli, TrBenchTtaJudgesTheValidationLoss) {
  tr::testing::TempDir dir;
  const auto r = run_tool(
      "tr-bench tta --model gpt2-d6 --width 0.25 --seq 32 --synthetic --train-subset 128 --val-subset 8 --batch 16 "
      "--epochs 1 --val-every 2 --runs 1 --precision fp32 --target-loss 5.5 --json " +
      dir.file("t.json") + " --mllog " + dir.file("t.mllog"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tta: gpt2-d6, target validation loss 5.500 (main weights), 1 run(s)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("final validation loss:"), std::string::npos) << r.out;
  std::ifstream f(dir.file("t.json"));
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["tta"]["metric"], "val_loss");
  EXPECT_EQ(j["tta"]["target_loss"], 5.5);
  EXPECT_EQ(j["tta"]["recipe"]["val_every"], 2);
  EXPECT_EQ(j["tta"]["recipe"]["seq"], 32);
  const nlohmann::json& evals = j["tta"]["runs"][0]["evals"];
  ASSERT_EQ(evals.size(), 4u) << evals.dump();
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(evals[k]["step"], 2 * (k + 1));
  tr::testing::expect_tool_user_error("tr-bench tta --model gpt2-d6 --synthetic --target-acc 0.9",
                                      "--target-acc is for image models; gpt2-d6 takes --target-loss");
  tr::testing::expect_tool_user_error("tr-bench tta --model cnn --synthetic --target-loss 1",
                                      "--target-loss is for GPT models; cnn takes --target-acc");
  tr::testing::expect_tool_user_error("tr-bench tta --model gpt2-d6 --synthetic --target-loss 0",
                                      "--target-loss must be in");
}

// The small GPT on the real corpus (ci/setup.sh installs its package), made
// into shards by tr-data: 2 epochs of 64 steps over 1024 windows of 64 bytes
// at a quarter width. A uniform guess scores ln 264 = 5.58 nats a token; the
// bytes' own frequencies (English text and markup, about 4.5 bits a byte)
// about 3.1. Measured: 3.42 after the first epoch, 3.31 after the second.
// Below 4 the model has learned the bytes' statistics; the second epoch must
// improve on the first.
TEST(GptCli, TheValidationLossFallsOnTheRealCorpus) {
  const tr::text::NamedCorpus& c = tr::text::named_corpora().front();
  if (!std::filesystem::is_directory(c.spec.dir))
    GTEST_SKIP() << c.spec.dir << " not found (apt-get install " << c.package << ")";
  tr::testing::TempDir dir;
  ASSERT_EQ(run_tool("tr-data shards --out " + dir.file("text")).code, 0);
  const auto r = run_tool("tr-train --model gpt2-d6 --width 0.25 --seq 64 --data-dir " + dir.file("text") +
                          " --train-subset 1024 --val-subset 64 --batch 16 --epochs 2 --lr 3e-3 --clip-grad-norm 1");
  ASSERT_EQ(r.code, 0) << r.err;
  double val[2] = {0, 0};
  for (int e = 0; e < 2; ++e) {
    const size_t at = r.out.find("\n    " + std::to_string(e + 1) + " ");
    ASSERT_NE(at, std::string::npos) << r.out;
    double train_loss = 0, train_acc = 0;
    int epoch = 0, res = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str() + at, "%d %d %lf %lf %lf", &epoch, &res, &train_loss, &train_acc, &val[e]), 5);
  }
  std::printf("[ text ] gpt2-d6 at width 0.25 on %s: validation loss %.4f -> %.4f nats a token\n", c.package.c_str(),
              val[0], val[1]);
  EXPECT_LT(val[0], 4.0) << r.out;
  EXPECT_LT(val[1], val[0]) << r.out;
  EXPECT_NE(r.out.find(" bits/byte "), std::string::npos) << r.out;
}

}  // namespace
