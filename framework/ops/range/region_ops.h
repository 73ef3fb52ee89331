#pragma once
// Bulk ops over whole arena regions (RANGE nodes).
//   CopyIn:     ops[0] = images u8, ops[1] = labels i32; copies env.staging[attrs.slot]
//               (host) into them (a host-to-device copy on CUDA, on env.stream).
//   Clear:      every operand = 0.
//   Lerp:       ops[0] += attrs.t * (ops[1] - ops[0]); f32; no-op when
//               attrs.skip_on_inf and scalars.found_inf.
//   Accumulate: ops[0] += ops[1]; f32.
#include "framework/ops/op_call.h"

namespace tr {

void copy_in_cpu(const RangeCall& c);
void copy_in_cuda(const RangeCall& c);
void clear_cpu(const RangeCall& c);
void clear_cuda(const RangeCall& c);
void lerp_cpu(const RangeCall& c);
void lerp_cuda(const RangeCall& c);
void accumulate_cpu(const RangeCall& c);
void accumulate_cuda(const RangeCall& c);

}  // namespace tr
