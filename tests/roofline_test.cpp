// Note [roofline]: the bound an op is measured against, on both sides of the
// ridge point, and for ops without a FLOP count.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "harness/lib/bench/roofline.h"

namespace tr::bench {
namespace {

TEST(Roofline, ComputeBoundOpIsMeasuredAgainstThePeakFlops) {
  const Peaks p = h200_peaks(DType::F16);
  // 1 TFLOP over 1 GB (intensity 1000 > ridge 206) in 2 ms: 500 TFLOP/s.
  const Roofline r = roofline(1e12, 1e9, 2e-3, p);
  EXPECT_TRUE(r.compute_bound);
  EXPECT_DOUBLE_EQ(r.tflops, 500);
  EXPECT_DOUBLE_EQ(r.gbps, 500);
  // Fractions below 1 from a few double divisions: roundings of 1.1e-16 each; 1e-12 leaves 1e3x (also below).
  EXPECT_NEAR(r.of_roofline, 500e12 / 989e12, 1e-12);
  EXPECT_DOUBLE_EQ(r.of_roofline, r.of_peak_flops);
}

TEST(Roofline, MemoryBoundOpIsMeasuredAgainstWhatItsBytesAllow) {
  const Peaks p = h200_peaks(DType::F16);
  // Intensity 10 FLOP/byte: the bound is 10 x 4.8 TB/s = 48 TFLOP/s; 1 GB in
  // 0.5 ms moves 2 TB/s and does 20 TFLOP/s: 20/48 of the bound, 2/4.8 of HBM.
  const Roofline r = roofline(1e10, 1e9, 5e-4, p);
  EXPECT_FALSE(r.compute_bound);
  // A few double roundings of fractions below 1 (1.1e-16 each): 1e-12 leaves 1e3x.
  EXPECT_NEAR(r.of_roofline, 20.0 / 48.0, 1e-12);
  EXPECT_NEAR(r.of_peak_bytes, 2.0 / 4.8, 1e-12);
  EXPECT_NEAR(r.of_roofline, r.of_peak_bytes, 1e-12);  // below the ridge the two agree
}

TEST(Roofline, DataMovementWithoutFlopsIsItsBandwidthFraction) {
  const Roofline r = roofline(0, 4.8e9, 2e-3, h200_peaks(DType::F32));
  EXPECT_DOUBLE_EQ(r.tflops, 0);
  EXPECT_NEAR(r.of_roofline, 0.5, 1e-12);  // 4.8e9 B / 2e-3 s / 4.8e12 B/s, a few double roundings
  EXPECT_FALSE(r.compute_bound);
}

// Bytes that fit in L2 are not bounded by HBM: no fraction above 1 is printed.
TEST(Roofline, AnL2ResidentOpGetsNoHbmFractions) {
  const Peaks p = h200_peaks(DType::F16);
  const Roofline r = roofline(0, 32e6, 32e6 / 5.6e12, p);  // cnn's maxpool_fwd at b256: 5.6 TB/s
  EXPECT_TRUE(r.l2_resident);
  const auto c = roofline_counters(0, 32e6, r);
  EXPECT_EQ(c.count("of_roofline"), 0u);
  EXPECT_EQ(c.count("of_peak_bw"), 0u);
  EXPECT_EQ(c.at("l2_resident"), 1.0);
  const Roofline big = roofline(0, 400e6, 400e6 / 4.0e12, p);
  EXPECT_FALSE(big.l2_resident);
  const auto cb = roofline_counters(0, 400e6, big);
  EXPECT_NEAR(cb.at("of_roofline"), 4.0 / 4.8, 1e-12);  // a few double roundings (1.1e-16 each)
  EXPECT_LE(cb.at("of_roofline"), 1.0);                 // a fraction of HBM's bandwidth: at most 1
}

TEST(Roofline, Fp32UsesTheCudaCorePeakAndBadInputIsRefused) {
  EXPECT_DOUBLE_EQ(h200_peaks(DType::F32).flops, 67e12);
  EXPECT_DOUBLE_EQ(h200_peaks(DType::F16).flops, 989e12);
  EXPECT_THROW(roofline(1, 1, 0, h200_peaks(DType::F16)), Error);
  EXPECT_THROW(roofline(1, 0, 1, h200_peaks(DType::F16)), Error);
}

}  // namespace
}  // namespace tr::bench
