// Add CUDA kernel. Semantics: framework/ops/compute/add.h. 16-byte vectors over the
// flat tensor when the pointers allow it; the tail (numel % VEC) is done by the
// first threads one element each. No workspace.
#include "framework/ops/compute/add.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

// The stored sum, then the ReLU on it (NaN -> 0, like the CPU's comparison).
template <typename T, bool RELU>
__device__ __forceinline__ float add_one(float a, float b) {
  const float v = to_f(from_f<T>(a + b));
  return RELU ? (v > 0.f ? v : 0.f) : v;
}

template <typename T, int VEC, bool RELU>
__global__ void add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, int64_t n) {
  grid_dependency_begin();
  const int64_t nv = n / VEC;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nv; i += stride) {
    float u[VEC], v[VEC];
    load_vec<T, VEC>(a + i * VEC, u);
    load_vec<T, VEC>(b + i * VEC, v);
#pragma unroll
    for (int j = 0; j < VEC; ++j) u[j] = add_one<T, RELU>(u[j], v[j]);
    store_vec<T, VEC>(y + i * VEC, u);
  }
  for (int64_t i = nv * VEC + tid; i < n; i += stride) y[i] = from_f<T>(add_one<T, RELU>(to_f(a[i]), to_f(b[i])));
}

}  // namespace

// a[...], b[...] -> y[...] (same numel and dtype)
void add_cuda(const OpCall& c) {
  const char* op = "Add";
  check_operands(OpKind::Add, c);
  const TensorRef &a = c.in[0], &b = c.in[1], &y = c.out[0];
  const int64_t n = a.shape.numel();
  TR_CHECK(b.dtype == a.dtype && b.shape.numel() == n, op, ": b is ", dtype_name(b.dtype), b.shape.str(), ", a is ",
           dtype_name(a.dtype), a.shape.str());
  TR_CHECK(y.dtype == a.dtype && y.shape.numel() == n, op, ": y is ", dtype_name(y.dtype), y.shape.str());
  if (n == 0) return;
  const GpuHandles& gh = handles_of(c, op);
  const bool vec = aligned_to(a.data, 16) && aligned_to(b.data, 16) && aligned_to(y.data, 16);
  dispatch_float(a.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = kVec16<T>;
    auto run = [&](auto v, auto relu) {
      constexpr int VEC = decltype(v)::value;
      const unsigned grid = grid_stride_blocks(ceil_div(n, VEC), sm_count(gh), kThreads, kBlocksPerSm);
      launch_kernel(c.env, {dim3(grid), kThreads, 0}, add_kernel<T, VEC, decltype(relu)::value>, a.as<T>(), b.as<T>(),
                    y.as<T>(), n);
    };
    if (c.attrs->relu) {
      if (vec) run(std::integral_constant<int, V>{}, std::true_type{});
      else run(std::integral_constant<int, 1>{}, std::true_type{});
    } else {
      if (vec) run(std::integral_constant<int, V>{}, std::false_type{});
      else run(std::integral_constant<int, 1>{}, std::false_type{});
    }
  });
}

}  // namespace tr
