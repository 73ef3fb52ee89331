#pragma once
// GELU in its tanh form, as GPT-2 (and llm.c, nanoGPT) define it:
//   GeluFwd: x T -> y T = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//   GeluBwd: dy T, x T -> dx T = dy * y'(x),
//            y'(x) = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// Both compute in f32 (f64 for f64 tensors) and round once to T. The tanh is
// each backend's own (glibc's tanhf, CUDA's tanhf): the two differ by an ulp
// or two, so the GPU matches the CPU within a few f32 roundings, not bit for
// bit. The backward reads x, not y: y' is no function of y.
#include "framework/ops/shape_ctx.h"

namespace tr {

void gelu_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void gelu_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void gelu_fwd_cpu(const OpCall& c);
void gelu_fwd_cuda(const OpCall& c);
void gelu_bwd_cpu(const OpCall& c);
void gelu_bwd_cuda(const OpCall& c);

}  // namespace tr
