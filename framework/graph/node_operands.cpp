#include "framework/graph/node_operands.h"

#include <vector>

#include "framework/core/error.h"

namespace tr {
namespace {

TensorId operand_of(const Node& n, Side s, std::string_view name) {
  TR_CHECK(n.kind == Node::Kind::Compute, n.label, ": not a compute node");
  const int i = operand_index(n.op, s, name, n.attrs);
  TR_CHECK(i >= 0, n.label, ": ", op_name(n.op), "'s ", name, " is left out by its attribute");
  const std::vector<TensorId>& v = s == Side::In ? n.in : n.out;
  TR_CHECK(size_t(i) < v.size(), n.label, ": ", op_name(n.op), " has ", v.size(), " operands, not its list's");
  return v[size_t(i)];
}

std::vector<TensorId> ordered(const Node& n, OpKind k, Side s, std::initializer_list<Named> given) {
  std::vector<TensorId> v(size_t(operand_count(k, s, n.attrs)), kNoTensor);
  std::vector<bool> set(v.size(), false);
  for (const Named& g : given) {
    const int i = operand_index(k, s, g.name, n.attrs);
    TR_CHECK(i >= 0, n.label, ": ", op_name(k), "'s ", g.name, " is left out by its attribute");
    TR_CHECK(!set[size_t(i)], n.label, ": ", op_name(k), "'s ", g.name, " is named twice");
    v[size_t(i)] = g.tensor;
    set[size_t(i)] = true;
  }
  for (size_t i = 0; i < v.size(); ++i)
    TR_CHECK(set[i], n.label, ": ", op_name(k), " needs its operands ", operand_list(k, s, n.attrs),
             "; one was not named");
  return v;
}

}  // namespace

TensorId input_of(const Node& n, std::string_view name) { return operand_of(n, Side::In, name); }
TensorId output_of(const Node& n, std::string_view name) { return operand_of(n, Side::Out, name); }

void set_operands(Node& n, OpKind k, std::initializer_list<Named> in, std::initializer_list<Named> out) {
  std::vector<TensorId> i = ordered(n, k, Side::In, in), o = ordered(n, k, Side::Out, out);
  n.kind = Node::Kind::Compute;
  n.op = k;
  n.in = std::move(i);
  n.out = std::move(o);
}

}  // namespace tr
