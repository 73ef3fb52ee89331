#pragma once
// A tensor shape: up to 4 dims, outermost first. Activations are NHWC.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "framework/core/error.h"

namespace tr {

struct Shape {
  static constexpr int kMaxDims = 4;
  std::array<int64_t, kMaxDims> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) {
    TR_CHECK(d.size() <= kMaxDims, "too many dims");
    for (int64_t v : d) dims[rank++] = v;
  }
  int64_t operator[](int i) const { return dims[i]; }
  int64_t& operator[](int i) { return dims[i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return rank == 0 ? 0 : n;
  }
  // Product of every dim after the first: the feature size of a [N, ...] tensor.
  int64_t inner() const {
    int64_t n = 1;
    for (int i = 1; i < rank; ++i) n *= dims[i];
    return n;
  }
  // This shape with its last dim replaced by v.
  Shape with_last(int64_t v) const {
    Shape s = *this;
    s.dims[rank - 1] = v;
    return s;
  }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank; ++i) {
      if (i) s += ',';
      s += std::to_string(dims[i]);
    }
    return s + "]";
  }
};

}  // namespace tr
