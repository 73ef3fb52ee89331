// FcGeluFwd and FcBwdDataGelu on the CPU (semantics: fc_gelu.h): the ops they
// replace in turn, so fusion changes no bit here. The backward's intermediate,
// the GELU's output gradient, lives in a buffer of this thread.
#include "framework/ops/compute/fc_gelu.h"

#include <cstddef>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/gelu.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

OpCall sub_call(const OpCall& c, const TensorRef* in, int n_in, const TensorRef* out, int n_out) {
  return OpCall{in, n_in, out, n_out, c.attrs, c.variant, c.env};
}

}  // namespace

// x, w (, b) -> pre, y: FcFwd's shape twice.
void fc_gelu_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  fc_fwd_shapes(c, out, 1);
  out[1] = out[0];
}

// dy, w, pre -> dx in pre's shape: FcBwdData's rule with pre as the forward's x.
void fc_bwd_data_gelu_shapes(const ShapeCtx& c, Shape* out, int) { fc_bwd_data_shapes(c, out, 1); }

void fc_gelu_fwd_cpu(const OpCall& c) {
  const OpOperands o(OpKind::FcGeluFwd, c);
  const TensorRef& pre = o.out("pre");
  const TensorRef& y = o.out("y");
  fc_fwd_cpu(sub_call(c, c.in, c.n_in, &pre, 1));
  gelu_fwd_cpu(sub_call(c, &pre, 1, &y, 1));
}

void fc_bwd_data_gelu_cpu(const OpCall& c) {
  const OpOperands o(OpKind::FcBwdDataGelu, c);
  const TensorRef& pre = o.in("pre");
  const TensorRef& dx = o.out("dx");
  TR_CHECK(pre.dtype == dx.dtype && pre.shape.numel() == dx.shape.numel(), "fc_bwd_data_gelu: pre ", pre.shape.str(),
           " and dx ", dx.shape.str(), " differ");
  thread_local std::vector<std::byte> dpost_buf;
  dpost_buf.resize(size_t(pre.shape.numel()) * dtype_size(pre.dtype));
  const TensorRef dpost{dpost_buf.data(), pre.dtype, pre.shape};
  const TensorRef data_in[3] = {o.in("dy"), o.in("w"), pre};
  fc_bwd_data_cpu(sub_call(c, data_in, 3, &dpost, 1));
  const TensorRef gelu_in[2] = {dpost, pre};
  gelu_bwd_cpu(sub_call(c, gelu_in, 2, &dx, 1));
}

}  // namespace tr
