#include "datasets/synthetic.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/host_memory.h"
#include "framework/core/rng.h"

namespace tr::data {

namespace {

// Independent streams per purpose and index, all from one user seed.
constexpr uint64_t kClassSalt = 0x636c617373000000ull;   // "class"
constexpr uint64_t kSampleSalt = 0x73616d706c650000ull;  // "sample"

uint64_t derive_seed(uint64_t seed, uint64_t salt, uint64_t index) {
  return Rng(seed ^ salt ^ (index * 0xd1342543de82ef95ull)).next_u64();
}

// Triangle wave in fixed point: phase in 1/65536 turns -> value in [-32768, 32768].
// Integer-only (no sin) so every platform produces the same bytes.
int32_t triangle(uint32_t phase) {
  const int32_t p = int32_t(phase & 0xffff);
  return 2 * std::abs(p - 32768) - 32768;
}

// Class k's mean pattern, per channel, is a sum of two separable waves:
//   mean(y, x, c) = 128 + 32 * sum_{t<2} tri(fy_t*y/H + py_t) * tri(fx_t*x/W + px_t)
// with frequencies fy, fx in {1..4} and phases drawn per (class, channel) only:
// the class patterns are the same for every seed, so sets made with different
// seeds (a training and a validation set) come from one distribution,
// so means span [64, 192]. Two terms rather than one: with a single wave two of
// ten classes too often come out nearly alike. Per sample we fill row tables
// [kTerms, height, channels] and column tables [kTerms, width, channels]
// instead of storing a template per class, so num_classes costs no memory.
constexpr int kTerms = 2;
constexpr uint64_t kPatternSeed = 0x5eed;  // fixed: classes do not depend on the user seed
constexpr int kMaxFrequency = 4;
constexpr int64_t kAmplitude = 32;
static_assert(kTerms == 2, "the pixel loop below sums exactly two terms");

struct Waves {
  std::vector<int32_t> rows;  // [kTerms, height, channels], values in [-32768, 32768]
  std::vector<int32_t> cols;  // [kTerms, width, channels]
};

void fill_waves(Waves& w, int height, int width, int channels, uint64_t class_seed) {
  Rng rng(class_seed);
  const size_t row_term = size_t(height) * channels, col_term = size_t(width) * channels;
  for (int t = 0; t < kTerms; ++t) {
    for (int c = 0; c < channels; ++c) {
      const uint64_t fy = 1 + rng.below(kMaxFrequency), fx = 1 + rng.below(kMaxFrequency);
      const uint32_t py = uint32_t(rng.below(65536)), px = uint32_t(rng.below(65536));
      // Sample at pixel centres: phase = f * (y + 0.5) / H turns, in 1/65536 turns.
      for (int y = 0; y < height; ++y)
        w.rows[t * row_term + size_t(y) * channels + c] =
            triangle(uint32_t(fy * (2 * uint64_t(y) + 1) * 32768 / uint64_t(height)) + py);
      for (int x = 0; x < width; ++x)
        w.cols[t * col_term + size_t(x) * channels + c] =
            triangle(uint32_t(fx * (2 * uint64_t(x) + 1) * 32768 / uint64_t(width)) + px);
    }
  }
}

}  // namespace

ImageDataset make_synthetic(int64_t count, int height, int width, int channels, int num_classes, uint64_t seed) {
  TR_USER_CHECK(count > 0 && height > 0 && width > 0 && channels > 0 && num_classes > 0,
                "synthetic data: count, height, width, channels and num_classes must be positive, got "
                "count=",
                count, " shape=", height, "x", width, "x", channels, " num_classes=", num_classes);
  ImageDataset ds;
  ds.count = count;
  ds.height = height;
  ds.width = width;
  ds.channels = channels;
  ds.num_classes = num_classes;
  const int64_t item = ds.image_bytes();  // no overflow: three ints fit in int64
  int64_t total = 0;
  TR_USER_CHECK(!__builtin_mul_overflow(count, item, &total) && uint64_t(total) <= uint64_t(ds.images.max_size()),
                "synthetic data: ", count, " images of ", height, "x", width, "x", channels, " do not fit in memory");
  const int64_t available = host_available_bytes();
  TR_USER_CHECK(available < 0 || total <= available, "synthetic data: ", count, " images of ", height, "x", width, "x",
                channels, " need ", bytes_and_gib(total), " of host memory but ", bytes_and_gib(available),
                " is available; use a smaller --batch");
  ds.images.resize(size_t(total));
  ds.labels.resize(size_t(count));

  const size_t row_term = size_t(height) * channels, col_term = size_t(width) * channels;
  Waves w{std::vector<int32_t>(kTerms * row_term), std::vector<int32_t>(kTerms * col_term)};
  for (int64_t i = 0; i < count; ++i) {
    Rng rng(derive_seed(seed, kSampleSalt, uint64_t(i)));
    const int32_t label = int32_t(rng.below(uint64_t(num_classes)));
    ds.labels[size_t(i)] = label;
    fill_waves(w, height, width, channels, derive_seed(kPatternSeed, kClassSalt, uint64_t(label)));

    // Pixel = class mean (in [64, 192]) + uniform noise in [-48, 48], so classes
    // overlap pixel by pixel but separate over the whole image.
    uint8_t* img = ds.images.data() + size_t(i) * size_t(item);
    uint64_t bits = 0;
    int bits_left = 0;
    for (int y = 0; y < height; ++y) {
      const int32_t* row0 = &w.rows[size_t(y) * channels];
      const int32_t* row1 = row0 + row_term;
      for (int x = 0; x < width; ++x) {
        const int32_t* col0 = &w.cols[size_t(x) * channels];
        const int32_t* col1 = col0 + col_term;
        for (int c = 0; c < channels; ++c) {
          if (bits_left == 0) {
            bits = rng.next_u64();
            bits_left = 8;
          }
          const int32_t noise = int32_t(((bits & 0xff) * 97) >> 8) - 48;
          bits >>= 8;
          --bits_left;
          const int64_t waves = int64_t(row0[c]) * col0[c] + int64_t(row1[c]) * col1[c];
          const int32_t mean = 128 + int32_t((kAmplitude * waves) >> 30);
          *img++ = uint8_t(std::clamp(mean + noise, 0, 255));
        }
      }
    }
  }
  return ds;
}

}  // namespace tr::data
