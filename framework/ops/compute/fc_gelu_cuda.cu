// FcGeluFwd and FcBwdDataGelu on cuBLASLt's GELU epilogues (semantics:
// fc_gelu.h). Row-major tensors as column-major matrices, as fc_cuda.cu:
//   FcGeluFwd:     pre^T[M,R] = scale * w[M,K] x^T[K,R] (+ b), y^T = GELU(pre^T)
//                  -> GEMM(T, N, m=M, n=R, k=K, A=w lda=K, B=x ldb=K, D=y ldd=M),
//                     GELU_AUX(_BIAS) with aux = pre, aux_ld = M
//   FcBwdDataGelu: dx^T[M,R] = GELU'(pre^T) * scale * w^T[M,M'] dy^T[M',R]  (w is [M',M])
//                  -> GEMM(N, N, m=M, n=R, k=M', A=w lda=M, B=dy ldb=M', D=dx ldd=M),
//                     DGELU with aux = pre, aux_ld = M
// The aux matrix's leading dimension must be a multiple of 8, and the layer
// must have more than kSmallFcMaxOutputs outputs (else fc runs its own small
// kernels): the fusion rule fuses only such layers. No workspace of its own.
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/fc_gelu.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/lt_matmul_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

// R rows of K features into M outputs, checked as fc_cuda.cu checks them.
struct Dims {
  int64_t r, k, m;
};

Dims dims(const TensorRef& x, const Shape& w, const TensorRef& y, const char* op) {
  TR_CHECK(w.rank == 2 && w[1] > 0 && x.shape.numel() % w[1] == 0, op, ": x ", x.shape.str(), " and w ", w.str(),
           " do not match");
  const Dims d{x.shape.numel() / w[1], w[1], w[0]};
  TR_CHECK(y.shape.numel() == d.r * d.m, op, ": y or dy ", y.shape.str(), " holds no ", d.r, " x ", d.m);
  return d;
}

void check_same(const TensorRef& t, const TensorRef& like, const char* op, const char* what) {
  TR_CHECK(t.dtype == like.dtype, op, ": ", what, " is ", dtype_name(t.dtype), ", expected ", dtype_name(like.dtype));
}

// The epilogue's aux matrix: `cols` a multiple of 8, past the small-fc path.
void check_aux(int64_t cols, int64_t outputs, const char* op) {
  TR_CHECK(cols % 8 == 0, op, ": the GELU's ", cols, " channels are no multiple of 8 (the fusion rule checks this)");
  TR_CHECK(outputs > kSmallFcMaxOutputs, op, ": ", outputs, " outputs take the small-fc kernels, not cuBLASLt");
}

}  // namespace

void fc_gelu_fwd_cuda(const OpCall& c) {
  const char* op = "FcGeluFwd";
  const OpOperands o(OpKind::FcGeluFwd, c);
  const TensorRef& x = o.in("x");
  const TensorRef& w = o.in("w");
  const TensorRef* b = o.in_if("b");
  const TensorRef& pre = o.out("pre");
  const TensorRef& y = o.out("y");
  const Dims d = dims(x, w.shape, y, op);
  for (const TensorRef* t : {&w, &pre, &y}) check_same(*t, x, op, "an operand");
  TR_CHECK(pre.shape.numel() == y.shape.numel(), op, ": pre ", pre.shape.str(), " and y ", y.shape.str(), " differ");
  if (b != nullptr) {
    check_same(*b, x, op, "b");
    TR_CHECK(b->shape.numel() == d.m, op, ": b ", b->shape.str(), " for ", d.m, " outputs");
  }
  check_aux(d.m, d.m, op);
  if (d.r == 0) return;
  LtMatmul mm;
  mm.t = x.dtype;
  mm.ta = CUBLAS_OP_T, mm.tb = CUBLAS_OP_N;
  mm.m = d.m, mm.n = d.r, mm.k = d.k, mm.alpha = attrs_of(c, op).scale;
  mm.a = w.data, mm.lda = d.k, mm.b = x.data, mm.ldb = d.k, mm.d = y.data, mm.ldd = d.m;
  mm.epilogue = b != nullptr ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  mm.bias = b != nullptr ? b->data : nullptr;
  mm.aux = pre.data, mm.aux_ld = d.m;
  lt_matmul(handles_of(c, op), stream_of(c), mm, op);
}

void fc_bwd_data_gelu_cuda(const OpCall& c) {
  const char* op = "FcBwdDataGelu";
  const OpOperands o(OpKind::FcBwdDataGelu, c);
  const TensorRef& dy = o.in("dy");
  const TensorRef& w = o.in("w");
  const TensorRef& pre = o.in("pre");
  const TensorRef& dx = o.out("dx");
  const Dims d = dims(dx, w.shape, dy, op);  // dx[R,K] from dy[R,M]: here K is the GELU's width
  for (const TensorRef* t : {&w, &pre, &dx}) check_same(*t, dy, op, "an operand");
  TR_CHECK(pre.shape.numel() == dx.shape.numel(), op, ": pre ", pre.shape.str(), " and dx ", dx.shape.str(), " differ");
  check_aux(d.k, d.m, op);
  if (d.r == 0) return;
  LtMatmul mm;
  mm.t = dy.dtype;
  mm.ta = CUBLAS_OP_N, mm.tb = CUBLAS_OP_N;
  mm.m = d.k, mm.n = d.r, mm.k = d.m, mm.alpha = attrs_of(c, op).scale;
  mm.a = w.data, mm.lda = d.k, mm.b = dy.data, mm.ldb = d.m, mm.d = dx.data, mm.ldd = d.k;
  mm.epilogue = CUBLASLT_EPILOGUE_DGELU;
  mm.aux = pre.data, mm.aux_ld = d.k;
  lt_matmul(handles_of(c, op), stream_of(c), mm, op);
}

}  // namespace tr
