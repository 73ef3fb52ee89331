// The side-streams choice (harness/lib/bench/side_streams.h): the flags override,
// and without them CUDA runs use side streams up to the model's measured batch
// per GPU while the CPU never does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "harness/lib/bench/side_streams.h"

namespace tr {
namespace {

SideStreams parse(std::vector<std::string> args) {
  args.insert(args.begin(), "tr-bench");
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  const CliArgs a(int(argv.size()), argv.data(), {}, {"--side-streams", "--no-side-streams"});
  return side_streams_flag(a);
}

TEST(SideStreams, FlagsOverrideAndAutoFollowsTheModelsMeasuredLimit) {
  EXPECT_EQ(parse({}), SideStreams::Auto);
  EXPECT_EQ(parse({"--side-streams"}), SideStreams::On);
  EXPECT_EQ(parse({"--no-side-streams"}), SideStreams::Off);
  EXPECT_THROW(parse({"--side-streams", "--no-side-streams"}), UserError);
  EXPECT_STREQ(side_streams_name(SideStreams::Auto), "auto");

  const ModelEntry& r18 = model_entry("resnet18");
  ASSERT_GT(r18.side_streams_max_batch, 0);
  EXPECT_TRUE(use_side_streams(SideStreams::Auto, Backend::Cuda, r18, r18.side_streams_max_batch));
  EXPECT_FALSE(use_side_streams(SideStreams::Auto, Backend::Cuda, r18, r18.side_streams_max_batch + 1));
  EXPECT_FALSE(use_side_streams(SideStreams::Auto, Backend::Cpu, r18, 1));
  EXPECT_TRUE(use_side_streams(SideStreams::On, Backend::Cpu, r18, 1 << 20));
  EXPECT_FALSE(use_side_streams(SideStreams::Off, Backend::Cuda, r18, 1));
  // Models never measured faster with them keep one stream.
  EXPECT_FALSE(use_side_streams(SideStreams::Auto, Backend::Cuda, model_entry("mlp"), 1));
  // vgg16bn was faster with them at 32 and 64 and level at 128 (H200).
  const ModelEntry& vgg = model_entry("vgg16bn");
  EXPECT_TRUE(use_side_streams(SideStreams::Auto, Backend::Cuda, vgg, 64));
  EXPECT_FALSE(use_side_streams(SideStreams::Auto, Backend::Cuda, vgg, 128));
}

}  // namespace
}  // namespace tr
