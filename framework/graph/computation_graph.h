#pragma once
// ComputationGraph: shape-free topology (docs/design.md, "Vocabulary"). COMPUTE nodes name tensor
// ids; RANGE nodes name regions of the arena (resolved to (offset, size) by the
// MemoryPlan). Nodes are bucketed by GraphId; a bucket is executed in order.
#include <array>
#include <climits>
#include <set>
#include <string>
#include <vector>

#include "framework/graph/graph_id.h"
#include "framework/graph/tensor_info.h"
#include "framework/ops/op_call.h"
#include "framework/ops/op_kind.h"

namespace tr {

// An operand of a RANGE node: a whole region (role x group run), the part of
// one holding layout slots [slot_lo, slot_hi) (a gradient bucket), or one tensor.
struct RangeRef {
  bool is_tensor = false;
  Role role = Role::Grad;
  GroupMask groups = kAllGroups;
  TensorId tensor = kNoTensor;
  int32_t slot_lo = 0, slot_hi = INT32_MAX;

  static RangeRef region(Role r, GroupMask g = kAllGroups) { return {false, r, g, kNoTensor}; }
  static RangeRef slots(Role r, GroupMask g, int32_t lo, int32_t hi) { return {false, r, g, kNoTensor, lo, hi}; }
  static RangeRef of(TensorId t) { return {true, Role::Persistent, 0, t}; }
};

struct Node {
  enum class Kind : uint8_t { Compute, Range };
  Kind kind = Kind::Compute;
  OpKind op = OpKind::Count;          // Compute
  RangeOp range_op = RangeOp::Count;  // Range
  std::vector<TensorId> in, out;      // Compute
  std::vector<RangeRef> operands;     // Range
  OpAttrs attrs;
  RangeAttrs range_attrs;
  bool collective = false;  // holds a cross-rank collective (B2.5)
  // A side stream inside its graph (Note [streams inside a graph]); COUNT = the
  // graph's own stream.
  StreamKind stream = StreamKind::COUNT;
  std::string label;  // for NVTX and error messages, e.g. "conv1.fwd"
};

class ComputationGraph {
 public:
  TensorId add_tensor(TensorInfo info);
  void add(GraphId g, Node n);
  // Replaces graph g's nodes (graph rewrites: fusion.h); checks the ids as add() does.
  void set_nodes(GraphId g, std::vector<Node> nodes);

  const TensorInfo& tensor(TensorId id) const { return tensors_.at(static_cast<size_t>(id)); }
  int num_tensors() const { return static_cast<int>(tensors_.size()); }
  const std::vector<Node>& nodes(GraphId g) const { return buckets_[static_cast<size_t>(g)]; }
  bool has(GraphId g) const { return !nodes(g).empty(); }
  bool has_collective(GraphId g) const;
  // Slots of the param / bn layouts: element count, group and decay per slot.
  int num_slots(Layout l) const;
  size_t total_nodes() const;

 private:
  std::vector<TensorInfo> tensors_;
  std::array<std::vector<Node>, kGraphIdCount> buckets_;
};

// The stream node n of graph g runs on.
inline StreamKind node_stream(const Node& n, GraphId g) {
  return n.stream == StreamKind::COUNT ? stream_for(g) : n.stream;
}

// Whether n reads or writes any of ts: by id, or through a region of a role one
// of them has (a region covers every tensor of its role, BnBatch statistics say).
bool touches(const ComputationGraph& cg, const Node& n, const std::set<TensorId>& ts);

// Convenience constructors for nodes.
Node compute(OpKind op, std::vector<TensorId> in, std::vector<TensorId> out, std::string label, OpAttrs attrs = {});
Node range(RangeOp op, std::vector<RangeRef> operands, std::string label, RangeAttrs attrs = {});

}  // namespace tr
