// FcResidualFwd on the CPU (semantics: fc_residual.h): FcFwd into a buffer of
// this thread, then Add of the residual, so fusion changes no bit here.
#include "framework/ops/compute/fc_residual.h"

#include <cstddef>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/compute/add.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/op_signature.h"

namespace tr {

// x, w, r (, b) -> y: FcFwd's shape, which must be r's.
void fc_residual_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const bool bias = c.n_in == 4;
  const Shape fc_in[3] = {c.in[0], c.in[1], bias ? c.in[3] : Shape{}};  // x, w (, b)
  fc_fwd_shapes(ShapeCtx{fc_in, bias ? 3 : 2, c.attrs, c.variant}, out, 1);
  const Shape& r = c.in[2];
  TR_USER_CHECK(r == out[0], "fc_residual_fwd: the residual ", r.str(), " is not in the fc's output shape ",
                out[0].str());
}

void fc_residual_fwd_cpu(const OpCall& c) {
  const OpOperands o(OpKind::FcResidualFwd, c);
  const TensorRef& r = o.in("r");
  const TensorRef& y = o.out("y");
  TR_CHECK(r.dtype == y.dtype && r.shape.numel() == y.shape.numel(), "fc_residual_fwd: r ", r.shape.str(), " and y ",
           y.shape.str(), " differ");
  thread_local std::vector<std::byte> fc_buf;
  fc_buf.resize(size_t(y.shape.numel()) * dtype_size(y.dtype));
  const TensorRef fc_out{fc_buf.data(), y.dtype, y.shape};
  const TensorRef* b = o.in_if("b");
  const TensorRef fc_in[3] = {o.in("x"), o.in("w"), b != nullptr ? *b : TensorRef{}};
  fc_fwd_cpu(OpCall{fc_in, b != nullptr ? 3 : 2, &fc_out, 1, c.attrs, c.variant, c.env});
  OpAttrs plain_add;
  plain_add.relu = false;
  const TensorRef add_in[2] = {r, fc_out};
  add_cpu(OpCall{add_in, 2, &y, 1, &plain_add, c.variant, c.env});
}

}  // namespace tr
