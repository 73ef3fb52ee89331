#pragma once
// The BatchNorm forward's per-channel arithmetic, shared by the kernels that
// apply it (BnReluApply, and BnReluPool, which pools the result without
// storing it): the same float in both, so the fused op gives the pair's bits.
// Only included from .cu files.
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda {

// The ReLU's input: the forward clamps it, the backward's mask recomputes it
// from the same (scale, shift) and x, so both see the same float.
__device__ __forceinline__ float bn_pre_relu(float scale, float shift, float x) { return fmaf(scale, x, shift); }

// Channel ch's training affine from sums f32[2,C] = (sum x, sum x^2):
// scale = gamma * rstd, shift = beta - mean * scale (the CPU reference's form).
// Mean and var are formed in double: sum x^2 / count - mean^2 cancels. With
// batch and affine given, also writes batch = (mean, biased var) and
// affine = (scale, shift) for ch.
template <typename T>
__device__ __forceinline__ void bn_train_affine(const float* __restrict__ sums, const T* __restrict__ gamma,
                                                const T* __restrict__ beta, int64_t C, int64_t ch, double inv_count,
                                                float eps, float& sc, float& sh, float* batch, float* affine) {
  const double m = double(sums[ch]) * inv_count;
  const double var = fmax(double(sums[C + ch]) * inv_count - m * m, 0.0);
  const double scale = double(to_f(gamma[ch])) * (1.0 / sqrt(var + double(eps)));
  sc = float(scale);
  sh = float(double(to_f(beta[ch])) - m * scale);
  if (batch != nullptr) {
    batch[ch] = float(m);
    batch[C + ch] = float(var);
    affine[ch] = sc;
    affine[C + ch] = sh;
  }
}

// The (scale, shift) of the VEC channels from c0 that a thread of a
// channel_grid keeps in registers; block row 0 (blockIdx.x == 0, threadIdx.y
// == 0) also writes batch and affine for them.
template <typename T, int VEC>
__device__ __forceinline__ void bn_thread_affine(const float* __restrict__ sums, const T* __restrict__ gamma,
                                                 const T* __restrict__ beta, int64_t C, int64_t c0, double inv_count,
                                                 float eps, float* batch, float* affine, float (&sc)[VEC],
                                                 float (&sh)[VEC]) {
  const bool writer = blockIdx.x == 0 && threadIdx.y == 0;
#pragma unroll
  for (int i = 0; i < VEC; ++i)
    bn_train_affine(sums, gamma, beta, C, c0 + i, inv_count, eps, sc[i], sh[i], writer ? batch : nullptr, affine);
}

// y = relu(scale * x + shift) (or without the ReLU), as stored in T.
__device__ __forceinline__ float bn_relu_value(float sc, float sh, float x, bool relu) {
  const float o = bn_pre_relu(sc, sh, x);
  return relu ? fmaxf(o, 0.f) : o;
}

// The training BatchNorm's per-channel operands, as BnReluApply takes and
// gives them (batchnorm.h): sums f32[2,C], gamma and beta T[C] (T = dtype),
// batch and affine f32[2,C]. Shared by every op that applies it.
inline void check_bn_train_operands(const TensorRef& sums, const TensorRef& gamma, const TensorRef& beta,
                                    const TensorRef& batch, const TensorRef& affine, DType dtype, int64_t C,
                                    const char* op) {
  check_dtype(sums, DType::F32, op, "sums");
  check_numel(sums, 2 * C, op, "sums");
  check_dtype(gamma, dtype, op, "gamma");
  check_numel(gamma, C, op, "gamma");
  check_dtype(beta, dtype, op, "beta");
  check_numel(beta, C, op, "beta");
  check_dtype(batch, DType::F32, op, "batch");
  check_numel(batch, 2 * C, op, "batch");
  check_dtype(affine, DType::F32, op, "affine");
  check_numel(affine, 2 * C, op, "affine");
}

// 1 / count of a BatchNorm's statistics: count = global_batch * (H*W), every
// rank's pixels; rank-local BN (attrs.bn_rank_local): rows = batch * H*W, this
// rank's pixels only.
inline double bn_inv_count(const OpCall& c, const TensorRef& x, int64_t rows, const char* op) {
  TR_CHECK(c.variant != nullptr && c.variant->global_batch > 0, op, ": needs the variant's global batch");
  TR_CHECK(x.shape[0] > 0, op, ": empty batch");
  const double count =
      attrs_of(c, op).bn_rank_local ? double(rows) : double(c.variant->global_batch) * double(rows / x.shape[0]);
  return 1.0 / count;
}

}  // namespace tr::cuda
