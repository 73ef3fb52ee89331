#include "framework/ops/range/allreduce_op.h"

#include "framework/comm/communicator.h"
#include "framework/core/error.h"

namespace tr {

void allreduce_sum_op(const RangeCall& c) {
  const ExecEnv& e = *c.env;
  if (e.comm == nullptr) {  // one rank without a communicator: the sum is the value
    TR_CHECK(e.ranks == 1, "AllReduceSum with ", e.ranks, " ranks but no communicator");
    return;
  }
  const ReduceOp op = c.attrs->average ? ReduceOp::Average : ReduceOp::Sum;
  for (int i = 0; i < c.n_ops; ++i)
    e.comm->allreduce(e.rank, c.ops[i].data, c.ops[i].elems, c.ops[i].dtype, op, e.stream);
}

}  // namespace tr
