// The model registry and the layer-list engine as a specification: every
// registered model builds, the networks are the published ones (parameter
// counts and feature-map shapes), and every bad model, width or image size is
// one clear UserError naming what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "framework/graph/model_builder.h"
#include "framework/graph/models/model_lists.h"
#include "framework/graph/shape_inference.h"
#include "tests/model_test_util.h"

namespace tr {
namespace {

using testing::parameter_count;

// Shapes of one training variant at batch `batch` and the model's input size.
std::vector<Shape> train_shapes(const CompiledModel& m, int64_t batch) {
  return infer_shapes(m.cg, Variant::TrainBase, VariantDims{batch, batch, m.model.in_height, m.model.in_width});
}

Shape shape_of(const CompiledModel& m, const std::vector<Shape>& shapes, const std::string& tensor) {
  for (TensorId t = 0; t < m.cg.num_tensors(); ++t)
    if (m.cg.tensor(t).name == tensor) return shapes[size_t(t)];
  ADD_FAILURE() << "no tensor " << tensor;
  return {};
}

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError";
  return "";
}

// The same parameter counts as torchvision's resnet50, as the usual CIFAR
// ResNet-18 (3x3 stem, no max pool) and as torchvision's vgg16_bn less its 4,224
// convolution biases (every convolution here feeds a BatchNorm, which cancels a
// bias): the networks are the real ones.
TEST(ModelZoo, ParameterCountsAreThePublishedOnes) {
  const struct {
    const char* name;
    int64_t params;
  } want[] = {{"mlp", 1462538},
              {"cnn", 1165920},
              {"resnet18", 11173962},
              {"resnet50", 25557032},
              {"vgg16bn", 138365992 - 4224}};
  for (const auto& w : want) {
    const CompiledModel m = build_model(model_config(w.name), TrainConfig{}, 1);
    std::printf("[ zoo ] %s: %lld parameters\n", w.name, static_cast<long long>(parameter_count(m)));
    EXPECT_EQ(parameter_count(m), w.params) << w.name;
  }
}

TEST(ModelZoo, FeatureMapsHaveThePublishedShapes) {
  const CompiledModel r50 = build_model(model_config("resnet50"), TrainConfig{}, 2);
  const auto s50 = train_shapes(r50, 2);
  EXPECT_EQ(shape_of(r50, s50, "stem.conv.y"), (Shape{2, 112, 112, 64}));
  EXPECT_EQ(shape_of(r50, s50, "stem.pool.y"), (Shape{2, 56, 56, 64}));
  EXPECT_EQ(shape_of(r50, s50, "s2.b0.b.conv.y"), (Shape{2, 28, 28, 128}));  // v1.5: the stride on the 3x3
  EXPECT_EQ(shape_of(r50, s50, "s2.b0.a.conv.y"), (Shape{2, 56, 56, 128}));
  EXPECT_EQ(shape_of(r50, s50, "s4.b2.add.y"), (Shape{2, 7, 7, 2048}));
  EXPECT_EQ(shape_of(r50, s50, "fc.y"), (Shape{2, 1000}));
  const CompiledModel r18 = build_model(model_config("resnet18"), TrainConfig{}, 2);
  const auto s18 = train_shapes(r18, 2);
  EXPECT_EQ(shape_of(r18, s18, "stem.bn.y"), (Shape{2, 32, 32, 64}));
  EXPECT_EQ(shape_of(r18, s18, "s4.b1.add.y"), (Shape{2, 4, 4, 512}));
  EXPECT_EQ(shape_of(r18, s18, "s2.b0.down.conv.y"), (Shape{2, 16, 16, 128}));
  const CompiledModel vgg = build_model(model_config("vgg16bn", 1.0, 32, 3, 10), TrainConfig{}, 2);
  const auto sv = train_shapes(vgg, 2);
  EXPECT_EQ(shape_of(vgg, sv, "g5.pool.y"), (Shape{2, 1, 1, 512}));
  EXPECT_EQ(shape_of(vgg, sv, "fc3.y"), (Shape{2, 10}));
}

// --width scales every layer; --image-size rebuilds a model for other inputs
// (the GPT models' options: gpt_model_test.cpp).
TEST(ModelZoo, WidthAndImageSizeReshapeEveryModel) {
  for (const ModelEntry& e : model_registry()) {
    if (e.is_sequence()) continue;
    const CompiledModel full = build_model(model_config(e.name, 1.0, 32), TrainConfig{}, 1);
    const CompiledModel quarter = build_model(model_config(e.name, 0.25, 32), TrainConfig{}, 1);
    EXPECT_LT(parameter_count(quarter) * 4, parameter_count(full)) << e.name;  // mlp: its input stays 784
  }
  // A global pool makes the ResNets resolution-agnostic: same parameters at any size.
  EXPECT_EQ(parameter_count(build_model(model_config("resnet50", 1.0, 64), TrainConfig{}, 1)), 25557032);
  EXPECT_TRUE(build_model(model_config("resnet18"), TrainConfig{}, 1).supports_lowres);
  // VGG's classifier reads the flattened 7x7 map at 224: bound to its resolution.
  EXPECT_FALSE(build_model(model_config("vgg16bn"), TrainConfig{}, 1).supports_lowres);
  EXPECT_FALSE(build_model(model_config("mlp"), TrainConfig{}, 1).supports_lowres);
}

TEST(ModelZoo, BadModelsWidthsAndSizesAreOneLineUserErrors) {
  EXPECT_NE(user_error([] { model_config("resnet51"); }).find("unknown model 'resnet51' (known: mlp, cnn, resnet18"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              build_model(model_config("resnet18", 0.001), TrainConfig{}, 1);
            }).find("{width} 0.001 leaves a 64-channel layer with 0 channels"),  // Note [settings, not flags]
            std::string::npos);
  // Five 2x2 pools need at least 32x32.
  EXPECT_NE(user_error([] {
              build_model(model_config("vgg16bn", 1.0, 16), TrainConfig{}, 1);
            }).find("layer g5.pool: its 1x1 input is smaller than its 2x2 window"),
            std::string::npos);
  EXPECT_NE(user_error([] { build_model(model_config("cnn", 1.0, 4), TrainConfig{}, 1); }).find("smaller than its"),
            std::string::npos);
}

// A layer list is checked before any graph is built.
TEST(ModelZoo, BadLayerListsAreRefused) {
  using namespace layer;
  auto refusal = [](std::vector<LayerSpec> layers) {
    ModelConfig m = model_config("cnn");
    m.name = "custom";
    m.layers = std::move(layers);
    return user_error([&] { build_model(m, TrainConfig{}, 1); });
  };
  // A global pool and a 10-way classifier after the layers under test.
  const auto with_head = [](std::vector<LayerSpec> L) {
    L.push_back(global_max_pool("gp"));
    L.push_back(fc("fc", 10, false));
    return L;
  };
  std::vector<LayerSpec> L = with_head({conv("c", 8, 3, 1, 1), bn("c", true)});
  EXPECT_NE(refusal(L).find("two layers are named 'c'"), std::string::npos);
  L = {conv("c", 8, 3, 1, 1, {"nowhere"})};
  EXPECT_NE(refusal(L).find("layer c reads 'nowhere', which is not an earlier layer"), std::string::npos);
  L = with_head({conv("a", 8, 3, 1, 1), conv("b", 8, 3, 1, 1, {"input"}), add("s", "a", "b", true),
                 conv("c", 8, 3, 1, 1, {"a"})});
  L[4].inputs = {"c"};
  EXPECT_NE(refusal(L).find("the output of layer s is never read"), std::string::npos);
  L = {conv("a", 8, 3, 1, 1), global_max_pool("gp"), fc("fc", 7, false)};
  EXPECT_NE(refusal(L).find("must give one logit per class (10), not 7"), std::string::npos);
  L = {conv("a", 8, 3, 1, 1), conv("b", 4, 3, 1, 1, {"input"}), add("s", "a", "b", false)};
  EXPECT_NE(refusal(L).find("layer s: its inputs differ in shape (28x28x8 and 28x28x4)"), std::string::npos);
  L = with_head({conv("a", 8, 3, 1, 1), conv("b", 8, 3, 1, 1, {"input"})});
  L[1].group = ParamGroup::First;
  EXPECT_NE(refusal(L).find("the first-group layers must open the list"), std::string::npos);
  L = {conv("a", 8, 4, 1, 4)};
  EXPECT_NE(refusal(L).find("layer a: padding must be in [0, 4), got 4"), std::string::npos);
}

}  // namespace
}  // namespace tr
