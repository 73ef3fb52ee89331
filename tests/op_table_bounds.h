#pragma once
// What the op test table's case files share (op_table_cases*.cpp): the bounds
// most cases use, each with its reason, and a CPU op run on tensors already
// made (the derive steps). Bounds count f32 roundings: one is 2^-24 = 6e-8 of
// a value, a sum of n terms up to n of them; f16 rounds at 2^-11 = 4.9e-4.
#include <vector>

#include "tests/op_table.h"

namespace tr::test {

// The bounds most cases share, each with its reason.
constexpr double kExact = 0;           // the same arithmetic in any type the value fits (max, copy, mask)
constexpr double kOneRounding = 1e-7;  // one f32 rounding of each result (6e-8)
constexpr double kGpuF32 = 1e-5;       // another order of a short f32 sum on the GPU: tens of roundings
constexpr double kGpuF16 = 1e-3;       // f16 storage: two roundings of 4.9e-4 at most, against the CPU's own f16
constexpr double kGpuConv = 1e-4;      // cuDNN's algorithms: sums of up to 9*C products in other orders
constexpr double kGpuConvF16 = 2e-3;   // ... with f16 inputs and f32 accumulation, rounded once to f16

// Runs a CPU op on tensors already made (the derive steps).
inline void cpu_op(OpFn fn, const std::vector<const HostTensor*>& in, const std::vector<HostTensor*>& out,
                   const OpAttrs& a, const VariantDims& v) {
  OpRunner r;
  r.attrs = a;
  r.variant = v;
  r.run(fn, in, out);
}

// A sequence model's cases (op_table_cases_transformer.cpp).
void transformer_cases(std::vector<OpCase>& t);

}  // namespace tr::test
