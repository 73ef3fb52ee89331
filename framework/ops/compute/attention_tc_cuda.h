#pragma once
// Tensor-core (mma.sync, 16-bit inputs, f32 accumulation) causal self-attention
// for f16 and bf16 storage (E = __half or __nv_bfloat16), the path
// attention_cuda.cu routes them to when the head dim has a kernel here
// (attention_tc_has_kernel). Semantics, layout and outputs
// as attention.h: qkv [B,T,3C], y and dy [B,T,C], lse and delta f32 [B,H,T],
// d = C / H. Deterministic and atomic-free like the f32 kernels; no workspace.
// Only included from .cu files.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>

#include "framework/ops/op_call.h"

namespace tr::cuda {

struct AttentionTcShape {
  int B = 0, T = 0, H = 0, d = 0;  // C = H * d
};

// Whether the tensor-core kernels take head dim d (64 and 128) with these
// pointers: every row must start 16 bytes aligned (16-byte copies).
bool attention_tc_has_kernel(int64_t d, std::initializer_list<const void*> f16_tensors);

// AttentionFwd: y and lse of qkv.
template <typename E>
void attention_tc_fwd(const ExecEnv* env, const AttentionTcShape& s, const E* qkv, E* y, float* lse);

// AttentionBwd: dqkv and delta. Two kernels: dq and delta per query block,
// then dk and dv per key block (reading that delta), so no sum is shared.
template <typename E>
void attention_tc_bwd(const ExecEnv* env, const AttentionTcShape& s, const E* dy, const E* qkv, const E* y,
                      const float* lse, E* dqkv, float* delta);

}  // namespace tr::cuda
