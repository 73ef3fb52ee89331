// GPT-2 as llm.c and nanoGPT define it: token + position embedding, `depth`
// pre-LN blocks, a final LayerNorm and the head tied to the token table.
//   block: x + proj(attn(qkv(ln1(x)))), then x + down(gelu(up(ln2(x))))
//   qkv C -> 3C, proj C -> C, up C -> 4C, down 4C -> C, all with biases;
//   GELU in its tanh form; LayerNorm with gain and bias.
// Linear weights are normal(0, 0.02), the residual projections (proj, down)
// normal(0, 0.02 / sqrt(2 depth)) as GPT-2's paper scales them; biases zero.
// --width scales the head dimension (64 at width 1), so the heads stay `heads`.
#include <cmath>

#include "framework/core/error.h"
#include "framework/core/setting.h"
#include "framework/graph/models/model_lists.h"
#include "framework/ops/compute/attention.h"

namespace tr {
namespace {

constexpr float kInitStd = 0.02f;

LayerSpec linear(std::string name, int outputs, float std) {
  LayerSpec s = layer::fc(std::move(name), outputs, true);
  s.init_std = std;
  return s;
}

}  // namespace

std::vector<LayerSpec> gpt_layers(const GptShape& g, double width, int vocab) {
  using namespace layer;
  const int head_dim = scaled_width(g.head_dim, width);
  bool supported = false;
  for (int d : kAttentionHeadDims) supported = supported || head_dim == d;
  TR_USER_CHECK(supported, setting("width"), " ", width, " gives heads of ", head_dim, " channels (", g.head_dim,
                " at 1); attention takes 8, 16, 32, 64 or 128");
  const int C = g.heads * head_dim;
  const float residual_std = kInitStd / std::sqrt(2.f * float(g.depth));
  std::vector<LayerSpec> L;
  L.push_back(embedding("emb", vocab, g.context, C));
  std::string x = "emb";
  for (int i = 0; i < g.depth; ++i) {
    const std::string b = cat("h", i, ".");
    L.push_back(layernorm(b + "ln1", {x}));
    L.push_back(linear(b + "qkv", 3 * C, kInitStd));
    L.push_back(attention(b + "attn", g.heads));
    L.push_back(linear(b + "proj", C, residual_std));
    L.push_back(add(b + "res1", x, b + "proj", false));
    L.push_back(layernorm(b + "ln2"));
    L.push_back(linear(b + "up", 4 * C, kInitStd));
    L.push_back(gelu(b + "gelu"));
    L.push_back(linear(b + "down", C, residual_std));
    L.push_back(add(b + "res2", b + "res1", b + "down", false));
    x = b + "res2";
  }
  L.push_back(layernorm("lnf", {x}));
  LayerSpec head = fc("head", vocab, false);
  head.tie = "emb";
  L.push_back(head);
  return L;
}

}  // namespace tr
