// TokenPrep on CUDA. Semantics: framework/ops/compute/token_prep.h. One kernel
// splits the windows into ids and labels and numbers the positions; CUB's
// stable radix sort of (id, position) pairs over all 32 bits then gives the
// positions in (id, position) order. No atomics: the same bits on every run.
#include <cub/device/device_radix_sort.cuh>

#include "framework/ops/compute/token_prep.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;

// ids[i], labels[i] from window i / T at i % T; positions[i] = i.
__global__ void split_windows_kernel(const int32_t* __restrict__ windows, int64_t width, int64_t T, int64_t n,
                                     int32_t* __restrict__ ids, int32_t* __restrict__ labels,
                                     int32_t* __restrict__ positions) {
  grid_dependency_begin();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t* w = windows + (i / T) * width + i % T;
    ids[i] = w[0];
    labels[i] = w[1];
    positions[i] = int32_t(i);
  }
}

size_t round_up256(size_t v) { return (v + 255) / 256 * 256; }

}  // namespace

void token_prep_cuda(const OpCall& c) {
  const char* op = "TokenPrep";
  check_operands(OpKind::TokenPrep, c);
  const TensorRef& w = c.in[0];
  TR_CHECK(c.variant != nullptr, op, ": no variant");
  const int64_t N = c.variant->batch, T = c.variant->height, n = N * T;
  TR_CHECK(w.shape.rank == 2 && N <= w.shape[0] && T < w.shape[1], op, ": tokens ", w.shape.str(), " for ", N, "x", T);
  TR_CHECK(n <= INT32_MAX, op, ": ", n, " tokens in a batch");
  check_dtype(w, DType::I32, op, "tokens");
  for (int i = 0; i < 3; ++i) {
    check_dtype(c.out[i], DType::I32, op, "an output");
    check_numel(c.out[i], n, op, "an output");
  }
  if (n == 0) return;
  int32_t* ids = c.out[0].as<int32_t>();
  int32_t* order = c.out[2].as<int32_t>();
  size_t cub_bytes = 0;
  TR_GPU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, ids, ids, order, order, int(n)));
  const size_t half = round_up256(size_t(n) * sizeof(int32_t));
  const GpuHandles& gh = handles_of(c, op);
  char* ws = static_cast<char*>(workspace(gh, 2 * half + cub_bytes, op));
  int32_t* sorted_ids = reinterpret_cast<int32_t*>(ws);
  int32_t* positions = reinterpret_cast<int32_t*>(ws + half);
  const unsigned blocks = unsigned(std::min<int64_t>(ceil_div(n, kThreads), int64_t(sm_count(gh)) * 8));
  launch_kernel(c.env, {dim3(blocks), dim3(kThreads), 0}, split_windows_kernel, w.as<int32_t>(), w.shape[1], T, n, ids,
                c.out[1].as<int32_t>(), positions);
  TR_LIBRARY_LAUNCH(cub::DeviceRadixSort::SortPairs(ws + 2 * half, cub_bytes, ids, sorted_ids, positions, order, int(n),
                                                    0, 32, stream_of(c)));
}

}  // namespace tr
