#pragma once
// Whether a run puts its weight gradients on a second stream.
#include <cstdint>

#include "framework/core/backend.h"
#include "framework/graph/model_registry.h"
#include "harness/lib/cli/cli_args.h"

namespace tr {

// --side-streams / --no-side-streams (tr-train and tr-bench): weight gradients
// on a second stream inside the backward (Note [streams inside a graph]; the
// GPU tests show them bit-identical to one stream). Neither flag: Auto, on
// CUDA when the batch per GPU is at most the model's side_streams_max_batch
// (model_registry.h), never on the CPU. Both flags together are a UserError.
enum class SideStreams { Auto, On, Off };
SideStreams side_streams_flag(const CliArgs& a);
const char* side_streams_name(SideStreams s);  // "auto", "on", "off"
bool use_side_streams(SideStreams s, Backend backend, const ModelEntry& e, int64_t batch_per_gpu);

}  // namespace tr
