#pragma once
// pre_capture (docs/design.md, "Vocabulary"): B1 dedup of atlas slots; B2 library warm-up (plans
// chosen before any capture); B2.5 find graphs holding collectives; B3 capture
// ordinary graphs; B3.5 capture collective graphs across ranks together; B4 one
// warm-up launch of the non-collective graphs. Only the graphs the mode
// captures are built.
#include <functional>
#include <string>
#include <vector>

#include "framework/comm/world.h"
#include "framework/runtime/captured_graph.h"
#include "framework/runtime/collective_check.h"
#include "framework/runtime/exec_mode.h"

namespace tr {

struct PreCaptureResult {
  DedupResult dedup;
  std::vector<std::unique_ptr<CapturedGraph>> graphs;  // index = captured_idx; null when the mode keeps it eager
  int captured = 0;                                    // graphs actually built
  int collective = 0;                                  // of those, holding collectives
  int step_graphs = 0;           // whole-step graphs composed afterwards (step_graphs.h), all ranks
  double capture_ms = 0;         // wall time of B2..B4, plus composing the step graphs
  uint64_t collective_hash = 0;  // hash of every rank's (identical) collective sequence
  // Rank 0's collective calls per unique graph (index = captured_idx), in launch
  // order; ranks agree (B2.5). Empty for graphs without collectives.
  std::vector<std::vector<CollectiveSig>> collectives;
};

// Tests: make the capture of one graph fail, on one rank, after its first node
// ran (on CUDA inside the open stream capture), to show that the error names
// the graph and that nothing is left half-made.
struct CaptureFault {
  GraphId gid = GraphId::DEEP_FWD_BWD;
  Variant variant = Variant::TrainBase;
  int rank = 0;
  bool matches(const UniqueGraph& u, int r) const { return u.gid == gid && u.variant == variant && r == rank; }
};

// A failure while capturing a graph is rethrown with the graph, its variant
// and the rank in front of the message (the error keeps its kind). `ranks` are
// this process's ranks; with a World (several processes) the collective
// sequences are compared across processes too, and the processes capture
// their collective graphs together (Note [processes and ranks]).
PreCaptureResult pre_capture(GraphAtlas& atlas, const ComputationGraph& cg, const PlanSet& plans,
                             const std::vector<DeviceContext*>& ranks, ExecMode mode,
                             const CaptureFault* fault = nullptr, World* world = nullptr);

// The CUDA half (B2 warm-up, stream capture, B4), in pre_capture_cuda.cpp.
void capture_cuda(PreCaptureResult& r, const ComputationGraph& cg, const PlanSet& plans,
                  const std::vector<DeviceContext*>& ranks, const CaptureFault* fault, World* world);

// "capturing DEEP_FWD_BWD (variant train_base, rank 0)"
std::string capture_where(const UniqueGraph& u, int rank);

}  // namespace tr
