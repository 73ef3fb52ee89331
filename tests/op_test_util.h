#pragma once
// Helpers for op tests (CPU reference tests and GPU-vs-CPU tests alike):
//   HostTensor  - a host buffer of any DType/Shape with element get/set as double,
//                 random fills, NaN poisoning and dtype conversion;
//   OpRunner    - builds the TensorRef arrays, OpAttrs, VariantDims, ExecEnv with
//                 TrainScalars and the OpCall; poisons every output before the
//                 call and flags float outputs left non-finite after it;
//   nmse / max_rel_err - error metrics over double vectors;
//   fd_gradient - central finite differences of a scalar objective.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "framework/core/bf16.h"
#include "framework/core/dtype.h"
#include "framework/core/half.h"
#include "framework/core/rng.h"
#include "framework/core/shape.h"
#include "framework/ops/op_registry.h"

namespace tr::test {

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, Shape shape) : dtype_(dtype), shape_(shape) {
    const size_t bytes = size_t(std::max<int64_t>(shape.numel(), 0)) * dtype_size(dtype);
    buf_.assign((bytes + 7) / 8 + 1, 0);  // 8-byte aligned; never empty
  }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  void* data() const { return const_cast<uint64_t*>(buf_.data()); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data());
  }
  size_t bytes() const { return size_t(numel()) * dtype_size(dtype_); }
  // A view with another shape of the same element count (e.g. a flattened x).
  TensorRef ref() const { return TensorRef{data(), dtype_, shape_}; }
  TensorRef ref_as(Shape s) const {
    EXPECT_EQ(s.numel(), numel()) << "ref_as " << s.str() << " of " << shape_.str();
    return TensorRef{data(), dtype_, s};
  }

  double get(int64_t i) const {
    switch (dtype_) {
      case DType::F32: return as<float>()[i];
      case DType::F16: return half_to_float(as<half_t>()[i]);
      case DType::BF16: return bf16_to_float(as<bf16_t>()[i]);
      case DType::F64: return as<double>()[i];
      case DType::U8: return as<uint8_t>()[i];
      case DType::I32: return as<int32_t>()[i];
    }
    return 0;
  }
  void set(int64_t i, double v) {
    switch (dtype_) {
      case DType::F32: as<float>()[i] = float(v); break;
      case DType::F16: as<half_t>()[i] = float_to_half(float(v)); break;
      case DType::BF16: as<bf16_t>()[i] = float_to_bf16(float(v)); break;
      case DType::F64: as<double>()[i] = v; break;
      case DType::U8: as<uint8_t>()[i] = uint8_t(v); break;
      case DType::I32: as<int32_t>()[i] = int32_t(v); break;
    }
  }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) v[size_t(i)] = get(i);
    return v;
  }
  void fill(double v) {
    for (int64_t i = 0; i < numel(); ++i) set(i, v);
  }
  // NaN in float tensors, 0xA5 bytes otherwise: an element a kernel forgets to
  // write is then visible.
  void poison() {
    if (is_float(dtype_)) {
      fill(std::numeric_limits<double>::quiet_NaN());
    } else {
      std::memset(data(), 0xA5, bytes());
    }
  }
  void fill_uniform(Rng& rng, double lo, double hi) {
    for (int64_t i = 0; i < numel(); ++i) set(i, lo + (hi - lo) * rng.uniform());
  }
  void fill_normal(Rng& rng, double stddev) {
    for (int64_t i = 0; i < numel(); ++i) set(i, stddev * rng.normal());
  }
  // A copy converted element-wise to another dtype (same shape).
  HostTensor to(DType t) const {
    HostTensor r(t, shape_);
    for (int64_t i = 0; i < numel(); ++i) r.set(i, get(i));
    return r;
  }
  // Index of the first non-finite element of a float tensor, or -1.
  int64_t first_non_finite() const {
    if (!is_float(dtype_)) return -1;
    for (int64_t i = 0; i < numel(); ++i)
      if (!std::isfinite(get(i))) return i;
    return -1;
  }

 private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::vector<uint64_t> buf_;
};

inline bool bitwise_equal(const HostTensor& a, const HostTensor& b) {
  return a.dtype() == b.dtype() && a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

inline HostTensor random_tensor(DType t, Shape s, Rng& rng, double lo = -1, double hi = 1) {
  HostTensor r(t, s);
  r.fill_uniform(rng, lo, hi);
  return r;
}

// sum (a-ref)^2 / sum ref^2 (ggml's test-backend-ops metric).
inline double nmse(const std::vector<double>& a, const std::vector<double>& ref) {
  EXPECT_EQ(a.size(), ref.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < std::min(a.size(), ref.size()); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den == 0 ? num : num / den;
}

// max |a-ref| / max |ref|: an error relative to the tensor's scale, robust to
// individual elements near zero. NaN anywhere gives +inf.
inline double max_rel_err(const std::vector<double>& a, const std::vector<double>& ref) {
  EXPECT_EQ(a.size(), ref.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < std::min(a.size(), ref.size()); ++i) {
    const double e = std::fabs(a[i] - ref[i]);
    if (std::isnan(e)) return std::numeric_limits<double>::infinity();
    err = std::max(err, e);
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return scale == 0 ? err : err / scale;
}

// Central differences of loss() with respect to every element of t (t is
// perturbed in place and restored).
inline std::vector<double> fd_gradient(HostTensor& t, const std::function<double()>& loss, double h = 1e-5) {
  std::vector<double> g(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get(i);
    t.set(i, v + h);
    const double lp = loss();
    t.set(i, v - h);
    const double lm = loss();
    t.set(i, v);
    g[size_t(i)] = (lp - lm) / (2 * h);
  }
  return g;
}

// Builds an OpCall around host tensors and runs an op function on it.
// Calls an op on TensorRefs (CPU or CUDA: `env` says which).
inline void call_op(OpFn fn, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out, const OpAttrs& attrs,
                    const VariantDims& variant, const ExecEnv& env) {
  OpCall c;
  c.in = in.data();
  c.n_in = int(in.size());
  c.out = out.data();
  c.n_out = int(out.size());
  c.attrs = &attrs;
  c.variant = &variant;
  c.env = &env;
  fn(c);
}

struct OpRunner {
  OpAttrs attrs;
  VariantDims variant;
  TrainScalars scalars;
  int rank = 0, ranks = 1;     // the ExecEnv's (InputPrep keys augmentation by rank)
  bool poison_outputs = true;  // fill outputs with NaN / 0xA5 before the call
  bool check_finite = true;    // flag float outputs holding NaN/Inf after the call

  void run(OpFn fn, const std::vector<const HostTensor*>& in, const std::vector<HostTensor*>& out) {
    std::vector<TensorRef> in_refs, out_refs;
    for (const HostTensor* t : in) in_refs.push_back(t->ref());
    for (HostTensor* t : out) {
      if (poison_outputs) t->poison();
      out_refs.push_back(t->ref());
    }
    run_refs(fn, in_refs, out_refs);
    if (check_finite)
      for (size_t k = 0; k < out.size(); ++k) {
        const int64_t bad = out[k]->first_non_finite();
        if (bad >= 0)
          ADD_FAILURE() << "output " << k << " " << out[k]->shape().str() << " element " << bad << " is "
                        << out[k]->get(bad) << " (unwritten?)";
      }
  }
  // With explicit TensorRefs (views with other shapes); no poisoning here.
  void run_refs(OpFn fn, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
    ExecEnv env;
    env.scalars = &scalars;
    env.rank = rank;
    env.ranks = ranks;
    call_op(fn, in, out, attrs, variant, env);
  }
  std::vector<Shape> shapes(ShapeFn fn, const std::vector<Shape>& in, int n_out) const {
    ShapeCtx c;
    c.in = in.data();
    c.n_in = int(in.size());
    c.attrs = &attrs;
    c.variant = &variant;
    std::vector<Shape> out(static_cast<size_t>(n_out));
    fn(c, out.data(), n_out);
    return out;
  }
};

}  // namespace tr::test
