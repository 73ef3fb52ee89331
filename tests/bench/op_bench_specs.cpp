// The catalogue of tr_bench_ops: the ops of the reference models at their own
// shapes (see ops_gpu_bench.cpp for what is measured and how).
#ifdef TR_HAVE_CUDA
#include "tests/bench/op_bench_spec.h"

#include "framework/core/error.h"
#include "framework/ops/compute/attention.h"
#include "framework/ops/compute/avgpool.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/classifier_head.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/gelu.h"
#include "framework/ops/compute/input_prep.h"
#include "framework/ops/compute/layernorm.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/compute/softmax_xent.h"
#include "framework/ops/conv_plans/conv_filter_tc_cuda.h"

namespace tr::bench {
namespace {

const char* dn(DType t) { return t == DType::F16 ? "f16" : "f32"; }

// Forward and both gradients of an R x R convolution, H x H x C -> K, at batch B.
// Names carry the window only when it is not the cnn's 3x3 / stride 1 / pad 1.
std::vector<Spec> conv_specs(const std::string& pre, DType t, int64_t B, int64_t H, int64_t C, int64_t K, bool first,
                             int R = 3, int stride = 1, int pad = 1) {
  const std::string geo = R == 3 && stride == 1 && pad == 1 ? "" : cat("/", R, "x", R, "s", stride, "p", pad);
  const std::string sh = cat("/", H, "x", H, "x", C, "-", K, geo, "/", dn(t));
  const int64_t Ho = conv_out_size(H, R, stride, pad);
  const Shape x{B, H, H, C}, w{K, R, R, C}, y{B, Ho, Ho, K};
  OpAttrs a;
  a.kernel = R;
  a.stride = stride;
  a.pad = pad;
  const double fl = 2.0 * double(B * Ho * Ho) * double(K) * double(R * R) * double(C);
  std::vector<Spec> v;
  Spec f;
  f.name = cat(pre, "conv_fwd", sh);
  f.fn = conv_fwd_cuda;
  f.in = {{t, x}, {t, w, -0.1, 0.1}};
  f.out = {{t, y}};
  f.attrs = a;
  f.conv = OpKind::ConvFwd;
  f.flops = fl;
  v.push_back(f);
  if (!first) {  // the first layer needs no input gradient
    Spec d;
    d.name = cat(pre, "conv_bwd_data", sh);
    d.fn = conv_bwd_data_cuda;
    d.in = {{t, y}, {t, w, -0.1, 0.1}, {t, x, -1, 1, true}};
    d.out = {{t, x}};
    d.attrs = a;
    d.conv = OpKind::ConvBwdData;
    d.flops = fl;
    v.push_back(d);
  }
  Spec g;
  g.name = cat(pre, "conv_bwd_filter", sh);
  g.fn = conv_bwd_filter_cuda;
  g.in = {{t, x}, {t, y}};
  g.out = {{t, w}};
  g.attrs = a;
  g.conv = OpKind::ConvBwdFilter;
  g.flops = fl;
  v.push_back(g);
  // Where our tensor-core kernel takes the filter gradient, cuDNN's beside it.
  if (filter_tc_beats_cudnn(conv_key(OpKind::ConvBwdFilter, {x, y}, a, t))) {
    g.name = cat(pre, "conv_bwd_filter_cudnn", sh);
    g.cudnn_conv = true;
    v.push_back(g);
  }
  return v;
}

std::vector<Spec> bn_specs(const std::string& pre, DType t, int64_t B, int64_t H, int64_t C) {
  const std::string sh = cat("/", H, "x", H, "x", C, "/", dn(t));
  const Shape x{B, H, H, C};
  const DType f = DType::F32;
  VariantDims v{B, B, H, H};
  std::vector<Spec> r(5);
  r[0].name = cat(pre, "bn_stats", sh);
  r[0].fn = bn_stats_cuda;
  r[0].in = {{t, x}};
  r[0].out = {{f, {2, C}}};
  r[1].name = cat(pre, "bn_relu_apply", sh);
  r[1].fn = bn_relu_apply_cuda;
  r[1].in = {{t, x}, {f, {2, C}, 0.5, 1.5}, {t, {C}}, {t, {C}}};
  r[1].out = {{t, x}, {f, {2, C}}, {f, {2, C}}};
  r[2].name = cat(pre, "bn_relu_bwd_reduce", sh);
  r[2].fn = bn_relu_bwd_reduce_cuda;
  r[2].in = {{t, x}, {f, {2, C}}, {t, x}, {f, {2, C}, 0.5, 1.5}};
  r[2].out = {{t, {C}}, {t, {C}}, {f, {2, C}}};
  r[3].name = cat(pre, "bn_relu_bwd_apply", sh);
  r[3].fn = bn_relu_bwd_apply_cuda;
  r[3].in = {{t, x}, {f, {2, C}}, {t, x}, {f, {2, C}, 0.5, 1.5}, {t, {C}}, {f, {2, C}}};
  r[3].out = {{t, x}};
  r[4].name = cat(pre, "bn_relu_infer", sh);
  r[4].fn = bn_relu_infer_cuda;
  r[4].in = {{t, x}, {f, {2, C}}};
  r[4].out = {{t, x}};
  for (Spec& s : r) s.variant = v;
  return r;
}

std::vector<Spec> pool_specs(const std::string& pre, DType t, int64_t B, int64_t H, int64_t C) {
  const std::string sh = cat("/", H, "x", H, "x", C, "/", dn(t));
  const Shape x{B, H, H, C}, y{B, H / 2, H / 2, C};
  std::vector<Spec> r(4);
  for (Spec& s : r) {  // the cnn's 2x2/s2 window
    s.attrs.kernel = 2;
    s.attrs.stride = 2;
  }
  r[0].name = cat(pre, "maxpool_fwd", sh);
  r[0].fn = maxpool_fwd_cuda;
  r[0].in = {{t, x}};
  r[0].out = {{t, y}};
  r[1].name = cat(pre, "maxpool_bwd", sh);
  r[1].fn = maxpool_bwd_cuda;
  r[1].in = {{t, y}, {t, x}, {t, y}};
  r[1].out = {{t, x}};
  r[1].derive = maxpool_fwd_cuda;  // y = the forward of x, as in training
  r[1].derive_from = 1;
  r[1].derive_to = {2};
  // What the max-pool layer runs: the forward records the winners, the
  // backward routes to them.
  r[2] = r[0];
  r[2].name = cat(pre, "maxpool_fwd_argmax", sh);
  r[2].fn = maxpool_argmax_fwd_cuda;
  r[2].out.push_back({DType::U8, y});
  r[3] = r[1];
  r[3].name = cat(pre, "maxpool_bwd_argmax", sh);
  r[3].fn = maxpool_argmax_bwd_cuda;
  r[3].derive = maxpool_argmax_fwd_cuda;
  r[3].in = {{t, y}, {t, x, -1, 1, false, true}, {DType::U8, y}};
  r[3].derive_to = {0, 2};  // (y, argmax) from x; y lands in dy's buffer, whose values do not matter
  return r;
}

Spec fc_spec(const std::string& pre, const char* dir, DType t, int64_t N, int64_t K, int64_t M, bool bias,
             float scale) {
  Spec s;
  s.name = cat(pre, "fc_", dir, "/", K, "-", M, "/", dn(t));
  s.attrs.has_bias = bias;
  s.attrs.scale = scale;
  s.flops = 2.0 * double(N) * double(K) * double(M);
  const std::string d = dir;
  if (d == "fwd") {
    s.fn = fc_fwd_cuda;
    s.in = {{t, {N, K}}, {t, {M, K}, -0.1, 0.1}};
    if (bias) s.in.push_back({t, {M}});
    s.out = {{t, {N, M}}};
  } else if (d == "bwd_data") {
    s.fn = fc_bwd_data_cuda;
    s.in = {{t, {N, M}}, {t, {M, K}, -0.1, 0.1}, {t, {N, K}}};  // x: dx's shape only
    s.out = {{t, {N, K}}};
  } else {
    s.fn = fc_bwd_weight_cuda;
    s.in = {{t, {N, K}}, {t, {N, M}}};
    s.out = {{t, {M, K}}};
    if (bias) s.out.push_back({t, {M}});
  }
  return s;
}

Spec xent_spec(const std::string& pre, DType t, int64_t N, int64_t M) {
  Spec s;
  s.name = cat(pre, "softmax_xent/", M, "/", dn(t));
  s.fn = softmax_xent_cuda;
  s.attrs.label_smoothing = 0.1f;
  s.attrs.with_grad = true;
  s.variant = {N, N, 0, 0};
  s.in = {{t, {N, M}, -4, 4}, {DType::I32, {N}, 0, double(M)}};
  s.out = {{t, {N, M}}, {DType::F32, {4}}};
  return s;
}

Spec relu_spec(const std::string& pre, bool fwd, DType t, Shape x) {
  Spec s;
  s.name = cat(pre, fwd ? "relu_fwd/" : "relu_bwd/", x.inner(), "/", dn(t));
  s.fn = fwd ? relu_fwd_cuda : relu_bwd_cuda;
  s.in = fwd ? std::vector<TSpec>{{t, x}} : std::vector<TSpec>{{t, x}, {t, x}};
  s.out = {{t, x}};
  return s;
}

// GPT-2 124M's linear layers over tokens [B, T, 768]: the attention's qkv
// projection (768 -> 2304) and the MLP's up projection (768 -> 3072) with
// their biases, and the MLP's gradients.
std::vector<Spec> gpt2_fc_specs(const std::string& pre, DType t, int64_t B, int64_t T) {
  const int64_t C = 768;
  std::vector<Spec> v;
  for (int64_t M : {3 * C, 4 * C}) {
    Spec f;
    f.name = cat(pre, "fc_fwd/", C, "-", M, "/", dn(t));
    f.fn = fc_fwd_cuda;
    f.attrs.fc_last_dim = true;
    f.attrs.has_bias = true;
    f.in = {{t, {B, T, C}}, {t, {M, C}, -0.05, 0.05}, {t, {M}}};
    f.out = {{t, {B, T, M}}};
    f.flops = 2.0 * double(B * T) * double(C) * double(M);
    v.push_back(f);
  }
  Spec d = v.back();
  d.name = cat(pre, "fc_bwd_data/", 4 * C, "-", C, "/", dn(t));
  d.fn = fc_bwd_data_cuda;
  d.attrs.has_bias = false;
  d.in = {{t, {B, T, 4 * C}}, {t, {4 * C, C}, -0.05, 0.05}, {t, {B, T, C}, -1, 1, true}};
  d.out = {{t, {B, T, C}}};
  v.push_back(d);
  Spec w = v.back();
  w.name = cat(pre, "fc_bwd_weight/", C, "-", 4 * C, "/", dn(t));
  w.fn = fc_bwd_weight_cuda;
  w.attrs.has_bias = true;
  w.in = {{t, {B, T, C}}, {t, {B, T, 4 * C}}};
  w.out = {{t, {4 * C, C}}, {t, {4 * C}}};
  v.push_back(w);
  return v;
}

// Causal self-attention of GPT-2 124M (12 heads of 64) at [B, T]. FLOPs of
// the causal half of the scores: the forward's two products 2 * B * T^2 * C,
// the backward's five (the scores again, dp, dv, dq, dk) 5 * B * T^2 * C.
std::vector<Spec> gpt2_attention_specs(const std::string& pre, DType t, int64_t B, int64_t T) {
  const int64_t C = 768, H = 12;
  const Shape qkv{B, T, 3 * C}, y{B, T, C}, lse{B, H, T};
  Spec f;
  f.name = cat(pre, "attention_fwd/", H, "x", C / H, "/", dn(t));
  f.fn = attention_fwd_cuda;
  f.attrs.heads = int(H);
  f.in = {{t, qkv}};
  f.out = {{t, y}, {DType::F32, lse}};
  f.flops = 2.0 * double(B) * double(T * T) * double(C);
  Spec b = f;
  b.name = cat(pre, "attention_bwd/", H, "x", C / H, "/", dn(t));
  b.fn = attention_bwd_cuda;
  b.in = {{t, y}, {t, qkv}, {t, y}, {DType::F32, lse}};
  b.out = {{t, qkv}, {DType::F32, lse}};
  b.derive = attention_fwd_cuda;  // y and lse: the forward's of qkv
  b.derive_from = 1;
  b.derive_to = {2, 3};
  b.flops = 2.5 * f.flops;
  return {f, b};
}

// GPT-2 124M's ops at micro-batch B, T = 1024: the MLP's GELU over
// [B*T, 4*768], a LayerNorm over [B*T, 768], the linear layers and attention.
std::vector<Spec> gpt2_specs(DType t, int64_t B) {
  const std::string pre = cat("gpt2/b", B, "/");
  const Shape h{B * 1024, 3072}, x{B * 1024, 768}, stats{B * 1024, 2}, c{768};
  Spec f;
  f.name = cat(pre, "gelu_fwd/", h.inner(), "/", dn(t));
  f.fn = gelu_fwd_cuda;
  f.in = {{t, h, -4, 4}};
  f.out = {{t, h}};
  Spec b = f;
  b.name = cat(pre, "gelu_bwd/", h.inner(), "/", dn(t));
  b.fn = gelu_bwd_cuda;
  b.in = {{t, h}, {t, h, -4, 4}};
  Spec lf;
  lf.name = cat(pre, "layernorm_fwd/", x.inner(), "/", dn(t));
  lf.fn = layernorm_fwd_cuda;
  lf.in = {{t, x}, {t, c, 0.5, 1.5}, {t, c}};
  lf.out = {{t, x}, {DType::F32, stats}};
  Spec lb;
  lb.name = cat(pre, "layernorm_bwd/", x.inner(), "/", dn(t));
  lb.fn = layernorm_bwd_cuda;
  // Any stats do for timing; rstd drawn in [0.5, 1.5] keeps the values finite.
  lb.in = {{t, x}, {t, x}, {t, c, 0.5, 1.5}, {DType::F32, stats, 0.5, 1.5}};
  lb.out = {{t, x}, {t, c}, {t, c}};
  std::vector<Spec> v = {f, b, lf, lb};
  for (const std::vector<Spec>& more : {gpt2_fc_specs(pre, t, B, 1024), gpt2_attention_specs(pre, t, B, 1024)})
    v.insert(v.end(), more.begin(), more.end());
  return v;
}

std::vector<Spec> cnn_specs(DType t, int64_t B) {
  const std::string pre = cat("cnn/b", B, "/");
  std::vector<Spec> v;
  auto add = [&](std::vector<Spec> s) { v.insert(v.end(), s.begin(), s.end()); };
  Spec ip;
  ip.name = cat(pre, "input_prep/28x28x1/", dn(t));
  ip.fn = input_prep_cuda;
  ip.variant = {B, B, 28, 28};
  ip.attrs.norm_mean[0] = 0.2860f;
  ip.attrs.norm_std[0] = 0.3530f;
  ip.in = {{DType::U8, {B, 28, 28, 1}}, {DType::I32, {B}, 0, 10}};
  ip.out = {{t, {B, 28, 28, 1}}, {DType::I32, {B}}};
  v.push_back(ip);
  add(conv_specs(pre, t, B, 28, 1, 32, true));
  add(bn_specs(pre, t, B, 28, 32));
  // blocks: conv(28|14|7, Cin -> W), pool, bn, conv(W -> W), bn
  const int64_t widths[3] = {64, 128, 256};
  int64_t H = 28, cin = 32;
  for (int64_t w : widths) {
    add(conv_specs(pre, t, B, H, cin, w, false));
    add(pool_specs(pre, t, B, H, w));
    H /= 2;
    add(bn_specs(pre, t, B, H, w));
    add(conv_specs(pre, t, B, H, w, w, false));
    cin = w;
  }
  Spec gf;
  gf.name = cat(pre, "global_maxpool_fwd/3x3x256/", dn(t));
  gf.fn = global_maxpool_fwd_cuda;
  gf.in = {{t, {B, 3, 3, 256}}};
  gf.out = {{t, {B, 256}}};
  v.push_back(gf);
  Spec gb;
  gb.name = cat(pre, "global_maxpool_bwd/3x3x256/", dn(t));
  gb.fn = global_maxpool_bwd_cuda;
  gb.in = {{t, {B, 256}}, {t, {B, 3, 3, 256}}, {t, {B, 256}}};
  gb.out = {{t, {B, 3, 3, 256}}};
  v.push_back(gb);
  for (const char* d : {"fwd", "bwd_data", "bwd_weight"}) v.push_back(fc_spec(pre, d, t, B, 256, 10, false, 0.125f));
  v.push_back(xent_spec(pre, t, B, 10));
  // What the training step runs instead of the five ops above but the fc's
  // weight gradient: the fused head (Note [fusion]).
  Spec head;
  head.name = cat(pre, "classifier_head/3x3x256-10/", dn(t));
  head.fn = classifier_head_cuda;
  head.attrs.scale = 0.125f;
  head.attrs.label_smoothing = 0.1f;
  head.attrs.with_grad = true;
  head.variant = {B, B, 0, 0};
  head.in = {{t, {B, 3, 3, 256}}, {t, {10, 256}, -0.1, 0.1}, {DType::I32, {B}, 0, 10}};
  head.out = {{t, {B, 256}}, {t, {B, 10}}, {DType::F32, {4}}, {t, {B, 3, 3, 256}}};
  head.flops = 2 * 2.0 * double(B) * 256 * 10;
  v.push_back(head);
  return v;
}

// ResNet-50's pooling layers: the stem max pool x[B,112,112,64] -> [B,56,56,64]
// (3x3/s2/p1: overlapping windows, the general gather backward) and the global
// average pool x[B,7,7,2048] -> [B,2048].
std::vector<Spec> resnet50_pool_specs() {
  const DType h = DType::F16;
  std::vector<Spec> v;
  {
    const int64_t B = 32;
    const std::string pre = cat("resnet50/b", B, "/");
    const Shape x{B, 112, 112, 64}, y{B, 56, 56, 64};
    Spec f, b;
    for (Spec* s : {&f, &b}) {
      s->attrs.kernel = 3;
      s->attrs.stride = 2;
      s->attrs.pad = 1;
    }
    f.name = cat(pre, "maxpool_fwd/112x112x64-3x3s2p1/", dn(h));
    f.fn = maxpool_fwd_cuda;
    f.in = {{h, x}};
    f.out = {{h, y}};
    b.name = cat(pre, "maxpool_bwd/112x112x64-3x3s2p1/", dn(h));
    b.fn = maxpool_bwd_cuda;
    b.in = {{h, y}, {h, x}, {h, y}};
    b.out = {{h, x}};
    b.derive = maxpool_fwd_cuda;  // y = the forward of x: every output finds its maximum, as in training
    b.derive_from = 1;
    b.derive_to = {2};
    // What the max-pool layer runs:
    // the forward records the winners, the backward routes to them.
    Spec fa = f, ba = b;
    fa.name = cat(pre, "maxpool_fwd_argmax/112x112x64-3x3s2p1/", dn(h));
    fa.fn = maxpool_argmax_fwd_cuda;
    fa.out.push_back({DType::U8, y});
    ba.name = cat(pre, "maxpool_bwd_argmax/112x112x64-3x3s2p1/", dn(h));
    ba.fn = maxpool_argmax_bwd_cuda;
    ba.derive = maxpool_argmax_fwd_cuda;
    ba.in = {{h, y}, {h, x, -1, 1, false, true}, {DType::U8, y}};
    ba.derive_to = {0, 2};  // (y, argmax) from x; y lands in dy's buffer, whose values do not matter
    for (Spec* s : {&f, &b, &fa, &ba}) v.push_back(*s);
  }
  for (DType t : {DType::F16, DType::F32}) {
    const int64_t B = 256;
    const std::string pre = cat("resnet50/b", B, "/");
    const Shape x{B, 7, 7, 2048}, y{B, 2048};
    Spec f, b;
    f.name = cat(pre, "global_avgpool_fwd/7x7x2048/", dn(t));
    f.fn = global_avgpool_fwd_cuda;
    f.in = {{t, x}};
    f.out = {{t, y}};
    b.name = cat(pre, "global_avgpool_bwd/7x7x2048/", dn(t));
    b.fn = global_avgpool_bwd_cuda;
    b.in = {{t, y}, {t, x, -1, 1, true}};
    b.out = {{t, x}};
    v.push_back(f);
    v.push_back(b);
  }
  return v;
}

std::vector<Spec> mlp_specs(DType t) {
  const std::string pre = "mlp/b200/";
  const int64_t N = 200;
  std::vector<Spec> v;
  const int64_t dims[5] = {784, 1024, 512, 256, 10};
  for (int i = 0; i < 4; ++i) {
    for (const char* d : {"fwd", "bwd_data", "bwd_weight"})
      v.push_back(fc_spec(pre, d, t, N, dims[i], dims[i + 1], true, 1.f));
    if (i < 3) {
      v.push_back(relu_spec(pre, true, t, Shape{N, dims[i + 1]}));
      v.push_back(relu_spec(pre, false, t, Shape{N, dims[i + 1]}));
    }
  }
  v.push_back(xent_spec(pre, t, N, 10));
  return v;
}

// ResNet-50 convolutions the cnn does not have: the stem (its data gradient is
// measured too, though a first layer never needs it) and a stride-2 3x3.
std::vector<Spec> resnet_specs(DType t) {
  const std::string pre = "resnet50/b32/";
  std::vector<Spec> v = conv_specs(pre, t, 32, 224, 3, 64, false, 7, 2, 3);
  std::vector<Spec> s2 = conv_specs(pre, t, 32, 56, 128, 128, false, 3, 2, 1);
  v.insert(v.end(), s2.begin(), s2.end());
  return v;
}

// The zoo's most frequent layers at their benchmark batches, f16 (AMP).
std::vector<Spec> zoo_specs() {
  const DType h = DType::F16;
  std::vector<Spec> v;
  auto add = [&](std::vector<Spec> s) { v.insert(v.end(), s.begin(), s.end()); };
  {  // resnet18 (CIFAR): the basic blocks' 3x3 convolutions at each width, b512
    const std::string pre = "resnet18/b512/";
    const int64_t sides[4] = {32, 16, 8, 4}, widths[4] = {64, 128, 256, 512};
    add(conv_specs(pre, h, 512, 32, 3, 64, true));  // the 3x3 stem: small-C kernels
    for (int i = 0; i < 4; ++i) add(conv_specs(pre, h, 512, sides[i], widths[i], widths[i], false));
    add(bn_specs(pre, h, 512, 32, 64));
  }
  {  // resnet50: a first-stage bottleneck (1x1 256->64, 3x3 64->64, 1x1 64->256) at 56x56, b256
    const std::string pre = "resnet50/b256/";
    add(conv_specs(pre, h, 256, 56, 256, 64, false, 1, 1, 0));
    add(conv_specs(pre, h, 256, 56, 64, 64, false));
    add(conv_specs(pre, h, 256, 56, 64, 256, false, 1, 1, 0));
    add(bn_specs(pre, h, 256, 56, 256));
    // The block's end in the backward: ReluBwd of the two gradients that reach
    // it, then its last BatchNorm's reduce (no ReLU of its own); and the reduce
    // with the ReLU's gradient in front, which the training step runs instead
    // (Note [the ReLU's gradient in the reduce]).
    const Shape x{256, 56, 56, 256}, p2{2, 256};
    const DType f = DType::F32;
    Spec relu = relu_spec(pre, false, h, x);
    relu.name = cat(pre, "relu_bwd_two_grads/56x56x256/", dn(h));
    relu.fn = relu_bwd_add_cuda;
    relu.in.push_back({h, x});
    Spec fused;
    fused.name = cat(pre, "bn_bwd_reduce_relu_grad/56x56x256/", dn(h));
    fused.fn = relu_bwd_add_bn_reduce_cuda;
    fused.attrs.relu = false;
    fused.variant = {256, 256, 56, 56};
    fused.in = {{h, x}, {f, p2}, {h, x}, {f, p2, 0.5, 1.5}, {h, x}, {h, x}};
    fused.out = {{h, {256}}, {h, {256}}, {f, p2}, {h, x}};
    v.push_back(relu);
    v.push_back(fused);
  }
  {  // vgg16bn at 224x224: the first and the last convolution widths, b128
    const std::string pre = "vgg16bn/b128/";
    add(conv_specs(pre, h, 128, 224, 64, 64, false));
    add(conv_specs(pre, h, 128, 14, 512, 512, false));
    add(bn_specs(pre, h, 128, 224, 64));
  }
  return v;
}

}  // namespace

std::vector<Spec> op_bench_specs() {
  std::vector<Spec> all;
  auto add = [&](std::vector<Spec> s) { all.insert(all.end(), s.begin(), s.end()); };
  for (DType t : {DType::F16, DType::F32}) {
    for (int64_t B : {256, 1024}) add(cnn_specs(t, B));
    add(mlp_specs(t));
  }
  add(resnet_specs(DType::F16));
  add(resnet50_pool_specs());
  add(zoo_specs());
  for (int64_t B : {4, 64}) add(gpt2_specs(DType::F16, B));
  return all;
}

}  // namespace tr::bench
#endif  // TR_HAVE_CUDA
