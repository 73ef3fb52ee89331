#pragma once
// The BatchNorm kernels' per-thread work over the rows of a channel_grid
// (cuda_kernel_util_cuda.h): each thread keeps VEC channels' parameters in
// registers and walks rows blockIdx.x * blockDim.y + threadIdx.y, + stride, ...
// The phases are device functions so that a kernel of one phase
// (batchnorm_cuda.cu) and a cooperative kernel of several (bn_train_cuda.h,
// Note [one kernel per BatchNorm]) run the same arithmetic: the same bits.
// Only included from .cu files.
#include "framework/ops/kernels/bn_affine_cuda.h"
#include "framework/ops/kernels/channel_sums_cuda.h"

namespace tr::cuda {

constexpr int kRowUnroll = 4;  // rows in flight per thread (Note [BN vector width])

// VEC elements as loaded (8 bytes), converted to f32 where used, so the rows
// in flight hold half the registers for f16.
template <typename T, int VEC>
__device__ __forceinline__ Vec<T, VEC> load_raw(const T* p) {
  return *reinterpret_cast<const Vec<T, VEC>*>(p);
}

// Walks this thread's rows r, r + stride, ... below `rows`: f(N, r) handles the
// N rows r + u * stride, u < N, loading all of them before using any; N is
// UNROLL, then 1 for the remainder. The rows and their order per thread are
// those of a plain loop, so sums keep their order whatever UNROLL is.
template <int UNROLL = kRowUnroll, typename F>
__device__ __forceinline__ void for_rows(int64_t r, int64_t stride, int64_t rows, F&& f) {
  for (; r + (UNROLL - 1) * stride < rows; r += UNROLL * stride) f(std::integral_constant<int, UNROLL>{}, r);
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

// y = relu(scale * x + shift), scale = gamma * rstd, shift = beta - mean * scale
// (bn_affine_cuda.h); block row 0 also writes batch = (mean, var) and
// affine = (scale, shift).
template <typename T, int VEC>
__device__ __forceinline__ void bn_apply_rows(const T* __restrict__ x, const float* __restrict__ sums,
                                              const T* __restrict__ gamma, const T* __restrict__ beta,
                                              const T* __restrict__ residual, T* __restrict__ y,
                                              float* __restrict__ batch, float* __restrict__ affine, int64_t rows,
                                              int64_t C, double inv_count, float eps, bool relu) {
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

// The gradient through the ReLU on the BatchNorm's output: dy where
// scale * x + shift > 0 (the forward's y recomputed from x), else 0.
template <typename T>
__device__ __forceinline__ float relu_grad(T dy, float sc, float sh, float x, bool relu) {
  return (!relu || bn_pre_relu(sc, sh, x) > 0.f) ? to_f(dy) : 0.f;
}

// for_rows over the backward's two inputs: loads the N rows of dy and of x
// ([rows, C], this thread's VEC channels from c0) before f(N, r, dv, xv) uses them.
template <typename T, int VEC, typename F>
__device__ __forceinline__ void for_grad_rows(const T* __restrict__ dy, const T* __restrict__ x, int64_t rows,
                                              int64_t C, int64_t c0, F&& f) {
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
    f(n, r, dv, xv);
  });
}

// The ReLU's gradient in front of a BatchNorm's backward reduce (Note [the
// ReLU's gradient in the reduce], batchnorm.h): dy = (a [+ b]) * (y > 0) as
// ReluBwd computes and rounds it, stored to g for its other readers.
template <typename T>
struct ReluGradIn {
  const T* y = nullptr;  // the ReLU's output
  const T* b = nullptr;  // a second gradient (the fan-in), or null
  T* g = nullptr;        // where dy is stored
};

// for_grad_rows with dy made from (a, y[, b]) on the way: loads the N rows of
// a, y, b and x, then stores each row's dy to in.g before f(N, r, dv, xv)
// uses it. Every (row, channel) of the grid is one thread's, so g is written
// once, whole (the inactive channel groups never get here). Two rows in
// flight instead of four: twice the tensors, the same bytes in flight per
// thread, and registers for four blocks per SM (kStatsBlocksPerSm).
template <typename T, int VEC, typename F>
__device__ __forceinline__ void for_relu_grad_rows(const T* __restrict__ a, const ReluGradIn<T>& in,
                                                   const T* __restrict__ x, int64_t rows, int64_t C, int64_t c0,
                                                   F&& f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.y;
  for_rows<kRowUnroll / 2>(int64_t(blockIdx.x) * blockDim.y + threadIdx.y, stride, rows, [&](auto n, int64_t r) {
    constexpr int N = decltype(n)::value;
    Vec<T, VEC> dv[N], yv[N], bv[N], xv[N];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      const int64_t off = (r + u * stride) * C + c0;
      dv[u] = load_raw<T, VEC>(a + off);
      yv[u] = load_raw<T, VEC>(in.y + off);
      if (in.b != nullptr) bv[u] = load_raw<T, VEC>(in.b + off);
      xv[u] = load_raw<T, VEC>(x + off);
    }
#pragma unroll
    for (int u = 0; u < N; ++u) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float d = in.b != nullptr ? to_f(dv[u].v[i]) + to_f(bv[u].v[i]) : to_f(dv[u].v[i]);
        dv[u].v[i] = from_f<T>(to_f(yv[u].v[i]) > 0.f ? d : 0.f);
      }
      *reinterpret_cast<Vec<T, VEC>*>(in.g + (r + u * stride) * C + c0) = dv[u];
    }
    f(n, r, dv, xv);
  });
}

// g = dy * (scale * x + shift > 0); sums (g, g * xhat). RELU_GRAD: dy is made
// from (dy, in.y, in.b) first and stored to in.g (for_relu_grad_rows).
template <typename T, int VEC, bool SYNC = false, bool RELU_GRAD = false>
__device__ __forceinline__ void bn_bwd_reduce_rows(const T* __restrict__ dy, const float* __restrict__ affine,
                                                   const T* __restrict__ x, const float* __restrict__ batch,
                                                   int64_t rows, int64_t C, float eps, bool relu,
                                                   const SumOut<T, 2>& out, const ReluGradIn<T>& in = {}) {
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
    auto add_rows = [&](auto n, int64_t, const auto& dv, const auto& xv) {
#pragma unroll
      for (int u = 0; u < decltype(n)::value; ++u)
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float xx = to_f(xv[u].v[i]);
          const float gr = relu_grad(dv[u].v[i], sc[i], sh[i], xx, relu);
          acc[0][i] += gr;
          acc[1][i] = fmaf(gr, (xx - mean[i]) * rstd[i], acc[1][i]);
        }
    };
    if constexpr (RELU_GRAD) for_relu_grad_rows<T, VEC>(dy, in, x, rows, C, c0, add_rows);
    else for_grad_rows<T, VEC>(dy, x, rows, C, c0, add_rows);
  }
  block_sum_store<T, 2, VEC, 2 * VEC, SYNC>(acc, c0, active, C, out);
}

// dx = gamma * rstd * (g - dsums0/count - xhat * dsums1/count)
template <typename T, int VEC>
__device__ __forceinline__ void bn_bwd_apply_rows(const T* __restrict__ dy, const float* __restrict__ affine,
                                                  const T* __restrict__ x, const float* __restrict__ batch,
                                                  const T* __restrict__ gamma, const float* __restrict__ dsums,
                                                  T* __restrict__ dx, int64_t rows, int64_t C, double inv_count,
                                                  float eps, bool relu) {
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
  for_grad_rows<T, VEC>(dy, x, rows, C, c0, [&](auto n, int64_t r, const auto& dv, const auto& xv) {
#pragma unroll
    for (int u = 0; u < decltype(n)::value; ++u) {
      float d[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float xx = to_f(xv[u].v[i]);
        const float gr = relu_grad(dv[u].v[i], sc[i], sh[i], xx, relu);
        const float xhat = (xx - mean[i]) * rstd[i];
        d[i] = k[i] * (gr - a[i] - xhat * b[i]);
      }
      store_vec<T, VEC>(dx + (r + u * stride) * C + c0, d);
    }
  });
}

}  // namespace tr::cuda
