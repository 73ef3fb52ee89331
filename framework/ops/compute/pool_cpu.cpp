// Max pooling (k x k with stride and padding, and global): shape rules and the
// CPU reference. Semantics: framework/ops/compute/pool.h; visiting order: Note [pool
// window order] in pool_window.h. Backward is a gather over input positions, as
// the CUDA kernels are, so both sum the same terms in the same order.
// The max of stored values is one of them, so the equality tests of backward are
// exact in every storage dtype. A NaN at a window's first position propagates
// (nothing is '>' NaN); a NaN output equals nothing, so it sends no gradient.
#include "framework/ops/compute/pool.h"

#include <algorithm>

#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/kernels/pool_window.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

struct Dims {
  int64_t N, H, W, C, Ho, Wo;
};
Dims dims_of(const Shape& x, const PoolWindow& pw) {
  return {x[0], x[1], x[2], x[3], pw.out_len(x[1]), pw.out_len(x[2])};
}

// Where an input position sits in output (oh, ow)'s window: kh * k + kw from
// the window's corner, the code MaxPoolFwd records for its winner.
inline uint8_t window_pos(const PoolWindow& pw, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
  return uint8_t((ih - pw.start(oh)) * pw.k + (iw - pw.start(ow)));
}

// x[N,H,W,C] -> y[N,Ho,Wo,C]: row-major window scan, padding skipped.
template <class S>
void maxpool_fwd_impl(const TensorRef& xt, const TensorRef& yt, const TensorRef* argmax_t, const PoolWindow& pw) {
  using A = acc_t<S>;
  const Dims d = dims_of(xt.shape, pw);
  const int64_t C = d.C;
  const S* x = xt.as<S>();
  S* y = yt.as<S>();
  uint8_t* argmax = argmax_t != nullptr ? argmax_t->as<uint8_t>() : nullptr;  // kh * k + kw of the winner
  A* m = cpu::scratch<A>(0, size_t(C));
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t oh = 0; oh < d.Ho; ++oh)
      for (int64_t ow = 0; ow < d.Wo; ++ow) {
        const int64_t h0 = pw.in_begin(oh), h1 = pw.in_end(oh, d.H);
        const int64_t w0 = pw.in_begin(ow), w1 = pw.in_end(ow, d.W);
        const S* xn = x + n * d.H * d.W * C;
        const int64_t o = ((n * d.Ho + oh) * d.Wo + ow) * C;
        S* yr = y + o;
        uint8_t* ar = argmax != nullptr ? argmax + o : nullptr;
        const S* first = xn + (h0 * d.W + w0) * C;  // the window's first input position starts the max
        for (int64_t ch = 0; ch < C; ++ch) {
          yr[ch] = first[ch];
          m[ch] = cpu::load<A>(first[ch]);
          if (ar) ar[ch] = window_pos(pw, oh, ow, h0, w0);
        }
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = (h == h0 ? w0 + 1 : w0); w < w1; ++w) {
            const S* xr = xn + (h * d.W + w) * C;
            const uint8_t pos = window_pos(pw, oh, ow, h, w);
            for (int64_t ch = 0; ch < C; ++ch) {
              const A v = cpu::load<A>(xr[ch]);
              if (v > m[ch]) {
                m[ch] = v;
                yr[ch] = xr[ch];
                if (ar) ar[ch] = pos;
              }
            }
          }
      }
}

// Does a position of output (oh, ow)'s window that comes before input (ih, iw)
// in scan order hold the value m in channel ch? Then (ih, iw) is not its argmax.
template <class S, class A>
bool earlier_equal(const S* xn, const Dims& d, const PoolWindow& pw, int64_t oh, int64_t ow, int64_t ih, int64_t iw,
                   int64_t ch, A m) {
  const int64_t w0 = pw.in_begin(ow), w1 = pw.in_end(ow, d.W);
  for (int64_t h = pw.in_begin(oh); h <= ih; ++h)
    for (int64_t w = w0; w < (h < ih ? w1 : iw); ++w)
      if (cpu::load<A>(xn[(h * d.W + w) * d.C + ch]) == m) return true;
  return false;
}

// The backward's gather, dy[N,Ho,Wo,C] -> dx[N,H,W,C]: each input position
// visits the outputs whose windows hold it (oh, then ow ascending) and adds dy
// of those it won, wins(n, o, i, oh, ow, ih, iw, ch) with o and i the output's
// and the input's offsets. The first term is taken as is (so a lone -0 stays
// -0, as in the 2x2 CUDA fast path); positions that win nothing get +0.
template <class S, class Wins>
void maxpool_gather_bwd(const OpCall& c, const PoolWindow& pw, Wins&& wins) {
  using A = acc_t<S>;
  const Dims d = dims_of(c.in[1].shape, pw);
  const int64_t C = d.C;
  const S* dy = c.in[0].as<S>();
  S* dx = c.out[0].as<S>();
  A* acc = cpu::scratch<A>(0, size_t(C));
  unsigned char* hit = cpu::scratch<unsigned char>(0, size_t(C));
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t ih = 0; ih < d.H; ++ih)
      for (int64_t iw = 0; iw < d.W; ++iw) {
        const int64_t i = ((n * d.H + ih) * d.W + iw) * C;
        std::fill(hit, hit + C, 0);
        int64_t oh0, oh1, ow0, ow1;
        pw.covering(ih, d.Ho, &oh0, &oh1);
        pw.covering(iw, d.Wo, &ow0, &ow1);
        for (int64_t oh = oh0; oh <= oh1; ++oh)
          for (int64_t ow = ow0; ow <= ow1; ++ow) {
            const int64_t o = ((n * d.Ho + oh) * d.Wo + ow) * C;
            for (int64_t ch = 0; ch < C; ++ch) {
              if (!wins(n, o, i, oh, ow, ih, iw, ch)) continue;
              const A g = cpu::load<A>(dy[o + ch]);
              acc[ch] = hit[ch] ? acc[ch] + g : g;
              hit[ch] = 1;
            }
          }
        for (int64_t ch = 0; ch < C; ++ch) dx[i + ch] = cpu::store<S>(hit[ch] ? acc[ch] : A(0));
      }
}

// dy, x, y -> dx: an input wins an output when it is the first position of the
// window (scan order) whose value equals the output.
template <class S>
void maxpool_bwd_impl(const OpCall& c, const PoolWindow& pw) {
  using A = acc_t<S>;
  const Dims d = dims_of(c.in[1].shape, pw);
  const S* x = c.in[1].as<S>();
  const S* y = c.in[2].as<S>();
  maxpool_gather_bwd<S>(
      c, pw, [&](int64_t n, int64_t o, int64_t i, int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t ch) {
        const A m = cpu::load<A>(y[o + ch]);
        return cpu::load<A>(x[i + ch]) == m && !earlier_equal(x + n * d.H * d.W * d.C, d, pw, oh, ow, ih, iw, ch, m);
      });
}

// dy, x, argmax -> dx: the recorded winner instead of the search.
template <class S>
void maxpool_bwd_argmax_impl(const OpCall& c, const PoolWindow& pw) {
  const uint8_t* argmax = c.in[2].as<uint8_t>();
  maxpool_gather_bwd<S>(c, pw,
                        [&](int64_t, int64_t o, int64_t, int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t ch) {
                          return argmax[o + ch] == window_pos(pw, oh, ow, ih, iw);
                        });
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
        if (v > m[ch]) {
          m[ch] = v;
          yn[ch] = xr[ch];
        }
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

void check_x(const Shape& x, const char* op) {
  TR_USER_CHECK(x.rank == 4, op, ": x must be rank 4 [N,H,W,C], got ", x.str());
  for (int i = 0; i < 4; ++i) TR_USER_CHECK(x[i] > 0, op, ": x has a non-positive dim: ", x.str());
}

const OpAttrs& attrs_of(const OpAttrs* a, const char* op) {
  TR_CHECK(a != nullptr, op, ": no attributes");
  return *a;
}

// dy, x, y -> dx, the kind's operand counts checked by the caller.
void check_bwd_call(const OpCall& c, const char* op, const Shape& y_want) {
  const Shape& x = c.in[1].shape;
  TR_CHECK(x.rank == 4, op, ": x ", x.str());
  const DType t = c.in[0].dtype;
  cpu::check_dtype(c.in[1], t, op, "x");
  cpu::check_dtype(c.in[2], t, op, "y");
  cpu::check_dtype(c.out[0], t, op, "dx");
  TR_CHECK(c.in[0].shape.numel() == y_want.numel() && c.in[2].shape.numel() == y_want.numel(), op, ": dy ",
           c.in[0].shape.str(), " / y ", c.in[2].shape.str(), " for x ", x.str());
  TR_CHECK(c.out[0].shape.numel() == x.numel(), op, ": dx ", c.out[0].shape.str());
}

// x -> y, the kind's operand counts checked by the caller.
void check_fwd_call(const OpCall& c, const char* op) {
  TR_CHECK(c.in[0].shape.rank == 4, op, ": x ", c.in[0].shape.str());
  cpu::check_dtype(c.out[0], c.in[0].dtype, op, "y");
}

}  // namespace

namespace {

// x -> y [, argmax [, sums]]: the pool, its winners, y's statistics.
void maxpool_shapes(const ShapeCtx& c, Shape* out, bool with_argmax, bool with_stats, const char* op) {
  const PoolWindow pw = checked_pool_window(attrs_of(c.attrs, op), c.in[0], op, true);
  if (with_argmax) TR_USER_CHECK(pw.k <= 16, op, ": a recorded winner needs a window of at most 16x16, got ", pw.k);
  if (with_stats)
    TR_USER_CHECK(pw.is_2x2(), op, ": the BatchNorm statistics output needs 2x2 windows of stride 2 without padding");
  out[0] = pooled_shape(c.in[0], pw);
  if (with_argmax) out[1] = out[0];
  if (with_stats) out[2] = Shape{2, c.in[0][c.in[0].rank - 1]};
}

}  // namespace

void maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int) { maxpool_shapes(c, out, false, false, "maxpool_fwd"); }

void maxpool_argmax_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  maxpool_shapes(c, out, true, false, "maxpool_argmax_fwd");
}

void maxpool_stats_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  maxpool_shapes(c, out, true, true, "maxpool_stats_fwd");
}

// x, gamma, beta -> p, argmax, sums (the pool), y, batch, affine (BnReluApply of p).
void pool_bn_relu_apply_shapes(const ShapeCtx& c, Shape* out, int) {
  maxpool_shapes(ShapeCtx{c.in, 1, c.attrs, c.variant}, out, true, true, "pool_bn_relu_apply");
  const Shape in[4] = {out[0], out[2], c.in[1], c.in[2]};
  bn_relu_apply_shapes(ShapeCtx{in, 4, c.attrs, c.variant}, out + 3, 3);
}

namespace {

// dy, x, y (or argmax) -> dx.
void maxpool_bwd_rule(const ShapeCtx& c, Shape* out, const char* op, const char* third) {
  const Shape& x = c.in[1];
  const Shape y = pooled_shape(x, checked_pool_window(attrs_of(c.attrs, op), x, op, true));
  TR_USER_CHECK(c.in[0] == y, op, ": dy ", c.in[0].str(), " must be ", y.str(), " for x ", x.str());
  TR_USER_CHECK(c.in[2] == y, op, ": ", third, " ", c.in[2].str(), " must be ", y.str(), " for x ", x.str());
  out[0] = x;
}

}  // namespace

void maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int) { maxpool_bwd_rule(c, out, "maxpool_bwd", "y"); }

void maxpool_argmax_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  maxpool_bwd_rule(c, out, "maxpool_argmax_bwd", "argmax");
}

void global_maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  check_x(c.in[0], "global_maxpool_fwd");
  out[0] = Shape{c.in[0][0], c.in[0][3]};
}

void global_maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "global_maxpool_bwd";
  const Shape& x = c.in[1];
  check_x(x, op);
  const Shape y{x[0], x[3]};
  TR_USER_CHECK(c.in[0] == y, op, ": dy ", c.in[0].str(), " must be ", y.str(), " for x ", x.str());
  TR_USER_CHECK(c.in[2] == y, op, ": y ", c.in[2].str(), " must be ", y.str(), " for x ", x.str());
  out[0] = x;
}

namespace {

// x -> p [, argmax [, sums]]: the pool, its winners, y's statistics (the
// fused BnStats of p, Note [fusion]: its own reference, on p as stored).
void maxpool_cpu(const OpCall& c, const TensorRef& x, const TensorRef& p, const TensorRef* argmax,
                 const TensorRef* sums, const char* op) {
  TR_CHECK(x.shape.rank == 4, op, ": x ", x.shape.str());
  cpu::check_dtype(p, x.dtype, op, "y");
  const PoolWindow pw = checked_pool_window(attrs_of(c.attrs, op), x.shape, op, true);
  TR_CHECK(p.shape.numel() == pooled_shape(x.shape, pw).numel(), op, ": y ", p.shape.str());
  if (argmax != nullptr) {
    cpu::check_dtype(*argmax, DType::U8, op, "argmax");
    cpu::check_numel(*argmax, p.shape.numel(), op, "argmax");
    TR_CHECK(pw.k <= 16, op, ": a recorded winner needs a window of at most 16x16");
  }
  if (sums != nullptr)
    TR_CHECK(pw.is_2x2(), op, ": the BatchNorm statistics output needs 2x2 windows of stride 2 without padding");
  cpu::dispatch_float(x.dtype, op, [&](auto tag) { maxpool_fwd_impl<typename decltype(tag)::type>(x, p, argmax, pw); });
  if (sums != nullptr) bn_stats_cpu(OpCall{&p, 1, sums, 1, c.attrs, c.variant, c.env});
}

}  // namespace

void maxpool_fwd_cpu(const OpCall& c) {
  const OpOperands o(OpKind::MaxPoolFwd, c);
  maxpool_cpu(c, o.in("x"), o.out("y"), nullptr, nullptr, "maxpool_fwd");
}

void maxpool_argmax_fwd_cpu(const OpCall& c) {
  const OpOperands o(OpKind::MaxPoolArgmaxFwd, c);
  maxpool_cpu(c, o.in("x"), o.out("y"), &o.out("argmax"), nullptr, "maxpool_argmax_fwd");
}

void maxpool_stats_fwd_cpu(const OpCall& c) {
  const OpOperands o(OpKind::MaxPoolStatsFwd, c);
  maxpool_cpu(c, o.in("x"), o.out("y"), &o.out("argmax"), &o.out("sums"), "maxpool_stats_fwd");
}

// Its BatchNorm inside (Note [one kernel per BatchNorm]): the pool, then the apply of p.
void pool_bn_relu_apply_cpu(const OpCall& c) {
  const OpOperands o(OpKind::PoolBnReluApply, c);
  const TensorRef& p = o.out("p");
  maxpool_cpu(c, o.in("x"), p, &o.out("argmax"), &o.out("sums"), "pool_bn_relu_apply");
  const TensorRef in[4] = {p, o.out("sums"), o.in("gamma"), o.in("beta")};
  const TensorRef out[3] = {o.out("y"), o.out("batch"), o.out("affine")};
  bn_relu_apply_cpu(OpCall{in, 4, out, 3, c.attrs, c.variant, c.env});
}

void maxpool_argmax_bwd_cpu(const OpCall& c) {
  const char* op = "maxpool_argmax_bwd";
  const OpOperands o(OpKind::MaxPoolArgmaxBwd, c);  // dy, x (its shape only), argmax -> dx
  TR_CHECK(o.in("x").shape.rank == 4, op, ": x ", o.in("x").shape.str());
  const PoolWindow pw = checked_pool_window(attrs_of(c.attrs, op), o.in("x").shape, op, true);
  const Shape y = pooled_shape(o.in("x").shape, pw);
  cpu::check_numel(o.in("dy"), y.numel(), op, "dy");
  cpu::check_dtype(o.in("argmax"), DType::U8, op, "argmax");
  cpu::check_numel(o.in("argmax"), y.numel(), op, "argmax");
  cpu::check_dtype(o.out("dx"), o.in("dy").dtype, op, "dx");
  cpu::check_numel(o.out("dx"), o.in("x").shape.numel(), op, "dx");
  cpu::dispatch_float(o.in("dy").dtype, op,
                      [&](auto tag) { maxpool_bwd_argmax_impl<typename decltype(tag)::type>(c, pw); });
}

void maxpool_bwd_cpu(const OpCall& c) {
  const char* op = "maxpool_bwd";
  const OpOperands o(OpKind::MaxPoolBwd, c);  // dy, x, y -> dx
  TR_CHECK(o.in("x").shape.rank == 4, op, ": bad call");
  const PoolWindow pw = checked_pool_window(attrs_of(c.attrs, op), o.in("x").shape, op, true);
  check_bwd_call(c, op, pooled_shape(o.in("x").shape, pw));
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { maxpool_bwd_impl<typename decltype(tag)::type>(c, pw); });
}

void global_maxpool_fwd_cpu(const OpCall& c) {
  const char* op = "global_maxpool_fwd";
  check_operands(OpKind::GlobalMaxPoolFwd, c);
  check_fwd_call(c, op);
  const Shape& x = c.in[0].shape;
  TR_CHECK(c.out[0].shape.numel() == x[0] * x[3], op, ": y ", c.out[0].shape.str());
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { global_fwd_impl<typename decltype(tag)::type>(c); });
}

void global_maxpool_bwd_cpu(const OpCall& c) {
  check_operands(OpKind::GlobalMaxPoolBwd, c);
  const char* op = "global_maxpool_bwd";
  TR_CHECK(c.in[1].shape.rank == 4, op, ": x must be [N,H,W,C], got ", c.in[1].shape.str());
  const Shape& x = c.in[1].shape;
  check_bwd_call(c, op, Shape{x[0], x[3]});
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { global_bwd_impl<typename decltype(tag)::type>(c); });
}

}  // namespace tr
