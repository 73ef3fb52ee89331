// The op test table's CPU runners (Note [the op test table], op_table.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "framework/ops/op_signature.h"
#include "tests/op_table.h"

namespace tr::test {
namespace {

TEST(OpTable, EveryKindHasCases) {
  std::map<OpKind, int> cases, grads;
  for (const OpCase& c : op_cases()) ++cases[c.kind];
  for (const GradCase& g : grad_cases()) ++grads[g.kind];
  for (int k = 0; k < int(OpKind::Count); ++k)
    EXPECT_GT(cases[OpKind(k)], 0) << op_name(OpKind(k)) << " has no case in the op table";
  for (OpKind k : gradient_kinds()) EXPECT_GT(grads[k], 0) << op_name(k) << " has no gradient case";
  std::set<std::string> names;
  for (const OpCase& c : op_cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "two cases are named " << c.name;
    EXPECT_FALSE(c.why.empty()) << c.name << " gives no reason for its bounds";
  }
  for (const GradCase& g : grad_cases()) {
    EXPECT_TRUE(names.insert(g.name).second) << "two cases are named " << g.name;
    EXPECT_FALSE(g.why.empty()) << g.name << " gives no reason for its bound";
  }
  std::printf("[ op table ] %zu cases over %d op kinds, %zu gradient cases over %zu gradient kinds\n",
              op_cases().size(), int(OpKind::Count), grad_cases().size(), gradient_kinds().size());
}

// Note [operands by name]: every kind's line in the op table names each
// operand once, on each side, with only attributes the table knows; every case
// of the kind gives exactly the operands its line lists under the case's
// attributes, and each attribute-borne operand is tested both there and left
// out; one operand more or fewer is refused; the kind has its CPU function
// (and its CUDA one in a CUDA build).
TEST(OpTable, EveryKindsOperandsMatchItsCases) {
  std::map<OpKind, std::set<std::string>> borne_seen;  // "b on" / "b off"
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_NO_THROW(check_operand_counts(c.kind, int(c.in.size()), int(c.out.size()), c.attrs));
    for (Side side : {Side::In, Side::Out})
      for (const OperandName& o : operand_names(c.kind, side))
        if (!o.when.empty())
          borne_seen[c.kind].insert(std::string(o.name) + (operand_present(o, c.attrs) ? " on" : " off"));
  }
  for (int i = 0; i < int(OpKind::Count); ++i) {
    const OpKind k = OpKind(i);
    SCOPED_TRACE(op_name(k));
    const OpDef& def = op_def(k);
    EXPECT_NE(def.cpu, nullptr);
#ifdef TR_HAVE_CUDA
    EXPECT_NE(def.cuda, nullptr);
#endif
    EXPECT_FALSE(operand_names(k, Side::Out).empty()) << "a kind that gives nothing";
    for (Side side : {Side::In, Side::Out}) {
      std::set<std::string_view> names;
      for (const OperandName& o : operand_names(k, side)) {
        EXPECT_FALSE(o.name.empty());
        EXPECT_TRUE(names.insert(o.name).second) << o.name << " is named twice";
        EXPECT_NO_THROW(operand_present(o, OpAttrs{})) << o.name << " depends on " << o.when;
        if (o.when.empty()) continue;
        EXPECT_EQ(borne_seen[k].count(std::string(o.name) + " on"), 1u) << o.name << " is never tested present";
        EXPECT_EQ(borne_seen[k].count(std::string(o.name) + " off"), 1u) << o.name << " is never tested absent";
      }
    }
    const OpAttrs a;
    const int n_in = operand_count(k, Side::In, a), n_out = operand_count(k, Side::Out, a);
    EXPECT_NO_THROW(check_operand_counts(k, n_in, n_out, a));
    EXPECT_THROW(check_operand_counts(k, n_in + 1, n_out, a), Error);
    EXPECT_THROW(check_operand_counts(k, n_in - 1, n_out, a), Error);
    EXPECT_THROW(check_operand_counts(k, n_in, n_out + 1, a), Error);
    EXPECT_THROW(check_operand_counts(k, n_in, n_out - 1, a), Error);
    for (Side side : {Side::In, Side::Out}) {  // positions among the operands present, -1 for one left out
      int at = 0;
      for (const OperandName& o : operand_names(k, side))
        EXPECT_EQ(operand_index(k, side, o.name, a), operand_present(o, a) ? at++ : -1) << o.name;
      EXPECT_EQ(at, side == Side::In ? n_in : n_out);
    }
    EXPECT_THROW(operand_index(k, Side::In, "no such operand", a), Error);
  }
}

// The CPU kernels in f32 against themselves in f64 on the same input values:
// each output within the case's cpu_f32 bound, integer outputs equal.
TEST(OpTable, CpuF32MatchesTheF64Reference) {
  double worst = 0;
  std::string worst_case;
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<HostTensor> ref = run_case_cpu(c, case_inputs(c, DType::F64), DType::F64);
    const std::vector<HostTensor> got = run_case_cpu(c, case_inputs(c, DType::F32), DType::F32);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!is_float(ref[i].dtype())) {
        EXPECT_EQ(got[i].values(), ref[i].values()) << "output " << i;
        continue;
      }
      const double e = l2_rel_err(got[i], ref[i]);
      EXPECT_LE(e, c.cpu_f32) << "output " << i << " " << ref[i].shape().str() << ": " << c.why;
      if (e > worst) worst = e, worst_case = c.name;
    }
  }
  std::printf("[ op table ] %zu cases, the CPU in f32 against f64: worst %.3g (%s)\n", op_cases().size(), worst,
              worst_case.c_str());
}

TEST(OpTable, GradientsMatchFiniteDifferences) {
  double worst = 0;
  std::string worst_case;
  for (const GradCase& g : grad_cases()) {
    SCOPED_TRACE(g.name);
    std::vector<HostTensor> in = grad_inputs(g);
    const HostTensor analytic = g.grad(in);
    const std::vector<double> fd = fd_gradient(in[size_t(g.wrt)], [&] { return g.loss(in); });
    ASSERT_EQ(analytic.numel(), in[size_t(g.wrt)].numel());
    const double e = max_rel_err(analytic.values(), fd);
    EXPECT_LE(e, g.tol) << g.why;
    if (e > worst) worst = e, worst_case = g.name;
  }
  std::printf("[ op table ] %zu gradient cases against central differences: worst %.3g (%s)\n", grad_cases().size(),
              worst, worst_case.c_str());
}

}  // namespace
}  // namespace tr::test
