// Note [GPU test skips] (tests/gpu_test_util.h), checked from outside: a GPU
// test run by a child tr_tests skips without a GPU, fails there under
// TR_REQUIRE_GPU=1, and a bad TR_REQUIRE_GPU is refused; with a GPU it runs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "tests/bin_dir.h"
#include "tests/gpu_test_util.h"

namespace tr {
namespace {

struct Child {
  int code = -1;
  std::string out;
};

Child run_tr_tests(const std::string& env) {
  const std::string cmd = env + " " + testing::bin_dir() + "/tr_tests --gtest_filter=" + "OpsGpu.BnFoldMatchesCpu 2>&1";
  Child c;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return c;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), int(buf.size()), p)) c.out += buf.data();
  const int status = pclose(p);
  c.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

TEST(GpuTestSkips, NoGpuSkipsFailsWhenRequiredAndRefusesABadSetting) {
  const bool gpu = cuda_device_count() > 0;
  const Child plain = run_tr_tests("TR_REQUIRE_GPU=0");
  const Child required = run_tr_tests("TR_REQUIRE_GPU=1");
  const Child bad = run_tr_tests("TR_REQUIRE_GPU=yes");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("TR_REQUIRE_GPU must be 0 or 1, got 'yes'"), std::string::npos) << bad.out;
  if (gpu) {
    EXPECT_EQ(plain.code, 0) << plain.out;
    EXPECT_EQ(required.code, 0) << required.out;
    return;
  }
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("[  SKIPPED ] 1 test"), std::string::npos) << plain.out;
  EXPECT_EQ(required.code, 1) << required.out;
  EXPECT_NE(required.out.find("no CUDA GPU, and TR_REQUIRE_GPU=1"), std::string::npos) << required.out;
}

}  // namespace
}  // namespace tr
