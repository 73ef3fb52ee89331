#pragma once
// Max pooling 3x3 / stride 2 / pad 1 with recorded winners (the ResNet-50 stem):
// the unrolled kernels of maxpool_3x3s2_cuda.cu, which give the general
// kernels' bits (Note [pool window order]). Each returns false, launching
// nothing, where it does not apply (dtype without 16-byte vectors, C not a
// multiple of the vector, a misaligned pointer, an image of 2^31 elements or
// more); the caller then runs the general kernel.
//   fwd: x[N,H,W,C] -> y[N,Ho,Wo,C], argmax u8[N,Ho,Wo,C]
//   bwd: dy[N,Ho,Wo,C], argmax u8[N,Ho,Wo,C] -> dx[N,H,W,C]
#include <cstdint>

#include "framework/core/dtype.h"
#include "framework/ops/kernels/pool_window.h"
#include "framework/ops/op_call.h"

namespace tr {

bool is_3x3s2p1(const PoolWindow& pw);
bool maxpool_3x3s2_fwd(const ExecEnv* env, int sms, DType dtype, const void* x, void* y, uint8_t* argmax, int64_t n,
                       int64_t h, int64_t w, int64_t c);
bool maxpool_3x3s2_bwd(const ExecEnv* env, int sms, DType dtype, const void* dy, const uint8_t* argmax, void* dx,
                       int64_t n, int64_t h, int64_t w, int64_t c);

}  // namespace tr
