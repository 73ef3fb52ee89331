// The other CPU reference ops as a specification: every backward equals
// central finite differences of its forward in F64; BN folding equals batch
// statistics BN; synchronised BN over split batches equals BN over the whole
// batch; ReLU masking, loss metrics and input preparation. Pooling:
// ops_cpu_pool_test.cpp.
// OpRunner poisons every output with NaN and fails on unwritten elements.
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

TEST(OpsCpuBatchNorm, BatchStatisticsAreMeanAndBiasedVariance) {
  Rng rng(10);
  BnChain bn(F64, {2, 5, 5, 3}, rng, true, 2);
  bn.forward();
  const int64_t C = 3, P = bn.x.numel() / C;
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    for (int64_t p = 0; p < P; ++p) mean += bn.x.get(p * C + c) / double(P);
    for (int64_t p = 0; p < P; ++p) var += (bn.x.get(p * C + c) - mean) * (bn.x.get(p * C + c) - mean) / double(P);
    // Both are double sums of 50 values in [-1, 2] (the op's var is E[x^2] - mean^2): roundings of
    // about 50 * 1.1e-16 of values near 1; 1e-12 leaves 100x.
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
      // A step h = 1e-5 of one input moves a pre-activation by about scale * h (scale = gamma * rstd < 2):
      // 1e-4 keeps every pre-activation on its side of the kink during the differences.
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
    b.run.run(bn_relu_apply_cpu, {&b.x, &sums, &b.gamma, &b.beta}, {&b.y, &b.batch, &b.affine});
    b.run.run(bn_relu_bwd_reduce_cpu, {&dys[&b - ranks.data()], &b.affine, &b.x, &b.batch},
              {&b.dgamma, &b.dbeta, &b.dsums});
  }
  HostTensor dsums = ranks[0].dsums;
  for (int64_t i = 0; i < dsums.numel(); ++i) dsums.set(i, ranks[0].dsums.get(i) + ranks[1].dsums.get(i));
  for (int k = 0; k < 2; ++k) {
    BnChain& b = ranks[size_t(k)];
    b.run.run(bn_relu_bwd_apply_cpu, {&dys[size_t(k)], &b.affine, &b.x, &b.batch, &b.gamma, &dsums}, {&b.dx});
    // Both sides compute in double and differ only in how the sums over 60 pixels are grouped (30 + 30):
    // roundings of about 1e-15 of values and sums of a few units; 1e-12 leaves over 100x.
    for (int64_t i = 0; i < hn; ++i) {
      EXPECT_NEAR(b.y.get(i), all.y.get(k * hn + i), 1e-12);
      EXPECT_NEAR(b.dx.get(i), all.dx.get(k * hn + i), 1e-12);
    }
  }
  for (int64_t i = 0; i < dsums.numel(); ++i) EXPECT_NEAR(dsums.get(i), all.dsums.get(i), 1e-12);  // as above
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
      // Fold reads the mean and variance back from the batch tensor (f32 for F32) and both paths round
      // (scale, shift) to A: y differs by a few roundings of 6e-8 (F32) or 1.1e-16 (F64) of |y| up to 3;
      // 1e-5 and 1e-12 leave about 30x and 1000x.
      EXPECT_LT(max_rel_err(y.values(), bn.y.values()), t == F64 ? 1e-12 : 1e-5);
      for (int64_t c = 0; c < 3; ++c) {  // the formula itself
        const double scale = gamma.get(c) / std::sqrt(bn.batch.get(3 + c) + double(bn.run.attrs.eps));
        // The same double formula on the same inputs; the affine tensor holds f32 for F32: one rounding,
        // 6e-8 of scale and of |shift| < 2; 1e-6 leaves 16x (relative) and 8x (absolute).
        EXPECT_NEAR(affine.get(c), scale, 1e-6 * std::fabs(scale));
        EXPECT_NEAR(affine.get(3 + c), beta.get(c) - bn.batch.get(c) * scale, 1e-6);
      }
    }
  }
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
      std::vector<double> ref(size_t(N * M)), magnitude(size_t(N * M));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t m = 0; m < M; ++m) {
          double s = 0, a = 0;
          for (int64_t k = 0; k < K; ++k) {
            s += x.get(n * K + k) * w.get(m * K + k);
            a += std::fabs(x.get(n * K + k) * w.get(m * K + k));
          }
          ref[size_t(n * M + m)] = 0.125 * s + (bias ? b.get(m) : 0.0);
          magnitude[size_t(n * M + m)] = 0.125 * a + (bias ? std::fabs(b.get(m)) : 0.0);
        }
      // Each element within Note [sum error bound]: 33 products and the bias (the scale is a power of
      // two, exact), in any order the BLAS takes.
      expect_within_sum_bound(y.values(), ref, magnitude, K + 1, t, "y");
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
  run.run(fc_bwd_data_cpu, {&r, &w, &x}, {&dx});
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
  // Both in double over 3 rows of 5 classes: roundings of about 1e-15 of a loss of a few units; 1e-12 leaves 100x.
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
  const double zv[] = {1, 3, 3, 0,    // argmax 1 (tie with 2): label 1 correct
                       1, 3, 3, 0,    // label 2: wrong, the first max wins
                       5, 1, 5, -1};  // argmax 0 (tie with 2): label 0 correct
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
  // The op sums in double; the F32 metrics tensor rounds the sum (about 2.3) once: 1.2e-7; 1e-5 leaves 80x.
  EXPECT_NEAR(metrics.get(kMetricLossSum), loss, 1e-5);
  EXPECT_EQ(metrics.get(kMetricCorrect), 2.0);
  EXPECT_EQ(metrics.get(kMetricCount), 3.0);
  EXPECT_EQ(metrics.get(3), 0.0);
  for (int n = 0; n < 3; ++n) {  // each dlogits row sums to 0 (softmax and target both sum to 1)
    double s = 0;
    for (int j = 0; j < 4; ++j) s += dz.get(n * 4 + j);
    // Each dlogit, (p - target) / 3, is rounded once to f32: at most 1.5e-8 below 1/2, 6e-8 for four;
    // 1e-6 leaves 16x.
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
            // |want| <= 1.5. F16: one fp16 rounding, 4.9e-4 below 2 (2e-3 leaves 4x); F32: the formula's
            // f32 roundings, about 1.2e-7 (1e-6 leaves 8x); F64: the same double formula, a few 1e-16.
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
    EXPECT_FLOAT_EQ(float(x.get(i)),
                    float((float(images.get(i)) / 255.f - run.attrs.norm_mean[c]) / run.attrs.norm_std[c]));
  }
}

}  // namespace
}  // namespace tr::test
