// The op test table's gradient cases (Note [the op test table], op_table.h):
// each gradient kind against central differences of its forward, in f64.
// The loss is the forward's output projected on fixed values r (or, for the
// losses, their own loss sum); the gradient is the backward ops' result for
// dy = r. Inputs that feed a maximum or a ReLU are distinct values, so no
// difference step crosses a tie or a kink. Central differences with h = 1e-5
// in f64 are exact for the piecewise linear ops up to cancellation (1e-16 /
// 1e-5 relative) and within h^2 times the third derivative for the smooth
// ones (softmax, the BatchNorm's rsqrt): 1e-6 bounds both with room.
#include <utility>

#include "framework/ops/compute/attention.h"
#include "framework/ops/compute/avgpool.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/classifier_head.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/compute/embedding.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/fc_gelu.h"
#include "framework/ops/compute/gelu.h"
#include "framework/ops/compute/layernorm.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/compute/softmax_xent.h"
#include "tests/op_table.h"

namespace tr::test {
namespace {

constexpr double kFd = 1e-6;  // the bound above
constexpr DType F64 = DType::F64;

// Fixed projection values for an output of shape s.
HostTensor proj(const Shape& s) {
  Rng rng(0x5eedull + uint64_t(s.numel()));
  HostTensor r(F64, s);
  r.fill_uniform(rng, -1, 1);
  return r;
}

double dot(const HostTensor& a, const HostTensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get(i) * b.get(i);
  return s;
}

// One CPU op in f64: outputs of the given shapes (f64, or u8 where asked).
std::vector<HostTensor> op(OpFn fn, const std::vector<const HostTensor*>& in, const std::vector<HostTensor>& outs,
                           const OpAttrs& a, const VariantDims& v = {4, 4, 0, 0}, float loss_scale = 1.f) {
  OpRunner r;
  r.attrs = a;
  r.variant = v;
  r.scalars.loss_scale = loss_scale;
  std::vector<HostTensor> out = outs;
  std::vector<HostTensor*> p;
  for (HostTensor& h : out) p.push_back(&h);
  r.run(fn, in, p);
  return out;
}

HostTensor like(const Shape& s) { return HostTensor(F64, s); }

void conv_grads(std::vector<GradCase>& t) {
  const Shape xs{2, 5, 6, 3}, ws{4, 3, 3, 3};
  const OpAttrs a = window(3, 2, 1);
  const Shape ys{2, conv_out_size(5, 3, 2, 1), conv_out_size(6, 3, 2, 1), 4};
  const auto loss = [=](const std::vector<HostTensor>& in) {
    return dot(op(conv_fwd_cpu, {&in[0], &in[1]}, {like(ys)}, a)[0], proj(ys));
  };
  GradCase g;
  g.in = {{Elem::T, xs}, {Elem::T, ws, Fill::Uniform, -0.5, 0.5}};
  g.loss = loss;
  g.tol = kFd;
  g.why = "the convolution is linear in x and in w";
  g.name = "conv_bwd_data " + xs.str() + " 3x3/s2/p1, d/dx";
  g.kind = OpKind::ConvBwdData;
  g.wrt = 0;
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor r = proj(ys);
    return op(conv_bwd_data_cpu, {&r, &in[1], &in[0]}, {like(xs)}, a)[0];
  };
  t.push_back(g);
  g.name = "conv_bwd_filter " + xs.str() + " 3x3/s2/p1, d/dw";
  g.kind = OpKind::ConvBwdFilter;
  g.wrt = 1;
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor r = proj(ys);
    return op(conv_bwd_filter_cpu, {&in[0], &r}, {like(ws)}, a)[0];
  };
  t.push_back(g);
}

void dense_grads(std::vector<GradCase>& t) {
  const int64_t N = 4, K = 6, M = 5;
  OpAttrs a;
  a.scale = 0.5f;
  a.has_bias = true;
  const auto loss = [=](const std::vector<HostTensor>& in) {
    return dot(op(fc_fwd_cpu, {&in[0], &in[1], &in[2]}, {like({N, M})}, a)[0], proj({N, M}));
  };
  GradCase g;
  g.in = {{Elem::T, {N, K}}, {Elem::T, {M, K}}, {Elem::T, {M}}};
  g.loss = loss;
  g.tol = kFd;
  g.why = "the layer is linear in x, w and b";
  g.name = "fc_bwd_data 4x6 -> 5, d/dx";
  g.kind = OpKind::FcBwdData;
  g.wrt = 0;
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor r = proj({N, M});
    return op(fc_bwd_data_cpu, {&r, &in[1], &in[0]}, {like({N, K})}, a)[0];
  };
  t.push_back(g);
  g.kind = OpKind::FcBwdWeight;
  for (int wrt : {1, 2}) {
    g.name = wrt == 1 ? "fc_bwd_weight 4x6 -> 5, d/dw" : "fc_bwd_weight 4x6 -> 5, d/db";
    g.wrt = wrt;
    g.grad = [=](const std::vector<HostTensor>& in) {
      const HostTensor r = proj({N, M});
      return op(fc_bwd_weight_cpu, {&in[0], &r}, {like({M, K}), like({M})}, a)[size_t(wrt - 1)];
    };
    t.push_back(g);
  }

  const Shape s{3, 4, 5};
  g = {};
  g.name = "relu_bwd " + s.str();
  g.kind = OpKind::ReluBwd;
  g.in = {{Elem::T, s, Fill::Distinct}};
  g.loss = [=](const std::vector<HostTensor>& in) {
    return dot(op(relu_fwd_cpu, {&in[0]}, {like(s)}, OpAttrs{})[0], proj(s));
  };
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor y = op(relu_fwd_cpu, {&in[0]}, {like(s)}, OpAttrs{})[0], r = proj(s);
    return op(relu_bwd_cpu, {&r, &y}, {like(s)}, OpAttrs{})[0];
  };
  g.tol = kFd;
  g.why = "piecewise linear; distinct inputs keep every kink further than h";
  t.push_back(g);

  g = {};
  g.name = "gelu_bwd " + s.str();
  g.kind = OpKind::GeluBwd;
  g.in = {{Elem::T, s, Fill::Uniform, -4, 4}};
  g.loss = [=](const std::vector<HostTensor>& in) {
    return dot(op(gelu_fwd_cpu, {&in[0]}, {like(s)}, OpAttrs{})[0], proj(s));
  };
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor r = proj(s);
    return op(gelu_bwd_cpu, {&r, &in[0]}, {like(s)}, OpAttrs{})[0];
  };
  g.tol = kFd;
  g.why = "smooth: h^2 times the third derivative, below 1 in [-4, 4]";
  t.push_back(g);

  // The MLP's down projection after the GELU (fc_gelu.h): loss = <fc(GELU(pre), w), r>
  // over tokens [2,3] of 8 channels into 5, d/dpre.
  const Shape pre{2, 3, 8}, z{2, 3, 5};
  OpAttrs fc;
  fc.fc_last_dim = true;
  fc.scale = 0.5f;
  g = {};
  g.name = "fc_bwd_data_gelu " + pre.str() + " -> 5, d/dpre";
  g.kind = OpKind::FcBwdDataGelu;
  g.in = {{Elem::T, pre, Fill::Uniform, -4, 4}, {Elem::T, {5, 8}}};
  g.loss = [=](const std::vector<HostTensor>& in) {
    const HostTensor y = op(gelu_fwd_cpu, {&in[0]}, {like(pre)}, OpAttrs{})[0];
    return dot(op(fc_fwd_cpu, {&y, &in[1]}, {like(z)}, fc)[0], proj(z));
  };
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor r = proj(z);
    return op(fc_bwd_data_gelu_cpu, {&r, &in[1], &in[0]}, {like(pre)}, fc)[0];
  };
  g.tol = kFd;
  g.why = "linear in the GELU's output, and the GELU smooth as above";
  t.push_back(g);
}

// LayerNorm's three gradients: loss = <y(x, gamma, beta), r>.
void layernorm_grads(std::vector<GradCase>& t) {
  const Shape xs{2, 3, 6};
  const int64_t C = 6;
  OpAttrs a;
  a.eps = 1e-5f;
  auto forward = [=](const std::vector<HostTensor>& in) {
    return op(layernorm_fwd_cpu, {&in[0], &in[1], &in[2]}, {like(xs), like({6, 2})}, a);
  };
  for (int wrt : {0, 1, 2}) {
    GradCase g;
    g.name = cat("layernorm_bwd ", xs.str(), ", d/d", wrt == 0 ? "x" : wrt == 1 ? "gamma" : "beta");
    g.kind = OpKind::LayerNormBwd;
    g.in = {{Elem::T, xs, Fill::Uniform, -1, 3}, {Elem::T, {C}, Fill::Uniform, 0.5, 1.5}, {Elem::T, {C}}};
    g.wrt = wrt;
    g.loss = [=](const std::vector<HostTensor>& in) { return dot(forward(in)[0], proj(xs)); };
    g.grad = [=](const std::vector<HostTensor>& in) {
      const HostTensor r = proj(xs), stats = forward(in)[1];
      return op(layernorm_bwd_cpu, {&r, &in[0], &in[1], &stats}, {like(xs), like({C}), like({C})}, a)[size_t(wrt)];
    };
    g.tol = kFd;
    g.why = "smooth in x (rsqrt of the variance, far from 0) and linear in gamma and beta";
    t.push_back(g);
  }
  // With the gradient fan-in after it (LayerNormBwdAdd): x feeds the residual too,
  // loss = <LN(x), p> + <x, q>, so d/dx = LayerNormBwd's dx + q.
  HostTensor q(F64, xs);
  Rng rng(0xfa11ull);
  q.fill_uniform(rng, -1, 1);
  GradCase g;
  g.name = cat("layernorm_bwd_add ", xs.str(), ", d/dx");
  g.kind = OpKind::LayerNormBwdAdd;
  g.in = {{Elem::T, xs, Fill::Uniform, -1, 3}, {Elem::T, {C}, Fill::Uniform, 0.5, 1.5}, {Elem::T, {C}}};
  g.wrt = 0;
  g.loss = [=](const std::vector<HostTensor>& in) { return dot(forward(in)[0], proj(xs)) + dot(in[0], q); };
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor r = proj(xs), stats = forward(in)[1];
    return op(layernorm_bwd_add_cpu, {&r, &in[0], &in[1], &stats, &q}, {like(xs), like({C}), like({C})}, a)[0];
  };
  g.tol = kFd;
  g.why = "LayerNormBwd's case plus a linear term";
  t.push_back(g);
}

// Attention's gradient with respect to qkv: loss = <y(qkv), r>, 2 heads of 8 over 6 tokens.
void attention_grads(std::vector<GradCase>& t) {
  const int64_t B = 2, T = 6, C = 16;
  OpAttrs a;
  a.heads = 2;
  const Shape qkv{B, T, 3 * C}, y{B, T, C}, lse{B, 2, T};
  auto forward = [=](const std::vector<HostTensor>& in) {
    return op(attention_fwd_cpu, {&in[0]}, {like(y), like(lse)}, a);
  };
  GradCase g;
  g.name = "attention_bwd " + qkv.str() + ", 2 heads, d/dqkv";
  g.kind = OpKind::AttentionBwd;
  g.in = {{Elem::T, qkv}};
  g.wrt = 0;
  g.loss = [=](const std::vector<HostTensor>& in) { return dot(forward(in)[0], proj(y)); };
  g.grad = [=](const std::vector<HostTensor>& in) {
    const HostTensor r = proj(y);
    const std::vector<HostTensor> f = forward(in);
    return op(attention_bwd_cpu, {&r, &in[0], &f[0], &f[1]}, {like(qkv), like(lse)}, a)[0];
  };
  g.tol = kFd;
  g.why = "smooth: softmax of scores below 3 in size (|q.k| <= 8 over sqrt(8))";
  t.push_back(g);
}

// The embedding tables' gradients: loss = <y(ids, wte, wpe), r>.
void embedding_grads(std::vector<GradCase>& t) {
  const int64_t B = 2, T = 4, C = 3, V = 5, P = 6;
  for (int wrt : {1, 2}) {
    GradCase g;
    g.name = cat("embedding_bwd ", B, "x", T, " of ", V, "x", C, wrt == 1 ? ", d/dwte" : ", d/dwpe");
    g.kind = OpKind::EmbeddingBwd;
    g.in = {{Elem::I32, {B, T}, Fill::Labels, 0, double(V)}, {Elem::T, {V, C}}, {Elem::T, {P, C}}};
    g.wrt = wrt;
    g.loss = [=](const std::vector<HostTensor>& in) {
      return dot(op(embedding_fwd_cpu, {&in[0], &in[1], &in[2]}, {like({B, T, C})}, OpAttrs{})[0], proj({B, T, C}));
    };
    g.grad = [=](const std::vector<HostTensor>& in) {
      const HostTensor r = proj({B, T, C});
      HostTensor order(DType::I32, {B * T});
      embedding_order(in[0].as<int32_t>(), B * T, order.as<int32_t>());
      return op(embedding_bwd_cpu, {&r, &in[0], &order, &in[1], &in[2]}, {like({V, C}), like({P, C})},
                OpAttrs{})[size_t(wrt - 1)];
    };
    g.tol = kFd;
    g.why = "linear in the tables";
    t.push_back(g);
  }
}

void pool_grads(std::vector<GradCase>& t) {
  const Shape xs{2, 6, 7, 3};
  struct Pool {
    std::string name;
    OpKind kind;
    OpFn fwd, bwd;
    OpAttrs a;
    Shape ys;
    bool reads_y;  // the backward takes (dy, x, y), else (dy, x)
  };
  const OpAttrs w3 = window(3, 2, 1), a3 = window(3, 2, 0);
  const std::vector<Pool> pools = {
      {"maxpool_bwd 3x3/s2/p1", OpKind::MaxPoolBwd, maxpool_fwd_cpu, maxpool_bwd_cpu, w3, {2, 3, 4, 3}, true},
      {"avgpool_bwd 3x3/s2", OpKind::AvgPoolBwd, avgpool_fwd_cpu, avgpool_bwd_cpu, a3, {2, 2, 3, 3}, false},
      {"global_maxpool_bwd",
       OpKind::GlobalMaxPoolBwd,
       global_maxpool_fwd_cpu,
       global_maxpool_bwd_cpu,
       {},
       {2, 3},
       true},
      {"global_avgpool_bwd",
       OpKind::GlobalAvgPoolBwd,
       global_avgpool_fwd_cpu,
       global_avgpool_bwd_cpu,
       {},
       {2, 3},
       false}};
  for (const Pool& p : pools) {
    GradCase g;
    g.name = p.name + " " + xs.str();
    g.kind = p.kind;
    g.in = {{Elem::T, xs, Fill::Distinct}};
    g.loss = [p](const std::vector<HostTensor>& in) {
      return dot(op(p.fwd, {&in[0]}, {like(p.ys)}, p.a)[0], proj(p.ys));
    };
    g.grad = [p, xs](const std::vector<HostTensor>& in) {
      const HostTensor y = op(p.fwd, {&in[0]}, {like(p.ys)}, p.a)[0], r = proj(p.ys);
      if (p.reads_y) return op(p.bwd, {&r, &in[0], &y}, {like(xs)}, p.a)[0];
      return op(p.bwd, {&r, &in[0]}, {like(xs)}, p.a)[0];
    };
    g.tol = kFd;
    g.why = "a maximum routes, a mean spreads: linear where no tie moves (distinct inputs)";
    t.push_back(g);
  }
}

void bn_grads(std::vector<GradCase>& t) {
  const Shape xs{4, 3, 2, 5};
  const int64_t C = xs[3];
  const VariantDims v{4, 4, 0, 0};
  OpAttrs a;
  a.relu = true;
  a.eps = 1e-3f;
  // y = BnReluApply(x, BnStats(x), gamma, beta); loss = <y, r>.
  struct Fwd {
    HostTensor y, batch, affine;
  };
  const auto forward = [=](const std::vector<HostTensor>& in) {
    const HostTensor s = op(bn_stats_cpu, {&in[0]}, {like({2, C})}, a, v)[0];
    auto o = op(bn_relu_apply_cpu, {&in[0], &s, &in[1], &in[2]}, {like(xs), like({2, C}), like({2, C})}, a, v);
    return Fwd{o[0], o[1], o[2]};
  };
  // The backward for dy = r: dgamma, dbeta, dsums, then dx.
  const auto backward = [=](const std::vector<HostTensor>& in) {
    const Fwd f = forward(in);
    const HostTensor r = proj(xs);
    auto red =
        op(bn_relu_bwd_reduce_cpu, {&r, &f.affine, &in[0], &f.batch}, {like({C}), like({C}), like({2, C})}, a, v);
    const HostTensor dx =
        op(bn_relu_bwd_apply_cpu, {&r, &f.affine, &in[0], &f.batch, &in[1], &red[2]}, {like(xs)}, a, v)[0];
    return std::vector<HostTensor>{dx, red[0], red[1]};
  };
  GradCase g;
  g.in = {{Elem::T, xs, Fill::Distinct, -1, 2},
          {Elem::T, {C}, Fill::Uniform, 0.5, 1.5},
          {Elem::T, {C}, Fill::Uniform, -0.5, 0.5}};
  g.loss = [=](const std::vector<HostTensor>& in) { return dot(forward(in).y, proj(xs)); };
  g.tol = kFd;
  g.why = "smooth away from the ReLU's kinks (rsqrt of the variance): h^2 terms near 1e-10";
  g.name = "bn_relu_bwd_apply " + xs.str() + " + relu, d/dx through the statistics";
  g.kind = OpKind::BnReluBwdApply;
  g.wrt = 0;
  g.grad = [=](const std::vector<HostTensor>& in) { return backward(in)[0]; };
  t.push_back(g);
  g.kind = OpKind::BnReluBwdReduce;
  for (int wrt : {1, 2}) {
    g.name = "bn_relu_bwd_reduce " + xs.str() + (wrt == 1 ? " + relu, d/dgamma" : " + relu, d/dbeta");
    g.wrt = wrt;
    g.grad = [=](const std::vector<HostTensor>& in) { return backward(in)[size_t(wrt)]; };
    t.push_back(g);
  }
}

void loss_grads(std::vector<GradCase>& t) {
  // dlogits = loss_scale * (softmax - target) / global_batch: the gradient of
  // the loss sum times loss_scale / global_batch, undone here.
  const int64_t N = 5, M = 7, global = 10;
  const float scale = 256.f;
  const VariantDims v{N, global, 0, 0};
  OpAttrs a;
  a.label_smoothing = 0.1f;
  a.with_grad = true;
  const auto unscaled = [=](HostTensor d) {
    for (int64_t i = 0; i < d.numel(); ++i) d.set(i, d.get(i) * double(global) / scale);
    return d;
  };
  GradCase g;
  g.name = "softmax_xent 5x7, d(loss sum)/dlogits";
  g.kind = OpKind::SoftmaxXent;
  g.in = {{Elem::T, {N, M}, Fill::Uniform, -3, 3}, {Elem::I32, {N}, Fill::Labels, 0, double(M)}};
  g.loss = [=](const std::vector<HostTensor>& in) {
    return op(softmax_xent_cpu, {&in[0], &in[1]}, {like({N, M}), like({kMetricSlots})}, a, v, scale)[1].get(
        kMetricLossSum);
  };
  g.grad = [=](const std::vector<HostTensor>& in) {
    return unscaled(op(softmax_xent_cpu, {&in[0], &in[1]}, {like({N, M}), like({kMetricSlots})}, a, v, scale)[0]);
  };
  g.tol = kFd;
  g.why = "log-sum-exp is smooth: h^2 terms near 1e-10";
  t.push_back(g);

  // Per token: 5 samples of 3 tokens; the loss is a mean over global x 3 rows.
  const VariantDims vt{N, global, 3, 0};
  g.name = "softmax_xent 5x3x7 per token, d(loss sum)/dlogits";
  g.in = {{Elem::T, {N, 3, M}, Fill::Uniform, -3, 3}, {Elem::I32, {N, 3}, Fill::Labels, 0, double(M)}};
  g.loss = [=](const std::vector<HostTensor>& in) {
    return op(softmax_xent_cpu, {&in[0], &in[1]}, {like({N, 3, M}), like({kMetricSlots})}, a, vt, scale)[1].get(
        kMetricLossSum);
  };
  g.grad = [=](const std::vector<HostTensor>& in) {
    HostTensor d = op(softmax_xent_cpu, {&in[0], &in[1]}, {like({N, 3, M}), like({kMetricSlots})}, a, vt, scale)[0];
    for (int64_t i = 0; i < d.numel(); ++i) d.set(i, d.get(i) * double(global * 3) / scale);
    return d;
  };
  t.push_back(g);

  const Shape xs{N, 2, 3, 6};
  OpAttrs h = a;
  h.scale = 0.25f;
  const auto head = [=](const std::vector<HostTensor>& in) {
    return op(classifier_head_cpu, {&in[0], &in[1], &in[2]},
              {like({N, xs[3]}), like({N, M}), like({kMetricSlots}), like(xs)}, h, v, scale);
  };
  g.name = "classifier_head " + xs.str() + " -> 7, d(loss sum)/dx";
  g.kind = OpKind::ClassifierHead;
  g.in = {{Elem::T, xs, Fill::Distinct, -2, 2}, {Elem::T, {M, xs[3]}}, {Elem::I32, {N}, Fill::Labels, 0, double(M)}};
  g.wrt = 0;
  g.loss = [=](const std::vector<HostTensor>& in) { return head(in)[2].get(kMetricLossSum); };
  g.grad = [=](const std::vector<HostTensor>& in) { return unscaled(head(in)[3]); };
  g.why = "the pool routes (distinct inputs), the rest is smooth";
  t.push_back(g);
}

std::vector<GradCase> make_grads() {
  std::vector<GradCase> t;
  conv_grads(t);
  dense_grads(t);
  layernorm_grads(t);
  embedding_grads(t);
  attention_grads(t);
  pool_grads(t);
  bn_grads(t);
  loss_grads(t);
  return t;
}

}  // namespace

const std::vector<GradCase>& grad_cases() {
  static const std::vector<GradCase> cases = make_grads();
  return cases;
}

const std::vector<OpKind>& gradient_kinds() {
  static const std::vector<OpKind> kinds = {
      OpKind::ConvBwdData,    OpKind::ConvBwdFilter, OpKind::BnReluBwdReduce,  OpKind::BnReluBwdApply,
      OpKind::MaxPoolBwd,     OpKind::AvgPoolBwd,    OpKind::GlobalMaxPoolBwd, OpKind::GlobalAvgPoolBwd,
      OpKind::FcBwdData,      OpKind::FcBwdWeight,   OpKind::ReluBwd,          OpKind::SoftmaxXent,
      OpKind::ClassifierHead, OpKind::GeluBwd,       OpKind::LayerNormBwd,     OpKind::EmbeddingBwd,
      OpKind::AttentionBwd,   OpKind::FcBwdDataGelu, OpKind::LayerNormBwdAdd};
  return kinds;
}

}  // namespace tr::test
