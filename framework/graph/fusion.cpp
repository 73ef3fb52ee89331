// Note [fusion] (fusion.h): the driver. Each graph's nodes, one pass per rule
// pass of fusion_rules.h: at every node on its graph's own stream, the pass's
// rules in table order; then the merged nodes go.
#include "framework/graph/fusion.h"

#include <algorithm>
#include <map>

#include "framework/graph/fusion_rules.h"
#include "framework/graph/node_operands.h"

namespace tr {
namespace {

// Readers of each tensor over every graph (compute inputs and tensor operands).
std::vector<int> reader_counts(const ComputationGraph& cg) {
  std::vector<int> n(size_t(cg.num_tensors()), 0);
  for (int g = 0; g < kGraphIdCount; ++g)
    for (const Node& node : cg.nodes(GraphId(g))) {
      for (TensorId t : node.in) ++n[size_t(t)];
      for (const RangeRef& r : node.operands)
        if (r.is_tensor) ++n[size_t(r.tensor)];
    }
  return n;
}

bool wanted(const FusionRule& r, const std::vector<std::string>& only) {
  return only.empty() || std::find(only.begin(), only.end(), r.name) != only.end();
}

// One pass of the rules over one graph's nodes; drops what merged.
void run_pass(Fuser& f, int pass, const std::vector<std::string>& only, FusionCounts& c) {
  f.producer.clear();
  for (size_t i = 0; i < f.nodes.size(); ++i)
    for (TensorId t : f.nodes[i].out) f.producer[t] = i;
  f.drop.assign(f.nodes.size(), false);
  for (size_t i = 0; i < f.nodes.size(); ++i)
    for (const FusionRule& r : fusion_rules()) {
      if (r.pass != pass || !wanted(r, only) || f.drop[i] || !on_own_stream(f.nodes[i])) continue;
      if (r.fuse(f, i)) ++(c.*r.count);
    }
  std::vector<Node> kept;
  for (size_t i = 0; i < f.nodes.size(); ++i)
    if (!f.drop[i]) kept.push_back(std::move(f.nodes[i]));
  f.nodes = std::move(kept);
}

// The pools' backward took y for its shape only: the BatchNorm's input has it.
void reroute_unstored(ComputationGraph& cg, const std::map<TensorId, TensorId>& unstored) {
  for (int g = 0; g < kGraphIdCount; ++g) {
    std::vector<Node> nodes = cg.nodes(GraphId(g));
    bool changed = false;
    for (Node& n : nodes) {
      if (n.kind != Node::Kind::Compute || n.op != OpKind::MaxPoolArgmaxBwd) continue;
      const auto it = unstored.find(input_of(n, "x"));
      if (it == unstored.end()) continue;
      set_operands(n, n.op, {{"dy", input_of(n, "dy")}, {"x", it->second}, {"argmax", input_of(n, "argmax")}},
                   {{"dx", output_of(n, "dx")}});
      changed = true;
    }
    if (changed) cg.set_nodes(GraphId(g), std::move(nodes));
  }
}

}  // namespace

FusionCounts fuse_graph(ComputationGraph& cg, const std::vector<std::string>& only) {
  for (const std::string& name : only) {
    bool known = false;
    for (const FusionRule& r : fusion_rules()) known |= r.name == name;
    TR_CHECK(known, "fusion: no rule named '", name, "'");
  }
  const std::vector<int> readers = reader_counts(cg);
  FusionCounts total;
  std::map<TensorId, TensorId> unstored;  // a BatchNorm output no longer stored -> its input (same shape)
  for (int g = 0; g < kGraphIdCount; ++g) {
    std::vector<Node> nodes = cg.nodes(GraphId(g));
    Fuser f{cg, nodes, readers, {}, {}, unstored};
    FusionCounts c;
    run_pass(f, 0, only, c);
    run_pass(f, 1, only, c);
    if (c.total() == 0) continue;
    cg.set_nodes(GraphId(g), std::move(nodes));
    total += c;
  }
  if (!unstored.empty()) reroute_unstored(cg, unstored);
  return total;
}

}  // namespace tr
