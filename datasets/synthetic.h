#pragma once
// Deterministic synthetic image data of any NHWC shape, for throughput runs on
// shapes no real dataset has (e.g. 224x224x3) and for tests that must not need
// files. Not random noise: each class has its own smooth mean pattern, so a
// model can learn from it and accuracy/loss curves mean something.
#include <cstdint>

#include "datasets/image_dataset.h"

namespace tr::data {

// `count` images [count, height, width, channels] with labels drawn uniformly
// from [0, num_classes). The bytes are a pure function of (shape, seed) and
// integer-only, so they are identical on every machine and compiler. Item i
// depends only on (i, seed, image shape, num_classes): a larger count extends a
// smaller one. Non-positive sizes or an overflowing total throw tr::UserError.
ImageDataset make_synthetic(int64_t count, int height, int width, int channels, int num_classes, uint64_t seed);

}  // namespace tr::data
