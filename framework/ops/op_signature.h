#pragma once
// Note [operands by name]
// Each op kind's line in the op table (op_registry.cpp) lists its inputs and
// its outputs by name, in order: BnReluApply takes "x sums gamma beta" and
// gives "y batch affine". A name written "b?has_bias" is there only when that
// boolean attribute is set (FcFwd's bias, SoftmaxXent's "dlogits?with_grad");
// every other operand is always there. The list is the kind's whole contract:
// a form that needs another list is another kind (op_kind.h).
//   - Shape inference and node preparation check each node's counts against
//     it, so a rule or kernel never looks at how many operands it got.
//   - Kernels and shape rules take their operands by name (OpOperands below),
//     checked once in code both backends share.
//   - Fusion reads and builds nodes by name (framework/graph/node_operands.h).
// OpTable.EveryKindsOperandsMatchItsCases walks the table against the cases
// and the shape rules (tests/op_table_test.cpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "framework/ops/op_call.h"
#include "framework/ops/op_kind.h"
#include "framework/ops/shape_ctx.h"

namespace tr {

enum class Side : uint8_t { In, Out };

struct OperandName {
  std::string_view name;
  std::string_view when;  // "" (always there) or the attribute that brings it
};

// The kind's operands on one side, as its table line gives them (parsed once).
const std::vector<OperandName>& operand_names(OpKind k, Side s);
// Whether an operand is there under these attributes.
bool operand_present(const OperandName& o, const OpAttrs& a);
int operand_count(OpKind k, Side s, const OpAttrs& a);
// Its index among the operands present; -1 when its attribute leaves it out.
// Throws Error when the kind has no operand of that name (a bug, not an input).
int operand_index(OpKind k, Side s, std::string_view name, const OpAttrs& a);
// "x, sums, gamma, beta": the operands present, for messages.
std::string operand_list(OpKind k, Side s, const OpAttrs& a);
// Throws Error naming the kind and its lists when the counts differ from them.
void check_operand_counts(OpKind k, int n_in, int n_out, const OpAttrs& a);
// The same for a kernel's call (attributes required): the first line of each
// kernel that reads its operands by position in its kind's fixed list.
void check_operands(OpKind k, const OpCall& c);

// One call's operands by name. Construction checks the counts.
class OpOperands {
 public:
  OpOperands(OpKind k, const OpCall& c);
  const TensorRef& in(std::string_view name) const;
  const TensorRef& out(std::string_view name) const;
  // Null when the operand's attribute leaves it out.
  const TensorRef* in_if(std::string_view name) const;
  const TensorRef* out_if(std::string_view name) const;
  OpKind kind() const { return kind_; }

 private:
  const TensorRef* find(Side s, std::string_view name) const;
  OpKind kind_;
  const OpCall* call_;
};

}  // namespace tr
