// The time-to-accuracy task on the CPU (a small cnn, and a small GPT judged by
// its validation loss, on synthetic data): every number it reports is
// consistent with the others, the JSON reads back, the MLLOG lines parse, and
// the HTML section draws one line per seed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "datasets/token_window_set.h"
#include "datasets/token_windows.h"
#include "harness/lib/bench/context_info.h"
#include "harness/lib/report/report_cli.h"
#include "harness/lib/tta/tta_html.h"
#include "harness/lib/tta/tta_report.h"
#include "tests/golden_files.h"
#include "tests/train_test_util.h"

namespace tr::bench {
namespace {

TtaReport small_tta_report() {
  static const auto train = testing::model_data("cnn", 12 * 32, 71);
  static const auto test = testing::model_data("cnn", 64, 72);
  TtaSpec spec;
  spec.run = testing::small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
  spec.run.epochs = 3;
  spec.run.lr.base_lr = 0.2f;
  spec.run.train.augment.flip = true;
  spec.run.train.tta_flip = true;
  spec.train = testing::view_of(train);
  spec.test = testing::view_of(test);
  spec.runs = 2;
  // 3x chance for 10 classes; guessing on 64 test images has a binomial sd of 0.0375, so 0.3 is 5 sd above it.
  spec.target = {TtaMetric::Accuracy, 0.3};
  TtaReport r;
  r.context = collect_context(Backend::Cpu, "tta_task_test");
  r.model = "cnn";
  r.target = spec.target;
  r.recipe = {{"epochs", 3}, {"flip", true}};
  r.runs = run_tta(spec);
  return r;
}

TEST(TtaTask, ReportsConsistentNumbers) {
  const TtaReport r = small_tta_report();
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].seed + 1, r.runs[1].seed);
  std::vector<double> finals;
  for (const TtaRun& run : r.runs) {
    ASSERT_EQ(run.epochs.size(), 3u);
    double sum = 0;
    for (const TtaEpoch& e : run.epochs) {
      sum += e.epoch_seconds;
      EXPECT_GT(e.epoch_seconds, 0);  // a measured epoch takes milliseconds; 0 is a field never set
      // Cumulative training time, evaluation apart. The task sums epoch_seconds in this order: the same bits;
      // 1e-9 s is far below an evaluation's time, which a wrong sum would add.
      EXPECT_NEAR(e.train_seconds, sum, 1e-9);
      EXPECT_EQ(e.acc, e.val_acc);  // judged by the main weights
      EXPECT_GE(e.acc, 0);          // a fraction of the test images
      EXPECT_LE(e.acc, 1);
      // The training time (steady clock) fits between the epoch's wall-clock stamps (system clock); the
      // 1 ms allows the two clocks' rates to differ (an NTP slew) over the epoch.
      EXPECT_LE(e.start_unix_ms + 1e3 * e.epoch_seconds, e.end_unix_ms + 1);
    }
    EXPECT_GT(run.setup_seconds, 0);  // a measured set-up (graph build, capture) takes milliseconds
    EXPECT_EQ(run.final_acc, run.epochs.back().acc);
    if (run.time_to_target) {
      const TtaEpoch& hit = run.epochs[size_t(run.epochs_to_target - 1)];
      EXPECT_EQ(*run.time_to_target, hit.train_seconds);
      EXPECT_GE(hit.acc, r.target.value);  // the task's own rule (acc >= target): exact comparisons
      for (int k = 0; k + 1 < run.epochs_to_target; ++k) EXPECT_LT(run.epochs[size_t(k)].acc, r.target.value);
    } else {
      for (const TtaEpoch& e : run.epochs) EXPECT_LT(e.acc, r.target.value);
    }
    // Without --val-every an image run validates at its epochs' ends only: one evaluation each, the same numbers.
    ASSERT_EQ(run.evals.size(), run.epochs.size());
    for (size_t k = 0; k < run.evals.size(); ++k) {
      EXPECT_EQ(run.evals[k].epoch, run.epochs[k].epoch);
      EXPECT_EQ(run.evals[k].train_seconds, run.epochs[k].train_seconds);
      EXPECT_EQ(run.evals[k].value, run.epochs[k].acc);
    }
    finals.push_back(run.final_acc);
  }
  const TtaSummary s = summarize_tta(r.runs);
  EXPECT_EQ(s.runs, 2);
  EXPECT_DOUBLE_EQ(s.final_acc.mean, (finals[0] + finals[1]) / 2);
  EXPECT_EQ(s.reached, int(bool(r.runs[0].time_to_target)) + int(bool(r.runs[1].time_to_target)));
  std::printf("[ tta ] cpu: 2 runs, final accuracy %.4f and %.4f, %d reached %.2f\n", finals[0], finals[1], s.reached,
              r.target.value);
  // Synthetic classes are easy: the small cnn passes 30 % within 3 epochs.
  EXPECT_EQ(s.reached, 2);
}

TEST(TtaTask, JsonReadsBackAndMllogAndHtmlHoldEveryRun) {
  TtaReport r = small_tta_report();
  // A GPU run's energy and memory (the CPU has neither): written per seed, read back; absent stays absent.
  EXPECT_FALSE(r.runs[0].energy_j || r.runs[0].device_memory_peak_bytes);
  r.runs[1].energy_j = 812.5;
  r.runs[1].device_memory_peak_bytes = int64_t(3) << 30;
  const nlohmann::ordered_json j = tta_to_json(r);
  const nlohmann::json plain = nlohmann::json::parse(j.dump());
  ASSERT_TRUE(is_tta_json(plain));
  EXPECT_EQ(plain["context"]["task"], "tta");
  // Google Benchmark's shape: one iteration per seed, then four aggregates.
  ASSERT_EQ(plain["benchmarks"].size(), 6u);
  EXPECT_EQ(plain["benchmarks"][0]["run_type"], "iteration");
  EXPECT_EQ(plain["benchmarks"][5]["aggregate_name"], "cv");
  const TtaReport back = tta_report_from_json(plain, "mem.json");
  ASSERT_EQ(back.runs.size(), r.runs.size());
  for (size_t k = 0; k < r.runs.size(); ++k) {
    EXPECT_EQ(back.runs[k].seed, r.runs[k].seed);
    EXPECT_EQ(back.runs[k].time_to_target, r.runs[k].time_to_target);
    ASSERT_EQ(back.runs[k].epochs.size(), r.runs[k].epochs.size());
    EXPECT_EQ(back.runs[k].epochs.back().train_seconds, r.runs[k].epochs.back().train_seconds);
    EXPECT_EQ(back.runs[k].energy_j, r.runs[k].energy_j);
    EXPECT_EQ(back.runs[k].device_memory_peak_bytes, r.runs[k].device_memory_peak_bytes);
  }
  EXPECT_FALSE(plain["benchmarks"][0].contains("energy_j"));
  EXPECT_EQ(plain["benchmarks"][1]["energy_j"], 812.5);
  EXPECT_EQ(plain["benchmarks"][1]["device_memory_peak_bytes"], int64_t(3) << 30);
  EXPECT_THROW(tta_report_from_json(nlohmann::json::parse(R"({"context":{},"tta":{}})"), "bad.json"), UserError);

  int run_starts = 0, run_stops = 0, evals = 0;
  for (const std::string& line : mllog_lines(r)) {
    ASSERT_EQ(line.rfind(":::MLLOG ", 0), 0u) << line;
    const nlohmann::json e = nlohmann::json::parse(line.substr(9));
    const std::string key = e["key"];
    run_starts += key == "run_start";
    run_stops += key == "run_stop";
    evals += key == "eval_accuracy";
    if (key == "run_stop") {
      EXPECT_EQ(e["metadata"]["status"], "success");
    }
  }
  EXPECT_EQ(run_starts, 2);
  EXPECT_EQ(run_stops, 2);
  EXPECT_EQ(evals, r.runs[0].epochs_to_target + r.runs[1].epochs_to_target);

  const std::string html = render_tta_section("mem.json", r);
  size_t lines = 0;
  for (size_t p = html.find("<polyline"); p != std::string::npos; p = html.find("<polyline", p + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(html.find("target 30 %"), std::string::npos);
}

// A GPT judged by its validation loss (Note [tta targets]): 20 windows at
// batch 4 make 5-step epochs; with a validation every 2 steps, 2 epochs
// validate after run steps 2, 4, 5 (the end), 6, 8 and 10 (the end).
TtaReport small_text_tta_report() {
  constexpr int kVocab = 264;
  // One stream, so both splits follow the same successor rule: 6 validation windows, then 20 training windows.
  static const std::vector<uint16_t> stream = data::make_synthetic_tokens(26 * 32 + 1, kVocab, 81);
  static const auto val = data::window_images({stream.begin(), stream.begin() + 6 * 32 + 1}, 32, kVocab, "v");
  static const auto train = data::window_images({stream.begin() + 6 * 32, stream.end()}, 32, kVocab, "t");
  TtaSpec spec;
  spec.run.model = model_config("gpt2-d6", 0.25, 0, 0, 0, 32);
  spec.run.mode = ExecMode::FullCapture;
  spec.run.train.optimizer = OptimizerKind::AdamW;
  spec.run.train.label_smoothing = 0.f;
  spec.run.train.max_grad_norm = 1.f;
  spec.run.batch = 4;
  spec.run.lr.base_lr = 3e-3f;
  spec.run.epochs = 2;
  spec.run.val_every = 2;
  spec.train = testing::view_of(train);
  spec.test = testing::view_of(val);
  spec.runs = 2;
  // ln 264 = 5.58 is the loss of a uniform guess; 0.1 nats below it takes learning some of the successor rule (3
  // tokens in 4 follow their fixed successor), which AdamW at 3e-3 does within the 10 steps (asserted below).
  spec.target = {TtaMetric::ValLoss, 5.48};
  TtaReport r;
  r.context = collect_context(Backend::Cpu, "tta_task_test");
  r.model = "gpt2-d6";
  r.target = spec.target;
  r.tokens_per_byte = 1.0;
  r.recipe = {{"epochs", 2}, {"val_every", 2}};
  r.runs = run_tta(spec);
  return r;
}

TEST(TtaTask, ALossTargetIsJudgedAtEveryValidation) {
  const TtaReport r = small_text_tta_report();
  ASSERT_EQ(r.runs.size(), 2u);
  for (const TtaRun& run : r.runs) {
    ASSERT_EQ(run.epochs.size(), 2u);
    ASSERT_EQ(run.evals.size(), 6u);
    const int64_t steps[] = {2, 4, 5, 6, 8, 10};
    const int epochs[] = {1, 1, 1, 2, 2, 2};
    double last = 0;
    for (size_t k = 0; k < 6; ++k) {
      const TtaEval& e = run.evals[k];
      EXPECT_EQ(e.step, steps[k]);
      EXPECT_EQ(e.epoch, epochs[k]);
      EXPECT_EQ(e.value, e.loss);  // judged by the main weights' loss
      EXPECT_GT(e.eval_seconds, 0);
      EXPECT_GE(e.train_seconds, last);  // cumulative training time, validations left out
      last = e.train_seconds;
      // Inside an epoch a validation's training time is at most the epoch's (its steps are a prefix of the epoch's).
      EXPECT_LE(e.train_seconds, run.epochs[size_t(e.epoch - 1)].train_seconds);
    }
    // An epoch's end is its last validation: the epoch's numbers.
    EXPECT_EQ(run.evals[2].train_seconds, run.epochs[0].train_seconds);
    EXPECT_EQ(run.evals[5].loss, run.epochs[1].val_loss);
    EXPECT_EQ(run.final_loss, run.epochs[1].val_loss);
    ASSERT_TRUE(run.time_to_target) << "seed " << run.seed << ": final loss " << run.final_loss;
    // The first validation at or below the target, exactly (the task's rule: loss <= target).
    size_t hit = 0;
    while (run.evals[hit].value > r.target.value) ++hit;
    EXPECT_EQ(*run.time_to_target, run.evals[hit].train_seconds);
    EXPECT_EQ(run.steps_to_target, run.evals[hit].step);
    EXPECT_EQ(run.epochs_to_target, run.evals[hit].epoch);
    std::printf("[ tta ] text, seed %llu: val loss %.4f at step 2, reached %.2f at step %lld, final %.4f\n",
                static_cast<unsigned long long>(run.seed), run.evals[0].loss, r.target.value,
                static_cast<long long>(run.steps_to_target), run.final_loss);
  }
  const TtaSummary s = summarize_tta(r.runs);
  EXPECT_DOUBLE_EQ(s.final_loss.mean, (r.runs[0].final_loss + r.runs[1].final_loss) / 2);

  const nlohmann::json plain = nlohmann::json::parse(tta_to_json(r).dump());
  EXPECT_EQ(plain["tta"]["metric"], "val_loss");
  EXPECT_EQ(plain["tta"]["target_loss"], 5.48);
  EXPECT_FALSE(plain["tta"].contains("target_acc"));
  EXPECT_EQ(plain["benchmarks"][0]["name"], "tta/model:gpt2-d6/target_loss:5.48");
  const TtaReport back = tta_report_from_json(plain, "mem.json");
  EXPECT_EQ(back.target.metric, TtaMetric::ValLoss);
  EXPECT_EQ(back.target.value, 5.48);
  EXPECT_EQ(back.tokens_per_byte, 1.0);
  for (size_t k = 0; k < r.runs.size(); ++k) {
    ASSERT_EQ(back.runs[k].evals.size(), r.runs[k].evals.size());
    EXPECT_EQ(back.runs[k].steps_to_target, r.runs[k].steps_to_target);
    EXPECT_EQ(back.runs[k].final_loss, r.runs[k].final_loss);
    for (size_t i = 0; i < r.runs[k].evals.size(); ++i) {
      EXPECT_EQ(back.runs[k].evals[i].step, r.runs[k].evals[i].step);
      EXPECT_EQ(back.runs[k].evals[i].value, r.runs[k].evals[i].value);
    }
  }
  // MLLOG: eval_loss at every validation up to the one that reached the target, then run_stop.
  size_t eval_lines = 0, stops = 0;
  for (const std::string& line : mllog_lines(r)) {
    const nlohmann::json e = nlohmann::json::parse(line.substr(9));
    EXPECT_NE(e["key"], "eval_accuracy");
    eval_lines += e["key"] == "eval_loss";
    if (e["key"] == "run_stop") {
      ++stops;
      EXPECT_EQ(e["metadata"]["status"], "success");
    }
  }
  EXPECT_EQ(stops, 2u);
  size_t want = 0;
  for (const TtaRun& run : r.runs)
    for (const TtaEval& e : run.evals)
      if (e.step <= run.steps_to_target) ++want;
  EXPECT_EQ(eval_lines, want);
  const std::string html = render_tta_section("mem.json", r);
  EXPECT_NE(html.find("target 5.48<"), std::string::npos);
  EXPECT_NE(html.find("final validation loss"), std::string::npos);
}

// `tr-bench report` tells a time-to-accuracy file from a benchmark report and
// renders both on one page.
TEST(TtaTask, ReportCliRendersTtaFilesBesideBenchReports) {
  const std::string dir = ::testing::TempDir() + "tr_tta_html_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  write_tta_report(small_tta_report(), dir + "/tta_cnn.json");
  const std::string golden = golden_dir() + "/report_small.json";
  std::vector<std::string> args = {"report", golden, dir + "/tta_cnn.json", "-o", dir + "/out.html"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  const int code = report_main(int(argv.size()), argv.data());
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, 0);
  EXPECT_NE(out.find("from 1 report, 1 time-to-accuracy report)"), std::string::npos) << out;
  std::ifstream f(dir + "/out.html");
  const std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("Time to accuracy: cnn (tta_cnn.json)"), std::string::npos);
  EXPECT_NE(html.find("Model cnn"), std::string::npos);  // the benchmark report's section
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tr::bench
