// Specification of the IDX reader: every bad input, crafted by hand in a fresh
// temporary directory, gives one tr::UserError line "<path>: <specific problem>".
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
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
  const std::string msg = user_error([&] { tr::data::resolve_idx_path(dir.path().string(), "nothing-idx1-ubyte"); });
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
  expect_message(user_error([&] { tr::data::resolve_idx_path(dir.path().string(), "sub"); }), p, {"is a directory"});
}

// Only regular files are opened: opening a FIFO would wait for a writer that
// never comes, and a device or socket is no data file either.
TEST(IdxReaderTest, FifoIsRefusedWithoutOpeningIt) {
  TempDir dir;
  const std::string p = dir.file("fifo-idx1-ubyte.gz");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << std::strerror(errno);
  expect_message(user_error_not_blocked_by(p, [&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                 {"not a regular file (a FIFO), expected an IDX file"});
  expect_message(
      user_error_not_blocked_by(p, [&] { tr::data::resolve_idx_path(dir.path().string(), "fifo-idx1-ubyte"); }), p,
      {"not a regular file (a FIFO)"});
}

TEST(IdxReaderTest, DeviceIsRefused) {
  expect_message(user_error([] { tr::data::read_idx_u8("/dev/null", kSmallImages); }), "/dev/null",
                 {"not a regular file (a character device), expected an IDX file"});
}

// A loop of symbolic links exists but leads nowhere: it is named as a loop,
// not as a missing file, and not passed over for the other candidate.
TEST(IdxReaderTest, SymlinkLoopIsNamedNotMissing) {
  TempDir dir;
  fs::create_symlink("loop-b", dir.path() / "loop-idx1-ubyte.gz");
  fs::create_symlink("loop-idx1-ubyte.gz", dir.path() / "loop-b");
  write_plain(dir.file("loop-idx1-ubyte"), idx_file(kLabelsMagic, {1}, {0}));
  const std::string p = dir.file("loop-idx1-ubyte.gz");
  const std::vector<std::string> loop = {
      "cannot be resolved: a symbolic link loop (too many levels of symbolic links)"};
  expect_message(user_error([&] { tr::data::read_idx_u8(p, 1); }), p, loop);
  expect_message(user_error([&] { tr::data::resolve_idx_path(dir.path().string(), "loop-idx1-ubyte"); }), p, loop);
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
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p, {"truncated header", "holds 3 bytes"});
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

// Found by tests/fuzz/fuzz_idx_reader: no items, but an item of 2^64 bytes
// made IdxArray::item_bytes() overflow (undefined behaviour) on the array read.
TEST(IdxReaderTest, ZeroItemsOfAnItemOverflowingInt64) {
  TempDir dir;
  const std::string p = dir.file("empty_overflow.gz");
  write_gz(p, idx_file(kImagesMagic, {0, 0xffffffffu, 0xffffffffu}, {}));
  expect_message(user_error([&] { tr::data::read_idx_u8(p, 3); }), p,
                 {"header declares 0 items of 4294967295x4294967295, too large to read"});
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

// zlib's gzread stops at the end of the gzip stream and drops what follows;
// the reader refuses it, as it refuses bytes after a plain file's payload.
TEST(IdxReaderTest, TrailingDataAfterTheGzipStream) {
  TempDir dir;
  const std::string p = dir.file("tail.gz");
  write_gz(p, idx_file(kImagesMagic, {5, 2, 3}, pattern(30)));
  const Bytes gz = read_all(p);
  // A few bytes, and more than one read of the file holds.
  for (const size_t extra : {size_t(4), size_t(300000)}) {
    Bytes spoiled = gz;
    spoiled.insert(spoiled.end(), extra, 'x');
    write_plain(p, spoiled);
    expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p,
                   {"trailing data: " + std::to_string(extra) +
                    " bytes after the end of the gzip stream are not another gzip member"});
  }
}

// A gzip file is a series of members (RFC 1952), decompressed as one stream.
TEST(IdxReaderTest, ConcatenatedGzipMembersReadAsOne) {
  TempDir dir;
  const Bytes file = idx_file(kImagesMagic, {5, 2, 3}, pattern(30));
  const Bytes head(file.begin(), file.begin() + 10), tail(file.begin() + 10, file.end());
  write_gz(dir.file("m1.gz"), head);
  write_gz(dir.file("m2.gz"), tail);
  Bytes both = read_all(dir.file("m1.gz"));
  const Bytes second = read_all(dir.file("m2.gz"));
  both.insert(both.end(), second.begin(), second.end());
  write_plain(dir.file("both.gz"), both);
  EXPECT_EQ(tr::data::read_idx_u8(dir.file("both.gz"), kSmallImages).data, pattern(30));
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
  expect_message(user_error([&] { tr::data::read_idx_u8(p, kSmallImages); }), p, {"corrupt gzip data (zlib: "});
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

}  // namespace
