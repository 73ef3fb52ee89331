// Reports are written atomically (harness/lib/atomic_file.h): a writer killed
// mid-write leaves the old file intact, and an unwritable place is one clear
// error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "framework/core/error.h"
#include "harness/lib/atomic_file.h"

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

}  // namespace
}  // namespace tr
