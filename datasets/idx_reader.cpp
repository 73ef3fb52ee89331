#include "datasets/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "framework/core/error.h"

namespace tr::data {
namespace fs = std::filesystem;

namespace {

constexpr uint8_t kTypeU8 = 0x08;
// zlib reads in calls of at most INT_MAX bytes; chunks also bound the memory a
// lying header can make us commit before the file runs out (see read_payload).
constexpr size_t kReadChunk = size_t(16) << 20;
constexpr size_t kInitialPayloadBytes = size_t(64) << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw UserError(cat(path, ": ", what));
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string hex8(uint8_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", v);
  return buf;
}

std::string type_name(uint8_t t) {
  switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
  }
}

// "28x28", or "*" for kAnyDim entries of an expectation.
std::string join_dims(const std::vector<int64_t>& dims, size_t from) {
  std::string s;
  for (size_t i = from; i < dims.size(); ++i) {
    if (i > from) s += "x";
    s += dims[i] == kAnyDim ? std::string("*") : std::to_string(dims[i]);
  }
  return s;
}

// "60000 images of 28x28 (47040000 bytes)" / "60000 labels (60000 bytes)".
std::string describe(const std::vector<int64_t>& dims, const std::string& noun, int64_t bytes) {
  std::string s = cat(dims[0], " ", noun);
  if (dims.size() > 1) s += cat(" of ", join_dims(dims, 1));
  return cat(s, " (", bytes, " bytes)");
}

// One open IDX file, gzip or plain. Reads fail loudly on corrupt gzip data; a
// gzip stream that is cut off reads short and leaves cut_off() set, so the
// caller can say how much was there.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) fail(path, errno ? cat("cannot open: ", std::strerror(errno)) : "cannot open");
    gzbuffer(file_, 1u << 18);  // larger than the 8 KiB default: fewer read() calls
  }
  ~GzReader() { gzclose_r(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes into dst; fewer only when the data ends.
  size_t read(uint8_t* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      const unsigned want = unsigned(std::min(n - done, kReadChunk));
      const int got = gzread(file_, dst + done, want);
      if (got < 0) fail(path_, cat("corrupt gzip data (zlib: ", zlib_message(), ")"));
      if (got == 0) {
        int errnum = Z_OK;
        gzerror(file_, &errnum);
        // Z_BUF_ERROR: the compressed stream ended mid-way ("unexpected end of file").
        if (errnum != Z_OK) cut_off_ = zlib_message();
        break;
      }
      done += size_t(got);
    }
    return done;
  }

  // zlib's message for a cut-off gzip stream, when that is why a read was short.
  const std::optional<std::string>& cut_off() const { return cut_off_; }

 private:
  // zlib prefixes its messages with the path it was opened with; drop that so
  // the error keeps one "<path>: " prefix.
  std::string zlib_message() const {
    int errnum = Z_OK;
    std::string msg = gzerror(file_, &errnum);
    const std::string prefix = path_ + ": ";
    if (msg.rfind(prefix, 0) == 0) msg.erase(0, prefix.size());
    return msg;
  }

  std::string path_;
  gzFile file_ = nullptr;
  std::optional<std::string> cut_off_;
};

std::string cut_off_note(const GzReader& in) {
  return in.cut_off() ? cat(" (gzip stream cut off: ", *in.cut_off(), ")") : std::string();
}

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// Reads and checks the magic number and dimensions; returns the dimensions.
std::vector<int64_t> read_header(GzReader& in, const std::string& path,
                                 const IdxExpectation& expect) {
  const size_t want_ndim = expect.dims.size();
  const uint32_t want_magic = uint32_t(kTypeU8) << 8 | uint32_t(want_ndim);

  uint8_t magic_bytes[4];
  const size_t got = in.read(magic_bytes, 4);
  if (got == 0) fail(path, cat("empty file, expected an IDX header", cut_off_note(in)));
  if (got < 4)
    fail(path, cat("truncated header: the file holds ", got, " bytes, the IDX magic number needs 4",
                   cut_off_note(in)));
  const uint32_t magic = big_endian_u32(magic_bytes);
  if (magic_bytes[0] != 0 || magic_bytes[1] != 0)
    fail(path, cat("bad magic number ", hex32(magic), ", expected ", hex32(want_magic),
                   ": not an IDX file"));
  const uint8_t type = magic_bytes[2], ndim = magic_bytes[3];
  if (type != kTypeU8)
    fail(path, cat("bad magic number ", hex32(magic), ", expected ", hex32(want_magic),
                   ": element type ", hex8(type), " (", type_name(type),
                   "), only 0x08 (unsigned byte) is supported"));
  if (ndim != want_ndim)
    fail(path, cat("bad magic number ", hex32(magic), ", expected ", hex32(want_magic), ": ",
                   int(ndim), " dimensions, expected ", want_ndim));

  std::vector<uint8_t> raw(4 * want_ndim);
  const size_t got_dims = in.read(raw.data(), raw.size());
  if (got_dims < raw.size())
    fail(path, cat("truncated header: ", want_ndim, " dimensions need ", 4 + raw.size(),
                   " bytes, the file holds ", 4 + got_dims, cut_off_note(in)));
  std::vector<int64_t> dims(want_ndim);
  for (size_t i = 0; i < want_ndim; ++i) dims[i] = big_endian_u32(&raw[4 * i]);

  const std::string& noun = expect.item_noun;
  if (expect.dims[0] != kAnyDim && dims[0] != expect.dims[0])
    fail(path, cat("header declares ", dims[0], " ", noun, ", expected ", expect.dims[0]));
  for (size_t i = 1; i < want_ndim; ++i) {
    if (expect.dims[i] != kAnyDim && dims[i] != expect.dims[i])
      fail(path, cat("header declares ", noun, " of ", join_dims(dims, 1), ", expected ",
                     join_dims(expect.dims, 1)));
  }
  return dims;
}

// prod(dims), or a UserError when a (lying) header declares more than int64 holds.
// The item (prod(dims[1:])) must fit on its own, even with 0 items: an array
// read is one whose IdxArray::item_bytes() is defined.
int64_t payload_bytes(const std::vector<int64_t>& dims, const std::string& path,
                      const std::string& noun) {
  int64_t item = 1, total = 0;
  bool overflow = false;
  for (size_t i = 1; i < dims.size(); ++i) overflow |= __builtin_mul_overflow(item, dims[i], &item);
  overflow |= __builtin_mul_overflow(dims[0], item, &total);
  if (overflow)
    fail(path, cat("header declares ", dims[0], " ", noun, " of ", join_dims(dims, 1),
                   ", too large to read"));
  return total;
}

// Reads exactly `bytes` payload bytes, then reads on to the end of the file:
// anything more is trailing data, and reaching the end is what makes zlib check
// the gzip CRC. The buffer grows as data arrives, so a header that claims
// terabytes cannot make us allocate them before the file runs out.
std::vector<uint8_t> read_payload(GzReader& in, const std::string& path,
                                  const std::vector<int64_t>& dims, const std::string& noun,
                                  int64_t bytes) {
  const size_t header_bytes = 4 + 4 * dims.size();
  const size_t total = size_t(bytes);
  std::vector<uint8_t> data;
  size_t filled = 0;
  while (filled < total) {
    if (filled == data.size())
      data.resize(std::min(total, std::max(kInitialPayloadBytes, 2 * data.size())));
    const size_t got = in.read(data.data() + filled, data.size() - filled);
    filled += got;
    if (filled < data.size())
      fail(path, cat("truncated: header declares ", describe(dims, noun, bytes),
                     " but the file holds ", filled, " after its ", header_bytes,
                     "-byte header", cut_off_note(in)));
  }

  uint8_t scratch[1 << 16];
  uint64_t extra = 0;
  while (size_t got = in.read(scratch, sizeof scratch)) extra += got;
  if (extra > 0)
    fail(path, cat("trailing data: header declares ", describe(dims, noun, bytes), " but ",
                   extra, " more bytes follow them"));
  if (in.cut_off())
    fail(path, cat("truncated gzip stream: ", *in.cut_off(), " (the gzip trailer is missing)"));
  return data;
}

}  // namespace

int64_t IdxArray::item_bytes() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

IdxArray read_idx_u8(const std::string& path, const IdxExpectation& expect) {
  TR_CHECK(!expect.dims.empty() && expect.dims.size() <= 255,
           "an IDX file has 1..255 dimensions, asked for ", expect.dims.size());
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) fail(path, "no such file");
  if (fs::is_directory(st)) fail(path, "is a directory, expected an IDX file");

  GzReader in(path);
  IdxArray out;
  out.path = path;
  out.dims = read_header(in, path, expect);
  const int64_t bytes = payload_bytes(out.dims, path, expect.item_noun);
  out.data = read_payload(in, path, out.dims, expect.item_noun, bytes);
  return out;
}

IdxArray read_idx_u8(const std::string& path, int expected_ndim) {
  TR_CHECK(expected_ndim >= 1 && expected_ndim <= 255, "bad expected_ndim ", expected_ndim);
  return read_idx_u8(path, IdxExpectation{.dims = std::vector<int64_t>(size_t(expected_ndim), kAnyDim)});
}

std::string resolve_idx_path(const std::string& dir, const std::string& name) {
  const std::string gz = (fs::path(dir) / (name + ".gz")).string();
  const std::string plain = (fs::path(dir) / name).string();
  std::error_code ec;
  for (const std::string& p : {gz, plain}) {
    const fs::file_status st = fs::status(p, ec);
    if (!fs::exists(st)) continue;
    if (fs::is_directory(st)) fail(p, "is a directory, expected an IDX file");
    return p;
  }
  fail(gz, cat("missing (also tried ", plain, ")"));
}

}  // namespace tr::data
