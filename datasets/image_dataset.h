#pragma once
// The in-memory form every dataset loader produces: NHWC uint8 images and int32
// labels. Kept as raw bytes (not floats) so a whole split stays small (Fashion-MNIST
// train is 47 MB) and normalisation happens where the batch is staged, on the device.
#include <cstdint>
#include <vector>

namespace tr::data {

struct ImageDataset {  // NHWC uint8 images + int32 labels
  int64_t count = 0;
  int height = 0, width = 0, channels = 0;
  int num_classes = 0;
  std::vector<uint8_t> images;  // [count, height, width, channels]
  std::vector<int32_t> labels;  // [count], each in [0, num_classes)
  int64_t image_bytes() const { return int64_t(height) * width * channels; }
};

}  // namespace tr::data
