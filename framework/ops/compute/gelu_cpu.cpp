// GELU (tanh form): shape rules and the CPU reference. Semantics: framework/ops/compute/gelu.h.
#include <cmath>

#include "framework/ops/compute/gelu.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

// sqrt(2/pi) and the cubic's coefficient, in the accumulation type.
template <class A>
constexpr A kSqrt2OverPi = A(0.7978845608028654);
template <class A>
constexpr A kCubic = A(0.044715);

template <class A>
A gelu(A x) {
  const A u = kSqrt2OverPi<A> * (x + kCubic<A> * x * x * x);
  return A(0.5) * x * (A(1) + std::tanh(u));
}

template <class A>
A gelu_grad(A x) {
  const A u = kSqrt2OverPi<A> * (x + kCubic<A> * x * x * x);
  const A t = std::tanh(u);
  const A du = kSqrt2OverPi<A> * (A(1) + A(3) * kCubic<A> * x * x);
  return A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * du;
}

template <class S>
void fwd_impl(const OpCall& c, int64_t n) {
  using A = acc_t<S>;
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  for (int64_t i = 0; i < n; ++i) y[i] = cpu::store<S>(gelu(cpu::load<A>(x[i])));
}

template <class S>
void bwd_impl(const OpCall& c, int64_t n) {
  using A = acc_t<S>;
  const S* dy = c.in[0].as<S>();
  const S* x = c.in[1].as<S>();
  S* dx = c.out[0].as<S>();
  for (int64_t i = 0; i < n; ++i) dx[i] = cpu::store<S>(cpu::load<A>(dy[i]) * gelu_grad(cpu::load<A>(x[i])));
}

// Every operand has the first input's dtype and element count.
void check_call(const OpCall& c, const char* op) {
  const int64_t n = c.in[0].shape.numel();
  for (int i = 1; i < c.n_in; ++i) {
    cpu::check_dtype(c.in[i], c.in[0].dtype, op, "x");
    cpu::check_numel(c.in[i], n, op, "x");
  }
  cpu::check_dtype(c.out[0], c.in[0].dtype, op, "the output");
  cpu::check_numel(c.out[0], n, op, "the output");
}

}  // namespace

void gelu_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  check_tensor_dims(c.in[0], "gelu_fwd", "x");
  out[0] = c.in[0];
}

void gelu_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  check_tensor_dims(c.in[1], "gelu_bwd", "x");
  TR_USER_CHECK(c.in[0] == c.in[1], "gelu_bwd: dy ", c.in[0].str(), " must match x ", c.in[1].str());
  out[0] = c.in[1];
}

void gelu_fwd_cpu(const OpCall& c) {
  check_operands(OpKind::GeluFwd, c);
  check_call(c, "gelu_fwd");
  const int64_t n = c.in[0].shape.numel();
  cpu::dispatch_float(c.in[0].dtype, "gelu_fwd", [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, n); });
}

void gelu_bwd_cpu(const OpCall& c) {
  check_operands(OpKind::GeluBwd, c);
  check_call(c, "gelu_bwd");
  const int64_t n = c.in[0].shape.numel();
  cpu::dispatch_float(c.in[0].dtype, "gelu_bwd", [&](auto tag) { bwd_impl<typename decltype(tag)::type>(c, n); });
}

}  // namespace tr
