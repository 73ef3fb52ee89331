#pragma once
// Zero padding of a whole image set to a larger square, centred (the odd pixel,
// if any, goes to the bottom and right): how 28x28 Fashion-MNIST becomes the
// 32x32 input of the CIFAR-shaped models. Zero is the background of the
// MNIST family, so padding adds nothing a model could learn from.
#include "datasets/image_dataset.h"

namespace tr::data {

// `d` with every image padded to side x side; a UserError when side is smaller
// than the images.
ImageDataset pad_images(const ImageDataset& d, int side);

}  // namespace tr::data
