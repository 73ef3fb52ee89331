// Max pooling (2x2 stride 2, and global): shape rules and the CPU reference.
// Backward sends each output gradient to the FIRST input position, in window
// scan order (row-major), whose value equals the output; every other position
// (ties after the first, odd trailing rows/cols) gets 0. The max of stored
// values is one of them, so equality is exact in every storage dtype.
#include "framework/ops/pool.h"

#include <algorithm>
#include <initializer_list>

#include "framework/ops/cpu_kernel_util.h"

namespace tr {
namespace {

using cpu::acc_t;

template <class S>
void maxpool_fwd_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[0].shape;
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], Ho = H / 2, Wo = W / 2;
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const S* p00 = x + ((n * H + 2 * oh) * W + 2 * ow) * C;
        const S* p01 = p00 + C;
        const S* p10 = p00 + W * C;
        const S* p11 = p10 + C;
        S* yr = y + ((n * Ho + oh) * Wo + ow) * C;
        for (int64_t ch = 0; ch < C; ++ch) {
          S best = p00[ch];
          A m = cpu::load<A>(best);
          for (const S* p : {p01, p10, p11}) {
            const A v = cpu::load<A>(p[ch]);
            if (v > m) { m = v; best = p[ch]; }
          }
          yr[ch] = best;
        }
      }
}

template <class S>
void maxpool_bwd_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[1].shape;
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], Ho = H / 2, Wo = W / 2;
  const S* dy = c.in[0].as<S>();
  const S* x = c.in[1].as<S>();
  const S* y = c.in[2].as<S>();
  S* dx = c.out[0].as<S>();
  std::fill(dx, dx + xs.numel(), cpu::store<S>(A(0)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const int64_t o = ((n * Ho + oh) * Wo + ow) * C;
        const int64_t i00 = ((n * H + 2 * oh) * W + 2 * ow) * C;
        const int64_t taps[4] = {i00, i00 + C, i00 + W * C, i00 + W * C + C};
        for (int64_t ch = 0; ch < C; ++ch) {
          const A m = cpu::load<A>(y[o + ch]);
          for (int64_t t : taps) {
            if (cpu::load<A>(x[t + ch]) == m) {
              dx[t + ch] = dy[o + ch];
              break;
            }
          }
        }
      }
}

template <class S>
void global_fwd_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[0].shape;
  const int64_t N = xs[0], HW = xs[1] * xs[2], C = xs[3];
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  A* m = cpu::scratch<A>(0, size_t(C));
  for (int64_t n = 0; n < N; ++n) {
    const S* xn = x + n * HW * C;
    S* yn = y + n * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      yn[ch] = xn[ch];
      m[ch] = cpu::load<A>(xn[ch]);
    }
    for (int64_t p = 1; p < HW; ++p) {
      const S* xr = xn + p * C;
      for (int64_t ch = 0; ch < C; ++ch) {
        const A v = cpu::load<A>(xr[ch]);
        if (v > m[ch]) { m[ch] = v; yn[ch] = xr[ch]; }
      }
    }
  }
}

template <class S>
void global_bwd_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[1].shape;
  const int64_t N = xs[0], HW = xs[1] * xs[2], C = xs[3];
  const S* dy = c.in[0].as<S>();
  const S* x = c.in[1].as<S>();
  const S* y = c.in[2].as<S>();
  S* dx = c.out[0].as<S>();
  std::fill(dx, dx + xs.numel(), cpu::store<S>(A(0)));
  A* m = cpu::scratch<A>(0, size_t(C));
  unsigned char* found = cpu::scratch<unsigned char>(0, size_t(C));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t ch = 0; ch < C; ++ch) {
      m[ch] = cpu::load<A>(y[n * C + ch]);
      found[ch] = 0;
    }
    const S* xn = x + n * HW * C;
    S* dxn = dx + n * HW * C;
    for (int64_t p = 0; p < HW; ++p) {
      for (int64_t ch = 0; ch < C; ++ch) {
        if (!found[ch] && cpu::load<A>(xn[p * C + ch]) == m[ch]) {
          dxn[p * C + ch] = dy[n * C + ch];
          found[ch] = 1;
        }
      }
    }
  }
}

// --- shape rules ---

void check_x(const Shape& x, const char* op, int64_t min_hw) {
  TR_USER_CHECK(x.rank == 4, op, ": x must be rank 4 [N,H,W,C], got ", x.str());
  for (int i = 0; i < 4; ++i) TR_USER_CHECK(x[i] > 0, op, ": x has a non-positive dim: ", x.str());
  TR_USER_CHECK(x[1] >= min_hw && x[2] >= min_hw, op, ": x ", x.str(), " is smaller than the ",
                min_hw, "x", min_hw, " window");
}

Shape pooled2(const Shape& x) { return Shape{x[0], x[1] / 2, x[2] / 2, x[3]}; }

void check_bwd_call(const OpCall& c, const char* op, const Shape& y_want) {
  cpu::check_arity(c, op, 3, 3, 1, 1);
  const Shape& x = c.in[1].shape;
  TR_CHECK(x.rank == 4, op, ": x ", x.str());
  const DType t = c.in[0].dtype;
  cpu::check_dtype(c.in[1], t, op, "x");
  cpu::check_dtype(c.in[2], t, op, "y");
  cpu::check_dtype(c.out[0], t, op, "dx");
  TR_CHECK(c.in[0].shape.numel() == y_want.numel() && c.in[2].shape.numel() == y_want.numel(), op,
           ": dy ", c.in[0].shape.str(), " / y ", c.in[2].shape.str(), " for x ", x.str());
  TR_CHECK(c.out[0].shape.numel() == x.numel(), op, ": dx ", c.out[0].shape.str());
}

void check_fwd_call(const OpCall& c, const char* op) {
  cpu::check_arity(c, op, 1, 1, 1, 1);
  TR_CHECK(c.in[0].shape.rank == 4, op, ": x ", c.in[0].shape.str());
  cpu::check_dtype(c.out[0], c.in[0].dtype, op, "y");
}

}  // namespace

void maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  TR_CHECK(c.n_in == 1 && n_out == 1, "maxpool_fwd: arity");
  check_x(c.in[0], "maxpool_fwd", 2);
  out[0] = pooled2(c.in[0]);
}

void maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "maxpool_bwd";
  TR_CHECK(c.n_in == 3 && n_out == 1, op, ": arity");
  const Shape& x = c.in[1];
  check_x(x, op, 2);
  const Shape y = pooled2(x);
  TR_USER_CHECK(c.in[0] == y, op, ": dy ", c.in[0].str(), " must be ", y.str(), " for x ", x.str());
  TR_USER_CHECK(c.in[2] == y, op, ": y ", c.in[2].str(), " must be ", y.str(), " for x ", x.str());
  out[0] = x;
}

void global_maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  TR_CHECK(c.n_in == 1 && n_out == 1, "global_maxpool_fwd: arity");
  check_x(c.in[0], "global_maxpool_fwd", 1);
  out[0] = Shape{c.in[0][0], c.in[0][3]};
}

void global_maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "global_maxpool_bwd";
  TR_CHECK(c.n_in == 3 && n_out == 1, op, ": arity");
  const Shape& x = c.in[1];
  check_x(x, op, 1);
  const Shape y{x[0], x[3]};
  TR_USER_CHECK(c.in[0] == y, op, ": dy ", c.in[0].str(), " must be ", y.str(), " for x ", x.str());
  TR_USER_CHECK(c.in[2] == y, op, ": y ", c.in[2].str(), " must be ", y.str(), " for x ", x.str());
  out[0] = x;
}

void maxpool_fwd_cpu(const OpCall& c) {
  const char* op = "maxpool_fwd";
  check_fwd_call(c, op);
  TR_CHECK(c.out[0].shape.numel() == pooled2(c.in[0].shape).numel(), op, ": y ", c.out[0].shape.str());
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { maxpool_fwd_impl<typename decltype(tag)::type>(c); });
}

void maxpool_bwd_cpu(const OpCall& c) {
  const char* op = "maxpool_bwd";
  TR_CHECK(c.n_in == 3 && c.in[1].shape.rank == 4, op, ": bad call");
  check_bwd_call(c, op, pooled2(c.in[1].shape));
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { maxpool_bwd_impl<typename decltype(tag)::type>(c); });
}

void global_maxpool_fwd_cpu(const OpCall& c) {
  const char* op = "global_maxpool_fwd";
  check_fwd_call(c, op);
  const Shape& x = c.in[0].shape;
  TR_CHECK(c.out[0].shape.numel() == x[0] * x[3], op, ": y ", c.out[0].shape.str());
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { global_fwd_impl<typename decltype(tag)::type>(c); });
}

void global_maxpool_bwd_cpu(const OpCall& c) {
  const char* op = "global_maxpool_bwd";
  TR_CHECK(c.n_in == 3 && c.in[1].shape.rank == 4, op, ": bad call");
  const Shape& x = c.in[1].shape;
  check_bwd_call(c, op, Shape{x[0], x[3]});
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { global_bwd_impl<typename decltype(tag)::type>(c); });
}

}  // namespace tr
