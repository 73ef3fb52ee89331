// ReLU: shape rules and the CPU reference (elementwise, any shape).
// Backward is a select, dx = y > 0 ? dy : 0 (as PyTorch's threshold_backward):
// a NaN/Inf gradient behind a dead unit is dropped, not turned into NaN.
#include "framework/ops/compute/relu.h"

#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

template <class S>
void fwd_impl(const OpCall& c, int64_t n) {
  using A = acc_t<S>;
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  const S zero = cpu::store<S>(A(0));
  for (int64_t i = 0; i < n; ++i) y[i] = cpu::load<A>(x[i]) > A(0) ? x[i] : zero;
}

template <class S>
void bwd_impl(const ReluBwdOperands& o, int64_t n) {
  using A = acc_t<S>;
  const S* dy = o.dy->as<S>();
  const S* y = o.y->as<S>();
  S* dx = o.dx->as<S>();
  const S zero = cpu::store<S>(A(0));
  if (o.dy2 != nullptr) {  // ReluBwdAdd: dx = (dy + dy2) * (y > 0), the sum rounded once as Add rounds it
    const S* dy2 = o.dy2->as<S>();
    for (int64_t i = 0; i < n; ++i)
      dx[i] = cpu::load<A>(y[i]) > A(0) ? cpu::store<S>(cpu::load<A>(dy[i]) + cpu::load<A>(dy2[i])) : zero;
    return;
  }
  for (int64_t i = 0; i < n; ++i) dx[i] = cpu::load<A>(y[i]) > A(0) ? dy[i] : zero;
}

void check_call(const OpCall& c, const char* op) {
  const int64_t n = c.in[0].shape.numel();
  for (int i = 0; i < c.n_in; ++i) {
    cpu::check_dtype(c.in[i], c.in[0].dtype, op, "input");
    cpu::check_numel(c.in[i], n, op, "input");
  }
  cpu::check_dtype(c.out[0], c.in[0].dtype, op, "output");
  cpu::check_numel(c.out[0], n, op, "output");
}

}  // namespace

void relu_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  check_tensor_dims(c.in[0], "relu_fwd", "x");
  out[0] = c.in[0];
}

void relu_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  check_tensor_dims(c.in[1], "relu_bwd", "y");
  TR_USER_CHECK(c.in[0] == c.in[1], "relu_bwd: dy ", c.in[0].str(), " must match y ", c.in[1].str());
  out[0] = c.in[1];
}

void relu_bwd_add_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  relu_bwd_shapes(c, out, n_out);
  TR_USER_CHECK(c.in[2] == c.in[1], "relu_bwd_add: dy2 ", c.in[2].str(), " must match y ", c.in[1].str());
}

ReluBwdOperands relu_bwd_operands(OpKind kind, const OpCall& c) {
  TR_CHECK(kind == OpKind::ReluBwd || kind == OpKind::ReluBwdAdd, "relu_bwd_operands: not a ReLU backward");
  const OpOperands o(kind, c);
  ReluBwdOperands r{&o.in("dy"), &o.in("y"), kind == OpKind::ReluBwdAdd ? &o.in("dy2") : nullptr, &o.out("dx")};
  const std::string op(op_name(kind));
  const int64_t n = r.dy->shape.numel();
  for (const TensorRef* t : {r.y, r.dy2, r.dx}) {
    if (t == nullptr) continue;
    const char* what = t == r.y ? "y" : t == r.dx ? "dx" : "dy2";
    TR_CHECK(t->dtype == r.dy->dtype && t->shape.numel() == n, op, ": ", what, " is ", dtype_name(t->dtype),
             t->shape.str(), ", expected ", dtype_name(r.dy->dtype), " with ", n, " elements (dy ", r.dy->shape.str(),
             ")");
  }
  return r;
}

void relu_fwd_cpu(const OpCall& c) {
  const char* op = "relu_fwd";
  check_operands(OpKind::ReluFwd, c);
  check_call(c, op);
  const int64_t n = c.in[0].shape.numel();
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, n); });
}

namespace {

void relu_bwd_any_cpu(OpKind kind, const OpCall& c) {
  const ReluBwdOperands o = relu_bwd_operands(kind, c);
  const int64_t n = o.dy->shape.numel();
  cpu::dispatch_float(o.dy->dtype, "relu_bwd", [&](auto tag) { bwd_impl<typename decltype(tag)::type>(o, n); });
}

}  // namespace

void relu_bwd_cpu(const OpCall& c) { relu_bwd_any_cpu(OpKind::ReluBwd, c); }
void relu_bwd_add_cpu(const OpCall& c) { relu_bwd_any_cpu(OpKind::ReluBwdAdd, c); }

}  // namespace tr
