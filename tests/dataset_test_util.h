#pragma once
// Helpers for the datasets/ tests: craft IDX files (plain or gzip) in a fresh
// temporary directory, and check that a bad input gives one tr::UserError line
// "<path>: <specific problem>".
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "datasets/idx_dataset.h"
#include "datasets/idx_reader.h"
#include "framework/core/error.h"

namespace tr::testing {

namespace fs = std::filesystem;
using tr::data::IdxExpectation;
using tr::data::kAnyDim;
using tr::data::Split;
using Bytes = std::vector<uint8_t>;

inline constexpr const char* kInstalledDir = "/usr/share/datasets/fashion-mnist";
inline constexpr uint32_t kImagesMagic = 0x00000803;
inline constexpr uint32_t kLabelsMagic = 0x00000801;

// ---- crafting files --------------------------------------------------------

inline void put_u32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(uint8_t(v >> shift));
}

// An IDX file: big-endian magic, big-endian dims, then the payload as given
// (which may deliberately disagree with the dims).
inline Bytes idx_file(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b;
  put_u32(b, magic);
  for (uint32_t d : dims) put_u32(b, d);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

inline Bytes pattern(size_t n) {  // compressible but not constant
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t((i * 7 + i / 13) & 0xff);
  return b;
}

inline void write_plain(const fs::path& p, const Bytes& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  if (!f) throw std::runtime_error("test setup: cannot write " + p.string());
}

inline void write_gz(const fs::path& p, const Bytes& b) {
  gzFile f = gzopen(p.c_str(), "wb1");
  if (!f) throw std::runtime_error("test setup: cannot gzopen " + p.string());
  const bool ok = b.empty() || gzwrite(f, b.data(), unsigned(b.size())) == int(b.size());
  if (gzclose(f) != Z_OK || !ok) throw std::runtime_error("test setup: gzwrite " + p.string());
}

inline Bytes read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ =
        fs::temp_directory_path() / ("tr_datasets_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
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
inline std::string user_error(const std::function<void()>& f) {
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

// Runs f as user_error does, on a thread, for a test of a FIFO at `fifo`: a
// loader that opens a FIFO blocks in open() until a writer comes. Should f
// still be running after 10 s, the test fails and plays that writer, opening
// and closing the FIFO until f ends: the open returns, the read sees the end
// of the file, and the test ends instead of hanging.
inline std::string user_error_not_blocked_by(const fs::path& fifo, const std::function<void()>& f) {
  std::future<std::string> done = std::async(std::launch::async, [&] { return user_error(f); });
  if (done.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "still waiting after 10 s: the FIFO " << fifo << " was opened";
    while (done.wait_for(std::chrono::milliseconds(10)) == std::future_status::timeout) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // fails while no reader waits
      if (fd >= 0) ::close(fd);
    }
  }
  return done.get();
}

// The message is "<path>: ..." and mentions every fragment.
inline void expect_message(const std::string& msg, const std::string& path, const std::vector<std::string>& fragments) {
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message should start with the path " << path << ": " << msg;
  for (const std::string& f : fragments)
    EXPECT_NE(msg.find(f), std::string::npos) << "missing \"" << f << "\" in: " << msg;
}

}  // namespace tr::testing
