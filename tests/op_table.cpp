// The op test table's plumbing (Note [the op test table], op_table.h): inputs
// from a case, outputs from the shape rule, one CPU run, the error metric.
#include "tests/op_table.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "framework/core/fnv1a.h"
#include "framework/core/rng.h"

namespace tr::test {

DType dtype_of(Elem e, DType t) {
  switch (e) {
    case Elem::T: return t;
    case Elem::Stat: return t == DType::F64 ? DType::F64 : DType::F32;
    case Elem::U8: return DType::U8;
    case Elem::I32: return DType::I32;
  }
  return t;
}

namespace {

// Every case's own seed: its name, so reordering the table changes no input.
uint64_t seed_of(const std::string& name) {
  Fnv1a f;
  f.bytes(name.data(), name.size());
  return f.h;
}

// The values of one operand, drawn as f32 numbers (so that f64 and f32 runs
// see the same values) and stored in `t`.
HostTensor filled(const Operand& o, DType t, Rng& rng) {
  HostTensor f32(dtype_of(o.elem, DType::F32), o.shape);
  const int64_t n = f32.numel();
  switch (o.fill) {
    case Fill::Uniform:
      for (int64_t i = 0; i < n; ++i) f32.set(i, float(o.lo + (o.hi - o.lo) * rng.uniform()));
      break;
    case Fill::Distinct: {  // a shuffled ramp over [lo, hi): gaps of (hi - lo) / n, none at 0
      std::vector<int64_t> perm(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
      const double step = (o.hi - o.lo) / double(std::max<int64_t>(n, 1));
      for (int64_t i = 0; i < n; ++i) f32.set(i, float(o.lo + (double(perm[size_t(i)]) + 0.5) * step));
      break;
    }
    case Fill::Labels:
      for (int64_t i = 0; i < n; ++i) f32.set(i, double(rng.below(uint64_t(o.hi))));
      break;
    case Fill::Pixels:
      for (int64_t i = 0; i < n; ++i) f32.set(i, double(rng.below(256)));
      break;
  }
  return f32.to(dtype_of(o.elem, t));
}

}  // namespace

std::vector<HostTensor> case_inputs(const OpCase& c, DType t) {
  Rng rng(seed_of(c.name));
  std::vector<HostTensor> in;
  for (const Operand& o : c.in) in.push_back(filled(o, t, rng));
  if (c.derive) c.derive(in);
  return in;
}

std::vector<HostTensor> grad_inputs(const GradCase& g) {
  Rng rng(seed_of(g.name));
  std::vector<HostTensor> in;
  for (const Operand& o : g.in) in.push_back(filled(o, DType::F64, rng));
  return in;
}

std::vector<HostTensor> case_outputs(const OpCase& c, const std::vector<HostTensor>& in, DType t) {
  std::vector<Shape> in_shapes;
  for (const HostTensor& h : in) in_shapes.push_back(h.shape());
  std::vector<Shape> shapes(c.out.size());
  const ShapeCtx ctx{in_shapes.data(), int(in_shapes.size()), &c.attrs, &c.variant};
  op_def(c.kind).shapes(ctx, shapes.data(), int(shapes.size()));
  std::vector<HostTensor> out;
  for (size_t i = 0; i < c.out.size(); ++i) out.emplace_back(dtype_of(c.out[i], t), shapes[i]);
  return out;
}

std::vector<HostTensor> run_case_cpu(const OpCase& c, const std::vector<HostTensor>& in, DType t) {
  OpRunner r;
  r.attrs = c.attrs;
  r.variant = c.variant;
  r.scalars.loss_scale = c.loss_scale;
  std::vector<HostTensor> out = case_outputs(c, in, t);
  std::vector<const HostTensor*> ip;
  for (const HostTensor& h : in) ip.push_back(&h);
  std::vector<HostTensor*> op;
  for (HostTensor& h : out) op.push_back(&h);
  r.run(op_def(c.kind).cpu, ip, op);
  return out;
}

double l2_rel_err(const HostTensor& got, const HostTensor& ref) {
  EXPECT_EQ(got.numel(), ref.numel());
  double num = 0, den = 0;
  for (int64_t i = 0; i < std::min(got.numel(), ref.numel()); ++i) {
    const double g = got.get(i), r = ref.get(i);
    if (!std::isfinite(g) && std::isfinite(r)) return std::numeric_limits<double>::infinity();
    num += (g - r) * (g - r);
    den += r * r;
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace tr::test
