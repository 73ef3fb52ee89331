// BnReluPool on the CPU (semantics: bn_relu_pool.h): the two reference ops in
// turn, through a buffer for y, so the fused op is their bits by construction.
#include "framework/ops/compute/bn_relu_pool.h"

#include <cstddef>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/kernels/pool_window.h"
#include "framework/ops/op_signature.h"

namespace tr {

void bn_relu_pool_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "bn_relu_pool";
  const Shape& x = c.in[0];
  TR_USER_CHECK(c.attrs != nullptr, op, ": no attributes");
  TR_USER_CHECK(checked_pool_window(*c.attrs, x, op, true).is_2x2(), op,
                ": the pool must be 2x2 with stride 2 and no padding");
  const int64_t C = x[3];
  TR_USER_CHECK(c.in[1] == Shape({2, C}) && c.in[2].numel() == C && c.in[3].numel() == C, op,
                ": sums, gamma and beta must hold ", C, " channels");
  out[0] = Shape{x[0], x[1] / 2, x[2] / 2, C};  // p
  out[1] = out[0];                              // argmax
  out[2] = Shape{2, C};                         // batch
  out[3] = Shape{2, C};                         // affine
}

void bn_relu_pool_cpu(const OpCall& c) {
  const char* op = "bn_relu_pool";
  check_operands(OpKind::BnReluPool, c);
  const TensorRef& x = c.in[0];
  TR_CHECK(c.attrs != nullptr && checked_pool_window(*c.attrs, x.shape, op, true).is_2x2(), op,
           ": the pool must be 2x2 with stride 2 and no padding");
  // y lives only here; a rank thread reuses its buffer from call to call.
  thread_local std::vector<std::byte> y_buf;
  y_buf.resize(size_t(x.shape.numel()) * dtype_size(x.dtype));
  const TensorRef y{y_buf.data(), x.dtype, x.shape};
  const TensorRef apply_out[3] = {y, c.out[2], c.out[3]};
  bn_relu_apply_cpu(OpCall{c.in, 4, apply_out, 3, c.attrs, c.variant, c.env});
  maxpool_argmax_fwd_cpu(OpCall{&y, 1, c.out, 2, c.attrs, c.variant, c.env});
}

}  // namespace tr
