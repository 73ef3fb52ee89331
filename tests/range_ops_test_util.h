#pragma once
// Helpers of the CPU RANGE op tests (range_ops_*test.cpp): operands over host
// vectors, one call with its own env, scalars and attributes, a float's bits.
#include <cstring>
#include <initializer_list>
#include <vector>

#include "framework/core/bf16.h"
#include "framework/core/half.h"
#include "framework/ops/op_call.h"
#include "framework/ops/train_scalars.h"

namespace tr::range_test {

inline RangeOperand operand(std::vector<float>& v, const std::vector<Segment>* segs = nullptr) {
  RangeOperand o;
  o.data = v.data();
  o.dtype = DType::F32;
  o.elems = int64_t(v.size());
  if (segs) {
    o.segs = segs->data();
    o.n_segs = int(segs->size());
  }
  return o;
}

// A vector of 16-bit floats (half_t or bf16_t) as an operand of `dtype`.
template <class H>
inline RangeOperand operand16(std::vector<H>& v, DType dtype, const std::vector<Segment>* segs = nullptr) {
  RangeOperand o;
  o.data = v.data();
  o.dtype = dtype;
  o.elems = int64_t(v.size());
  if (segs) {
    o.segs = segs->data();
    o.n_segs = int(segs->size());
  }
  return o;
}
inline RangeOperand operand(std::vector<half_t>& v) { return operand16(v, DType::F16); }
inline RangeOperand operand(std::vector<bf16_t>& v) { return operand16(v, DType::BF16); }

// One RANGE call with its own env, scalars and attributes.
struct Call {
  TrainScalars scalars;
  RangeAttrs attrs;
  ExecEnv env;
  std::vector<RangeOperand> ops;
  Call() { env.scalars = &scalars; }
  // A fresh vector each time: assigning the list in place trips GCC 12's
  // -Wnonnull at -O3 inside vector::assign.
  void set_ops(std::initializer_list<RangeOperand> o) { ops = std::vector<RangeOperand>(o); }
  void run(RangeFn fn) {
    RangeCall c;
    c.ops = ops.data();
    c.n_ops = int(ops.size());
    c.attrs = &attrs;
    c.env = &env;
    fn(c);
  }
};

inline uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
}  // namespace tr::range_test
