// LayerNorm CUDA kernels. Semantics: framework/ops/compute/layernorm.h.
// Forward and the input gradient: one warp per row (8 rows per block), the
// row's sums in f32 over the lanes in a fixed order, then a butterfly. The
// parameter gradients: a block per 8 channels, the rows split over 128 groups
// and the group sums added in a fixed order, so the result is the same on every
// run without atomics. No workspace.
#include "framework/ops/compute/layernorm.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// x[rows, C], gamma[C], beta[C] -> y[rows, C], stats[rows, 2] = (mean, rstd)
template <typename T>
__global__ void layernorm_fwd_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                                     T* __restrict__ y, float* __restrict__ stats, int64_t rows, int64_t C, float eps) {
  grid_dependency_begin();
  const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* row = x + r * C;
  float sum = 0.f;
  for (int64_t i = lane; i < C; i += 32) sum += to_f(row[i]);
  const float mean = warp_sum(sum) / float(C);
  float sq = 0.f;
  for (int64_t i = lane; i < C; i += 32) {
    const float d = to_f(row[i]) - mean;
    sq += d * d;
  }
  const float rstd = 1.f / sqrtf(warp_sum(sq) / float(C) + eps);
  if (lane == 0) stats[2 * r] = mean, stats[2 * r + 1] = rstd;
  for (int64_t i = lane; i < C; i += 32)
    y[r * C + i] = from_f<T>((to_f(row[i]) - mean) * rstd * to_f(gamma[i]) + to_f(beta[i]));
}

// dy, x [rows, C], gamma[C], stats[rows, 2] -> dx[rows, C]
template <typename T>
__global__ void layernorm_bwd_data_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                          const T* __restrict__ gamma, const float* __restrict__ stats,
                                          const T* __restrict__ add, T* __restrict__ dx, int64_t rows, int64_t C) {
  grid_dependency_begin();
  const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float mean = stats[2 * r], rstd = stats[2 * r + 1];
  float a = 0.f, b = 0.f;
  for (int64_t i = lane; i < C; i += 32) {
    const float g = to_f(dy[r * C + i]) * to_f(gamma[i]);
    a += g;
    b += g * (to_f(x[r * C + i]) - mean) * rstd;
  }
  a = warp_sum(a) / float(C);
  b = warp_sum(b) / float(C);
  for (int64_t i = lane; i < C; i += 32) {
    const float g = to_f(dy[r * C + i]) * to_f(gamma[i]);
    const float xhat = (to_f(x[r * C + i]) - mean) * rstd;
    const T v = from_f<T>(rstd * (g - a - xhat * b));
    // As add_kernel sums; __fadd_rn so that the product above is never contracted into it (an FMA would
    // round once where LayerNormBwd then Add round twice, in f32).
    dx[r * C + i] = add == nullptr ? v : from_f<T>(__fadd_rn(to_f(v), to_f(add[r * C + i])));
  }
}

// dy, x [rows, C], stats -> dgamma[C], dbeta[C]. A block owns 8 channels;
// its thread (g, j) sums channel j over the rows r = g (mod 128) in order,
// then thread (0, j) adds the 128 partial sums in order of g: the same bits on
// every run, without atomics. 8 channels per block keeps C / 8 blocks busy
// (96 at C = 768); a warp reads 8 adjacent channels of 4 rows, one 32-byte
// sector per row in f32 and half of one in f16 (the other half is the
// neighbouring block's, read at the same time, from L2).
constexpr int kParamChannels = 8, kParamRowGroups = 128;

template <typename T>
__global__ void layernorm_bwd_params_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                            const float* __restrict__ stats, T* __restrict__ dgamma,
                                            T* __restrict__ dbeta, int64_t rows, int64_t C) {
  grid_dependency_begin();
  __shared__ float part_g[kParamRowGroups][kParamChannels + 1], part_b[kParamRowGroups][kParamChannels + 1];
  const int j = threadIdx.x % kParamChannels, g = threadIdx.x / kParamChannels;
  const int64_t c = int64_t(blockIdx.x) * kParamChannels + j;
  float sg = 0.f, sb = 0.f;
  if (c < C) {
    for (int64_t r = g; r < rows; r += kParamRowGroups) {
      const float d = to_f(dy[r * C + c]);
      sg += d * (to_f(x[r * C + c]) - stats[2 * r]) * stats[2 * r + 1];
      sb += d;
    }
  }
  part_g[g][j] = sg;
  part_b[g][j] = sb;
  __syncthreads();
  if (g != 0 || c >= C) return;
  sg = 0.f, sb = 0.f;
  for (int k = 0; k < kParamRowGroups; ++k) sg += part_g[k][j], sb += part_b[k][j];
  dgamma[c] = from_f<T>(sg);
  dbeta[c] = from_f<T>(sb);
}

struct Rows {
  int64_t rows, C;
};

Rows rows_of(const TensorRef& x, const TensorRef& stats, const char* op) {
  const int64_t C = x.shape[x.shape.rank - 1];
  const Rows d{x.shape.numel() / C, C};
  TR_CHECK(stats.dtype == DType::F32 && stats.shape.numel() == 2 * d.rows, op, ": stats is ", dtype_name(stats.dtype),
           stats.shape.str());
  return d;
}

void check_like(const TensorRef& t, const TensorRef& x, int64_t n, const char* op, const char* what) {
  TR_CHECK(t.dtype == x.dtype && t.shape.numel() == n, op, ": ", what, " is ", dtype_name(t.dtype), t.shape.str(),
           ", x is ", dtype_name(x.dtype), x.shape.str());
}

}  // namespace

void layernorm_fwd_cuda(const OpCall& c) {
  const char* op = "LayerNormFwd";
  check_operands(OpKind::LayerNormFwd, c);
  const TensorRef &x = c.in[0], &gamma = c.in[1], &beta = c.in[2], &y = c.out[0], &stats = c.out[1];
  const Rows d = rows_of(x, stats, op);
  check_like(gamma, x, d.C, op, "gamma");
  check_like(beta, x, d.C, op, "beta");
  check_like(y, x, d.rows * d.C, op, "y");
  if (d.rows == 0) return;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(c.env, {dim3(unsigned(ceil_div(d.rows, kRowsPerBlock))), kThreads, 0}, layernorm_fwd_kernel<T>,
                  x.as<T>(), gamma.as<T>(), beta.as<T>(), y.as<T>(), stats.as<float>(), d.rows, d.C, c.attrs->eps);
  });
}

namespace {

// LayerNormBwd, and LayerNormBwdAdd when add (r) is set.
void launch_bwd(const OpCall& c, const TensorRef* add, const char* op) {
  const TensorRef &dy = c.in[0], &x = c.in[1], &gamma = c.in[2], &stats = c.in[3];
  const TensorRef &dx = c.out[0], &dgamma = c.out[1], &dbeta = c.out[2];
  const Rows d = rows_of(x, stats, op);
  check_like(dy, x, d.rows * d.C, op, "dy");
  check_like(dx, x, d.rows * d.C, op, "dx");
  if (add != nullptr) check_like(*add, x, d.rows * d.C, op, "r");
  for (const TensorRef* p : {&gamma, &dgamma, &dbeta}) check_like(*p, x, d.C, op, "a parameter or its gradient");
  if (d.rows == 0) return;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(c.env, {dim3(unsigned(ceil_div(d.rows, kRowsPerBlock))), kThreads, 0}, layernorm_bwd_data_kernel<T>,
                  dy.as<T>(), x.as<T>(), gamma.as<T>(), stats.as<float>(), add != nullptr ? add->as<T>() : nullptr,
                  dx.as<T>(), d.rows, d.C);
    launch_kernel(c.env, {dim3(unsigned(ceil_div(d.C, kParamChannels))), kParamChannels * kParamRowGroups, 0},
                  layernorm_bwd_params_kernel<T>, dy.as<T>(), x.as<T>(), stats.as<float>(), dgamma.as<T>(),
                  dbeta.as<T>(), d.rows, d.C);
  });
}

}  // namespace

void layernorm_bwd_cuda(const OpCall& c) {
  check_operands(OpKind::LayerNormBwd, c);
  launch_bwd(c, nullptr, "LayerNormBwd");
}

void layernorm_bwd_add_cuda(const OpCall& c) {
  check_operands(OpKind::LayerNormBwdAdd, c);
  launch_bwd(c, &c.in[4], "LayerNormBwdAdd");
}

}  // namespace tr
