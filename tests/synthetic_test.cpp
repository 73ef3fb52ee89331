// Specification of the synthetic generator: deterministic, any NHWC shape,
// uniform labels, images that depend on the label, bad sizes refused.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "datasets/idx_reader.h"
#include "datasets/synthetic.h"
#include "framework/core/error.h"
#include "tests/dataset_test_util.h"

namespace {

using namespace tr::testing;  // NOLINT: test helpers

// ---- synthetic data ----------------------------------------------------------

uint64_t fnv1a(const tr::data::ImageDataset& ds) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](uint8_t b) { h = (h ^ b) * 0x100000001b3ull; };
  for (uint8_t b : ds.images) mix(b);
  for (int32_t l : ds.labels) mix(uint8_t(l));
  return h;
}

TEST(SyntheticDatasetTest, ShapeAndLabelRange) {
  const tr::data::ImageDataset ds = tr::data::make_synthetic(37, 5, 7, 3, 4, 1);
  EXPECT_EQ(ds.count, 37);
  EXPECT_EQ(ds.height, 5);
  EXPECT_EQ(ds.width, 7);
  EXPECT_EQ(ds.channels, 3);
  EXPECT_EQ(ds.num_classes, 4);
  EXPECT_EQ(ds.image_bytes(), 105);
  EXPECT_EQ(ds.images.size(), 37u * 105u);
  ASSERT_EQ(ds.labels.size(), 37u);
  for (int32_t l : ds.labels) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 4);
  }
}

TEST(SyntheticDatasetTest, TinyAndSingleClassShapes) {
  const tr::data::ImageDataset a = tr::data::make_synthetic(3, 1, 1, 1, 1, 0);
  EXPECT_EQ(a.images.size(), 3u);
  EXPECT_EQ(a.labels, (std::vector<int32_t>{0, 0, 0}));
  const tr::data::ImageDataset b = tr::data::make_synthetic(2, 224, 224, 3, 1000, 0);
  EXPECT_EQ(b.images.size(), 2u * 224 * 224 * 3);
}

TEST(SyntheticDatasetTest, SameSeedSameBytes) {
  const auto a = tr::data::make_synthetic(64, 28, 28, 1, 10, 42);
  const auto b = tr::data::make_synthetic(64, 28, 28, 1, 10, 42);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
}

TEST(SyntheticDatasetTest, DifferentSeedDiffers) {
  const auto a = tr::data::make_synthetic(64, 28, 28, 1, 10, 42);
  const auto b = tr::data::make_synthetic(64, 28, 28, 1, 10, 43);
  EXPECT_NE(a.images, b.images);
  EXPECT_NE(a.labels, b.labels);
}

TEST(SyntheticDatasetTest, LargerCountExtendsSmallerOne) {
  const auto small = tr::data::make_synthetic(10, 8, 8, 3, 10, 7);
  const auto large = tr::data::make_synthetic(25, 8, 8, 3, 10, 7);
  EXPECT_TRUE(std::equal(small.images.begin(), small.images.end(), large.images.begin()));
  EXPECT_TRUE(std::equal(small.labels.begin(), small.labels.end(), large.labels.begin()));
}

// Pins the exact bytes: they are integer-only and must not drift across
// machines or refactors (throughput runs and saved baselines rely on them).
TEST(SyntheticDatasetTest, GoldenHash) {
  EXPECT_EQ(fnv1a(tr::data::make_synthetic(16, 6, 5, 2, 3, 12345)), 8247392392685555408ull);
}

double nearest_mean_accuracy(const tr::data::ImageDataset& ds);

// Sets made with different seeds share the class patterns: a training set and a
// validation set drawn with two seeds come from one distribution.
TEST(SyntheticDatasetTest, SeedsShareClassPatterns) {
  auto a = tr::data::make_synthetic(400, 12, 12, 1, 10, 1);
  const auto b = tr::data::make_synthetic(400, 12, 12, 1, 10, 2);
  a.images.insert(a.images.end(), b.images.begin(), b.images.end());
  a.labels.insert(a.labels.end(), b.labels.begin(), b.labels.end());
  a.count += b.count;
  // Fitted on seed 1, scored on seed 2. Within one seed the score is 0.989 or more (ImagesDependOnLabel);
  // patterns drawn anew per seed would score chance, 0.1.
  EXPECT_GT(nearest_mean_accuracy(a), 0.95);
}

TEST(SyntheticDatasetTest, LabelsAreUniform) {
  const auto ds = tr::data::make_synthetic(20000, 1, 1, 1, 10, 3);
  std::array<int64_t, 10> histogram{};
  for (int32_t l : ds.labels) ++histogram[size_t(l)];
  // Binomial(20000, 0.1): sd 42; 200 is 4.7 sd, and a class drawn twice as often is off by 2000.
  for (int c = 0; c < 10; ++c) EXPECT_NEAR(double(histogram[size_t(c)]), 2000.0, 200.0) << c;
}

// Accuracy of a nearest-class-mean classifier fitted on the first half of ds
// and scored on the second half.
double nearest_mean_accuracy(const tr::data::ImageDataset& ds) {
  const int64_t n = ds.count, d = ds.image_bytes(), k = ds.num_classes;
  std::vector<double> mean(size_t(k * d), 0.0);  // [k, d]
  std::vector<int64_t> seen(size_t(k), 0);
  for (int64_t i = 0; i < n / 2; ++i) {
    const int32_t l = ds.labels[size_t(i)];
    ++seen[size_t(l)];
    for (int64_t p = 0; p < d; ++p) mean[size_t(l * d + p)] += ds.images[size_t(i * d + p)];
  }
  for (int64_t c = 0; c < k; ++c)
    for (int64_t p = 0; p < d; ++p) mean[size_t(c * d + p)] /= double(std::max<int64_t>(seen[size_t(c)], 1));
  int64_t correct = 0;
  for (int64_t i = n / 2; i < n; ++i) {
    int64_t best = 0;
    double best_dist = std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < k; ++c) {
      double dist = 0;
      for (int64_t p = 0; p < d; ++p) {
        const double diff = ds.images[size_t(i * d + p)] - mean[size_t(c * d + p)];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = c;
    }
    correct += best == ds.labels[size_t(i)];
  }
  return double(correct) / double(n - n / 2);
}

// The images carry the label: a classifier as simple as nearest class mean is
// far above chance (10%) for any seed. (Over seeds 0..99 at 12x12 the worst
// is 0.989; 0.95 leaves 0.039, 39 of the 1000 scored images.)
TEST(SyntheticDatasetTest, ImagesDependOnLabel) {
  for (uint64_t seed = 1; seed <= 5; ++seed)
    EXPECT_GT(nearest_mean_accuracy(tr::data::make_synthetic(2000, 12, 12, 1, 10, seed)), 0.95) << "seed " << seed;
}

TEST(SyntheticDatasetTest, RejectsNonPositiveSizes) {
  const std::vector<std::array<int64_t, 5>> bad = {{0, 8, 8, 1, 10},  {-1, 8, 8, 1, 10}, {4, 0, 8, 1, 10},
                                                   {4, 8, -2, 1, 10}, {4, 8, 8, 0, 10},  {4, 8, 8, 1, 0},
                                                   {4, 8, 8, 1, -5}};
  for (const auto& a : bad) {
    const std::string msg =
        user_error([&] { tr::data::make_synthetic(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), 1); });
    EXPECT_NE(msg.find("must be positive"), std::string::npos) << msg;
  }
}

TEST(SyntheticDatasetTest, RejectsSizeThatOverflows) {
  const std::string msg =
      user_error([] { tr::data::make_synthetic(std::numeric_limits<int64_t>::max() / 2, 1000, 1000, 3, 10, 1); });
  EXPECT_NE(msg.find("do not fit in memory"), std::string::npos) << msg;
}

}  // namespace
