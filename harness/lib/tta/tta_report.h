#pragma once
// The time-to-accuracy report (tta_task.h) as JSON, as a console table and as
// MLPerf-style log lines. The JSON is of the tr-bench family (reports/schema.md,
// "tta reports"): the same `context` block, a Google-Benchmark `benchmarks`
// array with one iteration per seed (real_time = time to target in seconds)
// and its aggregates, and a `tta` object with the recipe, every epoch and
// every validation.
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
  TtaTarget target;
  std::string eval = "main";      // "main" or "ema": whose metric meets the target
  double tokens_per_byte = 0;     // text: the validation split's, for losses in bits per byte; else 0
  nlohmann::ordered_json recipe;  // every training setting, by flag name
  std::vector<TtaRun> runs;
};

nlohmann::ordered_json tta_to_json(const TtaReport& r);
void write_tta_report(const TtaReport& r, const std::string& path);  // UserError when unwritable
// Reads what write_tta_report wrote (for the HTML report); UserError naming
// the file and the field on anything else.
TtaReport tta_report_from_json(const nlohmann::json& j, const std::string& path);
bool is_tta_json(const nlohmann::json& j);

// One line per validation (as it ends) and the summary table at the end.
void print_tta_eval(const TtaReport& r, const TtaRun& run, const TtaEval& e, const TtaEpoch* epoch, FILE* out);
void print_tta_summary(const TtaReport& r, FILE* out);

// MLPerf logging lines (":::MLLOG {...}"): per run init_start/init_stop,
// run_start, seed, epoch_start/epoch_stop per epoch, eval_accuracy (or, for a
// loss target, eval_loss) per validation, and run_stop (status success at the
// validation that reached the target, aborted when none did). What comes after
// the target is in the JSON only.
std::vector<std::string> mllog_lines(const TtaReport& r);
void write_mllog(const TtaReport& r, const std::string& path);

}  // namespace tr::bench
