#pragma once
// The shape parameters of one variant, as the kernels see them.
#include <cstdint>

namespace tr {

struct VariantDims {
  int64_t batch = 0;         // samples on this rank
  int64_t global_batch = 0;  // samples over all ranks (loss mean, BN statistics count)
  int64_t height = 0;        // input resolution after InputPrep
  int64_t width = 0;
  bool operator==(const VariantDims&) const = default;
};

}  // namespace tr
