// TtaMean CUDA kernel. Semantics: framework/ops/compute/tta_mean.h. One thread per
// output element (the logits are small: N x classes). No workspace.
#include "framework/ops/compute/tta_mean.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4;

template <typename T>
__global__ void tta_mean_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t half) {
  grid_dependency_begin();
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < half; i += stride)
    y[i] = from_f<T>((to_f(x[i]) + to_f(x[half + i])) * 0.5f);
}

}  // namespace

// x[2N,M] -> y[N,M]
void tta_mean_cuda(const OpCall& c) {
  const char* op = "TtaMean";
  check_operands(OpKind::TtaMean, c);
  const TensorRef &x = c.in[0], &y = c.out[0];
  TR_CHECK(x.shape.rank == 2 && x.shape[0] % 2 == 0, op, ": x must be [2N,M], got ", x.shape.str());
  const int64_t half = x.shape.numel() / 2;
  TR_CHECK(y.dtype == x.dtype && y.shape.numel() == half, op, ": y is ", dtype_name(y.dtype), y.shape.str());
  if (half == 0) return;
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const unsigned grid = grid_stride_blocks(half, sm_count(gh), kThreads, kBlocksPerSm);
    launch_kernel(c.env, {dim3(grid), kThreads, 0}, tta_mean_kernel<T>, x.as<T>(), y.as<T>(), half);
  });
}

}  // namespace tr
