#pragma once
// Note [the op test table]
// Every COMPUTE op kind (framework/ops/op_kind.h) lists its cases once, in
// op_table_cases.cpp: each case's inputs (element kind, shape, how they are
// filled), its attributes and variant, and the error each backend may show
// against the CPU reference, with the reason in one line. Every kind has its
// cases (a fused or variant form is a kind of its own: Note [operands by
// name]), and an operand an attribute brings is tested present and absent.
// Gradient kinds list gradient cases beside them: the backward against
// central differences of its forward. The runners:
//   OpTable.EveryKindHasCases             a kind without a case (or a gradient
//                                         kind without a gradient case) fails;
//   OpTable.CpuF32MatchesTheF64Reference  every case on the CPU in f32 against
//                                         the same kernels in f64, on the same
//                                         input values;
//   OpTable.GradientsMatchFiniteDifferences  every gradient case, in f64;
//   OpsGpu.OpTableEveryCaseMatchesTheCpu  every case on CUDA against the CPU in
//                                         the same storage type, f32 and, where
//                                         the case allows, f16 (op_table_gpu_test.cpp).
// Outputs are compared by ||got - ref|| / ||ref||; integer outputs (argmax,
// labels) exactly.
#include <functional>
#include <string>
#include <vector>

#include "framework/ops/op_kind.h"
#include "framework/ops/op_registry.h"
#include "tests/op_test_util.h"

namespace tr::test {

// An operand's element type: the case's storage type T (f64, f32 or f16), its
// statistics type (f64 with T = f64, else f32), or a fixed integer type.
enum class Elem { T, Stat, U8, I32 };
DType dtype_of(Elem e, DType t);

// How an input is filled: uniform in [lo, hi); distinct values (no ties in a
// max, nothing within a finite-difference step of a ReLU's kink); class labels
// in [0, hi); image bytes.
enum class Fill { Uniform, Distinct, Labels, Pixels };

struct Operand {
  Elem elem = Elem::T;
  Shape shape;
  Fill fill = Fill::Uniform;
  double lo = -1, hi = 1;
};

struct OpCase {
  std::string name;
  OpKind kind = OpKind::Count;
  std::vector<Operand> in;
  std::vector<Elem> out;  // each output's element kind; the shapes come from the kind's shape rule
  OpAttrs attrs;
  VariantDims variant{4, 4, 0, 0};
  float loss_scale = 1.f;
  // Inputs made from the others after filling (a BatchNorm's statistics of
  // its x), by the CPU reference ops in the case's storage type.
  std::function<void(std::vector<HostTensor>& in)> derive;
  // Bounds on ||got - ref|| / ||ref|| per output, and their reason:
  double cpu_f32 = 0;   // the CPU in f32 against the CPU in f64
  double gpu_f32 = 0;   // CUDA against the CPU, both in f32
  double gpu_f16 = -1;  // CUDA against the CPU, both in f16; < 0: the case has no f16 run
  std::string why;
};

// A gradient kind against central differences of its forward, in f64 on the
// CPU: loss(in) is the forward followed by a fixed projection to a scalar,
// grad(in) the gradient of that loss with respect to in[wrt] as the backward
// ops compute it.
struct GradCase {
  std::string name;
  OpKind kind = OpKind::Count;  // the gradient kind checked
  std::vector<Operand> in;
  int wrt = 0;
  std::function<double(const std::vector<HostTensor>& in)> loss;
  std::function<HostTensor(const std::vector<HostTensor>& in)> grad;
  double tol = 0;  // on max_rel_err against the differences
  std::string why;
};

// Window attributes of a convolution or pool: kernel, stride, padding.
inline OpAttrs window(int kernel, int stride, int pad) {
  OpAttrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.pad = pad;
  return a;
}

const std::vector<OpCase>& op_cases();
const std::vector<GradCase>& grad_cases();
// The kinds that compute a gradient, each of which needs a gradient case.
const std::vector<OpKind>& gradient_kinds();

// A case's inputs in storage type t (every case fills from the same seed;
// values are drawn in f32, so every storage type holds the same values where
// it can), derived inputs included.
std::vector<HostTensor> case_inputs(const OpCase& c, DType t);
// Output buffers of the right types and shapes (the kind's shape rule).
std::vector<HostTensor> case_outputs(const OpCase& c, const std::vector<HostTensor>& in, DType t);
// The case on the CPU in storage type t.
std::vector<HostTensor> run_case_cpu(const OpCase& c, const std::vector<HostTensor>& in, DType t);
// A gradient case's inputs (f64).
std::vector<HostTensor> grad_inputs(const GradCase& g);

// ||got - ref|| / ||ref|| (the sum of squares of ref when it is all zero);
// +inf when got holds a non-finite value that ref does not.
double l2_rel_err(const HostTensor& got, const HostTensor& ref);

}  // namespace tr::test
