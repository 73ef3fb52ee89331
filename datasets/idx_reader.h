#pragma once
// A general reader for IDX files of unsigned bytes (the MNIST family's format):
//
//   bytes 0-1   0x00 0x00
//   byte  2     element type (0x08 = unsigned byte; the only type read here)
//   byte  3     ndim
//   then        ndim big-endian uint32 dimensions, dimension 0 counts the items
//   then        prod(dims) payload bytes, row-major, and nothing after them.
//
// A file that starts with the gzip magic bytes is decompressed (zlib's inflate;
// concatenated gzip members read as one stream, bytes after the last member are
// trailing data); any other is read as it is, so `.gz` and plain files take the
// same path. Only regular files are opened (a FIFO would block). The reader knows
// nothing about any particular dataset: the caller states the dimensions it
// expects (or kAnyDim). Every problem with the file throws tr::UserError with one
// line "<path>: <what is wrong>"; nothing partial is ever returned.
#include <cstdint>
#include <string>
#include <vector>

namespace tr::data {

// Accepts any size in that dimension of an IdxExpectation.
inline constexpr int64_t kAnyDim = -1;

struct IdxExpectation {
  std::vector<int64_t> dims;        // one entry per dimension; kAnyDim accepts any size
  std::string item_noun = "items";  // what dimension 0 counts, for messages ("images")
};

struct IdxArray {
  std::string path;           // the file actually read
  std::vector<int64_t> dims;  // from the header, e.g. [60000, 28, 28]
  std::vector<uint8_t> data;  // [dims...] row-major, prod(dims) bytes

  int64_t item_count() const { return dims.empty() ? 0 : dims[0]; }
  int64_t item_bytes() const;  // prod(dims[1:]), 1 for a 1-d array
};

// Reads `path` (gzip or plain) and checks it against `expect`: a regular file,
// magic number, element type, ndim, each fixed dimension, payload size
// (truncation), trailing bytes inside and after the gzip stream, and gzip
// integrity (the CRC is verified because the stream is read to its end).
IdxArray read_idx_u8(const std::string& path, const IdxExpectation& expect);

// Shorthand: any dimensions, only ndim is fixed.
IdxArray read_idx_u8(const std::string& path, int expected_ndim);

// `<dir>/<name>.gz` when it exists, else `<dir>/<name>`; throws UserError naming
// the `.gz` path (and the fallback it also tried) when neither exists, and the
// path when the first that exists is no regular file or a symbolic link loop.
std::string resolve_idx_path(const std::string& dir, const std::string& name);

}  // namespace tr::data
