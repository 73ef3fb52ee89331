#include "framework/graph/computation_graph.h"

#include <algorithm>

#include "framework/ops/op_signature.h"

namespace tr {

TensorId ComputationGraph::add_tensor(TensorInfo info) {
  if (info.role != Role::Activation) TR_CHECK(info.fixed_shape.rank > 0, info.name, " needs a fixed shape");
  if (layout_of(info.role) != Layout::None) TR_CHECK(info.slot >= 0, info.name, " needs a layout slot");
  tensors_.push_back(std::move(info));
  return static_cast<TensorId>(tensors_.size() - 1);
}

void ComputationGraph::add(GraphId g, Node n) {
  for (TensorId t : n.in) TR_CHECK(t >= 0 && t < num_tensors(), n.label, ": bad input id");
  for (TensorId t : n.out) TR_CHECK(t >= 0 && t < num_tensors(), n.label, ": bad output id");
  if (n.kind == Node::Kind::Compute) {  // the kind's operand list (Note [operands by name])
    try {
      check_operand_counts(n.op, int(n.in.size()), int(n.out.size()), n.attrs);
    } catch (const Error& e) {
      throw Error(cat(n.label, ": ", e.what()));
    }
  }
  buckets_[static_cast<size_t>(g)].push_back(std::move(n));
}

void ComputationGraph::set_nodes(GraphId g, std::vector<Node> nodes) {
  buckets_[static_cast<size_t>(g)].clear();
  for (Node& n : nodes) add(g, std::move(n));
}

bool ComputationGraph::has_collective(GraphId g) const {
  const auto& ns = nodes(g);
  return std::any_of(ns.begin(), ns.end(), [](const Node& n) { return n.collective; });
}

int ComputationGraph::num_slots(Layout l) const {
  int n = 0;
  for (const auto& t : tensors_)
    if (layout_of(t.role) == l) n = std::max(n, t.slot + 1);
  return n;
}

size_t ComputationGraph::total_nodes() const {
  size_t n = 0;
  for (const auto& b : buckets_) n += b.size();
  return n;
}

Node compute(OpKind op, std::vector<TensorId> in, std::vector<TensorId> out, std::string label, OpAttrs attrs) {
  Node n;
  n.kind = Node::Kind::Compute;
  n.op = op;
  n.in = std::move(in);
  n.out = std::move(out);
  n.attrs = attrs;
  n.label = std::move(label);
  return n;
}

Node range(RangeOp op, std::vector<RangeRef> operands, std::string label, RangeAttrs attrs) {
  Node n;
  n.kind = Node::Kind::Range;
  n.range_op = op;
  n.operands = std::move(operands);
  n.range_attrs = attrs;
  n.collective = (op == RangeOp::AllReduceSum);
  n.label = std::move(label);
  return n;
}

bool touches(const ComputationGraph& cg, const Node& n, const std::set<TensorId>& ts) {
  for (TensorId t : n.in)
    if (ts.count(t)) return true;
  for (TensorId t : n.out)
    if (ts.count(t)) return true;
  for (const RangeRef& r : n.operands) {
    if (r.is_tensor && ts.count(r.tensor)) return true;
    if (r.is_tensor) continue;
    for (TensorId t : ts)
      if (cg.tensor(t).role == r.role) return true;
  }
  return false;
}

}  // namespace tr
