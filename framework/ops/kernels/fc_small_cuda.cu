// The small fully connected layer's kernels (Note [small fc], fc_small_cuda.h).
#include "framework/ops/kernels/fc_small_cuda.h"

namespace tr::cuda {
namespace {

constexpr int kThreads = 256;

// One warp per output (n, m).
template <typename T>
__global__ void small_fc_fwd_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                    T* __restrict__ y, int64_t N, int64_t K, int64_t M, float scale) {
  grid_dependency_begin();
  const int lane = int(threadIdx.x) & 31;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t i = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; i < N * M; i += warps) {
    const int64_t n = i / M, m = i % M;
    float v = small_fc_dot(x + n * K, w + m * K, K, lane, scale);
    if (b != nullptr) v += to_f(b[m]);
    if (lane == 0) y[i] = from_f<T>(v);
  }
}

// One thread per input (n, k).
template <typename T>
__global__ void small_fc_bwd_data_kernel(const T* __restrict__ dy, const T* __restrict__ w, T* __restrict__ dx,
                                         int64_t N, int64_t K, int64_t M, float scale) {
  grid_dependency_begin();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < N * K; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i / K, k = i % K;
    float d[1];
    small_fc_dgrad<T, 1>(dy + n * M, w, M, K, k, scale, d);
    dx[i] = from_f<T>(d[0]);
  }
}

// One block per (32 inputs k, output m); threadIdx.y = r takes rows n = r,
// r + kWgradRows, ... (fmaf in n order), then the kWgradRows partial sums are
// added in a fixed tree over r. dw[m,k] = T(scale * sum).
constexpr int kWgradRows = 16;

template <typename T>
__global__ void small_fc_bwd_weight_kernel(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dw,
                                           int64_t N, int64_t K, int64_t M, float scale) {
  grid_dependency_begin();
  __shared__ float part[kWgradRows][33];
  const int lane = int(threadIdx.x), r = int(threadIdx.y);
  const int64_t k = int64_t(blockIdx.x) * 32 + lane, m = blockIdx.y;
  float a = 0.f;
  if (k < K) {
#pragma unroll 8
    for (int64_t n = r; n < N; n += kWgradRows) a = fmaf(to_f(dy[n * M + m]), to_f(x[n * K + k]), a);
  }
  part[r][lane] = a;
  __syncthreads();
  for (int s = kWgradRows / 2; s > 0; s >>= 1) {
    if (r < s) part[r][lane] += part[r + s][lane];
    __syncthreads();
  }
  if (r == 0 && k < K) dw[m * K + k] = from_f<T>(scale * part[0][lane]);
}

}  // namespace

template <typename T>
void launch_small_fc_fwd(const ExecEnv* env, int sms, const T* x, const T* w, const T* b, T* y, int64_t N, int64_t K,
                         int64_t M, float scale) {
  if (N * M == 0) return;
  const unsigned blocks = grid_stride_blocks(N * M * 32, sms, kThreads);
  launch_kernel(env, {blocks, kThreads, 0}, small_fc_fwd_kernel<T>, x, w, b, y, N, K, M, scale);
}

template <typename T>
void launch_small_fc_bwd_data(const ExecEnv* env, int sms, const T* dy, const T* w, T* dx, int64_t N, int64_t K,
                              int64_t M, float scale) {
  if (N * K == 0) return;
  const unsigned blocks = grid_stride_blocks(N * K, sms, kThreads);
  launch_kernel(env, {blocks, kThreads, 0}, small_fc_bwd_data_kernel<T>, dy, w, dx, N, K, M, scale);
}

template <typename T>
void launch_small_fc_bwd_weight(const ExecEnv* env, const T* x, const T* dy, T* dw, int64_t N, int64_t K, int64_t M,
                                float scale) {
  if (K * M == 0) return;
  TR_CHECK(M <= kSmallFcMaxOutputs && ceil_div(K, int64_t(32)) < (int64_t(1) << 31), "small fc: ", M, " outputs, ", K,
           " inputs");
  launch_kernel(env, {dim3(unsigned(ceil_div(K, int64_t(32))), unsigned(M)), dim3(32, kWgradRows), 0},
                small_fc_bwd_weight_kernel<T>, x, dy, dw, N, K, M, scale);
}

// f32, f16 and bf16 storage.
#define TR_SMALL_FC_INSTANTIATE(T)                                                                                  \
  template void launch_small_fc_fwd<T>(const ExecEnv*, int, const T*, const T*, const T*, T*, int64_t, int64_t,     \
                                       int64_t, float);                                                             \
  template void launch_small_fc_bwd_data<T>(const ExecEnv*, int, const T*, const T*, T*, int64_t, int64_t, int64_t, \
                                            float);                                                                 \
  template void launch_small_fc_bwd_weight<T>(const ExecEnv*, const T*, const T*, T*, int64_t, int64_t, int64_t, float);
TR_SMALL_FC_INSTANTIATE(float)
TR_SMALL_FC_INSTANTIATE(__half)
TR_SMALL_FC_INSTANTIATE(__nv_bfloat16)
#undef TR_SMALL_FC_INSTANTIATE

}  // namespace tr::cuda
