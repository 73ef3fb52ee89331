#pragma once
// The time-to-accuracy report (tta_task.h) as JSON, as a console table and as
// MLPerf-style log lines. The JSON is of the tr-bench family (reports/schema.md,
// "tta reports"): the same `context` block, a Google-Benchmark `benchmarks`
// array with one iteration per seed (real_time = time to target in seconds)
// and its aggregates, and a `tta` object with the recipe and every epoch.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/lib/bench/bench_types.h"
#include "harness/lib/tta/tta_task.h"

namespace tr::bench {

struct TtaReport {
  BenchContext context;
  std::string model;
  double target_acc = 0;
  std::string eval = "main";      // "main" or "ema": whose accuracy meets the target
  nlohmann::ordered_json recipe;  // every training setting, by flag name
  std::vector<TtaRun> runs;
};

nlohmann::ordered_json tta_to_json(const TtaReport& r);
void write_tta_report(const TtaReport& r, const std::string& path);  // UserError when unwritable
// Reads what write_tta_report wrote (for the HTML report); UserError naming
// the file and the field on anything else.
TtaReport tta_report_from_json(const nlohmann::json& j, const std::string& path);
bool is_tta_json(const nlohmann::json& j);

// One line per epoch (as it ends) and the summary table at the end.
void print_tta_epoch(const TtaRun& run, const TtaEpoch& e, double target_acc, FILE* out);
void print_tta_summary(const TtaReport& r, FILE* out);

// MLPerf logging lines (":::MLLOG {...}"): per run init_start/init_stop,
// run_start, seed, epoch_start/epoch_stop and eval_accuracy per epoch, and
// run_stop (status success at the epoch that reached the target, aborted when
// none did). Epochs after the target are in the JSON only.
std::vector<std::string> mllog_lines(const TtaReport& r);
void write_mllog(const TtaReport& r, const std::string& path);

}  // namespace tr::bench
