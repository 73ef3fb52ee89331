// ReLU CUDA kernels. Semantics: framework/ops/compute/relu.h. 16-byte vectors over the
// flat tensor when the pointers allow it; the tail (numel % VEC) is done by the
// first threads one element each. No workspace.
#include "framework/ops/compute/relu.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

unsigned grid_for(int64_t work, int sms) { return grid_stride_blocks(work, sms, kThreads, kBlocksPerSm); }

// y = x > 0 ? x : 0 (NaN -> 0, like the CPU's comparison)
template <typename T, int VEC>
__global__ void relu_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  grid_dependency_begin();
  const int64_t nv = n / VEC;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nv; i += stride) {
    float v[VEC];
    load_vec<T, VEC>(x + i * VEC, v);
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = v[j] > 0.f ? v[j] : 0.f;
    store_vec<T, VEC>(y + i * VEC, v);
  }
  for (int64_t i = nv * VEC + tid; i < n; i += stride) {
    const float v = to_f(x[i]);
    y[i] = from_f<T>(v > 0.f ? v : 0.f);
  }
}

// dx = y > 0 ? dy : 0, or with dy2: y > 0 ? dy + dy2 : 0 (the sum in f32, rounded
// once to T as Add rounds it)
template <typename T, int VEC>
__global__ void relu_bwd_kernel(const T* __restrict__ dy, const T* __restrict__ y, const T* __restrict__ dy2,
                                T* __restrict__ dx, int64_t n) {
  grid_dependency_begin();
  const int64_t nv = n / VEC;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nv; i += stride) {
    float d[VEC], v[VEC];
    load_vec<T, VEC>(dy + i * VEC, d);
    load_vec<T, VEC>(y + i * VEC, v);
    if (dy2 != nullptr) {
      float d2[VEC];
      load_vec<T, VEC>(dy2 + i * VEC, d2);
#pragma unroll
      for (int j = 0; j < VEC; ++j) d[j] += d2[j];
    }
#pragma unroll
    for (int j = 0; j < VEC; ++j) d[j] = v[j] > 0.f ? d[j] : 0.f;
    store_vec<T, VEC>(dx + i * VEC, d);
  }
  for (int64_t i = nv * VEC + tid; i < n; i += stride) {
    const float d = dy2 != nullptr ? to_f(dy[i]) + to_f(dy2[i]) : to_f(dy[i]);
    dx[i] = from_f<T>(to_f(y[i]) > 0.f ? d : 0.f);
  }
}

bool all_aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (!aligned_to(p, 16)) return false;
  return true;
}

void check_same(const TensorRef& a, const TensorRef& b, const char* op, const char* what) {
  TR_CHECK(a.dtype == b.dtype && a.shape.numel() == b.shape.numel(), op, ": ", what, " is ", dtype_name(a.dtype),
           a.shape.str(), ", expected ", dtype_name(b.dtype), b.shape.str());
}

}  // namespace

void relu_fwd_cuda(const OpCall& c) {
  const char* op = "ReluFwd";
  check_operands(OpKind::ReluFwd, c);
  const TensorRef& x = c.in[0];
  const TensorRef& y = c.out[0];
  check_same(y, x, op, "y");
  const int64_t n = x.shape.numel();
  if (n == 0) return;
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = kVec16<T>;
    if (all_aligned16({x.data, y.data})) {
      launch_kernel(c.env, {grid_for(ceil_div(n, V), sm_count(gh)), kThreads, 0}, relu_fwd_kernel<T, V>, x.as<T>(),
                    y.as<T>(), n);
    } else {
      launch_kernel(c.env, {grid_for(n, sm_count(gh)), kThreads, 0}, relu_fwd_kernel<T, 1>, x.as<T>(), y.as<T>(), n);
    }
  });
}

namespace {

void relu_bwd_any_cuda(OpKind kind, const OpCall& c) {
  const char* op = kind == OpKind::ReluBwdAdd ? "ReluBwdAdd" : "ReluBwd";
  const ReluBwdOperands o = relu_bwd_operands(kind, c);
  const TensorRef &dy = *o.dy, &y = *o.y, &dx = *o.dx;
  const void* dy2 = o.dy2 != nullptr ? o.dy2->data : nullptr;
  const int64_t n = dy.shape.numel();
  if (n == 0) return;
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(dy.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = kVec16<T>;
    const T* d2 = static_cast<const T*>(dy2);
    if (all_aligned16({dy.data, y.data, dx.data}) && (dy2 == nullptr || aligned_to(dy2, 16))) {
      launch_kernel(c.env, {grid_for(ceil_div(n, V), sm_count(gh)), kThreads, 0}, relu_bwd_kernel<T, V>, dy.as<T>(),
                    y.as<T>(), d2, dx.as<T>(), n);
    } else {
      launch_kernel(c.env, {grid_for(n, sm_count(gh)), kThreads, 0}, relu_bwd_kernel<T, 1>, dy.as<T>(), y.as<T>(), d2,
                    dx.as<T>(), n);
    }
  });
}

}  // namespace

void relu_bwd_cuda(const OpCall& c) { relu_bwd_any_cuda(OpKind::ReluBwd, c); }
void relu_bwd_add_cuda(const OpCall& c) { relu_bwd_any_cuda(OpKind::ReluBwdAdd, c); }

}  // namespace tr
