#pragma once
// Helpers shared by the CPU op tests (ops_cpu_*_test.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/input_prep.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/compute/softmax_xent.h"
#include "tests/op_test_util.h"

namespace tr::test {

// The message of the UserError `f` throws ("" when it throws none).
template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

inline constexpr DType F16 = DType::F16, F32 = DType::F32, F64 = DType::F64;
// fd_gradient's central differences in double with h = 1e-5 err by the truncation h^2/6 * f''' (about
// 2e-11; none for a loss linear in the perturbed tensor or piecewise linear away from a kink) and the
// cancellation eps * |loss| / h (about 1e-10 of losses of a few units): 1e-6 leaves over 1e3x, and a
// missing or wrong term of a gradient is tens of percent.
inline constexpr double kFdTol = 1e-6;

inline double dot(const HostTensor& a, const HostTensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get(i) * b.get(i);
  return s;
}

// Values on a shuffled ramp: all distinct, gaps >= 0.09 (no max ties, no kinks
// within a finite-difference step).
inline HostTensor distinct_tensor(DType t, Shape s, Rng& rng) {
  HostTensor r(t, s);
  std::vector<int64_t> perm(size_t(r.numel()));
  std::iota(perm.begin(), perm.end(), 0);
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  for (int64_t i = 0; i < r.numel(); ++i)
    r.set(i, double(perm[size_t(i)] - r.numel() / 2) * 0.1 + 0.01 * rng.uniform());
  return r;
}

// Note [sum error bound]
// A sum of n terms in floating point, in any order and with or without fused
// multiply-adds, is within n*u*sum|terms| of the exact sum (u = 2^-24 in f32,
// 2^-53 in f64; the first-order bound gamma_n), and storing it rounds once
// more. So a BLAS result may be checked element by element against an exact
// (double) reference with the bound (n + 1) * u * sum|terms|, where sum|terms|
// is the same reference computed on the operands' absolute values: a bound
// that holds for every BLAS kernel, thread count and summation order, and
// still sees a wrong tap or stride (an error of a whole term).
inline double unit_roundoff(DType t) { return t == F64 ? 0x1p-53 : t == F32 ? 0x1p-24 : 0x1p-11; }
inline std::vector<double> abs_values(const HostTensor& t) {
  std::vector<double> v = t.values();
  for (double& x : v) x = std::fabs(x);
  return v;
}
// Element i of got within the bound of ref (sums of n terms; magnitude[i] is
// the sum of the terms' absolute values). Returns the largest share of its
// bound any element used.
inline double expect_within_sum_bound(const std::vector<double>& got, const std::vector<double>& ref,
                                      const std::vector<double>& magnitude, int64_t n, DType t, const char* what) {
  EXPECT_EQ(got.size(), ref.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    const double bound = double(n + 1) * unit_roundoff(t) * magnitude[i] + unit_roundoff(t) * std::fabs(ref[i]);
    const double err = std::fabs(got[i] - ref[i]);
    EXPECT_LE(err, bound) << what << " element " << i << ": " << got[i] << " vs " << ref[i];
    if (bound > 0) worst = std::max(worst, err / bound);
  }
  return worst;
}

// BnStats -> BnReluApply, and BnReluBwdReduce -> BnReluBwdApply, on one rank.
struct BnChain {
  OpRunner run;
  HostTensor x, gamma, beta, sums, y, batch, affine;  // affine: the forward's (scale, shift)
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
    affine = HostTensor(st, {2, C});
    dsums = HostTensor(st, {2, C});
    y = HostTensor(t, xs);
    dx = HostTensor(t, xs);
    dgamma = HostTensor(t, {C});
    dbeta = HostTensor(t, {C});
  }
  void forward() {
    run.run(bn_stats_cpu, {&x}, {&sums});
    run.run(bn_relu_apply_cpu, {&x, &sums, &gamma, &beta}, {&y, &batch, &affine});
  }
  void backward(const HostTensor& dy) {
    run.run(bn_relu_bwd_reduce_cpu, {&dy, &affine, &x, &batch}, {&dgamma, &dbeta, &dsums});
    run.run(bn_relu_bwd_apply_cpu, {&dy, &affine, &x, &batch, &gamma, &dsums}, {&dx});
  }
};

}  // namespace tr::test
