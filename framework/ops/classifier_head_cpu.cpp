// ClassifierHead on the CPU (semantics: classifier_head.h): the five reference
// ops in turn (six with the BatchNorm in front), through buffers for the
// BatchNorm's output, the logits and the feature gradient, so the fused op is
// their bits by construction.
#include "framework/ops/classifier_head.h"

#include <cstddef>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/batchnorm.h"
#include "framework/ops/fc.h"
#include "framework/ops/pool.h"
#include "framework/ops/softmax_xent.h"

namespace tr {

void classifier_head_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "classifier_head";
  TR_CHECK((c.n_in == 3 && n_out == 4) || (c.n_in == 6 && n_out == 6), op, ": arity");
  if (c.n_in == 6) {  // the BatchNorm in front: its outputs, checked as BnReluApply checks them
    const Shape bn_in[4] = {c.in[0], c.in[3], c.in[4], c.in[5]};
    Shape bn_out[3];
    bn_relu_apply_shapes(ShapeCtx{bn_in, 4, c.attrs, c.variant}, bn_out, 3);
    out[4] = bn_out[1];
    out[5] = bn_out[2];
  }
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

void classifier_head_cpu(const OpCall& c) {
  const char* op = "classifier_head";
  TR_CHECK((c.n_in == 3 && c.n_out == 4) || (c.n_in == 6 && c.n_out == 6), op,
           ": expected 3 inputs and 4 outputs, or 6 and 6, got ", c.n_in, " and ", c.n_out);
  TR_CHECK(c.attrs != nullptr && !c.attrs->has_bias && c.attrs->with_grad, op,
           ": needs an fc without bias and the loss's gradient");
  auto call = [&](const TensorRef* in, int n_in, const TensorRef* out, int n_out) {
    return OpCall{in, n_in, out, n_out, c.attrs, c.variant, c.env};
  };
  // y = BnReluApply(x, ...) when the BatchNorm is in front, else x itself.
  thread_local std::vector<std::byte> y_buf;
  TensorRef x = c.in[0];
  if (c.n_in == 6) {
    y_buf.resize(size_t(x.shape.numel()) * dtype_size(x.dtype));
    const TensorRef y{y_buf.data(), x.dtype, x.shape};
    const TensorRef bn_in[4] = {c.in[0], c.in[3], c.in[4], c.in[5]}, bn_out[3] = {y, c.out[4], c.out[5]};
    bn_relu_apply_cpu(call(bn_in, 4, bn_out, 3));
    x = y;
  }
  const TensorRef &w = c.in[1], &labels = c.in[2];
  const TensorRef &p = c.out[0], &dlogits = c.out[1], &metrics = c.out[2], &dx = c.out[3];
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

}  // namespace tr
