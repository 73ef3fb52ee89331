#pragma once
// The AllReduceSum RANGE op: every operand summed over ranks through
// env.comm (then scaled by 1/ranks when attrs.average). With one rank it does
// nothing when there is no communicator (one rank, collectives not forced).
#include "framework/ops/op_call.h"

namespace tr {

void allreduce_sum_op(const RangeCall& c);

}  // namespace tr
