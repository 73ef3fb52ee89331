#pragma once
// Global gradient-norm clipping on the device (RangeOp::GradNorm), so a
// captured step clips without a host sync:
//   ops = grads... (regions, all f32 or all of one 16-bit dtype: Note [16-bit
//         gradients in the optimizer], recipe_graphs.h), partials (f64[>= kGradNormPartials], scratch)
//   scalars.grad_norm  = sqrt(sum of g^2 over every segment of every grads
//                        region), the squares summed in double;
//   scalars.clip_scale = min(1, attrs.max_norm / (grad_norm + 1e-6))
//                        (range::clip_scale_of, as torch.nn.utils.clip_grad_norm_).
// With attrs.unscale each g is first multiplied by scalars.grad_unscale in f32,
// as UnscaleGrads would have (AdamW's tail unscales inside the optimizer: Note
// [optimizer tail]), so the norm is the same bits either way.
// With attrs.check_finite GradNorm is also the step's NaN/Inf check (Note [the
// norm is the check], recipe_graphs.h): it runs before AdvanceStep, so it
// unscales by unscale_factor(scalars.loss_scale), the factor AdvanceStep is
// about to record, and sets scalars.pending_inf when the sum is not finite.
// A square of a finite 16-bit or f32 gradient (at most 1.2e77) cannot overflow
// the double sum, so the sum is not finite exactly when some gradient is not
// (or, unscaled by a scale below 1, overflows f32, which the update could not
// use either).
// AdamW with attrs.clip multiplies every gradient by clip_scale before its
// update (optimizers.h). The norm is computed whether or not the step is
// skipped; a skipped step's optimizer does not read it.
// The CPU sums segment by segment in order. CUDA sums each region flat (its
// padding is zero) over kGradNormPartials blocks in a fixed pattern, then the
// blocks' sums in order: the same bits on every run, within double roundings
// of the CPU's sum.
#include "framework/ops/op_call.h"

namespace tr {

constexpr int kGradNormPartials = 1024;  // blocks of 256 threads: 8 per SM fill an H100 or H200

// The launch-time checks of both backends: the grads' regions, then the f64 partials.
void check_grad_norm_operands(const RangeCall& c, const char* op);

void grad_norm_cpu(const RangeCall& c);
void grad_norm_cuda(const RangeCall& c);

}  // namespace tr
