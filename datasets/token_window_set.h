#pragma once
// A token stream cut into the samples a sequence model trains on (ModelConfig::
// seq_len): windows of seq + 1 consecutive tokens, the inputs and their next
// tokens, which TokenPrep splits on the device (framework/ops/compute/token_prep.h).
// The trainer reads them as a DataView of 1 x (seq + 1) x 4 bytes per sample
// (the int32 tokens' bytes) with a zero label each, which nothing reads.
#include <cstdint>
#include <span>
#include <vector>

#include "datasets/image_dataset.h"
#include "framework/core/data_view.h"

namespace tr::data {

struct TokenWindowSet {
  std::vector<int32_t> tokens;  // [count, seq + 1]
  std::vector<int32_t> labels;  // [count], zeros
  int64_t count = 0, seq = 0;
};

// Window k holds stream[k*seq .. k*seq + seq]: consecutive windows that share
// one token, (size - 1) / seq of them. Fewer than seq + 1 tokens is a
// UserError naming `what`.
TokenWindowSet consecutive_windows(std::span<const uint16_t> stream, int64_t seq, const char* what);

DataView data_view(const TokenWindowSet& s);

// The same windows held as an image set, as the command-line tools carry
// their data: each "image" 1 x (seq + 1) x 4 bytes (the int32 tokens), label 0,
// num_classes the vocabulary.
ImageDataset window_images(std::span<const uint16_t> stream, int64_t seq, int vocab, const char* what);

}  // namespace tr::data
