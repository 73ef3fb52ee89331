#pragma once
// An ImageDataset seen as the Trainer's DataView (no copy), optionally only its
// first `limit` items.
#include <algorithm>

#include "datasets/image_dataset.h"
#include "framework/core/data_view.h"

namespace tr::data {

inline DataView data_view(const ImageDataset& d, int64_t limit = 0) {
  DataView v;
  v.images = d.images.data();
  v.labels = d.labels.data();
  v.count = limit > 0 ? std::min<int64_t>(limit, d.count) : d.count;
  v.height = d.height;
  v.width = d.width;
  v.channels = d.channels;
  return v;
}

}  // namespace tr::data
