// Average pooling (k x k with stride, and global): shape rules and the CPU
// reference. Semantics and rounding: framework/ops/compute/avgpool.h; visiting order:
// Note [pool window order] in pool_window.h. The sums run in A = acc_t<S> (f32,
// f64 for F64) rather than in double as other CPU reductions do (Note [CPU
// storage and accumulation types]): the CUDA kernels sum in f32 in the same
// order, and the two agree bit for bit.
#include <algorithm>

#include "framework/ops/compute/avgpool.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/kernels/pool_window.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using cpu::acc_t;

// x[N,H,W,C] -> y[N,Ho,Wo,C] = (window sum, row-major) / (k*k)
template <class S>
void avgpool_fwd_impl(const OpCall& c, const PoolWindow& pw) {
  using A = acc_t<S>;
  const Shape& xs = c.in[0].shape;
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], Ho = pw.out_len(H), Wo = pw.out_len(W);
  const A count = A(pw.k * pw.k);
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  A* acc = cpu::scratch<A>(0, size_t(C));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        std::fill(acc, acc + C, A(0));
        for (int64_t h = pw.in_begin(oh); h < pw.in_end(oh, H); ++h)
          for (int64_t w = pw.in_begin(ow); w < pw.in_end(ow, W); ++w) {
            const S* xr = x + ((n * H + h) * W + w) * C;
            for (int64_t ch = 0; ch < C; ++ch) acc[ch] += cpu::load<A>(xr[ch]);
          }
        S* yr = y + ((n * Ho + oh) * Wo + ow) * C;
        for (int64_t ch = 0; ch < C; ++ch) yr[ch] = cpu::store<S>(acc[ch] / count);
      }
}

// dy[N,Ho,Wo,C] -> dx[N,H,W,C]: a gather; each input position adds dy of the
// windows that hold it (oh, then ow ascending), then divides by k*k.
template <class S>
void avgpool_bwd_impl(const OpCall& c, const PoolWindow& pw) {
  using A = acc_t<S>;
  const Shape& xs = c.in[1].shape;
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], Ho = pw.out_len(H), Wo = pw.out_len(W);
  const A count = A(pw.k * pw.k);
  const S* dy = c.in[0].as<S>();
  S* dx = c.out[0].as<S>();
  A* acc = cpu::scratch<A>(0, size_t(C));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ih = 0; ih < H; ++ih)
      for (int64_t iw = 0; iw < W; ++iw) {
        std::fill(acc, acc + C, A(0));
        int64_t oh0, oh1, ow0, ow1;
        pw.covering(ih, Ho, &oh0, &oh1);
        pw.covering(iw, Wo, &ow0, &ow1);
        for (int64_t oh = oh0; oh <= oh1; ++oh)
          for (int64_t ow = ow0; ow <= ow1; ++ow) {
            const S* dyr = dy + ((n * Ho + oh) * Wo + ow) * C;
            for (int64_t ch = 0; ch < C; ++ch) acc[ch] += cpu::load<A>(dyr[ch]);
          }
        S* dxr = dx + ((n * H + ih) * W + iw) * C;
        for (int64_t ch = 0; ch < C; ++ch) dxr[ch] = cpu::store<S>(acc[ch] / count);
      }
}

// x[N,P,C] -> y[N,C] = (sum over p ascending) / P, P = H*W
template <class S>
void global_avgpool_fwd_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[0].shape;
  const int64_t N = xs[0], P = xs[1] * xs[2], C = xs[3];
  const A count = A(P);
  const S* x = c.in[0].as<S>();
  S* y = c.out[0].as<S>();
  A* acc = cpu::scratch<A>(0, size_t(C));
  for (int64_t n = 0; n < N; ++n) {
    std::fill(acc, acc + C, A(0));
    for (int64_t p = 0; p < P; ++p) {
      const S* xr = x + (n * P + p) * C;
      for (int64_t ch = 0; ch < C; ++ch) acc[ch] += cpu::load<A>(xr[ch]);
    }
    for (int64_t ch = 0; ch < C; ++ch) y[n * C + ch] = cpu::store<S>(acc[ch] / count);
  }
}

// dy[N,C] -> dx[N,P,C] = dy / P
template <class S>
void global_avgpool_bwd_impl(const OpCall& c) {
  using A = acc_t<S>;
  const Shape& xs = c.in[1].shape;
  const int64_t N = xs[0], P = xs[1] * xs[2], C = xs[3];
  const A count = A(P);
  const S* dy = c.in[0].as<S>();
  S* dx = c.out[0].as<S>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t ch = 0; ch < C; ++ch) dx[(n * P + p) * C + ch] = cpu::store<S>(cpu::load<A>(dy[n * C + ch]) / count);
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

// in[0] of in_numel elements (and x of its dtype); one output of out_numel elements, same dtype.
// The kind's operand counts are checked by the caller.
void check_call(const OpCall& c, const char* op, int64_t in_numel, int64_t out_numel) {
  const DType t = c.in[0].dtype;
  for (int i = 1; i < c.n_in; ++i) cpu::check_dtype(c.in[i], t, op, "x");
  cpu::check_dtype(c.out[0], t, op, "the output");
  cpu::check_numel(c.in[0], in_numel, op, "the input");
  cpu::check_numel(c.out[0], out_numel, op, "the output");
}

}  // namespace

void avgpool_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "avgpool_fwd";
  out[0] = pooled_shape(c.in[0], checked_pool_window(attrs_of(c.attrs, op), c.in[0], op, false));
}

void avgpool_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "avgpool_bwd";
  const Shape& x = c.in[1];
  const Shape y = pooled_shape(x, checked_pool_window(attrs_of(c.attrs, op), x, op, false));
  TR_USER_CHECK(c.in[0] == y, op, ": dy ", c.in[0].str(), " must be ", y.str(), " for x ", x.str());
  out[0] = x;
}

void global_avgpool_fwd_shapes(const ShapeCtx& c, Shape* out, int) {
  check_x(c.in[0], "global_avgpool_fwd");
  out[0] = Shape{c.in[0][0], c.in[0][3]};
}

void global_avgpool_bwd_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "global_avgpool_bwd";
  const Shape& x = c.in[1];
  check_x(x, op);
  const Shape y{x[0], x[3]};
  TR_USER_CHECK(c.in[0] == y, op, ": dy ", c.in[0].str(), " must be ", y.str(), " for x ", x.str());
  out[0] = x;
}

void avgpool_fwd_cpu(const OpCall& c) {
  const char* op = "avgpool_fwd";
  check_operands(OpKind::AvgPoolFwd, c);
  const Shape& x = c.in[0].shape;
  const PoolWindow pw = checked_pool_window(attrs_of(c.attrs, op), x, op, false);
  check_call(c, op, x.numel(), pooled_shape(x, pw).numel());
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { avgpool_fwd_impl<typename decltype(tag)::type>(c, pw); });
}

void avgpool_bwd_cpu(const OpCall& c) {
  const char* op = "avgpool_bwd";
  check_operands(OpKind::AvgPoolBwd, c);
  const Shape& x = c.in[1].shape;
  const PoolWindow pw = checked_pool_window(attrs_of(c.attrs, op), x, op, false);
  check_call(c, op, pooled_shape(x, pw).numel(), x.numel());
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { avgpool_bwd_impl<typename decltype(tag)::type>(c, pw); });
}

void global_avgpool_fwd_cpu(const OpCall& c) {
  const char* op = "global_avgpool_fwd";
  check_operands(OpKind::GlobalAvgPoolFwd, c);
  TR_CHECK(c.in[0].shape.rank == 4, op, ": x must be [N,H,W,C], got ", c.in[0].shape.str());
  const Shape& x = c.in[0].shape;
  check_call(c, op, x.numel(), x[0] * x[3]);
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { global_avgpool_fwd_impl<typename decltype(tag)::type>(c); });
}

void global_avgpool_bwd_cpu(const OpCall& c) {
  const char* op = "global_avgpool_bwd";
  check_operands(OpKind::GlobalAvgPoolBwd, c);
  TR_CHECK(c.in[1].shape.rank == 4, op, ": x must be [N,H,W,C], got ", c.in[1].shape.str());
  const Shape& x = c.in[1].shape;
  check_call(c, op, x[0] * x[3], x.numel());
  cpu::dispatch_float(c.in[0].dtype, op, [&](auto tag) { global_avgpool_bwd_impl<typename decltype(tag)::type>(c); });
}

}  // namespace tr
