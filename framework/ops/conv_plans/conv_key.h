#pragma once
// ConvKey: what identifies one convolution for choosing its algorithm (the
// direction, the shapes, the window, stride and padding, the element type).
// ConvPlanCache (conv_plan_cache_cuda.h) keeps one plan per key; ConvPlanBook
// (conv_plan_book.h) keeps timed choices per key across caches and processes.
// Host-only, no CUDA: CPU builds and the plan file's parser use it too.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "framework/core/dtype.h"
#include "framework/core/shape.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/op_call.h"
#include "framework/ops/op_kind.h"

namespace tr {

enum class ConvDir : uint8_t { Fwd, BwdData, BwdFilter };

// "fwd", "bwd_data", "bwd_filter"; parse_conv_dir is its inverse (nullopt for anything else).
std::string_view conv_dir_name(ConvDir d);
std::optional<ConvDir> parse_conv_dir(std::string_view s);

// (direction, N, H, W, C, K, R, stride, pad, dtype): x[N,H,W,C], w[K,R,R,C],
// y[N,ho(),wo(),K]. The output side follows from the others (conv.h).
struct ConvKey {
  ConvDir dir = ConvDir::Fwd;
  int64_t n = 0, h = 0, w = 0, c = 0, k = 0;
  int64_t r = 0, stride = 1, pad = 0;
  DType dtype = DType::F32;
  int64_t ho() const { return conv_out_size(h, r, stride, pad); }
  int64_t wo() const { return conv_out_size(w, r, stride, pad); }
  auto operator<=>(const ConvKey&) const = default;
  std::string str() const;
  // (dir, n, h, w, c, k, r, stride, pad, dtype) as integers: what a digest or
  // a packed book (conv_plan_book.h) holds; from_ints() is the inverse.
  std::array<int64_t, 10> ints() const { return {int64_t(dir), n, h, w, c, k, r, stride, pad, int64_t(dtype)}; }
  static ConvKey from_ints(const std::array<int64_t, 10>& v) {
    ConvKey x;
    x.dir = ConvDir(v[0]);
    x.n = v[1], x.h = v[2], x.w = v[3], x.c = v[4], x.k = v[5], x.r = v[6], x.stride = v[7], x.pad = v[8];
    x.dtype = DType(v[9]);
    return x;
  }
};

// The key of a conv node from its op kind, its input shapes in the node's order
//   ConvFwd: (x, w)   ConvBwdData: (dy, w, x)   ConvBwdFilter: (x, dy)
// and its attributes (kernel, stride, pad). ConvBwdData needs x: with stride > 1
// several input sizes give the same dy. Throws tr::Error for other kinds or
// shapes the shape rule would have refused.
ConvKey conv_key(OpKind kind, const Shape* in, int n_in, const OpAttrs& attrs, DType dtype);
inline ConvKey conv_key(OpKind kind, std::initializer_list<Shape> in, const OpAttrs& attrs, DType dtype) {
  return conv_key(kind, in.begin(), int(in.size()), attrs, dtype);
}

}  // namespace tr
