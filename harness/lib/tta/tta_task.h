#pragma once
// The time-to-accuracy task (`tr-bench tta`): trains one model from scratch
// once per seed and records, per epoch, the training time and the test
// accuracy. Training time is the wall time of the epochs' training steps only:
// the set-up (compile, memory plan, capture) and the evaluation after each
// epoch are recorded apart. A run's time to target is its training time at the
// end of the first epoch whose accuracy reaches the target.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/data_view.h"
#include "framework/train/session.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

struct TtaEpoch {
  int epoch = 0;             // 1-based
  double train_seconds = 0;  // cumulative training time at the end of this epoch
  double epoch_seconds = 0;  // this epoch's training time
  double eval_seconds = 0;   // this epoch's evaluation (main and EMA weights)
  double train_loss = 0, train_acc = 0;
  double val_acc = 0, ema_acc = 0;  // test accuracy of the main and the EMA weights
  double acc = 0;                   // the one the target is judged by (TtaSpec::eval_ema)
  double start_unix_ms = 0;         // wall clock (ms since 1970) when the epoch began ...
  double end_unix_ms = 0;           // ... and when its evaluation ended (for MLPerf-style logs)
};

struct TtaRun {
  uint64_t seed = 0;
  double setup_seconds = 0;                    // building the session: compile, plan, allocate, initialise, capture
  double capture_ms = 0;                       // of which capture (pre_capture and the step graphs)
  double init_unix_ms = 0, start_unix_ms = 0;  // wall clock when the set-up began and ended
  std::vector<TtaEpoch> epochs;
  std::optional<double> time_to_target;  // seconds of training; none when never reached
  int epochs_to_target = 0;              // 0 when never reached
  double final_acc = 0;
};

struct TtaSpec {
  RunOptions run;  // seed: the first run's; run k uses seed + k
  DataView train, test;
  int runs = 1;
  double target_acc = 0.9;  // a fraction
  bool eval_ema = false;    // judge the EMA weights' accuracy instead of the main weights'
};

struct TtaSummary {
  int runs = 0, reached = 0;
  std::optional<Summary> time_to_target;            // over the runs that reached it
  Summary final_acc, setup_seconds, train_seconds;  // train_seconds: the whole run's
};

using TtaEpochFn = std::function<void(const TtaRun&, const TtaEpoch&)>;

// UserError for a spec that cannot run (no runs, a target outside (0, 1]).
void check_tta_spec(const TtaSpec& spec);
// One run with `seed`; on_epoch (optional) sees each epoch as it ends.
TtaRun run_tta_seed(const TtaSpec& spec, uint64_t seed, const TtaEpochFn& on_epoch = {});
// Every seed in turn.
std::vector<TtaRun> run_tta(const TtaSpec& spec, const TtaEpochFn& on_epoch = {});
TtaSummary summarize_tta(const std::vector<TtaRun>& runs);

}  // namespace tr::bench
