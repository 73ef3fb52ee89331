// The shape rules of a transformer's ops: attention's [B,T,3C] -> [B,T,C]
// with its heads, fc over tokens (fc_last_dim), the input windows' split and
// the loss per token; a one-line UserError naming the op for every bad
// combination.
#include <string>

#include "framework/ops/compute/attention.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/softmax_xent.h"
#include "framework/ops/compute/token_prep.h"
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

OpRunner heads(int h) {
  OpRunner r;
  r.attrs.heads = h;
  return r;
}

TEST(OpsCpuTransformerShapes, AttentionShapes) {
  const OpRunner r = heads(12);
  const Shape qkv{4, 1024, 3 * 768}, y{4, 1024, 768}, lse{4, 12, 1024};
  const std::vector<Shape> fwd = r.shapes(attention_fwd_shapes, {qkv}, 2);
  EXPECT_EQ(fwd[0], y);
  EXPECT_EQ(fwd[1], lse);
  const std::vector<Shape> bwd = r.shapes(attention_bwd_shapes, {y, qkv, y, lse}, 2);
  EXPECT_EQ(bwd[0], qkv);
  EXPECT_EQ(bwd[1], lse);
}

TEST(OpsCpuTransformerShapes, BadAttentionIsAUserError) {
  struct Row {
    int heads;
    Shape qkv;
    std::string says;
  };
  const Row rows[] = {
      {12, {4, 16, 3 * 100}, "12 heads do not divide the width 100"},
      {0, {4, 16, 3 * 64}, "0 heads do not divide the width 64"},
      {32, {4, 16, 3 * 768}, "head dim 24 (width 768 / 32 heads) is not one of 8, 16, 32, 64, 128"},
      {2, {4, 16, 100}, "is not 3C"},
      {2, {16, 3 * 64}, "expected [B,T,3C]"},
      {2, {4, 0, 3 * 64}, "non-positive dim"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(cat(row.qkv.str(), " with ", row.heads, " heads"));
    const std::string msg = user_error([&] { heads(row.heads).shapes(attention_fwd_shapes, {row.qkv}, 2); });
    EXPECT_NE(msg.find("attention_fwd: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(row.says), std::string::npos) << msg;
  }
  const OpRunner r = heads(2);
  const Shape qkv{2, 8, 3 * 32}, y{2, 8, 32}, lse{2, 2, 8};
  EXPECT_NE(user_error([&] {
              r.shapes(attention_bwd_shapes, {Shape{2, 8, 31}, qkv, y, lse}, 2);
            }).find("dy is [2,8,31]"),
            std::string::npos);
  EXPECT_NE(user_error([&] {
              r.shapes(attention_bwd_shapes, {y, qkv, y, Shape{2, 8, 2}}, 2);
            }).find("lse is [2,8,2]"),
            std::string::npos);
}

OpRunner per_token(bool bias) {
  OpRunner r;
  r.attrs.fc_last_dim = true;
  r.attrs.has_bias = bias;
  return r;
}

TEST(OpsCpuTransformerShapes, FcOverTokensKeepsTheLeadingDims) {
  const Shape x{4, 64, 768}, w{3072, 768}, b{3072}, y{4, 64, 3072};
  EXPECT_EQ(per_token(true).shapes(fc_fwd_shapes, {x, w, b}, 1)[0], y);
  EXPECT_EQ(per_token(false).shapes(fc_bwd_data_shapes, {y, w, x}, 1)[0], x);
  const std::vector<Shape> dw = per_token(true).shapes(fc_bwd_weight_shapes, {x, y}, 2);
  EXPECT_EQ(dw[0], w);
  EXPECT_EQ(dw[1], b);
  // The same x without fc_last_dim is [4, 64*768] flattened: a different layer.
  OpRunner flat;
  EXPECT_NE(user_error([&] {
              flat.shapes(fc_fwd_shapes, {x, w}, 1);
            }).find("flattens to 49152 features"),
            std::string::npos);
}

TEST(OpsCpuTransformerShapes, BadFcOverTokensIsAUserError) {
  const OpRunner r = per_token(false);
  const Shape x{4, 64, 768}, w{3072, 768}, y{4, 64, 3072};
  EXPECT_NE(user_error([&] {
              r.shapes(fc_fwd_shapes, {Shape{4, 64, 512}, w}, 1);
            }).find("fc_fwd: x [4,64,512] has 512 features but w is [3072,768]"),
            std::string::npos);
  EXPECT_NE(user_error([&] {
              r.shapes(fc_bwd_data_shapes, {Shape{4, 32, 3072}, w, x}, 1);
            }).find("fc_bwd_data: dy [4,32,3072] and x [4,64,768] differ in their leading dims"),
            std::string::npos);
  EXPECT_NE(user_error([&] {
              r.shapes(fc_bwd_weight_shapes, {x, Shape{4, 64}}, 1);
            }).find("differ in their leading dims"),
            std::string::npos);
  EXPECT_NE(user_error([&] { r.shapes(fc_fwd_shapes, {Shape{768}, w}, 1); }).find("must be [..,K]"), std::string::npos);
}

TEST(OpsCpuTransformerShapes, TokenPrepSplitsTheVariantsShareOfTheWindows) {
  OpRunner r;
  r.variant = {4, 8, 1024, 0};
  const std::vector<Shape> out = r.shapes(token_prep_shapes, {Shape{16, 1025}}, 3);
  EXPECT_EQ(out[0], (Shape{4, 1024}));
  EXPECT_EQ(out[1], (Shape{4, 1024}));
  EXPECT_EQ(out[2], (Shape{4 * 1024}));
  r.variant = {4, 8, 1025, 0};
  EXPECT_NE(user_error([&] {
              r.shapes(token_prep_shapes, {Shape{16, 1025}}, 3);
            }).find("token_prep: the variant's sequence length 1025 is outside [1, 1024] (windows of 1025 tokens)"),
            std::string::npos);
  r.variant = {17, 17, 64, 0};
  EXPECT_NE(user_error([&] {
              r.shapes(token_prep_shapes, {Shape{16, 1025}}, 3);
            }).find("batch 17 is outside [1, 16]"),
            std::string::npos);
  EXPECT_NE(user_error([&] { r.shapes(token_prep_shapes, {Shape{16, 1}}, 3); }).find("T >= 1"), std::string::npos);
}

TEST(OpsCpuTransformerShapes, TheLossPerTokenTakesALabelPerToken) {
  OpRunner r;
  r.attrs.with_grad = true;
  const std::vector<Shape> out = r.shapes(softmax_xent_shapes, {Shape{4, 64, 257}, Shape{4, 64}}, 2);
  EXPECT_EQ(out[0], (Shape{4, 64, 257}));
  EXPECT_NE(user_error([&] {
              r.shapes(softmax_xent_shapes, {Shape{4, 64, 257}, Shape{4}}, 2);
            }).find("softmax_xent: labels must be the logits' [4,64,257] without the last dim, got [4]"),
            std::string::npos);
}

}  // namespace
}  // namespace tr::test
