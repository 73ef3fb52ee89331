#pragma once
// Token shards in llm.c's format, so shards made for llm.c or modded-nanogpt
// load here as they are, and shards made here load there:
//
//   bytes 0..1023   256 little-endian int32: [0] magic 20240520, [1] version 1,
//                   [2] the token count N; the rest are not read
//   then            N little-endian uint16 tokens, and nothing after them.
//
// Every problem with a file throws tr::UserError with one line
// "<path>: <what is wrong>"; nothing partial is ever returned.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tr::data {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr size_t kShardHeaderBytes = 256 * 4;

struct TokenShard {
  std::string path;              // the file read
  std::vector<uint16_t> tokens;  // [N], each < the vocabulary it was read against
};

// Reads `path` and checks the header (magic, version, count), the size
// (truncated, trailing bytes) and every token against `vocab` ("token 300 at
// position 12 (byte offset 1048) is outside the vocabulary of 257").
TokenShard read_token_shard(const std::string& path, int64_t vocab);

// The same checks on bytes already read; `path` names them in errors.
TokenShard parse_token_shard(const std::string& bytes, const std::string& path, int64_t vocab);

// The bytes of a shard holding `tokens`: the header, then the tokens.
std::string encode_token_shard(std::span<const uint16_t> tokens);

}  // namespace tr::data
