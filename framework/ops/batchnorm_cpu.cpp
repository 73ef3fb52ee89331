// BatchNorm(+ReLU) phases: shape rules and the CPU reference.
// x is [N, ..., C] (NHWC), C innermost; every kernel walks pixels in order with
// a per-channel inner loop. count = variant.global_batch * (pixels per sample).
// Statistics ("f32" tensors) are F32 or F64 (Note [CPU storage and accumulation
// types] in cpu_kernel_util.h); per-channel sums accumulate in double.
#include "framework/ops/batchnorm.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "framework/ops/cpu_kernel_util.h"
#include "framework/ops/relu.h"

namespace tr {
namespace {

using cpu::acc_t;

// Channels and pixel counts of an activation tensor [N, ..., C].
struct BnDims {
  int64_t C = 0;
  int64_t pixels = 0;   // N * H * W on this rank
  double count = 0;     // global_batch * H * W (batch * H * W when rank-local)
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
void stats_impl(const OpCall& c, const BnDims& d) {
  const S* x = c.in[0].as<S>();
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
  cpu::write_stats(c.out[0], 2 * C, s, "bn_stats", "sums");
}

template <class S>
void apply_impl(const OpCall& c, const BnDims& d) {
  using A = acc_t<S>;
  const char* op = "bn_relu_apply";
  const int64_t C = d.C;
  double* st = cpu::scratch<double>(cpu::kDoubleSlot, size_t(4 * C));
  double* sums = st;
  double* batch = st + 2 * C;
  cpu::read_stats(c.in[1], 2 * C, sums, op, "sums");
  const S* gamma = c.in[2].as<S>();
  const S* beta = c.in[3].as<S>();
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
  const S* x = c.in[0].as<S>();
  const S* res = c.n_in == 5 ? c.in[4].as<S>() : nullptr;
  S* y = c.out[0].as<S>();
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
  cpu::write_stats(c.out[1], 2 * C, batch, op, "batch");
  for (int64_t i = 0; i < 2 * C; ++i) st[i] = double(aff[i]);  // sums are no longer needed
  cpu::write_stats(c.out[2], 2 * C, st, op, "affine");
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
void bwd_reduce_impl(const OpCall& c, const BnDims& d) {
  using A = acc_t<S>;
  const char* op = "bn_relu_bwd_reduce";
  const int64_t C = d.C;
  A* mr = cpu::scratch<A>(0, size_t(2 * C));
  A* mean = mr;
  A* rstd = mr + C;
  mean_rstd(c, c.in[3], C, op, mean, rstd);
  A* aff = cpu::scratch<A>(1, size_t(2 * C));
  train_affine(c.in[1], C, op, aff);
  double* ds = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * C));  // (sum g, sum g*xhat)
  std::fill(ds, ds + 2 * C, 0.0);
  const S* dy = c.in[0].as<S>();
  const S* x = c.in[2].as<S>();
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
  S* dgamma = c.out[0].as<S>();
  S* dbeta = c.out[1].as<S>();
  for (int64_t ch = 0; ch < C; ++ch) {
    dgamma[ch] = cpu::store<S>(ds[C + ch]);
    dbeta[ch] = cpu::store<S>(ds[ch]);
  }
  cpu::write_stats(c.out[2], 2 * C, ds, op, "dsums");
}

template <class S>
void bwd_apply_impl(const OpCall& c, const BnDims& d) {
  using A = acc_t<S>;
  const char* op = "bn_relu_bwd_apply";
  const int64_t C = d.C;
  A* k = cpu::scratch<A>(0, size_t(4 * C));
  A* mean = k;
  A* rstd = k + C;
  A* m0 = k + 2 * C;  // dsums[0] / count
  A* m1 = k + 3 * C;  // dsums[1] / count
  mean_rstd(c, c.in[3], C, op, mean, rstd);
  double* ds = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * C));
  cpu::read_stats(c.in[5], 2 * C, ds, op, "dsums");
  const S* gamma = c.in[4].as<S>();
  A* aff = cpu::scratch<A>(2, size_t(2 * C));
  train_affine(c.in[1], C, op, aff);
  A* gr = cpu::scratch<A>(1, size_t(C));  // gamma * rstd
  for (int64_t ch = 0; ch < C; ++ch) {
    gr[ch] = cpu::load<A>(gamma[ch]) * rstd[ch];
    m0[ch] = A(ds[ch] / d.count);
    m1[ch] = A(ds[C + ch] / d.count);
  }
  const S* dy = c.in[0].as<S>();
  const S* x = c.in[2].as<S>();
  S* dx = c.out[0].as<S>();
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
void infer_impl(const OpCall& c, int64_t C, int64_t pixels) {
  using A = acc_t<S>;
  double* aff_d = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * C));
  cpu::read_stats(c.in[1], 2 * C, aff_d, "bn_relu_infer", "affine");
  A* aff = cpu::scratch<A>(0, size_t(2 * C));
  for (int64_t i = 0; i < 2 * C; ++i) aff[i] = A(aff_d[i]);
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
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

void check_same_dtype(const OpCall& c, const char* op, std::initializer_list<const TensorRef*> ts) {
  const DType t = c.in[0].dtype;
  for (const TensorRef* r : ts) cpu::check_dtype(*r, t, op, "T tensor");
}

void check_act_shape(const TensorRef& t, const Shape& want, const char* op, const char* what) {
  TR_CHECK(t.shape == want, op, ": ", what, " is ", t.shape.str(), ", expected ", want.str());
}

// --- shape rules ---

// x: [N, ..., C] with positive dims; returns C.
int64_t check_act(const Shape& x, const char* op, const char* what) {
  TR_USER_CHECK(x.rank >= 2, op, ": ", what, " must be [N,H,W,C] (or [N,C]), got ", x.str());
  for (int i = 0; i < x.rank; ++i)
    TR_USER_CHECK(x[i] > 0, op, ": ", what, " has a non-positive dim: ", x.str());
  return x[x.rank - 1];
}
void check_same(const Shape& a, const Shape& x, const char* op, const char* what) {
  TR_USER_CHECK(a == x, op, ": ", what, " ", a.str(), " must match x ", x.str());
}
void check_vec(const Shape& s, int64_t C, const char* op, const char* what) {
  TR_USER_CHECK(s.rank == 1 && s[0] == C, op, ": ", what, " must be [", C, "], got ", s.str());
}
void check_pair(const Shape& s, int64_t C, const char* op, const char* what) {
  TR_USER_CHECK(s.rank == 2 && s[0] == 2 && s[1] == C, op, ": ", what, " must be [2,", C, "], got ",
                s.str());
}

}  // namespace

void bn_stats_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  TR_CHECK(c.n_in == 1 && n_out == 1, "bn_stats: arity");
  const int64_t C = check_act(c.in[0], "bn_stats", "x");
  out[0] = Shape{2, C};
}

void bn_relu_apply_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "bn_relu_apply";
  if (c.n_in == 3) {  // the statistics inside: x, gamma, beta -> y, batch, affine, sums
    TR_CHECK(n_out == 4, op, ": arity");
    const Shape in[4] = {c.in[0], Shape{2, check_act(c.in[0], op, "x")}, c.in[1], c.in[2]};
    bn_relu_apply_shapes(ShapeCtx{in, 4, c.attrs, c.variant}, out, 3);
    out[3] = in[1];
    return;
  }
  TR_CHECK((c.n_in == 4 || c.n_in == 5) && n_out == 3, op, ": arity");
  const int64_t C = check_act(c.in[0], op, "x");
  if (c.n_in == 5) check_same(c.in[4], c.in[0], op, "residual");
  check_pair(c.in[1], C, op, "sums");
  check_vec(c.in[2], C, op, "gamma");
  check_vec(c.in[3], C, op, "beta");
  out[0] = c.in[0];
  out[1] = Shape{2, C};
  out[2] = Shape{2, C};
}

void bn_relu_bwd_reduce_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "bn_relu_bwd_reduce";
  if (c.n_in == 5 || c.n_in == 6) {  // the ReLU's gradient in front: a, affine, x, batch, y[, b] -> ..., g
    TR_CHECK(n_out == 4, op, ": arity");
    const Shape relu_in[3] = {c.in[0], c.in[4], c.n_in == 6 ? c.in[5] : Shape{}};
    relu_bwd_shapes(ShapeCtx{relu_in, c.n_in - 3, c.attrs, c.variant}, out + 3, 1);
    const Shape in[4] = {out[3], c.in[1], c.in[2], c.in[3]};
    bn_relu_bwd_reduce_shapes(ShapeCtx{in, 4, c.attrs, c.variant}, out, 3);
    return;
  }
  TR_CHECK(c.n_in == 4 && n_out == 3, op, ": arity");
  const Shape& x = c.in[2];
  const int64_t C = check_act(x, op, "x");
  check_same(c.in[0], x, op, "dy");
  check_pair(c.in[1], C, op, "affine");
  check_pair(c.in[3], C, op, "batch");
  out[0] = Shape{C};
  out[1] = Shape{C};
  out[2] = Shape{2, C};
}

void bn_relu_bwd_apply_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "bn_relu_bwd_apply";
  if (c.n_in == 5) {  // the reduce inside: dy, affine, x, batch, gamma -> dx, dgamma, dbeta, dsums
    TR_CHECK(n_out == 4, op, ": arity");
    bn_relu_bwd_reduce_shapes(ShapeCtx{c.in, 4, c.attrs, c.variant}, out + 1, 3);
    const Shape in[6] = {c.in[0], c.in[1], c.in[2], c.in[3], c.in[4], out[3]};
    bn_relu_bwd_apply_shapes(ShapeCtx{in, 6, c.attrs, c.variant}, out, 1);
    return;
  }
  TR_CHECK(c.n_in == 6 && n_out == 1, op, ": arity");
  const Shape& x = c.in[2];
  const int64_t C = check_act(x, op, "x");
  check_same(c.in[0], x, op, "dy");
  check_pair(c.in[1], C, op, "affine");
  check_pair(c.in[3], C, op, "batch");
  check_vec(c.in[4], C, op, "gamma");
  check_pair(c.in[5], C, op, "dsums");
  out[0] = x;
}

void bn_relu_infer_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "bn_relu_infer";
  TR_CHECK(c.n_in == 2 && n_out == 1, op, ": arity");
  const int64_t C = check_act(c.in[0], op, "x");
  check_pair(c.in[1], C, op, "affine");
  out[0] = c.in[0];
}

void bn_fold_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "bn_fold";
  TR_CHECK(c.n_in == 3 && n_out == 1, op, ": arity");
  TR_USER_CHECK(c.in[0].rank == 1 && c.in[0][0] > 0, op, ": gamma must be [C], got ", c.in[0].str());
  const int64_t C = c.in[0][0];
  check_vec(c.in[1], C, op, "beta");
  check_pair(c.in[2], C, op, "running");
  out[0] = Shape{2, C};
}

// --- kernels ---

void bn_stats_cpu(const OpCall& c) {
  const char* op = "bn_stats";
  cpu::check_arity(c, op, 1, 1, 1, 1);
  const BnDims d = bn_dims(c, c.in[0], op);
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { stats_impl<typename decltype(tag)::type>(c, d); });
}

void bn_relu_apply_cpu(const OpCall& c) {
  const char* op = "bn_relu_apply";
  if (c.n_in == 3) {  // the statistics inside (Note [one kernel per BatchNorm]): BnStats, then the apply
    cpu::check_arity(c, op, 3, 3, 4, 4);
    const OpCall stats{c.in, 1, &c.out[3], 1, c.attrs, c.variant, c.env};
    bn_stats_cpu(stats);
    const TensorRef in[4] = {c.in[0], c.out[3], c.in[1], c.in[2]};
    bn_relu_apply_cpu(OpCall{in, 4, c.out, 3, c.attrs, c.variant, c.env});
    return;
  }
  cpu::check_arity(c, op, 4, 5, 3, 3);
  const BnDims d = bn_dims(c, c.in[0], op);
  check_same_dtype(c, op, {&c.in[2], &c.in[3], &c.out[0]});
  if (c.n_in == 5) {
    check_same_dtype(c, op, {&c.in[4]});
    check_act_shape(c.in[4], c.in[0].shape, op, "residual");
  }
  cpu::check_numel(c.in[2], d.C, op, "gamma");
  cpu::check_numel(c.in[3], d.C, op, "beta");
  check_act_shape(c.out[0], c.in[0].shape, op, "y");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { apply_impl<typename decltype(tag)::type>(c, d); });
}

void bn_relu_bwd_reduce_cpu(const OpCall& c) {
  const char* op = "bn_relu_bwd_reduce";
  if (c.n_in == 5 || c.n_in == 6) {  // the ReLU's gradient in front: ReluBwd, then the reduce of its g
    cpu::check_arity(c, op, 5, 6, 4, 4);
    const TensorRef relu_in[3] = {c.in[0], c.in[4], c.n_in == 6 ? c.in[5] : TensorRef{}};
    relu_bwd_cpu(OpCall{relu_in, c.n_in - 3, &c.out[3], 1, c.attrs, c.variant, c.env});
    const TensorRef in[4] = {c.out[3], c.in[1], c.in[2], c.in[3]};
    bn_relu_bwd_reduce_cpu(OpCall{in, 4, c.out, 3, c.attrs, c.variant, c.env});
    return;
  }
  cpu::check_arity(c, op, 4, 4, 3, 3);
  const BnDims d = bn_dims(c, c.in[2], op);
  check_same_dtype(c, op, {&c.in[2], &c.out[0], &c.out[1]});
  check_act_shape(c.in[0], c.in[2].shape, op, "dy");
  cpu::check_numel(c.out[0], d.C, op, "dgamma");
  cpu::check_numel(c.out[1], d.C, op, "dbeta");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_reduce_impl<typename decltype(tag)::type>(c, d); });
}

void bn_relu_bwd_apply_cpu(const OpCall& c) {
  const char* op = "bn_relu_bwd_apply";
  if (c.n_in == 5) {  // the reduce inside (Note [one kernel per BatchNorm]): the reduce, then the apply
    cpu::check_arity(c, op, 5, 5, 4, 4);
    bn_relu_bwd_reduce_cpu(OpCall{c.in, 4, c.out + 1, 3, c.attrs, c.variant, c.env});
    const TensorRef in[6] = {c.in[0], c.in[1], c.in[2], c.in[3], c.in[4], c.out[3]};
    bn_relu_bwd_apply_cpu(OpCall{in, 6, c.out, 1, c.attrs, c.variant, c.env});
    return;
  }
  cpu::check_arity(c, op, 6, 6, 1, 1);
  const BnDims d = bn_dims(c, c.in[2], op);
  check_same_dtype(c, op, {&c.in[2], &c.in[4], &c.out[0]});
  check_act_shape(c.in[0], c.in[2].shape, op, "dy");
  check_act_shape(c.out[0], c.in[2].shape, op, "dx");
  cpu::check_numel(c.in[4], d.C, op, "gamma");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_apply_impl<typename decltype(tag)::type>(c, d); });
}

void bn_relu_infer_cpu(const OpCall& c) {
  const char* op = "bn_relu_infer";
  cpu::check_arity(c, op, 2, 2, 1, 1);
  const Shape& x = c.in[0].shape;
  TR_CHECK(x.rank >= 2, op, ": x must be [N,...,C], got ", x.str());
  const int64_t C = x[x.rank - 1];
  check_same_dtype(c, op, {&c.out[0]});
  check_act_shape(c.out[0], x, op, "y");
  cpu::dispatch_float(c.in[0].dtype, op,
                      [&](auto tag) { infer_impl<typename decltype(tag)::type>(c, C, x.numel() / C); });
}

void bn_fold_cpu(const OpCall& c) {
  const char* op = "bn_fold";
  cpu::check_arity(c, op, 3, 3, 1, 1);
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
