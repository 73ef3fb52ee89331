#include "framework/runtime/memset_nodes_cuda.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "framework/core/gpu_check_cuda.h"
#include "framework/ops/kernels/kernel_launch_cuda.h"
#include "framework/runtime/graph_nodes_cuda.h"

namespace tr {
namespace {

// One memset node's parameters (cudaMemsetParams), as the kernel reads them.
struct MemsetSpec {
  char* dst;
  size_t pitch;   // bytes between rows
  size_t width;   // elements per row
  size_t height;  // rows
  uint32_t value;
  uint32_t elem;  // element size: 1, 2 or 4 bytes
  bool vec16;     // one contiguous, 16-byte aligned run of whole uint4s
};

// The element's value repeated over 32 bits.
uint32_t pattern_word(uint32_t value, uint32_t elem) {
  if (elem == 1) return (value & 0xffu) * 0x01010101u;
  if (elem == 2) return (value & 0xffffu) * 0x00010001u;
  return value;
}

__global__ void memset_node_kernel(MemsetSpec m) {
  cuda::grid_dependency_begin();
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t first = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (m.vec16) {
    const uint32_t w = m.value;  // already the 32-bit pattern
    const uint4 v = make_uint4(w, w, w, w);
    uint4* p = reinterpret_cast<uint4*>(m.dst);
    const size_t n = m.width * m.elem / 16;
    for (size_t i = first; i < n; i += stride) p[i] = v;
    return;
  }
  const size_t n = m.width * m.height;
  for (size_t i = first; i < n; i += stride) {
    char* p = m.dst + (i / m.width) * m.pitch + (i % m.width) * m.elem;
    if (m.elem == 1) *reinterpret_cast<uint8_t*>(p) = uint8_t(m.value);
    else if (m.elem == 2) *reinterpret_cast<uint16_t*>(p) = uint16_t(m.value);
    else *reinterpret_cast<uint32_t*>(p) = m.value;
  }
}

// Kernel node parameters that write what memset node `m` writes. Not
// copyable: params points at its own members.
struct KernelFromMemset {
  MemsetSpec spec{};
  void* args[1] = {&spec};
  cudaKernelNodeParams params{};
  KernelFromMemset(const KernelFromMemset&) = delete;
  KernelFromMemset& operator=(const KernelFromMemset&) = delete;

  KernelFromMemset(const cudaMemsetParams& p, int sms) {
    TR_CHECK(p.elementSize == 1 || p.elementSize == 2 || p.elementSize == 4, "memset node with element size ",
             p.elementSize);
    const size_t row_bytes = p.width * p.elementSize;
    const bool one_run = p.height == 1 || p.pitch == row_bytes;
    spec.dst = static_cast<char*>(p.dst);
    spec.pitch = p.pitch;
    spec.width = one_run ? p.width * p.height : p.width;
    spec.height = one_run ? 1 : p.height;
    spec.elem = p.elementSize;
    spec.vec16 = one_run && reinterpret_cast<uintptr_t>(p.dst) % 16 == 0 && (spec.width * spec.elem) % 16 == 0;
    spec.value = spec.vec16 ? pattern_word(p.value, p.elementSize) : p.value;
    const size_t items = spec.vec16 ? spec.width * spec.elem / 16 : spec.width * spec.height;
    constexpr unsigned kThreads = 256;
    const size_t blocks = (items + kThreads - 1) / kThreads;
    params.func = reinterpret_cast<void*>(memset_node_kernel);
    params.gridDim = dim3(unsigned(std::max<size_t>(1, std::min<size_t>(blocks, size_t(4) * sms))));
    params.blockDim = dim3(kThreads);
    params.sharedMemBytes = 0;
    params.kernelParams = args;
    params.extra = nullptr;
  }
};

int device_sms() {
  int dev = 0, sms = 0;
  TR_GPU_CHECK(cudaGetDevice(&dev));
  TR_GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// The most urgent priority among the kernel nodes of `nodes` (captured kernels
// carry their stream's priority: Note [stream priorities]); false if none has one.
bool urgent_priority(const std::vector<cudaGraphNode_t>& nodes, int* priority) {
  bool found = false;
  for (cudaGraphNode_t n : nodes) {
    if (node_type(n) != cudaGraphNodeTypeKernel) continue;
    cudaLaunchAttributeValue v{};
    if (cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributePriority, &v) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (!found || v.priority < *priority) *priority = v.priority;  // smaller is more urgent
    found = true;
  }
  return found;
}

void replace_one(cudaGraph_t g, cudaGraphNode_t m, bool programmatic_edges, int sms) {
  size_t nin = 0, nout = 0;
  TR_GPU_CHECK(cudaGraphNodeGetDependencies(m, nullptr, nullptr, &nin));
  std::vector<cudaGraphNode_t> in(nin);
  std::vector<cudaGraphEdgeData> in_edges(nin);
  if (nin > 0) TR_GPU_CHECK(cudaGraphNodeGetDependencies(m, in.data(), in_edges.data(), &nin));
  TR_GPU_CHECK(cudaGraphNodeGetDependentNodes(m, nullptr, nullptr, &nout));
  std::vector<cudaGraphNode_t> out(nout);
  std::vector<cudaGraphEdgeData> out_edges(nout);
  if (nout > 0) TR_GPU_CHECK(cudaGraphNodeGetDependentNodes(m, out.data(), out_edges.data(), &nout));
  cudaMemsetParams p{};
  TR_GPU_CHECK(cudaGraphMemsetNodeGetParams(m, &p));

  KernelFromMemset k(p, sms);
  cudaGraphNode_t node = nullptr;
  TR_GPU_CHECK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &k.params));
  // It runs as urgently as the kernels it sits between (the critical path's).
  std::vector<cudaGraphNode_t> around = in;
  around.insert(around.end(), out.begin(), out.end());
  int priority = 0;
  if (urgent_priority(around, &priority)) {
    cudaLaunchAttributeValue v{};
    v.priority = priority;
    TR_GPU_CHECK(cudaGraphKernelNodeSetAttribute(node, cudaLaunchAttributePriority, &v));
  }
  for (size_t i = 0; i < nin; ++i) {
    cudaGraphEdgeData e = in_edges[i];
    if (programmatic_edges && node_type(in[i]) == cudaGraphNodeTypeKernel) {
      e.type = cudaGraphDependencyTypeProgrammatic;
      e.from_port = cudaGraphKernelNodePortProgrammatic;
    }
    TR_GPU_CHECK(cudaGraphAddDependencies(g, &in[i], &node, &e, 1));
  }
  for (size_t i = 0; i < nout; ++i) TR_GPU_CHECK(cudaGraphAddDependencies(g, &node, &out[i], &out_edges[i], 1));
  TR_GPU_CHECK(cudaGraphDestroyNode(m));
}

}  // namespace

size_t replace_memset_nodes(cudaGraph_t g, bool programmatic_edges) {
  const int sms = device_sms();
  size_t replaced = 0;
  for (cudaGraphNode_t node : graph_nodes(g)) {
    const cudaGraphNodeType t = node_type(node);
    if (t == cudaGraphNodeTypeMemset) {
      replace_one(g, node, programmatic_edges, sms);
      ++replaced;
    } else if (t == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;  // the embedded graph itself, not a copy
      TR_GPU_CHECK(cudaGraphChildGraphNodeGetGraph(node, &child));
      replaced += replace_memset_nodes(child, programmatic_edges);
    }
  }
  return replaced;
}

}  // namespace tr
