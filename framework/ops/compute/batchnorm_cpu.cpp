// BatchNorm(+ReLU) phases: shape rules and the CPU reference.
// x is [N, ..., C] (NHWC), C innermost; every kernel walks pixels in order with
// a per-channel inner loop. count = variant.global_batch * (pixels per sample).
// Statistics ("f32" tensors) are F32 or F64 (Note [CPU storage and accumulation
// types] in cpu_kernel_util.h); per-channel sums accumulate in double.
#include "framework/ops/compute/batchnorm.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "framework/ops/compute/relu.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

// Channels and pixel counts of an activation tensor [N, ..., C].
struct BnDims {
  int64_t C = 0;
  int64_t pixels = 0;  // N * H * W on this rank
  double count = 0;    // global_batch * H * W (batch * H * W when rank-local)
};

BnDims bn_dims(const OpCall& c, const TensorRef& x, const char* op) {
  TR_CHECK(x.shape.rank >= 2, op, ": x must be [N,...,C], got ", x.shape.str());
  BnDims d;
  d.C = x.shape[x.shape.rank - 1];
  d.pixels = x.shape.numel() / d.C;
  TR_CHECK(c.variant != nullptr && c.variant->global_batch > 0, op, ": needs variant.global_batch");
  const bool local = c.attrs != nullptr && c.attrs->bn_rank_local;
  d.count = local ? double(d.pixels) : double(c.variant->global_batch) * double(x.shape.inner() / d.C);
  return d;
}

inline double rstd_of(double var, float eps) { return 1.0 / std::sqrt(var + double(eps)); }

// The ReLU's input: the forward clamps it, the backward's mask recomputes it.
template <class A>
inline A bn_pre_relu(A scale, A shift, A x) {
  return scale * x + shift;
}

template <class S>
void stats_impl(const BnOperands& o, const BnDims& d) {
  const S* x = o.x->as<S>();
  const int64_t C = d.C;
  double* s = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * C));  // (sum x, sum x^2)
  std::fill(s, s + 2 * C, 0.0);
  double* s1 = s;
  double* s2 = s + C;
  for (int64_t p = 0; p < d.pixels; ++p) {
    const S* row = x + p * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      const double v = cpu::load<double>(row[ch]);
      s1[ch] += v;
      s2[ch] += v * v;
    }
  }
  cpu::write_stats(*o.sums, 2 * C, s, "bn_stats", "sums");
}

template <class S>
void apply_impl(const OpCall& c, const BnOperands& o, const BnDims& d) {
  using A = acc_t<S>;
  const char* op = "bn_relu_apply";
  const int64_t C = d.C;
  double* st = cpu::scratch<double>(cpu::kDoubleSlot, size_t(4 * C));
  double* sums = st;
  double* batch = st + 2 * C;
  cpu::read_stats(*o.sums, 2 * C, sums, op, "sums");
  const S* gamma = o.gamma->as<S>();
  const S* beta = o.beta->as<S>();
  A* aff = cpu::scratch<A>(0, size_t(2 * C));  // y = relu(scale * x + shift)
  for (int64_t ch = 0; ch < C; ++ch) {
    const double mean = sums[ch] / d.count;
    const double var = std::max(0.0, sums[C + ch] / d.count - mean * mean);
    batch[ch] = mean;
    batch[C + ch] = var;
    const double scale = cpu::load<double>(gamma[ch]) * rstd_of(var, c.attrs->eps);
    aff[ch] = A(scale);
    aff[C + ch] = A(cpu::load<double>(beta[ch]) - mean * scale);
  }
  const S* x = o.x->as<S>();
  const S* res = o.residual != nullptr ? o.residual->as<S>() : nullptr;
  S* y = o.y->as<S>();
  const bool relu = c.attrs->relu;
  for (int64_t p = 0; p < d.pixels; ++p) {
    const S* xr = x + p * C;
    S* yr = y + p * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      A v = bn_pre_relu(aff[ch], aff[C + ch], cpu::load<A>(xr[ch]));
      if (res != nullptr) v = cpu::load<A>(cpu::store<S>(v + cpu::load<A>(res[p * C + ch])));  // as Add rounds
      if (relu) v = v > A(0) ? v : A(0);
      yr[ch] = cpu::store<S>(v);
    }
  }
  cpu::write_stats(*o.batch, 2 * C, batch, op, "batch");
  for (int64_t i = 0; i < 2 * C; ++i) st[i] = double(aff[i]);  // sums are no longer needed
  cpu::write_stats(*o.affine, 2 * C, st, op, "affine");
}

// Per-channel mean and rstd (in A) from the batch statistics tensor.
template <class A>
void mean_rstd(const OpCall& c, const TensorRef& batch_t, int64_t C, const char* op, A* mean, A* rstd) {
  double* batch = cpu::scratch<double>(cpu::kDoubleSlot + 1, size_t(2 * C));
  cpu::read_stats(batch_t, 2 * C, batch, op, "batch");
  for (int64_t ch = 0; ch < C; ++ch) {
    mean[ch] = A(batch[ch]);
    rstd[ch] = A(rstd_of(batch[C + ch], c.attrs->eps));
  }
}

// The forward's (scale, shift) per channel, in A (exact: they were A values).
template <class A>
void train_affine(const TensorRef& t, int64_t C, const char* op, A* aff) {
  double* v = cpu::scratch<double>(cpu::kDoubleSlot + 2, size_t(2 * C));
  cpu::read_stats(t, 2 * C, v, op, "affine");
  for (int64_t i = 0; i < 2 * C; ++i) aff[i] = A(v[i]);
}

// g = dy * (pre > 0), pre = the ReLU's input (a select: masked NaN/Inf
// gradients become 0, like PyTorch's threshold_backward), or dy when relu is off.
template <class A>
inline A relu_grad(A dy, A pre, bool relu) {
  return (!relu || pre > A(0)) ? dy : A(0);
}

template <class S>
void bwd_reduce_impl(const OpCall& c, const BnOperands& o, const BnDims& d) {
  using A = acc_t<S>;
  const char* op = "bn_relu_bwd_reduce";
  const int64_t C = d.C;
  A* mr = cpu::scratch<A>(0, size_t(2 * C));
  A* mean = mr;
  A* rstd = mr + C;
  mean_rstd(c, *o.batch, C, op, mean, rstd);
  A* aff = cpu::scratch<A>(1, size_t(2 * C));
  train_affine(*o.affine, C, op, aff);
  double* ds = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * C));  // (sum g, sum g*xhat)
  std::fill(ds, ds + 2 * C, 0.0);
  const S* dy = o.dy->as<S>();
  const S* x = o.x->as<S>();
  const bool relu = c.attrs->relu;
  for (int64_t p = 0; p < d.pixels; ++p) {
    const int64_t o = p * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      const A xv = cpu::load<A>(x[o + ch]);
      const A g = relu_grad(cpu::load<A>(dy[o + ch]), bn_pre_relu(aff[ch], aff[C + ch], xv), relu);
      const A xhat = (xv - mean[ch]) * rstd[ch];
      ds[ch] += double(g);
      ds[C + ch] += double(g * xhat);
    }
  }
  S* dgamma = o.dgamma->as<S>();
  S* dbeta = o.dbeta->as<S>();
  for (int64_t ch = 0; ch < C; ++ch) {
    dgamma[ch] = cpu::store<S>(ds[C + ch]);
    dbeta[ch] = cpu::store<S>(ds[ch]);
  }
  cpu::write_stats(*o.dsums, 2 * C, ds, op, "dsums");
}

template <class S>
void bwd_apply_impl(const OpCall& c, const BnOperands& o, const BnDims& d) {
  using A = acc_t<S>;
  const char* op = "bn_relu_bwd_apply";
  const int64_t C = d.C;
  A* k = cpu::scratch<A>(0, size_t(4 * C));
  A* mean = k;
  A* rstd = k + C;
  A* m0 = k + 2 * C;  // dsums[0] / count
  A* m1 = k + 3 * C;  // dsums[1] / count
  mean_rstd(c, *o.batch, C, op, mean, rstd);
  double* ds = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * C));
  cpu::read_stats(*o.dsums, 2 * C, ds, op, "dsums");
  const S* gamma = o.gamma->as<S>();
  A* aff = cpu::scratch<A>(2, size_t(2 * C));
  train_affine(*o.affine, C, op, aff);
  A* gr = cpu::scratch<A>(1, size_t(C));  // gamma * rstd
  for (int64_t ch = 0; ch < C; ++ch) {
    gr[ch] = cpu::load<A>(gamma[ch]) * rstd[ch];
    m0[ch] = A(ds[ch] / d.count);
    m1[ch] = A(ds[C + ch] / d.count);
  }
  const S* dy = o.dy->as<S>();
  const S* x = o.x->as<S>();
  S* dx = o.dx->as<S>();
  const bool relu = c.attrs->relu;
  for (int64_t p = 0; p < d.pixels; ++p) {
    const int64_t o = p * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      const A xv = cpu::load<A>(x[o + ch]);
      const A g = relu_grad(cpu::load<A>(dy[o + ch]), bn_pre_relu(aff[ch], aff[C + ch], xv), relu);
      const A xhat = (xv - mean[ch]) * rstd[ch];
      dx[o + ch] = cpu::store<S>(gr[ch] * (g - m0[ch] - xhat * m1[ch]));
    }
  }
}

template <class S>
void infer_impl(const OpCall& c, const BnOperands& o, int64_t pixels) {
  using A = acc_t<S>;
  const int64_t C = o.C;
  double* aff_d = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * C));
  cpu::read_stats(*o.affine, 2 * C, aff_d, "bn_relu_infer", "affine");
  A* aff = cpu::scratch<A>(0, size_t(2 * C));
  for (int64_t i = 0; i < 2 * C; ++i) aff[i] = A(aff_d[i]);
  const S* x = o.x->as<S>();
  S* y = o.y->as<S>();
  const bool relu = c.attrs->relu;
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t o = p * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      A v = aff[ch] * cpu::load<A>(x[o + ch]) + aff[C + ch];
      if (relu) v = v > A(0) ? v : A(0);
      y[o + ch] = cpu::store<S>(v);
    }
  }
}

// --- shape rules ---

// x: [N, ..., C] with positive dims; returns C.
int64_t check_act(const Shape& x, const char* op, const char* what) {
  TR_USER_CHECK(x.rank >= 2, op, ": ", what, " must be [N,H,W,C] (or [N,C]), got ", x.str());
  check_positive_dims(x, op, what);
  return x[x.rank - 1];
}
void check_same(const Shape& a, const Shape& x, const char* op, const char* what) {
  TR_USER_CHECK(a == x, op, ": ", what, " ", a.str(), " must match x ", x.str());
}
void check_vec(const Shape& s, int64_t C, const char* op, const char* what) {
  TR_USER_CHECK(s.rank == 1 && s[0] == C, op, ": ", what, " must be [", C, "], got ", s.str());
}
void check_pair(const Shape& s, int64_t C, const char* op, const char* what) {
  TR_USER_CHECK(s.rank == 2 && s[0] == 2 && s[1] == C, op, ": ", what, " must be [2,", C, "], got ", s.str());
}

}  // namespace

void bn_stats_shapes(const ShapeCtx& c, Shape* out, int) {
  const int64_t C = check_act(c.in[0], "bn_stats", "x");
  out[0] = Shape{2, C};
}

void bn_relu_apply_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "bn_relu_apply";
  const int64_t C = check_act(c.in[0], op, "x");
  check_pair(c.in[1], C, op, "sums");
  check_vec(c.in[2], C, op, "gamma");
  check_vec(c.in[3], C, op, "beta");
  out[0] = c.in[0];
  out[1] = Shape{2, C};
  out[2] = Shape{2, C};
}

void bn_stats_relu_apply_shapes(const ShapeCtx& c, Shape* out, int) {
  const Shape in[4] = {c.in[0], Shape{2, check_act(c.in[0], "bn_stats_relu_apply", "x")}, c.in[1], c.in[2]};
  bn_relu_apply_shapes(ShapeCtx{in, 4, c.attrs, c.variant}, out, 3);
  out[3] = in[1];  // sums
}

void bn_add_relu_apply_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  bn_relu_apply_shapes(c, out, n_out);
  check_same(c.in[4], c.in[0], "bn_add_relu_apply", "residual");
}

void bn_relu_bwd_reduce_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "bn_relu_bwd_reduce";
  const Shape& x = c.in[2];
  const int64_t C = check_act(x, op, "x");
  check_same(c.in[0], x, op, "dy");
  check_pair(c.in[1], C, op, "affine");
  check_pair(c.in[3], C, op, "batch");
  out[0] = Shape{C};
  out[1] = Shape{C};
  out[2] = Shape{2, C};
}

namespace {

// a, affine, x, batch, y[, b] -> dgamma, dbeta, dsums, g: the ReLU's gradient
// g of a, y (and b), then the reduce of g.
void reduce_with_relu_grad_shapes(const ShapeCtx& c, const Shape* b, Shape* out) {
  const Shape relu_in[3] = {c.in[0], c.in[4], b != nullptr ? *b : Shape{}};
  if (b != nullptr) relu_bwd_add_shapes(ShapeCtx{relu_in, 3, c.attrs, c.variant}, out + 3, 1);
  else relu_bwd_shapes(ShapeCtx{relu_in, 2, c.attrs, c.variant}, out + 3, 1);
  const Shape in[4] = {out[3], c.in[1], c.in[2], c.in[3]};
  bn_relu_bwd_reduce_shapes(ShapeCtx{in, 4, c.attrs, c.variant}, out, 3);
}

}  // namespace

void relu_bwd_bn_reduce_shapes(const ShapeCtx& c, Shape* out, int) { reduce_with_relu_grad_shapes(c, nullptr, out); }

void relu_bwd_add_bn_reduce_shapes(const ShapeCtx& c, Shape* out, int) {
  reduce_with_relu_grad_shapes(c, &c.in[5], out);
}

void bn_relu_bwd_apply_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "bn_relu_bwd_apply";
  const Shape& x = c.in[2];
  const int64_t C = check_act(x, op, "x");
  check_same(c.in[0], x, op, "dy");
  check_pair(c.in[1], C, op, "affine");
  check_pair(c.in[3], C, op, "batch");
  check_vec(c.in[4], C, op, "gamma");
  check_pair(c.in[5], C, op, "dsums");
  out[0] = x;
}

// dy, affine, x, batch, gamma -> dx, dgamma, dbeta, dsums: the reduce, then the apply.
void bn_relu_bwd_reduce_apply_shapes(const ShapeCtx& c, Shape* out, int) {
  bn_relu_bwd_reduce_shapes(ShapeCtx{c.in, 4, c.attrs, c.variant}, out + 1, 3);
  const Shape in[6] = {c.in[0], c.in[1], c.in[2], c.in[3], c.in[4], out[3]};
  bn_relu_bwd_apply_shapes(ShapeCtx{in, 6, c.attrs, c.variant}, out, 1);
}

void bn_relu_infer_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "bn_relu_infer";
  const int64_t C = check_act(c.in[0], op, "x");
  check_pair(c.in[1], C, op, "affine");
  out[0] = c.in[0];
}

void bn_fold_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "bn_fold";
  TR_USER_CHECK(c.in[0].rank == 1 && c.in[0][0] > 0, op, ": gamma must be [C], got ", c.in[0].str());
  const int64_t C = c.in[0][0];
  check_vec(c.in[1], C, op, "beta");
  check_pair(c.in[2], C, op, "running");
  out[0] = Shape{2, C};
}

// --- kernels ---

namespace {

// Which BnOperands field each operand name fills, on each side.
using BnField = const TensorRef* BnOperands::*;
struct BnName {
  std::string_view name;
  BnField field;
};
constexpr BnName kBnInputs[] = {
    {"x", &BnOperands::x},           {"sums", &BnOperands::sums},         {"gamma", &BnOperands::gamma},
    {"beta", &BnOperands::beta},     {"residual", &BnOperands::residual}, {"dy", &BnOperands::dy},
    {"a", &BnOperands::a},           {"y", &BnOperands::relu_y},          {"b", &BnOperands::b},
    {"affine", &BnOperands::affine}, {"batch", &BnOperands::batch},       {"dsums", &BnOperands::dsums}};
constexpr BnName kBnOutputs[] = {
    {"y", &BnOperands::y},         {"batch", &BnOperands::batch},   {"affine", &BnOperands::affine},
    {"sums", &BnOperands::sums},   {"dgamma", &BnOperands::dgamma}, {"dbeta", &BnOperands::dbeta},
    {"dsums", &BnOperands::dsums}, {"g", &BnOperands::g},           {"dx", &BnOperands::dx}};

template <size_t N>
void fill(BnOperands& r, const BnName (&names)[N], OpKind kind, Side side, const TensorRef* refs) {
  int i = 0;
  for (const OperandName& o : operand_names(kind, side)) {
    const BnName* hit = nullptr;
    for (const BnName& n : names)
      if (n.name == o.name) hit = &n;
    TR_CHECK(hit != nullptr, op_name(kind), ": operand ", o.name, " is not a BatchNorm operand");
    r.*(hit->field) = &refs[i++];
  }
}

}  // namespace

BnOperands bn_operands(OpKind kind, const OpCall& c) {
  const std::string op(op_name(kind));
  const OpOperands named(kind, c);  // checks the counts
  BnOperands r;
  fill(r, kBnInputs, kind, Side::In, c.in);
  fill(r, kBnOutputs, kind, Side::Out, c.out);
  TR_CHECK(r.x != nullptr, op, ": no x");
  const TensorRef& x = *r.x;
  TR_CHECK(x.shape.rank >= 2 && x.shape[x.shape.rank - 1] > 0, op, ": x must be [N,...,C], got ", x.shape.str());
  TR_CHECK(is_float(x.dtype), op, ": x is ", dtype_name(x.dtype), ", not a float type");
  r.C = x.shape[x.shape.rank - 1];
  for (auto [t, what] : {std::pair{r.y, "y"},
                         {r.residual, "residual"},
                         {r.dy, "dy"},
                         {r.a, "a"},
                         {r.relu_y, "y"},
                         {r.b, "b"},
                         {r.g, "g"},
                         {r.dx, "dx"}})
    if (t != nullptr)
      TR_CHECK(t->dtype == x.dtype && t->shape == x.shape, op, ": ", what, " is ", dtype_name(t->dtype), t->shape.str(),
               ", expected x's ", dtype_name(x.dtype), x.shape.str());
  for (auto [t, what] : {std::pair{r.gamma, "gamma"}, {r.beta, "beta"}, {r.dgamma, "dgamma"}, {r.dbeta, "dbeta"}})
    if (t != nullptr)
      TR_CHECK(t->dtype == x.dtype && t->shape.numel() == r.C, op, ": ", what, " is ", dtype_name(t->dtype),
               t->shape.str(), ", expected ", dtype_name(x.dtype), " with C = ", r.C, " elements");
  for (auto [t, what] : {std::pair{r.sums, "sums"}, {r.batch, "batch"}, {r.affine, "affine"}, {r.dsums, "dsums"}})
    if (t != nullptr)
      TR_CHECK((t->dtype == DType::F32 || t->dtype == DType::F64) && t->shape.numel() == 2 * r.C, op, ": ", what,
               " is ", dtype_name(t->dtype), t->shape.str(), ", expected f32 or f64 with 2*C = ", 2 * r.C, " elements");
  return r;
}

namespace {

template <class F>
void on_float(const BnOperands& o, const char* op, F&& f) {
  cpu::dispatch_float(o.x->dtype, op, [&](auto tag) { f(typename decltype(tag)::type{}); });
}

void stats(const OpCall& c, const BnOperands& o, const char* op) {
  const BnDims d = bn_dims(c, *o.x, op);
  on_float(o, op, [&](auto s) { stats_impl<decltype(s)>(o, d); });
}

void apply(const OpCall& c, const BnOperands& o, const char* op) {
  const BnDims d = bn_dims(c, *o.x, op);
  on_float(o, op, [&](auto s) { apply_impl<decltype(s)>(c, o, d); });
}

void bwd_reduce(const OpCall& c, const BnOperands& o, const char* op) {
  const BnDims d = bn_dims(c, *o.x, op);
  on_float(o, op, [&](auto s) { bwd_reduce_impl<decltype(s)>(c, o, d); });
}

void bwd_apply(const OpCall& c, const BnOperands& o, const char* op) {
  const BnDims d = bn_dims(c, *o.x, op);
  on_float(o, op, [&](auto s) { bwd_apply_impl<decltype(s)>(c, o, d); });
}

// The ReLU's gradient g of a, y (and b) as ReluBwd / ReluBwdAdd store it, then
// the reduce of g (Note [the ReLU's gradient in the reduce]): the two ops apart.
void relu_grad_then_reduce(const OpCall& c, const BnOperands& o, const char* op) {
  const TensorRef relu_in[3] = {*o.a, *o.relu_y, o.b != nullptr ? *o.b : TensorRef{}};
  const OpCall relu{relu_in, o.b != nullptr ? 3 : 2, o.g, 1, c.attrs, c.variant, c.env};
  if (o.b != nullptr) relu_bwd_add_cpu(relu);
  else relu_bwd_cpu(relu);
  BnOperands reduce = o;
  reduce.dy = o.g;
  bwd_reduce(c, reduce, op);
}

}  // namespace

void bn_stats_cpu(const OpCall& c) { stats(c, bn_operands(OpKind::BnStats, c), "bn_stats"); }

void bn_relu_apply_cpu(const OpCall& c) { apply(c, bn_operands(OpKind::BnReluApply, c), "bn_relu_apply"); }

void bn_add_relu_apply_cpu(const OpCall& c) { apply(c, bn_operands(OpKind::BnAddReluApply, c), "bn_add_relu_apply"); }

// The statistics inside (Note [one kernel per BatchNorm]): BnStats, then the apply.
void bn_stats_relu_apply_cpu(const OpCall& c) {
  const BnOperands o = bn_operands(OpKind::BnStatsReluApply, c);
  stats(c, o, "bn_stats_relu_apply");
  apply(c, o, "bn_stats_relu_apply");
}

void bn_relu_bwd_reduce_cpu(const OpCall& c) {
  bwd_reduce(c, bn_operands(OpKind::BnReluBwdReduce, c), "bn_relu_bwd_reduce");
}

void relu_bwd_bn_reduce_cpu(const OpCall& c) {
  relu_grad_then_reduce(c, bn_operands(OpKind::ReluBwdBnReduce, c), "relu_bwd_bn_reduce");
}

void relu_bwd_add_bn_reduce_cpu(const OpCall& c) {
  relu_grad_then_reduce(c, bn_operands(OpKind::ReluBwdAddBnReduce, c), "relu_bwd_add_bn_reduce");
}

void bn_relu_bwd_apply_cpu(const OpCall& c) {
  bwd_apply(c, bn_operands(OpKind::BnReluBwdApply, c), "bn_relu_bwd_apply");
}

// The reduce inside (Note [one kernel per BatchNorm]): the reduce, then the apply.
void bn_relu_bwd_reduce_apply_cpu(const OpCall& c) {
  const BnOperands o = bn_operands(OpKind::BnReluBwdReduceApply, c);
  bwd_reduce(c, o, "bn_relu_bwd_reduce_apply");
  bwd_apply(c, o, "bn_relu_bwd_reduce_apply");
}

void bn_relu_infer_cpu(const OpCall& c) {
  const BnOperands o = bn_operands(OpKind::BnReluInfer, c);
  const int64_t pixels = o.x->shape.numel() / o.C;
  on_float(o, "bn_relu_infer", [&](auto s) { infer_impl<decltype(s)>(c, o, pixels); });
}

void bn_fold_cpu(const OpCall& c) {
  const char* op = "bn_fold";
  const OpOperands named(OpKind::BnFold, c);
  const int64_t C = c.in[0].shape.numel();
  double* v = cpu::scratch<double>(cpu::kDoubleSlot, size_t(6 * C));
  double* gamma = v;
  double* beta = v + C;
  double* running = v + 2 * C;  // (mean, var)
  double* aff = v + 4 * C;      // (scale, shift)
  cpu::read_stats(c.in[0], C, gamma, op, "gamma");
  cpu::read_stats(c.in[1], C, beta, op, "beta");
  cpu::read_stats(c.in[2], 2 * C, running, op, "running");
  for (int64_t ch = 0; ch < C; ++ch) {
    const double scale = gamma[ch] * rstd_of(running[C + ch], c.attrs->eps);
    aff[ch] = scale;
    aff[C + ch] = beta[ch] - running[ch] * scale;
  }
  cpu::write_stats(c.out[0], 2 * C, aff, op, "affine");
}

}  // namespace tr
