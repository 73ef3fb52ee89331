#pragma once
// NVTX ranges in the "tr" domain, with registered strings so Nsight Systems
// shows readable names at no per-call string cost. Without NVTX headers at build
// time, or without a tool attached at run time, a range costs one branch.
//
// Ranges: phases (compile, plan, capture, warmup, measure), every step
// (train_step / val_step) and every graph launch at replay time (named by its
// GraphId, or step_graph for a whole step launched as one graph). Ranges
// pushed inside a stream capture are only seen at capture time.
#include <string_view>

#include "framework/graph/graph_id.h"

namespace tr::nvtx {

enum class Phase : int {
  Compile,
  Plan,
  Capture,
  Warmup,
  Measure,
  TrainStep,
  ValStep,
  Epoch,
  Validate,
  StepGraph,
  COUNT
};

void push(Phase p);
void push(GraphId g);
void pop();
std::string_view phase_name(Phase p);

class Range {
 public:
  explicit Range(Phase p) { push(p); }
  explicit Range(GraphId g) { push(g); }
  ~Range() { pop(); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
};

}  // namespace tr::nvtx
