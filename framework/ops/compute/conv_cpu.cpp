// Convolution (R x R window, stride, zero padding, NHWC, weights KRSC): shape
// rules and the CPU reference. Every direction is im2col + GEMM over a range of
// pixels, with the columns of a pixel in (r, s, c) order:
//   fwd:    y[P,K]    = col(x)[P,RRC] * w[K,RRC]^T                      P = N*Ho*Wo
//   data:   dx[P,C]   = col(dy')[P,RRK] * w'[C,RRK]^T                   P = N*H*W
//           w'[c,r,s,k] = w[k,R-1-r,R-1-s,c]. The transposed convolution is a
//           forward one with flipped weights, stride 1 and padding R-1-pad, over
//           dy' = dy with stride-1 zeros between its pixels (dy'[u] = dy[u/stride]
//           where stride divides u). A gather, not a col2im scatter: each dx
//           element is one GEMM dot product in a fixed order (deterministic). The
//           zeros cost stride^2 in flops, which a reference can afford.
//   filter: dw[K,RRC] = sum over pixel chunks of dy[P,K]^T * col(x)[P,RRC]  P = N*Ho*Wo
// Pixels go in chunks so the column buffer stays bounded. The forward and the
// data gradient never put two samples in one GEMM (Note [batch-invariant CPU
// GEMMs] in cpu_kernel_util.h); the filter gradient sums over every pixel.
#include <algorithm>

#include "framework/ops/compute/conv.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

// Column-buffer budget in elements (16 MB of float). Chunks split the flattened
// pixel range at any point; the split depends only on the shapes (deterministic).
constexpr int64_t kColBudget = int64_t(1) << 22;

// One im2col sweep: a source src[n, sh, sw, c] seen through an R x R window from
// every pixel of an [n, oh, ow] output. Output row y, tap row t reads row
// u = y*stride + t - pad of the source upsampled by `dil` (dil - 1 zeros between
// pixels): src row u/dil when u >= 0 and dil divides u, zero otherwise (padding).
// Columns likewise.
struct Window {
  int64_t n, sh, sw, c;  // source [n, sh, sw, c]
  int64_t oh, ow;        // output pixels [n, oh, ow]
  int64_t r, stride, pad, dil;
  int64_t pixels() const { return n * oh * ow; }
  int64_t cols() const { return r * r * c; }
};

// Source index along one axis for output coordinate o and tap t; -1 reads zero.
inline int64_t source_index(int64_t o, int64_t t, int64_t size, const Window& g) {
  const int64_t u = o * g.stride + t - g.pad;
  if (u < 0 || u % g.dil != 0) return -1;
  const int64_t i = u / g.dil;
  return i < size ? i : -1;
}

// col[p - p0][(r*R+s)*C + c] = src[n, row(y, r), col(x, s), c] (zero outside) for p in [p0, p1).
template <class A, class S>
void im2col(const S* src, const Window& g, int64_t p0, int64_t p1, A* col) {
  const int64_t C = g.c, R = g.r, ohw = g.oh * g.ow;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n = p / ohw, rem = p % ohw, y = rem / g.ow, x = rem % g.ow;
    A* row = col + (p - p0) * g.cols();
    for (int64_t r = 0; r < R; ++r) {
      const int64_t iy = source_index(y, r, g.sh, g);
      for (int64_t s = 0; s < R; ++s) {
        const int64_t ix = source_index(x, s, g.sw, g);
        A* dst = row + (r * R + s) * C;
        if (iy < 0 || ix < 0) {
          std::fill(dst, dst + C, A(0));
        } else {
          const S* in = src + ((n * g.sh + iy) * g.sw + ix) * C;
          for (int64_t c = 0; c < C; ++c) dst[c] = cpu::load<A>(in[c]);
        }
      }
    }
  }
}

// Pixels per chunk: as many as fit the column budget (at least one).
int64_t chunk_pixels(int64_t P, int64_t kk) {
  return std::max<int64_t>(1, std::min<int64_t>(P, kColBudget / std::max<int64_t>(kk, 1)));
}

// out[P, cout] = col(src)[P, RRC] * wk[cout, RRC]^T, wk already in A. One
// sample's pixels per GEMM call (Note [batch-invariant CPU GEMMs]), in pieces
// only where one sample's columns exceed the budget.
template <class S>
void conv_forward_gemm(const S* src, const acc_t<S>* wk, const Window& g, int64_t cout, S* out) {
  using A = acc_t<S>;
  const int64_t P = g.pixels(), kk = g.cols(), per_sample = g.oh * g.ow;
  if (P == 0 || cout == 0) return;
  const int64_t chunk = chunk_pixels(per_sample, kk);
  A* col = cpu::scratch<A>(0, size_t(chunk * kk));
  for (int64_t p0 = 0; p0 < P; p0 += std::min(chunk, per_sample - p0 % per_sample)) {
    const int64_t p1 = std::min(p0 + chunk, (p0 / per_sample + 1) * per_sample), m = p1 - p0;
    im2col(src, g, p0, p1, col);
    if constexpr (std::is_same_v<S, A>) {
      cpu::gemm(false, true, m, cout, kk, A(1), col, kk, wk, kk, A(0), out + p0 * cout, cout);
    } else {
      A* tmp = cpu::scratch<A>(1, size_t(m * cout));
      cpu::gemm(false, true, m, cout, kk, A(1), col, kk, wk, kk, A(0), tmp, cout);
      cpu::store_n(tmp, m * cout, out + p0 * cout);
    }
  }
}

// The geometry of one call: x[n,h,w,c], w[k,r,r,c], y[n,ho,wo,k].
struct ConvGeom {
  int64_t n, h, w, c, k, r, stride, pad, ho, wo;
  // x seen from y's pixels: the forward and filter-gradient sweep.
  Window forward() const { return Window{n, h, w, c, ho, wo, r, stride, pad, 1}; }
  // dy seen from dx's pixels: the data-gradient sweep (see the top of the file).
  Window transposed() const { return Window{n, ho, wo, k, h, w, r, 1, r - 1 - pad, stride}; }
  Shape x() const { return Shape{n, h, w, c}; }
  Shape wt() const { return Shape{k, r, r, c}; }
  Shape y() const { return Shape{n, ho, wo, k}; }
};

// Internal checks of a resolved call (the shape rule already vetted the shapes
// and attributes): x's shape and K give the geometry; every tensor must fit it.
ConvGeom call_geom(const OpCall& c, const char* op, const Shape& x, int64_t K) {
  TR_CHECK(c.attrs != nullptr, op, ": no attributes");
  const OpAttrs& a = *c.attrs;
  TR_CHECK(x.rank == 4 && a.kernel >= 1 && a.stride >= 1 && a.pad >= 0 && a.pad < a.kernel &&
               x[1] + 2 * a.pad >= a.kernel && x[2] + 2 * a.pad >= a.kernel,
           op, ": x ", x.str(), " kernel ", a.kernel, " stride ", a.stride, " pad ", a.pad);
  const ConvGeom g{x[0],
                   x[1],
                   x[2],
                   x[3],
                   K,
                   a.kernel,
                   a.stride,
                   a.pad,
                   conv_out_size(x[1], a.kernel, a.stride, a.pad),
                   conv_out_size(x[2], a.kernel, a.stride, a.pad)};
  const DType t = c.in[0].dtype;
  cpu::check_dtype(c.in[1], t, op, "in[1]");
  cpu::check_dtype(c.out[0], t, op, "out[0]");
  return g;
}
void check_shape(const TensorRef& t, const Shape& want, const char* op, const char* what) {
  TR_CHECK(t.shape.numel() == want.numel(), op, ": ", what, " ", t.shape.str(), ", expected ", want.str());
}

template <class S>
void fwd_impl(const OpCall& c, const ConvGeom& g) {
  using A = acc_t<S>;
  const A* w = cpu::as_compute<A>(c.in[1].as<S>(), g.wt().numel(), 2);
  conv_forward_gemm<S>(c.in[0].as<S>(), w, g.forward(), g.k, c.out[0].as<S>());
}

template <class S>
void bwd_data_impl(const OpCall& c, const ConvGeom& g) {
  using A = acc_t<S>;
  const int64_t K = g.k, C = g.c, R = g.r, RR = R * R;
  const S* w = c.in[1].as<S>();
  // w'[c, r, s, k] = w[k, R-1-r, R-1-s, c]
  A* wt = cpu::scratch<A>(2, size_t(RR * K * C));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t s = 0; s < R; ++s) {
        const S* src = w + ((k * R + r) * R + s) * C;
        const int64_t tap = (R - 1 - r) * R + (R - 1 - s);
        for (int64_t ch = 0; ch < C; ++ch) wt[(ch * RR + tap) * K + k] = cpu::load<A>(src[ch]);
      }
  conv_forward_gemm<S>(c.in[0].as<S>(), wt, g.transposed(), C, c.out[0].as<S>());
}

template <class S>
void bwd_filter_impl(const OpCall& c, const ConvGeom& g) {
  using A = acc_t<S>;
  const Window win = g.forward();
  const int64_t P = win.pixels(), K = g.k, kk = win.cols();
  const S* dy = c.in[1].as<S>();
  S* dw_out = c.out[0].as<S>();
  A* dw = nullptr;
  if constexpr (std::is_same_v<S, A>) {
    dw = dw_out;
  } else {
    dw = cpu::scratch<A>(1, size_t(K * kk));
  }
  if (P == 0) {
    std::fill(dw, dw + K * kk, A(0));
  } else {
    const int64_t chunk = chunk_pixels(P, kk);
    A* col = cpu::scratch<A>(0, size_t(chunk * kk));
    for (int64_t p0 = 0; p0 < P; p0 += chunk) {
      const int64_t p1 = std::min(P, p0 + chunk), m = p1 - p0;
      im2col(c.in[0].as<S>(), win, p0, p1, col);
      const A* dyc = cpu::as_compute<A>(dy + p0 * K, m * K, 2);
      cpu::gemm(true, false, K, kk, m, A(1), dyc, K, col, kk, A(p0 == 0 ? 0 : 1), dw, kk);
    }
  }
  if constexpr (!std::is_same_v<S, A>) cpu::store_n(dw, K * kk, dw_out);
}

// --- shape rules ---

void check_rank4(const Shape& s, const char* op, const char* what) {
  TR_USER_CHECK(s.rank == 4, op, ": ", what, " must be rank 4 [N,H,W,C], got ", s.str());
  for (int i = 0; i < 4; ++i) TR_USER_CHECK(s[i] > 0, op, ": ", what, " has a non-positive dim: ", s.str());
}

const OpAttrs& check_attrs(const ShapeCtx& c, const char* op) {
  TR_CHECK(c.attrs != nullptr, op, ": no attributes");
  const OpAttrs& a = *c.attrs;
  TR_USER_CHECK(a.kernel >= 1, op, ": kernel must be >= 1 (the R of w[K,R,R,C]), got ", a.kernel);
  TR_USER_CHECK(a.stride >= 1, op, ": stride must be >= 1, got ", a.stride);
  TR_USER_CHECK(a.pad >= 0 && a.pad < a.kernel, op, ": padding must be in [0, kernel) for a ", a.kernel, "x", a.kernel,
                " window, got ", a.pad);
  return a;
}

void check_filter(const Shape& w, const OpAttrs& a, const char* op) {
  check_rank4(w, op, "w");
  TR_USER_CHECK(w[1] == a.kernel && w[2] == a.kernel, op, ": w must be [K,", a.kernel, ",", a.kernel, ",C] for kernel ",
                a.kernel, ", got ", w.str());
}

// y[N,Ho,Wo,K] of x[N,H,W,C] (rank and dims already checked).
Shape fwd_out(const Shape& x, int64_t K, const OpAttrs& a, const char* op) {
  TR_USER_CHECK(x[1] + 2 * a.pad >= a.kernel && x[2] + 2 * a.pad >= a.kernel, op, ": x ", x.str(),
                " is too small for a ", a.kernel, "x", a.kernel, " window with stride ", a.stride, " and padding ",
                a.pad);
  return Shape{x[0], conv_out_size(x[1], a.kernel, a.stride, a.pad), conv_out_size(x[2], a.kernel, a.stride, a.pad), K};
}

// dy must be what the forward would produce from x.
void check_dy(const Shape& dy, const Shape& x, const OpAttrs& a, const char* op) {
  check_rank4(dy, op, "dy");
  const Shape y = fwd_out(x, dy[3], a, op);
  TR_USER_CHECK(dy == y, op, ": dy ", dy.str(), " must be ", y.str(), ", the output of x ", x.str(), " for a ",
                a.kernel, "x", a.kernel, " window with stride ", a.stride, " and padding ", a.pad);
}

}  // namespace

void conv_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "conv_fwd";
  const Shape &x = c.in[0], &w = c.in[1];
  const OpAttrs& a = check_attrs(c, op);
  check_rank4(x, op, "x");
  check_filter(w, a, op);
  TR_USER_CHECK(w[3] == x[3], op, ": w ", w.str(), " does not match the channels of x ", x.str());
  out[0] = fwd_out(x, w[0], a, op);
}

void conv_bwd_data_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "conv_bwd_data";
  const Shape &dy = c.in[0], &w = c.in[1], &x = c.in[2];
  const OpAttrs& a = check_attrs(c, op);
  check_rank4(x, op, "x");
  check_filter(w, a, op);
  TR_USER_CHECK(w[3] == x[3], op, ": w ", w.str(), " does not match the channels of x ", x.str());
  check_rank4(dy, op, "dy");
  TR_USER_CHECK(w[0] == dy[3], op, ": w ", w.str(), " does not match the channels of dy ", dy.str());
  check_dy(dy, x, a, op);
  out[0] = x;
}

void conv_bwd_filter_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "conv_bwd_filter";
  const Shape &x = c.in[0], &dy = c.in[1];
  const OpAttrs& a = check_attrs(c, op);
  check_rank4(x, op, "x");
  check_dy(dy, x, a, op);
  out[0] = Shape{dy[3], a.kernel, a.kernel, x[3]};
}

// --- kernels ---

void conv_fwd_cpu(const OpCall& c) {
  const char* op = "conv_fwd";
  check_operands(OpKind::ConvFwd, c);
  const ConvGeom g = call_geom(c, op, c.in[0].shape, c.in[1].shape[0]);
  TR_CHECK(c.in[1].shape == g.wt(), op, ": w ", c.in[1].shape.str(), ", expected ", g.wt().str());
  check_shape(c.out[0], g.y(), op, "y");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c, g); });
}

// x (in[2]) gives the shape only; its data is never read.
void conv_bwd_data_cpu(const OpCall& c) {
  const char* op = "conv_bwd_data";
  check_operands(OpKind::ConvBwdData, c);
  const ConvGeom g = call_geom(c, op, c.in[2].shape, c.in[1].shape[0]);
  TR_CHECK(c.in[1].shape == g.wt(), op, ": w ", c.in[1].shape.str(), ", expected ", g.wt().str());
  check_shape(c.in[0], g.y(), op, "dy");
  check_shape(c.out[0], g.x(), op, "dx");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_data_impl<typename decltype(tag)::type>(c, g); });
}

void conv_bwd_filter_cpu(const OpCall& c) {
  const char* op = "conv_bwd_filter";
  check_operands(OpKind::ConvBwdFilter, c);
  TR_CHECK(c.in[1].shape.rank == 4, op, ": dy ", c.in[1].shape.str());
  const ConvGeom g = call_geom(c, op, c.in[0].shape, c.in[1].shape[3]);
  check_shape(c.in[1], g.y(), op, "dy");
  check_shape(c.out[0], g.wt(), op, "dw");
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_filter_impl<typename decltype(tag)::type>(c, g); });
}

}  // namespace tr
