#pragma once
// The time-to-accuracy task (`tr-bench tta`): trains one model from scratch
// once per seed and records, per epoch and per validation, the training time
// and the validation metrics. Training time is the wall time of the training
// steps only: the set-up (compile, memory plan, capture) and every validation
// are recorded apart. A run's time to target is its training time at the first
// validation whose metric reaches the target (Note [tta targets]).
//
// Note [tta targets]: an image model's target is a test accuracy (at least
// the target, a fraction), judged at the end of each epoch; a sequence
// model's is a validation loss (at most the target, nats per token), judged
// at each epoch's end and at every --val-every validation inside one, since
// one epoch of text is many thousands of steps. Either way the metric is the
// main weights' or, with --eval ema, their EMA's.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/data_view.h"
#include "framework/train/session.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

enum class TtaMetric { Accuracy, ValLoss };

struct TtaTarget {
  TtaMetric metric = TtaMetric::Accuracy;
  double value = 0.9;  // an accuracy (a fraction) or a loss (nats per token)
  bool reached_by(double v) const { return metric == TtaMetric::Accuracy ? v >= value : v <= value; }
  bool is_loss() const { return metric == TtaMetric::ValLoss; }
};

// One validation of a run: at an epoch's end, or inside one (--val-every).
struct TtaEval {
  int epoch = 0;             // 1-based: the epoch it falls in
  int64_t step = 0;          // training steps before it, counted from the run's first
  double train_seconds = 0;  // cumulative training time at it
  double eval_seconds = 0;   // its own time (main and EMA weights)
  double loss = 0, acc = 0, ema_loss = 0, ema_acc = 0;
  double value = 0;        // the metric the target judges (Note [tta targets])
  double end_unix_ms = 0;  // wall clock (ms since 1970) when it ended
};

struct TtaEpoch {
  int epoch = 0;             // 1-based
  double train_seconds = 0;  // cumulative training time at the end of this epoch
  double epoch_seconds = 0;  // this epoch's training time
  double eval_seconds = 0;   // this epoch's evaluation (main and EMA weights)
  double train_loss = 0, train_acc = 0;
  double val_acc = 0, ema_acc = 0;    // test accuracy of the main and the EMA weights ...
  double val_loss = 0, ema_loss = 0;  // ... and their loss
  double acc = 0;                     // the accuracy of the weights the target judges (TtaSpec::eval_ema)
  double start_unix_ms = 0;           // wall clock (ms since 1970) when the epoch began ...
  double end_unix_ms = 0;             // ... and when its evaluation ended (for MLPerf-style logs)
};

struct TtaRun {
  uint64_t seed = 0;
  double setup_seconds = 0;                    // building the session: compile, plan, allocate, initialise, capture
  double capture_ms = 0;                       // of which capture (pre_capture and the step graphs)
  double init_unix_ms = 0, start_unix_ms = 0;  // wall clock when the set-up began and ended
  std::vector<TtaEpoch> epochs;
  std::vector<TtaEval> evals;            // every validation in order, the epochs' ends included
  std::optional<double> time_to_target;  // seconds of training; none when never reached
  int epochs_to_target = 0;              // the epoch of the validation that reached it; 0 when none did
  int64_t steps_to_target = 0;           // the training steps before that validation
  double final_acc = 0, final_loss = 0;  // the last validation's, of the judged weights
  // On a GPU (rank 0's): the board's energy over the run's epochs, training
  // and validations (Note [machine state]; absent without NVML or under
  // kMinEnergyWindowS), and the most device memory in use, sampled after the
  // set-up and after each epoch (Note [device memory]).
  std::optional<double> energy_j;
  std::optional<int64_t> device_memory_peak_bytes;
};

struct TtaSpec {
  RunOptions run;  // seed: the first run's; run k uses seed + k
  DataView train, test;
  int runs = 1;
  TtaTarget target;
  bool eval_ema = false;  // judge the EMA weights' metric instead of the main weights'
};

struct TtaSummary {
  int runs = 0, reached = 0;
  std::optional<Summary> time_to_target;                        // over the runs that reached it
  Summary final_acc, final_loss, setup_seconds, train_seconds;  // train_seconds: the whole run's
};

// Called with each validation as it ends, and with its epoch when it ends one (else null).
using TtaEvalFn = std::function<void(const TtaRun&, const TtaEval&, const TtaEpoch*)>;

// UserError for a spec that cannot run (no runs, an accuracy outside (0, 1], a loss <= 0).
void check_tta_spec(const TtaSpec& spec);
// One run with `seed`; on_eval (optional) sees each validation as it ends.
TtaRun run_tta_seed(const TtaSpec& spec, uint64_t seed, const TtaEvalFn& on_eval = {});
// Every seed in turn.
std::vector<TtaRun> run_tta(const TtaSpec& spec, const TtaEvalFn& on_eval = {});
TtaSummary summarize_tta(const std::vector<TtaRun>& runs);

}  // namespace tr::bench
