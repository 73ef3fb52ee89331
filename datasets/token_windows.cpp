#include "datasets/token_windows.h"

#include "framework/core/error.h"
#include "framework/core/philox.h"
#include "framework/core/rng.h"

namespace tr::data {

TokenWindows::TokenWindows(std::span<const uint16_t> tokens, int64_t seq, uint64_t seed, const char* what)
    : tokens_(tokens), seq_(seq), seed_(seed) {
  TR_USER_CHECK(seq >= 1, "a sequence length of ", seq, " is not positive");
  TR_USER_CHECK(token_count() >= seq + 1, what, " holds ", token_count(), " tokens, fewer than one window of ", seq + 1,
                " (the sequence length ", seq, " and its next token)");
}

int64_t TokenWindows::train_start(int64_t epoch, int64_t step, int64_t sample) const {
  const Philox4 c{{uint32_t(epoch), uint32_t(step), uint32_t(sample), 0u}};
  const Philox4 r = philox4x32_10(c, uint32_t(seed_), uint32_t(seed_ >> 32));
  const uint64_t word = (uint64_t(r.v[0]) << 32) | r.v[1];
  return int64_t(word % uint64_t(token_count() - seq_));
}

void TokenWindows::fill_window(int64_t start, int32_t* inputs, int32_t* targets) const {
  for (int64_t t = 0; t < seq_; ++t) {
    inputs[t] = tokens_[size_t(start + t)];
    targets[t] = tokens_[size_t(start + t + 1)];
  }
}

void TokenWindows::fill_train(int64_t epoch, int64_t step, int64_t first, int64_t count, int32_t* inputs,
                              int32_t* targets) const {
  for (int64_t i = 0; i < count; ++i)
    fill_window(train_start(epoch, step, first + i), inputs + i * seq_, targets + i * seq_);
}

void TokenWindows::fill_val(int64_t first, int64_t count, int32_t* inputs, int32_t* targets) const {
  TR_CHECK(first >= 0 && count >= 0 && first + count <= val_windows(), "validation windows ", first, "..",
           first + count, " of ", val_windows());
  for (int64_t i = 0; i < count; ++i) fill_window((first + i) * seq_, inputs + i * seq_, targets + i * seq_);
}

std::vector<uint16_t> make_synthetic_tokens(int64_t count, int64_t vocab, uint64_t seed) {
  TR_USER_CHECK(count >= 1 && vocab >= 2 && vocab <= 65536, "synthetic tokens: ", count, " tokens of a vocabulary of ",
                vocab, " (need at least 1 token and a vocabulary of 2..65536)");
  // Each token's successor: a fixed function of (token, seed), not a table, so
  // the stream needs no memory of the vocabulary's size.
  auto successor = [&](uint16_t t) {
    const Philox4 r = philox4x32_10(Philox4{{t, 0u, 0u, 1u}}, uint32_t(seed), uint32_t(seed >> 32));
    return uint16_t(r.v[0] % uint64_t(vocab));
  };
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  Rng rng(seed);
  tokens[0] = uint16_t(rng.below(uint64_t(vocab)));
  for (size_t i = 1; i < tokens.size(); ++i) {
    const uint64_t draw = rng.next_u64();
    tokens[i] = (draw & 3) != 0 ? successor(tokens[i - 1]) : uint16_t((draw >> 2) % uint64_t(vocab));
  }
  return tokens;
}

}  // namespace tr::data
