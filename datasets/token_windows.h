#pragma once
// What a next-token model reads from a token stream: windows of T+1
// consecutive tokens, the first T the input and the last T the targets
// (inputs[t] predicts targets[t] = the token after it).
//
// Note [text windows]: a training window's start is a pure function of
// (seed, epoch, step, sample): Philox4x32-10 keyed by the seed, counter
// (epoch, step, sample, 0), its first two words taken as a uint64 modulo the
// N - T possible starts (a modulo bias below 2^-40 for any stream that fits a
// shard). So every mode, backend and rank split reads the same tokens: rank r
// of R with B/R samples reads samples r*B/R .. (r+1)*B/R - 1 of the batch.
// Validation reads the stream cut into consecutive windows (window k starts
// at k*T), the same every time.
#include <cstdint>
#include <span>
#include <vector>

namespace tr::data {

class TokenWindows {
 public:
  // `tokens` must outlive this; it needs at least T+1 tokens (UserError
  // naming `what`, e.g. "the val split", otherwise).
  TokenWindows(std::span<const uint16_t> tokens, int64_t seq, uint64_t seed, const char* what);

  int64_t seq() const { return seq_; }
  int64_t token_count() const { return int64_t(tokens_.size()); }
  int64_t train_start(int64_t epoch, int64_t step, int64_t sample) const;
  int64_t val_windows() const { return (token_count() - 1) / seq_; }

  // Samples first .. first+count-1 of the training batch of (epoch, step)
  // into inputs and targets, each [count, T] int32.
  void fill_train(int64_t epoch, int64_t step, int64_t first, int64_t count, int32_t* inputs, int32_t* targets) const;
  // Validation windows first .. first+count-1 into inputs and targets [count, T].
  void fill_val(int64_t first, int64_t count, int32_t* inputs, int32_t* targets) const;

 private:
  void fill_window(int64_t start, int32_t* inputs, int32_t* targets) const;

  std::span<const uint16_t> tokens_;
  int64_t seq_;
  uint64_t seed_;
};

// Synthetic tokens for speed runs and tests that need no files: a stream a
// model can learn (each token is followed by its fixed successor 3 times in 4,
// by a uniform token otherwise), the same on every machine for (count, vocab,
// seed); a longer count extends a shorter one.
std::vector<uint16_t> make_synthetic_tokens(int64_t count, int64_t vocab, uint64_t seed);

}  // namespace tr::data
