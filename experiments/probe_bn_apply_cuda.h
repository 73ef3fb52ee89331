#pragma once
// The BatchNorm + ReLU apply of the probes (bn_grid_sync_probe.cu,
// conv_bn_fused_probe.cu): y = relu(scale * x + shift) over the rows of an
// NHWC f16 tensor, (scale, shift) from sums f32[2,C] by bn_train_affine, the
// same floats as tr's bn_relu_apply. Only included from .cu files.
#include <cuda_fp16.h>

#include "framework/ops/kernels/bn_affine_cuda.h"
#include "framework/ops/kernels/kernel_launch_cuda.h"

namespace tr::cuda {

// y = relu(scale * x + shift) over rows r0, r0 + stride, ... of the VEC
// channels from c0.
template <int VEC>
__device__ __forceinline__ void apply_rows_affine(const __half* x, const float (&sc)[VEC], const float (&sh)[VEC],
                                                  __half* y, int64_t rows, int64_t C, int64_t c0, int64_t r0,
                                                  int64_t stride) {
  for (int64_t r = r0; r < rows; r += stride) {
    float v[VEC];
    load_vec<__half, VEC>(x + r * C + c0, v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = bn_relu_value(sc[i], sh[i], v[i], true);
    store_vec<__half, VEC>(y + r * C + c0, v);
  }
}

// The same with (scale, shift) from sums f32[2,C].
template <int VEC>
__device__ __forceinline__ void apply_rows(const __half* x, const float* sums, const __half* gamma, const __half* beta,
                                           __half* y, int64_t rows, int64_t C, int64_t c0, int64_t r0, int64_t stride,
                                           double inv_count) {
  float sc[VEC], sh[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i)
    bn_train_affine(sums, gamma, beta, C, c0 + i, inv_count, 1e-5f, sc[i], sh[i], nullptr, nullptr);
  apply_rows_affine<VEC>(x, sc, sh, y, rows, C, c0, r0, stride);
}

template <int VEC>
__global__ void apply_kernel(const __half* x, const float* sums, const __half* gamma, const __half* beta, __half* y,
                             int64_t rows, int64_t C, double inv_count) {
  grid_dependency_begin();
  const int64_t c0 = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * VEC;
  if (c0 >= C) return;
  apply_rows<VEC>(x, sums, gamma, beta, y, rows, C, c0, int64_t(blockIdx.x) * blockDim.y + threadIdx.y,
                  int64_t(gridDim.x) * blockDim.y, inv_count);
}

}  // namespace tr::cuda
