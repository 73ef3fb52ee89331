#pragma once
// The data of a sequence model (a registry entry with a context): the
// training and validation token streams cut into consecutive windows of T+1
// tokens (datasets/token_window_set.h), carried as RunData's image sets.
//   --synthetic      make_synthetic_tokens over the model's vocabulary: one
//                    stream, 2^18 validation tokens, then 2^22 training
//                    tokens, so both follow the same successor rule
//   --data-dir DIR   tr-data's shards (DIR/manifest.json, every shard checked
//                    against it), else llm.c's: DIR's *train*.bin and
//                    *val*.bin, each split's files read in name order
// --train-subset / --val-subset then count windows. Every token must be below
// the model's vocabulary; a file that breaks a rule is a UserError naming it.
#include <cstdint>

#include "framework/graph/model_config.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/cli/train_flags.h"

namespace tr {

RunData load_token_data(const CliArgs& a, const ModelConfig& m, uint64_t seed);

}  // namespace tr
