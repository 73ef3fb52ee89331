// Add on the CPU as a specification (framework/ops/compute/add.h): y = a + b, then ReLU
// when attrs.relu; in f16 the sum is taken in f32 and rounded once, and the ReLU
// sees that rounded value; the inputs must have one shape.
#include <cmath>
#include <limits>

#include "framework/ops/compute/add.h"
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

// Outputs are poisoned with NaN first; the comparisons catch unwritten elements
// (the finite check is off: some expected results are inf).
HostTensor add(const HostTensor& a, const HostTensor& b, bool relu) {
  OpRunner run;
  run.attrs.relu = relu;
  run.check_finite = false;
  HostTensor y(a.dtype(), a.shape());
  run.run(add_cpu, {&a, &b}, {&y});
  return y;
}

TEST(OpsCpuAdd, ForwardIsTheSumThenReluWhenAsked) {
  Rng rng(40);
  for (DType t : {F32, F64})
    for (bool relu : {false, true}) {
      SCOPED_TRACE(cat(dtype_name(t), relu ? " relu" : ""));
      const HostTensor a = random_tensor(t, {2, 3, 4, 5}, rng), b = random_tensor(t, {2, 3, 4, 5}, rng);
      const HostTensor y = add(a, b, relu);
      int64_t clipped = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        // The sum in the storage type: float + float for F32, double for F64.
        const double s = t == F32 ? double(float(a.get(i)) + float(b.get(i))) : a.get(i) + b.get(i);
        const double want = relu && !(s > 0) ? 0.0 : s;
        clipped += relu && s <= 0;
        ASSERT_EQ(y.get(i), want) << "element " << i;
      }
      if (relu) {
        EXPECT_GT(clipped, 0) << "the data should reach the ReLU's clipping";
      }
    }
}

// f16: the f32 sum of the two stored values rounded once to f16, and the ReLU
// applied to that rounded value.
TEST(OpsCpuAdd, F16RoundsOnceAndReluSeesTheRoundedSum) {
  Rng rng(41);
  const HostTensor a = random_tensor(F16, {1000}, rng, -4, 4), b = random_tensor(F16, {1000}, rng, -4, 4);
  const HostTensor y = add(a, b, false), yr = add(a, b, true);
  for (int64_t i = 0; i < a.numel(); ++i) {
    const half_t want = float_to_half(half_to_float(a.as<half_t>()[i]) + half_to_float(b.as<half_t>()[i]));
    ASSERT_EQ(y.as<half_t>()[i].bits, want.bits) << "element " << i;
    const float rounded = half_to_float(want);
    ASSERT_EQ(yr.as<half_t>()[i].bits, float_to_half(rounded > 0.f ? rounded : 0.f).bits) << "element " << i;
  }

  // Hand-picked: an exact f32 sum between two f16 values; a sum past the f16
  // range (65504 + 16 rounds to inf, and so does its negative: the ReLU clips
  // the rounded -inf to 0); -0 + -0 = -0, which the ReLU turns into +0.
  HostTensor ha(F16, {4}), hb(F16, {4});
  const double av[] = {1.0, 65504, -65504, -0.0}, bv[] = {3.0 / 4096, 16, -16, -0.0};
  for (int i = 0; i < 4; ++i) {
    ha.set(i, av[i]);
    hb.set(i, bv[i]);
  }
  const HostTensor hy = add(ha, hb, false);
  EXPECT_EQ(hy.get(0), 1.0 + 1.0 / 1024);  // 1 + 0.75 ulp rounds up, once
  EXPECT_EQ(hy.get(1), std::numeric_limits<double>::infinity());
  EXPECT_EQ(hy.get(2), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(hy.get(3) == 0.0 && std::signbit(hy.get(3)));
  const HostTensor hyr = add(ha, hb, true);
  EXPECT_EQ(hyr.values(), (std::vector<double>{1.0 + 1.0 / 1024, std::numeric_limits<double>::infinity(), 0, 0}));
  EXPECT_FALSE(std::signbit(hyr.get(3)));
}

TEST(OpsCpuAdd, InputsMustHaveOneShape) {
  OpRunner r;
  const Shape s{2, 7, 7, 64};
  EXPECT_EQ(r.shapes(add_shapes, {s, s}, 1)[0], s);
  EXPECT_EQ(r.shapes(add_shapes, {{5}, {5}}, 1)[0], (Shape{5}));
  EXPECT_THROW(r.shapes(add_shapes, {s, {2, 7, 7, 32}}, 1), UserError);
  EXPECT_THROW(r.shapes(add_shapes, {s, {2, 49, 64}}, 1), UserError);  // same size, other shape
  EXPECT_THROW(r.shapes(add_shapes, {{2, 0, 3}, {2, 0, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(add_shapes, {Shape{}, Shape{}}, 1), UserError);
}

}  // namespace
}  // namespace tr::test
