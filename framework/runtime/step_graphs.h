#pragma once
// Note [one graph per step]: in full capture a training step is a fixed
// sequence of about a dozen atlas graphs on four streams (step_loop.cpp). Every
// launch costs host time and, on the GPU, a gap of a few microseconds before a
// dependent graph starts. StepGraphs composes that sequence once per (training
// variant, input buffer A/B, next batch transferred or not) into one graph: it
// runs train_step while the runner splices each atlas graph in as a child node
// (GraphRunner::splice_into), so the cross-stream waits become edges and the
// transfer-done signal becomes an event-record node. A step is then a single
// launch on COMP_1. The atlas graphs stay the unit of capture and dedup; a step
// graph only arranges them, so its kernels and their arguments are the same.
#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "framework/runtime/graph_runner.h"
#include "framework/runtime/step_loop.h"

namespace tr {

class StepGraphs {
 public:
  // Builds the step graphs of the given training variants for r's rank (all
  // graphs of those variants must be captured: full capture). No variants: none.
  StepGraphs(GraphRunner& r, const std::vector<Variant>& train_variants);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // One training step: the step graph if one was built (and no hook asks for a
  // stop or a time mark between graphs), else the step loop's sequence.
  void train_step(Variant v, int cur, bool transfer_next, const StepHook* hook);
  int built() const { return built_; }
  // The step graph of (v, cur, transfer_next) as instantiated on CUDA, or null
  // (not built, or on the CPU). For inspection (tests).
  const NativeExec* native(Variant v, int cur, bool transfer_next) const;

 private:
  struct Exec;
  GraphRunner& r_;
  // [variant][cur][transfer_next]
  std::array<std::array<std::array<std::unique_ptr<Exec>, 2>, 2>, kVariantCount> table_;
  int built_ = 0;
};

// The CUDA half: captures body() on COMP_1 with every other stream forked from
// it and joined back, and instantiates the result (step_graphs_cuda.cpp).
std::unique_ptr<NativeExec> capture_step_cuda(DeviceContext& ctx, const std::function<void()>& body);

}  // namespace tr
