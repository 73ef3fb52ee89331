// LayerNorm: shape rules and the CPU reference. Semantics: framework/ops/compute/layernorm.h.
#include <cmath>

#include "framework/ops/compute/layernorm.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

struct Dims {
  int64_t rows = 0, C = 0;
};

Dims dims_of(const TensorRef& x) {
  const int64_t C = x.shape[x.shape.rank - 1];
  return {x.shape.numel() / C, C};
}

template <class S>
void fwd_impl(const OpCall& c, Dims d) {
  using A = acc_t<S>;
  const S* x = c.in[0].as<S>();
  const S* gamma = c.in[1].as<S>();
  const S* beta = c.in[2].as<S>();
  S* y = c.out[0].as<S>();
  double* st = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * d.rows));
  for (int64_t r = 0; r < d.rows; ++r) {
    const S* row = x + r * d.C;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < d.C; ++i) sum += cpu::load<double>(row[i]);
    const double mean = sum / double(d.C);
    for (int64_t i = 0; i < d.C; ++i) sq += (cpu::load<double>(row[i]) - mean) * (cpu::load<double>(row[i]) - mean);
    st[2 * r] = mean;
    st[2 * r + 1] = 1.0 / std::sqrt(sq / double(d.C) + double(c.attrs->eps));
  }
  cpu::write_stats(c.out[1], 2 * d.rows, st, "layernorm_fwd", "stats");
  cpu::read_stats(c.out[1], 2 * d.rows, st, "layernorm_fwd", "stats");  // y from the stats as stored
  for (int64_t r = 0; r < d.rows; ++r) {
    const A mean = A(st[2 * r]), rstd = A(st[2 * r + 1]);
    for (int64_t i = 0; i < d.C; ++i) {
      const A xhat = (cpu::load<A>(x[r * d.C + i]) - mean) * rstd;
      y[r * d.C + i] = cpu::store<S>(xhat * cpu::load<A>(gamma[i]) + cpu::load<A>(beta[i]));
    }
  }
}

// The backward; with `add` (LayerNormBwdAdd's r), dx then gets it added as Add
// does: dx's T value and r's, summed in the accumulation type, rounded once.
template <class S>
void bwd_impl(const OpCall& c, Dims d, const S* add) {
  using A = acc_t<S>;
  const S* dy = c.in[0].as<S>();
  const S* x = c.in[1].as<S>();
  const S* gamma = c.in[2].as<S>();
  S* dx = c.out[0].as<S>();
  double* st = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * d.rows + 2 * d.C));
  double* dgamma = st + 2 * d.rows;
  double* dbeta = dgamma + d.C;
  cpu::read_stats(c.in[3], 2 * d.rows, st, "layernorm_bwd", "stats");
  for (int64_t i = 0; i < 2 * d.C; ++i) dgamma[i] = 0;
  for (int64_t r = 0; r < d.rows; ++r) {
    const double mean = st[2 * r], rstd = st[2 * r + 1];
    double a = 0, b = 0;
    for (int64_t i = 0; i < d.C; ++i) {
      const double xhat = (cpu::load<double>(x[r * d.C + i]) - mean) * rstd;
      const double g = cpu::load<double>(dy[r * d.C + i]) * cpu::load<double>(gamma[i]);
      a += g, b += g * xhat;
      dgamma[i] += cpu::load<double>(dy[r * d.C + i]) * xhat;
      dbeta[i] += cpu::load<double>(dy[r * d.C + i]);
    }
    a /= double(d.C), b /= double(d.C);
    for (int64_t i = 0; i < d.C; ++i) {
      const double xhat = (cpu::load<double>(x[r * d.C + i]) - mean) * rstd;
      const double g = cpu::load<double>(dy[r * d.C + i]) * cpu::load<double>(gamma[i]);
      const S v = cpu::store<S>(acc_t<S>(rstd * (g - a - xhat * b)));
      dx[r * d.C + i] = add == nullptr ? v : cpu::store<S>(cpu::load<A>(v) + cpu::load<A>(add[r * d.C + i]));
    }
  }
  for (int64_t i = 0; i < d.C; ++i) {
    c.out[1].as<S>()[i] = cpu::store<S>(acc_t<S>(dgamma[i]));
    c.out[2].as<S>()[i] = cpu::store<S>(acc_t<S>(dbeta[i]));
  }
}

void check_param(const Shape& p, int64_t C, const char* op, const char* what) {
  TR_USER_CHECK(p.rank == 1 && p[0] == C, op, ": ", what, " is ", p.str(), ", expected [", C, "] (x's last dim)");
}

// Types and sizes of every operand: T for tensors and parameters, f32 (f64 with T = f64) for the stats.
void check_call(const OpCall& c, const TensorRef& x, const TensorRef& stats, const char* op) {
  const Dims d = dims_of(x);
  const DType stat = x.dtype == DType::F64 ? DType::F64 : DType::F32;
  cpu::check_dtype(stats, stat, op, "stats");
  cpu::check_numel(stats, 2 * d.rows, op, "stats");
  for (int i = 0; i < c.n_in; ++i)
    if (&c.in[i] != &stats) cpu::check_dtype(c.in[i], x.dtype, op, "an input");
  for (int i = 0; i < c.n_out; ++i)
    if (&c.out[i] != &stats) cpu::check_dtype(c.out[i], x.dtype, op, "an output");
}

}  // namespace

void layernorm_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const Shape& x = c.in[0];
  check_tensor_dims(x, "layernorm_fwd", "x");
  const int64_t C = x[x.rank - 1];
  check_param(c.in[1], C, "layernorm_fwd", "gamma");
  check_param(c.in[2], C, "layernorm_fwd", "beta");
  out[0] = x;
  out[1] = Shape{x.numel() / C, 2};
}

void layernorm_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const Shape& x = c.in[1];
  check_tensor_dims(x, "layernorm_bwd", "x");
  const int64_t C = x[x.rank - 1];
  TR_USER_CHECK(c.in[0] == x, "layernorm_bwd: dy ", c.in[0].str(), " must match x ", x.str());
  check_param(c.in[2], C, "layernorm_bwd", "gamma");
  TR_USER_CHECK(c.in[3] == (Shape{x.numel() / C, 2}), "layernorm_bwd: stats ", c.in[3].str(), ", expected [",
                x.numel() / C, ",2]");
  out[0] = x;
  out[1] = Shape{C};
  out[2] = Shape{C};
}

void layernorm_fwd_cpu(const OpCall& c) {
  check_operands(OpKind::LayerNormFwd, c);
  check_call(c, c.in[0], c.out[1], "layernorm_fwd");
  const Dims d = dims_of(c.in[0]);
  cpu::dispatch_float(c.in[0].dtype, "layernorm_fwd", [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, d); });
}

void layernorm_bwd_cpu(const OpCall& c) {
  check_operands(OpKind::LayerNormBwd, c);
  check_call(c, c.in[1], c.in[3], "layernorm_bwd");
  const Dims d = dims_of(c.in[1]);
  cpu::dispatch_float(c.in[1].dtype, "layernorm_bwd", [&](auto tag) {
    using S = typename decltype(tag)::type;
    bwd_impl<S>(c, d, nullptr);
  });
}

// dy, x, gamma, stats, r -> dx, dgamma, dbeta: LayerNormBwd's shapes, r in x's.
void layernorm_bwd_add_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  layernorm_bwd_shapes(c, out, n_out);
  TR_USER_CHECK(c.in[4] == c.in[1], "layernorm_bwd_add: r ", c.in[4].str(), " must match x ", c.in[1].str());
}

void layernorm_bwd_add_cpu(const OpCall& c) {
  check_operands(OpKind::LayerNormBwdAdd, c);
  check_call(c, c.in[1], c.in[3], "layernorm_bwd_add");
  const Dims d = dims_of(c.in[1]);
  cpu::check_numel(c.in[4], d.rows * d.C, "layernorm_bwd_add", "r");
  cpu::dispatch_float(c.in[1].dtype, "layernorm_bwd_add", [&](auto tag) {
    using S = typename decltype(tag)::type;
    bwd_impl<S>(c, d, c.in[4].as<S>());
  });
}

}  // namespace tr
