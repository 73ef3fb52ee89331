// The op test table's cases (Note [the op test table], op_table.h): every
// COMPUTE op kind and each of its forms, small shapes, and the error each
// backend may show. Bounds count f32 roundings: one is 2^-24 = 6e-8 of a
// value, a sum of n terms up to n of them; f16 rounds at 2^-11 = 4.9e-4.
#include <array>
#include <utility>

#include "framework/ops/compute/add.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/bn_relu_pool.h"
#include "framework/ops/compute/classifier_head.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/input_prep.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/compute/softmax_xent.h"
#include "framework/ops/compute/tta_mean.h"
#include "tests/op_table.h"
#include "tests/op_table_bounds.h"

namespace tr::test {
namespace {

// sums = BnStats(x), in x's statistics type.
HostTensor sums_of(const HostTensor& x, const OpAttrs& a, const VariantDims& v) {
  HostTensor s(dtype_of(Elem::Stat, x.dtype()), {2, x.shape()[x.shape().rank - 1]});
  cpu_op(bn_stats_cpu, {&x}, {&s}, a, v);
  return s;
}

// The forward's (batch, affine) for x with gamma = 1 + x's first values, beta 0.1.
std::pair<HostTensor, HostTensor> bn_forward_of(const HostTensor& x, const OpAttrs& a, const VariantDims& v) {
  const int64_t C = x.shape()[x.shape().rank - 1];
  HostTensor gamma(x.dtype(), {C}), beta(x.dtype(), {C});
  for (int64_t c = 0; c < C; ++c) {
    gamma.set(c, 1.0 + 0.25 * x.get(c));
    beta.set(c, 0.1);
  }
  const HostTensor s = sums_of(x, a, v);
  HostTensor y(x.dtype(), x.shape()), batch(s.dtype(), s.shape()), affine(s.dtype(), s.shape());
  cpu_op(bn_relu_apply_cpu, {&x, &s, &gamma, &beta}, {&y, &batch, &affine}, a, v);
  return {batch, affine};
}

OpAttrs bn_attrs(bool relu = true) {
  OpAttrs a;
  a.relu = relu;
  a.eps = 1e-3f;
  return a;
}

// ---------------------------------------------------------------- cases

void input_cases(std::vector<OpCase>& t) {
  OpCase c;
  c.name = "input_prep 8x28x28x3 -> 6x20x20, normalised";
  c.kind = OpKind::InputPrep;
  c.in = {{Elem::U8, {8, 28, 28, 3}, Fill::Pixels}, {Elem::I32, {8}, Fill::Labels, 0, 10}};
  c.out = {Elem::T, Elem::I32};
  c.variant = {6, 12, 20, 20};
  for (int ch = 0; ch < 3; ++ch) c.attrs.norm_mean[ch] = 0.2f + 0.1f * ch, c.attrs.norm_std[ch] = 0.3f + 0.05f * ch;
  c.cpu_f32 = kOneRounding, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "(u8/255 - mean)/std rounded once; the GPU evaluates the same float formula";
  t.push_back(c);
  c.name = "input_prep with flip, translate, cutout";
  c.in = {{Elem::U8, {8, 28, 28, 1}, Fill::Pixels}, {Elem::I32, {8}, Fill::Labels, 0, 10}};
  c.variant = {8, 16, 28, 28};
  c.attrs.aug_flip = true, c.attrs.aug_translate = 3, c.attrs.aug_cutout = 9, c.attrs.aug_seed = 77;
  t.push_back(c);
  c.name = "input_prep with flip-TTA (2N images)";
  c.attrs.aug_flip = false, c.attrs.aug_translate = 0, c.attrs.aug_cutout = 0, c.attrs.tta_flip = true;
  t.push_back(c);
  c = {};
  c.name = "tta_mean 2x7 -> 7x10";
  c.kind = OpKind::TtaMean;
  c.in = {{Elem::T, {14, 10}, Fill::Uniform, -4, 4}};
  c.out = {Elem::T};
  c.cpu_f32 = kOneRounding, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "(a + b) / 2 rounded once, the same formula on the GPU";
  t.push_back(c);
}

void conv_cases(std::vector<OpCase>& t) {
  struct Geom {
    Shape x;
    int64_t k;
    int r, stride, pad;
  };
  for (const Geom& g : {Geom{{2, 6, 5, 3}, 4, 3, 1, 1}, Geom{{2, 7, 7, 4}, 6, 3, 2, 1}, Geom{{1, 9, 8, 2}, 3, 5, 2, 2},
                        Geom{{2, 5, 5, 8}, 8, 1, 1, 0}}) {
    const OpAttrs a = window(g.r, g.stride, g.pad);
    const int64_t ho = conv_out_size(g.x[1], g.r, g.stride, g.pad), wo = conv_out_size(g.x[2], g.r, g.stride, g.pad);
    const Shape w{g.k, g.r, g.r, g.x[3]}, y{g.x[0], ho, wo, g.k};
    const std::string geom = cat(g.x.str(), " K=", g.k, " ", g.r, "x", g.r, "/s", g.stride, "/p", g.pad);
    OpCase c;
    c.attrs = a;
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuConv, c.gpu_f16 = kGpuConvF16;
    c.why = "sums of up to R*R*C (<= 200) f32 products: 1e-6 is 16 roundings in L2; the GPU sums in other orders";
    c.name = "conv_fwd " + geom;
    c.kind = OpKind::ConvFwd;
    c.in = {{Elem::T, g.x}, {Elem::T, w, Fill::Uniform, -0.5, 0.5}};
    c.out = {Elem::T};
    t.push_back(c);
    c.name = "conv_bwd_data " + geom;
    c.kind = OpKind::ConvBwdData;
    c.in = {{Elem::T, y}, {Elem::T, w, Fill::Uniform, -0.5, 0.5}, {Elem::T, g.x}};
    t.push_back(c);
    c.name = "conv_bwd_filter " + geom;
    c.kind = OpKind::ConvBwdFilter;
    c.in = {{Elem::T, g.x}, {Elem::T, y}};
    c.cpu_f32 = 2e-6;
    c.why = "sums over N*Ho*Wo (<= 98) pixels of f32 products; the GPU sums in other orders";
    t.push_back(c);
  }
}

void bn_cases(std::vector<OpCase>& t) {
  const Shape xs{4, 3, 5, 6};
  const VariantDims v{4, 4, 0, 0};
  const int64_t C = xs[3];
  const std::string shape = xs.str();
  for (bool relu : {true, false}) {
    const OpAttrs a = bn_attrs(relu);
    const std::string tag = relu ? " + relu" : "";
    OpCase c;
    c.attrs = a;
    c.variant = v;
    c.cpu_f32 = 2e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
    c.why = "the statistics are sums of 60 values per channel (in double on the CPU, f32 partials on the GPU)";
    c.name = "bn_stats " + shape;
    c.kind = OpKind::BnStats;
    c.in = {{Elem::T, xs, Fill::Uniform, -1, 2}};
    c.out = {Elem::Stat};
    if (relu) t.push_back(c);
    c.name = "bn_relu_apply " + shape + tag;
    c.kind = OpKind::BnReluApply;
    c.in = {{Elem::T, xs, Fill::Distinct, -1, 2},
            {Elem::Stat, {2, C}},
            {Elem::T, {C}, Fill::Uniform, 0.5, 1.5},
            {Elem::T, {C}, Fill::Uniform, -0.5, 0.5}};
    c.out = {Elem::T, Elem::Stat, Elem::Stat};
    c.derive = [a, v](std::vector<HostTensor>& in) { in[1] = sums_of(in[0], a, v); };
    t.push_back(c);
    c.name = "bn_add_relu_apply " + shape + tag;
    c.kind = OpKind::BnAddReluApply;
    c.in.push_back({Elem::T, xs, Fill::Uniform, -1, 1});
    t.push_back(c);
    c.name = "bn_stats_relu_apply " + shape + tag;
    c.kind = OpKind::BnStatsReluApply;
    c.in = {{Elem::T, xs, Fill::Distinct, -1, 2},
            {Elem::T, {C}, Fill::Uniform, 0.5, 1.5},
            {Elem::T, {C}, Fill::Uniform, -0.5, 0.5}};
    c.out = {Elem::T, Elem::Stat, Elem::Stat, Elem::Stat};
    c.derive = nullptr;
    t.push_back(c);
    // The backward, from the forward's own statistics of x.
    const auto with_forward = [a, v](int affine, int batch, int x) {
      return [a, v, affine, batch, x](std::vector<HostTensor>& in) {
        auto [b, f] = bn_forward_of(in[size_t(x)], a, v);
        in[size_t(batch)] = b;
        in[size_t(affine)] = f;
      };
    };
    c.name = "bn_relu_bwd_reduce " + shape + tag;
    c.kind = OpKind::BnReluBwdReduce;
    c.in = {{Elem::T, xs}, {Elem::Stat, {2, C}}, {Elem::T, xs, Fill::Distinct, -1, 2}, {Elem::Stat, {2, C}}};
    c.out = {Elem::T, Elem::T, Elem::Stat};
    c.derive = with_forward(1, 3, 2);
    t.push_back(c);
    c.name = "relu_bwd_bn_reduce " + shape + tag;
    c.kind = OpKind::ReluBwdBnReduce;
    c.in = {{Elem::T, xs},
            {Elem::Stat, {2, C}},
            {Elem::T, xs, Fill::Distinct, -1, 2},
            {Elem::Stat, {2, C}},
            {Elem::T, xs, Fill::Distinct, -1, 1}};
    c.out = {Elem::T, Elem::T, Elem::Stat, Elem::T};
    t.push_back(c);
    c.name = "relu_bwd_add_bn_reduce " + shape + tag;
    c.kind = OpKind::ReluBwdAddBnReduce;
    c.in.push_back({Elem::T, xs});
    t.push_back(c);
    c.name = "bn_relu_bwd_apply " + shape + tag;
    c.kind = OpKind::BnReluBwdApply;
    c.in = {{Elem::T, xs},
            {Elem::Stat, {2, C}},
            {Elem::T, xs, Fill::Distinct, -1, 2},
            {Elem::Stat, {2, C}},
            {Elem::T, {C}, Fill::Uniform, 0.5, 1.5},
            {Elem::Stat, {2, C}}};
    c.out = {Elem::T};
    c.derive = [a, v, fwd = with_forward(1, 3, 2)](std::vector<HostTensor>& in) {
      fwd(in);
      HostTensor dg(in[0].dtype(), {in[4].numel()}), db = dg, ds(in[1].dtype(), in[1].shape());
      cpu_op(bn_relu_bwd_reduce_cpu, {&in[0], &in[1], &in[2], &in[3]}, {&dg, &db, &ds}, a, v);
      in[5] = ds;
    };
    t.push_back(c);
    c.name = "bn_relu_bwd_reduce_apply " + shape + tag;
    c.kind = OpKind::BnReluBwdReduceApply;
    c.in.pop_back();
    c.out = {Elem::T, Elem::T, Elem::T, Elem::Stat};
    c.derive = with_forward(1, 3, 2);
    t.push_back(c);
    c.name = "bn_relu_infer " + shape + tag;
    c.kind = OpKind::BnReluInfer;
    c.in = {{Elem::T, xs, Fill::Distinct, -1, 2}, {Elem::Stat, {2, C}, Fill::Uniform, 0.5, 1.5}};
    c.out = {Elem::T};
    c.derive = nullptr;
    c.cpu_f32 = kOneRounding, c.gpu_f32 = kOneRounding, c.gpu_f16 = kGpuF16;
    c.why = "scale * x + shift rounded once (an FMA on the GPU, at most one rounding apart)";
    t.push_back(c);
  }
  OpCase c;
  c.name = "bn_fold C=6";
  c.kind = OpKind::BnFold;
  c.in = {{Elem::Stat, {C}, Fill::Uniform, 0.5, 1.5}, {Elem::Stat, {C}}, {Elem::Stat, {2, C}, Fill::Uniform, 0.1, 2}};
  c.out = {Elem::Stat};
  c.attrs = bn_attrs();
  c.cpu_f32 = kOneRounding, c.gpu_f32 = kOneRounding;
  c.why = "scale and shift formed in double, rounded once to f32";
  t.push_back(c);
}

void pool_cases(std::vector<OpCase>& t) {
  const Shape xs{2, 6, 8, 5};
  const VariantDims v{2, 2, 0, 0};
  OpCase c;
  c.variant = v;
  c.cpu_f32 = kExact, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "a maximum and its routing are exact in any type";
  for (const OpAttrs& w : {window(2, 2, 0), window(3, 2, 1), window(3, 1, 1)}) {
    const std::string geom = cat(xs.str(), " ", w.kernel, "x", w.kernel, "/s", w.stride, "/p", w.pad);
    c.attrs = w;
    c.name = "maxpool_fwd " + geom;
    c.kind = OpKind::MaxPoolFwd;
    c.in = {{Elem::T, xs, Fill::Distinct}};
    c.out = {Elem::T};
    c.derive = nullptr;
    t.push_back(c);
    c.name = "maxpool_argmax_fwd " + geom;
    c.kind = OpKind::MaxPoolArgmaxFwd;
    c.out = {Elem::T, Elem::U8};
    t.push_back(c);
    const Shape ys = case_outputs(c, case_inputs(c, DType::F32), DType::F32)[0].shape();
    if (w.stride < w.kernel) {  // overlapping windows
      c.cpu_f32 = 6e-7, c.gpu_f32 = 1e-6, c.gpu_f16 = kGpuF16;
      c.why = "the pool is exact; an input that wins several overlapping windows sums up to 9 gradients";
    }
    c.name = "maxpool_bwd " + geom;
    c.kind = OpKind::MaxPoolBwd;
    c.in = {{Elem::T, ys}, {Elem::T, xs, Fill::Distinct}, {Elem::T, ys}};
    c.out = {Elem::T};
    c.derive = [w, v](std::vector<HostTensor>& in) { cpu_op(maxpool_fwd_cpu, {&in[1]}, {&in[2]}, w, v); };
    t.push_back(c);
    c.name = "maxpool_argmax_bwd " + geom;
    c.kind = OpKind::MaxPoolArgmaxBwd;
    c.in = {{Elem::T, ys}, {Elem::T, xs, Fill::Distinct}, {Elem::U8, ys}};
    c.derive = [w, v](std::vector<HostTensor>& in) {
      HostTensor y(in[1].dtype(), in[2].shape());
      cpu_op(maxpool_argmax_fwd_cpu, {&in[1]}, {&y, &in[2]}, w, v);
    };
    t.push_back(c);
    c.cpu_f32 = kExact, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
    c.why = "a maximum and its routing are exact in any type";
  }
  OpAttrs two = window(2, 2, 0);
  two.relu = true;
  two.eps = 1e-3f;
  c.attrs = two;
  c.name = "maxpool_stats_fwd " + xs.str() + " 2x2/s2";
  c.kind = OpKind::MaxPoolStatsFwd;
  c.in = {{Elem::T, xs, Fill::Distinct}};
  c.out = {Elem::T, Elem::U8, Elem::Stat};
  c.derive = nullptr;
  c.cpu_f32 = 2e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
  c.why = "the pool is exact; the statistics sum 24 values per channel (double on the CPU, f32 partials on the GPU)";
  t.push_back(c);
  c.name = "pool_bn_relu_apply " + xs.str() + " 2x2/s2";
  c.kind = OpKind::PoolBnReluApply;
  c.in = {{Elem::T, xs, Fill::Distinct},
          {Elem::T, {xs[3]}, Fill::Uniform, 0.5, 1.5},
          {Elem::T, {xs[3]}, Fill::Uniform, -0.5, 0.5}};
  c.out = {Elem::T, Elem::U8, Elem::Stat, Elem::T, Elem::Stat, Elem::Stat};
  t.push_back(c);
  c.name = "bn_relu_pool " + xs.str() + " 2x2/s2";
  c.kind = OpKind::BnReluPool;
  c.in = {{Elem::T, xs, Fill::Distinct},
          {Elem::Stat, {2, xs[3]}},
          {Elem::T, {xs[3]}, Fill::Uniform, 0.5, 1.5},
          {Elem::T, {xs[3]}, Fill::Uniform, -0.5, 0.5}};
  c.out = {Elem::T, Elem::U8, Elem::Stat, Elem::Stat};
  c.derive = [two, v](std::vector<HostTensor>& in) { in[1] = sums_of(in[0], two, v); };
  t.push_back(c);

  c = {};
  c.variant = v;
  c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
  c.why = "means of up to 9 values (global: 48) in f32";
  for (const OpAttrs& w : {window(2, 2, 0), window(3, 1, 0)}) {
    const std::string geom = cat(xs.str(), " ", w.kernel, "x", w.kernel, "/s", w.stride);
    c.attrs = w;
    c.name = "avgpool_fwd " + geom;
    c.kind = OpKind::AvgPoolFwd;
    c.in = {{Elem::T, xs}};
    c.out = {Elem::T};
    t.push_back(c);
    const Shape ys = case_outputs(c, case_inputs(c, DType::F32), DType::F32)[0].shape();
    c.name = "avgpool_bwd " + geom;
    c.kind = OpKind::AvgPoolBwd;
    c.in = {{Elem::T, ys}, {Elem::T, xs}};
    t.push_back(c);
  }
  c.attrs = {};
  c.name = "global_avgpool_fwd " + xs.str();
  c.kind = OpKind::GlobalAvgPoolFwd;
  c.in = {{Elem::T, xs}};
  t.push_back(c);
  c.name = "global_avgpool_bwd " + xs.str();
  c.kind = OpKind::GlobalAvgPoolBwd;
  c.in = {{Elem::T, {xs[0], xs[3]}}, {Elem::T, xs}};
  t.push_back(c);
  c.cpu_f32 = kExact, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "a maximum and its routing are exact in any type";
  c.name = "global_maxpool_fwd " + xs.str();
  c.kind = OpKind::GlobalMaxPoolFwd;
  c.in = {{Elem::T, xs, Fill::Distinct}};
  t.push_back(c);
  c.name = "global_maxpool_bwd " + xs.str();
  c.kind = OpKind::GlobalMaxPoolBwd;
  c.in = {{Elem::T, {xs[0], xs[3]}}, {Elem::T, xs, Fill::Distinct}, {Elem::T, {xs[0], xs[3]}}};
  c.derive = [v](std::vector<HostTensor>& in) { cpu_op(global_maxpool_fwd_cpu, {&in[1]}, {&in[2]}, OpAttrs{}, v); };
  t.push_back(c);
}

void dense_cases(std::vector<OpCase>& t) {
  const int64_t N = 5, K = 12, M = 7;
  for (bool bias : {false, true}) {
    OpCase c;
    c.attrs.scale = 0.125f;
    c.attrs.has_bias = bias;
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
    c.why = "dot products of 12 (data: 7, weight: 5) f32 products; cuBLAS or tr's kernels sum in other orders";
    const std::string tag = bias ? " with a bias" : "";
    c.name = cat("fc_fwd ", N, "x", K, " -> ", M, tag);
    c.kind = OpKind::FcFwd;
    c.in = {{Elem::T, {N, K}}, {Elem::T, {M, K}, Fill::Uniform, -0.5, 0.5}};
    if (bias) c.in.push_back({Elem::T, {M}});
    c.out = {Elem::T};
    t.push_back(c);
    c.name = cat("fc_bwd_weight ", N, "x", K, " -> ", M, tag);
    c.kind = OpKind::FcBwdWeight;
    c.in = {{Elem::T, {N, K}}, {Elem::T, {N, M}}};
    c.out = bias ? std::vector<Elem>{Elem::T, Elem::T} : std::vector<Elem>{Elem::T};
    t.push_back(c);
  }
  OpCase c;
  c.attrs.scale = 0.125f;
  c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
  c.why = "dot products of 7 f32 products; cuBLAS or tr's kernels sum in other orders";
  c.name = cat("fc_bwd_data ", N, "x", M, " -> ", K);
  c.kind = OpKind::FcBwdData;
  c.in = {{Elem::T, {N, M}}, {Elem::T, {M, K}, Fill::Uniform, -0.5, 0.5}, {Elem::T, {N, K}}};
  c.out = {Elem::T};
  t.push_back(c);
  c.name = cat("fc_bwd_data ", N, "x", M, " -> ", N, "x2x2x3 (x's shape)");
  c.in.back() = {Elem::T, {N, 2, 2, 3}};
  t.push_back(c);

  c = {};
  const Shape s{3, 4, 5, 6};
  c.cpu_f32 = kExact, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "a comparison with zero and a copy";
  c.name = "relu_fwd " + s.str();
  c.kind = OpKind::ReluFwd;
  c.in = {{Elem::T, s, Fill::Distinct}};
  c.out = {Elem::T};
  t.push_back(c);
  c.name = "relu_bwd " + s.str();
  c.kind = OpKind::ReluBwd;
  c.in = {{Elem::T, s}, {Elem::T, s, Fill::Distinct}};
  t.push_back(c);
  c.name = "relu_bwd_add " + s.str();
  c.kind = OpKind::ReluBwdAdd;
  c.in.push_back({Elem::T, s});
  c.cpu_f32 = kOneRounding, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "the two gradients' sum rounded once, the same sum on the GPU";
  t.push_back(c);
  for (bool relu : {false, true}) {
    c.name = "add " + s.str() + (relu ? " + relu" : "");
    c.kind = OpKind::Add;
    c.attrs.relu = relu;
    c.in = {{Elem::T, s}, {Elem::T, s}};
    c.why = "a + b rounded once, the same sum on the GPU";
    t.push_back(c);
  }
}

void loss_cases(std::vector<OpCase>& t) {
  for (bool grad : {true, false}) {
    OpCase c;
    const int64_t N = 7, M = 10;
    c.name = cat("softmax_xent ", N, "x", M, grad ? " with its gradient" : "");
    c.kind = OpKind::SoftmaxXent;
    c.attrs.label_smoothing = 0.1f;
    c.attrs.with_grad = grad;
    c.variant = {N, 2 * N, 0, 0};
    c.loss_scale = 1024.f;
    c.in = {{Elem::T, {N, M}, Fill::Uniform, -4, 4}, {Elem::I32, {N}, Fill::Labels, 0, double(M)}};
    c.out = grad ? std::vector<Elem>{Elem::T, Elem::Stat} : std::vector<Elem>{Elem::Stat};
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = 2e-3;
    c.why = "exp and a sum of 10 in f32; f16 logits round the loss at 4.9e-4 per input";
    t.push_back(c);
  }
  {  // a sequence model's: a row of logits per token
    OpCase c;
    const int64_t N = 3, T = 5, V = 12;
    c.name = cat("softmax_xent ", N, "x", T, "x", V, " per token with its gradient");
    c.kind = OpKind::SoftmaxXent;
    c.attrs.with_grad = true;
    c.attrs.label_smoothing = 0.f;
    c.variant = {N, 2 * N, T, 0};
    c.loss_scale = 1.f;
    c.in = {{Elem::T, {N, T, V}, Fill::Uniform, -4, 4}, {Elem::I32, {N, T}, Fill::Labels, 0, double(V)}};
    c.out = {Elem::T, Elem::Stat};
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = 2e-3;
    c.why = "exp and a sum of 12 in f32 per row; f16 logits round the loss at 4.9e-4 per input";
    t.push_back(c);
  }
  // Rows of a vocabulary (Note [long softmax rows]): 4104 logits, rows 16-byte
  // aligned (the vector loads, and a last piece of 8 short of a full stride);
  // 2500 logits, every other f16 row unaligned (element by element); 600 rows
  // of 2056, more rows than an H100 or H200 has SMs (several blocks in turn on
  // each SM).
  for (const auto& [N, T, V] : {std::array<int64_t, 3>{2, 3, 4104}, {2, 3, 2500}, {4, 150, 2056}}) {
    OpCase c;
    c.name = cat("softmax_xent ", N, "x", T, "x", V, " long rows with its gradient");
    c.kind = OpKind::SoftmaxXent;
    c.attrs.with_grad = true;
    c.attrs.label_smoothing = 0.1f;
    c.variant = {N, N, T, 0};
    c.loss_scale = 1024.f;  // as AMP scales it: dlogits of about 1e-2, f16 normals
    c.in = {{Elem::T, {N, T, V}, Fill::Uniform, -4, 4}, {Elem::I32, {N, T}, Fill::Labels, 0, double(V)}};
    c.out = {Elem::T, Elem::Stat};
    c.cpu_f32 = 1e-6, c.gpu_f32 = 1e-4, c.gpu_f16 = 2e-3;
    c.why =
        "sums of thousands of exp in f32 in another order: sqrt(n) roundings typically (4e-6), n at worst "
        "(2.5e-4 of the sum, which the loss and dlogits carry at most once); f16 logits as the short rows";
    t.push_back(c);
  }
  const Shape xs{6, 3, 3, 16};
  const int64_t M = 10;
  OpCase c;
  c.name = "classifier_head " + xs.str() + " -> " + std::to_string(M);
  c.kind = OpKind::ClassifierHead;
  c.attrs.scale = 0.125f;
  c.attrs.label_smoothing = 0.2f;
  c.variant = {6, 12, 0, 0};
  c.loss_scale = 512.f;
  c.in = {{Elem::T, xs, Fill::Distinct, -2, 2},
          {Elem::T, {M, xs[3]}, Fill::Uniform, -0.5, 0.5},
          {Elem::I32, {xs[0]}, Fill::Labels, 0, double(M)}};
  c.out = {Elem::T, Elem::T, Elem::Stat, Elem::T};
  c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = 2e-3;
  c.why = "the five ops' f32 sums (16 and 10 terms); f16 rounds each intermediate as the ops store it";
  t.push_back(c);
  c.name = "bn_relu_classifier_head " + xs.str() + " -> " + std::to_string(M);
  c.kind = OpKind::BnReluClassifierHead;
  const OpAttrs a = [&] {
    OpAttrs x = c.attrs;
    x.relu = true;
    x.eps = 1e-3f;
    return x;
  }();
  c.attrs = a;
  c.in.push_back({Elem::Stat, {2, xs[3]}});
  c.in.push_back({Elem::T, {xs[3]}, Fill::Uniform, 0.5, 1.5});
  c.in.push_back({Elem::T, {xs[3]}, Fill::Uniform, -0.5, 0.5});
  c.out = {Elem::T, Elem::T, Elem::Stat, Elem::T, Elem::Stat, Elem::Stat};
  c.derive = [a, v = c.variant](std::vector<HostTensor>& in) { in[3] = sums_of(in[0], a, v); };
  c.why = "the six ops' sums (54 values per channel, 16 and 10 terms); f16 rounds each intermediate";
  t.push_back(c);
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> t;
  input_cases(t);
  conv_cases(t);
  bn_cases(t);
  pool_cases(t);
  dense_cases(t);
  transformer_cases(t);
  loss_cases(t);
  return t;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = make_cases();
  return cases;
}

}  // namespace tr::test
