#include "datasets/idx_dataset.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/idx_reader.h"
#include "framework/core/error.h"

namespace tr::data {
namespace fs = std::filesystem;

namespace {
constexpr const char* kInstalledDir = "/usr/share/datasets/fashion-mnist";

// File name stem of a split: the original distribution calls the test split "t10k".
const char* file_prefix(Split split) { return split == Split::Train ? "train" : "t10k"; }

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The stem of the split's files in dir: "<prefix>" when "<prefix>-images-idx3-ubyte[.gz]"
// exists, else the one "<name>-<split>" with such an images file (EMNIST).
std::string split_stem(const std::string& dir, Split split) {
  const std::string prefix = file_prefix(split);
  const std::string images = "-images-idx3-ubyte";
  if (is_file(fs::path(dir) / (prefix + images + ".gz")) || is_file(fs::path(dir) / (prefix + images))) return prefix;
  const std::string tail = cat("-", split_name(split), images);
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string n = e.path().filename().string();
    if (n.size() > 3 && n.compare(n.size() - 3, 3, ".gz") == 0) n.resize(n.size() - 3);
    if (n.size() > tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0) {
      const std::string stem = n.substr(0, n.size() - images.size());
      if (std::find(found.begin(), found.end(), stem) == found.end()) found.push_back(stem);
    }
  }
  if (found.size() > 1)
    throw UserError(cat(dir, ": several ", split_name(split), " splits (", found[0], ", ", found[1],
                        ", ...); give a directory holding one"));
  return found.empty() ? prefix : found[0];  // a missing file is reported by resolve_idx_path
}

// The model's class count is the data's, not its registry entry's (an EMNIST
// set has 26 to 62 classes, the entries' designs 10 or 1000): 1 + the largest
// training label. So labels are checked against what the rest of the training
// labels imply: every class from 1 to the largest must have a training image.
// A label past a class no image has (a stray 255 among 0..9) would otherwise
// build a model of 256 classes, 246 of them never trained. Class 0 alone may
// go unused: EMNIST's letters number their 26 classes 1..26.
void check_training_labels(const std::vector<int32_t>& labels, const std::string& path) {
  const int32_t top = *std::max_element(labels.begin(), labels.end());
  std::vector<bool> present(size_t(top) + 1, false);
  for (int32_t l : labels) present[size_t(l)] = true;
  const auto gap = std::find(present.begin() + 1, present.end(), false);
  if (gap == present.end()) return;
  const int32_t missing = int32_t(gap - present.begin());
  const auto bad = std::find_if(labels.begin(), labels.end(), [&](int32_t l) { return l > missing; });
  throw UserError(cat(path, ": label ", *bad, " at index ", bad - labels.begin(), " is past class ", missing,
                      ", which no training image has (the largest label, ", top, ", would make ", top + 1,
                      " classes; each from 1 up needs a training image)"));
}

}  // namespace

const char* split_name(Split split) { return split == Split::Train ? "train" : "test"; }

std::string default_data_dir() {
  const char* env = std::getenv("TR_DATA_DIR");
  return env && *env ? std::string(env) : std::string(kInstalledDir);
}

ImageDataset load_idx_split(const std::string& dir, Split split) {
  // Absolute paths in messages: the user sees exactly which file was read.
  std::error_code ec;
  fs::path root = fs::absolute(fs::path(dir), ec);
  if (ec) root = dir;
  root = root.lexically_normal();
  const std::string root_str = root.string();
  const fs::file_status st = fs::status(root, ec);
  if (!fs::exists(st))
    throw UserError(cat(root_str,
                        ": data directory does not exist (install the Debian package "
                        "dataset-fashion-mnist or set TR_DATA_DIR)"));
  if (!fs::is_directory(st)) throw UserError(cat(root_str, ": not a directory"));

  // Resolve both files before reading either, so a missing one fails fast.
  const std::string stem = split_stem(root_str, split);
  const std::string images_path = resolve_idx_path(root_str, stem + "-images-idx3-ubyte");
  const std::string labels_path = resolve_idx_path(root_str, stem + "-labels-idx1-ubyte");

  IdxArray images = read_idx_u8(images_path, {.dims = {kAnyDim, kAnyDim, kAnyDim}, .item_noun = "images"});
  IdxArray labels = read_idx_u8(labels_path, {.dims = {kAnyDim}, .item_noun = "labels"});
  if (labels.item_count() != images.item_count())
    throw UserError(cat(labels_path, ": holds ", labels.item_count(), " labels but ", images_path, " holds ",
                        images.item_count(), " images"));
  const int64_t count = images.item_count();
  if (count == 0) throw UserError(cat(images_path, ": holds no images"));
  if (images.dims[1] < 1 || images.dims[2] < 1)
    throw UserError(cat(images_path, ": images of ", images.dims[1], "x", images.dims[2], " pixels"));

  ImageDataset out;
  out.labels.assign(labels.data.begin(), labels.data.end());
  const int32_t top = *std::max_element(out.labels.begin(), out.labels.end());
  if (top < 1) throw UserError(cat(labels_path, ": every label is 0; a classifier needs at least 2 classes"));
  if (split == Split::Train) check_training_labels(out.labels, labels_path);
  out.count = count;
  out.height = int(images.dims[1]);
  out.width = int(images.dims[2]);
  out.channels = 1;  // [N, H, W] in the file is already [N, H, W, 1] NHWC
  out.num_classes = top + 1;
  out.images = std::move(images.data);
  TR_CHECK(int64_t(out.images.size()) == out.count * out.image_bytes());
  return out;
}

}  // namespace tr::data
