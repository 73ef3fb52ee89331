// Fully connected layer: shape rules and the CPU reference (GEMMs; the forward
// and data gradient one per sample, Note [batch-invariant CPU GEMMs]).
//   fwd:    y[N,M]  = scale * x[N,K] w[M,K]^T (+ b)     (the bias is not scaled)
//   data:   dx[N,K] = scale * dy[N,M] w[M,K]
//   weight: dw[M,K] = scale * dy^T x,  db[M] = sum_n dy  (db accumulates in double)
// fp16 operands are converted to float scratch first; results are rounded once.
#include "framework/ops/compute/fc.h"

#include <algorithm>

#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

template <class S>
void fwd_impl(const OpCall& c, int64_t N, int64_t K, int64_t M) {
  using A = acc_t<S>;
  const A* x = cpu::as_compute<A>(c.in[0].as<S>(), N * K, 0);
  const A* w = cpu::as_compute<A>(c.in[1].as<S>(), M * K, 1);
  S* y_out = c.out[0].as<S>();
  A* y = nullptr;
  if constexpr (std::is_same_v<S, A>) {
    y = y_out;
  } else {
    y = cpu::scratch<A>(2, size_t(N * M));
  }
  cpu::gemm_per_sample(true, N, M, K, A(c.attrs->scale), x, K, w, K, y, M);
  if (c.attrs->has_bias) {
    const S* b = c.in[2].as<S>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) y[n * M + m] += cpu::load<A>(b[m]);
  }
  if constexpr (!std::is_same_v<S, A>) cpu::store_n(y, N * M, y_out);
}

template <class S>
void bwd_data_impl(const OpCall& c, int64_t N, int64_t K, int64_t M) {
  using A = acc_t<S>;
  const A* dy = cpu::as_compute<A>(c.in[0].as<S>(), N * M, 0);
  const A* w = cpu::as_compute<A>(c.in[1].as<S>(), M * K, 1);
  S* dx_out = c.out[0].as<S>();
  A* dx = nullptr;
  if constexpr (std::is_same_v<S, A>) {
    dx = dx_out;
  } else {
    dx = cpu::scratch<A>(2, size_t(N * K));
  }
  cpu::gemm_per_sample(false, N, K, M, A(c.attrs->scale), dy, M, w, K, dx, K);
  if constexpr (!std::is_same_v<S, A>) cpu::store_n(dx, N * K, dx_out);
}

template <class S>
void bwd_weight_impl(const OpCall& c, int64_t N, int64_t K, int64_t M) {
  using A = acc_t<S>;
  const A* x = cpu::as_compute<A>(c.in[0].as<S>(), N * K, 0);
  const A* dy = cpu::as_compute<A>(c.in[1].as<S>(), N * M, 1);
  S* dw_out = c.out[0].as<S>();
  A* dw = nullptr;
  if constexpr (std::is_same_v<S, A>) {
    dw = dw_out;
  } else {
    dw = cpu::scratch<A>(2, size_t(M * K));
  }
  if (N == 0) {
    std::fill(dw, dw + M * K, A(0));
  } else {
    cpu::gemm(true, false, M, K, N, A(c.attrs->scale), dy, M, x, K, A(0), dw, K);
  }
  if constexpr (!std::is_same_v<S, A>) cpu::store_n(dw, M * K, dw_out);
  if (c.attrs->has_bias) {
    double* db = cpu::scratch<double>(cpu::kDoubleSlot, size_t(M));
    std::fill(db, db + M, 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) db[m] += double(dy[n * M + m]);
    S* db_out = c.out[1].as<S>();
    for (int64_t m = 0; m < M; ++m) db_out[m] = cpu::store<S>(db[m]);
  }
}

void check_dtypes(const OpCall& c, const char* op) {
  const DType t = c.in[0].dtype;
  for (int i = 1; i < c.n_in; ++i) cpu::check_dtype(c.in[i], t, op, "input");
  for (int i = 0; i < c.n_out; ++i) cpu::check_dtype(c.out[i], t, op, "output");
}

// --- shape rules ---

void check_w(const Shape& w, const char* op) {
  TR_USER_CHECK(w.rank == 2, op, ": w must be [M,K], got ", w.str());
  check_positive_dims(w, op, "w");
}

void check_x(const Shape& x, const char* op) {
  TR_USER_CHECK(x.rank >= 2, op, ": x must be [N,K..] (rank >= 2), got ", x.str());
  check_positive_dims(x, op, "x");
}

void check_dy(const Shape& dy, const char* op) {
  TR_USER_CHECK(dy.rank == 2, op, ": dy must be [N,M], got ", dy.str());
  check_positive_dims(dy, op, "dy");
}

}  // namespace

void fc_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "fc_fwd";
  const Shape &x = c.in[0], &w = c.in[1];
  check_x(x, op);
  check_w(w, op);
  TR_USER_CHECK(x.inner() == w[1], op, ": x ", x.str(), " flattens to ", x.inner(), " features but w is ", w.str());
  if (c.attrs->has_bias)
    TR_USER_CHECK(c.in[2].rank == 1 && c.in[2][0] == w[0], op, ": b must be [", w[0], "], got ", c.in[2].str());
  out[0] = Shape{x[0], w[0]};
}

// dx has the shape of the forward x (a view [N,K..] of the flattened [N,K]).
void fc_bwd_data_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "fc_bwd_data";
  const Shape &dy = c.in[0], &w = c.in[1], &x = c.in[2];
  check_dy(dy, op);
  check_w(w, op);
  TR_USER_CHECK(dy[1] == w[0], op, ": dy ", dy.str(), " does not match w ", w.str());
  TR_USER_CHECK(x.rank >= 2 && x[0] == dy[0] && x.numel() == dy[0] * w[1], op, ": x ", x.str(), " is not the [", dy[0],
                ",", w[1], "] input of w ", w.str());
  out[0] = x;
}

void fc_bwd_weight_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "fc_bwd_weight";
  const Shape &x = c.in[0], &dy = c.in[1];
  check_x(x, op);
  check_dy(dy, op);
  TR_USER_CHECK(x[0] == dy[0], op, ": x ", x.str(), " and dy ", dy.str(), " differ in N");
  out[0] = Shape{dy[1], x.inner()};
  if (c.attrs->has_bias) out[1] = Shape{dy[1]};
}

// --- kernels ---

void fc_fwd_cpu(const OpCall& c) {
  const char* op = "fc_fwd";
  check_operands(OpKind::FcFwd, c);
  check_dtypes(c, op);
  const Shape &x = c.in[0].shape, &w = c.in[1].shape;
  TR_CHECK(x.rank >= 2 && w.rank == 2 && x.inner() == w[1], op, ": x ", x.str(), " w ", w.str());
  const int64_t N = x[0], K = w[1], M = w[0];
  cpu::check_numel(c.out[0], N * M, op, "y");
  if (c.attrs->has_bias) cpu::check_numel(c.in[2], M, op, "b");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, N, K, M); });
}

void fc_bwd_data_cpu(const OpCall& c) {
  const char* op = "fc_bwd_data";
  const OpOperands named(OpKind::FcBwdData, c);  // dy, w, x (dx's shape only) -> dx
  check_dtypes(c, op);
  const Shape &dy = c.in[0].shape, &w = c.in[1].shape;
  TR_CHECK(dy.rank == 2 && w.rank == 2 && dy[1] == w[0], op, ": dy ", dy.str(), " w ", w.str());
  const int64_t N = dy[0], K = w[1], M = w[0];
  TR_CHECK(c.out[0].shape.rank >= 1 && c.out[0].shape[0] == N && c.out[0].shape.numel() == N * K, op, ": dx ",
           c.out[0].shape.str(), " for [", N, ",", K, "]");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_data_impl<typename decltype(tag)::type>(c, N, K, M); });
}

void fc_bwd_weight_cpu(const OpCall& c) {
  const char* op = "fc_bwd_weight";
  check_operands(OpKind::FcBwdWeight, c);
  check_dtypes(c, op);
  const Shape &x = c.in[0].shape, &dy = c.in[1].shape;
  TR_CHECK(x.rank >= 2 && dy.rank == 2 && x[0] == dy[0], op, ": x ", x.str(), " dy ", dy.str());
  const int64_t N = x[0], K = x.inner(), M = dy[1];
  cpu::check_numel(c.out[0], M * K, op, "dw");
  if (c.attrs->has_bias) cpu::check_numel(c.out[1], M, op, "db");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_weight_impl<typename decltype(tag)::type>(c, N, K, M); });
}

}  // namespace tr
