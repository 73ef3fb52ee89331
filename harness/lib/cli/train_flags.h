#pragma once
// The training flags tr-train and `tr-bench tta` share: what to train, how and
// on what data. Their defaults are the model's plain training defaults, or its
// time-to-accuracy recipe (framework/graph/model_registry.h, Recipe) where the
// caller asks for it; every flag overrides either.
#include <chrono>
#include <string>
#include <vector>

#include "datasets/image_dataset.h"
#include "framework/graph/model_registry.h"
#include "framework/train/session.h"
#include "harness/lib/bench/side_streams.h"
#include "harness/lib/cli/cli_args.h"

namespace tr {

// The flags' help text (one block, indented like the tools' usage).
extern const char* const kTrainFlagsUsage;
// The flags that take a value, and the boolean ones.
std::vector<std::string> train_value_flags();
std::vector<std::string> train_bool_flags();

// The data a run trains on: synthetic at the model's shape, or an IDX set
// zero-padded to the model's input side.
struct RunData {
  data::ImageDataset train, test;
  int64_t train_count = 0, test_count = 0;  // after --train-subset / --val-subset
  // Text from tr-data's shards: the validation split's tokens per byte of
  // text (each document adds one token), to state a loss in bits per byte; 0
  // for other data.
  double val_tokens_per_byte = 0;
};

// A parsed command line: the model's entry, the run options (model config
// included) and the data. Throws UserError for every bad flag or file.
struct TrainSetup {
  const ModelEntry* entry = nullptr;
  RunOptions options;
  RunData data;
  std::string device;  // "cpu" or "cuda"
};
// With a World (mpirun, srun), the ranks are processes x --gpus-per-process
// (harness/lib/cli/process_launch.h) and --gpus / --ranks, if given, must say so.
TrainSetup parse_train_setup(const CliArgs& a, bool recipe_defaults, World* world = nullptr);

// --watchdog-ms, or RunOptions' default.
std::chrono::milliseconds watchdog_flag(const CliArgs& a);

// FNV-1a of the images and labels a run uses (after the subsets), as 16 hex
// digits: the processes of one run compare it (Note [processes agree]).
std::string data_digest(const RunData& d);

}  // namespace tr
