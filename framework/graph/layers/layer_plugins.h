#pragma once
// The layer plug-ins, one per file, gathered by layer_table.cpp.
#include "framework/graph/layer_plugin.h"

namespace tr {

extern const LayerPlugin kConvLayer;
extern const LayerPlugin kBatchNormLayer;
extern const LayerPlugin kMaxPoolLayer;
extern const LayerPlugin kAvgPoolLayer;
extern const LayerPlugin kGlobalMaxPoolLayer;
extern const LayerPlugin kGlobalAvgPoolLayer;
extern const LayerPlugin kFcLayer;
extern const LayerPlugin kReluLayer;
extern const LayerPlugin kAddLayer;
extern const LayerPlugin kEmbeddingLayer;
extern const LayerPlugin kLayerNormLayer;
extern const LayerPlugin kGeluLayer;
extern const LayerPlugin kAttentionLayer;

}  // namespace tr
