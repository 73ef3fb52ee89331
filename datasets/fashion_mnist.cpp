#include "datasets/fashion_mnist.h"

#include <cstdlib>
#include <filesystem>

#include "datasets/idx_reader.h"
#include "framework/core/error.h"

namespace tr::data {
namespace fs = std::filesystem;

namespace {
constexpr const char* kInstalledDir = "/usr/share/datasets/fashion-mnist";

// File name stem of a split: the original distribution calls the test split "t10k".
const char* file_prefix(Split split) { return split == Split::Train ? "train" : "t10k"; }
}  // namespace

const char* split_name(Split split) { return split == Split::Train ? "train" : "test"; }

int64_t fashion_mnist_count(Split split) { return split == Split::Train ? 60000 : 10000; }

std::string default_data_dir() {
  const char* env = std::getenv("TR_DATA_DIR");
  return env && *env ? std::string(env) : std::string(kInstalledDir);
}

ImageDataset load_fashion_mnist(const std::string& dir, Split split) {
  // Absolute paths in messages: the user sees exactly which file was read.
  std::error_code ec;
  fs::path root = fs::absolute(fs::path(dir), ec);
  if (ec) root = dir;
  root = root.lexically_normal();
  const std::string root_str = root.string();
  const fs::file_status st = fs::status(root, ec);
  if (!fs::exists(st))
    throw UserError(cat(root_str, ": data directory does not exist (install the Debian package "
                        "dataset-fashion-mnist or set TR_DATA_DIR)"));
  if (!fs::is_directory(st)) throw UserError(cat(root_str, ": not a directory"));

  // Resolve both files before reading either, so a missing one fails fast.
  const std::string prefix = file_prefix(split);
  const std::string images_path = resolve_idx_path(root_str, prefix + "-images-idx3-ubyte");
  const std::string labels_path = resolve_idx_path(root_str, prefix + "-labels-idx1-ubyte");

  const int64_t count = fashion_mnist_count(split);
  IdxArray images = read_idx_u8(
      images_path, {.dims = {count, kFashionMnistSide, kFashionMnistSide}, .item_noun = "images"});
  // Any count here, so that a mismatch is reported as one against the images file.
  IdxArray labels = read_idx_u8(labels_path, {.dims = {kAnyDim}, .item_noun = "labels"});
  if (labels.item_count() != images.item_count())
    throw UserError(cat(labels_path, ": holds ", labels.item_count(), " labels but ", images_path,
                        " holds ", images.item_count(), " images"));

  ImageDataset out;
  out.labels.resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t label = labels.data[size_t(i)];
    if (label >= kFashionMnistClasses)
      throw UserError(cat(labels_path, ": label ", int(label), " of item ", i, " is outside [0, ",
                          kFashionMnistClasses, ")"));
    out.labels[size_t(i)] = label;
  }
  out.count = count;
  out.height = kFashionMnistSide;
  out.width = kFashionMnistSide;
  out.channels = 1;  // [N, 28, 28] in the file is already [N, 28, 28, 1] NHWC
  out.num_classes = kFashionMnistClasses;
  out.images = std::move(images.data);
  TR_CHECK(int64_t(out.images.size()) == out.count * out.image_bytes());
  return out;
}

}  // namespace tr::data
