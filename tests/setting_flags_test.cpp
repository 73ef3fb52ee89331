// Note [settings, not flags]: framework messages name settings, the tools
// print their flags.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/setting.h"
#include "harness/lib/cli/setting_flags.h"

namespace tr {
namespace {

TEST(SettingFlags, TheToolsPrintTheirFlags) {
  EXPECT_EQ(setting("batch"), "{batch}");
  EXPECT_EQ(with_flags(cat("use a smaller ", setting("batch"), " or fewer ", setting("ranks"))),
            "use a smaller --batch or fewer --ranks/--gpus");
  EXPECT_EQ(with_flags(cat("time them again with ", setting("conv_plans"), " and a new file")),
            "time them again with --cudnn-benchmark --conv-plans and a new file");
  EXPECT_EQ(with_flags(cat(setting("width"), " 0.001 leaves a 64-channel layer")),
            "--width 0.001 leaves a 64-channel layer");
  // What is not a known setting stays: JSON in a message, a lone brace.
  EXPECT_EQ(with_flags("{\"a\": 1} and {unknown} and {"), "{\"a\": 1} and {unknown} and {");
  EXPECT_EQ(with_flags(""), "");
}

}  // namespace
}  // namespace tr
