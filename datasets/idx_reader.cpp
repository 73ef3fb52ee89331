#include "datasets/idx_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "datasets/regular_file.h"
#include "framework/core/error.h"

namespace tr::data {
namespace fs = std::filesystem;

namespace {

constexpr uint8_t kTypeU8 = 0x08;
// zlib reads in calls of at most INT_MAX bytes; chunks also bound the memory a
// lying header can make us commit before the file runs out (see read_payload).
constexpr size_t kReadChunk = size_t(16) << 20;
// The payload buffer starts at 1 MiB and doubles as data arrives: a 16-byte
// file whose header claims gigabytes costs 1 MiB, not 64 (the IDX fuzz target
// ran 17 inputs a second when every such header zeroed 64 MiB), and
// Fashion-MNIST's 47 MB take six doublings.
constexpr size_t kInitialPayloadBytes = size_t(1) << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw UserError(cat(path, ": ", what)); }

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

// The name every refusal of a path gives what it wanted (regular_file.h).
const char* const kExpected = "an IDX file";

// One open IDX file, gzip or plain (a file is gzip when it starts with the gzip
// magic bytes 1f 8b, as zlib's gzread decides). A gzip file is a series of
// members read as one stream; anything after the last member that does not
// start another is trailing data and refused, where gzread would drop it
// unseen. Reads fail loudly on corrupt gzip data; a gzip stream that is cut
// off reads short and leaves cut_off() set, so the caller can say how much was
// there.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), in_(kInputBuffer) {
    // O_NONBLOCK: should the path have become a FIFO since path_kind() looked,
    // the open returns at once and the check below refuses it.
    fd_.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_.fd < 0) fail(path, cat("cannot open: ", std::strerror(errno)));
    struct stat st;
    if (::fstat(fd_.fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(path, "not a regular file, expected an IDX file");
    ::fcntl(fd_.fd, F_SETFL, ::fcntl(fd_.fd, F_GETFL) & ~O_NONBLOCK);
    fill(2);
    const bool gzip = in_end_ - in_pos_ >= 2 && in_[in_pos_] == 0x1f && in_[in_pos_ + 1] == 0x8b;
    // 16 + MAX_WBITS: a gzip header and trailer (CRC32, size) around deflate data.
    if (gzip && inflateInit2(&strm_, 16 + MAX_WBITS) != Z_OK) fail(path, "cannot start zlib's inflate");
    gzip_ = gzip;  // last: the destructor ends the inflate state only when there is one
  }
  ~GzReader() {
    if (gzip_) inflateEnd(&strm_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes into dst; fewer only when the data ends.
  size_t read(uint8_t* dst, size_t n) { return gzip_ ? inflate_into(dst, n) : copy_into(dst, n); }

  // Why a gzip read was short when the stream was cut off ("unexpected end of file").
  const std::optional<std::string>& cut_off() const { return cut_off_; }

 private:
  static constexpr size_t kInputBuffer = size_t(1) << 18;

  // Reads from the file into in_ until it holds at least `want` unread bytes or
  // the file ends; returns the unread count.
  size_t fill(size_t want) {
    if (in_end_ - in_pos_ >= want) return in_end_ - in_pos_;
    std::memmove(in_.data(), in_.data() + in_pos_, in_end_ - in_pos_);
    in_end_ -= in_pos_;
    in_pos_ = 0;
    while (in_end_ < want && !file_ended_) {
      const size_t got = read_file(in_.data() + in_end_, in_.size() - in_end_);
      if (got == 0) file_ended_ = true;
      in_end_ += got;
    }
    return in_end_;
  }

  size_t read_file(uint8_t* dst, size_t n) {
    while (true) {
      const ssize_t got = ::read(fd_.fd, dst, std::min(n, kReadChunk));
      if (got >= 0) return size_t(got);
      if (errno != EINTR) fail(path_, cat("cannot read: ", std::strerror(errno)));
    }
  }

  size_t copy_into(uint8_t* dst, size_t n) {
    size_t done = std::min(n, in_end_ - in_pos_);
    std::memcpy(dst, in_.data() + in_pos_, done);
    in_pos_ += done;
    while (done < n && !file_ended_) {
      const size_t got = read_file(dst + done, n - done);
      if (got == 0) file_ended_ = true;
      done += got;
    }
    return done;
  }

  size_t inflate_into(uint8_t* dst, size_t n) {
    size_t done = 0;
    while (done < n && !stream_ended_) {
      if (in_pos_ == in_end_ && fill(1) == 0) {
        cut_off_ = "unexpected end of file";
        stream_ended_ = true;
        break;
      }
      strm_.next_in = in_.data() + in_pos_;
      strm_.avail_in = uInt(in_end_ - in_pos_);
      strm_.next_out = dst + done;
      strm_.avail_out = uInt(std::min(n - done, kReadChunk));
      const uInt out_before = strm_.avail_out;
      const int rc = inflate(&strm_, Z_NO_FLUSH);
      in_pos_ = in_end_ - strm_.avail_in;
      done += out_before - strm_.avail_out;
      if (rc == Z_STREAM_END) {
        next_member();
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && in_pos_ == in_end_)) {
        fail(path_, cat("corrupt gzip data (zlib: ", strm_.msg ? strm_.msg : zError(rc), ")"));
      }
    }
    return done;
  }

  // After a member's trailer: the file ends, another member starts, or what
  // follows is trailing data.
  void next_member() {
    const size_t left = fill(2);
    if (left == 0) {
      stream_ended_ = true;
      return;
    }
    if (left >= 2 && in_[in_pos_] == 0x1f && in_[in_pos_ + 1] == 0x8b) {
      inflateReset(&strm_);
      return;
    }
    uint64_t extra = in_end_ - in_pos_;
    in_pos_ = in_end_;
    while (size_t got = read_file(in_.data(), in_.size())) extra += got;
    fail(path_, cat("trailing data: ", extra, " bytes after the end of the gzip stream are not another gzip member"));
  }

  // Closes the file however the constructor or a read ends.
  struct Fd {
    int fd = -1;
    Fd() = default;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  };

  std::string path_;
  Fd fd_;
  bool gzip_ = false;
  z_stream strm_{};
  std::vector<uint8_t> in_;  // file bytes read ahead: [in_pos_, in_end_) not yet used
  size_t in_pos_ = 0, in_end_ = 0;
  bool file_ended_ = false, stream_ended_ = false;
  std::optional<std::string> cut_off_;
};

std::string cut_off_note(const GzReader& in) {
  return in.cut_off() ? cat(" (gzip stream cut off: ", *in.cut_off(), ")") : std::string();
}

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// Reads and checks the magic number and dimensions; returns the dimensions.
std::vector<int64_t> read_header(GzReader& in, const std::string& path, const IdxExpectation& expect) {
  const size_t want_ndim = expect.dims.size();
  const uint32_t want_magic = uint32_t(kTypeU8) << 8 | uint32_t(want_ndim);

  uint8_t magic_bytes[4];
  const size_t got = in.read(magic_bytes, 4);
  if (got == 0) fail(path, cat("empty file, expected an IDX header", cut_off_note(in)));
  if (got < 4)
    fail(path, cat("truncated header: the file holds ", got, " bytes, the IDX magic number needs 4", cut_off_note(in)));
  const uint32_t magic = big_endian_u32(magic_bytes);
  if (magic_bytes[0] != 0 || magic_bytes[1] != 0)
    fail(path, cat("bad magic number ", hex32(magic), ", expected ", hex32(want_magic), ": not an IDX file"));
  const uint8_t type = magic_bytes[2], ndim = magic_bytes[3];
  if (type != kTypeU8)
    fail(path, cat("bad magic number ", hex32(magic), ", expected ", hex32(want_magic), ": element type ", hex8(type),
                   " (", type_name(type), "), only 0x08 (unsigned byte) is supported"));
  if (ndim != want_ndim)
    fail(path, cat("bad magic number ", hex32(magic), ", expected ", hex32(want_magic), ": ", int(ndim),
                   " dimensions, expected ", want_ndim));

  std::vector<uint8_t> raw(4 * want_ndim);
  const size_t got_dims = in.read(raw.data(), raw.size());
  if (got_dims < raw.size())
    fail(path, cat("truncated header: ", want_ndim, " dimensions need ", 4 + raw.size(), " bytes, the file holds ",
                   4 + got_dims, cut_off_note(in)));
  std::vector<int64_t> dims(want_ndim);
  for (size_t i = 0; i < want_ndim; ++i) dims[i] = big_endian_u32(&raw[4 * i]);

  const std::string& noun = expect.item_noun;
  if (expect.dims[0] != kAnyDim && dims[0] != expect.dims[0])
    fail(path, cat("header declares ", dims[0], " ", noun, ", expected ", expect.dims[0]));
  for (size_t i = 1; i < want_ndim; ++i) {
    if (expect.dims[i] != kAnyDim && dims[i] != expect.dims[i])
      fail(path, cat("header declares ", noun, " of ", join_dims(dims, 1), ", expected ", join_dims(expect.dims, 1)));
  }
  return dims;
}

// prod(dims), or a UserError when a (lying) header declares more than int64 holds.
// The item (prod(dims[1:])) must fit on its own, even with 0 items: an array
// read is one whose IdxArray::item_bytes() is defined.
int64_t payload_bytes(const std::vector<int64_t>& dims, const std::string& path, const std::string& noun) {
  int64_t item = 1, total = 0;
  bool overflow = false;
  for (size_t i = 1; i < dims.size(); ++i) overflow |= __builtin_mul_overflow(item, dims[i], &item);
  overflow |= __builtin_mul_overflow(dims[0], item, &total);
  if (overflow)
    fail(path, cat("header declares ", dims[0], " ", noun, " of ", join_dims(dims, 1), ", too large to read"));
  return total;
}

// Reads exactly `bytes` payload bytes, then reads on to the end of the file:
// anything more is trailing data, and reaching the end is what makes zlib check
// the gzip CRC. The buffer grows as data arrives, so a header that claims
// terabytes cannot make us allocate them before the file runs out.
std::vector<uint8_t> read_payload(GzReader& in, const std::string& path, const std::vector<int64_t>& dims,
                                  const std::string& noun, int64_t bytes) {
  const size_t header_bytes = 4 + 4 * dims.size();
  const size_t total = size_t(bytes);
  std::vector<uint8_t> data;
  size_t filled = 0;
  while (filled < total) {
    if (filled == data.size()) data.resize(std::min(total, std::max(kInitialPayloadBytes, 2 * data.size())));
    const size_t got = in.read(data.data() + filled, data.size() - filled);
    filled += got;
    if (filled < data.size())
      fail(path, cat("truncated: header declares ", describe(dims, noun, bytes), " but the file holds ", filled,
                     " after its ", header_bytes, "-byte header", cut_off_note(in)));
  }

  uint8_t scratch[1 << 16];
  uint64_t extra = 0;
  while (size_t got = in.read(scratch, sizeof scratch)) extra += got;
  if (extra > 0)
    fail(path, cat("trailing data: header declares ", describe(dims, noun, bytes), " but ", extra,
                   " more bytes follow them"));
  if (in.cut_off()) fail(path, cat("truncated gzip stream: ", *in.cut_off(), " (the gzip trailer is missing)"));
  return data;
}

}  // namespace

int64_t IdxArray::item_bytes() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

IdxArray read_idx_u8(const std::string& path, const IdxExpectation& expect) {
  TR_CHECK(!expect.dims.empty() && expect.dims.size() <= 255, "an IDX file has 1..255 dimensions, asked for ",
           expect.dims.size());
  switch (path_kind(path, kExpected)) {
    case PathKind::Missing: fail(path, "no such file");
    case PathKind::Directory: fail(path, "is a directory, expected an IDX file");
    case PathKind::Regular: break;
  }

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
  for (const std::string& p : {gz, plain}) {
    switch (path_kind(p, kExpected)) {
      case PathKind::Missing: continue;
      case PathKind::Directory: fail(p, "is a directory, expected an IDX file");
      case PathKind::Regular: return p;
    }
  }
  fail(gz, cat("missing (also tried ", plain, ")"));
}

}  // namespace tr::data
