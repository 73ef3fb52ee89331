// Max and average pooling on the CPU as a specification (framework/ops/compute/pool.h,
// avgpool.h): forward equals a naive reference written from the definition
// (padding is -inf); backward equals central finite differences in F64 on
// distinct values (no ties within a step), overlapping windows included, and a
// naive scatter in output order bit for bit; ties send the gradient to the first
// position in scan order; f16 sums round once; the shape rules refuse bad
// windows with a UserError. OpRunner poisons every output with NaN and fails on
// unwritten elements.
#include <limits>
#include <string>

#include "framework/ops/compute/avgpool.h"
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

struct Win {
  int k, s, p;
};

OpRunner runner(Win w) {
  OpRunner r;
  r.attrs.kernel = w.k;
  r.attrs.stride = w.s;
  r.attrs.pad = w.p;
  return r;
}

int64_t out_len(int64_t n, Win w) { return (n + 2 * w.p - w.k) / w.s + 1; }
Shape pooled(const Shape& x, Win w) { return {x[0], out_len(x[1], w), out_len(x[2], w), x[3]}; }
std::string name(const Shape& x, Win w) { return cat("x", x.str(), " ", w.k, "x", w.k, "/s", w.s, "/p", w.p); }

// Windows and shapes the max pool tests sweep: non-overlapping (the cnn's
// 2x2/s2, with odd sizes cropped), overlapping (the ResNet stem's 3x3/s2/p1,
// 3x3/s1/p1 'same', 2x2/s1), a stride larger than the window (skipped rows),
// the largest padding allowed (k-1) and H != W.
struct PoolCase {
  Win w;
  Shape x;
};
const PoolCase kMaxCases[] = {
    {{2, 2, 0}, {2, 5, 5, 3}}, {{2, 2, 0}, {1, 4, 6, 2}}, {{3, 2, 1}, {2, 7, 7, 3}},
    {{3, 2, 1}, {1, 8, 6, 2}}, {{3, 1, 1}, {2, 5, 4, 3}}, {{2, 1, 0}, {1, 4, 5, 2}},
    {{1, 2, 0}, {1, 5, 4, 2}}, {{3, 2, 2}, {1, 5, 6, 2}}, {{3, 3, 0}, {1, 7, 9, 2}},
};

// y[n,oh,ow,c] = max over the window of x, padding = -inf.
HostTensor naive_maxpool(const HostTensor& x, Win w) {
  const Shape& s = x.shape();
  HostTensor y(x.dtype(), pooled(s, w));
  const Shape& ys = y.shape();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t oh = 0; oh < ys[1]; ++oh)
      for (int64_t ow = 0; ow < ys[2]; ++ow)
        for (int64_t c = 0; c < s[3]; ++c) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t kh = 0; kh < w.k; ++kh)
            for (int64_t kw = 0; kw < w.k; ++kw) {
              const int64_t ih = oh * w.s - w.p + kh, iw = ow * w.s - w.p + kw;
              if (ih >= 0 && ih < s[1] && iw >= 0 && iw < s[2])
                m = std::max(m, x.get(((n * s[1] + ih) * s[2] + iw) * s[3] + c));
            }
          y.set(((n * ys[1] + oh) * ys[2] + ow) * s[3] + c, m);
        }
  return y;
}

// dx by scattering each output's dy to the first window position equal to y,
// outputs in row-major order, summed in float (F32 tensors).
HostTensor naive_maxpool_bwd_f32(const HostTensor& dy, const HostTensor& x, const HostTensor& y, Win w) {
  const Shape& s = x.shape();
  const Shape& ys = y.shape();
  HostTensor dx(F32, s);
  dx.fill(0);
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t oh = 0; oh < ys[1]; ++oh)
      for (int64_t ow = 0; ow < ys[2]; ++ow)
        for (int64_t c = 0; c < s[3]; ++c) {
          const int64_t o = ((n * ys[1] + oh) * ys[2] + ow) * s[3] + c;
          for (int64_t kh = 0, done = 0; kh < w.k && !done; ++kh)
            for (int64_t kw = 0; kw < w.k && !done; ++kw) {
              const int64_t ih = oh * w.s - w.p + kh, iw = ow * w.s - w.p + kw;
              if (ih < 0 || ih >= s[1] || iw < 0 || iw >= s[2]) continue;
              const int64_t i = ((n * s[1] + ih) * s[2] + iw) * s[3] + c;
              if (x.get(i) == y.get(o)) {
                dx.as<float>()[i] += dy.as<float>()[o];
                done = 1;
              }
            }
        }
  return dx;
}

// ================================ max pooling ================================

TEST(OpsCpuPool, MaxPoolForwardMatchesNaive) {
  Rng rng(22);
  for (const PoolCase& pc : kMaxCases)
    for (DType t : {F16, F32, F64}) {
      SCOPED_TRACE(cat(name(pc.x, pc.w), " ", dtype_name(t)));
      const HostTensor x = random_tensor(t, pc.x, rng);
      HostTensor y(t, pooled(pc.x, pc.w));
      OpRunner run = runner(pc.w);
      EXPECT_EQ(run.shapes(maxpool_fwd_shapes, {pc.x}, 1)[0], y.shape());
      run.run(maxpool_fwd_cpu, {&x}, {&y});
      EXPECT_EQ(y.values(), naive_maxpool(x, pc.w).values());
    }
}

TEST(OpsCpuPool, MaxPoolPaddingNeverWins) {
  Rng rng(23);
  const Win w{3, 2, 1};
  HostTensor x = random_tensor(F32, {1, 5, 5, 2}, rng, -3, -1);  // all negative: a zero pad would win
  HostTensor y(F32, pooled(x.shape(), w));
  OpRunner run = runner(w);
  run.run(maxpool_fwd_cpu, {&x}, {&y});
  // Every input is below -1 and a winning zero pad gives 0: -0.5 lies between the two.
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_LT(y.get(i), -0.5) << "output " << i;
  EXPECT_EQ(y.values(), naive_maxpool(x, w).values());
}

TEST(OpsCpuPool, MaxPoolBackwardMatchesFiniteDifferences) {
  Rng rng(20);
  for (const PoolCase& pc : kMaxCases) {
    SCOPED_TRACE(name(pc.x, pc.w));
    HostTensor x = distinct_tensor(F64, pc.x, rng);
    HostTensor y(F64, pooled(pc.x, pc.w)), dx(F64, pc.x);
    HostTensor r = random_tensor(F64, y.shape(), rng);
    OpRunner run = runner(pc.w);
    run.run(maxpool_fwd_cpu, {&x}, {&y});
    run.run(maxpool_bwd_cpu, {&r, &x, &y}, {&dx});
    const auto fd = fd_gradient(x, [&] {
      run.run(maxpool_fwd_cpu, {&x}, {&y});
      return dot(y, r);
    });
    EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
  }
}

TEST(OpsCpuPool, MaxPool2CroppedRowsGetNoGradient) {
  Rng rng(24);
  HostTensor x = distinct_tensor(F64, {2, 5, 5, 3}, rng);  // odd: last row/col cropped
  HostTensor y(F64, {2, 2, 2, 3}), dx(F64, x.shape());
  HostTensor r = random_tensor(F64, y.shape(), rng);
  OpRunner run = runner({2, 2, 0});
  run.run(maxpool_fwd_cpu, {&x}, {&y});
  run.run(maxpool_bwd_cpu, {&r, &x, &y}, {&dx});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t c = 0; c < 3; ++c) {
        EXPECT_EQ(dx.get(((n * 5 + 4) * 5 + i) * 3 + c), 0.0);
        EXPECT_EQ(dx.get(((n * 5 + i) * 5 + 4) * 3 + c), 0.0);
      }
}

// With ties everywhere (small integers) and overlapping windows, the gather
// equals a scatter of each output's dy to its first maximum, in output order.
TEST(OpsCpuPool, MaxPoolBackwardEqualsNaiveScatterBitwise) {
  Rng rng(25);
  for (const PoolCase& pc : kMaxCases) {
    SCOPED_TRACE(name(pc.x, pc.w));
    HostTensor x(F32, pc.x);
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, double(int64_t(rng.below(4))));
    HostTensor y(F32, pooled(pc.x, pc.w)), dx(F32, pc.x);
    const HostTensor dy = random_tensor(F32, y.shape(), rng);
    OpRunner run = runner(pc.w);
    run.run(maxpool_fwd_cpu, {&x}, {&y});
    run.run(maxpool_bwd_cpu, {&dy, &x, &y}, {&dx});
    EXPECT_TRUE(bitwise_equal(dx, naive_maxpool_bwd_f32(dy, x, y, pc.w)));
  }
}

// The recorded winners (MaxPoolFwd's argmax) route the gradient exactly as the
// search from y does, with ties everywhere and in f32, f16 and f64; the
// forward's y is the same with or without the record.
TEST(OpsCpuPool, RecordedWinnersGiveTheSearchsBits) {
  Rng rng(26);
  for (DType t : {F32, F16, F64})
    for (const PoolCase& pc : kMaxCases) {
      SCOPED_TRACE(cat(dtype_name(t), " ", name(pc.x, pc.w)));
      HostTensor x(t, pc.x);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, double(int64_t(rng.below(4))) - 1.5);
      const Shape ys = pooled(pc.x, pc.w);
      HostTensor y(t, ys), y2(t, ys), argmax(DType::U8, ys), want(t, pc.x), got(t, pc.x);
      const HostTensor dy = random_tensor(t, ys, rng);
      OpRunner run = runner(pc.w);
      run.run(maxpool_fwd_cpu, {&x}, {&y});
      run.run(maxpool_argmax_fwd_cpu, {&x}, {&y2, &argmax});
      EXPECT_TRUE(bitwise_equal(y, y2));
      for (int64_t i = 0; i < argmax.numel(); ++i) ASSERT_LT(argmax.as<uint8_t>()[i], pc.w.k * pc.w.k);
      run.run(maxpool_bwd_cpu, {&dy, &x, &y}, {&want});
      run.run(maxpool_argmax_bwd_cpu, {&dy, &x, &argmax}, {&got});
      EXPECT_TRUE(bitwise_equal(want, got));
    }
}

TEST(OpsCpuPool, TiesSendTheGradientToTheFirstPositionInScanOrder) {
  OpRunner run = runner({2, 2, 0});
  // x[1,2,4,1]: window 0 all 1 -> (0,0); window 1 = {0,5;1,5} -> (0,3).
  HostTensor x(F32, {1, 2, 4, 1}), y(F32, {1, 1, 2, 1}), dy(F32, {1, 1, 2, 1}), dx(F32, x.shape());
  const double xv[] = {1, 1, 0, 5, 1, 1, 1, 5};
  for (int i = 0; i < 8; ++i) x.set(i, xv[i]);
  dy.set(0, 2);
  dy.set(1, 3);
  run.run(maxpool_fwd_cpu, {&x}, {&y});
  EXPECT_EQ(y.values(), (std::vector<double>{1, 5}));
  run.run(maxpool_bwd_cpu, {&dy, &x, &y}, {&dx});
  EXPECT_EQ(dx.values(), (std::vector<double>{2, 0, 0, 3, 0, 0, 0, 0}));

  // Global, x[1,2,2,2]: channel 0 all 3 -> pixel 0; channel 1 = {1,4,4,2} -> pixel 1.
  HostTensor gx(F32, {1, 2, 2, 2}), gy(F32, {1, 2}), gdy(F32, {1, 2}), gdx(F32, gx.shape());
  const double gv[] = {3, 1, 3, 4, 3, 4, 3, 2};
  for (int i = 0; i < 8; ++i) gx.set(i, gv[i]);
  gdy.set(0, 7);
  gdy.set(1, 9);
  run.run(global_maxpool_fwd_cpu, {&gx}, {&gy});
  EXPECT_EQ(gy.values(), (std::vector<double>{3, 4}));
  run.run(global_maxpool_bwd_cpu, {&gdy, &gx, &gy}, {&gdx});
  EXPECT_EQ(gdx.values(), (std::vector<double>{7, 0, 0, 9, 0, 0, 0, 0}));
}

// 3x3/s2/p1 on x[1,3,3,1]: four windows, each holding the centre.
TEST(OpsCpuPool, OverlappingWindowsTieToTheirFirstPositionAndSumASharedMaximum) {
  OpRunner run = runner({3, 2, 1});
  HostTensor x(F32, {1, 3, 3, 1}), y(F32, {1, 2, 2, 1}), dy(F32, {1, 2, 2, 1}), dx(F32, x.shape());
  for (int i = 0; i < 4; ++i) dy.set(i, i + 1);
  // All equal: window (oh,ow) starts at input (oh,ow) once padding is skipped.
  x.fill(1);
  run.run(maxpool_fwd_cpu, {&x}, {&y});
  EXPECT_EQ(y.values(), (std::vector<double>{1, 1, 1, 1}));
  run.run(maxpool_bwd_cpu, {&dy, &x, &y}, {&dx});
  EXPECT_EQ(dx.values(), (std::vector<double>{1, 2, 0, 3, 4, 0, 0, 0, 0}));
  // The centre is every window's maximum: it receives the sum 1+2+3+4.
  x.set(4, 9);
  run.run(maxpool_fwd_cpu, {&x}, {&y});
  EXPECT_EQ(y.values(), (std::vector<double>{9, 9, 9, 9}));
  run.run(maxpool_bwd_cpu, {&dy, &x, &y}, {&dx});
  EXPECT_EQ(dx.values(), (std::vector<double>{0, 0, 0, 0, 10, 0, 0, 0, 0}));
}

// f16: the overlapping gradients are summed in f32 and rounded once.
TEST(OpsCpuPool, MaxPoolF16SumsInF32AndRoundsOnce) {
  Rng rng(26);
  const Win w{3, 1, 1};  // up to 9 outputs per input
  HostTensor x(F16, {2, 6, 5, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, double(int64_t(rng.below(3))));
  HostTensor y(F16, pooled(x.shape(), w)), dx(F16, x.shape());
  const HostTensor dy = random_tensor(F16, y.shape(), rng);
  OpRunner run = runner(w);
  run.run(maxpool_fwd_cpu, {&x}, {&y});
  run.run(maxpool_bwd_cpu, {&dy, &x, &y}, {&dx});
  const HostTensor want = naive_maxpool_bwd_f32(dy.to(F32), x.to(F32), y.to(F32), w).to(F16);
  EXPECT_TRUE(bitwise_equal(dx, want));
}

TEST(OpsCpuPool, GlobalMaxPoolBackwardMatchesFiniteDifferences) {
  Rng rng(21);
  HostTensor x = distinct_tensor(F64, {2, 5, 5, 3}, rng);
  HostTensor y(F64, {2, 3}), dx(F64, x.shape());
  HostTensor r = random_tensor(F64, y.shape(), rng);
  OpRunner run;
  run.run(global_maxpool_fwd_cpu, {&x}, {&y});
  run.run(global_maxpool_bwd_cpu, {&r, &x, &y}, {&dx});
  const auto fd = fd_gradient(x, [&] {
    run.run(global_maxpool_fwd_cpu, {&x}, {&y});
    return dot(y, r);
  });
  EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
}

// ================================ average pooling ================================

const PoolCase kAvgCases[] = {
    {{2, 2, 0}, {2, 5, 5, 3}}, {{3, 1, 0}, {1, 5, 4, 2}}, {{3, 2, 0}, {2, 7, 8, 3}},
    {{1, 2, 0}, {1, 5, 5, 2}}, {{7, 1, 0}, {2, 7, 7, 3}}, {{2, 3, 0}, {1, 8, 7, 2}},
};

// y = mean of the window, in double.
HostTensor naive_avgpool(const HostTensor& x, Win w) {
  const Shape& s = x.shape();
  HostTensor y(x.dtype(), pooled(s, w));
  const Shape& ys = y.shape();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t oh = 0; oh < ys[1]; ++oh)
      for (int64_t ow = 0; ow < ys[2]; ++ow)
        for (int64_t c = 0; c < s[3]; ++c) {
          double sum = 0;
          for (int64_t kh = 0; kh < w.k; ++kh)
            for (int64_t kw = 0; kw < w.k; ++kw)
              sum += x.get(((n * s[1] + oh * w.s + kh) * s[2] + ow * w.s + kw) * s[3] + c);
          y.set(((n * ys[1] + oh) * ys[2] + ow) * s[3] + c, sum / double(w.k * w.k));
        }
  return y;
}

TEST(OpsCpuAvgPool, ForwardMatchesNaive) {
  Rng rng(30);
  for (const PoolCase& pc : kAvgCases) {
    SCOPED_TRACE(name(pc.x, pc.w));
    const HostTensor x = random_tensor(F64, pc.x, rng);
    HostTensor y(F64, pooled(pc.x, pc.w));
    OpRunner run = runner(pc.w);
    EXPECT_EQ(run.shapes(avgpool_fwd_shapes, {pc.x}, 1)[0], y.shape());
    run.run(avgpool_fwd_cpu, {&x}, {&y});
    // The op sums the window in double in the same row-major order and divides by k*k: the same bits;
    // 1e-14 would still pass another order (roundings of about 1e-16 of max |y|), and a wrong window is O(1).
    EXPECT_LT(max_rel_err(y.values(), naive_avgpool(x, pc.w).values()), 1e-14);
  }
}

TEST(OpsCpuAvgPool, BackwardMatchesFiniteDifferences) {
  Rng rng(31);
  for (const PoolCase& pc : kAvgCases) {
    SCOPED_TRACE(name(pc.x, pc.w));
    HostTensor x = random_tensor(F64, pc.x, rng);
    HostTensor y(F64, pooled(pc.x, pc.w)), dx(F64, pc.x);
    HostTensor r = random_tensor(F64, y.shape(), rng);
    OpRunner run = runner(pc.w);
    run.run(avgpool_bwd_cpu, {&r, &x}, {&dx});
    const auto fd = fd_gradient(x, [&] {
      run.run(avgpool_fwd_cpu, {&x}, {&y});
      return dot(y, r);
    });
    EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
  }
}

TEST(OpsCpuAvgPool, GlobalForwardMatchesNaive) {
  Rng rng(32);
  const HostTensor x = random_tensor(F64, {3, 4, 5, 6}, rng);
  HostTensor y(F64, {3, 6});
  OpRunner run;
  run.run(global_avgpool_fwd_cpu, {&x}, {&y});
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t c = 0; c < 6; ++c) {
      double sum = 0;
      for (int64_t p = 0; p < 20; ++p) sum += x.get((n * 20 + p) * 6 + c);
      // The same double sum over the 20 pixels in the same order, divided by 20: the same bits; 1e-15 allows
      // a few roundings of means below 1.
      EXPECT_NEAR(y.get(n * 6 + c), sum / 20, 1e-15);
    }
}

TEST(OpsCpuAvgPool, GlobalBackwardMatchesFiniteDifferences) {
  Rng rng(33);
  HostTensor x = random_tensor(F64, {2, 3, 5, 4}, rng);
  HostTensor y(F64, {2, 4}), dx(F64, x.shape());
  HostTensor r = random_tensor(F64, y.shape(), rng);
  OpRunner run;
  run.run(global_avgpool_bwd_cpu, {&r, &x}, {&dx});
  const auto fd = fd_gradient(x, [&] {
    run.run(global_avgpool_fwd_cpu, {&x}, {&y});
    return dot(y, r);
  });
  EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
}

// A window as large as the input sums the same terms in the same order as the
// global pool: the two agree bit for bit, forward and backward.
TEST(OpsCpuAvgPool, WholeInputWindowEqualsGlobalBitwise) {
  Rng rng(34);
  for (DType t : {F16, F32}) {
    SCOPED_TRACE(dtype_name(t));
    const HostTensor x = random_tensor(t, {2, 7, 7, 5}, rng);
    const HostTensor dy = random_tensor(t, {2, 1, 1, 5}, rng);
    HostTensor y(t, {2, 1, 1, 5}), gy(t, {2, 5}), dx(t, x.shape()), gdx(t, x.shape());
    OpRunner run = runner({7, 1, 0});
    run.run(avgpool_fwd_cpu, {&x}, {&y});
    run.run(global_avgpool_fwd_cpu, {&x}, {&gy});
    EXPECT_TRUE(bitwise_equal(y, gy));
    run.run(avgpool_bwd_cpu, {&dy, &x}, {&dx});
    run.run_refs(global_avgpool_bwd_cpu, {dy.ref_as({2, 5}), x.ref()}, {gdx.ref()});
    EXPECT_TRUE(bitwise_equal(dx, gdx));
  }
}

// f16: each output is the f32 result (same values, same order) rounded once.
TEST(OpsCpuAvgPool, F16IsTheF32ResultRoundedOnce) {
  Rng rng(35);
  const Win w{3, 1, 0};
  const HostTensor x16 = random_tensor(F16, {2, 6, 5, 8}, rng);
  const HostTensor x32 = x16.to(F32);
  const Shape ys = pooled(x16.shape(), w);
  const HostTensor dy16 = random_tensor(F16, ys, rng);
  const HostTensor dy32 = dy16.to(F32);
  OpRunner run = runner(w);
  auto expect_rounded_once = [&](OpFn fn, std::vector<const HostTensor*> in16, std::vector<const HostTensor*> in32,
                                 Shape out) {
    HostTensor o16(F16, out), o32(F32, out);
    run.run(fn, in16, {&o16});
    run.run(fn, in32, {&o32});
    EXPECT_TRUE(bitwise_equal(o16, o32.to(F16)));
  };
  expect_rounded_once(avgpool_fwd_cpu, {&x16}, {&x32}, ys);
  expect_rounded_once(avgpool_bwd_cpu, {&dy16, &x16}, {&dy32, &x32}, x16.shape());
  const HostTensor gdy16 = random_tensor(F16, {2, 8}, rng);
  const HostTensor gdy32 = gdy16.to(F32);
  expect_rounded_once(global_avgpool_fwd_cpu, {&x16}, {&x32}, {2, 8});
  expect_rounded_once(global_avgpool_bwd_cpu, {&gdy16, &x16}, {&gdy32, &x32}, x16.shape());
}

// ================================ shape rules ================================

// Runs a shape rule and returns its UserError message ("" when it accepts).
std::string refusal(ShapeFn fn, Win w, const std::vector<Shape>& in, int n_out = 1) {
  try {
    runner(w).shapes(fn, in, n_out);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(OpsCpuPoolShapes, MaxPoolWindows) {
  const Shape x{2, 112, 112, 64}, y{2, 56, 56, 64};
  EXPECT_EQ(runner({3, 2, 1}).shapes(maxpool_fwd_shapes, {x}, 1)[0], y);  // the ResNet-50 stem
  EXPECT_EQ(runner({3, 2, 1}).shapes(maxpool_bwd_shapes, {y, x, y}, 1)[0], x);
  EXPECT_EQ(runner({3, 1, 1}).shapes(maxpool_fwd_shapes, {{2, 5, 4, 3}}, 1)[0], (Shape{2, 5, 4, 3}));
  EXPECT_EQ(runner({2, 2, 0}).shapes(maxpool_fwd_shapes, {{2, 5, 7, 3}}, 1)[0], (Shape{2, 2, 3, 3}));
  EXPECT_EQ(runner({3, 2, 2}).shapes(maxpool_fwd_shapes, {{1, 1, 1, 1}}, 1)[0], (Shape{1, 2, 2, 1}));

  EXPECT_EQ(refusal(maxpool_fwd_shapes, {2, 2, 0}, {{2, 1, 1, 8}}),
            "maxpool_fwd: x [2,1,1,8] is smaller than the 2x2 window");
  EXPECT_EQ(refusal(maxpool_fwd_shapes, {5, 1, 1}, {{2, 2, 6, 8}}),
            "maxpool_fwd: x [2,2,6,8] padded by 1 is smaller than the 5x5 window");
  EXPECT_EQ(refusal(maxpool_fwd_shapes, {3, 2, 3}, {x}), "maxpool_fwd: pad must be in [0, kernel) = [0, 3), got 3");
  EXPECT_NE(refusal(maxpool_fwd_shapes, {3, 2, -1}, {x}), "");
  EXPECT_EQ(refusal(maxpool_fwd_shapes, {3, 0, 1}, {x}), "maxpool_fwd: stride must be >= 1, got 0");
  EXPECT_EQ(refusal(maxpool_fwd_shapes, {0, 1, 0}, {x}), "maxpool_fwd: kernel must be >= 1, got 0");
  EXPECT_NE(refusal(maxpool_fwd_shapes, {2, 2, 0}, {{2, 5, 3}}), "");
  EXPECT_NE(refusal(maxpool_bwd_shapes, {3, 2, 1}, {{2, 55, 56, 64}, x, y}), "");
  EXPECT_NE(refusal(maxpool_bwd_shapes, {3, 2, 1}, {y, x, {2, 56, 56, 32}}), "");
  EXPECT_NE(refusal(maxpool_bwd_shapes, {3, 2, 4}, {y, x, y}), "");
}

TEST(OpsCpuPoolShapes, MaxPoolKernelsRefuseABadWindowToo) {
  HostTensor x(F32, {1, 4, 4, 2}), y(F32, {1, 2, 2, 2});
  x.fill(0);
  OpRunner run = runner({3, 0, 1});
  run.check_finite = false;
  EXPECT_THROW(run.run(maxpool_fwd_cpu, {&x}, {&y}), UserError);
}

TEST(OpsCpuPoolShapes, GlobalMaxPool) {
  OpRunner r;
  const Shape x{2, 5, 5, 3}, g{2, 3};
  EXPECT_EQ(r.shapes(global_maxpool_fwd_shapes, {x}, 1)[0], g);
  EXPECT_EQ(r.shapes(global_maxpool_bwd_shapes, {g, x, g}, 1)[0], x);
  EXPECT_THROW(r.shapes(global_maxpool_bwd_shapes, {{2, 4}, x, g}, 1), UserError);
}

TEST(OpsCpuPoolShapes, AvgPoolWindows) {
  const Shape x{2, 7, 8, 16};
  EXPECT_EQ(runner({2, 2, 0}).shapes(avgpool_fwd_shapes, {x}, 1)[0], (Shape{2, 3, 4, 16}));
  EXPECT_EQ(runner({3, 1, 0}).shapes(avgpool_bwd_shapes, {{2, 5, 6, 16}, x}, 1)[0], x);
  EXPECT_EQ(refusal(avgpool_fwd_shapes, {3, 2, 1}, {x}),
            "avgpool_fwd: pad must be 0 (this pooling has no padding), got 1");
  EXPECT_EQ(refusal(avgpool_fwd_shapes, {8, 1, 0}, {x}), "avgpool_fwd: x [2,7,8,16] is smaller than the 8x8 window");
  EXPECT_EQ(refusal(avgpool_fwd_shapes, {2, 0, 0}, {x}), "avgpool_fwd: stride must be >= 1, got 0");
  EXPECT_NE(refusal(avgpool_fwd_shapes, {0, 1, 0}, {x}), "");
  EXPECT_NE(refusal(avgpool_bwd_shapes, {2, 2, 0}, {{2, 3, 3, 16}, x}), "");
  EXPECT_NE(refusal(avgpool_bwd_shapes, {2, 2, 0}, {{2, 3, 4, 16}, {2, 7, 8}}), "");
}

TEST(OpsCpuPoolShapes, GlobalAvgPool) {
  OpRunner r;
  const Shape x{8, 7, 7, 2048}, g{8, 2048};
  EXPECT_EQ(r.shapes(global_avgpool_fwd_shapes, {x}, 1)[0], g);
  EXPECT_EQ(r.shapes(global_avgpool_bwd_shapes, {g, x}, 1)[0], x);
  EXPECT_THROW(r.shapes(global_avgpool_fwd_shapes, {{8, 49, 2048}}, 1), UserError);
  EXPECT_THROW(r.shapes(global_avgpool_fwd_shapes, {{8, 0, 7, 2048}}, 1), UserError);
  EXPECT_THROW(r.shapes(global_avgpool_bwd_shapes, {{8, 1024}, x}, 1), UserError);
}

}  // namespace
}  // namespace tr::test
