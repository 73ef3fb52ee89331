#include "framework/runtime/graph_nodes_cuda.h"

#include "framework/core/gpu_check_cuda.h"

namespace tr {

std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t g) {
  size_t n = 0;
  TR_GPU_CHECK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) TR_GPU_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
  return nodes;
}

cudaGraphNodeType node_type(cudaGraphNode_t node) {
  cudaGraphNodeType t;
  TR_GPU_CHECK(cudaGraphNodeGetType(node, &t));
  return t;
}

size_t count_graph_nodes(cudaGraph_t g, cudaGraphNodeType type) {
  size_t n = 0;
  for (cudaGraphNode_t node : graph_nodes(g)) {
    const cudaGraphNodeType t = node_type(node);
    if (t == type) ++n;
    if (t == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      TR_GPU_CHECK(cudaGraphChildGraphNodeGetGraph(node, &child));
      n += count_graph_nodes(child, type);
    }
  }
  return n;
}

}  // namespace tr
