#include "framework/graph/layer_spec.h"

#include <cmath>

#include "framework/core/error.h"
#include "framework/core/setting.h"

namespace tr {

std::string_view layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::Conv: return "conv";
    case LayerKind::BatchNorm: return "batchnorm";
    case LayerKind::MaxPool: return "maxpool";
    case LayerKind::AvgPool: return "avgpool";
    case LayerKind::GlobalMaxPool: return "global_maxpool";
    case LayerKind::GlobalAvgPool: return "global_avgpool";
    case LayerKind::Fc: return "fc";
    case LayerKind::Relu: return "relu";
    case LayerKind::Add: return "add";
    case LayerKind::Embedding: return "embedding";
    case LayerKind::LayerNorm: return "layernorm";
    case LayerKind::Gelu: return "gelu";
    case LayerKind::Attention: return "attention";
    case LayerKind::Count: break;
  }
  return "?";
}

int scaled_width(int base, double width) {
  const long w = std::lround(base * width);
  TR_USER_CHECK(w >= 1, setting("width"), " ", width, " leaves a ", base, "-channel layer with ", w,
                " channels (every layer needs at least 1)");
  return static_cast<int>(w);
}

}  // namespace tr
