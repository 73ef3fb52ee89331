// Specification of the IDX image-set loader: crafted splits (every bad file
// named with its problem; any count and size whose two files agree), EMNIST
// file names, padding, TR_DATA_DIR, and the installed Fashion-MNIST when present.
#include <gtest/gtest.h>
#include <sys/stat.h>

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

#include "datasets/idx_dataset.h"
#include "datasets/idx_reader.h"
#include "datasets/pad.h"
#include "datasets/synthetic.h"
#include "framework/core/error.h"
#include "tests/dataset_test_util.h"

namespace {

using namespace tr::testing;  // NOLINT: test helpers

// ---- Fashion-MNIST loader on crafted files ---------------------------------

constexpr uint32_t kTestCount = 10000;
constexpr uint32_t kSide = 28;

Bytes crafted_images(uint32_t count, uint32_t side = kSide) {
  Bytes b(size_t(count) * side * side);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i % 251);
  return b;
}

Bytes crafted_labels(uint32_t count) {
  Bytes b(count);
  for (uint32_t i = 0; i < count; ++i) b[i] = uint8_t(i % 10);
  return b;
}

// A well-formed "test" split (t10k-*) in dir; tests then spoil one part of it.
void write_test_split(const TempDir& dir) {
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"),
           idx_file(kImagesMagic, {kTestCount, kSide, kSide}, crafted_images(kTestCount)));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {kTestCount}, crafted_labels(kTestCount)));
}

TEST(FashionMnistTest, LoadsCraftedTestSplit) {
  TempDir dir;
  write_test_split(dir);
  const tr::data::ImageDataset ds = tr::data::load_idx_split(dir.path().string(), Split::Test);
  EXPECT_EQ(ds.count, 10000);
  EXPECT_EQ(ds.height, 28);
  EXPECT_EQ(ds.width, 28);
  EXPECT_EQ(ds.channels, 1);
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(ds.image_bytes(), 784);
  EXPECT_EQ(ds.images, crafted_images(kTestCount));
  ASSERT_EQ(ds.labels.size(), 10000u);
  for (size_t i = 0; i < ds.labels.size(); ++i) ASSERT_EQ(ds.labels[i], int32_t(i % 10));
}

TEST(FashionMnistTest, FallsBackToUncompressedFiles) {
  TempDir dir;
  write_plain(dir.file("t10k-images-idx3-ubyte"),
              idx_file(kImagesMagic, {kTestCount, kSide, kSide}, crafted_images(kTestCount)));
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_file(kLabelsMagic, {kTestCount}, crafted_labels(kTestCount)));
  const tr::data::ImageDataset ds = tr::data::load_idx_split(dir.path().string(), Split::Test);
  EXPECT_EQ(ds.count, 10000);
  EXPECT_EQ(ds.images, crafted_images(kTestCount));
}

TEST(FashionMnistTest, MissingDirectory) {
  TempDir dir;
  const std::string missing = dir.file("no-such-dir");
  expect_message(user_error([&] { tr::data::load_idx_split(missing, Split::Train); }), missing,
                 {"data directory does not exist", "TR_DATA_DIR"});
}

TEST(FashionMnistTest, DirectoryIsAFile) {
  TempDir dir;
  const std::string file = dir.file("plain-file");
  write_plain(file, {1, 2, 3});
  expect_message(user_error([&] { tr::data::load_idx_split(file, Split::Train); }), file, {"not a directory"});
}

TEST(FashionMnistTest, RelativeDirectoryIsReportedAbsolute) {
  const std::string msg = user_error([] { tr::data::load_idx_split("tr-no-such-relative-dir", Split::Test); });
  EXPECT_EQ(msg.rfind((fs::current_path() / "tr-no-such-relative-dir").string() + ": ", 0), 0u) << msg;
}

TEST(FashionMnistTest, MissingImagesFile) {
  TempDir dir;  // empty: neither train file exists
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Train); }),
                 dir.file("train-images-idx3-ubyte.gz"), {"missing", dir.file("train-images-idx3-ubyte)")});
}

TEST(FashionMnistTest, MissingLabelsFile) {
  TempDir dir;
  write_test_split(dir);
  fs::remove(dir.path() / "t10k-labels-idx1-ubyte.gz");
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 dir.file("t10k-labels-idx1-ubyte.gz"), {"missing"});
}

TEST(FashionMnistTest, LabelsFileWithImagesMagic) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"),
           idx_file(kImagesMagic, {kTestCount, 1, 1}, crafted_labels(kTestCount)));
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 dir.file("t10k-labels-idx1-ubyte.gz"), {"bad magic number 0x00000803, expected 0x00000801"});
}

// MNIST, KMNIST and EMNIST splits have other counts and sizes: any pair of
// files that agree is a data set.
TEST(FashionMnistTest, AnyCountAndSizeWhoseFilesAgree) {
  TempDir dir;
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_file(kImagesMagic, {7, 20, 24}, Bytes(7 * 20 * 24, 3)));
  Bytes labels = {0, 1, 2, 3, 4, 5, 11};
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {7}, labels));
  const tr::data::ImageDataset ds = tr::data::load_idx_split(dir.path().string(), Split::Test);
  EXPECT_EQ(ds.count, 7);
  EXPECT_EQ(ds.height, 20);
  EXPECT_EQ(ds.width, 24);
  EXPECT_EQ(ds.channels, 1);
  EXPECT_EQ(ds.num_classes, 12);  // 1 + the largest label
  EXPECT_EQ(ds.labels[6], 11);
  EXPECT_EQ(ds.images.size(), size_t(7 * 20 * 24));
}

// EMNIST names its files "emnist-<set>-train-images-idx3-ubyte.gz".
TEST(FashionMnistTest, FindsEmnistStyleFileNames) {
  TempDir dir;
  write_gz(dir.file("emnist-balanced-test-images-idx3-ubyte.gz"),
           idx_file(kImagesMagic, {4, 28, 28}, Bytes(4 * 784, 9)));
  write_gz(dir.file("emnist-balanced-test-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {4}, Bytes{0, 46, 2, 3}));
  const tr::data::ImageDataset ds = tr::data::load_idx_split(dir.path().string(), Split::Test);
  EXPECT_EQ(ds.count, 4);
  EXPECT_EQ(ds.num_classes, 47);
  // Two such sets in one directory are ambiguous.
  write_gz(dir.file("emnist-letters-test-images-idx3-ubyte.gz"),
           idx_file(kImagesMagic, {4, 28, 28}, Bytes(4 * 784, 9)));
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }), dir.path().string(),
                 {"several test splits"});
}

TEST(FashionMnistTest, EmptySplitIsRefused) {
  TempDir dir;
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_file(kImagesMagic, {0, 28, 28}, Bytes()));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {0}, Bytes()));
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 dir.file("t10k-images-idx3-ubyte.gz"), {"holds no images"});
}

// 28x28 -> 32x32: two zero rows/columns on every side, pixels and labels kept.
TEST(FashionMnistTest, PaddingCentresTheImages) {
  tr::data::ImageDataset d;
  d.count = 2;
  d.height = d.width = 3;
  d.channels = 1;
  d.num_classes = 2;
  d.labels = {1, 0};
  for (int i = 0; i < 18; ++i) d.images.push_back(uint8_t(i + 1));
  const tr::data::ImageDataset p = tr::data::pad_images(d, 6);  // odd extra pixel: bottom and right
  ASSERT_EQ(p.height, 6);
  ASSERT_EQ(p.images.size(), size_t(72));
  EXPECT_EQ(p.labels, d.labels);
  for (int64_t i = 0; i < 2; ++i)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 6; ++x) {
        const bool inside = y >= 1 && y < 4 && x >= 1 && x < 4;
        const int want = inside ? d.images[size_t(i * 9 + (y - 1) * 3 + (x - 1))] : 0;
        EXPECT_EQ(p.images[size_t(i * 36 + y * 6 + x)], want) << i << " " << y << " " << x;
      }
  EXPECT_NE(user_error([&] { tr::data::pad_images(d, 2); }).find("cannot pad 3x3 images to 2x2"), std::string::npos);
}

TEST(FashionMnistTest, TruncatedImagesFile) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_file(kImagesMagic, {kTestCount, kSide, kSide}, Bytes(1234)));
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 dir.file("t10k-images-idx3-ubyte.gz"),
                 {"truncated: header declares 10000 images of 28x28 (7840000 bytes) but the file holds 1234"});
}

TEST(FashionMnistTest, TrailingGarbageInLabelsFile) {
  TempDir dir;
  write_test_split(dir);
  Bytes labels = crafted_labels(kTestCount);
  labels.push_back(0);
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {kTestCount}, labels));
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 dir.file("t10k-labels-idx1-ubyte.gz"),
                 {"trailing data: header declares 10000 labels (10000 bytes) but 1 more bytes follow them"});
}

TEST(FashionMnistTest, CorruptGzipImages) {
  TempDir dir;
  write_test_split(dir);
  const fs::path p = dir.path() / "t10k-images-idx3-ubyte.gz";
  Bytes gz = read_all(p);
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 32; ++i) gz[i] ^= 0xa5;
  write_plain(p, gz);
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }), p.string(),
                 {"corrupt gzip data (zlib: "});
}

TEST(FashionMnistTest, LabelAndImageCountsDisagree) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {9999}, crafted_labels(9999)));
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 dir.file("t10k-labels-idx1-ubyte.gz"),
                 {"holds 9999 labels but " + dir.file("t10k-images-idx3-ubyte.gz") + " holds 10000 images"});
}

TEST(FashionMnistTest, AllLabelsZeroIsRefused) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {kTestCount}, Bytes(kTestCount, 0)));
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 dir.file("t10k-labels-idx1-ubyte.gz"), {"every label is 0"});
}

// A training split of 4x4 images, one per label.
void write_train_split(const TempDir& dir, const Bytes& labels) {
  const uint32_t n = uint32_t(labels.size());
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_file(kImagesMagic, {n, 4, 4}, Bytes(size_t(n) * 16, 7)));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {n}, labels));
}

// The training labels set the model's class count (1 + the largest), so a
// label past a class no training image has would add classes never trained:
// a stray 255 among 0..9 made a 256-class model. The first such label is named.
TEST(FashionMnistTest, TrainingLabelPastAClassWithoutImagesIsRefused) {
  TempDir dir;
  Bytes labels = crafted_labels(20);
  labels[7] = 255;
  labels[12] = 200;
  write_train_split(dir, labels);
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Train); }),
                 dir.file("train-labels-idx1-ubyte.gz"),
                 {"label 255 at index 7 is past class 10, which no training image has (the largest label, 255, "
                  "would make 256 classes; each from 1 up needs a training image)"});
  labels = crafted_labels(20);
  labels[3] = labels[13] = 0;  // class 3 without images
  write_train_split(dir, labels);
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Train); }),
                 dir.file("train-labels-idx1-ubyte.gz"), {"label 4 at index 4 is past class 3"});
}

// Class 0 alone may go without images: EMNIST's letters number their 26
// classes 1..26. A test split is only read, not counted: it may miss classes.
TEST(FashionMnistTest, TrainingLabelsMayLeaveClassZeroUnused) {
  TempDir dir;
  Bytes labels;
  for (int i = 0; i < 52; ++i) labels.push_back(uint8_t(1 + i % 26));
  write_train_split(dir, labels);
  EXPECT_EQ(tr::data::load_idx_split(dir.path().string(), Split::Train).num_classes, 27);
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_file(kImagesMagic, {2, 4, 4}, Bytes(32, 7)));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {2}, Bytes{1, 9}));
  EXPECT_EQ(tr::data::load_idx_split(dir.path().string(), Split::Test).num_classes, 10);
}

// A FIFO where a data file should be is refused by name; opening it would
// wait for a writer forever.
TEST(FashionMnistTest, FifoInTheDataDirectoryIsRefused) {
  TempDir dir;
  write_test_split(dir);
  const std::string fifo = dir.file("t10k-labels-idx1-ubyte.gz");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_message(user_error_not_blocked_by(fifo, [&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }),
                 fifo, {"not a regular file (a FIFO)"});
}

TEST(FashionMnistTest, SymlinkLoopInTheDataDirectoryIsNamed) {
  TempDir dir;
  write_test_split(dir);
  const std::string images = dir.file("t10k-images-idx3-ubyte.gz");
  fs::remove(images);
  fs::create_symlink("t10k-images-idx3-ubyte.gz", images);  // itself
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }), images,
                 {"symbolic link loop"});
}

TEST(FashionMnistTest, TrailingDataAfterTheGzipStreamOfALabelsFile) {
  TempDir dir;
  write_test_split(dir);
  const std::string p = dir.file("t10k-labels-idx1-ubyte.gz");
  Bytes gz = read_all(p);
  gz.push_back(0);
  write_plain(p, gz);
  expect_message(user_error([&] { tr::data::load_idx_split(dir.path().string(), Split::Test); }), p,
                 {"trailing data: 1 bytes after the end of the gzip stream"});
}

// Sets or unsets an environment variable for one scope, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(FashionMnistTest, DefaultDataDirHonoursTrDataDir) {
  {
    ScopedEnv env("TR_DATA_DIR", nullptr);
    EXPECT_EQ(tr::data::default_data_dir(), kInstalledDir);
  }
  {
    ScopedEnv env("TR_DATA_DIR", "");
    EXPECT_EQ(tr::data::default_data_dir(), kInstalledDir);
  }
  TempDir dir;
  write_test_split(dir);
  ScopedEnv env("TR_DATA_DIR", dir.path().c_str());
  EXPECT_EQ(tr::data::default_data_dir(), dir.path().string());
  const tr::data::ImageDataset ds = tr::data::load_idx_split(tr::data::default_data_dir(), Split::Test);
  EXPECT_EQ(ds.count, 10000);
  EXPECT_EQ(ds.labels[7], 7);
}

// ---- Fashion-MNIST loader on the installed data -----------------------------

// The real files where a run would look for them: $TR_DATA_DIR, else the
// Debian package's directory.
bool real_data_installed() { return fs::is_directory(tr::data::default_data_dir()); }

void expect_real_split(Split split, int64_t count, const std::array<int32_t, 10>& first_labels) {
  const auto t0 = std::chrono::steady_clock::now();
  const tr::data::ImageDataset ds = tr::data::load_idx_split(tr::data::default_data_dir(), split);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::testing::Test::RecordProperty("load_seconds", std::to_string(seconds));
  std::printf("load_idx_split(%s): %.3f s\n", tr::data::split_name(split), seconds);

  EXPECT_EQ(ds.count, count);
  EXPECT_EQ(ds.height, 28);
  EXPECT_EQ(ds.width, 28);
  EXPECT_EQ(ds.channels, 1);
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(int64_t(ds.images.size()), count * 784);
  ASSERT_EQ(int64_t(ds.labels.size()), count);
  std::array<int64_t, 10> histogram{};
  for (int32_t l : ds.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 10);
    ++histogram[size_t(l)];
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(histogram[size_t(c)], count / 10) << "class " << c;
  for (size_t i = 0; i < first_labels.size(); ++i) EXPECT_EQ(ds.labels[i], first_labels[i]) << i;
  // Fashion-MNIST's mean intensity is about 0.286 * 255: 0.2860 (train) and 0.2868 (test) of 255, 72.9 and 73.1.
  // 2.0 holds both splits; MNIST's files (0.1307 * 255 = 33.3) are 40 away.
  double sum = 0;
  for (uint8_t p : ds.images) sum += p;
  EXPECT_NEAR(sum / double(ds.images.size()), 0.286 * 255, 2.0);
}

TEST(FashionMnistRealDataTest, TrainSplit) {
  if (!real_data_installed()) GTEST_SKIP() << tr::data::default_data_dir() << " not found";
  expect_real_split(Split::Train, 60000, {9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
}

TEST(FashionMnistRealDataTest, TestSplit) {
  if (!real_data_installed()) GTEST_SKIP() << tr::data::default_data_dir() << " not found";
  expect_real_split(Split::Test, 10000, {9, 2, 1, 1, 6, 1, 4, 6, 5, 7});
}

}  // namespace
