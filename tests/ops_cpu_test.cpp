// The CPU reference kernels as a specification:
//   - every backward equals central finite differences of its forward, in F64;
//   - conv3x3 / fc forward equal naive loops; BN folding equals batch-stat BN;
//   - synchronised BN over split batches equals BN over the whole batch;
//   - F16 storage matches F32 to fp16 rounding;
//   - shape rules give the documented shapes and reject bad ones with UserError.
// OpRunner poisons every output with NaN before a call and fails the test when
// an output element is left unwritten.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "framework/ops/batchnorm.h"
#include "framework/ops/conv3x3.h"
#include "framework/ops/fc.h"
#include "framework/ops/input_prep.h"
#include "framework/ops/pool.h"
#include "framework/ops/relu.h"
#include "framework/ops/softmax_xent.h"
#include "tests/op_test_util.h"

namespace tr::test {
namespace {

constexpr DType F16 = DType::F16, F32 = DType::F32, F64 = DType::F64;
constexpr double kFdTol = 1e-6;

double dot(const HostTensor& a, const HostTensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get(i) * b.get(i);
  return s;
}

// Values on a shuffled ramp: all distinct, gaps >= 0.09 (no max ties, no kinks
// within a finite-difference step).
HostTensor distinct_tensor(DType t, Shape s, Rng& rng) {
  HostTensor r(t, s);
  std::vector<int64_t> perm(size_t(r.numel()));
  std::iota(perm.begin(), perm.end(), 0);
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  for (int64_t i = 0; i < r.numel(); ++i)
    r.set(i, double(perm[size_t(i)] - r.numel() / 2) * 0.1 + 0.01 * rng.uniform());
  return r;
}

// ---- naive references (NHWC, KRSC) ----

struct ConvDims {
  int64_t N, H, W, C, K;
};

std::vector<double> naive_conv_fwd(const std::vector<double>& x, const std::vector<double>& w, ConvDims d) {
  std::vector<double> y(size_t(d.N * d.H * d.W * d.K), 0.0);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t v = 0; v < d.W; ++v)
        for (int64_t k = 0; k < d.K; ++k) {
          double s = 0;
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t q = 0; q < 3; ++q) {
              const int64_t ih = h + r - 1, iw = v + q - 1;
              if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) continue;
              for (int64_t c = 0; c < d.C; ++c)
                s += x[size_t(((n * d.H + ih) * d.W + iw) * d.C + c)] * w[size_t(((k * 3 + r) * 3 + q) * d.C + c)];
            }
          y[size_t(((n * d.H + h) * d.W + v) * d.K + k)] = s;
        }
  return y;
}

std::vector<double> naive_conv_bwd_data(const std::vector<double>& dy, const std::vector<double>& w, ConvDims d) {
  std::vector<double> dx(size_t(d.N * d.H * d.W * d.C), 0.0);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t v = 0; v < d.W; ++v)
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t q = 0; q < 3; ++q) {
            const int64_t ih = h + r - 1, iw = v + q - 1;
            if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) continue;
            for (int64_t k = 0; k < d.K; ++k)
              for (int64_t c = 0; c < d.C; ++c)
                dx[size_t(((n * d.H + ih) * d.W + iw) * d.C + c)] +=
                    dy[size_t(((n * d.H + h) * d.W + v) * d.K + k)] * w[size_t(((k * 3 + r) * 3 + q) * d.C + c)];
          }
  return dx;
}

std::vector<double> naive_conv_bwd_filter(const std::vector<double>& x, const std::vector<double>& dy, ConvDims d) {
  std::vector<double> dw(size_t(d.K * 9 * d.C), 0.0);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t v = 0; v < d.W; ++v)
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t q = 0; q < 3; ++q) {
            const int64_t ih = h + r - 1, iw = v + q - 1;
            if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) continue;
            for (int64_t k = 0; k < d.K; ++k)
              for (int64_t c = 0; c < d.C; ++c)
                dw[size_t(((k * 3 + r) * 3 + q) * d.C + c)] +=
                    dy[size_t(((n * d.H + h) * d.W + v) * d.K + k)] * x[size_t(((n * d.H + ih) * d.W + iw) * d.C + c)];
          }
  return dw;
}

// ================================ conv3x3 ================================

TEST(OpsCpuConv, ForwardMatchesNaive) {
  for (DType t : {F32, F64}) {
    Rng rng(1);
    const ConvDims d{2, 5, 4, 3, 4};  // H != W catches swapped axes
    HostTensor x = random_tensor(t, {d.N, d.H, d.W, d.C}, rng);
    HostTensor w = random_tensor(t, {d.K, 3, 3, d.C}, rng);
    HostTensor y(t, {d.N, d.H, d.W, d.K});
    OpRunner run;
    run.run(conv3x3_fwd_cpu, {&x, &w}, {&y});
    EXPECT_LT(max_rel_err(y.values(), naive_conv_fwd(x.values(), w.values(), d)), t == F64 ? 1e-13 : 1e-6)
        << dtype_name(t);
  }
}

TEST(OpsCpuConv, BwdDataMatchesFiniteDifferences) {
  Rng rng(2);
  const ConvDims d{2, 5, 5, 3, 4};
  HostTensor x = random_tensor(F64, {d.N, d.H, d.W, d.C}, rng);
  HostTensor w = random_tensor(F64, {d.K, 3, 3, d.C}, rng);
  HostTensor r = random_tensor(F64, {d.N, d.H, d.W, d.K}, rng);  // L = sum(y * r), so dy = r
  HostTensor y(F64, {d.N, d.H, d.W, d.K}), dx(F64, {d.N, d.H, d.W, d.C});
  OpRunner run;
  run.run(conv3x3_bwd_data_cpu, {&r, &w}, {&dx});
  const auto fd = fd_gradient(x, [&] {
    run.run(conv3x3_fwd_cpu, {&x, &w}, {&y});
    return dot(y, r);
  });
  EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
}

TEST(OpsCpuConv, BwdFilterMatchesFiniteDifferences) {
  Rng rng(3);
  const ConvDims d{2, 5, 5, 3, 4};
  HostTensor x = random_tensor(F64, {d.N, d.H, d.W, d.C}, rng);
  HostTensor w = random_tensor(F64, {d.K, 3, 3, d.C}, rng);
  HostTensor r = random_tensor(F64, {d.N, d.H, d.W, d.K}, rng);
  HostTensor y(F64, {d.N, d.H, d.W, d.K}), dw(F64, {d.K, 3, 3, d.C});
  OpRunner run;
  run.run(conv3x3_bwd_filter_cpu, {&x, &r}, {&dw});
  const auto fd = fd_gradient(w, [&] {
    run.run(conv3x3_fwd_cpu, {&x, &w}, {&y});
    return dot(y, r);
  });
  EXPECT_LT(max_rel_err(dw.values(), fd), kFdTol);
}

// Large enough that the im2col buffer is split into pixel chunks (mid-image).
TEST(OpsCpuConv, ChunkedMatchesNaive) {
  Rng rng(4);
  const ConvDims d{8, 32, 32, 64, 4};
  HostTensor x = random_tensor(F64, {d.N, d.H, d.W, d.C}, rng);
  HostTensor w = random_tensor(F64, {d.K, 3, 3, d.C}, rng);
  HostTensor dy = random_tensor(F64, {d.N, d.H, d.W, d.K}, rng);
  HostTensor y(F64, {d.N, d.H, d.W, d.K}), dx(F64, x.shape()), dw(F64, w.shape());
  OpRunner run;
  run.run(conv3x3_fwd_cpu, {&x, &w}, {&y});
  run.run(conv3x3_bwd_data_cpu, {&dy, &w}, {&dx});
  run.run(conv3x3_bwd_filter_cpu, {&x, &dy}, {&dw});
  EXPECT_LT(max_rel_err(y.values(), naive_conv_fwd(x.values(), w.values(), d)), 1e-12);
  EXPECT_LT(max_rel_err(dx.values(), naive_conv_bwd_data(dy.values(), w.values(), d)), 1e-12);
  EXPECT_LT(max_rel_err(dw.values(), naive_conv_bwd_filter(x.values(), dy.values(), d)), 1e-12);
}

TEST(OpsCpuConv, DeterministicRunToRun) {
  Rng rng(5);
  HostTensor x = random_tensor(F32, {8, 32, 32, 64}, rng);
  HostTensor w = random_tensor(F32, {16, 3, 3, 64}, rng);
  HostTensor dy = random_tensor(F32, {8, 32, 32, 16}, rng);
  HostTensor y1(F32, {8, 32, 32, 16}), y2 = y1, dw1(F32, w.shape()), dw2 = dw1;
  OpRunner run;
  run.run(conv3x3_fwd_cpu, {&x, &w}, {&y1});
  run.run(conv3x3_bwd_filter_cpu, {&x, &dy}, {&dw1});
  run.run(conv3x3_fwd_cpu, {&x, &w}, {&y2});
  run.run(conv3x3_bwd_filter_cpu, {&x, &dy}, {&dw2});
  EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.bytes()), 0);
  EXPECT_EQ(std::memcmp(dw1.data(), dw2.data(), dw1.bytes()), 0);
}

TEST(OpsCpuConv, MixedDtypesAreAnInternalError) {
  Rng rng(6);
  HostTensor x = random_tensor(F32, {1, 3, 3, 2}, rng), w = random_tensor(F64, {2, 3, 3, 2}, rng);
  HostTensor y(F32, {1, 3, 3, 2});
  OpRunner run;
  run.check_finite = false;
  EXPECT_THROW(run.run(conv3x3_fwd_cpu, {&x, &w}, {&y}), Error);
}

// ================================ batchnorm ================================

// BnStats -> BnReluApply, and BnReluBwdReduce -> BnReluBwdApply, on one rank.
struct BnChain {
  OpRunner run;
  HostTensor x, gamma, beta, sums, y, batch;
  HostTensor dgamma, dbeta, dsums, dx;

  BnChain(DType t, Shape xs, Rng& rng, bool relu, int64_t global_batch) {
    const DType st = t == F64 ? F64 : F32;  // "f32" statistics
    const int64_t C = xs[3];
    run.attrs.relu = relu;
    run.attrs.eps = 1e-3f;
    run.variant.batch = xs[0];
    run.variant.global_batch = global_batch;
    x = random_tensor(t, xs, rng, -1, 2);
    gamma = random_tensor(t, {C}, rng, 0.5, 1.5);
    beta = random_tensor(t, {C}, rng, -0.5, 0.5);
    sums = HostTensor(st, {2, C});
    batch = HostTensor(st, {2, C});
    dsums = HostTensor(st, {2, C});
    y = HostTensor(t, xs);
    dx = HostTensor(t, xs);
    dgamma = HostTensor(t, {C});
    dbeta = HostTensor(t, {C});
  }
  void forward() {
    run.run(bn_stats_cpu, {&x}, {&sums});
    run.run(bn_relu_apply_cpu, {&x, &sums, &gamma, &beta}, {&y, &batch});
  }
  void backward(const HostTensor& dy) {
    run.run(bn_relu_bwd_reduce_cpu, {&dy, &y, &x, &batch}, {&dgamma, &dbeta, &dsums});
    run.run(bn_relu_bwd_apply_cpu, {&dy, &y, &x, &batch, &gamma, &dsums}, {&dx});
  }
};

TEST(OpsCpuBatchNorm, BatchStatisticsAreMeanAndBiasedVariance) {
  Rng rng(10);
  BnChain bn(F64, {2, 5, 5, 3}, rng, true, 2);
  bn.forward();
  const int64_t C = 3, P = bn.x.numel() / C;
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    for (int64_t p = 0; p < P; ++p) mean += bn.x.get(p * C + c) / double(P);
    for (int64_t p = 0; p < P; ++p) var += (bn.x.get(p * C + c) - mean) * (bn.x.get(p * C + c) - mean) / double(P);
    EXPECT_NEAR(bn.batch.get(c), mean, 1e-12);
    EXPECT_NEAR(bn.batch.get(C + c), var, 1e-12);
  }
}

TEST(OpsCpuBatchNorm, BackwardMatchesFiniteDifferences) {
  for (bool relu : {true, false}) {
    SCOPED_TRACE(relu ? "relu" : "no relu");
    Rng rng(11);
    BnChain bn(F64, {2, 5, 5, 3}, rng, relu, 2);
    HostTensor r = random_tensor(F64, bn.x.shape(), rng);
    if (relu) {  // no pre-activation within a step of the ReLU kink
      BnChain lin = bn;
      lin.run.attrs.relu = false;
      lin.forward();
      double closest = 1e9;
      for (int64_t i = 0; i < lin.y.numel(); ++i) closest = std::min(closest, std::fabs(lin.y.get(i)));
      ASSERT_GT(closest, 1e-4);
    }
    bn.forward();
    bn.backward(r);
    for (int64_t c = 0; c < 3; ++c) {  // dsums = (dbeta, dgamma)
      EXPECT_EQ(bn.dsums.get(c), bn.dbeta.get(c));
      EXPECT_EQ(bn.dsums.get(3 + c), bn.dgamma.get(c));
    }
    BnChain probe = bn;
    auto loss = [&] {
      probe.forward();
      return dot(probe.y, r);
    };
    EXPECT_LT(max_rel_err(bn.dx.values(), fd_gradient(probe.x, loss)), kFdTol);
    EXPECT_LT(max_rel_err(bn.dgamma.values(), fd_gradient(probe.gamma, loss)), kFdTol);
    EXPECT_LT(max_rel_err(bn.dbeta.values(), fd_gradient(probe.beta, loss)), kFdTol);
  }
}

// Synchronised BN: two ranks of N/2 whose sums/dsums are added (the all-reduce)
// give the same y and dx as one rank with the whole batch.
TEST(OpsCpuBatchNorm, SplitBatchWithSummedStatisticsEqualsWholeBatch) {
  Rng rng(12);
  const Shape whole{4, 3, 5, 2}, half{2, 3, 5, 2};
  BnChain all(F64, whole, rng, true, 4);
  HostTensor r = random_tensor(F64, whole, rng);
  all.forward();
  all.backward(r);

  const int64_t hn = half.numel();
  std::vector<BnChain> ranks;
  std::vector<HostTensor> dys;
  for (int k = 0; k < 2; ++k) {
    ranks.emplace_back(F64, half, rng, true, 4);
    BnChain& b = ranks.back();
    b.gamma = all.gamma;
    b.beta = all.beta;
    HostTensor dy(F64, half);
    for (int64_t i = 0; i < hn; ++i) {
      b.x.set(i, all.x.get(k * hn + i));
      dy.set(i, r.get(k * hn + i));
    }
    dys.push_back(dy);
    b.run.run(bn_stats_cpu, {&b.x}, {&b.sums});
  }
  HostTensor sums = ranks[0].sums;
  for (int64_t i = 0; i < sums.numel(); ++i) sums.set(i, ranks[0].sums.get(i) + ranks[1].sums.get(i));
  for (BnChain& b : ranks) {
    b.run.run(bn_relu_apply_cpu, {&b.x, &sums, &b.gamma, &b.beta}, {&b.y, &b.batch});
    b.run.run(bn_relu_bwd_reduce_cpu, {&dys[&b - ranks.data()], &b.y, &b.x, &b.batch},
              {&b.dgamma, &b.dbeta, &b.dsums});
  }
  HostTensor dsums = ranks[0].dsums;
  for (int64_t i = 0; i < dsums.numel(); ++i) dsums.set(i, ranks[0].dsums.get(i) + ranks[1].dsums.get(i));
  for (int k = 0; k < 2; ++k) {
    BnChain& b = ranks[size_t(k)];
    b.run.run(bn_relu_bwd_apply_cpu, {&dys[size_t(k)], &b.y, &b.x, &b.batch, &b.gamma, &dsums}, {&b.dx});
    for (int64_t i = 0; i < hn; ++i) {
      EXPECT_NEAR(b.y.get(i), all.y.get(k * hn + i), 1e-12);
      EXPECT_NEAR(b.dx.get(i), all.dx.get(k * hn + i), 1e-12);
    }
  }
  for (int64_t i = 0; i < dsums.numel(); ++i) EXPECT_NEAR(dsums.get(i), all.dsums.get(i), 1e-12);
}

TEST(OpsCpuBatchNorm, FoldThenInferEqualsApplyWithBatchStatistics) {
  for (DType t : {F32, F64}) {
    for (bool relu : {true, false}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(t) << (relu ? " relu" : ""));
      Rng rng(13);
      BnChain bn(t, {2, 5, 5, 3}, rng, relu, 2);
      bn.forward();
      const DType st = bn.batch.dtype();
      HostTensor gamma = bn.gamma.to(st), beta = bn.beta.to(st), affine(st, {2, 3}), y(t, bn.x.shape());
      bn.run.run(bn_fold_cpu, {&gamma, &beta, &bn.batch}, {&affine});
      bn.run.run(bn_relu_infer_cpu, {&bn.x, &affine}, {&y});
      EXPECT_LT(max_rel_err(y.values(), bn.y.values()), t == F64 ? 1e-12 : 1e-5);
      for (int64_t c = 0; c < 3; ++c) {  // the formula itself
        const double scale = gamma.get(c) / std::sqrt(bn.batch.get(3 + c) + double(bn.run.attrs.eps));
        EXPECT_NEAR(affine.get(c), scale, 1e-6 * std::fabs(scale));
        EXPECT_NEAR(affine.get(3 + c), beta.get(c) - bn.batch.get(c) * scale, 1e-6);
      }
    }
  }
}

// ================================ pooling ================================

TEST(OpsCpuPool, MaxPool2BackwardMatchesFiniteDifferences) {
  Rng rng(20);
  HostTensor x = distinct_tensor(F64, {2, 5, 5, 3}, rng);  // odd: last row/col cropped
  HostTensor y(F64, {2, 2, 2, 3}), dx(F64, x.shape());
  HostTensor r = random_tensor(F64, y.shape(), rng);
  OpRunner run;
  run.run(maxpool2_fwd_cpu, {&x}, {&y});
  run.run(maxpool2_bwd_cpu, {&r, &x, &y}, {&dx});
  const auto fd = fd_gradient(x, [&] {
    run.run(maxpool2_fwd_cpu, {&x}, {&y});
    return dot(y, r);
  });
  EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
  for (int64_t n = 0; n < 2; ++n)  // cropped row 4 and col 4 get no gradient
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t c = 0; c < 3; ++c) {
        EXPECT_EQ(dx.get(((n * 5 + 4) * 5 + i) * 3 + c), 0.0);
        EXPECT_EQ(dx.get(((n * 5 + i) * 5 + 4) * 3 + c), 0.0);
      }
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

TEST(OpsCpuPool, TiesSendTheGradientToTheFirstPositionInScanOrder) {
  OpRunner run;
  // x[1,2,4,1]: window 0 all 1 -> (0,0); window 1 = {0,5;1,5} -> (0,3).
  HostTensor x(F32, {1, 2, 4, 1}), y(F32, {1, 1, 2, 1}), dy(F32, {1, 1, 2, 1}), dx(F32, x.shape());
  const double xv[] = {1, 1, 0, 5, 1, 1, 1, 5};
  for (int i = 0; i < 8; ++i) x.set(i, xv[i]);
  dy.set(0, 2);
  dy.set(1, 3);
  run.run(maxpool2_fwd_cpu, {&x}, {&y});
  EXPECT_EQ(y.values(), (std::vector<double>{1, 5}));
  run.run(maxpool2_bwd_cpu, {&dy, &x, &y}, {&dx});
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

// ================================ fc ================================

TEST(OpsCpuFc, ForwardMatchesNaive) {
  for (DType t : {F32, F64}) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(t) << (bias ? " bias" : ""));
      Rng rng(30);
      const int64_t N = 7, K = 33, M = 9;
      HostTensor x = random_tensor(t, {N, 3, 11}, rng), w = random_tensor(t, {M, K}, rng);
      HostTensor b = random_tensor(t, {M}, rng), y(t, {N, M});
      OpRunner run;
      run.attrs.scale = 0.125f;
      run.attrs.has_bias = bias;
      if (bias) run.run(fc_fwd_cpu, {&x, &w, &b}, {&y});
      else run.run(fc_fwd_cpu, {&x, &w}, {&y});
      std::vector<double> ref(size_t(N * M));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t m = 0; m < M; ++m) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k) s += x.get(n * K + k) * w.get(m * K + k);
          ref[size_t(n * M + m)] = 0.125 * s + (bias ? b.get(m) : 0.0);
        }
      EXPECT_LT(max_rel_err(y.values(), ref), t == F64 ? 1e-13 : 1e-6);
    }
  }
}

TEST(OpsCpuFc, BackwardMatchesFiniteDifferences) {
  Rng rng(31);
  const int64_t N = 3, M = 5;
  HostTensor x = random_tensor(F64, {N, 2, 2, 3}, rng);  // flattened K = 12
  HostTensor w = random_tensor(F64, {M, 12}, rng), b = random_tensor(F64, {M}, rng);
  HostTensor r = random_tensor(F64, {N, M}, rng), y(F64, {N, M});
  HostTensor dx(F64, x.shape()), dw(F64, w.shape()), db(F64, b.shape());
  OpRunner run;
  run.attrs.scale = 0.375f;
  run.attrs.has_bias = true;
  run.run(fc_bwd_data_cpu, {&r, &w}, {&dx});
  run.run(fc_bwd_weight_cpu, {&x, &r}, {&dw, &db});
  auto loss = [&] {
    run.run(fc_fwd_cpu, {&x, &w, &b}, {&y});
    return dot(y, r);
  };
  EXPECT_LT(max_rel_err(dx.values(), fd_gradient(x, loss)), kFdTol);
  EXPECT_LT(max_rel_err(dw.values(), fd_gradient(w, loss)), kFdTol);
  EXPECT_LT(max_rel_err(db.values(), fd_gradient(b, loss)), kFdTol);

  HostTensor dw_nobias(F64, w.shape());  // without bias: one output, same dw
  run.attrs.has_bias = false;
  run.run(fc_bwd_weight_cpu, {&x, &r}, {&dw_nobias});
  EXPECT_EQ(dw_nobias.values(), dw.values());
}

// ================================ relu ================================

TEST(OpsCpuRelu, BackwardMatchesFiniteDifferences) {
  Rng rng(40);
  HostTensor x(F64, {4, 7});
  for (int64_t i = 0; i < x.numel(); ++i)  // |x| >= 0.05: away from the kink
    x.set(i, (rng.uniform() < 0.5 ? -1 : 1) * (0.05 + rng.uniform()));
  HostTensor r = random_tensor(F64, x.shape(), rng), y(F64, x.shape()), dx(F64, x.shape());
  OpRunner run;
  run.run(relu_fwd_cpu, {&x}, {&y});
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.get(i), std::max(0.0, x.get(i)));
  run.run(relu_bwd_cpu, {&r, &y}, {&dx});
  const auto fd = fd_gradient(x, [&] {
    run.run(relu_fwd_cpu, {&x}, {&y});
    return dot(y, r);
  });
  EXPECT_LT(max_rel_err(dx.values(), fd), kFdTol);
}

TEST(OpsCpuRelu, BackwardIsASelectThatDropsMaskedNonFinite) {
  HostTensor dy(F32, {3}), y(F32, {3}), dx(F32, {3});
  dy.set(0, std::numeric_limits<double>::quiet_NaN());
  dy.set(1, std::numeric_limits<double>::infinity());
  dy.set(2, 2.0);
  y.set(0, 0.0);
  y.set(1, -1.0);
  y.set(2, 1.0);
  OpRunner run;
  run.run(relu_bwd_cpu, {&dy, &y}, {&dx});
  EXPECT_EQ(dx.values(), (std::vector<double>{0, 0, 2}));
}

// ================================ softmax_xent ================================

TEST(OpsCpuSoftmaxXent, GradientMatchesFiniteDifferencesOfMeanLoss) {
  Rng rng(50);
  const int64_t N = 3, M = 5, G = 6;  // global batch 6: this rank holds half of it
  HostTensor z = random_tensor(F64, {N, M}, rng, -2, 2), labels(DType::I32, {N});
  labels.set(0, 1);
  labels.set(1, 4);
  labels.set(2, 0);
  HostTensor dz(F64, {N, M}), metrics(F64, {kMetricSlots}), m_only(F64, {kMetricSlots});
  OpRunner run;
  run.attrs.label_smoothing = 0.1f;
  run.variant.batch = N;
  run.variant.global_batch = G;
  run.attrs.with_grad = true;
  run.run(softmax_xent_cpu, {&z, &labels}, {&dz, &metrics});

  OpRunner fwd = run;
  fwd.attrs.with_grad = false;
  const auto fd = fd_gradient(z, [&] {
    fwd.run(softmax_xent_cpu, {&z, &labels}, {&m_only});
    return m_only.get(kMetricLossSum) / double(G);
  });
  EXPECT_LT(max_rel_err(dz.values(), fd), kFdTol);

  // The loss itself: -sum_j target_j log softmax_j, target = (1-s) onehot + s/M.
  const double s = run.attrs.label_smoothing;
  double loss = 0;
  for (int64_t n = 0; n < N; ++n) {
    double zmax = -1e300, e = 0;
    for (int64_t j = 0; j < M; ++j) zmax = std::max(zmax, z.get(n * M + j));
    for (int64_t j = 0; j < M; ++j) e += std::exp(z.get(n * M + j) - zmax);
    for (int64_t j = 0; j < M; ++j) {
      const double t = s / double(M) + (j == labels.get(n) ? 1.0 - s : 0.0);
      loss -= t * (z.get(n * M + j) - zmax - std::log(e));
    }
  }
  EXPECT_NEAR(metrics.get(kMetricLossSum), loss, 1e-12);
  fwd.run(softmax_xent_cpu, {&z, &labels}, {&m_only});
  EXPECT_EQ(m_only.values(), metrics.values());

  // The loss scale multiplies the gradient and nothing else.
  HostTensor dz8(F64, {N, M}), metrics8(F64, {kMetricSlots});
  run.scalars.loss_scale = 8.f;
  run.run(softmax_xent_cpu, {&z, &labels}, {&dz8, &metrics8});
  for (int64_t i = 0; i < dz.numel(); ++i) EXPECT_DOUBLE_EQ(dz8.get(i), 8 * dz.get(i));
  EXPECT_EQ(metrics8.values(), metrics.values());
}

TEST(OpsCpuSoftmaxXent, MetricsCountCorrectWithFirstMaxWinning) {
  HostTensor z(F32, {3, 4}), labels(DType::I32, {3}), dz(F32, {3, 4}), metrics(F32, {kMetricSlots});
  const double zv[] = {1, 3, 3, 0,   // argmax 1 (tie with 2): label 1 correct
                       1, 3, 3, 0,   // label 2: wrong, the first max wins
                       5, 1, 5, -1}; // argmax 0 (tie with 2): label 0 correct
  for (int i = 0; i < 12; ++i) z.set(i, zv[i]);
  labels.set(0, 1);
  labels.set(1, 2);
  labels.set(2, 0);
  OpRunner run;
  run.variant.batch = 3;
  run.variant.global_batch = 3;
  run.run(softmax_xent_cpu, {&z, &labels}, {&dz, &metrics});
  double loss = 0;  // no smoothing: -log softmax[label]
  for (int n = 0; n < 3; ++n) {
    double e = 0;
    for (int j = 0; j < 4; ++j) e += std::exp(zv[n * 4 + j]);
    loss += std::log(e) - zv[n * 4 + int(labels.get(n))];
  }
  EXPECT_NEAR(metrics.get(kMetricLossSum), loss, 1e-5);
  EXPECT_EQ(metrics.get(kMetricCorrect), 2.0);
  EXPECT_EQ(metrics.get(kMetricCount), 3.0);
  EXPECT_EQ(metrics.get(3), 0.0);
  for (int n = 0; n < 3; ++n) {  // each dlogits row sums to 0 (softmax and target both sum to 1)
    double s = 0;
    for (int j = 0; j < 4; ++j) s += dz.get(n * 4 + j);
    EXPECT_NEAR(s, 0.0, 1e-6);
  }

  labels.set(2, 4);  // out of range
  run.check_finite = false;
  EXPECT_THROW(run.run(softmax_xent_cpu, {&z, &labels}, {&dz, &metrics}), UserError);
}

// ================================ input_prep ================================

TEST(OpsCpuInputPrep, NearestNeighbourDownsampleAndNormalise) {
  const int64_t B = 3, H0 = 6, W0 = 5, C = 2;
  HostTensor images(DType::U8, {B, H0, W0, C}), labels_src(DType::I32, {B});
  for (int64_t i = 0; i < images.numel(); ++i) images.set(i, double((i * 37 + 11) % 256));
  for (int64_t n = 0; n < B; ++n) labels_src.set(n, double(7 - n));
  OpRunner run;
  run.variant = VariantDims{2, 2, 4, 3};  // batch 2 of 3, 4x3 from 6x5
  run.attrs.norm_mean[0] = 0.25f;
  run.attrs.norm_mean[1] = 0.5f;
  run.attrs.norm_std[0] = 0.5f;
  run.attrs.norm_std[1] = 2.0f;
  const int64_t rows[] = {0, 1, 3, 4};  // floor(i * 6 / 4)
  const int64_t cols[] = {0, 1, 3};     // floor(j * 5 / 3)
  for (DType t : {F32, F64, F16}) {
    SCOPED_TRACE(dtype_name(t));
    HostTensor x(t, {2, 4, 3, C}), labels(DType::I32, {2});
    run.run(input_prep_cpu, {&images, &labels_src}, {&x, &labels});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 3; ++j)
          for (int64_t c = 0; c < C; ++c) {
            const double u8 = images.get(((n * H0 + rows[i]) * W0 + cols[j]) * C + c);
            const double want = (u8 / 255.0 - run.attrs.norm_mean[c]) / run.attrs.norm_std[c];
            EXPECT_NEAR(x.get(((n * 4 + i) * 3 + j) * C + c), want, t == F16 ? 2e-3 : t == F32 ? 1e-6 : 1e-15);
          }
    EXPECT_EQ(labels.values(), (std::vector<double>{7, 6}));
  }
  // Full resolution is the identity mapping.
  run.variant = VariantDims{3, 3, H0, W0};
  HostTensor x(F32, {B, H0, W0, C}), labels(DType::I32, {B});
  run.run(input_prep_cpu, {&images, &labels_src}, {&x, &labels});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = i % C;
    EXPECT_FLOAT_EQ(float(x.get(i)), float((float(images.get(i)) / 255.f - run.attrs.norm_mean[c]) /
                                           run.attrs.norm_std[c]));
  }
}

// ================================ fp16 storage ================================

// An op argument for the F16-vs-F32 comparison: T tensors switch dtype, the
// others (statistics, labels, images) stay as they are.
struct Arg {
  HostTensor t;
  bool is_t = true;
};

void expect_f16_matches_f32(const char* name, OpFn fn, const OpRunner& runner, std::vector<Arg> in,
                            std::vector<Arg> out, double tol = 1e-3) {
  SCOPED_TRACE(name);
  for (Arg& a : in)
    if (a.is_t) a.t = a.t.to(F16).to(F32);  // both runs see the same values
  std::vector<HostTensor> in16, out32, out16;
  for (Arg& a : in) in16.push_back(a.is_t ? a.t.to(F16) : a.t);
  for (Arg& a : out) {
    out32.push_back(a.t);
    out16.push_back(a.is_t ? a.t.to(F16) : a.t);
  }
  auto ptrs = [](std::vector<HostTensor>& v) {
    std::vector<HostTensor*> p;
    for (HostTensor& t : v) p.push_back(&t);
    return p;
  };
  std::vector<const HostTensor*> in32p;
  for (Arg& a : in) in32p.push_back(&a.t);
  std::vector<const HostTensor*> in16p(in16.size());
  for (size_t i = 0; i < in16.size(); ++i) in16p[i] = &in16[i];
  OpRunner run = runner;
  run.run(fn, in32p, ptrs(out32));
  run.run(fn, in16p, ptrs(out16));
  for (size_t k = 0; k < out.size(); ++k)
    EXPECT_LE(max_rel_err(out16[k].values(), out32[k].values()), tol) << "output " << k;
}

TEST(OpsCpuF16, EveryOpMatchesF32) {
  Rng rng(60);
  const Shape xs{2, 6, 5, 8};
  auto rt = [&](Shape s, double lo = -1, double hi = 1) { return random_tensor(F32, s, rng, lo, hi); };
  OpRunner run;
  run.variant = VariantDims{2, 2, 6, 5};
  run.attrs.scale = 0.125f;
  run.attrs.label_smoothing = 0.1f;
  run.scalars.loss_scale = 4.f;

  HostTensor x = rt(xs), w = rt({16, 3, 3, 8}), dy = rt({2, 6, 5, 16});
  expect_f16_matches_f32("conv3x3_fwd", conv3x3_fwd_cpu, run, {{x}, {w}}, {{HostTensor(F32, {2, 6, 5, 16})}});
  expect_f16_matches_f32("conv3x3_bwd_data", conv3x3_bwd_data_cpu, run, {{dy}, {w}}, {{HostTensor(F32, xs)}});
  expect_f16_matches_f32("conv3x3_bwd_filter", conv3x3_bwd_filter_cpu, run, {{x}, {dy}},
                         {{HostTensor(F32, w.shape())}});

  const HostTensor xh = x.to(F16).to(F32);  // BN statistics from the values both runs see
  HostTensor sums(F32, {2, 8}), gamma = rt({8}, 0.5, 1.5), beta = rt({8}, -0.5, 0.5), y(F32, xs), batch(F32, {2, 8});
  run.run(bn_stats_cpu, {&xh}, {&sums});
  run.run(bn_relu_apply_cpu, {&xh, &sums, &gamma, &beta}, {&y, &batch});
  HostTensor dsums(F32, {2, 8}), dg(F32, {8}), db(F32, {8});
  const HostTensor ybn = y.to(F16).to(F32), dybn = rt(xs).to(F16).to(F32);
  run.run(bn_relu_bwd_reduce_cpu, {&dybn, &ybn, &xh, &batch}, {&dg, &db, &dsums});
  expect_f16_matches_f32("bn_stats", bn_stats_cpu, run, {{x}}, {{HostTensor(F32, {2, 8}), false}});
  expect_f16_matches_f32("bn_relu_apply", bn_relu_apply_cpu, run, {{x}, {sums, false}, {gamma}, {beta}},
                         {{HostTensor(F32, xs)}, {HostTensor(F32, {2, 8}), false}});
  expect_f16_matches_f32("bn_relu_bwd_reduce", bn_relu_bwd_reduce_cpu, run,
                         {{dybn}, {ybn}, {x}, {batch, false}},
                         {{HostTensor(F32, {8})}, {HostTensor(F32, {8})}, {HostTensor(F32, {2, 8}), false}});
  expect_f16_matches_f32("bn_relu_bwd_apply", bn_relu_bwd_apply_cpu, run,
                         {{dybn}, {ybn}, {x}, {batch, false}, {gamma}, {dsums, false}}, {{HostTensor(F32, xs)}});
  HostTensor affine = rt({2, 8});
  expect_f16_matches_f32("bn_relu_infer", bn_relu_infer_cpu, run, {{x}, {affine, false}}, {{HostTensor(F32, xs)}});

  const HostTensor xd = distinct_tensor(F32, xs, rng).to(F16).to(F32);
  HostTensor py(F32, {2, 3, 2, 8}), gy(F32, {2, 8});
  run.run(maxpool2_fwd_cpu, {&xd}, {&py});
  run.run(global_maxpool_fwd_cpu, {&xd}, {&gy});
  expect_f16_matches_f32("maxpool2_fwd", maxpool2_fwd_cpu, run, {{xd}}, {{HostTensor(F32, py.shape())}}, 0);
  expect_f16_matches_f32("maxpool2_bwd", maxpool2_bwd_cpu, run, {{rt(py.shape())}, {xd}, {py}},
                         {{HostTensor(F32, xs)}});
  expect_f16_matches_f32("global_maxpool_fwd", global_maxpool_fwd_cpu, run, {{xd}}, {{HostTensor(F32, gy.shape())}},
                         0);
  expect_f16_matches_f32("global_maxpool_bwd", global_maxpool_bwd_cpu, run, {{rt(gy.shape())}, {xd}, {gy}},
                         {{HostTensor(F32, xs)}});

  HostTensor fx = rt({2, 6, 5, 8}), fw = rt({10, 240}), fb = rt({10}), fdy = rt({2, 10});
  run.attrs.has_bias = true;
  expect_f16_matches_f32("fc_fwd", fc_fwd_cpu, run, {{fx}, {fw}, {fb}}, {{HostTensor(F32, {2, 10})}});
  expect_f16_matches_f32("fc_bwd_data", fc_bwd_data_cpu, run, {{fdy}, {fw}}, {{HostTensor(F32, {2, 240})}});
  expect_f16_matches_f32("fc_bwd_weight", fc_bwd_weight_cpu, run, {{fx}, {fdy}},
                         {{HostTensor(F32, {10, 240})}, {HostTensor(F32, {10})}});

  expect_f16_matches_f32("relu_fwd", relu_fwd_cpu, run, {{x}}, {{HostTensor(F32, xs)}}, 0);
  expect_f16_matches_f32("relu_bwd", relu_bwd_cpu, run, {{dy}, {rt(dy.shape())}}, {{HostTensor(F32, dy.shape())}}, 0);

  HostTensor labels(DType::I32, {2});
  labels.set(0, 3);
  labels.set(1, 9);
  expect_f16_matches_f32("softmax_xent", softmax_xent_cpu, run, {{rt({2, 10}, -3, 3)}, {labels, false}},
                         {{HostTensor(F32, {2, 10})}, {HostTensor(F32, {kMetricSlots}), false}});

  HostTensor images(DType::U8, {3, 6, 5, 3}), lsrc(DType::I32, {3});
  for (int64_t i = 0; i < images.numel(); ++i) images.set(i, double(i % 256));
  lsrc.fill(1);
  expect_f16_matches_f32("input_prep", input_prep_cpu, run, {{images, false}, {lsrc, false}},
                         {{HostTensor(F32, {2, 6, 5, 3})}, {HostTensor(DType::I32, {2}), false}});
}

// ================================ shape rules ================================

TEST(OpsCpuShapes, Conv3x3) {
  OpRunner r;
  EXPECT_EQ(r.shapes(conv3x3_fwd_shapes, {{2, 5, 4, 3}, {4, 3, 3, 3}}, 1)[0], (Shape{2, 5, 4, 4}));
  EXPECT_EQ(r.shapes(conv3x3_bwd_data_shapes, {{2, 5, 4, 4}, {4, 3, 3, 3}}, 1)[0], (Shape{2, 5, 4, 3}));
  EXPECT_EQ(r.shapes(conv3x3_bwd_filter_shapes, {{2, 5, 4, 3}, {2, 5, 4, 4}}, 1)[0], (Shape{4, 3, 3, 3}));
  EXPECT_THROW(r.shapes(conv3x3_fwd_shapes, {{2, 5, 4, 3}, {4, 3, 3, 2}}, 1), UserError);
  EXPECT_THROW(r.shapes(conv3x3_fwd_shapes, {{2, 5, 4, 3}, {4, 5, 5, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(conv3x3_fwd_shapes, {{5, 4, 3}, {4, 3, 3, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(conv3x3_bwd_data_shapes, {{2, 5, 4, 5}, {4, 3, 3, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(conv3x3_bwd_filter_shapes, {{2, 5, 4, 3}, {3, 5, 4, 4}}, 1), UserError);
}

TEST(OpsCpuShapes, BatchNorm) {
  OpRunner r;
  const Shape x{2, 5, 5, 3}, p{2, 3}, v{3};
  EXPECT_EQ(r.shapes(bn_stats_shapes, {x}, 1)[0], p);
  EXPECT_EQ(r.shapes(bn_relu_apply_shapes, {x, p, v, v}, 2), (std::vector<Shape>{x, p}));
  EXPECT_EQ(r.shapes(bn_relu_bwd_reduce_shapes, {x, x, x, p}, 3), (std::vector<Shape>{v, v, p}));
  EXPECT_EQ(r.shapes(bn_relu_bwd_apply_shapes, {x, x, x, p, v, p}, 1)[0], x);
  EXPECT_EQ(r.shapes(bn_relu_infer_shapes, {x, p}, 1)[0], x);
  EXPECT_EQ(r.shapes(bn_fold_shapes, {v, v, p}, 1)[0], p);
  EXPECT_THROW(r.shapes(bn_stats_shapes, {{6}}, 1), UserError);
  EXPECT_THROW(r.shapes(bn_relu_apply_shapes, {x, p, {4}, v}, 2), UserError);
  EXPECT_THROW(r.shapes(bn_relu_apply_shapes, {x, {3, 3}, v, v}, 2), UserError);
  EXPECT_THROW(r.shapes(bn_relu_bwd_reduce_shapes, {x, {2, 5, 4, 3}, x, p}, 3), UserError);
  EXPECT_THROW(r.shapes(bn_relu_bwd_apply_shapes, {x, x, x, p, v, {2, 4}}, 1), UserError);
  EXPECT_THROW(r.shapes(bn_fold_shapes, {v, v, {2, 4}}, 1), UserError);
}

TEST(OpsCpuShapes, Pool) {
  OpRunner r;
  const Shape x{2, 5, 5, 3}, y{2, 2, 2, 3}, g{2, 3};
  EXPECT_EQ(r.shapes(maxpool2_fwd_shapes, {x}, 1)[0], y);
  EXPECT_EQ(r.shapes(maxpool2_bwd_shapes, {y, x, y}, 1)[0], x);
  EXPECT_EQ(r.shapes(global_maxpool_fwd_shapes, {x}, 1)[0], g);
  EXPECT_EQ(r.shapes(global_maxpool_bwd_shapes, {g, x, g}, 1)[0], x);
  EXPECT_THROW(r.shapes(maxpool2_fwd_shapes, {{2, 1, 5, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(maxpool2_fwd_shapes, {{2, 5, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(maxpool2_bwd_shapes, {{2, 3, 2, 3}, x, y}, 1), UserError);
  EXPECT_THROW(r.shapes(global_maxpool_bwd_shapes, {{2, 4}, x, g}, 1), UserError);
}

TEST(OpsCpuShapes, Fc) {
  OpRunner r;
  const Shape x{3, 2, 2, 3}, w{5, 12}, dy{3, 5};
  EXPECT_EQ(r.shapes(fc_fwd_shapes, {x, w}, 1)[0], dy);
  EXPECT_EQ(r.shapes(fc_bwd_data_shapes, {dy, w}, 1)[0], (Shape{3, 12}));
  EXPECT_EQ(r.shapes(fc_bwd_weight_shapes, {x, dy}, 1)[0], w);
  EXPECT_THROW(r.shapes(fc_fwd_shapes, {x, {5, 11}}, 1), UserError);
  EXPECT_THROW(r.shapes(fc_bwd_data_shapes, {{3, 6}, w}, 1), UserError);
  EXPECT_THROW(r.shapes(fc_bwd_weight_shapes, {x, {4, 5}}, 1), UserError);
  r.attrs.has_bias = true;
  EXPECT_EQ(r.shapes(fc_fwd_shapes, {x, w, {5}}, 1)[0], dy);
  EXPECT_EQ(r.shapes(fc_bwd_weight_shapes, {x, dy}, 2), (std::vector<Shape>{w, {5}}));
  EXPECT_THROW(r.shapes(fc_fwd_shapes, {x, w, {4}}, 1), UserError);
}

TEST(OpsCpuShapes, ReluAndSoftmaxXent) {
  OpRunner r;
  EXPECT_EQ(r.shapes(relu_fwd_shapes, {{2, 3, 4}}, 1)[0], (Shape{2, 3, 4}));
  EXPECT_EQ(r.shapes(relu_bwd_shapes, {{2, 3}, {2, 3}}, 1)[0], (Shape{2, 3}));
  EXPECT_THROW(r.shapes(relu_bwd_shapes, {{2, 4}, {2, 3}}, 1), UserError);
  EXPECT_EQ(r.shapes(softmax_xent_shapes, {{3, 5}, {3}}, 2), (std::vector<Shape>{{3, 5}, {kMetricSlots}}));
  EXPECT_THROW(r.shapes(softmax_xent_shapes, {{3, 5}, {4}}, 2), UserError);
  EXPECT_THROW(r.shapes(softmax_xent_shapes, {{3, 5, 1}, {3}}, 2), UserError);
  r.attrs.with_grad = false;
  EXPECT_EQ(r.shapes(softmax_xent_shapes, {{3, 5}, {3}}, 1), (std::vector<Shape>{{kMetricSlots}}));
  r.attrs.label_smoothing = 1.5f;
  EXPECT_THROW(r.shapes(softmax_xent_shapes, {{3, 5}, {3}}, 1), UserError);
}

TEST(OpsCpuShapes, InputPrep) {
  OpRunner r;
  r.variant = VariantDims{2, 2, 4, 3};
  const Shape im{3, 6, 5, 2}, ls{3};
  EXPECT_EQ(r.shapes(input_prep_shapes, {im, ls}, 2), (std::vector<Shape>{{2, 4, 3, 2}, {2}}));
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, {2}}, 2), UserError);
  EXPECT_THROW(r.shapes(input_prep_shapes, {{3, 6, 5, 5}, ls}, 2), UserError);
  r.attrs.norm_std[1] = 0.f;
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
  r.attrs.norm_std[1] = 1.f;
  r.variant = VariantDims{4, 4, 4, 3};  // batch larger than the staging buffer
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
  r.variant = VariantDims{2, 2, 7, 3};  // upsampling
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
  r.variant = VariantDims{2, 2, 0, 0};  // resolution unset
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
}

}  // namespace
}  // namespace tr::test
