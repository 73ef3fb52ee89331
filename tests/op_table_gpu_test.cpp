// The op test table on CUDA (Note [the op test table], op_table.h): every
// case against the CPU in the same storage type, f32 and, where the case has
// an f16 bound, f16 and bf16; and two GPU runs of a case give the same bits.
// TR_OP_CASES=text runs only the cases whose name holds text (a kernel under
// compute-sanitizer, which is slow on the whole table).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/op_table.h"
#include "tests/ops_gpu_fixture.h"

namespace tr::gpu_test {
namespace {

// bf16 keeps 8 significant bits to f16's 11, so each of its roundings is 8
// times an f16 one: a case's f16 bound (roundings to f16 of results the GPU
// and the CPU both compute in f32) times 8. Exact cases stay exact.
constexpr double kBf16PerF16 = 8;

double bound_of(const test::OpCase& c, DType t) {
  if (t == F32) return c.gpu_f32;
  if (c.gpu_f16 < 0) return -1;
  return t == DType::BF16 ? kBf16PerF16 * c.gpu_f16 : c.gpu_f16;
}

bool is_conv(OpKind k) { return k == OpKind::ConvFwd || k == OpKind::ConvBwdData || k == OpKind::ConvBwdFilter; }

TEST_F(OpsGpu, OpTableEveryCaseMatchesTheCpu) {
  int runs = 0;
  const char* only = std::getenv("TR_OP_CASES");
  for (const test::OpCase& c : test::op_cases())
    for (DType t : {F32, F16, DType::BF16}) {
      if (only != nullptr && c.name.find(only) == std::string::npos) continue;
      const double bound = bound_of(c, t);
      if (bound < 0) continue;
      Case k;
      k.name = cat(c.name, " (", dtype_name(t), ")");
      k.attrs = c.attrs;
      k.variant = c.variant;
      k.loss_scale = c.loss_scale;
      k.in = test::case_inputs(c, t);
      k.out = test::case_outputs(c, k.in, t);
      for (const HostTensor& o : k.out) k.tol.push_back(is_float(o.dtype()) ? bound : 0.0);
      if (is_conv(c.kind)) prepare_conv(c.kind, k);
      check(op_def(c.kind).cpu, op_def(c.kind).cuda, k);
      ++runs;
    }
  std::printf("[ op table gpu ] %d runs of %zu cases against the CPU%s%s\n", runs, test::op_cases().size(),
              only != nullptr ? ", only those named with " : "", only != nullptr ? only : "");
  if (only != nullptr) {
    EXPECT_GT(runs, 0) << "TR_OP_CASES=" << only << " names no case";
  }
}

}  // namespace
}  // namespace tr::gpu_test
