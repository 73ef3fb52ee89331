#pragma once
// The output side of a sliding window (convolution, pooling) and the checks a
// layer list must pass before any graph is built: one line naming the layer.
#include <string>

#include "framework/core/error.h"
#include "framework/core/setting.h"
#include "framework/graph/layer_plugin.h"

namespace tr::layers {

// The op attributes of a sliding-window layer: its kernel, stride and padding.
inline OpAttrs window_attrs(const LayerSpec& s) {
  OpAttrs a;
  a.kernel = s.kernel;
  a.stride = s.stride;
  a.pad = s.pad;
  return a;
}

// (in + 2*pad - kernel) / stride + 1, refusing windows that do not fit.
inline int64_t window_out(const std::string& layer, int64_t in, int kernel, int stride, int pad) {
  TR_USER_CHECK(kernel >= 1, "layer ", layer, ": kernel must be >= 1, got ", kernel);
  TR_USER_CHECK(stride >= 1, "layer ", layer, ": stride must be >= 1, got ", stride);
  TR_USER_CHECK(pad >= 0 && pad < kernel, "layer ", layer, ": padding must be in [0, ", kernel, "), got ", pad);
  TR_USER_CHECK(in + 2 * pad >= kernel, "layer ", layer, ": its ", in, "x", in, " input is smaller than its ", kernel,
                "x", kernel, " window (padding ", pad, "); the image is too small for this model (try a larger ",
                setting("image_size"), ")");
  return (in + 2 * pad - kernel) / stride + 1;
}

inline void need_spatial(const std::string& layer, const FeatureShape& in) {
  TR_USER_CHECK(in.spatial, "layer ", layer, " needs an image-shaped [H,W,C] input, but its input is already flat");
}

// The output of a windowed layer over one spatial input with c channels.
inline FeatureShape window_shape(const LayerSpec& s, const std::string& layer, const FeatureShape& in, int64_t c) {
  need_spatial(layer, in);
  FeatureShape out;
  out.h = window_out(layer, in.h, s.kernel, s.stride, s.pad);
  out.w = window_out(layer, in.w, s.kernel, s.stride, s.pad);
  out.c = c;
  return out;
}

}  // namespace tr::layers
