// Fuzzes the token shard reader (datasets/token_shard.h). The first byte picks
// the vocabulary the shard is read against (the byte tokenizer's 257, GPT-2's
// 50257, all of uint16, or a tiny one so most tokens are out of it); the rest
// is the file. A bad shard must end in a tr::UserError; one that reads must
// hold only tokens inside the vocabulary and encode back to its own bytes
// (the header's unread ints aside). Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "datasets/token_shard.h"
#include "framework/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr int64_t kVocabs[] = {257, 50257, 65536, 3};
  const int64_t vocab = kVocabs[data[0] % 4];
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  tr::data::TokenShard shard;
  try {
    shard = tr::data::parse_token_shard(bytes, "fuzz.bin", vocab);
  } catch (const tr::UserError&) {
    return 0;
  }
  for (const uint16_t t : shard.tokens)
    if (t >= vocab) std::abort();
  std::string again = tr::data::encode_token_shard(shard.tokens);
  if (again.size() != bytes.size()) std::abort();
  again.replace(12, tr::data::kShardHeaderBytes - 12, bytes, 12, tr::data::kShardHeaderBytes - 12);
  if (again != bytes) std::abort();
  return 0;
}
