#pragma once
// The op table: for each OpKind / RangeOp its name, shape rule and the CPU and
// CUDA implementations. Executors resolve a node to a function pointer here
// once; the hot path never consults the table.
#include <string_view>

#include "framework/ops/op_call.h"
#include "framework/ops/op_kind.h"
#include "framework/ops/shape_ctx.h"

namespace tr {

struct OpDef {
  OpKind kind = OpKind::Count;  // its index in the table (checked at compile time)
  std::string_view name;
  std::string_view inputs;  // the operands by name, in order (Note [operands by name], op_signature.h)
  std::string_view outputs;
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
