// Specification of datasets/: the IDX reader, the Fashion-MNIST loader and the
// synthetic generator. Every bad input is crafted by hand in a fresh temp dir and
// must give a tr::UserError with one line "<path>: <specific problem>". Tests on
// the real data skip when /usr/share/datasets/fashion-mnist is not installed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

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

#include "datasets/fashion_mnist.h"
#include "datasets/idx_reader.h"
#include "datasets/synthetic.h"
#include "framework/core/error.h"

namespace {

namespace fs = std::filesystem;
using tr::data::IdxExpectation;
using tr::data::kAnyDim;
using tr::data::Split;
using Bytes = std::vector<uint8_t>;

constexpr const char* kInstalledDir = "/usr/share/datasets/fashion-mnist";
constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

// ---- crafting files --------------------------------------------------------

void put_u32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(uint8_t(v >> shift));
}

// An IDX file: big-endian magic, big-endian dims, then the payload as given
// (which may deliberately disagree with the dims).
Bytes idx_file(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b;
  put_u32(b, magic);
  for (uint32_t d : dims) put_u32(b, d);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes pattern(size_t n) {  // compressible but not constant
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t((i * 7 + i / 13) & 0xff);
  return b;
}

void write_plain(const fs::path& p, const Bytes& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  if (!f) throw std::runtime_error("test setup: cannot write " + p.string());
}

void write_gz(const fs::path& p, const Bytes& b) {
  gzFile f = gzopen(p.c_str(), "wb1");
  if (!f) throw std::runtime_error("test setup: cannot gzopen " + p.string());
  const bool ok = b.empty() || gzwrite(f, b.data(), unsigned(b.size())) == int(b.size());
  if (gzclose(f) != Z_OK || !ok) throw std::runtime_error("test setup: gzwrite " + p.string());
}

Bytes read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("tr_datasets_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Runs f, expecting a tr::UserError; returns its message ("" after a failure).
std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const tr::UserError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected tr::UserError, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected tr::UserError, nothing was thrown";
  return "";
}

// The message is "<path>: ..." and mentions every fragment.
void expect_message(const std::string& msg, const std::string& path,
                    const std::vector<std::string>& fragments) {
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message should start with the path " << path
                                            << ": " << msg;
  for (const std::string& f : fragments)
    EXPECT_NE(msg.find(f), std::string::npos) << "missing \"" << f << "\" in: " << msg;
}

// ---- IDX reader --------------------------------------------------------------

const IdxExpectation kSmallImages{.dims = {kAnyDim, 2, 3}, .item_noun = "images"};

TEST(IdxReaderTest, ReadsGzipAndPlainAlike) {
  TempDir dir;
  const Bytes payload = pattern(4 * 2 * 3);
  write_gz(dir.file("a.gz"), idx_file(kImagesMagic, {4, 2, 3}, payload));
  write_plain(dir.file("a"), idx_file(kImagesMagic, {4, 2, 3}, payload));
  for (const std::string& p : {dir.file("a.gz"), dir.file("a")}) {
    const tr::data::IdxArray a = tr::data::read_idx_u8(p, kSmallImages);
    EXPECT_EQ(a.path, p);
    EXPECT_EQ(a.dims, (std::vector<int64_t>{4, 2, 3}));
    EXPECT_EQ(a.item_count(), 4);
    EXPECT_EQ(a.item_bytes(), 6);
    EXPECT_EQ(a.data, payload);
  }
}

TEST(IdxReaderTest, NdimOnlyOverloadAcceptsAnyDims) {
  TempDir dir;
  write_gz(dir.file("l.gz"), idx_file(kLabelsMagic, {5}, pattern(5)));
  const tr::data::IdxArray a = tr::data::read_idx_u8(dir.file("l.gz"), 1);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{5}));
  EXPECT_EQ(a.item_bytes(), 1);
  EXPECT_EQ(a.data, pattern(5));
}

TEST(IdxReaderTest, ZeroItemsIsAValidEmptyArray) {
  TempDir dir;
  write_gz(dir.file("e.gz"), idx_file(kImagesMagic, {0, 2, 3}, {}));
  const tr::data::IdxArray a = tr::data::read_idx_u8(dir.file("e.gz"), kSmallImages);
  EXPECT_EQ(a.item_count(), 0);
  EXPECT_TRUE(a.data.empty());
}

TEST(IdxReaderTest, ResolvePrefersGzThenPlain) {
  TempDir dir;
  write_plain(dir.file("x"), {});
  EXPECT_EQ(tr::data::resolve_idx_path(dir.path().string(), "x"), dir.file("x"));
  write_plain(dir.file("x.gz"), {});
  EXPECT_EQ(tr::data::resolve_idx_path(dir.path().string(), "x"), dir.file("x.gz"));
}

TEST(IdxReaderTest, ResolveMissingFileNamesBothCandidates) {
  TempDir dir;
  const std::string msg =
      user_error([&] { tr::data::resolve_idx_path(dir.path().string(), "nothing-idx1-ubyte"); });
  expect_message(msg, dir.file("nothing-idx1-ubyte.gz"), {"missing", dir.file("nothing-idx1-ubyte")});
}

TEST(IdxReaderTest, MissingFile) {
  TempDir dir;
  const std::string p = dir.file("absent.gz");
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p, {"no such file"});
}

TEST(IdxReaderTest, DirectoryInsteadOfFile) {
  TempDir dir;
  fs::create_directory(dir.path() / "sub.gz");
  const std::string p = dir.file("sub.gz");
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p, {"is a directory"});
  expect_message(user_error([&] { tr::data::resolve_idx_path(dir.path().string(), "sub"); }), p,
                 {"is a directory"});
}

TEST(IdxReaderTest, EmptyFile) {
  TempDir dir;
  const std::string p = dir.file("empty.gz");
  write_gz(p, {});
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p, {"empty file"});
}

TEST(IdxReaderTest, BadMagicNumber) {
  TempDir dir;
  const std::string p = dir.file("gif.gz");
  write_gz(p, Bytes{'G', 'I', 'F', '8', '9', 'a', 0, 0, 0, 0, 0, 0});
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"bad magic number 0x47494638", "expected 0x00000803", "not an IDX file"});
}

TEST(IdxReaderTest, WrongElementType) {
  TempDir dir;
  const std::string p = dir.file("float.gz");
  write_gz(p, idx_file(0x00000D03, {1, 2, 3}, Bytes(24)));
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"bad magic number 0x00000d03", "element type 0x0d (float32)", "0x08"});
}

TEST(IdxReaderTest, WrongNdimByte) {
  TempDir dir;
  const std::string p = dir.file("labels.gz");
  write_gz(p, idx_file(kLabelsMagic, {6}, Bytes(6)));
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"bad magic number 0x00000801", "expected 0x00000803", "1 dimensions, expected 3"});
}

TEST(IdxReaderTest, TruncatedMagic) {
  TempDir dir;
  const std::string p = dir.file("short.gz");
  write_gz(p, Bytes{0, 0, 8});
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"truncated header", "holds 3 bytes"});
}

TEST(IdxReaderTest, TruncatedDimensions) {
  TempDir dir;
  const std::string p = dir.file("short.gz");
  write_gz(p, idx_file(kImagesMagic, {4, 2}, {}));  // third dimension missing
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"truncated header", "3 dimensions need 16 bytes", "holds 12"});
}

TEST(IdxReaderTest, WrongItemDimensions) {
  TempDir dir;
  const std::string p = dir.file("big.gz");
  write_gz(p, idx_file(kImagesMagic, {4, 32, 32}, Bytes(4 * 32 * 32)));
  const IdxExpectation want{.dims = {kAnyDim, 28, 28}, .item_noun = "images"};
  expect_message(user_error([&] { tr::data::read_idx_u8(p, want); }), p,
                 {"header declares images of 32x32, expected 28x28"});
}

TEST(IdxReaderTest, WrongItemCount) {
  TempDir dir;
  const std::string p = dir.file("count.gz");
  // Only the header: the count is checked before any payload is read.
  write_gz(p, idx_file(kImagesMagic, {59999, 28, 28}, {}));
  const IdxExpectation want{.dims = {60000, 28, 28}, .item_noun = "images"};
  expect_message(user_error([&] { tr::data::read_idx_u8(p, want); }), p,
                 {"header declares 59999 images, expected 60000"});
}

TEST(IdxReaderTest, TruncatedPayload) {
  TempDir dir;
  for (const std::string name : {"t.gz", "t"}) {
    const std::string p = dir.file(name);
    const Bytes file = idx_file(kImagesMagic, {5, 2, 3}, pattern(7));  // declares 30 bytes
    name == "t" ? write_plain(p, file) : write_gz(p, file);
    expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                   {"truncated: header declares 5 images of 2x3 (30 bytes) but the file holds 7 "
                    "after its 16-byte header"});
  }
}

TEST(IdxReaderTest, HugeDeclaredSizeIsTruncationNotAnAllocation) {
  TempDir dir;
  const std::string p = dir.file("huge.gz");
  // Declares 4294967295 x 65535 x 1 bytes (~281 TB) but holds 10.
  write_gz(p, idx_file(kImagesMagic, {0xffffffffu, 65535, 1}, pattern(10)));
  expect_message(user_error([&] { tr::data::read_idx_u8(p, 3); }), p,
                 {"truncated: header declares 4294967295 items of 65535x1", "holds 10"});
}

TEST(IdxReaderTest, DeclaredSizeOverflowingInt64) {
  TempDir dir;
  const std::string p = dir.file("overflow.gz");
  write_gz(p, idx_file(kImagesMagic, {0xffffffffu, 0xffffffffu, 0xffffffffu}, {}));
  expect_message(user_error([&] { tr::data::read_idx_u8(p, 3); }), p, {"too large to read"});
}

TEST(IdxReaderTest, TrailingGarbage) {
  TempDir dir;
  for (const std::string name : {"g.gz", "g"}) {
    const std::string p = dir.file(name);
    const Bytes file = idx_file(kImagesMagic, {5, 2, 3}, pattern(30 + 3));
    name == "g" ? write_plain(p, file) : write_gz(p, file);
    expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                   {"trailing data: header declares 5 images of 2x3 (30 bytes) but 3 more bytes "
                    "follow them"});
  }
}

// A valid gzip file whose bytes the corruption tests edit. Its 768 KiB payload
// is larger than zlib's internal buffer, so not everything is decoded by the
// first (header) read.
Bytes valid_gz_bytes(const TempDir& dir) {
  const std::string p = dir.file("valid.gz");
  write_gz(p, idx_file(kImagesMagic, {1 << 17, 2, 3}, pattern(6 << 17)));
  return read_all(p);
}

TEST(IdxReaderTest, CorruptDeflateStream) {
  TempDir dir;
  Bytes gz = valid_gz_bytes(dir);
  ASSERT_GT(gz.size(), 100u);
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 16; ++i) gz[i] ^= 0x5a;
  const std::string p = dir.file("corrupt.gz");
  write_plain(p, gz);
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"corrupt gzip data (zlib: "});
}

TEST(IdxReaderTest, CorruptGzipChecksum) {
  TempDir dir;
  Bytes gz = valid_gz_bytes(dir);
  ASSERT_GT(gz.size(), 100u);
  gz[gz.size() - 8] ^= 0xff;  // the trailer is CRC32 then ISIZE, 4 bytes each
  const std::string p = dir.file("crc.gz");
  write_plain(p, gz);
  // The payload itself decompresses fine; only reading to the end catches this.
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"corrupt gzip data (zlib: incorrect data check)"});
}

TEST(IdxReaderTest, GzipStreamCutOff) {
  TempDir dir;
  Bytes gz = valid_gz_bytes(dir);
  ASSERT_GT(gz.size(), 100u);
  gz.erase(gz.begin() + ptrdiff_t(gz.size() / 2), gz.end());
  const std::string p = dir.file("cut.gz");
  write_plain(p, gz);
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"truncated: header declares 131072 images of 2x3 (786432 bytes)",
                  "gzip stream cut off: unexpected end of file"});
}

TEST(IdxReaderTest, GzipTrailerMissing) {
  TempDir dir;
  Bytes gz = valid_gz_bytes(dir);
  ASSERT_GT(gz.size(), 100u);
  gz.erase(gz.end() - 8, gz.end());  // all data present, CRC32 + ISIZE gone
  const std::string p = dir.file("notrailer.gz");
  write_plain(p, gz);
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"truncated gzip stream", "unexpected end of file"});
}

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
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"),
           idx_file(kLabelsMagic, {kTestCount}, crafted_labels(kTestCount)));
}

TEST(FashionMnistTest, LoadsCraftedTestSplit) {
  TempDir dir;
  write_test_split(dir);
  const tr::data::ImageDataset ds = tr::data::load_fashion_mnist(dir.path().string(), Split::Test);
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
  write_plain(dir.file("t10k-labels-idx1-ubyte"),
              idx_file(kLabelsMagic, {kTestCount}, crafted_labels(kTestCount)));
  const tr::data::ImageDataset ds = tr::data::load_fashion_mnist(dir.path().string(), Split::Test);
  EXPECT_EQ(ds.count, 10000);
  EXPECT_EQ(ds.images, crafted_images(kTestCount));
}

TEST(FashionMnistTest, MissingDirectory) {
  TempDir dir;
  const std::string missing = dir.file("no-such-dir");
  expect_message(user_error([&] { tr::data::load_fashion_mnist(missing, Split::Train); }), missing,
                 {"data directory does not exist", "TR_DATA_DIR"});
}

TEST(FashionMnistTest, DirectoryIsAFile) {
  TempDir dir;
  const std::string file = dir.file("plain-file");
  write_plain(file, {1, 2, 3});
  expect_message(user_error([&] { tr::data::load_fashion_mnist(file, Split::Train); }), file,
                 {"not a directory"});
}

TEST(FashionMnistTest, RelativeDirectoryIsReportedAbsolute) {
  const std::string msg =
      user_error([] { tr::data::load_fashion_mnist("tr-no-such-relative-dir", Split::Test); });
  EXPECT_EQ(msg.rfind((fs::current_path() / "tr-no-such-relative-dir").string() + ": ", 0), 0u)
      << msg;
}

TEST(FashionMnistTest, MissingImagesFile) {
  TempDir dir;  // empty: neither train file exists
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Train); }),
      dir.file("train-images-idx3-ubyte.gz"), {"missing", dir.file("train-images-idx3-ubyte)")});
}

TEST(FashionMnistTest, MissingLabelsFile) {
  TempDir dir;
  write_test_split(dir);
  fs::remove(dir.path() / "t10k-labels-idx1-ubyte.gz");
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      dir.file("t10k-labels-idx1-ubyte.gz"), {"missing"});
}

TEST(FashionMnistTest, LabelsFileWithImagesMagic) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"),
           idx_file(kImagesMagic, {kTestCount, 1, 1}, crafted_labels(kTestCount)));
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      dir.file("t10k-labels-idx1-ubyte.gz"),
      {"bad magic number 0x00000803, expected 0x00000801"});
}

TEST(FashionMnistTest, ImagesNot28x28) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"),
           idx_file(kImagesMagic, {kTestCount, 32, 32}, crafted_images(kTestCount, 32)));
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      dir.file("t10k-images-idx3-ubyte.gz"), {"header declares images of 32x32, expected 28x28"});
}

TEST(FashionMnistTest, ImageCountNotTheSplits) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"),
           idx_file(kImagesMagic, {9999, kSide, kSide}, crafted_images(9999)));
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      dir.file("t10k-images-idx3-ubyte.gz"), {"header declares 9999 images, expected 10000"});
}

TEST(FashionMnistTest, TruncatedImagesFile) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"),
           idx_file(kImagesMagic, {kTestCount, kSide, kSide}, Bytes(1234)));
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      dir.file("t10k-images-idx3-ubyte.gz"),
      {"truncated: header declares 10000 images of 28x28 (7840000 bytes) but the file holds 1234"});
}

TEST(FashionMnistTest, TrailingGarbageInLabelsFile) {
  TempDir dir;
  write_test_split(dir);
  Bytes labels = crafted_labels(kTestCount);
  labels.push_back(0);
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {kTestCount}, labels));
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
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
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      p.string(), {"corrupt gzip data (zlib: "});
}

TEST(FashionMnistTest, LabelAndImageCountsDisagree) {
  TempDir dir;
  write_test_split(dir);
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"),
           idx_file(kLabelsMagic, {9999}, crafted_labels(9999)));
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      dir.file("t10k-labels-idx1-ubyte.gz"),
      {"holds 9999 labels but " + dir.file("t10k-images-idx3-ubyte.gz") + " holds 10000 images"});
}

TEST(FashionMnistTest, LabelOutOfRange) {
  TempDir dir;
  write_test_split(dir);
  Bytes labels = crafted_labels(kTestCount);
  labels[1234] = 10;
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_file(kLabelsMagic, {kTestCount}, labels));
  expect_message(
      user_error([&] { tr::data::load_fashion_mnist(dir.path().string(), Split::Test); }),
      dir.file("t10k-labels-idx1-ubyte.gz"), {"label 10 of item 1234 is outside [0, 10)"});
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
  const tr::data::ImageDataset ds =
      tr::data::load_fashion_mnist(tr::data::default_data_dir(), Split::Test);
  EXPECT_EQ(ds.count, 10000);
  EXPECT_EQ(ds.labels[7], 7);
}

// ---- Fashion-MNIST loader on the installed data -----------------------------

bool real_data_installed() { return fs::is_directory(kInstalledDir); }

void expect_real_split(Split split, int64_t count, const std::array<int32_t, 10>& first_labels) {
  const auto t0 = std::chrono::steady_clock::now();
  const tr::data::ImageDataset ds = tr::data::load_fashion_mnist(kInstalledDir, split);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::testing::Test::RecordProperty("load_seconds", std::to_string(seconds));
  std::printf("load_fashion_mnist(%s): %.3f s\n", tr::data::split_name(split), seconds);

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
  // Fashion-MNIST's mean intensity is about 0.286 * 255.
  double sum = 0;
  for (uint8_t p : ds.images) sum += p;
  EXPECT_NEAR(sum / double(ds.images.size()), 0.286 * 255, 2.0);
}

TEST(FashionMnistRealDataTest, TrainSplit) {
  if (!real_data_installed()) GTEST_SKIP() << kInstalledDir << " not installed";
  expect_real_split(Split::Train, 60000, {9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
}

TEST(FashionMnistRealDataTest, TestSplit) {
  if (!real_data_installed()) GTEST_SKIP() << kInstalledDir << " not installed";
  expect_real_split(Split::Test, 10000, {9, 2, 1, 1, 6, 1, 4, 6, 5, 7});
}

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
  EXPECT_GT(nearest_mean_accuracy(a), 0.95);  // fitted on seed 1, scored on seed 2
}

TEST(SyntheticDatasetTest, LabelsAreUniform) {
  const auto ds = tr::data::make_synthetic(20000, 1, 1, 1, 10, 3);
  std::array<int64_t, 10> histogram{};
  for (int32_t l : ds.labels) ++histogram[size_t(l)];
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
    for (int64_t p = 0; p < d; ++p)
      mean[size_t(c * d + p)] /= double(std::max<int64_t>(seen[size_t(c)], 1));
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
// is 0.989.)
TEST(SyntheticDatasetTest, ImagesDependOnLabel) {
  for (uint64_t seed = 1; seed <= 5; ++seed)
    EXPECT_GT(nearest_mean_accuracy(tr::data::make_synthetic(2000, 12, 12, 1, 10, seed)), 0.95)
        << "seed " << seed;
}

TEST(SyntheticDatasetTest, RejectsNonPositiveSizes) {
  const std::vector<std::array<int64_t, 5>> bad = {
      {0, 8, 8, 1, 10}, {-1, 8, 8, 1, 10}, {4, 0, 8, 1, 10}, {4, 8, -2, 1, 10},
      {4, 8, 8, 0, 10}, {4, 8, 8, 1, 0},   {4, 8, 8, 1, -5}};
  for (const auto& a : bad) {
    const std::string msg = user_error([&] {
      tr::data::make_synthetic(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), 1);
    });
    EXPECT_NE(msg.find("must be positive"), std::string::npos) << msg;
  }
}

TEST(SyntheticDatasetTest, RejectsSizeThatOverflows) {
  const std::string msg = user_error([] {
    tr::data::make_synthetic(std::numeric_limits<int64_t>::max() / 2, 1000, 1000, 3, 10, 1);
  });
  EXPECT_NE(msg.find("do not fit in memory"), std::string::npos) << msg;
}

}  // namespace
