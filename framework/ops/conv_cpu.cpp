// 3x3 convolution (stride 1, zero padding 1, NHWC, weights KRSC): shape rules
// and the CPU reference. Every direction is im2col + one GEMM:
//   fwd:    y[P,K]   = col(x)[P,9C]  * w[K,9C]^T
//   data:   dx[P,C]  = col(dy)[P,9K] * w'[C,9K]^T, w'[c,r,s,k] = w[k,2-r,2-s,c]
//           (the transposed convolution is a forward one with flipped weights)
//   filter: dw[K,9C] = sum over pixel chunks of dy[P,K]^T * col(x)[P,9C]
// P = N*H*W pixels, processed in chunks so the column buffer stays bounded.
#include "framework/ops/conv.h"

#include <algorithm>

#include "framework/ops/cpu_kernel_util.h"

namespace tr {
namespace {

using cpu::acc_t;

// Column-buffer budget in elements (16 MB of float). Chunks split the flattened
// pixel range at any point; the split depends only on the shapes (deterministic).
constexpr int64_t kColBudget = int64_t(1) << 22;

struct ConvDims {
  int64_t n, h, w, cin, cout;  // cin: channels of the im2col source, cout: of the result
  int64_t pixels() const { return n * h * w; }
};

// col[p - p0][(r*3+s)*C + c] = src[n, h+r-1, w+s-1, c] (zero outside) for p in [p0, p1).
template <class A, class S>
void im2col(const S* src, const ConvDims& d, int64_t p0, int64_t p1, A* col) {
  const int64_t C = d.cin, hw = d.h * d.w;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n = p / hw, rem = p % hw, y = rem / d.w, x = rem % d.w;
    A* row = col + (p - p0) * 9 * C;
    for (int r = 0; r < 3; ++r) {
      const int64_t iy = y + r - 1;
      for (int s = 0; s < 3; ++s) {
        const int64_t ix = x + s - 1;
        A* dst = row + (r * 3 + s) * C;
        if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) {
          std::fill(dst, dst + C, A(0));
        } else {
          const S* in = src + ((n * d.h + iy) * d.w + ix) * C;
          for (int64_t c = 0; c < C; ++c) dst[c] = cpu::load<A>(in[c]);
        }
      }
    }
  }
}

// out[P, cout] = col(src)[P, 9*cin] * wk[cout, 9*cin]^T, wk already in A.
template <class S>
void conv_forward_gemm(const S* src, const acc_t<S>* wk, const ConvDims& d, S* out) {
  using A = acc_t<S>;
  const int64_t P = d.pixels(), kk = 9 * d.cin;
  if (P == 0 || d.cout == 0) return;
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(P, kColBudget / std::max<int64_t>(kk, 1)));
  A* col = cpu::scratch<A>(0, size_t(chunk * kk));
  for (int64_t p0 = 0; p0 < P; p0 += chunk) {
    const int64_t p1 = std::min(P, p0 + chunk), m = p1 - p0;
    im2col(src, d, p0, p1, col);
    if constexpr (std::is_same_v<S, A>) {
      cpu::gemm(false, true, m, d.cout, kk, A(1), col, kk, wk, kk, A(0), out + p0 * d.cout, d.cout);
    } else {
      A* tmp = cpu::scratch<A>(1, size_t(m * d.cout));
      cpu::gemm(false, true, m, d.cout, kk, A(1), col, kk, wk, kk, A(0), tmp, d.cout);
      cpu::store_n(tmp, m * d.cout, out + p0 * d.cout);
    }
  }
}

// Internal checks of a resolved call (the shape rule already vetted the shapes).
void check_conv_call(const OpCall& c, const char* op, const Shape& out_want) {
  const DType t = c.in[0].dtype;
  cpu::check_dtype(c.in[1], t, op, "in[1]");
  cpu::check_dtype(c.out[0], t, op, "out[0]");
  TR_CHECK(c.out[0].shape.numel() == out_want.numel(), op, ": out shape ", c.out[0].shape.str(),
           ", expected ", out_want.str());
}

template <class S>
void fwd_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[0].shape;
  const Shape& ws = c.in[1].shape;
  const ConvDims d{xs[0], xs[1], xs[2], xs[3], ws[0]};
  const A* w = cpu::as_compute<A>(c.in[1].as<S>(), ws.numel(), 2);
  conv_forward_gemm<S>(c.in[0].as<S>(), w, d, c.out[0].as<S>());
}

template <class S>
void bwd_data_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& dys = c.in[0].shape;
  const Shape& ws = c.in[1].shape;
  const int64_t K = ws[0], C = ws[3];
  const S* w = c.in[1].as<S>();
  // w'[c, r, s, k] = w[k, 2-r, 2-s, c]
  A* wt = cpu::scratch<A>(2, size_t(9 * K * C));
  for (int64_t k = 0; k < K; ++k)
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) {
        const S* src = w + ((k * 3 + r) * 3 + s) * C;
        const int64_t tap = (2 - r) * 3 + (2 - s);
        for (int64_t ch = 0; ch < C; ++ch) wt[(ch * 9 + tap) * K + k] = cpu::load<A>(src[ch]);
      }
  const ConvDims d{dys[0], dys[1], dys[2], K, C};
  conv_forward_gemm<S>(c.in[0].as<S>(), wt, d, c.out[0].as<S>());
}

template <class S>
void bwd_filter_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[0].shape;
  const Shape& dys = c.in[1].shape;
  const ConvDims d{xs[0], xs[1], xs[2], xs[3], dys[3]};
  const int64_t P = d.pixels(), K = d.cout, kk = 9 * d.cin;
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
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(P, kColBudget / std::max<int64_t>(kk, 1)));
    A* col = cpu::scratch<A>(0, size_t(chunk * kk));
    for (int64_t p0 = 0; p0 < P; p0 += chunk) {
      const int64_t p1 = std::min(P, p0 + chunk), m = p1 - p0;
      im2col(c.in[0].as<S>(), d, p0, p1, col);
      const A* dyc = cpu::as_compute<A>(dy + p0 * K, m * K, 2);
      cpu::gemm(true, false, K, kk, m, A(1), dyc, K, col, kk, A(p0 == 0 ? 0 : 1), dw, kk);
    }
  }
  if constexpr (!std::is_same_v<S, A>) cpu::store_n(dw, K * kk, dw_out);
}

// --- shape rules ---

void check_rank4(const Shape& s, const char* op, const char* what) {
  TR_USER_CHECK(s.rank == 4, op, ": ", what, " must be rank 4 [N,H,W,C], got ", s.str());
  for (int i = 0; i < 4; ++i)
    TR_USER_CHECK(s[i] > 0, op, ": ", what, " has a non-positive dim: ", s.str());
}

void check_filter(const Shape& w, const char* op) {
  check_rank4(w, op, "w");
  TR_USER_CHECK(w[1] == 3 && w[2] == 3, op, ": w must be [K,3,3,C], got ", w.str());
}

}  // namespace

void conv_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  TR_CHECK(c.n_in == 2 && n_out == 1, "conv_fwd: arity");
  const Shape &x = c.in[0], &w = c.in[1];
  check_rank4(x, "conv_fwd", "x");
  check_filter(w, "conv_fwd");
  TR_USER_CHECK(w[3] == x[3], "conv_fwd: w ", w.str(), " does not match the channels of x ", x.str());
  out[0] = Shape{x[0], x[1], x[2], w[0]};
}

void conv_bwd_data_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  TR_CHECK(c.n_in == 3 && n_out == 1, "conv_bwd_data: arity");
  const Shape &dy = c.in[0], &w = c.in[1];
  check_rank4(dy, "conv_bwd_data", "dy");
  check_filter(w, "conv_bwd_data");
  TR_USER_CHECK(w[0] == dy[3], "conv_bwd_data: w ", w.str(), " does not match the channels of dy ",
                dy.str());
  out[0] = Shape{dy[0], dy[1], dy[2], w[3]};
}

void conv_bwd_filter_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  TR_CHECK(c.n_in == 2 && n_out == 1, "conv_bwd_filter: arity");
  const Shape &x = c.in[0], &dy = c.in[1];
  check_rank4(x, "conv_bwd_filter", "x");
  check_rank4(dy, "conv_bwd_filter", "dy");
  TR_USER_CHECK(x[0] == dy[0] && x[1] == dy[1] && x[2] == dy[2], "conv_bwd_filter: x ", x.str(),
                " and dy ", dy.str(), " differ in N,H,W");
  out[0] = Shape{dy[3], 3, 3, x[3]};
}

// --- kernels ---

void conv_fwd_cpu(const OpCall& c) {
  const char* op = "conv_fwd";
  cpu::check_arity(c, op, 2, 2, 1, 1);
  const Shape &x = c.in[0].shape, &w = c.in[1].shape;
  TR_CHECK(x.rank == 4 && w.rank == 4 && w[1] == 3 && w[2] == 3 && w[3] == x[3], op, ": x ", x.str(), " w ", w.str());
  check_conv_call(c, op, Shape{x[0], x[1], x[2], w[0]});
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { fwd_impl<typename decltype(tag)::type>(c); });
}

void conv_bwd_data_cpu(const OpCall& c) {
  const char* op = "conv_bwd_data";
  cpu::check_arity(c, op, 3, 3, 1, 1);
  const Shape &dy = c.in[0].shape, &w = c.in[1].shape;
  TR_CHECK(dy.rank == 4 && w.rank == 4 && w[1] == 3 && w[2] == 3 && w[0] == dy[3], op, ": dy ", dy.str(), " w ", w.str());
  check_conv_call(c, op, Shape{dy[0], dy[1], dy[2], w[3]});
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_data_impl<typename decltype(tag)::type>(c); });
}

void conv_bwd_filter_cpu(const OpCall& c) {
  const char* op = "conv_bwd_filter";
  cpu::check_arity(c, op, 2, 2, 1, 1);
  const Shape &x = c.in[0].shape, &dy = c.in[1].shape;
  TR_CHECK(x.rank == 4 && dy.rank == 4 && x[0] == dy[0] && x[1] == dy[1] && x[2] == dy[2], op, ": x ",
           x.str(), " dy ", dy.str());
  check_conv_call(c, op, Shape{dy[3], 3, 3, x[3]});
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { bwd_filter_impl<typename decltype(tag)::type>(c); });
}

}  // namespace tr
