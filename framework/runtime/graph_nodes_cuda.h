#pragma once
// Walking a CUDA graph's nodes: the nodes of one level, a node's type, and how
// many nodes of a type a graph holds with its child graphs.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace tr {

std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t g);  // this level only
cudaGraphNodeType node_type(cudaGraphNode_t node);
// Nodes of `type` in g, child graphs included.
size_t count_graph_nodes(cudaGraph_t g, cudaGraphNodeType type);

}  // namespace tr
