#pragma once
// Fashion-MNIST (Zalando): 28x28x1 grey images of 10 clothing classes, stored as
// four IDX files, `.gz` as the Debian package `dataset-fashion-mnist` installs
// them or uncompressed:
//   train-images-idx3-ubyte  [60000, 28, 28]   train-labels-idx1-ubyte  [60000]
//   t10k-images-idx3-ubyte   [10000, 28, 28]   t10k-labels-idx1-ubyte   [10000]
// The loader checks everything it relies on and throws tr::UserError with one
// line "<path>: <what is wrong>" otherwise; it never returns a partial dataset.
#include <string>

#include "datasets/image_dataset.h"

namespace tr::data {

enum class Split { Train, Test };

inline constexpr int kFashionMnistSide = 28;
inline constexpr int kFashionMnistClasses = 10;

// "train" / "test".
const char* split_name(Split split);
// 60000 for Train, 10000 for Test.
int64_t fashion_mnist_count(Split split);

// $TR_DATA_DIR when set and non-empty, else "/usr/share/datasets/fashion-mnist".
std::string default_data_dir();

// The split as NHWC [count, 28, 28, 1] images with labels in [0, 10).
ImageDataset load_fashion_mnist(const std::string& dir, Split split);

}  // namespace tr::data
