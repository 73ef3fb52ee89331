#pragma once
// One row of the softmax cross-entropy (semantics: softmax_xent.h), by one warp,
// shared by SoftmaxXent and the fused classifier head (classifier_head.h) so
// that both give the same bits:
//   max, first argmax and sum z in a fixed lane order, then a butterfly;
//   loss = lse(z) - (1-s) z[l] - (s/M) sum_j z[j]; correct = (first argmax == l);
//   dlogits[j] = grad_scale * (softmax(z)[j] - target[j]), grad_scale =
//   loss_scale / global_batch (only when drow is not null).
// A label outside [0,M) cannot throw on the device: its loss is NaN (so the NaN
// check skips the step) and it gets no one-hot target.
#include <cuda_fp16.h>

#include <cstdint>

#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda {

// row: the M logits (global or shared memory); *row_out = (loss, correct) from lane 0.
template <typename T>
__device__ __forceinline__ void xent_row(const T* row, int32_t l, int64_t M, float smoothing, float grad_scale, T* drow,
                                         float2* row_out, int lane) {
  float zmax = -INFINITY, zsum = 0.f;
  int64_t arg = M;
  for (int64_t j = lane; j < M; j += 32) {
    const float z = to_f(row[j]);
    if (arg == M || z > zmax) {  // strict: a lane keeps its first maximum
      zmax = z;
      arg = j;
    }
    zsum += z;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, zmax, o);
    const int64_t a2 = __shfl_xor_sync(0xffffffffu, arg, o);
    if (a2 < M && (arg == M || m2 > zmax || (m2 == zmax && a2 < arg))) {
      zmax = m2;
      arg = a2;
    }
    zsum += __shfl_xor_sync(0xffffffffu, zsum, o);
  }
  float esum = 0.f;
  for (int64_t j = lane; j < M; j += 32) esum += expf(to_f(row[j]) - zmax);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) esum += __shfl_xor_sync(0xffffffffu, esum, o);
  const float lse = zmax + logf(esum);
  const bool valid = l >= 0 && int64_t(l) < M;
  const float off = smoothing / float(M);
  if (lane == 0) {
    const float loss = valid ? lse - (1.f - smoothing) * to_f(row[l]) - off * zsum : __int_as_float(0x7fc00000);
    *row_out = make_float2(loss, (valid && arg == l) ? 1.f : 0.f);
  }
  if (drow == nullptr) return;
  for (int64_t j = lane; j < M; j += 32) {
    const float p = expf(to_f(row[j]) - lse);
    const float target = off + (j == l ? 1.f - smoothing : 0.f);
    drow[j] = from_f<T>(grad_scale * (p - target));
  }
}

// metrics[4] = (sum of rows' loss, sum of rows' correct, N, 0): one block adds
// the N rows in a fixed order (double), after the kernel that wrote them.
void launch_xent_metrics(const ExecEnv* env, const float2* rows, int64_t N, float* metrics);

}  // namespace tr::cuda
