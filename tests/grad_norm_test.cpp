// GradNorm and AdamW's clip (framework/ops/range/grad_norm.h) on the CPU: the
// norm against a double reference, the scale's formula, and AdamW with clip
// against AdamW of the scaled gradient. Training with clipping:
// grad_clip_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/grad_norm.h"
#include "framework/ops/range/optimizers.h"
#include "tests/range_ops_test_util.h"

namespace tr {
namespace {

using namespace range_test;

// Two tensors with zero padding between them and after: 300 and 45 elements.
const std::vector<Segment> kSegs = {{0, 300, true}, {384, 45, false}};
constexpr int64_t kElems = 512;

std::vector<float> random_grads(uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> g(kElems, 0.f);
  for (const Segment& s : kSegs)
    for (int64_t i = s.offset; i < s.offset + s.elems; ++i) g[size_t(i)] = u(rng);
  return g;
}

TEST(GradNorm, GradNormIsTheNormOfEverySegmentAndSetsTheScale) {
  std::vector<float> g = random_grads(1, -1, 1);
  double ref = 0;
  for (float v : g) ref += double(v) * v;
  ref = std::sqrt(ref);
  std::vector<double> partials(kGradNormPartials, 0.0);
  RangeOperand part;
  part.data = partials.data();
  part.dtype = DType::F64;
  part.elems = kGradNormPartials;
  for (double bound : {ref / 4, ref * 2}) {
    Call c;
    c.attrs.max_norm = float(bound);
    c.set_ops({operand(g, &kSegs), part});
    c.run(grad_norm_cpu);
    // Squares summed in double, rounded once to f32 (6e-8 of the norm).
    EXPECT_NEAR(c.scalars.grad_norm, ref, 1e-7 * ref);
    EXPECT_EQ(c.scalars.clip_scale, range::clip_scale_of(c.scalars.grad_norm, float(bound)));
    if (bound < ref) {
      EXPECT_NEAR(c.scalars.clip_scale, bound / (ref + 1e-6), 1e-6);  // f32 roundings of the quotient
    } else {
      EXPECT_EQ(c.scalars.clip_scale, 1.f);
    }
  }
}

TEST(GradNorm, FewerThanItsPartialsIsAnError) {
  std::vector<float> g = random_grads(2, -1, 1);
  std::vector<double> partials(8, 0.0);
  RangeOperand part;
  part.data = partials.data();
  part.dtype = DType::F64;
  part.elems = 8;
  Call c;
  c.set_ops({operand(g, &kSegs), part});
  EXPECT_THROW(c.run(grad_norm_cpu), Error);
}

// AdamW with clip reads clip_scale and scales g by it, rounded once: the bits
// of AdamW on the scaled gradient.
TEST(GradNorm, AdamWWithClipIsAdamWOfTheScaledGradient) {
  const std::vector<float> g = random_grads(3, -1, 1);
  std::vector<float> scaled = g;
  for (float& v : scaled) v = range::rn_mul(v, 0.3f);
  std::vector<float> p1 = random_grads(4, -1, 1), m1(kElems, 0.f), v1(kElems, 0.f);
  std::vector<float> p2 = p1, m2 = m1, v2 = v1;
  Call a, b;
  for (Call* c : {&a, &b}) {
    c->attrs.weight_decay = 0.1f;
    c->scalars.lr = 0.01f;
    c->scalars.step = 1;
    c->scalars.clip_scale = 0.3f;
  }
  a.attrs.clip = true;
  std::vector<float> g1 = g;
  a.set_ops({operand(p1, &kSegs), operand(g1, &kSegs), operand(m1, &kSegs), operand(v1, &kSegs)});
  a.run(adamw_cpu);
  b.set_ops({operand(p2, &kSegs), operand(scaled, &kSegs), operand(m2, &kSegs), operand(v2, &kSegs)});
  b.run(adamw_cpu);
  EXPECT_EQ(0, std::memcmp(p1.data(), p2.data(), p1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(m1.data(), m2.data(), m1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(v1.data(), v2.data(), v1.size() * sizeof(float)));
}

}  // namespace
}  // namespace tr
