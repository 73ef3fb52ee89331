#pragma once
// The op table: for each OpKind / RangeOp its name, shape rule and the CPU and
// CUDA implementations. Executors resolve a node to a function pointer here
// once; the hot path never consults the table.
#include <string_view>

#include "framework/core/variant_dims.h"
#include "framework/ops/op_call.h"
#include "framework/ops/op_kind.h"

namespace tr {

struct ShapeCtx {
  const Shape* in = nullptr;  // input shapes, in the node's input order
  int n_in = 0;
  const OpAttrs* attrs = nullptr;
  const VariantDims* variant = nullptr;
};
// Writes the shapes of the node's outputs; throws UserError on inconsistent inputs.
using ShapeFn = void (*)(const ShapeCtx&, Shape* out, int n_out);

struct OpDef {
  OpKind kind = OpKind::Count;  // its index in the table (checked at compile time)
  std::string_view name;
  ShapeFn shapes = nullptr;
  OpFn cpu = nullptr;
  OpFn cuda = nullptr;  // null when built without CUDA
};

struct RangeDef {
  RangeOp kind = RangeOp::Count;
  std::string_view name;
  RangeFn cpu = nullptr;
  RangeFn cuda = nullptr;
};

const OpDef& op_def(OpKind k);
const RangeDef& range_def(RangeOp k);

}  // namespace tr

// Registry lines name CUDA functions through this, so a CPU-only build links.
#ifdef TR_HAVE_CUDA
#define TR_CUDA_FN(f) (&(f))
#else
#define TR_CUDA_FN(f) nullptr
#endif
