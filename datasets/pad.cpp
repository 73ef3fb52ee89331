#include "datasets/pad.h"

#include <cstring>

#include "framework/core/error.h"

namespace tr::data {

ImageDataset pad_images(const ImageDataset& d, int side) {
  TR_USER_CHECK(side >= d.height && side >= d.width, "cannot pad ", d.height, "x", d.width, " images to ", side, "x",
                side, ": the images are larger");
  ImageDataset out;
  out.count = d.count;
  out.height = out.width = side;
  out.channels = d.channels;
  out.num_classes = d.num_classes;
  out.labels = d.labels;
  out.images.assign(size_t(out.count) * size_t(out.image_bytes()), 0);
  const int top = (side - d.height) / 2, left = (side - d.width) / 2;
  const size_t row = size_t(d.width) * d.channels;
  for (int64_t i = 0; i < d.count; ++i)
    for (int y = 0; y < d.height; ++y) {
      const uint8_t* src = d.images.data() + size_t(i) * size_t(d.image_bytes()) + size_t(y) * row;
      uint8_t* dst = out.images.data() + size_t(i) * size_t(out.image_bytes()) +
                     (size_t(top + y) * side + size_t(left)) * d.channels;
      std::memcpy(dst, src, row);
    }
  return out;
}

}  // namespace tr::data
