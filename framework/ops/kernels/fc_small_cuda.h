#pragma once
// Note [small fc]
// A classifier's fully connected layer is tiny: M = 10 outputs from K = 256
// features at the cnn's width. cuBLAS runs it as GEMM kernels that cannot be
// launched early (Note [programmatic dependent launch]), and whose order of
// sums is cuBLAS's own. For M <= kSmallFcMaxOutputs tr runs the forward and
// the data gradient on its own kernels instead, with sums in this order:
//   FcFwd:     y[n,m]  = T(scale * dot + b[m]), dot by one warp: lane l adds
//              x[n,k] * w[m,k] for k = l, l+32, ... (fmaf), then a butterfly
//              (xor 16, 8, 4, 2, 1), which leaves the same float in every lane;
//   FcBwdData: dx[n,k] = T(scale * sum_m dy[n,m] * w[m,k]), m = 0, 1, ... (fmaf).
//   FcBwdWeight: dw[m,k] = T(scale * sum_n dy[n,m] * x[n,k]): 16 partials, row
//              r adding n = r, r+16, ... (fmaf), then a fixed tree over r.
// The fused classifier head (classifier_head.h) calls the same device functions,
// so it gives these ops' bits. The weight gradient was on cuBLAS, which split
// the batch sum into a GEMM and a reduction kernel (two kernels a step on the
// cnn, where the head's sum over 256 rows of 256 x 10 is a few microseconds'
// work).
#include <cuda_fp16.h>

#include <cstdint>

#include "framework/ops/compute/fc.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda {

inline bool small_fc(int64_t m) { return m > 0 && m <= kSmallFcMaxOutputs; }

// scale * sum_k x[k] w[k] over one warp (every lane gets it), before rounding to T.
template <typename T>
__device__ __forceinline__ float small_fc_dot(const T* x, const T* w, int64_t K, int lane, float scale) {
  float a = 0.f;
  for (int64_t k = lane; k < K; k += 32) a = fmaf(to_f(x[k]), to_f(w[k]), a);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
  return scale * a;
}

// out[j] = scale * sum_m dy[m] w[m,k0+j] for VEC consecutive k, before rounding
// to T (w + k0 aligned for a VEC-wide load when VEC > 1). Each element's sum
// runs over m in order whatever VEC is.
template <typename T, int VEC>
__device__ __forceinline__ void small_fc_dgrad(const T* dy, const T* w, int64_t M, int64_t K, int64_t k0, float scale,
                                               float (&out)[VEC]) {
  float a[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) a[j] = 0.f;
#pragma unroll 4
  for (int64_t m = 0; m < M; ++m) {
    const float d = to_f(dy[m]);
    float wv[VEC];
    load_vec<T, VEC>(w + m * K + k0, wv);
#pragma unroll
    for (int j = 0; j < VEC; ++j) a[j] = fmaf(d, wv[j], a[j]);
  }
#pragma unroll
  for (int j = 0; j < VEC; ++j) out[j] = scale * a[j];
}

// y[N,M] = T(scale * x w^T (+ b)); b may be null.
template <typename T>
void launch_small_fc_fwd(const ExecEnv* env, int sms, const T* x, const T* w, const T* b, T* y, int64_t N, int64_t K,
                         int64_t M, float scale);
// dw[M,K] = T(scale * dy^T x), each sum over n in order in kWgradRows = 16
// strided partials, added in a fixed tree: one kernel where cuBLAS splits the
// batch in two (a GEMM and its split-K reduction).
template <typename T>
void launch_small_fc_bwd_weight(const ExecEnv* env, const T* x, const T* dy, T* dw, int64_t N, int64_t K, int64_t M,
                                float scale);
// dx[N,K] = T(scale * dy w).
template <typename T>
void launch_small_fc_bwd_data(const ExecEnv* env, int sms, const T* dy, const T* w, T* dx, int64_t N, int64_t K,
                              int64_t M, float scale);

}  // namespace tr::cuda
