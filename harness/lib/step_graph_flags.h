#pragma once
// How full capture launches a training step, the flags tr-train and tr-bench
// share: --split-steps (the dozen sub-graphs, one launch each) and
// --step-graph flat|child (one step graph, Note [one graph per step] in
// framework/runtime/step_graphs.h). --step-graph is for --device cuda (the
// CPU's step replays its sub-graphs in order either way) and means nothing
// beside --split-steps: both are refused with one line.
#include "framework/core/backend.h"
#include "framework/runtime/step_graphs.h"
#include "harness/lib/cli_args.h"

namespace tr {

struct StepGraphChoice {
  bool one_graph = true;                      // false: --split-steps
  StepGraphForm form = StepGraphForm::Flat;  // --step-graph
};

StepGraphChoice step_graph_flags(const CliArgs& a, Backend backend);

}  // namespace tr
