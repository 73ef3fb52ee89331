#include "datasets/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "framework/core/error.h"

namespace tr::data {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw UserError(cat(path, ": ", what)); }

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

PathKind path_kind(const std::string& path, const std::string& expected) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    if (ec == std::errc::too_many_symbolic_link_levels)
      fail(path, "cannot be resolved: a symbolic link loop (too many levels of symbolic links)");
    fail(path, cat("cannot be resolved: ", ec.message()));
  }
  const std::string want = cat(", expected ", expected);
  switch (st.type()) {
    case fs::file_type::not_found: return PathKind::Missing;
    case fs::file_type::regular: return PathKind::Regular;
    case fs::file_type::directory: return PathKind::Directory;
    case fs::file_type::fifo: fail(path, cat("not a regular file (a FIFO)", want));
    case fs::file_type::socket: fail(path, cat("not a regular file (a socket)", want));
    case fs::file_type::block: fail(path, cat("not a regular file (a block device)", want));
    case fs::file_type::character: fail(path, cat("not a regular file (a character device)", want));
    default: fail(path, cat("not a regular file", want));
  }
}

std::string read_regular_file(const std::string& path, const std::string& expected) {
  switch (path_kind(path, expected)) {
    case PathKind::Missing: fail(path, "no such file");
    case PathKind::Directory: fail(path, cat("is a directory, expected ", expected));
    case PathKind::Regular: break;
  }
  // O_NONBLOCK: should the path have become a FIFO since path_kind() looked,
  // the open returns at once and the check below refuses it.
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) fail(path, cat("cannot open: ", std::strerror(errno)));
  struct stat st;
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(path, cat("not a regular file, expected ", expected));
  std::string text;
  text.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, cat("cannot read: ", std::strerror(errno)));
    }
    text.append(buf, size_t(n));
  }
  return text;
}

}  // namespace tr::data
