#include "datasets/token_window_set.h"

#include <cstring>

#include "framework/core/error.h"

namespace tr::data {

TokenWindowSet consecutive_windows(std::span<const uint16_t> stream, int64_t seq, const char* what) {
  TR_USER_CHECK(seq >= 1, what, ": sequence length ", seq, " must be >= 1");
  const int64_t n = int64_t(stream.size());
  TR_USER_CHECK(n >= seq + 1, what, " holds ", n, " tokens, fewer than one window of ", seq + 1);
  TokenWindowSet s;
  s.seq = seq;
  s.count = (n - 1) / seq;
  s.tokens.resize(size_t(s.count * (seq + 1)));
  s.labels.assign(size_t(s.count), 0);
  for (int64_t k = 0; k < s.count; ++k)
    for (int64_t t = 0; t <= seq; ++t) s.tokens[size_t(k * (seq + 1) + t)] = stream[size_t(k * seq + t)];
  return s;
}

DataView data_view(const TokenWindowSet& s) {
  DataView v;
  v.images = reinterpret_cast<const uint8_t*>(s.tokens.data());
  v.labels = s.labels.data();
  v.count = s.count;
  v.height = 1;
  v.width = int(s.seq + 1);
  v.channels = int(sizeof(int32_t));
  return v;
}

ImageDataset window_images(std::span<const uint16_t> stream, int64_t seq, int vocab, const char* what) {
  const TokenWindowSet w = consecutive_windows(stream, seq, what);
  const DataView v = data_view(w);
  ImageDataset d;
  d.count = v.count;
  d.height = v.height;
  d.width = v.width;
  d.channels = v.channels;
  d.num_classes = vocab;
  d.images.resize(w.tokens.size() * sizeof(int32_t));
  std::memcpy(d.images.data(), w.tokens.data(), d.images.size());
  d.labels = w.labels;
  return d;
}

}  // namespace tr::data
