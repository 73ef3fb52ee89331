#pragma once
// Tensor-core (mma.sync, f16 inputs, f32 accumulation) causal self-attention
// for f16 storage, the path attention_cuda.cu routes f16 to when the head dim
// has a kernel here (attention_f16_has_kernel). Semantics, layout and outputs
// as attention.h: qkv [B,T,3C], y and dy [B,T,C], lse and delta f32 [B,H,T],
// d = C / H. Deterministic and atomic-free like the f32 kernels; no workspace.
// Only included from .cu files.
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>

#include "framework/ops/op_call.h"

namespace tr::cuda {

struct AttentionF16Shape {
  int B = 0, T = 0, H = 0, d = 0;  // C = H * d
};

// Whether the tensor-core kernels take head dim d (64 and 128) with these
// pointers: every f16 row must start 16 bytes aligned (16-byte copies).
bool attention_f16_has_kernel(int64_t d, std::initializer_list<const void*> f16_tensors);

// AttentionFwd: y and lse of qkv.
void attention_f16_fwd(const ExecEnv* env, const AttentionF16Shape& s, const __half* qkv, __half* y, float* lse);

// AttentionBwd: dqkv and delta. Two kernels: dq and delta per query block,
// then dk and dv per key block (reading that delta), so no sum is shared.
void attention_f16_bwd(const ExecEnv* env, const AttentionF16Shape& s, const __half* dy, const __half* qkv,
                       const __half* y, const float* lse, __half* dqkv, float* delta);

}  // namespace tr::cuda
