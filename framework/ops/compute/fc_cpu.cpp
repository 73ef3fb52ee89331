// Fully connected layer: shape rules and the CPU reference (GEMMs; the forward
// and data gradient one per sample, Note [batch-invariant CPU GEMMs]).
//   fwd:    y[R,M]  = scale * x[R,K] w[M,K]^T (+ b)     (the bias is not scaled)
//   data:   dx[R,K] = scale * dy[R,M] w[M,K]
//   weight: dw[M,K] = scale * dy^T x,  db[M] = sum_r dy  (db accumulates in double)
// R = numel(x) / K rows (fc.h); the per-sample GEMMs are one per row.
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

// x[N,K..], or x[..,K] with fc_last_dim; returns K.
int64_t features_of(const Shape& x, const OpAttrs& a, const char* op, const char* what) {
  TR_USER_CHECK(x.rank >= 2, op, ": ", what,
                a.fc_last_dim ? " must be [..,K] (rank >= 2), got " : " must be [N,K..] (rank >= 2), got ", x.str());
  check_positive_dims(x, op, what);
  return a.fc_last_dim ? x[x.rank - 1] : x.inner();
}

// dy[N,M], or dy[..,M] whose leading dims are x's with fc_last_dim.
void check_dy(const Shape& dy, const Shape& x, const OpAttrs& a, const char* op) {
  check_positive_dims(dy, op, "dy");
  if (!a.fc_last_dim) {
    TR_USER_CHECK(dy.rank == 2, op, ": dy must be [N,M], got ", dy.str());
    TR_USER_CHECK(x[0] == dy[0], op, ": x ", x.str(), " and dy ", dy.str(), " differ in N");
    return;
  }
  bool same = dy.rank == x.rank;
  for (int i = 0; same && i + 1 < x.rank; ++i) same = dy[i] == x[i];
  TR_USER_CHECK(same, op, ": dy ", dy.str(), " and x ", x.str(), " differ in their leading dims");
}

// R rows of K features and M outputs, from x (or dx) and w, checked against y (or dy).
struct Rows {
  int64_t R, K, M;
};

Rows rows_of(const TensorRef& x, const Shape& w, const TensorRef& y, const char* op) {
  TR_CHECK(w.rank == 2 && w[1] > 0 && x.shape.numel() % w[1] == 0, op, ": x ", x.shape.str(), " w ", w.str());
  const Rows r{x.shape.numel() / w[1], w[1], w[0]};
  cpu::check_numel(y, r.R * r.M, op, "y or dy");
  return r;
}

}  // namespace

void fc_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "fc_fwd";
  const Shape &x = c.in[0], &w = c.in[1];
  const int64_t K = features_of(x, *c.attrs, op, "x");
  check_w(w, op);
  TR_USER_CHECK(K == w[1], op, ": x ", x.str(), c.attrs->fc_last_dim ? " has " : " flattens to ", K,
                " features but w is ", w.str());
  if (c.attrs->has_bias)
    TR_USER_CHECK(c.in[2].rank == 1 && c.in[2][0] == w[0], op, ": b must be [", w[0], "], got ", c.in[2].str());
  out[0] = c.attrs->fc_last_dim ? x.with_last(w[0]) : Shape{x[0], w[0]};
}

// dx has the shape of the forward x (a view [N,K..] of the flattened [N,K]).
void fc_bwd_data_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "fc_bwd_data";
  const Shape &dy = c.in[0], &w = c.in[1], &x = c.in[2];
  check_w(w, op);
  const int64_t K = features_of(x, *c.attrs, op, "x");
  check_dy(dy, x, *c.attrs, op);
  TR_USER_CHECK(dy[dy.rank - 1] == w[0], op, ": dy ", dy.str(), " does not match w ", w.str());
  TR_USER_CHECK(K == w[1], op, ": x ", x.str(), " is not the input of w ", w.str());
  out[0] = x;
}

void fc_bwd_weight_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "fc_bwd_weight";
  const Shape &x = c.in[0], &dy = c.in[1];
  const int64_t K = features_of(x, *c.attrs, op, "x");
  check_dy(dy, x, *c.attrs, op);
  const int64_t M = dy[dy.rank - 1];
  out[0] = Shape{M, K};
  if (c.attrs->has_bias) out[1] = Shape{M};
}

// --- kernels ---

void fc_fwd_cpu(const OpCall& c) {
  const char* op = "fc_fwd";
  check_operands(OpKind::FcFwd, c);
  check_dtypes(c, op);
  const Rows r = rows_of(c.in[0], c.in[1].shape, c.out[0], op);
  if (c.attrs->has_bias) cpu::check_numel(c.in[2], r.M, op, "b");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, r.R, r.K, r.M); });
}

void fc_bwd_data_cpu(const OpCall& c) {
  const char* op = "fc_bwd_data";
  const OpOperands named(OpKind::FcBwdData, c);  // dy, w, x (dx's shape only) -> dx
  check_dtypes(c, op);
  const Rows r = rows_of(c.out[0], c.in[1].shape, c.in[0], op);
  cpu::dispatch_float(c.in[0].dtype, op,
                      [&](auto tag) { bwd_data_impl<typename decltype(tag)::type>(c, r.R, r.K, r.M); });
}

void fc_bwd_weight_cpu(const OpCall& c) {
  const char* op = "fc_bwd_weight";
  check_operands(OpKind::FcBwdWeight, c);
  check_dtypes(c, op);
  const Rows r = rows_of(c.in[0], c.out[0].shape, c.in[1], op);
  if (c.attrs->has_bias) cpu::check_numel(c.out[1], r.M, op, "db");
  cpu::dispatch_float(c.in[0].dtype, op,
                      [&](auto tag) { bwd_weight_impl<typename decltype(tag)::type>(c, r.R, r.K, r.M); });
}

}  // namespace tr
