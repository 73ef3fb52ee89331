// Reports are written atomically (harness/lib/report/atomic_file.h): a writer killed
// mid-write leaves the old file intact, and an unwritable place is one clear
// error. What may be written at all is Note [output paths]: a new name or a
// writable regular file (through a symbolic link too), never a special file,
// a read-only file or one of the run's inputs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "framework/core/error.h"
#include "harness/lib/report/atomic_file.h"

namespace tr {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string temp_dir(const char* name) {
  const std::string d = ::testing::TempDir() + name + std::to_string(getpid());
  std::filesystem::create_directories(d);
  return d;
}

size_t entries(const std::string& dir) { return size_t(std::distance(std::filesystem::directory_iterator(dir), {})); }

// The message of the UserError `fn` throws, or "" when it throws none.
template <typename Fn>
std::string user_error(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

mode_t permissions(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(AtomicFile, ReplacesTheFileWhole) {
  const std::string dir = temp_dir("tr_atomic_");
  const std::string path = dir + "/r.json";
  write_file_atomically(path, "old\n");
  EXPECT_EQ(slurp(path), "old\n");
  write_file_atomically(path, "new\n");
  EXPECT_EQ(slurp(path), "new\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporary left
  std::filesystem::remove_all(dir);
}

// A child process starts replacing an existing report with 8 MiB and is
// killed (SIGKILL, nothing runs after it) once 2 MiB are on disk: the old
// report is intact, and the partial text sits only in the temporary file.
TEST(AtomicFile, AWriterKilledMidWriteLeavesTheOldFileIntact) {
  const std::string dir = temp_dir("tr_atomic_kill_");
  const std::string path = dir + "/bench.json";
  write_file_atomically(path, "{\"old\": true}\n");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string big(8 << 20, 'x');
    write_file_atomically(path, big, [](size_t done) {
      if (done >= (2u << 20)) raise(SIGKILL);
    });
    _exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(slurp(path), "{\"old\": true}\n");
  const std::string tmp = path + ".tmp." + std::to_string(child);
  ASSERT_TRUE(std::filesystem::exists(tmp));
  EXPECT_GE(std::filesystem::file_size(tmp), 2u << 20);
  EXPECT_LT(std::filesystem::file_size(tmp), 8u << 20);
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, AnUnwritablePlaceIsOneUserError) {
  try {
    write_file_atomically("/nonexistent-dir/tr/report.json", "x");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write '/nonexistent-dir/tr/report.json'"), std::string::npos)
        << e.what();
  }
}

// check_writable gives the writer's errors before a run, and leaves nothing:
// a missing directory, a directory where the file should be; a writable place
// passes without creating or touching the file.
TEST(AtomicFile, CheckWritableGivesTheSameErrorsUpFront) {
  const std::string dir = temp_dir("tr_atomic_check_");
  EXPECT_THROW(check_writable("/nonexistent-dir/tr/report.json"), UserError);
  try {
    check_writable(dir);
    FAIL() << "a directory passed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_file_atomically(dir, "x"), UserError);
  check_writable(dir + "/new.json");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 0);  // nothing created, nothing left
  write_file_atomically(dir + "/old.json", "old\n");
  check_writable(dir + "/old.json");
  EXPECT_EQ(slurp(dir + "/old.json"), "old\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  std::filesystem::remove_all(dir);
}

// A FIFO is refused before it is opened: opening it for writing would wait for
// a reader. The alarm turns a writer that waits into a failed test, not a hung
// suite.
TEST(AtomicFile, AFifoIsRefusedWithoutBlocking) {
  const std::string dir = temp_dir("tr_atomic_fifo_");
  const std::string fifo = dir + "/pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  ::alarm(10);
  const std::string up_front = user_error([&] { check_writable(fifo); });
  const std::string at_write = user_error([&] { write_file_atomically(fifo, "x"); });
  ::alarm(0);
  EXPECT_EQ(up_front, "cannot write '" + fifo + "': it is a FIFO (named pipe); tr writes only regular files");
  EXPECT_EQ(at_write, up_front);
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_EQ(entries(dir), 1u);  // no temporary file either
  std::filesystem::remove_all(dir);
}

// A character device is refused by the up-front check without being touched.
// Only the check meets the real /dev/null: were the refusal missing, a write
// would replace the machine's /dev/null with a regular file.
TEST(AtomicFile, ACharacterDeviceIsRefusedUpFront) {
  EXPECT_EQ(user_error([] { check_writable("/dev/null"); }),
            "cannot write '/dev/null': it is a character device; tr writes only regular files");
  const std::string dir = temp_dir("tr_atomic_dev_");
  const std::string link = dir + "/null.json";
  std::filesystem::create_symlink("/dev/null", link);
  EXPECT_EQ(user_error([&] { check_writable(link); }),
            "cannot write '" + link +
                "': it links to '/dev/null', which is a character device; tr writes only "
                "regular files");
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(entries(dir), 1u);
  std::filesystem::remove_all(dir);
}

// A symbolic link is followed: its target gets the text, beside which the
// temporary file was made, and the link stays a link to it.
TEST(AtomicFile, ASymbolicLinkIsFollowedAndStays) {
  const std::string dir = temp_dir("tr_atomic_link_");
  std::filesystem::create_directories(dir + "/runs");
  write_file_atomically(dir + "/runs/x.json", "old\n");
  const std::string link = dir + "/latest.json";
  std::filesystem::create_symlink("runs/x.json", link);
  check_writable(link);
  write_file_atomically(link, "new\n");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(std::filesystem::read_symlink(link), "runs/x.json");
  EXPECT_EQ(slurp(dir + "/runs/x.json"), "new\n");
  EXPECT_EQ(entries(dir), 2u);  // runs/ and the link: no temporary file
  EXPECT_EQ(entries(dir + "/runs"), 1u);
  std::filesystem::remove_all(dir);
}

// A dangling link is refused, as GNU cp refuses to write through one: the
// missing target is not created wherever the link happens to point.
TEST(AtomicFile, ADanglingSymbolicLinkIsRefused) {
  const std::string dir = temp_dir("tr_atomic_dangling_");
  const std::string link = dir + "/latest.json";
  std::filesystem::create_symlink("runs/missing.json", link);
  const std::string want = "cannot write '" + link +
                           "': it is a symbolic link to 'runs/missing.json', which does not exist (tr does not write "
                           "through a dangling link)";
  EXPECT_EQ(user_error([&] { check_writable(link); }), want);
  EXPECT_EQ(user_error([&] { write_file_atomically(link, "x"); }), want);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_FALSE(std::filesystem::exists(dir + "/runs"));
  EXPECT_EQ(entries(dir), 1u);
  std::filesystem::remove_all(dir);
}

// A file without any write bit (chmod a-w) is refused and left as it was, by
// the check and by the writer; root, whom access(2) lets write anything, is
// refused too. A file writable by others but not by its owner is read-only
// for the owner alone, which only a user other than root can observe.
TEST(AtomicFile, AReadOnlyFileIsRefusedAndKept) {
  const std::string dir = temp_dir("tr_atomic_ro_");
  const std::string path = dir + "/baseline.json";
  write_file_atomically(path, "old\n");
  std::filesystem::permissions(path, std::filesystem::perms(0444));
  const std::string want = "cannot write '" + path + "': it is read-only (mode 0444)";
  EXPECT_EQ(user_error([&] { check_writable(path); }), want);
  EXPECT_EQ(user_error([&] { write_file_atomically(path, "new\n"); }), want);
  EXPECT_EQ(slurp(path), "old\n");
  EXPECT_EQ(permissions(path), 0444u);
  if (::geteuid() != 0) {
    std::filesystem::permissions(path, std::filesystem::perms(0466));
    EXPECT_EQ(user_error([&] { write_file_atomically(path, "new\n"); }),
              "cannot write '" + path + "': it is read-only for this user (mode 0466)");
    EXPECT_EQ(slurp(path), "old\n");
  }
  EXPECT_EQ(entries(dir), 1u);
  std::filesystem::remove_all(dir);
}

// The replacement keeps the replaced file's permissions; a new file gets what
// the umask leaves of 0666, as a shell redirection would make it.
TEST(AtomicFile, ReplacingAFileKeepsItsPermissions) {
  const std::string dir = temp_dir("tr_atomic_mode_");
  const std::string path = dir + "/r.json";
  const mode_t mask = ::umask(022);
  write_file_atomically(path, "old\n");
  EXPECT_EQ(permissions(path), 0644u);
  ::umask(mask);
  std::filesystem::permissions(path, std::filesystem::perms(0600));
  write_file_atomically(path, "new\n");
  EXPECT_EQ(permissions(path), 0600u);
  std::filesystem::permissions(path, std::filesystem::perms(0664));
  write_file_atomically(path, "newer\n");
  EXPECT_EQ(permissions(path), 0664u);
  EXPECT_EQ(slurp(path), "newer\n");
  std::filesystem::remove_all(dir);
}

// The output is none of the run's inputs, compared as files: the same
// spelling, another spelling and a link to the input are all refused; another
// file passes. (`tr-bench report IN -o IN`: HtmlReport.TheOutputIsNeverAnInput.)
TEST(AtomicFile, AnInputIsNeverTheOutput) {
  const std::string dir = temp_dir("tr_atomic_input_");
  const std::string in = dir + "/a.json";
  write_file_atomically(in, "{}\n");
  std::filesystem::create_symlink("a.json", dir + "/link.json");
  EXPECT_EQ(user_error([&] { check_writable(in, {in}); }),
            "cannot write '" + in + "': it is also an input of this run");
  EXPECT_EQ(user_error([&] {
              check_writable(dir + "/./a.json", {dir + "/b.json", in});
            }),
            "cannot write '" + dir + "/./a.json': it is also an input of this run (as '" + in + "')");
  EXPECT_NE(user_error([&] { check_writable(dir + "/link.json", {in}); }).find("it is also an input"),
            std::string::npos);
  EXPECT_NE(user_error([&] { check_writable(in, {dir + "/link.json"}); }).find("it is also an input"),
            std::string::npos);
  check_writable(dir + "/b.json", {in});
  write_file_atomically(dir + "/c.json", "{}\n");
  check_writable(dir + "/c.json", {in});
  EXPECT_EQ(slurp(in), "{}\n");
  EXPECT_EQ(entries(dir), 3u);
  std::filesystem::remove_all(dir);
}

// Past the file size limit (ulimit -f) a write fails like one to a full disk:
// a child process with a 64 KiB limit replaces a report with 1 MiB and gets
// one UserError naming the file and the limit, where SIGXFSZ would kill it
// silently (exit 153). The old report is intact, the temporary file gone, and
// SIGXFSZ does what it did before the write. Exit codes of the child: 0 as
// specified, 1 no error, 2 another message, 3 SIGXFSZ left ignored, 4 no limit set.
TEST(AtomicFile, AFileSizeLimitIsOneUserErrorLikeAFullDisk) {
  const std::string dir = temp_dir("tr_atomic_fsize_");
  const std::string path = dir + "/bench.json";
  write_file_atomically(path, "{\"old\": true}\n");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit limit{64 << 10, 64 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0 || ::signal(SIGXFSZ, SIG_DFL) == SIG_ERR) _exit(4);
    check_writable(path);  // the check writes nothing, so the limit does not stop it
    const std::string message = user_error([&] { write_file_atomically(path, std::string(1 << 20, 'x')); });
    if (message.empty()) _exit(1);
    if (message != "cannot write '" + path +
                       "': write failed: the text (1048576 bytes) is over the file size "
                       "limit (ulimit -f) of 65536 bytes") {
      std::fprintf(stderr, "%s\n", message.c_str());
      _exit(2);
    }
    struct sigaction now {};
    ::sigaction(SIGXFSZ, nullptr, &now);
    _exit(now.sa_handler == SIG_DFL ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(slurp(path), "{\"old\": true}\n");
  EXPECT_EQ(entries(dir), 1u);  // no "bench.json.tmp.<pid>"
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tr
