// Average pooling CUDA kernels. Semantics and rounding: framework/ops/compute/avgpool.h;
// visiting order: Note [pool window order] in pool_window.h.
// Every thread owns a vector of VEC channels at one position (16-byte loads and
// stores, coalesced along C) and sums in f32 in the CPU reference's order
// (avgpool_cpu.cpp), then divides once (IEEE division, as on the host), so the
// two agree bit for bit. Sums only: nothing for nvcc to contract into an FMA.
// No workspace, no atomics.
#include "framework/ops/compute/avgpool.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/pool_vec_cuda.h"
#include "framework/ops/kernels/pool_window.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

// x[N,H,W,C] -> y[N,Ho,Wo,C]; item = (n, oh, ow, channel vector)
template <typename T, int VEC>
__global__ void avgpool_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t N, int64_t H, int64_t W,
                                   int64_t C, PoolWindow pw) {
  grid_dependency_begin();
  const int64_t Ho = pw.out_len(H), Wo = pw.out_len(W), G = C / VEC;
  const int64_t total = N * Ho * Wo * G;
  const float count = float(pw.k * pw.k);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G;
    int64_t t = i / G;
    const int64_t ow = t % Wo;
    t /= Wo;
    const int64_t oh = t % Ho;
    const int64_t n = t / Ho;
    const T* xn = x + n * H * W * C + g * VEC;
    float acc[VEC], v[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = 0.f;
    for (int64_t h = pw.in_begin(oh); h < pw.in_end(oh, H); ++h)
      for (int64_t w = pw.in_begin(ow); w < pw.in_end(ow, W); ++w) {
        load_vec<T, VEC>(xn + (h * W + w) * C, v);
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[j] += v[j];
      }
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = acc[j] / count;
    store_vec<T, VEC>(y + i * VEC, acc);
  }
}

// dy[N,Ho,Wo,C] -> dx[N,H,W,C], a gather; item = (n, ih, iw, channel vector).
// Adds dy of the windows holding (ih, iw), oh then ow ascending, then / (k*k).
template <typename T, int VEC>
__global__ void avgpool_bwd_kernel(const T* __restrict__ dy, T* __restrict__ dx, int64_t N, int64_t H, int64_t W,
                                   int64_t C, PoolWindow pw) {
  grid_dependency_begin();
  const int64_t Ho = pw.out_len(H), Wo = pw.out_len(W), G = C / VEC;
  const int64_t total = N * H * W * G;
  const float count = float(pw.k * pw.k);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G;
    int64_t t = i / G;
    const int64_t iw = t % W;
    t /= W;
    const int64_t ih = t % H;
    const int64_t n = t / H;
    int64_t oh0, oh1, ow0, ow1;
    pw.covering(ih, Ho, &oh0, &oh1);
    pw.covering(iw, Wo, &ow0, &ow1);
    float acc[VEC], d[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = 0.f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        load_vec<T, VEC>(dy + ((n * Ho + oh) * Wo + ow) * C + g * VEC, d);
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[j] += d[j];
      }
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = acc[j] / count;
    store_vec<T, VEC>(dx + i * VEC, acc);
  }
}

// x[N,P,C] -> y[N,C] (P = H*W); item = (n, channel vector), like the global max
// pool. Loads go four positions at a time so several are in flight per thread;
// the adds stay in p order.
template <typename T, int VEC>
__global__ void global_avgpool_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t N, int64_t P, int64_t C) {
  grid_dependency_begin();
  constexpr int kAhead = 4;
  const int64_t G = C / VEC, total = N * G;
  const float count = float(P);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G, n = i / G;
    const T* base = x + n * P * C + g * VEC;
    float acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = 0.f;
    int64_t p = 0;
    for (; p + kAhead <= P; p += kAhead) {
      float v[kAhead][VEC];
#pragma unroll
      for (int u = 0; u < kAhead; ++u) load_vec<T, VEC>(base + (p + u) * C, v[u]);
#pragma unroll
      for (int u = 0; u < kAhead; ++u)
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[j] += v[u][j];
    }
    for (; p < P; ++p) {
      float v[VEC];
      load_vec<T, VEC>(base + p * C, v);
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc[j] += v[j];
    }
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = acc[j] / count;
    store_vec<T, VEC>(y + n * C + g * VEC, acc);
  }
}

// dy[N,C] -> dx[N,P,C] = dy / P; item = (n, p, channel vector): a pure broadcast
// write, one 16-byte store per thread (dy stays in L1/L2).
template <typename T, int VEC>
__global__ void global_avgpool_bwd_kernel(const T* __restrict__ dy, T* __restrict__ dx, int64_t N, int64_t P,
                                          int64_t C) {
  grid_dependency_begin();
  const int64_t G = C / VEC, total = N * P * G;
  const float count = float(P);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G, n = i / G / P;
    float d[VEC];
    load_vec<T, VEC>(dy + n * C + g * VEC, d);
#pragma unroll
    for (int j = 0; j < VEC; ++j) d[j] = d[j] / count;
    store_vec<T, VEC>(dx + i * VEC, d);
  }
}

void check_t(const TensorRef& t, const TensorRef& like, const Shape& want, const char* op, const char* what) {
  TR_CHECK(t.dtype == like.dtype && t.shape == want, op, ": ", what, " is ", dtype_name(t.dtype), t.shape.str(),
           ", expected ", dtype_name(like.dtype), want.str());
}

}  // namespace

void avgpool_fwd_cuda(const OpCall& c) {
  const char* op = "AvgPoolFwd";
  check_operands(OpKind::AvgPoolFwd, c);
  const TensorRef& x = c.in[0];
  const TensorRef& y = c.out[0];
  const PoolWindow pw = checked_pool_window(attrs_of(c, op), x.shape, op, false);
  check_t(y, x, pooled_shape(x.shape, pw), op, "y");
  const GpuHandles& gh = handles_of(c, op);
  const Shape& s = x.shape;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(s[3], {x.data, y.data}), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      const int64_t work = y.shape.numel() / V;
      launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, avgpool_fwd_kernel<T, V>, x.as<T>(),
                    y.as<T>(), s[0], s[1], s[2], s[3], pw);
    });
  });
}

void avgpool_bwd_cuda(const OpCall& c) {
  const char* op = "AvgPoolBwd";
  check_operands(OpKind::AvgPoolBwd, c);
  const TensorRef& dy = c.in[0];
  const TensorRef& x = c.in[1];
  const TensorRef& dx = c.out[0];
  const PoolWindow pw = checked_pool_window(attrs_of(c, op), x.shape, op, false);
  check_t(dy, x, pooled_shape(x.shape, pw), op, "dy");
  check_t(dx, x, x.shape, op, "dx");
  const GpuHandles& gh = handles_of(c, op);
  const Shape& s = x.shape;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(s[3], {dy.data, dx.data}), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      const int64_t work = s.numel() / V;
      launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, avgpool_bwd_kernel<T, V>, dy.as<T>(),
                    dx.as<T>(), s[0], s[1], s[2], s[3], pw);
    });
  });
}

void global_avgpool_fwd_cuda(const OpCall& c) {
  const char* op = "GlobalAvgPoolFwd";
  check_operands(OpKind::GlobalAvgPoolFwd, c);
  const TensorRef& x = c.in[0];
  const TensorRef& y = c.out[0];
  const Shape& s = x.shape;
  TR_CHECK(s.rank == 4 && s.numel() > 0, op, ": x must be a non-empty [N,H,W,C], got ", s.str());
  check_t(y, x, Shape{s[0], s[3]}, op, "y");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(s[3], {x.data, y.data}), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      const int64_t work = s[0] * (s[3] / V);
      launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, global_avgpool_fwd_kernel<T, V>, x.as<T>(),
                    y.as<T>(), s[0], s[1] * s[2], s[3]);
    });
  });
}

void global_avgpool_bwd_cuda(const OpCall& c) {
  const char* op = "GlobalAvgPoolBwd";
  check_operands(OpKind::GlobalAvgPoolBwd, c);
  const TensorRef& dy = c.in[0];
  const TensorRef& x = c.in[1];
  const TensorRef& dx = c.out[0];
  const Shape& s = x.shape;
  TR_CHECK(s.rank == 4 && s.numel() > 0, op, ": x must be a non-empty [N,H,W,C], got ", s.str());
  check_t(dy, x, Shape{s[0], s[3]}, op, "dy");
  check_t(dx, x, s, op, "dx");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(s[3], {dy.data, dx.data}), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      const int64_t work = s.numel() / V;
      launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, global_avgpool_bwd_kernel<T, V>,
                    dy.as<T>(), dx.as<T>(), s[0], s[1] * s[2], s[3]);
    });
  });
}

}  // namespace tr
