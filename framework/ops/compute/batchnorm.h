#pragma once
// BatchNorm (training statistics) fused with ReLU, split in phases so that the
// per-channel sums can be all-reduced between them (synchronised BN across ranks).
// count = variant.global_batch * H * W (the sums all-reduced over ranks), or
// batch * H * W with attrs.bn_rank_local (each rank's own statistics).
// f32 statistics (sums and dsums: bn_sums_dtype), x, y, gamma, beta in T.
//   BnStats:         x[N,H,W,C]                          -> sums[2,C] = (sum x, sum x^2)
//   BnReluApply:     x, sums, gamma[C], beta[C]          -> y, batch[2,C] = (mean, biased var),
//                                                           affine[2,C] = (scale, shift)
//                    y = relu(scale * x + shift), scale = gamma * rsqrt(var + eps), shift = beta - mean * scale
//   BnReluBwdReduce: dy, affine, x, batch                -> dgamma[C], dbeta[C], dsums[2,C]
//                    g = dy * (scale * x + shift > 0); dsums = (sum g, sum g*xhat); dgamma = dsums[1], dbeta = dsums[0]
//   ReluBwdBnReduce, ReluBwdAddBnReduce: the reduce with the ReLU's gradient in
//   front (Note [the ReLU's gradient in the reduce]):
//                    a, affine, x, batch, y[, b]         -> dgamma, dbeta, dsums, g
//                    g = ReluBwd(a, y) or ReluBwdAdd(a, y, b) = (a [+ b]) * (y > 0),
//                    rounded to T as ReluBwd stores it; then the reduce with dy = g
//   BnReluBwdApply:  dy, affine, x, batch, gamma, dsums  -> dx
//                    dx = gamma*rstd*(g - dsums[0]/count - xhat*dsums[1]/count)
//   BnAddReluApply:  x, sums, gamma, beta, residual (x's shape) -> y, batch, affine
//                    y = relu(scale * x + shift + residual), the sum rounded once to T
//                    (the fusion of a BatchNorm and the residual Add + ReLU after it,
//                    Note [fusion] in framework/graph/fusion.h).
//   BnStatsReluApply:     x, gamma, beta -> y, batch, affine, sums: BnStats, then
//                    BnReluApply (Note [one kernel per BatchNorm], bn_train_cuda.h)
//   BnReluBwdReduceApply: dy, affine, x, batch, gamma -> dx, dgamma, dbeta, dsums:
//                    BnReluBwdReduce, then BnReluBwdApply
//   The backward recomputes the ReLU's input from the forward's own affine (the
//   same float it clamped, bn_pre_relu) instead of reading y: one activation
//   read fewer in each backward phase. y > 0 and the pre-activation > 0 agree
//   except where a positive pre-activation rounds to 0 in T.
//   BnReluInfer:     x, affine[2,C] = (scale, shift)     -> y = relu(scale*x + shift)
//   BnFold:          gamma f32[C], beta f32[C], running[2,C] = (mean, var) -> affine[2,C]
//                    scale = gamma*rsqrt(var+eps), shift = beta - mean*scale
// (relu=false in attrs drops the ReLU everywhere.)
//
// Note [the ReLU's gradient in the reduce]
// A residual block's output is relu(BN(x) + shortcut). Its gradient g is
// ReluBwd of the gradients that reach the output (two where the next block
// also takes it as its shortcut: Note [fusion]), and the block's last
// BatchNorm reduces g right after. Apart, ReluBwd writes g and the reduce
// reads it back; with the ReLU's gradient in front the reduce makes g from
// (a, y[, b]) as it walks the rows and stores it for g's other readers (the
// BatchNorm's apply, a projection's BatchNorm, the shortcut's gradient): one
// kernel and one pass over g fewer per block. g is ReluBwd's own value (the
// sum in f32, rounded once to T), and the reduce runs on it with the grid and
// order it has apart, so the bits are those of the two ops: on the CPU the
// node runs them apart, on the GPU the kernel is launched only where the
// ReLU's tensors allow the reduce's vector width (else the two kernels run).
//
// Note [BatchNorm sums in double]
// N ranks x B/N train like 1 rank x B only if every BatchNorm normalises with
// the same mean and variance. The CPU forms each rank's sums (sum x, sum x^2)
// and gradient sums in double. Stored in f32, each rank rounded its own sums
// before the all-reduce added them, while one rank rounds the whole batch's
// sums once: the mean and variance then differ in their last bits, and a
// pre-activation within that of zero flips its ReLU, switching its gradient
// fully on or off. At resnet50's last stage (1/8 width, 32x32 input, 16
// samples per channel) four such flips moved the whole update of 2 ranks x 8
// by 2 % against 1 x 16, and whether CI passed depended on OpenBLAS's kernel.
// So on the CPU the sums and dsums tensors are F64 and the all-reduce adds
// doubles (framework/comm/rank_order_sum.h): N ranks' sums differ from one
// rank's only by double rounding, which the f32 affine almost never shows, and
// the N x B/N tests bound the difference tightly (DataParallel.*,
// ZooTraining.RanksMatchOneRankWithTheWholeBatch).
// On CUDA the sums stay F32 (bn_sums_dtype): a rank reduces its rows in f32
// block partials (channel_sums_cuda.h), so 1 GPU's sums differ from N GPUs'
// before any all-reduce, and an f64 all-reduce (NCCL supports it) alone would
// not make them equal; it would need f64 partials throughout. Not yet measured
// on a GPU: the cost of f64 partials and a ncclFloat64 all-reduce per
// BatchNorm, against how often a flip moves the multi-GPU equivalence tests.
// f32 sums do flip ReLUs against f64 ones: the first step of the 1/8-width
// vgg16bn at 32x32, batch 16, moves its gradients by 1.27e-2 between the CPU's
// f64 and f32 sums, the same as between an f64 CPU and the H200 (resnet50:
// 5.2e-3 on the CPU, 4.6e-2 against the H200). So a test that holds the GPU to
// the CPU gives the CPU f32 sums (RunOptions::bn_sums), and differences are
// down to summation order again.
#include "framework/core/backend.h"
#include "framework/core/dtype.h"
#include "framework/ops/op_kind.h"
#include "framework/ops/shape_ctx.h"

namespace tr {

// The element type of BatchNorm's sums and dsums on a backend (Note
// [BatchNorm sums in double]).
constexpr DType bn_sums_dtype(Backend b) { return b == Backend::Cpu ? DType::F64 : DType::F32; }

// The BatchNorm kinds' operands by name (Note [operands by name],
// op_signature.h), checked once for both backends: x is [N,...,C] with C > 0;
// y, residual, dy, a, relu_y (the ReLU's y), b, g and dx have x's type and
// shape; gamma, beta, dgamma and dbeta x's type and C elements; sums, batch,
// affine and dsums 2*C statistics in f32 or f64 (bn_sums_dtype). What the
// kind does not take is null. BnFold (no x) checks its own.
struct BnOperands {
  int64_t C = 0;
  const TensorRef *x = nullptr, *sums = nullptr, *gamma = nullptr, *beta = nullptr, *residual = nullptr;
  const TensorRef *y = nullptr, *batch = nullptr, *affine = nullptr;
  const TensorRef *dy = nullptr, *a = nullptr, *relu_y = nullptr, *b = nullptr;
  const TensorRef *g = nullptr, *dsums = nullptr, *dx = nullptr, *dgamma = nullptr, *dbeta = nullptr;
};
BnOperands bn_operands(OpKind kind, const OpCall& c);

void bn_stats_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_stats_relu_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_add_relu_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_bwd_bn_reduce_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_bwd_add_bn_reduce_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_bwd_reduce_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_bwd_reduce_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_bwd_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_infer_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_fold_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_stats_cpu(const OpCall& c);
void bn_stats_cuda(const OpCall& c);
void bn_relu_apply_cpu(const OpCall& c);
void bn_relu_apply_cuda(const OpCall& c);
void bn_stats_relu_apply_cpu(const OpCall& c);
void bn_stats_relu_apply_cuda(const OpCall& c);
void bn_add_relu_apply_cpu(const OpCall& c);
void bn_add_relu_apply_cuda(const OpCall& c);
void relu_bwd_bn_reduce_cpu(const OpCall& c);
void relu_bwd_bn_reduce_cuda(const OpCall& c);
void relu_bwd_add_bn_reduce_cpu(const OpCall& c);
void relu_bwd_add_bn_reduce_cuda(const OpCall& c);
void bn_relu_bwd_reduce_apply_cpu(const OpCall& c);
void bn_relu_bwd_reduce_apply_cuda(const OpCall& c);
void bn_relu_bwd_reduce_cpu(const OpCall& c);
void bn_relu_bwd_reduce_cuda(const OpCall& c);
void bn_relu_bwd_apply_cpu(const OpCall& c);
void bn_relu_bwd_apply_cuda(const OpCall& c);
void bn_relu_infer_cpu(const OpCall& c);
void bn_relu_infer_cuda(const OpCall& c);
void bn_fold_cpu(const OpCall& c);
void bn_fold_cuda(const OpCall& c);

}  // namespace tr
