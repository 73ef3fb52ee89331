// Causal self-attention: shape rules and the CPU reference (the plain
// softmax(QK^T / sqrt(d) + mask) V, in double). Semantics: framework/ops/compute/attention.h.
#include <cmath>
#include <limits>

#include "framework/ops/compute/attention.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

struct Dims {
  int64_t B = 0, T = 0, C = 0, H = 0, d = 0;
};

Dims dims_of(const Shape& qkv, int heads) {
  const int64_t C = qkv[2] / 3;
  TR_CHECK(qkv.rank == 3 && heads > 0 && C % heads == 0, "attention: qkv ", qkv.str(), " with ", heads, " heads");
  return {qkv[0], qkv[1], C, heads, C / heads};
}

// The checks both shape rules make of qkv and the heads.
Dims check_qkv(const Shape& qkv, int heads, const char* op) {
  TR_USER_CHECK(qkv.rank == 3, op, ": qkv is ", qkv.str(), ", expected [B,T,3C]");
  check_positive_dims(qkv, op, "qkv");
  TR_USER_CHECK(qkv[2] % 3 == 0, op, ": qkv's last dim ", qkv[2], " is not 3C (a multiple of 3)");
  const int64_t C = qkv[2] / 3;
  TR_USER_CHECK(heads > 0 && C % heads == 0, op, ": ", heads, " heads do not divide the width ", C);
  bool supported = false;
  for (int d : kAttentionHeadDims) supported = supported || C / heads == d;
  TR_USER_CHECK(supported, op, ": head dim ", C / heads, " (width ", C, " / ", heads,
                " heads) is not one of 8, 16, 32, 64, 128");
  return dims_of(qkv, heads);
}

// Element e of head h's q, k or v (part 0, 1, 2) of token t in sample b.
template <class S>
double at(const S* qkv, const Dims& d, int64_t b, int64_t t, int part, int64_t h, int64_t e) {
  return cpu::load<double>(qkv[(b * d.T + t) * 3 * d.C + part * d.C + h * d.d + e]);
}

template <class S>
double dot_qk(const S* qkv, const Dims& d, int64_t b, int64_t h, int64_t i, int64_t j) {
  double s = 0;
  for (int64_t e = 0; e < d.d; ++e) s += at(qkv, d, b, i, 0, h, e) * at(qkv, d, b, j, 1, h, e);
  return s / std::sqrt(double(d.d));
}

template <class S>
void fwd_impl(const OpCall& c, const Dims& d) {
  const S* qkv = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  const int64_t rows = d.B * d.H * d.T;
  double* lse = cpu::scratch<double>(cpu::kDoubleSlot, size_t(rows));
  double* p = cpu::scratch<double>(cpu::kDoubleSlot + 1, size_t(d.T));
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t i = 0; i < d.T; ++i) {
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t j = 0; j <= i; ++j) m = std::max(m, p[j] = dot_qk(qkv, d, b, h, i, j));
        for (int64_t j = 0; j <= i; ++j) sum += p[j] = std::exp(p[j] - m);
        lse[(b * d.H + h) * d.T + i] = m + std::log(sum);
        for (int64_t e = 0; e < d.d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j <= i; ++j) acc += p[j] * at(qkv, d, b, j, 2, h, e);
          y[(b * d.T + i) * d.C + h * d.d + e] = cpu::store<S>(acc_t<S>(acc / sum));
        }
      }
  cpu::write_stats(c.out[1], rows, lse, "attention_fwd", "lse");
}

template <class S>
void bwd_impl(const OpCall& c, const Dims& d) {
  const S* dy = c.in[0].as<S>();
  const S* qkv = c.in[1].as<S>();
  const S* y = c.in[2].as<S>();
  const int64_t rows = d.B * d.H * d.T, n = d.B * d.T * 3 * d.C;
  double* lse = cpu::scratch<double>(cpu::kDoubleSlot, size_t(2 * rows));
  double* delta = lse + rows;
  double* g = cpu::scratch<double>(cpu::kDoubleSlot + 1, size_t(n));  // dqkv in double
  cpu::read_stats(c.in[3], rows, lse, "attention_bwd", "lse");
  for (int64_t i = 0; i < n; ++i) g[i] = 0;
  const double scale = 1 / std::sqrt(double(d.d));
  const auto dy_at = [&](int64_t b, int64_t t, int64_t h, int64_t e) {
    return cpu::load<double>(dy[(b * d.T + t) * d.C + h * d.d + e]);
  };
  const auto g_at = [&](int64_t b, int64_t t, int part, int64_t h, int64_t e) -> double& {
    return g[(b * d.T + t) * 3 * d.C + part * d.C + h * d.d + e];
  };
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t i = 0; i < d.T; ++i) {
        const int64_t row = (b * d.H + h) * d.T + i;
        double dl = 0;
        for (int64_t e = 0; e < d.d; ++e)
          dl += dy_at(b, i, h, e) * cpu::load<double>(y[(b * d.T + i) * d.C + h * d.d + e]);
        delta[row] = dl;
        for (int64_t j = 0; j <= i; ++j) {
          const double p = std::exp(dot_qk(qkv, d, b, h, i, j) - lse[row]);
          double dp = 0;
          for (int64_t e = 0; e < d.d; ++e) dp += dy_at(b, i, h, e) * at(qkv, d, b, j, 2, h, e);
          const double ds = p * (dp - dl) * scale;
          for (int64_t e = 0; e < d.d; ++e) {
            g_at(b, i, 0, h, e) += ds * at(qkv, d, b, j, 1, h, e);
            g_at(b, j, 1, h, e) += ds * at(qkv, d, b, i, 0, h, e);
            g_at(b, j, 2, h, e) += p * dy_at(b, i, h, e);
          }
        }
      }
  S* dqkv = c.out[0].as<S>();
  for (int64_t i = 0; i < n; ++i) dqkv[i] = cpu::store<S>(acc_t<S>(g[i]));
  cpu::write_stats(c.out[1], rows, delta, "attention_bwd", "delta");
}

// Types and sizes: T for the tensors, f32 (f64 with T = f64) for lse and delta.
void check_like(const TensorRef& t, DType dtype, int64_t n, const char* op, const char* what) {
  cpu::check_dtype(t, dtype, op, what);
  cpu::check_numel(t, n, op, what);
}

DType stat_of(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

}  // namespace

void attention_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const Dims d = check_qkv(c.in[0], c.attrs->heads, "attention_fwd");
  out[0] = Shape{d.B, d.T, d.C};
  out[1] = Shape{d.B, d.H, d.T};
}

void attention_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "attention_bwd";
  const Dims d = check_qkv(c.in[1], c.attrs->heads, op);
  const Shape y{d.B, d.T, d.C}, lse{d.B, d.H, d.T};
  TR_USER_CHECK(c.in[0] == y, op, ": dy is ", c.in[0].str(), ", expected ", y.str());
  TR_USER_CHECK(c.in[2] == y, op, ": y is ", c.in[2].str(), ", expected ", y.str());
  TR_USER_CHECK(c.in[3] == lse, op, ": lse is ", c.in[3].str(), ", expected ", lse.str());
  out[0] = c.in[1];
  out[1] = lse;
}

void attention_fwd_cpu(const OpCall& c) {
  check_operands(OpKind::AttentionFwd, c);
  const char* op = "attention_fwd";
  const TensorRef& qkv = c.in[0];
  const Dims d = dims_of(qkv.shape, c.attrs->heads);
  check_like(c.out[0], qkv.dtype, d.B * d.T * d.C, op, "y");
  check_like(c.out[1], stat_of(qkv.dtype), d.B * d.H * d.T, op, "lse");
  cpu::dispatch_float(qkv.dtype, op, [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, d); });
}

void attention_bwd_cpu(const OpCall& c) {
  check_operands(OpKind::AttentionBwd, c);
  const char* op = "attention_bwd";
  const TensorRef& qkv = c.in[1];
  const Dims d = dims_of(qkv.shape, c.attrs->heads);
  check_like(c.in[0], qkv.dtype, d.B * d.T * d.C, op, "dy");
  check_like(c.in[2], qkv.dtype, d.B * d.T * d.C, op, "y");
  check_like(c.in[3], stat_of(qkv.dtype), d.B * d.H * d.T, op, "lse");
  check_like(c.out[0], qkv.dtype, qkv.shape.numel(), op, "dqkv");
  check_like(c.out[1], stat_of(qkv.dtype), d.B * d.H * d.T, op, "delta");
  cpu::dispatch_float(qkv.dtype, op, [&](auto tag) { bwd_impl<typename decltype(tag)::type>(c, d); });
}

}  // namespace tr
