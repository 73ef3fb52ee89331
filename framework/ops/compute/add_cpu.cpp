// Add: the shape rule and the CPU reference. Semantics: framework/ops/compute/add.h.
#include "framework/ops/compute/add.h"

#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

template <class S>
void add_impl(const OpCall& c, int64_t n, bool relu) {
  using A = acc_t<S>;
  const S* a = c.in[0].as<S>();
  const S* b = c.in[1].as<S>();
  S* y = c.out[0].as<S>();
  for (int64_t i = 0; i < n; ++i) {
    // Rounded to S before the ReLU, as the CUDA kernel does: the comparison
    // sees the stored value.
    const A v = cpu::load<A>(cpu::store<S>(cpu::load<A>(a[i]) + cpu::load<A>(b[i])));
    y[i] = cpu::store<S>(relu && !(v > A(0)) ? A(0) : v);
  }
}

}  // namespace

void add_shapes(const ShapeCtx& c, Shape* out, int) {
  const Shape &a = c.in[0], &b = c.in[1];
  check_tensor_dims(a, "add", "a");
  TR_USER_CHECK(a == b, "add: the inputs differ in shape: ", a.str(), " and ", b.str());
  out[0] = a;
}

void add_cpu(const OpCall& c) {
  const char* op = "add";
  check_operands(OpKind::Add, c);
  const int64_t n = c.in[0].shape.numel();
  cpu::check_dtype(c.in[1], c.in[0].dtype, op, "b");
  cpu::check_numel(c.in[1], n, op, "b");
  cpu::check_dtype(c.out[0], c.in[0].dtype, op, "y");
  cpu::check_numel(c.out[0], n, op, "y");
  const bool relu = c.attrs->relu;
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { add_impl<typename decltype(tag)::type>(c, n, relu); });
}

}  // namespace tr
