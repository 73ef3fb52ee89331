// LayerNorm CUDA kernels. Semantics: framework/ops/compute/layernorm.h.
// Forward and the input gradient: one warp per row (8 rows per block), the
// row's sums in f32 over the lanes in a fixed order, then a butterfly. The
// parameter gradients: per-channel sums over the rows on the shared
// channel-sum grid (channel_sums_cuda.h), per-block partials in the workspace
// added in block order, so the result is the same on every run without atomics.
#include "framework/ops/compute/layernorm.h"
#include "framework/ops/kernels/channel_sums_cuda.h"
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

// dy, x [rows, C], stats -> dgamma[C], dbeta[C] (sums 0 and 1 of `out`). A
// thread owns VEC adjacent channels (one 16-byte load of dy and of x a row, VEC
// = 1 where C or a pointer does not allow it) and walks the rows of
// channel_grid's layout in order; block_sum_store and finalize_sums add the
// threads and blocks in a fixed order (Note [deterministic kernels]). The grid
// spreads the rows over about four blocks per SM, where one block per 8 channels
// left most SMs idle (96 blocks at C = 768, 48 at C = 384).
template <typename T, int VEC, bool SYNC = false>
__global__ void layernorm_bwd_params_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                            const float* __restrict__ stats, int64_t rows, int64_t C,
                                            SumOut<T, 2> out) {
  grid_dependency_begin();
  const int64_t c0 = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * VEC;
  const bool active = c0 < C;
  float acc[2][VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) acc[0][i] = acc[1][i] = 0.f;
  if (active) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.y;
    for (int64_t r = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; r < rows; r += stride) {
      float d[VEC], v[VEC];
      load_vec<T, VEC>(dy + r * C + c0, d);
      load_vec<T, VEC>(x + r * C + c0, v);
      const float mean = stats[2 * r], rstd = stats[2 * r + 1];
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        acc[0][i] += d[i] * ((v[i] - mean) * rstd);
        acc[1][i] += d[i];
      }
    }
  }
  block_sum_store<T, 2, VEC, 2 * VEC, SYNC>(acc, c0, active, C, out);
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

// The parameter gradients' sums over channel_grid (4 blocks per SM, at least
// 4 rows a thread), their partials in the op's workspace.
template <typename T>
void launch_params(const OpCall& c, const T* dy, const T* x, const float* stats, T* dgamma, T* dbeta, const Rows& d,
                   const char* op) {
  const GpuHandles& gh = handles_of(c, op);
  const bool wide = d.C % kVec16<T> == 0 && aligned_to(dy, 16) && aligned_to(x, 16);
  const ChannelGrid g = channel_grid(d.rows, d.C, wide ? kVec16<T> : 1, sm_count(gh), 4, 4);
  SumOut<T, 2> out;
  out.partial = static_cast<float*>(workspace(gh, sum_partial_bytes<2>(g, d.C), op));
  out.t[0] = dgamma;
  out.t[1] = dbeta;
  auto run = [&](auto vt) {
    constexpr int V = decltype(vt)::value;
    launch_sums(c.env, gh, g, sum_smem_bytes<2, V>(), d.C, out, layernorm_bwd_params_kernel<T, V>,
                layernorm_bwd_params_kernel<T, V, true>, dy, x, stats, d.rows, d.C);
  };
  if (wide) run(std::integral_constant<int, kVec16<T>>{});
  else run(std::integral_constant<int, 1>{});
}

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
    launch_params(c, dy.as<T>(), x.as<T>(), stats.as<float>(), dgamma.as<T>(), dbeta.as<T>(), d, op);
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
