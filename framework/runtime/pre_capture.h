#pragma once
// pre_capture (DESIGN §2): B1 dedup of atlas slots; B2 library warm-up (plans
// chosen before any capture); B2.5 find graphs holding collectives; B3 capture
// ordinary graphs; B3.5 capture collective graphs across ranks together; B4 one
// warm-up launch of the non-collective graphs. Only the graphs the mode
// captures are built.
#include <functional>
#include <vector>

#include "framework/runtime/captured_graph.h"
#include "framework/runtime/collective_check.h"
#include "framework/runtime/exec_mode.h"

namespace tr {

struct PreCaptureResult {
  DedupResult dedup;
  std::vector<std::unique_ptr<CapturedGraph>> graphs;  // index = captured_idx; null when the mode keeps it eager
  int captured = 0;      // graphs actually built
  int collective = 0;    // of those, holding collectives
  int step_graphs = 0;   // whole-step graphs composed afterwards (step_graphs.h), all ranks
  double capture_ms = 0; // wall time of B2..B4, plus composing the step graphs
  uint64_t collective_hash = 0;  // hash of every rank's (identical) collective sequence
  // Rank 0's collective calls per unique graph (index = captured_idx), in launch
  // order; ranks agree (B2.5). Empty for graphs without collectives.
  std::vector<std::vector<CollectiveSig>> collectives;
};

PreCaptureResult pre_capture(GraphAtlas& atlas, const ComputationGraph& cg, const PlanSet& plans,
                             const std::vector<DeviceContext*>& ranks, ExecMode mode);

// The CUDA half (B2 warm-up, stream capture, B4), in pre_capture_cuda.cpp.
void capture_cuda(PreCaptureResult& r, const ComputationGraph& cg, const PlanSet& plans,
                  const std::vector<DeviceContext*>& ranks);

}  // namespace tr
