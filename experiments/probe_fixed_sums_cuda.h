#pragma once
// Per-channel sums in 64.64 fixed point, for the probes that ask whether
// integer atomics can replace finalize_sums (bn_grid_sync_probe.cu,
// conv_bn_fused_probe.cu). A sum is two words: [0] the fraction (unsigned),
// [1] the integer part (signed); sums f32[2,C] become fx[(k * C + ch) * 2].
// Only included from .cu files.
#include <cuda_fp16.h>

#include <cstdint>

namespace tr::cuda {

// Adds v to the sum at p. Integer adds do not depend on their order, so
// blocks can add their partials with atomics and the sums are the same bits
// in every run, with no finalize kernel; the carry of the fraction's add goes
// to the integer word, so the 128-bit total is exact. |v| < 2^62; a
// fraction finer than 2^-64 is dropped.
__device__ __forceinline__ void fixed_add(unsigned long long* p, float v) {
  const double d = double(v), whole = floor(d);
  const unsigned long long lo = static_cast<unsigned long long>((d - whole) * 18446744073709551616.0);
  const unsigned long long old = atomicAdd(p, lo);
  const unsigned long long hi = static_cast<unsigned long long>(static_cast<long long>(whole)) + (old + lo < old);
  if (hi != 0) atomicAdd(p + 1, hi);
}
__device__ __forceinline__ double fixed_value(const unsigned long long* p) {
  return double(static_cast<long long>(p[1])) + double(p[0]) * 5.421010862427522170037264e-20;  // 2^-64
}
// bn_train_affine over fixed-point sums fx[(k * C + ch) * 2]: a sum that one
// float made gives that float's double, so the same (scale, shift).
__device__ __forceinline__ void bn_affine_fixed(const unsigned long long* fx, const __half* gamma, const __half* beta,
                                                int C, int ch, double inv_count, float eps, float& sc, float& sh) {
  const double m = fixed_value(fx + 2 * ch) * inv_count;
  const double var = fmax(fixed_value(fx + 2 * (int64_t(C) + ch)) * inv_count - m * m, 0.0);
  const double scale = double(__half2float(gamma[ch])) * (1.0 / sqrt(var + double(eps)));
  sc = float(scale);
  sh = float(double(__half2float(beta[ch])) - m * scale);
}

// fx <- sums f32[n] (fx zeroed first): a probe's input sums in fixed point.
// A template so that each probe's file may launch it.
template <typename T>
__global__ void to_fixed_kernel(const T* sums, int n, unsigned long long* fx) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) fixed_add(fx + 2 * i, float(sums[i]));
}

}  // namespace tr::cuda
