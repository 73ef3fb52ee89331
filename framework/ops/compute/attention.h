#pragma once
// Causal multi-head self-attention over a GPT's packed projections.
//   AttentionFwd: qkv T[B,T,3C] -> y T[B,T,C], lse f32[B,H,T]
//     H = attrs.heads, d = C / H. Head h reads q_t = qkv[b, t, h*d : (h+1)*d],
//     k_t at channel C + h*d and v_t at 2C + h*d, and writes y[b, t, h*d : (h+1)*d]:
//       s_ij = q_i . k_j / sqrt(d) for j <= i (the causal mask), p_i = softmax_j(s_i),
//       y_i = sum_j p_ij v_j, lse_i = ln sum_j exp(s_ij) (kept for the backward).
//   AttentionBwd: dy T[B,T,C], qkv T, y T, lse f32[B,H,T] -> dqkv T[B,T,3C], delta f32[B,H,T]
//       p_ij = exp(s_ij - lse_i) with lse as stored, delta_i = dy_i . y_i (an output,
//       so the kernels that need every query's delta read it once),
//       ds_ij = p_ij (dy_i . v_j - delta_i),
//       dq_i = sum_j ds_ij k_j / sqrt(d), dk_j = sum_i ds_ij q_i / sqrt(d), dv_j = sum_i p_ij dy_i.
// The CPU is the plain formula, summed in double. CUDA keeps the scores in
// f32 on chip, never [T,T] in memory (flash attention's online softmax), and
// gives every sum one thread in a fixed order: no atomics, the same bits on
// every run (Note [deterministic kernels]). No workspace beyond lse and delta.
// The head dim must be one of kAttentionHeadDims, on every backend.
// lse and delta are f64 when T is f64.
#include "framework/ops/shape_ctx.h"

namespace tr {

inline constexpr int kAttentionHeadDims[] = {8, 16, 32, 64, 128};

void attention_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void attention_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void attention_fwd_cpu(const OpCall& c);
void attention_fwd_cuda(const OpCall& c);
void attention_bwd_cpu(const OpCall& c);
void attention_bwd_cuda(const OpCall& c);

}  // namespace tr
