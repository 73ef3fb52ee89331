// BatchNorm (+ReLU) CUDA kernels. Semantics: framework/ops/batchnorm.h.
// Reductions follow Note [deterministic kernels] (cuda_kernel_util_cuda.h):
// per-thread sums over a fixed row set, a fixed shared-memory tree, per-block
// partials in the workspace, then finalize_sums in block order.
//   workspace: channel_grid(...).grid.x * 2 * C * 4 bytes for BnStats and
//   BnReluBwdReduce (<= 4 * SMs * 2 * C * 4), nothing for the others.
#include "framework/ops/batchnorm.h"
#include "framework/ops/bn_affine_cuda.h"
#include "framework/ops/channel_stats_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

// BnReluBwdReduce's grid: that of the forward statistics (channel_stats_cuda.h).
constexpr int kReduceBlocksPerSm = kStatsBlocksPerSm;
constexpr int kApplyBlocksPerSm = 8;
constexpr int64_t kMinRowsPerThread = kStatsMinRowsPerThread;
// The elementwise apply kernels give each thread at least 8 rows: on the H200
// that was 1 % faster per step than 4 (resnet18 b128 2.316 vs 2.341 ms, cnn
// b256 0.737 vs 0.747; reports/h200/schedule/final); 16 blocks per SM or 4
// instead of 8 changed nothing.
constexpr int64_t kApplyMinRowsPerThread = 8;
constexpr int kRowUnroll = 4;  // rows in flight per thread (Note [BN vector width])

// VEC elements as loaded (8 bytes), converted to f32 where used, so the rows
// in flight hold half the registers for f16.
template <typename T, int VEC>
__device__ __forceinline__ Vec<T, VEC> load_raw(const T* p) {
  return *reinterpret_cast<const Vec<T, VEC>*>(p);
}

// Walks this thread's rows r, r + stride, ... below `rows`: f(N, r) handles the
// N rows r + u * stride, u < N, loading all of them before using any; N is
// kRowUnroll, then 1 for the remainder. The rows and their order per thread are
// those of a plain loop, so sums keep their order.
template <typename F>
__device__ __forceinline__ void for_rows(int64_t r, int64_t stride, int64_t rows, F&& f) {
  for (; r + (kRowUnroll - 1) * stride < rows; r += kRowUnroll * stride)
    f(std::integral_constant<int, kRowUnroll>{}, r);
  for (; r < rows; r += stride) f(std::integral_constant<int, 1>{}, r);
}

// Per-channel mean and rstd from the batch statistics (mean, biased var); once per
// thread, in double like the CPU reference.
struct ChanStat {
  float mean, rstd;
};
__device__ __forceinline__ ChanStat stat_from_batch(const float* batch, int64_t C, int64_t ch, float eps) {
  return {batch[ch], float(1.0 / sqrt(double(batch[C + ch]) + double(eps)))};
}

// ---------------------------------------------------------------- kernels

// y = relu(scale * x + shift), scale = gamma * rstd, shift = beta - mean * scale
// (bn_affine_cuda.h); block row 0 also writes batch = (mean, var) and
// affine = (scale, shift).
template <typename T, int VEC>
__global__ void bn_relu_apply_kernel(const T* __restrict__ x, const float* __restrict__ sums,
                                     const T* __restrict__ gamma, const T* __restrict__ beta,
                                     const T* __restrict__ residual, T* __restrict__ y,
                                     float* __restrict__ batch, float* __restrict__ affine, int64_t rows, int64_t C,
                                     double inv_count, float eps, bool relu) {
  grid_dependency_begin();
  const int64_t g = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = g * VEC;
  if (c0 >= C) return;
  float sc[VEC], sh[VEC];
  bn_thread_affine<T, VEC>(sums, gamma, beta, C, c0, inv_count, eps, batch, affine, sc, sh);
  const int64_t stride = int64_t(gridDim.x) * blockDim.y;
  for_rows(int64_t(blockIdx.x) * blockDim.y + threadIdx.y, stride, rows, [&](auto n, int64_t r) {
    constexpr int N = decltype(n)::value;
    Vec<T, VEC> xv[N], rv[N];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      xv[u] = load_raw<T, VEC>(x + (r + u * stride) * C + c0);
      if (residual != nullptr) rv[u] = load_raw<T, VEC>(residual + (r + u * stride) * C + c0);
    }
#pragma unroll
    for (int u = 0; u < N; ++u) {
      float v[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        float o = bn_pre_relu(sc[i], sh[i], to_f(xv[u].v[i]));
        if (residual != nullptr) o += to_f(rv[u].v[i]);
        v[i] = relu ? fmaxf(o, 0.f) : o;
      }
      store_vec<T, VEC>(y + (r + u * stride) * C + c0, v);
    }
  });
}

// Per-thread (scale, shift) of its VEC channels from the forward's affine.
template <int VEC>
__device__ __forceinline__ void load_affine(const float* affine, int64_t C, int64_t c0, float (&sc)[VEC],
                                            float (&sh)[VEC]) {
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    sc[i] = affine[c0 + i];
    sh[i] = affine[C + c0 + i];
  }
}

// g = dy * (scale * x + shift > 0); sums (g, g * xhat)
template <typename T, int VEC>
__global__ void bn_relu_bwd_reduce_kernel(const T* __restrict__ dy, const float* __restrict__ affine,
                                          const T* __restrict__ x, const float* __restrict__ batch, int64_t rows,
                                          int64_t C, float eps, bool relu, SumOut<T, 2> out) {
  grid_dependency_begin();
  const int64_t gi = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = gi * VEC;
  const bool active = c0 < C;
  float acc[2][VEC];
  float mean[VEC], rstd[VEC], sc[VEC], sh[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    acc[0][i] = acc[1][i] = 0.f;
    mean[i] = rstd[i] = sc[i] = sh[i] = 0.f;
  }
  if (active) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const ChanStat s = stat_from_batch(batch, C, c0 + i, eps);
      mean[i] = s.mean;
      rstd[i] = s.rstd;
    }
    load_affine<VEC>(affine, C, c0, sc, sh);
    const int64_t stride = int64_t(gridDim.x) * blockDim.y;
    for_rows(int64_t(blockIdx.x) * blockDim.y + threadIdx.y, stride, rows, [&](auto n, int64_t r) {
      constexpr int N = decltype(n)::value;
      Vec<T, VEC> dv[N], xv[N];
#pragma unroll
      for (int u = 0; u < N; ++u) {
        const int64_t off = (r + u * stride) * C + c0;
        dv[u] = load_raw<T, VEC>(dy + off);
        xv[u] = load_raw<T, VEC>(x + off);
      }
#pragma unroll
      for (int u = 0; u < N; ++u)
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float xx = to_f(xv[u].v[i]);
          const float gr = (!relu || bn_pre_relu(sc[i], sh[i], xx) > 0.f) ? to_f(dv[u].v[i]) : 0.f;
          acc[0][i] += gr;
          acc[1][i] = fmaf(gr, (xx - mean[i]) * rstd[i], acc[1][i]);
        }
    });
  }
  block_sum_store<T, 2, VEC>(acc, c0, active, C, out);
}

// dx = gamma * rstd * (g - dsums0/count - xhat * dsums1/count)
template <typename T, int VEC>
__global__ void __launch_bounds__(kChannelBlockThreads, 4)
    bn_relu_bwd_apply_kernel(const T* __restrict__ dy, const float* __restrict__ affine, const T* __restrict__ x,
                             const float* __restrict__ batch, const T* __restrict__ gamma,
                             const float* __restrict__ dsums, T* __restrict__ dx, int64_t rows, int64_t C,
                             double inv_count, float eps, bool relu) {
  grid_dependency_begin();
  const int64_t gi = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = gi * VEC;
  if (c0 >= C) return;
  float mean[VEC], rstd[VEC], k[VEC], a[VEC], b[VEC], sc[VEC], sh[VEC];
  load_affine<VEC>(affine, C, c0, sc, sh);
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    const int64_t ch = c0 + i;
    const ChanStat s = stat_from_batch(batch, C, ch, eps);
    mean[i] = s.mean;
    rstd[i] = s.rstd;
    k[i] = to_f(gamma[ch]) * s.rstd;
    a[i] = float(double(dsums[ch]) * inv_count);
    b[i] = float(double(dsums[C + ch]) * inv_count);
  }
  const int64_t stride = int64_t(gridDim.x) * blockDim.y;
  for_rows(int64_t(blockIdx.x) * blockDim.y + threadIdx.y, stride, rows, [&](auto n, int64_t r) {
    constexpr int N = decltype(n)::value;
    Vec<T, VEC> dv[N], xv[N];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      const int64_t off = (r + u * stride) * C + c0;
      dv[u] = load_raw<T, VEC>(dy + off);
      xv[u] = load_raw<T, VEC>(x + off);
    }
#pragma unroll
    for (int u = 0; u < N; ++u) {
      float d[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float xx = to_f(xv[u].v[i]);
        const float gr = (!relu || bn_pre_relu(sc[i], sh[i], xx) > 0.f) ? to_f(dv[u].v[i]) : 0.f;
        const float xhat = (xx - mean[i]) * rstd[i];
        d[i] = k[i] * (gr - a[i] - xhat * b[i]);
      }
      store_vec<T, VEC>(dx + (r + u * stride) * C + c0, d);
    }
  });
}

// y = relu(scale * x + shift)
template <typename T, int VEC>
__global__ void bn_relu_infer_kernel(const T* __restrict__ x, const float* __restrict__ affine, T* __restrict__ y,
                                     int64_t rows, int64_t C, bool relu) {
  grid_dependency_begin();
  const int64_t gi = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = gi * VEC;
  if (c0 >= C) return;
  float sc[VEC], sh[VEC];
  load_affine<VEC>(affine, C, c0, sc, sh);
  const int64_t stride = int64_t(gridDim.x) * blockDim.y;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; r < rows; r += stride) {
    float v[VEC];
    load_vec<T, VEC>(x + r * C + c0, v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float o = fmaf(sc[i], v[i], sh[i]);
      v[i] = relu ? fmaxf(o, 0.f) : o;
    }
    store_vec<T, VEC>(y + r * C + c0, v);
  }
}

// affine = (gamma * rsqrt(var + eps), beta - mean * scale)
__global__ void bn_fold_kernel(const float* __restrict__ gamma, const float* __restrict__ beta,
                               const float* __restrict__ running, float* __restrict__ affine, int64_t C, float eps) {
  grid_dependency_begin();
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= C) return;
  const double scale = double(gamma[ch]) / sqrt(double(running[C + ch]) + double(eps));
  affine[ch] = float(scale);
  affine[C + ch] = float(double(beta[ch]) - double(running[ch]) * scale);
}

// ---------------------------------------------------------------- launch helpers

// Note [BN vector width]: 8-byte vectors (4 halves, 2 floats) when C and every
// pointer allow it, else one element per thread. A thread keeps up to seven
// per-channel parameters for each of its channels in registers; with 16-byte
// vectors (8 halves) the backward kernels needed 80-96 registers, which left 2-3
// blocks per SM and too few loads in flight to reach HBM's bandwidth (about 60 %
// of it on the H200). Half the channels per thread, and four rows in flight per
// thread (kRowUnroll), keep more bytes moving.
template <typename T>
constexpr int kBnVec = int(8 / sizeof(T));

// (BnStats keeps 16-byte vectors: channel_stats_cuda.h's stats_vec.)
template <typename T, int v = kBnVec<T>>
int pick_vec(int64_t C, std::initializer_list<const void*> ptrs) {
  if (C % v != 0) return 1;
  for (const void* p : ptrs)
    if (p != nullptr && !aligned_to(p, 16)) return 1;
  return v;
}

void check_activation(const TensorRef& t, const TensorRef& like, const char* op, const char* what) {
  TR_CHECK(t.dtype == like.dtype && t.shape == like.shape, op, ": ", what, " is ", dtype_name(t.dtype),
           t.shape.str(), ", expected ", dtype_name(like.dtype), like.shape.str());
}

}  // namespace

// ---------------------------------------------------------------- launchers

void bn_stats_cuda(const OpCall& c) {
  const char* op = "BnStats";
  check_arity(c, 1, 1, op);
  const TensorRef& x = c.in[0];
  const TensorRef& sums = c.out[0];
  const RowsC rc = rows_c(x, op);
  check_dtype(sums, DType::F32, op, "sums");
  check_numel(sums, 2 * rc.c, op, "sums");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const RowSource<T> src{x.as<T>(), rc.c};
    if (stats_vec<T>(rc.c, {x.data}) == kVec16<T>)
      launch_channel_stats<kVec16<T>>(c.env, gh, src, rc.rows, rc.c, sums.as<float>(), op);
    else
      launch_channel_stats<1>(c.env, gh, src, rc.rows, rc.c, sums.as<float>(), op);
  });
}

void bn_relu_apply_cuda(const OpCall& c) {
  const char* op = "BnReluApply";
  TR_CHECK(c.n_in == 4 || c.n_in == 5, op, ": expected 4 or 5 inputs, got ", c.n_in);
  check_arity(c, c.n_in, 3, op);
  const TensorRef& x = c.in[0];
  const TensorRef& sums = c.in[1];
  const TensorRef& gamma = c.in[2];
  const TensorRef& beta = c.in[3];
  const void* residual = c.n_in == 5 ? c.in[4].data : nullptr;
  if (residual != nullptr) check_activation(c.in[4], x, op, "residual");
  const TensorRef& y = c.out[0];
  const TensorRef& batch = c.out[1];
  const TensorRef& affine = c.out[2];
  const RowsC rc = rows_c(x, op);
  check_bn_train_operands(sums, gamma, beta, batch, affine, x.dtype, rc.c, op);
  check_activation(y, x, op, "y");
  const double inv_count = bn_inv_count(c, x, rc.rows, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {x.data, y.data, residual});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_apply_kernel<T, V>,
          x.as<T>(), sums.as<float>(), gamma.as<T>(), beta.as<T>(), static_cast<const T*>(residual), y.as<T>(),
          batch.as<float>(), affine.as<float>(), rc.rows, rc.c, inv_count, attrs_of(c, op).eps, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

void bn_relu_bwd_reduce_cuda(const OpCall& c) {
  const char* op = "BnReluBwdReduce";
  check_arity(c, 4, 3, op);
  const TensorRef& dy = c.in[0];
  const TensorRef& affine = c.in[1];
  const TensorRef& x = c.in[2];
  const TensorRef& batch = c.in[3];
  const TensorRef& dgamma = c.out[0];
  const TensorRef& dbeta = c.out[1];
  const TensorRef& dsums = c.out[2];
  const RowsC rc = rows_c(x, op);
  check_activation(dy, x, op, "dy");
  check_dtype(affine, DType::F32, op, "affine");
  check_numel(affine, 2 * rc.c, op, "affine");
  check_dtype(batch, DType::F32, op, "batch");
  check_numel(batch, 2 * rc.c, op, "batch");
  check_dtype(dgamma, x.dtype, op, "dgamma");
  check_dtype(dbeta, x.dtype, op, "dbeta");
  check_numel(dgamma, rc.c, op, "dgamma");
  check_numel(dbeta, rc.c, op, "dbeta");
  check_dtype(dsums, DType::F32, op, "dsums");
  check_numel(dsums, 2 * rc.c, op, "dsums");
  const GpuHandles& gh = handles_of(c, op);
  const bool relu = attrs_of(c, op).relu;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {dy.data, x.data});
    const ChannelGrid g =
        channel_grid(rc.rows, rc.c, vec, sm_count(gh), kReduceBlocksPerSm, kMinRowsPerThread);
    SumOut<T, 2> out;
    out.partial = static_cast<float*>(workspace(gh, sum_partial_bytes<2>(g, rc.c), op));
    out.f32 = dsums.as<float>();
    out.t[0] = dbeta.as<T>();   // dbeta  = sum g
    out.t[1] = dgamma.as<T>();  // dgamma = sum g * xhat
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, sum_smem_bytes<2, V>()}, bn_relu_bwd_reduce_kernel<T, V>,
          dy.as<T>(), affine.as<float>(), x.as<T>(), batch.as<float>(), rc.rows, rc.c, attrs_of(c, op).eps, relu, out);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
    launch_finalize<T, 2>(g, rc.c, out, c.env);
  });
}

void bn_relu_bwd_apply_cuda(const OpCall& c) {
  const char* op = "BnReluBwdApply";
  check_arity(c, 6, 1, op);
  const TensorRef& dy = c.in[0];
  const TensorRef& affine = c.in[1];
  const TensorRef& x = c.in[2];
  const TensorRef& batch = c.in[3];
  const TensorRef& gamma = c.in[4];
  const TensorRef& dsums = c.in[5];
  const TensorRef& dx = c.out[0];
  const RowsC rc = rows_c(x, op);
  check_activation(dy, x, op, "dy");
  check_dtype(affine, DType::F32, op, "affine");
  check_numel(affine, 2 * rc.c, op, "affine");
  check_activation(dx, x, op, "dx");
  check_dtype(batch, DType::F32, op, "batch");
  check_numel(batch, 2 * rc.c, op, "batch");
  check_dtype(gamma, x.dtype, op, "gamma");
  check_numel(gamma, rc.c, op, "gamma");
  check_dtype(dsums, DType::F32, op, "dsums");
  check_numel(dsums, 2 * rc.c, op, "dsums");
  const double inv_count = bn_inv_count(c, x, rc.rows, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {dy.data, x.data, dx.data});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_bwd_apply_kernel<T, V>,
          dy.as<T>(), affine.as<float>(), x.as<T>(), batch.as<float>(), gamma.as<T>(), dsums.as<float>(), dx.as<T>(),
          rc.rows, rc.c, inv_count, attrs_of(c, op).eps, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

void bn_relu_infer_cuda(const OpCall& c) {
  const char* op = "BnReluInfer";
  check_arity(c, 2, 1, op);
  const TensorRef& x = c.in[0];
  const TensorRef& affine = c.in[1];
  const TensorRef& y = c.out[0];
  const RowsC rc = rows_c(x, op);
  check_dtype(affine, DType::F32, op, "affine");
  check_numel(affine, 2 * rc.c, op, "affine");
  check_activation(y, x, op, "y");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {x.data, y.data});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_infer_kernel<T, V>,
          x.as<T>(), affine.as<float>(), y.as<T>(), rc.rows, rc.c, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

void bn_fold_cuda(const OpCall& c) {
  const char* op = "BnFold";
  check_arity(c, 3, 1, op);
  const TensorRef& gamma = c.in[0];
  const TensorRef& beta = c.in[1];
  const TensorRef& running = c.in[2];
  const TensorRef& affine = c.out[0];
  const int64_t C = gamma.shape.numel();
  for (const TensorRef* t : {&gamma, &beta, &running, &affine}) check_dtype(*t, DType::F32, op, "every tensor");
  check_numel(beta, C, op, "beta");
  check_numel(running, 2 * C, op, "running");
  check_numel(affine, 2 * C, op, "affine");
  launch_kernel(c.env, {unsigned(ceil_div(C, 256)), 256, 0}, bn_fold_kernel,
      gamma.as<float>(), beta.as<float>(), running.as<float>(), affine.as<float>(), C, attrs_of(c, op).eps);
}

}  // namespace tr
