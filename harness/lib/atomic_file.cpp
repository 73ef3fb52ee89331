#include "harness/lib/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "framework/core/error.h"

namespace tr {

namespace {

std::string temporary_beside(const std::string& path) { return cat(path, ".tmp.", ::getpid()); }

// Opens the temporary file for `path`, or throws the UserError both callers give.
int open_temporary(const std::string& path, const std::string& tmp) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw UserError(cat("cannot write '", path, "': it is a directory"));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(cat("cannot write '", path, "': ", std::strerror(errno)));
  return fd;
}

}  // namespace

void check_writable(const std::string& path) {
  const std::string tmp = temporary_beside(path);
  ::close(open_temporary(path, tmp));
  ::unlink(tmp.c_str());
}

void write_file_atomically(const std::string& path, std::string_view text,
                           const std::function<void(size_t)>& after_chunk) {
  constexpr size_t kChunk = size_t(1) << 20;
  const std::string tmp = temporary_beside(path);
  const int fd = open_temporary(path, tmp);
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw UserError(cat("cannot write '", path, "': ", what, ": ", std::strerror(err)));
  };
  size_t done = 0;
  while (done < text.size()) {
    const size_t n = std::min(kChunk, text.size() - done);
    const ssize_t w = ::write(fd, text.data() + done, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    done += size_t(w);
    if (after_chunk) after_chunk(done);
  }
  if (::fsync(fd) != 0) fail("flush failed");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw UserError(cat("cannot write '", path, "': close failed: ", std::strerror(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw UserError(cat("cannot write '", path, "': rename failed: ", std::strerror(err)));
  }
}

}  // namespace tr
