// The CPU convolution as a specification: forward equals naive NHWC/KRSC loops
// (also when the im2col work is chunked), both backwards equal central finite
// differences in F64, results repeat bit for bit, mixed dtypes are refused.
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

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
    run.run(conv_fwd_cpu, {&x, &w}, {&y});
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
  run.run(conv_bwd_data_cpu, {&r, &w}, {&dx});
  const auto fd = fd_gradient(x, [&] {
    run.run(conv_fwd_cpu, {&x, &w}, {&y});
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
  run.run(conv_bwd_filter_cpu, {&x, &r}, {&dw});
  const auto fd = fd_gradient(w, [&] {
    run.run(conv_fwd_cpu, {&x, &w}, {&y});
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
  run.run(conv_fwd_cpu, {&x, &w}, {&y});
  run.run(conv_bwd_data_cpu, {&dy, &w}, {&dx});
  run.run(conv_bwd_filter_cpu, {&x, &dy}, {&dw});
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
  run.run(conv_fwd_cpu, {&x, &w}, {&y1});
  run.run(conv_bwd_filter_cpu, {&x, &dy}, {&dw1});
  run.run(conv_fwd_cpu, {&x, &w}, {&y2});
  run.run(conv_bwd_filter_cpu, {&x, &dy}, {&dw2});
  EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.bytes()), 0);
  EXPECT_EQ(std::memcmp(dw1.data(), dw2.data(), dw1.bytes()), 0);
}

TEST(OpsCpuConv, MixedDtypesAreAnInternalError) {
  Rng rng(6);
  HostTensor x = random_tensor(F32, {1, 3, 3, 2}, rng), w = random_tensor(F64, {2, 3, 3, 2}, rng);
  HostTensor y(F32, {1, 3, 3, 2});
  OpRunner run;
  run.check_finite = false;
  EXPECT_THROW(run.run(conv_fwd_cpu, {&x, &w}, {&y}), Error);
}

// ================================ batchnorm ================================

}  // namespace
}  // namespace tr::test
