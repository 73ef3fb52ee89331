#pragma once
// A node resolved against one memory plan on one rank: the function pointer and
// every argument, ready to call. CPU replay keeps a list of these; the eager
// executor makes them anew at every launch.
#include <string>
#include <vector>

#include "framework/graph/computation_graph.h"
#include "framework/graph/memory_plan.h"
#include "framework/runtime/device_context.h"

namespace tr {

class PreparedNode {
 public:
  PreparedNode() = default;
  PreparedNode(PreparedNode&&) = default;  // inner buffers move with their pointers intact
  PreparedNode& operator=(PreparedNode&&) = default;
  PreparedNode(const PreparedNode&) = delete;
  PreparedNode& operator=(const PreparedNode&) = delete;

  void run() const;
  const Node& node() const { return *node_; }
  const std::vector<RangeOperand>& operands() const { return operands_; }
  const std::vector<TensorRef>& inputs() const { return in_; }
  const std::vector<TensorRef>& outputs() const { return out_; }
  StreamKind stream() const { return stream_; }

 private:
  friend PreparedNode prepare_node(const Node&, const ComputationGraph&, const PlanSet&, const MemoryPlan&,
                                   const DeviceContext&, StreamKind);
  const Node* node_ = nullptr;
  OpFn fn_ = nullptr;
  RangeFn range_fn_ = nullptr;
  std::vector<TensorRef> in_, out_;
  std::vector<RangeOperand> operands_;
  std::vector<std::vector<Segment>> segs_;
  VariantDims dims_;
  const ExecEnv* env_ = nullptr;
  StreamKind stream_ = StreamKind::COMP_1;
};

PreparedNode prepare_node(const Node& n, const ComputationGraph& cg, const PlanSet& ps, const MemoryPlan& plan,
                          const DeviceContext& ctx, StreamKind stream);

}  // namespace tr
