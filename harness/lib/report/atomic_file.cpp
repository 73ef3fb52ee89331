#include "harness/lib/report/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "framework/core/error.h"

namespace tr {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw UserError(cat("cannot write '", path, "': ", why));
}

// The file a write to `path` renames over, per Note [output paths].
struct Target {
  std::string file;  // `path` itself, or the file its symbolic link leads to
  bool exists = false;
  mode_t permissions = 0;  // of the existing file, kept by the replacement
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string octal(mode_t bits) {
  char s[8];
  std::snprintf(s, sizeof s, "%04o", unsigned(bits));
  return s;
}

// Decides where a write to `path` goes, or refuses it: nothing is opened, so
// a FIFO cannot block and a device is not touched.
Target resolve(const std::string& path) {
  TR_USER_CHECK(!path.empty(), "cannot write '': the path is empty");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {path, false, 0};  // a new name: the directory decides
    refuse(path, std::strerror(errno));
  }
  Target t{path, true, 0};
  std::string subject = "it is";  // how a refusal starts: the path, or where its link leads
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const std::string link = std::filesystem::read_symlink(path, ec).string();
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT)
        refuse(path, cat("it is a symbolic link to '", link,
                         "', which does not exist (tr does not write through a "
                         "dangling link)"));
      refuse(path, cat("it is a symbolic link that cannot be followed: ", std::strerror(errno)));
    }
    const std::filesystem::path target = std::filesystem::canonical(path, ec);
    if (ec) refuse(path, cat("it is a symbolic link that cannot be followed: ", ec.message()));
    t.file = target.string();
    subject = cat("it links to '", link, "', which is");
  }
  if (!S_ISREG(st.st_mode)) refuse(path, cat(subject, " ", kind_of(st.st_mode), "; tr writes only regular files"));
  t.permissions = st.st_mode & 0777;
  if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
    refuse(path, cat(subject, " read-only (mode ", octal(t.permissions), ")"));
  if (::access(t.file.c_str(), W_OK) != 0) {
    if (errno == EROFS) refuse(path, cat(subject, " read-only (on a read-only file system)"));
    refuse(path, cat(subject, " read-only for this user (mode ", octal(t.permissions), ")"));
  }
  return t;
}

std::string temporary_beside(const std::string& file) { return cat(file, ".tmp.", ::getpid()); }

// Opens the temporary file for `t`, with the permissions the target keeps, or
// throws the UserError both callers give.
int open_temporary(const std::string& path, const Target& t, const std::string& tmp) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) refuse(path, std::strerror(errno));
  if (t.exists && ::fchmod(fd, t.permissions) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    refuse(path, cat("cannot keep its permissions: ", std::strerror(err)));
  }
  return fd;
}

// Ignores SIGXFSZ while one exists (Note [output paths]), so a write past
// ulimit -f fails with EFBIG instead of killing the process. Counted, so
// writers on several threads restore the old action only when the last ends.
class FileSizeSignalIgnored {
 public:
  FileSizeSignalIgnored() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (depth_++ > 0) return;
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGXFSZ, &ignore, &saved_);
  }
  ~FileSizeSignalIgnored() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (--depth_ == 0) ::sigaction(SIGXFSZ, &saved_, nullptr);
  }
  FileSizeSignalIgnored(const FileSizeSignalIgnored&) = delete;
  FileSizeSignalIgnored& operator=(const FileSizeSignalIgnored&) = delete;

 private:
  static inline std::mutex mutex_;
  static inline int depth_ = 0;
  static inline struct sigaction saved_ {};
};

// errno of a failed write, flush or close, in words; EFBIG names the limit.
std::string describe(int err, size_t bytes) {
  if (err != EFBIG) return std::strerror(err);
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    return cat("the text (", bytes, " bytes) is over the file size limit (ulimit -f) of ", limit.rlim_cur, " bytes");
  return cat("the text (", bytes, " bytes) is over the file system's file size limit");
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  std::error_code ea, eb;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ea), ea);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  return !ea && !eb && pa == pb;
}

void check_writable(const std::string& path, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    if (!same_file(path, input)) continue;
    refuse(path, input == path ? std::string("it is also an input of this run")
                               : cat("it is also an input of this run (as '", input, "')"));
  }
  const Target t = resolve(path);
  const std::string tmp = temporary_beside(t.file);
  ::close(open_temporary(path, t, tmp));
  ::unlink(tmp.c_str());
}

void write_file_atomically(const std::string& path, std::string_view text,
                           const std::function<void(size_t)>& after_chunk) {
  constexpr size_t kChunk = size_t(1) << 20;
  const Target t = resolve(path);
  const std::string tmp = temporary_beside(t.file);
  const FileSizeSignalIgnored no_sigxfsz;
  const int fd = open_temporary(path, t, tmp);
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    refuse(path, cat(what, ": ", describe(err, text.size())));
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
    refuse(path, cat("close failed: ", describe(err, text.size())));
  }
  if (std::rename(tmp.c_str(), t.file.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    refuse(path, cat("rename failed: ", std::strerror(err)));
  }
}

}  // namespace tr
