// TokenPrep: shape rule and the CPU reference. Semantics: framework/ops/compute/token_prep.h.
#include "framework/ops/compute/embedding.h"
#include "framework/ops/compute/token_prep.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

namespace tr {

void token_prep_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "token_prep";
  const Shape& w = c.in[0];
  TR_USER_CHECK(w.rank == 2 && w[1] >= 2, op, ": tokens must be [B, T+1] windows with T >= 1, got ", w.str());
  check_positive_dims(w, op, "tokens");
  const int64_t N = c.variant->batch, T = c.variant->height;
  TR_USER_CHECK(N >= 1 && N <= w[0], op, ": the variant's batch ", N, " is outside [1, ", w[0], "]");
  TR_USER_CHECK(T >= 1 && T < w[1], op, ": the variant's sequence length ", T, " is outside [1, ", w[1] - 1,
                "] (windows of ", w[1], " tokens)");
  out[0] = Shape{N, T};
  out[1] = Shape{N, T};
  out[2] = Shape{N * T};
}

void token_prep_cpu(const OpCall& c) {
  const char* op = "token_prep";
  check_operands(OpKind::TokenPrep, c);
  const TensorRef& w = c.in[0];
  const int64_t N = c.variant->batch, T = c.variant->height, W = w.shape[1];
  TR_CHECK(w.shape.rank == 2 && N <= w.shape[0] && T < W, op, ": tokens ", w.shape.str(), " for ", N, "x", T);
  for (int i = 0; i < 3; ++i) {
    cpu::check_dtype(i == 0 ? w : c.out[i - 1], DType::I32, op, "an operand");
    if (i > 0) cpu::check_numel(c.out[i - 1], N * T, op, "an output");
  }
  const int32_t* src = w.as<int32_t>();
  int32_t* ids = c.out[0].as<int32_t>();
  int32_t* labels = c.out[1].as<int32_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t) {
      ids[n * T + t] = src[n * W + t];
      labels[n * T + t] = src[n * W + t + 1];
    }
  embedding_order(ids, N * T, c.out[2].as<int32_t>());
}

}  // namespace tr
