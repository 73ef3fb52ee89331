#pragma once
// Mixed precision and step bookkeeping (RANGE nodes), all reading and writing
// env.scalars in device memory (Note [scalars in device memory]).
//   Cast:            ops[0] (src) -> ops[1] (dst), f16<->f32 or bf16<->f32 (or same dtype), same elems.
//                    attrs.check_finite (f16|bf16 -> f32): CheckFinite on src in the same pass.
//   CheckFinite:     scalars.pending_inf = 1 when any operand holds a NaN/Inf (f32, f16 or bf16);
//                    never cleared here (Note [the check's flag], train_scalars.h).
//   UnscaleGrads:    when !found_inf: every operand (f32) *= 1 / loss_scale.
//   UpdateLossScale: dynamic_scale: found_inf -> loss_scale *= backoff, good_steps = 0,
//                    skipped_steps++; else ++good_steps == growth_interval ->
//                    loss_scale *= growth, good_steps = 0. Not dynamic: only counts skips.
//   AdvanceStep:     ops[0] = lr table f32[schedule_len]. found_inf = pending_inf, pending_inf = 0,
//                    grad_unscale = 1/loss_scale; batches++ always; when !found_inf: step++;
//                    lr = table[min(step-1, schedule_len-1)]. (lr is that of the step being applied.)
//                    ops[1], ops[2] (f32, same elems, optional): also Accumulate's ops[1] += ops[2].
//                    attrs.update_scale: then UpdateLossScale (one kernel for the step's scalars).
#include "framework/ops/op_call.h"

namespace tr {

void cast_cpu(const RangeCall& c);
void cast_cuda(const RangeCall& c);
void check_finite_cpu(const RangeCall& c);
void check_finite_cuda(const RangeCall& c);
void unscale_grads_cpu(const RangeCall& c);
void unscale_grads_cuda(const RangeCall& c);
void update_loss_scale_cpu(const RangeCall& c);
void update_loss_scale_cuda(const RangeCall& c);
void advance_step_cpu(const RangeCall& c);
void advance_step_cuda(const RangeCall& c);

}  // namespace tr
