#include "datasets/token_shard.h"

#include <limits>

#include "datasets/regular_file.h"
#include "framework/core/error.h"

namespace tr::data {

namespace {

// llm.c's shards of Llama 3 tokens: uint32 tokens under another magic number.
constexpr int32_t kLlama3Magic = 20240801;

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw UserError(cat(path, ": ", what)); }

int32_t header_int(const std::string& bytes, size_t index) {
  uint32_t v = 0;
  for (int b = 3; b >= 0; --b) v = (v << 8) | uint8_t(bytes[4 * index + size_t(b)]);
  return int32_t(v);
}

void put_int(std::string& bytes, size_t index, int32_t value) {
  const auto v = uint32_t(value);
  for (size_t b = 0; b < 4; ++b) bytes[4 * index + b] = char((v >> (8 * b)) & 0xff);
}

// The token count the header declares, once magic and version are right.
int64_t checked_count(const std::string& bytes, const std::string& path) {
  if (bytes.size() < kShardHeaderBytes)
    fail(path, cat("truncated header: the file holds ", bytes.size(), " bytes, a token shard's header needs ",
                   kShardHeaderBytes));
  const int32_t magic = header_int(bytes, 0), version = header_int(bytes, 1), count = header_int(bytes, 2);
  if (magic == kLlama3Magic)
    fail(path, cat("magic number ", magic, " marks a shard of uint32 (Llama 3) tokens; only uint16 shards (magic ",
                   kShardMagic, ") are read"));
  if (magic != kShardMagic)
    fail(path, cat("bad magic number ", magic, ", expected ", kShardMagic, ": not a token shard in llm.c's format"));
  if (version != kShardVersion)
    fail(path, cat("unsupported version ", version, ", expected ", kShardVersion, " (uint16 tokens)"));
  if (count < 0) fail(path, cat("header declares a negative token count ", count));
  const size_t payload = bytes.size() - kShardHeaderBytes, want = 2 * size_t(count);
  if (payload < want)
    fail(path, cat("truncated: header declares ", count, " tokens (", want, " bytes) but the file holds ", payload,
                   " bytes after the header"));
  if (payload > want)
    fail(path, cat("trailing data: header declares ", count, " tokens (", want, " bytes) but ", payload - want,
                   " more bytes follow them"));
  return count;
}

}  // namespace

TokenShard parse_token_shard(const std::string& bytes, const std::string& path, int64_t vocab) {
  TR_CHECK(vocab > 0 && vocab <= 65536, "a uint16 shard's vocabulary is 1..65536, asked for ", vocab);
  const int64_t count = checked_count(bytes, path);
  TokenShard shard;
  shard.path = path;
  shard.tokens.resize(size_t(count));
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + kShardHeaderBytes;
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t t = uint16_t(p[2 * i] | (p[2 * i + 1] << 8));
    if (t >= vocab)
      fail(path, cat("token ", t, " at position ", i, " (byte offset ", kShardHeaderBytes + 2 * size_t(i),
                     ") is outside the vocabulary of ", vocab));
    shard.tokens[size_t(i)] = t;
  }
  return shard;
}

TokenShard read_token_shard(const std::string& path, int64_t vocab) {
  return parse_token_shard(read_regular_file(path, "a token shard"), path, vocab);
}

std::string encode_token_shard(std::span<const uint16_t> tokens) {
  TR_CHECK(tokens.size() <= size_t(std::numeric_limits<int32_t>::max()), "a shard holds at most 2^31-1 tokens, got ",
           tokens.size());
  std::string bytes(kShardHeaderBytes + 2 * tokens.size(), '\0');
  put_int(bytes, 0, kShardMagic);
  put_int(bytes, 1, kShardVersion);
  put_int(bytes, 2, int32_t(tokens.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    bytes[kShardHeaderBytes + 2 * i] = char(tokens[i] & 0xff);
    bytes[kShardHeaderBytes + 2 * i + 1] = char(tokens[i] >> 8);
  }
  return bytes;
}

}  // namespace tr::data
