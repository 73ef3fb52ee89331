#pragma once
// Labelled image sets in the MNIST family's IDX format (MNIST, Fashion-MNIST,
// KMNIST, EMNIST): a split is two files, `.gz` as the Debian package
// `dataset-fashion-mnist` installs them or uncompressed,
//   <split>-images-idx3-ubyte  [count, H, W] u8    <split>-labels-idx1-ubyte  [count] u8
// with <split> = "train" or "t10k" (the original names), or one file pair named
// "*-train-…" / "*-test-…" (EMNIST's "emnist-balanced-train-images-idx3-ubyte").
// Any count and any H x W are accepted as long as the two files agree; the
// loader checks everything it relies on and throws tr::UserError with one line
// "<path>: <what is wrong>" otherwise; it never returns a partial dataset.
#include <string>

#include "datasets/image_dataset.h"

namespace tr::data {

enum class Split { Train, Test };

// "train" / "test".
const char* split_name(Split split);

// $TR_DATA_DIR when set and non-empty, else "/usr/share/datasets/fashion-mnist".
std::string default_data_dir();

// The split as NHWC [count, H, W, 1] images; num_classes = 1 + the largest label.
// In the training split, which sets the model's class count, every label from 1
// up to the largest must occur (a label past a class without images is refused).
ImageDataset load_idx_split(const std::string& dir, Split split);

}  // namespace tr::data
