// FcResidualFwd on one cuBLASLt GEMM (semantics: fc_residual.h). Row-major
// tensors as column-major matrices, as fc_cuda.cu:
//   y^T[M,R] = scale * w[M,K] x^T[K,R] + r^T[M,R] (+ b per row of y^T)
//   -> GEMM(T, N, m=M, n=R, k=K, A=w lda=K, B=x ldb=K, C=r, D=y ldd=M), beta = 1,
//      epilogue BIAS (with b) or DEFAULT
// The layer must have more than kSmallFcMaxOutputs outputs (else fc runs its
// own small kernels): the fusion rule fuses only such layers. No workspace of
// its own. (The memory plan never lets a node's output alias its inputs; a
// GEMM with C = D would be fine anyway.)
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/fc_residual.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/lt_matmul_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {

using namespace tr::cuda;

void fc_residual_fwd_cuda(const OpCall& c) {
  const char* op = "FcResidualFwd";
  const OpOperands o(OpKind::FcResidualFwd, c);
  const TensorRef& x = o.in("x");
  const TensorRef& w = o.in("w");
  const TensorRef& r = o.in("r");
  const TensorRef* b = o.in_if("b");
  const TensorRef& y = o.out("y");
  TR_CHECK(w.shape.rank == 2 && w.shape[1] > 0 && x.shape.numel() % w.shape[1] == 0, op, ": x ", x.shape.str(),
           " and w ", w.shape.str(), " do not match");
  const int64_t rows = x.shape.numel() / w.shape[1], k = w.shape[1], m = w.shape[0];
  TR_CHECK(y.shape.numel() == rows * m && r.shape.numel() == rows * m, op, ": y ", y.shape.str(), " or r ",
           r.shape.str(), " holds no ", rows, " x ", m);
  for (const TensorRef* t : {&w, &r, &y})
    TR_CHECK(t->dtype == x.dtype, op, ": an operand is ", dtype_name(t->dtype), ", expected ", dtype_name(x.dtype));
  if (b != nullptr)
    TR_CHECK(b->dtype == x.dtype && b->shape.numel() == m, op, ": b ", b->shape.str(), " for ", m, " outputs");
  TR_CHECK(m > kSmallFcMaxOutputs, op, ": ", m, " outputs take the small-fc kernels, not cuBLASLt");
  if (rows == 0) return;
  LtMatmul mm;
  mm.t = x.dtype;
  mm.ta = CUBLAS_OP_T, mm.tb = CUBLAS_OP_N;
  mm.m = m, mm.n = rows, mm.k = k, mm.alpha = attrs_of(c, op).scale;
  mm.a = w.data, mm.lda = k, mm.b = x.data, mm.ldb = k, mm.d = y.data, mm.ldd = m;
  mm.c = r.data, mm.beta = 1.f;
  mm.epilogue = b != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  mm.bias = b != nullptr ? b->data : nullptr;
  lt_matmul(handles_of(c, op), stream_of(c), mm, op);
}

}  // namespace tr
