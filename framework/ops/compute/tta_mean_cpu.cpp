// TtaMean: the shape rule and the CPU reference. Semantics: framework/ops/compute/tta_mean.h.
#include "framework/ops/compute/tta_mean.h"

#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

template <class S>
void tta_mean_impl(const OpCall& c, int64_t half) {
  using A = acc_t<S>;
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  for (int64_t i = 0; i < half; ++i) y[i] = cpu::store<S>((cpu::load<A>(x[i]) + cpu::load<A>(x[half + i])) * A(0.5));
}

}  // namespace

void tta_mean_shapes(const ShapeCtx& c, Shape* out, int) {
  const Shape& x = c.in[0];
  TR_USER_CHECK(x.rank == 2 && x[0] > 0 && x[1] > 0 && x[0] % 2 == 0, "tta_mean: x must be [2N,M], got ", x.str());
  out[0] = Shape{x[0] / 2, x[1]};
}

void tta_mean_cpu(const OpCall& c) {
  const char* op = "tta_mean";
  check_operands(OpKind::TtaMean, c);
  const Shape& x = c.in[0].shape;
  TR_CHECK(x.rank == 2 && x[0] % 2 == 0, op, ": x ", x.str());
  const int64_t half = x.numel() / 2;
  cpu::check_dtype(c.out[0], c.in[0].dtype, op, "y");
  cpu::check_numel(c.out[0], half, op, "y");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { tta_mean_impl<typename decltype(tag)::type>(c, half); });
}

}  // namespace tr
