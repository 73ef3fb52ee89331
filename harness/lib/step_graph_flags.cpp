#include "harness/lib/step_graph_flags.h"

#include "framework/core/error.h"

namespace tr {

StepGraphChoice step_graph_flags(const CliArgs& a, Backend backend) {
  StepGraphChoice c;
  c.one_graph = !a.flag("--split-steps");
  if (!a.has("--step-graph")) return c;
  const std::string form = a.str("--step-graph", "");
  TR_USER_CHECK(form == "flat" || form == "child", "--step-graph must be flat or child, got '", form, "'");
  TR_USER_CHECK(backend == Backend::Cuda,
                "--step-graph is for --device cuda (the CPU's step replays its sub-graphs in order)");
  TR_USER_CHECK(c.one_graph, "--step-graph shapes the one graph per step; --split-steps launches none");
  c.form = form == "flat" ? StepGraphForm::Flat : StepGraphForm::Child;
  return c;
}

}  // namespace tr
