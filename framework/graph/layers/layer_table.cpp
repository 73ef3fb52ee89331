// The layer-kind table: adding a layer kind is one plug-in file and one line here.
#include "framework/core/error.h"
#include "framework/graph/layers/layer_plugins.h"

namespace tr {

const LayerPlugin& layer_plugin(LayerKind k) {
  // Indexed by LayerKind; each plug-in names its kind and is checked on lookup.
  static const LayerPlugin* const kTable[] = {
      &kConvLayer,          &kBatchNormLayer, &kMaxPoolLayer,   &kAvgPoolLayer, &kGlobalMaxPoolLayer,
      &kGlobalAvgPoolLayer, &kFcLayer,        &kReluLayer,      &kAddLayer,     &kEmbeddingLayer,
      &kLayerNormLayer,     &kGeluLayer,      &kAttentionLayer,
  };
  static_assert(sizeof(kTable) / sizeof(kTable[0]) == static_cast<size_t>(LayerKind::Count),
                "one plug-in per LayerKind");
  const size_t i = static_cast<size_t>(k);
  TR_CHECK(i < static_cast<size_t>(LayerKind::Count), "bad LayerKind ", i);
  const LayerPlugin& p = *kTable[i];
  TR_CHECK(p.kind == k, "layer table: entry ", i, " is the ", layer_kind_name(p.kind), " plug-in");
  return p;
}

}  // namespace tr
