// The CPU convolution as a specification, over a matrix of windows, strides and
// paddings (1x1 to 7x7, stride 1 to 3, odd sizes, H != W): forward and both
// gradients equal naive NHWC/KRSC loops, the gradients equal central finite
// differences in F64, chunked im2col equals unchunked, results repeat bit for
// bit, and the data gradient of a stride-1 convolution is bit for bit the
// forward one with flipped weights (the formulation the 3x3-only code used).
// Shape rules: ops_cpu_conv_shapes_test.cpp.
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

// x[N,H,W,C], w[K,R,R,C], y[N,Ho,Wo,K].
struct ConvCase {
  int64_t N, H, W, C, K;
  int R, stride, pad;
  int64_t Ho() const { return conv_out_size(H, R, stride, pad); }
  int64_t Wo() const { return conv_out_size(W, R, stride, pad); }
  Shape x() const { return Shape{N, H, W, C}; }
  Shape w() const { return Shape{K, R, R, C}; }
  Shape y() const { return Shape{N, Ho(), Wo(), K}; }
  OpAttrs attrs() const {
    OpAttrs a;
    a.kernel = R;
    a.stride = stride;
    a.pad = pad;
    return a;
  }
  std::string str() const {
    return cat("x", x().str(), " w", w().str(), " ", R, "x", R, " stride ", stride, " pad ", pad, " -> y", y().str());
  }
};

const ConvCase kCases[] = {
    {2, 5, 4, 3, 4, 3, 1, 1},    // the cnn's 3x3 / stride 1 / pad 1, H != W
    {2, 5, 4, 3, 6, 1, 1, 0},    // 1x1 (bottleneck)
    {2, 7, 6, 8, 5, 1, 2, 0},    // 1x1 stride 2 (ResNet projection shortcut), odd H
    {2, 7, 8, 3, 4, 3, 2, 1},    // 3x3 stride 2 pad 1, odd H, even W
    {1, 8, 6, 5, 3, 3, 2, 1},    // 3x3 stride 2 pad 1, even sizes
    {2, 13, 11, 3, 4, 7, 2, 3},  // 7x7 stride 2 pad 3 (ResNet-50 stem), small image
    {1, 6, 5, 2, 3, 3, 1, 0},    // 3x3 without padding
    {1, 4, 5, 2, 3, 3, 1, 2},    // padding R-1: every window that touches x
    {2, 9, 10, 2, 3, 5, 3, 2},   // 5x5 stride 3
    {1, 6, 7, 3, 2, 2, 2, 0},    // even window
    {1, 8, 8, 2, 3, 4, 2, 1},    // even window with padding
    {2, 3, 3, 2, 3, 3, 1, 0},    // the window is the whole image: 1x1 output
    {1, 7, 7, 2, 2, 1, 3, 0},    // stride larger than the window: skipped pixels
};

// ---- naive references (NHWC, KRSC): one loop nest, three accumulations ----

// Calls f(y index, x index, w index) for every (output pixel, tap, k, c) whose
// tap lands inside x.
template <class F>
void for_each_tap(const ConvCase& d, F&& f) {
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t oh = 0; oh < d.Ho(); ++oh)
      for (int64_t ow = 0; ow < d.Wo(); ++ow)
        for (int64_t r = 0; r < d.R; ++r)
          for (int64_t q = 0; q < d.R; ++q) {
            const int64_t ih = oh * d.stride + r - d.pad, iw = ow * d.stride + q - d.pad;
            if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) continue;
            for (int64_t k = 0; k < d.K; ++k)
              for (int64_t c = 0; c < d.C; ++c)
                f(size_t(((n * d.Ho() + oh) * d.Wo() + ow) * d.K + k), size_t(((n * d.H + ih) * d.W + iw) * d.C + c),
                  size_t(((k * d.R + r) * d.R + q) * d.C + c));
          }
}

std::vector<double> naive_conv_fwd(const std::vector<double>& x, const std::vector<double>& w, const ConvCase& d) {
  std::vector<double> y(size_t(d.y().numel()), 0.0);
  for_each_tap(d, [&](size_t yi, size_t xi, size_t wi) { y[yi] += x[xi] * w[wi]; });
  return y;
}

std::vector<double> naive_conv_bwd_data(const std::vector<double>& dy, const std::vector<double>& w,
                                        const ConvCase& d) {
  std::vector<double> dx(size_t(d.x().numel()), 0.0);
  for_each_tap(d, [&](size_t yi, size_t xi, size_t wi) { dx[xi] += dy[yi] * w[wi]; });
  return dx;
}

std::vector<double> naive_conv_bwd_filter(const std::vector<double>& x, const std::vector<double>& dy,
                                          const ConvCase& d) {
  std::vector<double> dw(size_t(d.w().numel()), 0.0);
  for_each_tap(d, [&](size_t yi, size_t xi, size_t wi) { dw[wi] += dy[yi] * x[xi]; });
  return dw;
}

// The three ops of one case on one runner (attrs set from the case).
struct ConvRun {
  const ConvCase& d;
  OpRunner run;
  explicit ConvRun(const ConvCase& c) : d(c) { run.attrs = c.attrs(); }
  void fwd(const HostTensor& x, const HostTensor& w, HostTensor& y) { run.run(conv_fwd_cpu, {&x, &w}, {&y}); }
  void bwd_data(const HostTensor& dy, const HostTensor& w, const HostTensor& x, HostTensor& dx) {
    run.run(conv_bwd_data_cpu, {&dy, &w, &x}, {&dx});
  }
  void bwd_filter(const HostTensor& x, const HostTensor& dy, HostTensor& dw) {
    run.run(conv_bwd_filter_cpu, {&x, &dy}, {&dw});
  }
};

TEST(OpsCpuConv, ForwardAndBackwardsMatchNaive) {
  for (DType t : {F32, F64})
    for (const ConvCase& d : kCases) {
      SCOPED_TRACE(cat(dtype_name(t), " ", d.str()));
      Rng rng(1);
      HostTensor x = random_tensor(t, d.x(), rng), w = random_tensor(t, d.w(), rng);
      HostTensor dy = random_tensor(t, d.y(), rng);
      HostTensor y(t, d.y()), dx(t, d.x()), dw(t, d.w());
      ConvRun r(d);
      r.fwd(x, w, y);
      r.bwd_data(dy, w, x, dx);
      r.bwd_filter(x, dy, dw);
      // Each element within Note [sum error bound] of the double reference: sums of R*R*C products (the
      // forward), at most R*R*K (the data gradient) and N*Ho*Wo (the filter gradient). A wrong tap, stride
      // or padding is off by a whole term.
      const auto ax = abs_values(x), aw = abs_values(w), ady = abs_values(dy);
      expect_within_sum_bound(y.values(), naive_conv_fwd(x.values(), w.values(), d), naive_conv_fwd(ax, aw, d),
                              d.R * d.R * d.C, t, "y");
      expect_within_sum_bound(dx.values(), naive_conv_bwd_data(dy.values(), w.values(), d),
                              naive_conv_bwd_data(ady, aw, d), d.R * d.R * d.K, t, "dx");
      expect_within_sum_bound(dw.values(), naive_conv_bwd_filter(x.values(), dy.values(), d),
                              naive_conv_bwd_filter(ax, ady, d), d.N * d.Ho() * d.Wo(), t, "dw");
    }
}

// L = sum(y * r), so dL/dy = r.
TEST(OpsCpuConv, BwdDataMatchesFiniteDifferences) {
  for (const ConvCase& d : kCases) {
    SCOPED_TRACE(d.str());
    Rng rng(2);
    HostTensor x = random_tensor(F64, d.x(), rng), w = random_tensor(F64, d.w(), rng);
    HostTensor r = random_tensor(F64, d.y(), rng);
    HostTensor y(F64, d.y()), dx(F64, d.x());
    ConvRun run(d);
    run.bwd_data(r, w, x, dx);
    const auto fd = fd_gradient(x, [&] {
      run.fwd(x, w, y);
      return dot(y, r);
    });
    EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
  }
}

TEST(OpsCpuConv, BwdFilterMatchesFiniteDifferences) {
  for (const ConvCase& d : kCases) {
    SCOPED_TRACE(d.str());
    Rng rng(3);
    HostTensor x = random_tensor(F64, d.x(), rng), w = random_tensor(F64, d.w(), rng);
    HostTensor r = random_tensor(F64, d.y(), rng);
    HostTensor y(F64, d.y()), dw(F64, d.w());
    ConvRun run(d);
    run.bwd_filter(x, r, dw);
    const auto fd = fd_gradient(w, [&] {
      run.fwd(x, w, y);
      return dot(y, r);
    });
    EXPECT_LT(max_rel_err(dw.values(), fd), kFdTol);
  }
}

// Pixels no window reaches (skipped by the stride, or past the last window)
// get an exact zero gradient, not a rounding residue.
TEST(OpsCpuConv, BwdDataIsZeroWhereNoWindowReaches) {
  const ConvCase d{2, 8, 7, 3, 4, 3, 3, 0};  // rows/cols 0..2 and 3..5 are read, 6 and 7 never
  Rng rng(7);
  HostTensor w = random_tensor(F32, d.w(), rng), dy = random_tensor(F32, d.y(), rng);
  HostTensor x(F32, d.x()), dx(F32, d.x());
  x.poison();  // shape only: a read would show as NaN in dx
  ConvRun(d).bwd_data(dy, w, x, dx);
  int64_t zeros = 0;
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t v = 0; v < d.W; ++v)
        for (int64_t c = 0; c < d.C; ++c) {
          const double g = dx.get(((n * d.H + h) * d.W + v) * d.C + c);
          if (h >= 6 || v >= 6) {
            EXPECT_EQ(g, 0.0) << "dx[" << n << "," << h << "," << v << "," << c << "]";
            ++zeros;
          } else {
            EXPECT_NE(g, 0.0);
          }
        }
  EXPECT_EQ(zeros, d.N * d.C * (8 * 7 - 6 * 6));
}

// Large enough that the im2col buffer (16 MB of float; columns P x R*R*C) is
// split into pixel chunks, mid-image, in every direction: forward and filter
// 18432 x 288 columns, data 73728 x 144.
TEST(OpsCpuConv, ChunkedMatchesNaive) {
  for (const ConvCase& d : {ConvCase{8, 32, 32, 64, 4, 3, 1, 1}, ConvCase{8, 96, 96, 32, 16, 3, 2, 1}}) {
    SCOPED_TRACE(d.str());
    Rng rng(4);
    HostTensor x = random_tensor(F64, d.x(), rng), w = random_tensor(F64, d.w(), rng);
    HostTensor dy = random_tensor(F64, d.y(), rng);
    HostTensor y(F64, d.y()), dx(F64, d.x()), dw(F64, d.w());
    ConvRun r(d);
    r.fwd(x, w, y);
    r.bwd_data(dy, w, x, dx);
    r.bwd_filter(x, dy, dw);
    // Double sums of up to 18432 products (dw over 8 x 48 x 48 pixels, chunk by chunk): about 1e-14 of
    // max |dw|; 1e-12 leaves 100x, and a chunk dropped or counted twice is O(1).
    EXPECT_LT(max_rel_err(y.values(), naive_conv_fwd(x.values(), w.values(), d)), 1e-12);
    EXPECT_LT(max_rel_err(dx.values(), naive_conv_bwd_data(dy.values(), w.values(), d)), 1e-12);
    EXPECT_LT(max_rel_err(dw.values(), naive_conv_bwd_filter(x.values(), dy.values(), d)), 1e-12);
  }
}

TEST(OpsCpuConv, DeterministicRunToRun) {
  for (const ConvCase& d : {ConvCase{8, 32, 32, 64, 16, 3, 1, 1}, ConvCase{4, 45, 45, 3, 16, 7, 2, 3}}) {
    for (DType t : {F32, F16}) {
      SCOPED_TRACE(cat(dtype_name(t), " ", d.str()));
      Rng rng(5);
      HostTensor x = random_tensor(t, d.x(), rng), w = random_tensor(t, d.w(), rng);
      HostTensor dy = random_tensor(t, d.y(), rng);
      HostTensor y1(t, d.y()), y2 = y1, dx1(t, d.x()), dx2 = dx1, dw1(t, d.w()), dw2 = dw1;
      ConvRun r(d);
      r.fwd(x, w, y1);
      r.bwd_data(dy, w, x, dx1);
      r.bwd_filter(x, dy, dw1);
      r.fwd(x, w, y2);
      r.bwd_data(dy, w, x, dx2);
      r.bwd_filter(x, dy, dw2);
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.bytes()), 0);
      EXPECT_EQ(std::memcmp(dx1.data(), dx2.data(), dx1.bytes()), 0);
      EXPECT_EQ(std::memcmp(dw1.data(), dw2.data(), dw1.bytes()), 0);
    }
  }
}

// With stride 1 the data gradient is the forward convolution of dy with
// w'[c,r,s,k] = w[k,R-1-r,R-1-s,c] and padding R-1-pad, bit for bit (same
// columns, same GEMMs). For 3x3 / pad 1 this is the formulation of the former
// 3x3-only code, so this also pins that path: in f32 and f16, chunked or not.
TEST(OpsCpuConv, StrideOneBwdDataIsForwardWithFlippedWeights) {
  const ConvCase cases[] = {{2, 5, 4, 3, 4, 3, 1, 1},
                            {8, 32, 32, 64, 64, 3, 1, 1},
                            {1, 6, 5, 2, 3, 3, 1, 0},
                            {2, 9, 10, 2, 3, 5, 1, 2},
                            {2, 5, 4, 3, 6, 1, 1, 0}};
  for (DType t : {F32, F16})
    for (const ConvCase& d : cases) {
      SCOPED_TRACE(cat(dtype_name(t), " ", d.str()));
      Rng rng(8);
      HostTensor w = random_tensor(t, d.w(), rng), dy = random_tensor(t, d.y(), rng), x(t, d.x());
      x.poison();  // shape only
      HostTensor wf(t, Shape{d.C, d.R, d.R, d.K});
      for (int64_t k = 0; k < d.K; ++k)
        for (int64_t r = 0; r < d.R; ++r)
          for (int64_t s = 0; s < d.R; ++s)
            for (int64_t c = 0; c < d.C; ++c)
              wf.set(((c * d.R + r) * d.R + s) * d.K + k,
                     w.get(((k * d.R + (d.R - 1 - r)) * d.R + (d.R - 1 - s)) * d.C + c));
      HostTensor dx(t, d.x()), dx_fwd(t, d.x());
      ConvRun(d).bwd_data(dy, w, x, dx);
      OpRunner fwd;
      fwd.attrs = d.attrs();
      fwd.attrs.pad = d.R - 1 - d.pad;
      fwd.run(conv_fwd_cpu, {&dy, &wf}, {&dx_fwd});
      EXPECT_EQ(std::memcmp(dx.data(), dx_fwd.data(), dx.bytes()), 0);
    }
}

TEST(OpsCpuConv, MixedDtypesAreAnInternalError) {
  Rng rng(6);
  HostTensor x = random_tensor(F32, {1, 3, 3, 2}, rng), w = random_tensor(F64, {2, 3, 3, 2}, rng);
  HostTensor y(F32, {1, 3, 3, 2});
  OpRunner run;
  run.attrs.kernel = 3;
  run.attrs.pad = 1;
  run.check_finite = false;
  EXPECT_THROW(run.run(conv_fwd_cpu, {&x, &w}, {&y}), Error);
}

}  // namespace
}  // namespace tr::test
