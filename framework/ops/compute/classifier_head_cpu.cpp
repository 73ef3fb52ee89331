// ClassifierHead on the CPU (semantics: classifier_head.h): the five reference
// ops in turn (six with the BatchNorm in front), through buffers for the
// BatchNorm's output, the logits and the feature gradient, so the fused op is
// their bits by construction.
#include "framework/ops/compute/classifier_head.h"

#include <cstddef>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/softmax_xent.h"
#include "framework/ops/op_signature.h"

namespace tr {

HeadOperands head_operands(OpKind kind, const OpCall& c) {
  const OpOperands o(kind, c);
  const std::string op(op_name(kind));
  TR_CHECK(!c.attrs->has_bias && c.attrs->with_grad, op, ": needs an fc without bias and the loss's gradient");
  HeadOperands h;
  h.x = &o.in("x"), h.w = &o.in("w"), h.labels = &o.in("labels");
  h.p = &o.out("p"), h.dlogits = &o.out("dlogits"), h.metrics = &o.out("metrics"), h.dx = &o.out("dx");
  if (kind == OpKind::BnReluClassifierHead) {
    h.sums = &o.in("sums"), h.gamma = &o.in("gamma"), h.beta = &o.in("beta");
    h.batch = &o.out("batch"), h.affine = &o.out("affine");
  }
  return h;
}

namespace {

// x, w, labels -> p, dlogits, metrics, dx.
void head_shapes(const ShapeCtx& c, Shape* out) {
  const char* op = "classifier_head";
  TR_USER_CHECK(c.attrs != nullptr && !c.attrs->has_bias && c.attrs->with_grad, op,
                ": needs an fc without bias and the loss's gradient");
  Shape p, z, loss[2];
  global_maxpool_fwd_shapes(ShapeCtx{&c.in[0], 1, c.attrs, c.variant}, &p, 1);
  const Shape fc_in[2] = {p, c.in[1]};
  fc_fwd_shapes(ShapeCtx{fc_in, 2, c.attrs, c.variant}, &z, 1);
  const Shape xent_in[2] = {z, c.in[2]};
  softmax_xent_shapes(ShapeCtx{xent_in, 2, c.attrs, c.variant}, loss, 2);
  out[0] = p;
  out[1] = loss[0];
  out[2] = loss[1];
  out[3] = c.in[0];
}

// The five reference ops on x (or the BatchNorm's y), through buffers for the
// logits and the feature gradient.
void head_cpu(const OpCall& c, const HeadOperands& h, const TensorRef& x) {
  const char* op = "classifier_head";
  auto call = [&](const TensorRef* in, int n_in, const TensorRef* out, int n_out) {
    return OpCall{in, n_in, out, n_out, c.attrs, c.variant, c.env};
  };
  const TensorRef &w = *h.w, &labels = *h.labels;
  const TensorRef &p = *h.p, &dlogits = *h.dlogits, &metrics = *h.metrics, &dx = *h.dx;
  TR_CHECK(x.shape.rank == 4 && w.shape.rank == 2, op, ": x ", x.shape.str(), ", w ", w.shape.str());
  const int64_t N = x.shape[0], C = x.shape[3], M = w.shape[0];
  // z and dp live only here; a rank thread reuses its buffers from call to call.
  thread_local std::vector<std::byte> z_buf, dp_buf;
  z_buf.resize(size_t(N * M) * dtype_size(x.dtype));
  dp_buf.resize(size_t(N * C) * dtype_size(x.dtype));
  const TensorRef z{z_buf.data(), x.dtype, Shape{N, M}};
  const TensorRef dp{dp_buf.data(), x.dtype, Shape{N, C}};
  global_maxpool_fwd_cpu(call(&x, 1, &p, 1));
  const TensorRef fc_in[2] = {p, w};
  fc_fwd_cpu(call(fc_in, 2, &z, 1));
  const TensorRef xent_in[2] = {z, labels}, xent_out[2] = {dlogits, metrics};
  softmax_xent_cpu(call(xent_in, 2, xent_out, 2));
  const TensorRef dgrad_in[3] = {dlogits, w, p};
  fc_bwd_data_cpu(call(dgrad_in, 3, &dp, 1));
  const TensorRef pool_bwd_in[3] = {dp, x, p};
  global_maxpool_bwd_cpu(call(pool_bwd_in, 3, &dx, 1));
}

}  // namespace

void classifier_head_shapes(const ShapeCtx& c, Shape* out, int) { head_shapes(c, out); }

// The BatchNorm in front: its outputs, checked as BnReluApply checks them, then the head.
void bn_relu_classifier_head_shapes(const ShapeCtx& c, Shape* out, int) {
  const Shape bn_in[4] = {c.in[0], c.in[3], c.in[4], c.in[5]};
  Shape bn_out[3];
  bn_relu_apply_shapes(ShapeCtx{bn_in, 4, c.attrs, c.variant}, bn_out, 3);
  out[4] = bn_out[1];
  out[5] = bn_out[2];
  head_shapes(c, out);
}

void classifier_head_cpu(const OpCall& c) {
  const HeadOperands h = head_operands(OpKind::ClassifierHead, c);
  head_cpu(c, h, *h.x);
}

// y = BnReluApply(x, sums, gamma, beta) into a buffer, then the head on y.
void bn_relu_classifier_head_cpu(const OpCall& c) {
  const HeadOperands h = head_operands(OpKind::BnReluClassifierHead, c);
  const TensorRef& x = *h.x;
  thread_local std::vector<std::byte> y_buf;
  y_buf.resize(size_t(x.shape.numel()) * dtype_size(x.dtype));
  const TensorRef y{y_buf.data(), x.dtype, x.shape};
  const TensorRef bn_in[4] = {x, *h.sums, *h.gamma, *h.beta}, bn_out[3] = {y, *h.batch, *h.affine};
  bn_relu_apply_cpu(OpCall{bn_in, 4, bn_out, 3, c.attrs, c.variant, c.env});
  head_cpu(c, h, y);
}

}  // namespace tr
