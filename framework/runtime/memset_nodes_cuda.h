#pragma once
// Memset nodes of a captured graph, rewritten as kernel nodes.
//
// Note [memset nodes]: cuDNN zeroes a 4-byte word of its workspace with
// cudaMemsetAsync before some convolution engines, and tr clears gradient and
// flag regions the same way; captured, each becomes a memset node. On the
// H200 a memset node between two kernels costs 5-15 us of idle GPU (the
// kernel trace shows 2-9 us before it and 3-11 us after it), where a kernel
// boundary costs about 1 us and, with programmatic launch, less. At cnn batch
// 256 five such nodes sat on the step's critical path. Each memset node is
// therefore replaced by a kernel node that writes the same bytes, with the
// same predecessors and dependents; the edges from kernel predecessors are
// programmatic when programmatic launch is on (the kernel waits for them
// first: Note [programmatic dependent launch]). The bytes written and their
// order against every other node are unchanged, so no result changes.
#include <cuda_runtime.h>

#include <cstddef>

namespace tr {

// Replaces every memset node of `g` (child graphs included) by an equivalent
// kernel node; returns how many. programmatic_edges: edges from kernel
// predecessors become programmatic.
size_t replace_memset_nodes(cudaGraph_t g, bool programmatic_edges);

}  // namespace tr
