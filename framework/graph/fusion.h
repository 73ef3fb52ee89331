#pragma once
// Note [fusion]
// After a model's graphs are emitted, fuse_graph() merges pairs of nodes that
// walk the same activations one after the other, so each pair reads and writes
// memory once instead of twice (TrainConfig::fusion; --no-fusion keeps the
// unfused graphs, to measure the gain in one run). Each rewrite below is a
// rule of the table in fusion_rules.h (pattern, guard, rewrite, over operands
// by name), with its name:
//
//   [bn_add]
//   forward:  t = BnReluApply(x, sums, gamma, beta) without ReLU, then
//             y = Add(t, r) [+ ReLU]                (a residual block's end)
//          -> y = BnAddReluApply(x, sums, gamma, beta, r) [+ ReLU]
//   [pool_stats]
//   forward:  y, argmax = MaxPoolArgmaxFwd(x) (2x2, stride 2), then
//             sums = BnStats(y)                     (a BatchNorm after a pool: cnn)
//          -> y, argmax, sums = MaxPoolStatsFwd(x)
//   [bn_pool]
//   forward:  y, batch, affine = BnReluApply(x, sums, gamma, beta), then
//             p, argmax = MaxPoolArgmaxFwd(y) (2x2, stride 2)   (a VGG block's end)
//          -> p, argmax, batch, affine = BnReluPool(x, sums, gamma, beta)
//             when only pools read y (their backward, from the winners, takes
//             y's shape: it now reads x instead), so y is never stored
//   [add_relu_bwd]
//   backward: s = Add(a, b), the gradient fan-in of a tensor, then
//             g = ReluBwd(s, y)                     (the ReLU that produced it)
//          -> g = ReluBwdAdd(a, y, b)
//   [relu_grad_reduce]
//   backward: g = ReluBwd(a, y) or ReluBwdAdd(a, y, b), then
//             dgamma, dbeta, dsums = BnReluBwdReduce(g, affine, x, batch)
//                                                   (a residual block's last BatchNorm)
//          -> dgamma, dbeta, dsums, g = ReluBwdBnReduce(a, affine, x, batch, y)
//             or ReluBwdAddBnReduce(a, affine, x, batch, y, b)
//             in the ReluBwd's place, g still stored for its other readers
//             (Note [the ReLU's gradient in the reduce], batchnorm.h)
//   [head]
//   head:     p = GlobalMaxPoolFwd(x), z = FcFwd(p, w) without bias,
//             dl, metrics = SoftmaxXent(z, labels), then in the backward
//             dp = FcBwdData(dl, w, p), dx = GlobalMaxPoolBwd(dp, x, p)   (the cnn)
//          -> p, dl, metrics, dx = ClassifierHead(x, w, labels)
//             in the pool's place, with at most kSmallFcMaxOutputs classes
//             (fc.h) and z, dp read by nothing else; the fc's weight gradient
//             stays a node of its own (it reads p and dl).
//   [head_bn]
//   head's BatchNorm (Note [the head's BatchNorm]):
//             y, batch, affine = BnReluApply(x, sums, gamma, beta), then
//             p, dl, metrics, dy = ClassifierHead(y, w, labels)      (the cnn)
//          -> p, dl, metrics, dy, batch, affine =
//                 BnReluClassifierHead(x, w, labels, sums, gamma, beta)
//             when the head's pool and pool backward are all that read y: the
//             head recomputes y as it pools and as it routes the gradient, so
//             y is never stored and its kernel is gone. The BatchNorm's
//             backward reads x and affine, not y (batchnorm.h).
//   [fc_gelu]
//   forward:  pre = FcFwd(x, w [, b]), then y = GeluFwd(pre)   (a transformer MLP's up projection)
//          -> pre, y = FcGeluFwd(x, w [, b]) in the fc's place: one cuBLASLt
//             GEMM whose epilogue stores pre (for the backward) and y
//   [fc_gelu_bwd]
//   backward: g = FcBwdData(dy, w, y), then dx = GeluBwd(g, pre)   (the down projection's data gradient)
//          -> dx = FcBwdDataGelu(dy, w, pre) in the GeluBwd's place, when only
//             the GeluBwd reads g: the GEMM's epilogue multiplies by GELU'(pre)
//             (fc_gelu.h; both only where cuBLASLt's epilogue takes the layer)
//   [fc_residual]
//   forward:  pre = FcFwd(x, w [, b]), then y = Add(r, pre)   (a transformer block's projections)
//          -> y = FcResidualFwd(x, w, r [, b]) in the Add's place, when only
//             the Add reads pre: one cuBLASLt GEMM that adds r as its C
//             matrix (fc_residual.h; with more than kSmallFcMaxOutputs outputs)
//   [ln_bwd_add]
//   backward: dx = LayerNormBwd(dy, x, gamma, stats), then s = Add(r, dx)   (the fan-in at a block's input)
//          -> s, dgamma, dbeta = LayerNormBwdAdd(dy, x, gamma, stats, r) in
//             the Add's place, when only the Add reads dx: the LayerNorm's
//             kernel adds r as it stores dx (layernorm.h), rounding as Add does
//   a BatchNorm's phases, once the pairs above are made (Note [one kernel per
//   BatchNorm], framework/ops/kernels/bn_train_cuda.h: one cooperative kernel each):
//   [stats_apply]
//   forward:  sums = BnStats(x), then y, batch, affine = BnReluApply(x, sums, gamma, beta)
//          -> y, batch, affine, sums = BnStatsReluApply(x, gamma, beta)
//   [pool_bn]
//   forward:  p, argmax, sums = MaxPoolStatsFwd(x) (the pool with its statistics), then
//             y, batch, affine = BnReluApply(p, sums, gamma, beta)
//          -> p, argmax, sums, y, batch, affine = PoolBnReluApply(x, gamma, beta)
//   [bwd_phases]
//   backward: dgamma, dbeta, dsums = BnReluBwdReduce(dy, affine, x, batch), then
//             dx = BnReluBwdApply(dy, affine, x, batch, gamma, dsums)
//          -> dx, dgamma, dbeta, dsums = BnReluBwdReduceApply(dy, affine, x, batch, gamma)
//             each when the sums have no other reader (synchronised BN
//             all-reduces them in between: no fusion), and the reduce has no
//             ReLU gradient in front, in the apply's place.
//
// The BatchNorm + residual, BatchNorm + pool and fan-in nodes take the place
// of the later node: every input it reads is ready there (a residual's
// projection shortcut is computed after the main path's BatchNorm). The first
// and last fuse only when the intermediate tensor has no other reader in any
// graph; the BatchNorm + pool when only pools read it. The pool and its
// statistics take the pool's place: they read only x, and y keeps its readers
// (the BatchNorm's apply and backward). Every pair fuses only when both nodes
// run on their graph's own stream and nothing in between touches the moved
// node's tensors.
//
// The head takes the pool's place (all it reads is ready there), which moves
// the loss and the backward up past the nodes in between: it fuses only when
// none of those writes what the head reads or writes, or reads the logits,
// the feature gradient, dx or the metrics.
//
// Bits: the head rounds each intermediate as its op stores it and, on the
// GPU, uses those ops' device functions (Note [small fc]; bn_affine_cuda.h for
// the BatchNorm in front): the same bits.
// The backward fusions round exactly as Add then ReluBwd do, and as
// LayerNormBwd then Add do (dx rounded to T, then the sum once); the pool's
// statistics are BnStats's own sums (on the GPU its grid and order); the
// BatchNorm + pool rounds y as BnReluApply stores it before the max. The
// GELU pair's and the fc + residual's CPU references are the two ops in turn
// (the same bits); on the GPU the epilogue applies the GELU (or its
// derivative, or adds the residual) to the f32 accumulator before its one
// rounding, within about a rounding of T of the unfused ops (FusionRule's
// same_gpu_bits says which rules do this). The
// BatchNorm + residual one rounds the BatchNorm's output and the residual's
// sum once instead of twice: the same bits in f32 and f64, slightly more
// accurate in f16.
// Either way eager, partial and full capture run the same nodes, so the modes
// stay bit-identical with fusion on or off.
#include <string>
#include <vector>

#include "framework/graph/computation_graph.h"

namespace tr {

// How many pairs of each kind fuse_graph() merged.
struct FusionCounts {
  int bn_add = 0;            // BnReluApply + Add
  int add_relu_bwd = 0;      // Add + ReluBwd
  int pool_stats = 0;        // MaxPoolArgmaxFwd + BnStats
  int bn_pool = 0;           // BnReluApply + MaxPoolArgmaxFwd
  int head = 0;              // GlobalMaxPoolFwd + FcFwd + SoftmaxXent + FcBwdData + GlobalMaxPoolBwd
  int head_bn = 0;           // BnReluApply + that ClassifierHead
  int stats_apply = 0;       // BnStats + BnReluApply (the statistics inside the apply)
  int pool_bn = 0;           // MaxPoolStatsFwd + BnReluApply of its y
  int bwd_phases = 0;        // BnReluBwdReduce + BnReluBwdApply
  int relu_grad_reduce = 0;  // ReluBwd or ReluBwdAdd + BnReluBwdReduce
  int fc_gelu = 0;           // FcFwd + GeluFwd
  int fc_gelu_bwd = 0;       // FcBwdData + GeluBwd
  int fc_residual = 0;       // FcFwd + Add (the residual join)
  int ln_bwd_add = 0;        // LayerNormBwd + Add (the gradient fan-in)

  int total() const {
    return bn_add + add_relu_bwd + pool_stats + bn_pool + head + head_bn + stats_apply + pool_bn + bwd_phases +
           relu_grad_reduce + fc_gelu + fc_gelu_bwd + fc_residual + ln_bwd_add;
  }
  FusionCounts& operator+=(const FusionCounts& o) {
    bn_add += o.bn_add;
    add_relu_bwd += o.add_relu_bwd;
    pool_stats += o.pool_stats;
    bn_pool += o.bn_pool;
    head += o.head;
    head_bn += o.head_bn;
    stats_apply += o.stats_apply;
    pool_bn += o.pool_bn;
    bwd_phases += o.bwd_phases;
    relu_grad_reduce += o.relu_grad_reduce;
    fc_gelu += o.fc_gelu;
    fc_gelu_bwd += o.fc_gelu_bwd;
    fc_residual += o.fc_residual;
    ln_bwd_add += o.ln_bwd_add;
    return *this;
  }
};

// Applies every rule of fusion_rules.h, or only those named in `only`
// (Fusion.EachRuleAloneChangesNoBit runs each alone); an unknown name is an Error.
FusionCounts fuse_graph(ComputationGraph& cg, const std::vector<std::string>& only = {});

}  // namespace tr
