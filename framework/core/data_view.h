#pragma once
// A labelled image set in host memory (NHWC u8), owned by someone else: what
// the trainer reads batches from. datasets/ makes them; framework/train reads them.
#include <cstdint>

namespace tr {

struct DataView {
  const uint8_t* images = nullptr;  // [count, height, width, channels]
  const int32_t* labels = nullptr;  // [count]
  int64_t count = 0;
  int height = 0, width = 0, channels = 0;
};

}  // namespace tr
