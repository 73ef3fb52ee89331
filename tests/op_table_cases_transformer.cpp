// The op test table's cases of a sequence model's ops (Note [the op test
// table], op_table.h): embedding, GELU, LayerNorm, attention, fc over tokens
// and TokenPrep. The bounds: op_table_bounds.h.
#include "framework/ops/compute/attention.h"
#include "framework/ops/compute/embedding.h"
#include "framework/ops/compute/fc_gelu.h"
#include "framework/ops/compute/fc_residual.h"
#include "framework/ops/compute/gelu.h"
#include "framework/ops/compute/layernorm.h"
#include "framework/ops/compute/token_prep.h"
#include "tests/op_table_bounds.h"

namespace tr::test {
namespace {

// cuBLASLt's GELU epilogue: the GEMM's f32 sums as fc's, the GELU (or its
// derivative) applied to the f32 accumulator before the one rounding (the CPU
// rounds the product first: one rounding more), with a tanh of cuBLASLt's own
// whose accuracy NVIDIA does not publish. Bounded as f16 storage is: a few
// roundings of 4.9e-4 against the CPU; f32 within the f16 bound too.
constexpr double kGpuEpilogueF32 = 1e-3;
constexpr double kGpuEpilogueF16 = 2e-3;
constexpr const char* kEpilogueWhy =
    "dot products of 24 or 40 f32 products in cuBLAS's order, then the GELU on the unrounded sum with cuBLASLt's "
    "own tanh (accuracy unpublished: bounded by f16's roundings)";

// Token and position embedding: B = 2, T = 5 over a vocabulary of 7 (so
// tokens repeat and some are absent) and a context of 8 (so wpe has rows the
// batch does not reach).
void embedding_cases(std::vector<OpCase>& t) {
  const int64_t B = 2, T = 5, C = 6, V = 7, P = 8;
  OpCase c;
  c.cpu_f32 = kOneRounding, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "one sum rounded once, the same sum on the GPU";
  c.name = cat("embedding_fwd ", B, "x", T, " of ", V, "x", C);
  c.kind = OpKind::EmbeddingFwd;
  c.in = {{Elem::I32, {B, T}, Fill::Labels, 0, double(V)}, {Elem::T, {V, C}}, {Elem::T, {P, C}}};
  c.out = {Elem::T};
  t.push_back(c);
  c.name = cat("embedding_bwd ", B, "x", T, " of ", V, "x", C);
  c.kind = OpKind::EmbeddingBwd;
  c.in = {{Elem::T, {B, T, C}},
          {Elem::I32, {B, T}, Fill::Labels, 0, double(V)},
          {Elem::I32, {B * T}},
          {Elem::T, {V, C}},
          {Elem::T, {P, C}}};
  c.out = {Elem::T, Elem::T};
  c.derive = [](std::vector<HostTensor>& in) {
    embedding_order(in[1].as<int32_t>(), in[1].numel(), in[2].as<int32_t>());
  };
  c.cpu_f32 = 1e-6;
  c.why = "sums of at most 5 terms in the batch's order on both backends (f32 against f64: a rounding each)";
  t.push_back(c);
  // Runs longer than a block (1,200 tokens of 3 ids: about 400 each, not a
  // multiple of a thread's 32 loads in flight). With 300 channels the kernel
  // has a thread per channel (a block of 320, its last warp part idle); with
  // 1,100 more than a thread's slots over a block (4 x 256), each thread over
  // two sets of channels. The run's end is found over several rounds.
  const int64_t LB = 4, LT = 300, LV = 3;
  for (const int64_t LC : {int64_t(300), int64_t(1100)}) {
    c.name = cat("embedding_bwd ", LB, "x", LT, " of ", LV, "x", LC, " long runs");
    c.in = {{Elem::T, {LB, LT, LC}},
            {Elem::I32, {LB, LT}, Fill::Labels, 0, double(LV)},
            {Elem::I32, {LB * LT}},
            {Elem::T, {LV, LC}},
            {Elem::T, {LT, LC}}};
    c.cpu_f32 = 5e-5;
    c.why =
        "sums of about 400 terms in the batch's order on both backends: the same bits; f32 against f64, 400 "
        "roundings of 6e-8 at worst (2.4e-5)";
    t.push_back(c);
  }
}

// A sequence model's input: 4 windows of 9 tokens over a vocabulary of 6 (so
// ids repeat), a variant of 3 samples of 5 tokens; exact on both backends.
void token_prep_cases(std::vector<OpCase>& t) {
  OpCase c;
  c.name = "token_prep [4,9] windows -> 3x5";
  c.kind = OpKind::TokenPrep;
  c.variant = {3, 3, 5, 0};
  c.in = {{Elem::I32, {4, 9}, Fill::Labels, 0, 6}};
  c.out = {Elem::I32, Elem::I32, Elem::I32};
  c.cpu_f32 = kExact, c.gpu_f32 = kExact, c.gpu_f16 = kExact;
  c.why = "copies, and the one permutation that sorts by (id, position)";
  t.push_back(c);
}

// The linear layer and its GELU in one op (fc_gelu.h), as the MLP's up
// projection (K -> M, the GELU over M) and the down projection's data gradient
// (M -> K outputs, the GELU over K): M = 40 and K = 24 are multiples of 8 (the
// epilogue's aux matrix) and M is past the small-fc kernels.
void fc_gelu_cases(std::vector<OpCase>& t, int64_t B, int64_t T, int64_t K, int64_t M) {
  for (bool bias : {false, true}) {
    OpCase c;
    c.attrs.fc_last_dim = true;
    c.attrs.has_bias = bias;
    c.attrs.scale = 0.5f;
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuEpilogueF32, c.gpu_f16 = kGpuEpilogueF16;
    c.why = kEpilogueWhy;
    c.name = cat("fc_gelu_fwd [", B, ",", T, ",", K, "] -> ", M, " per token", bias ? " with a bias" : "");
    c.kind = OpKind::FcGeluFwd;
    c.in = {{Elem::T, {B, T, K}, Fill::Uniform, -2, 2}, {Elem::T, {M, K}, Fill::Uniform, -0.5, 0.5}};
    if (bias) c.in.push_back({Elem::T, {M}});
    c.out = {Elem::T, Elem::T};
    t.push_back(c);
  }
  OpCase c;
  c.attrs.fc_last_dim = true;
  c.attrs.scale = 0.5f;
  c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuEpilogueF32, c.gpu_f16 = kGpuEpilogueF16;
  c.why = kEpilogueWhy;
  c.name = cat("fc_bwd_data_gelu [", B, ",", T, ",", M, "] -> ", K, " per token");
  c.kind = OpKind::FcBwdDataGelu;
  c.in = {
      {Elem::T, {B, T, M}}, {Elem::T, {M, K}, Fill::Uniform, -0.5, 0.5}, {Elem::T, {B, T, K}, Fill::Uniform, -4, 4}};
  c.out = {Elem::T};
  t.push_back(c);
}

// The linear layer and the residual join after it in one op (fc_residual.h),
// as a block's projections: K -> M = 40 outputs (past the small-fc kernels)
// added to a residual stream r[B,T,M].
void fc_residual_cases(std::vector<OpCase>& t, int64_t B, int64_t T, int64_t K, int64_t M) {
  for (bool bias : {false, true}) {
    OpCase c;
    c.attrs.fc_last_dim = true;
    c.attrs.has_bias = bias;
    c.attrs.scale = 0.5f;
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
    c.why =
        "dot products of 24 f32 products in cuBLAS's order, the residual added to the unrounded sum (the CPU "
        "rounds the product to T first: one rounding more)";
    c.name = cat("fc_residual_fwd [", B, ",", T, ",", K, "] -> ", M, " per token", bias ? " with a bias" : "");
    c.kind = OpKind::FcResidualFwd;
    c.in = {{Elem::T, {B, T, K}, Fill::Uniform, -2, 2},
            {Elem::T, {M, K}, Fill::Uniform, -0.5, 0.5},
            {Elem::T, {B, T, M}, Fill::Uniform, -2, 2}};
    if (bias) c.in.push_back({Elem::T, {M}});
    c.out = {Elem::T};
    t.push_back(c);
  }
}

// A transformer's linear layers: tokens [B,T,K] as rows (fc_last_dim), with
// M = 40 outputs, past the small-fc kernels (kSmallFcMaxOutputs), so the GPU
// runs cuBLAS (and cuBLASLt's bias epilogue).
void token_fc_cases(std::vector<OpCase>& t) {
  const int64_t B = 2, T = 5, K = 24, M = 40;
  for (bool bias : {false, true}) {
    OpCase c;
    c.attrs.fc_last_dim = true;
    c.attrs.has_bias = bias;
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
    c.why = "dot products of 24 f32 products (of 10 for dw); cuBLAS sums in other orders";
    const std::string tag = bias ? " with a bias" : "";
    c.name = cat("fc_fwd [", B, ",", T, ",", K, "] -> ", M, " per token", tag);
    c.kind = OpKind::FcFwd;
    c.in = {{Elem::T, {B, T, K}}, {Elem::T, {M, K}, Fill::Uniform, -0.5, 0.5}};
    if (bias) c.in.push_back({Elem::T, {M}});
    c.out = {Elem::T};
    t.push_back(c);
    c.name = cat("fc_bwd_weight [", B, ",", T, ",", K, "] -> ", M, " per token", tag);
    c.kind = OpKind::FcBwdWeight;
    c.in = {{Elem::T, {B, T, K}}, {Elem::T, {B, T, M}}};
    c.out = bias ? std::vector<Elem>{Elem::T, Elem::T} : std::vector<Elem>{Elem::T};
    t.push_back(c);
  }
  OpCase c;
  c.attrs.fc_last_dim = true;
  c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
  c.why = "dot products of 40 f32 products; cuBLAS sums in other orders";
  c.name = cat("fc_bwd_data [", B, ",", T, ",", M, "] -> ", K, " per token");
  c.kind = OpKind::FcBwdData;
  c.in = {{Elem::T, {B, T, M}}, {Elem::T, {M, K}, Fill::Uniform, -0.5, 0.5}, {Elem::T, {B, T, K}}};
  c.out = {Elem::T};
  t.push_back(c);
  fc_gelu_cases(t, B, T, K, M);
  fc_residual_cases(t, B, T, K, M);
}

// Causal attention: a short sequence with head dim 8; one of 70 tokens (past
// the CUDA kernels' 64-row blocks and 32-row tiles) with head dim 64, as
// GPT-2's; head dim 128, the widest kernel; and 300 tokens of head dim 64,
// several of the f16 tensor-core kernels' tiles with a ragged last one.
void attention_cases(std::vector<OpCase>& t) {
  struct Geometry {
    int64_t B, T, C;
    int heads;
  };
  for (const Geometry& g :
       {Geometry{2, 5, 16, 2}, Geometry{1, 70, 128, 2}, Geometry{1, 33, 384, 3}, Geometry{1, 300, 128, 2}}) {
    OpCase c;
    c.attrs.heads = g.heads;
    const Shape qkv{g.B, g.T, 3 * g.C}, y{g.B, g.T, g.C}, lse{g.B, g.heads, g.T};
    const std::string tag = cat(qkv.str(), ", ", g.heads, " heads of ", g.C / g.heads);
    c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
    c.why =
        "the CPU sums in double for any storage and rounds each output once; the GPU sums up to 300 scores and "
        "values in f32 with its own expf (2 ulp); f16 tensor cores round p to f16 before p.v";
    c.name = "attention_fwd " + tag;
    c.kind = OpKind::AttentionFwd;
    c.in = {{Elem::T, qkv}};
    c.out = {Elem::T, Elem::Stat};
    t.push_back(c);
    c.name = "attention_bwd " + tag;
    c.kind = OpKind::AttentionBwd;
    c.in = {{Elem::T, y}, {Elem::T, qkv}, {Elem::T, y}, {Elem::Stat, lse}};
    c.out = {Elem::T, Elem::Stat};
    const OpAttrs a = c.attrs;
    c.derive = [a](std::vector<HostTensor>& in) {  // y and lse = the forward's of qkv
      cpu_op(attention_fwd_cpu, {&in[1]}, {&in[2], &in[3]}, a, VariantDims{4, 4, 0, 0});
    };
    c.why =
        "as the forward, and ds = p (dy.v - delta) cancels in part: the f32 lse as stored (one rounding) and tens "
        "of f32 roundings in each sum";
    t.push_back(c);
  }
}

}  // namespace

// The transformer's elementwise ops, over a GPT's [B, T, C] activations.
void transformer_cases(std::vector<OpCase>& t) {
  const Shape s{2, 5, 12};
  OpCase c;
  c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
  c.why =
      "tanh from each backend's libm (within 2 ulp) and a few f32 roundings of the cubic; the GPU's compiler may "
      "fuse the products (FMA)";
  c.name = "gelu_fwd " + s.str();
  c.kind = OpKind::GeluFwd;
  c.in = {{Elem::T, s, Fill::Uniform, -4, 4}};  // both tails and the curved middle
  c.out = {Elem::T};
  t.push_back(c);
  c.name = "gelu_bwd " + s.str();
  c.kind = OpKind::GeluBwd;
  c.in = {{Elem::T, s}, {Elem::T, s, Fill::Uniform, -4, 4}};
  t.push_back(c);

  // LayerNorm over C = 12, 10 rows; x off-centre so the mean matters.
  const int64_t C = s[2], rows = s[0] * s[1];
  OpAttrs ln;
  ln.eps = 1e-5f;
  c = {};
  c.attrs = ln;
  c.cpu_f32 = 1e-6, c.gpu_f32 = kGpuF32, c.gpu_f16 = kGpuF16;
  c.why =
      "the row's mean and rstd rounded once to f32 as stored, a few f32 roundings per value; the GPU sums 12 "
      "terms in f32 in another order";
  c.name = "layernorm_fwd " + s.str();
  c.kind = OpKind::LayerNormFwd;
  c.in = {{Elem::T, s, Fill::Uniform, -1, 3}, {Elem::T, {C}, Fill::Uniform, 0.5, 1.5}, {Elem::T, {C}}};
  c.out = {Elem::T, Elem::Stat};
  t.push_back(c);
  c.name = "layernorm_bwd " + s.str();
  c.kind = OpKind::LayerNormBwd;
  c.in = {{Elem::T, s},
          {Elem::T, s, Fill::Uniform, -1, 3},
          {Elem::T, {C}, Fill::Uniform, 0.5, 1.5},
          {Elem::Stat, {rows, 2}}};
  c.out = {Elem::T, Elem::T, Elem::T};
  c.derive = [ln](std::vector<HostTensor>& in) {  // stats = the forward's of x
    HostTensor beta(in[1].dtype(), {in[2].numel()}), y(in[1].dtype(), in[1].shape());
    cpu_op(layernorm_fwd_cpu, {&in[1], &in[2], &beta}, {&y, &in[3]}, ln, VariantDims{4, 4, 0, 0});
  };
  c.why = "the input gradient's two row means cancel in part: tens of f32 roundings; dgamma and dbeta sum 10 rows";
  t.push_back(c);
  // 300 rows over C = 20: the CUDA kernel's 128 row groups and a block of 8
  // channels that C does not fill.
  const Shape wide{3, 100, 20};
  c.name = "layernorm_bwd " + wide.str();
  c.in = {{Elem::T, wide},
          {Elem::T, wide, Fill::Uniform, -1, 3},
          {Elem::T, {wide[2]}, Fill::Uniform, 0.5, 1.5},
          {Elem::Stat, {wide[0] * wide[1], 2}}};
  c.why = "as above; dgamma and dbeta sum 300 rows in 128 groups on the GPU, in row order on the CPU";
  t.push_back(c);
  // With the fan-in's r added to dx as Add does (the same bits as the two ops, layernorm.h).
  c.name = "layernorm_bwd_add " + wide.str();
  c.kind = OpKind::LayerNormBwdAdd;
  c.in.push_back({Elem::T, wide, Fill::Uniform, -2, 2});
  c.why = "as above, then r added: one rounding more";
  t.push_back(c);
  embedding_cases(t);
  attention_cases(t);
  token_fc_cases(t);
  token_prep_cases(t);
}

}  // namespace tr::test
