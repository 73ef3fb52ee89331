// A token stream cut into a sequence model's samples (datasets/token_window_set.h):
// consecutive windows of T+1 tokens sharing one token, their DataView's byte
// shape, and a stream too short for one window refused in one line.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "datasets/token_window_set.h"
#include "framework/core/error.h"

namespace tr {
namespace {

TEST(TokenWindowSet, ConsecutiveWindowsShareOneToken) {
  std::vector<uint16_t> stream(23);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = uint16_t(100 + i);
  const data::TokenWindowSet s = data::consecutive_windows(stream, 5, "the stream");
  ASSERT_EQ(s.count, 4);  // (23 - 1) / 5
  for (int64_t k = 0; k < s.count; ++k)
    for (int64_t t = 0; t <= 5; ++t) EXPECT_EQ(s.tokens[size_t(k * 6 + t)], 100 + k * 5 + t) << k << "," << t;
  const DataView v = data::data_view(s);
  EXPECT_EQ(v.count, 4);
  EXPECT_EQ(int64_t(v.height) * v.width * v.channels, 6 * int64_t(sizeof(int32_t)));
  int32_t second = 0;
  std::memcpy(&second, v.images + 6 * sizeof(int32_t), sizeof second);
  EXPECT_EQ(second, 105);  // window 1 starts where window 0 ends
  EXPECT_EQ(v.labels[3], 0);
}

TEST(TokenWindowSet, AStreamShorterThanOneWindowIsAUserError) {
  const std::vector<uint16_t> stream(5, 7);
  try {
    (void)data::consecutive_windows(stream, 5, "the val split");
    FAIL() << "5 tokens made a window of 6";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "the val split holds 5 tokens, fewer than one window of 6");
  }
  EXPECT_THROW((void)data::consecutive_windows(stream, 0, "the stream"), UserError);
}

}  // namespace
}  // namespace tr
