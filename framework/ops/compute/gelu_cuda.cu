// GELU (tanh form) CUDA kernels. Semantics: framework/ops/compute/gelu.h.
// 16-byte vectors over the flat tensor when the pointers allow it; the tail
// (numel % VEC) is done by the first threads one element each. No workspace.
#include "framework/ops/compute/gelu.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// The same expressions as the CPU reference, in f32 (tanhf, not the
// tanh.approx instruction: the GPU stays within an ulp or two of the CPU).
__device__ __forceinline__ float gelu(float x) {
  const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
  return 0.5f * x * (1.f + tanhf(u));
}

__device__ __forceinline__ float gelu_grad(float x) {
  const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
  const float t = tanhf(u);
  const float du = kSqrt2OverPi * (1.f + 3.f * kCubic * x * x);
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * du;
}

// BWD: dx = dy * gelu'(x), else y = gelu(x) (dy unused).
template <typename T, int VEC, bool BWD>
__global__ void gelu_kernel(const T* __restrict__ dy, const T* __restrict__ x, T* __restrict__ out, int64_t n) {
  grid_dependency_begin();
  const int64_t nv = n / VEC;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nv; i += stride) {
    float v[VEC], d[VEC];
    load_vec<T, VEC>(x + i * VEC, v);
    if constexpr (BWD) load_vec<T, VEC>(dy + i * VEC, d);
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = BWD ? d[j] * gelu_grad(v[j]) : gelu(v[j]);
    store_vec<T, VEC>(out + i * VEC, v);
  }
  for (int64_t i = nv * VEC + tid; i < n; i += stride) {
    const float v = to_f(x[i]);
    out[i] = from_f<T>(BWD ? to_f(dy[i]) * gelu_grad(v) : gelu(v));
  }
}

template <bool BWD>
void launch_gelu(const OpCall& c, const char* op, const TensorRef* dy, const TensorRef& x, const TensorRef& out) {
  const int64_t n = x.shape.numel();
  for (const TensorRef* t : {dy, &out})
    if (t != nullptr)
      TR_CHECK(t->dtype == x.dtype && t->shape.numel() == n, op, ": an operand is ", dtype_name(t->dtype),
               t->shape.str(), ", x is ", dtype_name(x.dtype), x.shape.str());
  if (n == 0) return;
  const GpuHandles& gh = handles_of(c, op);
  const bool vec = aligned_to(x.data, 16) && aligned_to(out.data, 16) && (dy == nullptr || aligned_to(dy->data, 16));
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const T* dyp = dy != nullptr ? dy->as<T>() : nullptr;
    auto run = [&](auto v) {
      constexpr int VEC = decltype(v)::value;
      const unsigned grid = grid_stride_blocks(ceil_div(n, VEC), sm_count(gh), kThreads, kBlocksPerSm);
      launch_kernel(c.env, {dim3(grid), kThreads, 0}, gelu_kernel<T, VEC, BWD>, dyp, x.as<T>(), out.as<T>(), n);
    };
    if (vec) run(std::integral_constant<int, kVec16<T>>{});
    else run(std::integral_constant<int, 1>{});
  });
}

}  // namespace

// x[...] -> y[...]
void gelu_fwd_cuda(const OpCall& c) {
  check_operands(OpKind::GeluFwd, c);
  launch_gelu<false>(c, "GeluFwd", nullptr, c.in[0], c.out[0]);
}

// dy[...], x[...] -> dx[...]
void gelu_bwd_cuda(const OpCall& c) {
  check_operands(OpKind::GeluBwd, c);
  launch_gelu<true>(c, "GeluBwd", &c.in[0], c.in[1], c.out[0]);
}

}  // namespace tr
