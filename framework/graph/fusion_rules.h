#pragma once
// The fusion rules of Note [fusion] (fusion.h) as a table: each rule is a
// pattern anchored at one node, a guard, and a rewrite, all over the nodes'
// operands by name (node_operands.h), never their positions. fuse_graph()
// walks each graph's nodes once per pass and tries the pass's rules, in table
// order, at every node still on its graph's own stream.
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "framework/graph/computation_graph.h"
#include "framework/graph/fusion.h"

namespace tr {

// One graph's nodes while a pass rewrites them.
struct Fuser {
  const ComputationGraph& cg;
  std::vector<Node>& nodes;
  const std::vector<int>& readers;         // readers of each tensor over every graph
  std::map<TensorId, size_t> producer;     // tensor -> index of the node that writes it
  std::vector<bool> drop;                  // nodes merged into another, removed after the pass
  std::map<TensorId, TensorId>& unstored;  // a BatchNorm output no longer stored -> its input
};

struct FusionRule {
  std::string_view name;
  int pass = 0;  // 0: node pairs; 1: a BatchNorm's phases, on the nodes pass 0 left
  int FusionCounts::*count = nullptr;
  // Matches at nodes[i] and, when the guard holds, rewrites: the fused node
  // takes some node's place and the others are marked in drop. Returns whether it fused.
  bool (*fuse)(Fuser& f, size_t i) = nullptr;
  // Whether the GPU computes the same bits fused as unfused. The rules that
  // fold an op into a cuBLASLt epilogue do not (it rounds the f32 accumulator
  // once: fc_gelu.h, fc_residual.h); on the CPU every rule changes no bit.
  bool same_gpu_bits = true;
};

std::span<const FusionRule> fusion_rules();

// Whether a node is a compute node on its graph's own stream: the only kind a rule touches.
bool on_own_stream(const Node& n);

}  // namespace tr
