// Running out of host memory is the user's to fix (a smaller batch): one line
// naming the bytes wanted and available, exit 2, and nothing allocated first.
#include <gtest/gtest.h>

#include <cstdio>
#include <new>
#include <string>

#include "framework/core/error.h"
#include "framework/core/host_memory.h"
#include "framework/runtime/cpu_context.h"
#include "harness/lib/cli/cli_main.h"

namespace tr {
namespace {

TEST(HostMemory, AvailableBytesAreKnownOnLinux) {
  const int64_t a = host_available_bytes();
  // MemAvailable exists on every Linux since 3.14; a test process has at
  // least a few MiB left, and no machine has an exabyte.
  EXPECT_GT(a, int64_t(4) << 20);
  EXPECT_LT(a, int64_t(1) << 60);
  EXPECT_EQ(bytes_and_gib(int64_t(3) << 30), "3221225472 bytes (3 GiB)");
}

TEST(HostMemory, AnArenaPastTheAvailableMemoryIsAUserError) {
  CpuContext ctx(0, 1);
  ContextSpec s;
  s.arena_bytes = int64_t(1) << 50;  // 1 PiB: past any host, refused before malloc
  try {
    ctx.allocate(s);
    ADD_FAILURE() << "a 1 PiB host arena was allocated";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 0: this model and batch need an arena of 1125899906842624 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("of host memory but "), std::string::npos) << m;
    EXPECT_NE(m.find("use a smaller {batch} or fewer {ranks}"), std::string::npos) << m;  // Note [settings, not flags]
  }
}

TEST(HostMemory, AFailedAllocationExitsTwoWithOneLine) {
  testing::internal::CaptureStderr();
  const int code = run_cli("tr-x", []() -> int { throw std::bad_alloc(); });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err.rfind("tr-x: error: out of host memory: an allocation failed with ", 0), 0u) << err;
  EXPECT_NE(err.find(" bytes ("), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
}

}  // namespace
}  // namespace tr
