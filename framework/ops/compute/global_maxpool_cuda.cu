// Global max pooling CUDA kernels: x[N,H,W,C] -> y[N,C], the maximum over
// all H*W positions per channel. Semantics: framework/ops/compute/pool.h. Every thread
// owns a vector of VEC channels of one image and walks the positions in order
// with a strict '>', so the backward's "first position equal to y" is the
// forward's winner, as in the CPU reference (pool_cpu.cpp). No workspace, no
// atomics.
#include "framework/ops/compute/pool.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/pool_vec_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

// x[N,P,C] -> y[N,C] (P = H*W); item = (n, channel vector)
template <typename T, int VEC>
__global__ void global_maxpool_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t N, int64_t P, int64_t C) {
  grid_dependency_begin();
  const int64_t G = C / VEC, total = N * G;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G, n = i / G;
    const T* base = x + n * P * C + g * VEC;
    float m[VEC], v[VEC];
    load_vec<T, VEC>(base, m);
    for (int64_t p = 1; p < P; ++p) {
      load_vec<T, VEC>(base + p * C, v);
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        if (v[j] > m[j]) m[j] = v[j];
    }
    store_vec<T, VEC>(y + n * C + g * VEC, m);
  }
}

// dy[N,C], x, y -> dx[N,P,C]: dy goes to the first position equal to y.
template <typename T, int VEC>
__global__ void global_maxpool_bwd_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
                                          T* __restrict__ dx, int64_t N, int64_t P, int64_t C) {
  grid_dependency_begin();
  const int64_t G = C / VEC, total = N * G;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G, n = i / G;
    const int64_t o = n * C + g * VEC;
    float yy[VEC], d[VEC];
    load_vec<T, VEC>(y + o, yy);
    load_vec<T, VEC>(dy + o, d);
    bool taken[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) taken[j] = false;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t off = (n * P + p) * C + g * VEC;
      float xx[VEC], out[VEC];
      load_vec<T, VEC>(x + off, xx);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const bool hit = !taken[j] && xx[j] == yy[j];
        out[j] = hit ? d[j] : 0.f;
        taken[j] = taken[j] || hit;
      }
      store_vec<T, VEC>(dx + off, out);
    }
  }
}

}  // namespace

void global_maxpool_fwd_cuda(const OpCall& c) {
  const char* op = "GlobalMaxPoolFwd";
  check_operands(OpKind::GlobalMaxPoolFwd, c);
  const TensorRef& x = c.in[0];
  const TensorRef& y = c.out[0];
  const Nhwc d = nhwc(x, op, "x");
  TR_CHECK(d.h * d.w > 0, op, ": empty spatial extent ", x.shape.str());
  TR_CHECK(y.dtype == x.dtype && y.shape == Shape({d.n, d.c}), op, ": y is ", y.shape.str());
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(d.c, {x.data, y.data}), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      const int64_t work = d.n * (d.c / V);
      if (work == 0) return;
      launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, global_maxpool_fwd_kernel<T, V>, x.as<T>(),
                    y.as<T>(), d.n, d.h * d.w, d.c);
    });
  });
}

void global_maxpool_bwd_cuda(const OpCall& c) {
  const char* op = "GlobalMaxPoolBwd";
  check_operands(OpKind::GlobalMaxPoolBwd, c);
  const TensorRef& dy = c.in[0];
  const TensorRef& x = c.in[1];
  const TensorRef& y = c.in[2];
  const TensorRef& dx = c.out[0];
  const Nhwc d = nhwc(x, op, "x");
  TR_CHECK(y.dtype == x.dtype && y.shape == Shape({d.n, d.c}), op, ": y is ", y.shape.str());
  check_same(dy, y, op, "dy");
  check_same(dx, x, op, "dx");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(d.c, {dy.data, x.data, y.data, dx.data}), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      const int64_t work = d.n * (d.c / V);
      if (work == 0) return;
      launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, global_maxpool_bwd_kernel<T, V>,
                    dy.as<T>(), x.as<T>(), y.as<T>(), dx.as<T>(), d.n, d.h * d.w, d.c);
    });
  });
}

}  // namespace tr
