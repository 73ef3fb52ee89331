// Note [operands by name] (op_signature.h): the op table's operand lists,
// parsed once, and lookups by name.
#include "framework/ops/op_signature.h"

#include <array>

#include "framework/core/error.h"
#include "framework/ops/op_registry.h"

namespace tr {
namespace {

std::vector<OperandName> parse(std::string_view list) {
  std::vector<OperandName> out;
  size_t i = 0;
  while (i < list.size()) {
    if (list[i] == ' ') {
      ++i;
      continue;
    }
    const size_t end = std::min(list.find(' ', i), list.size());
    const std::string_view word = list.substr(i, end - i);
    const size_t q = word.find('?');
    OperandName o;
    o.name = word.substr(0, q);
    if (q != std::string_view::npos) o.when = word.substr(q + 1);
    out.push_back(o);
    i = end;
  }
  return out;
}

struct Parsed {
  std::array<std::vector<OperandName>, size_t(OpKind::Count)> in, out;
};

const Parsed& parsed() {
  static const Parsed p = [] {
    Parsed r;
    for (size_t k = 0; k < size_t(OpKind::Count); ++k) {
      const OpDef& d = op_def(OpKind(k));
      r.in[k] = parse(d.inputs);
      r.out[k] = parse(d.outputs);
    }
    return r;
  }();
  return p;
}

const char* side_name(Side s) { return s == Side::In ? "input" : "output"; }

}  // namespace

const std::vector<OperandName>& operand_names(OpKind k, Side s) {
  TR_CHECK(k < OpKind::Count, "bad OpKind");
  return s == Side::In ? parsed().in[size_t(k)] : parsed().out[size_t(k)];
}

bool operand_present(const OperandName& o, const OpAttrs& a) {
  if (o.when.empty()) return true;
  if (o.when == "has_bias") return a.has_bias;
  if (o.when == "with_grad") return a.with_grad;
  throw Error(cat("operand ", o.name, " depends on an unknown attribute '", o.when, "'"));
}

int operand_count(OpKind k, Side s, const OpAttrs& a) {
  int n = 0;
  for (const OperandName& o : operand_names(k, s)) n += operand_present(o, a);
  return n;
}

int operand_index(OpKind k, Side s, std::string_view name, const OpAttrs& a) {
  int i = 0;
  for (const OperandName& o : operand_names(k, s)) {
    const bool present = operand_present(o, a);
    if (o.name == name) return present ? i : -1;
    i += present;
  }
  throw Error(cat(op_name(k), " has no ", side_name(s), " named '", name, "' (", side_name(s),
                  "s: ", operand_list(k, s, a), ")"));
}

std::string operand_list(OpKind k, Side s, const OpAttrs& a) {
  std::string r;
  for (const OperandName& o : operand_names(k, s))
    if (operand_present(o, a)) r += (r.empty() ? "" : ", ") + std::string(o.name);
  return r.empty() ? "none" : r;
}

void check_operand_counts(OpKind k, int n_in, int n_out, const OpAttrs& a) {
  const int want_in = operand_count(k, Side::In, a), want_out = operand_count(k, Side::Out, a);
  TR_CHECK(n_in == want_in && n_out == want_out, op_name(k), ": takes ", want_in, " inputs (",
           operand_list(k, Side::In, a), ") and gives ", want_out, " outputs (", operand_list(k, Side::Out, a),
           "), got ", n_in, " and ", n_out);
}

void check_operands(OpKind k, const OpCall& c) {
  TR_CHECK(c.attrs != nullptr, op_name(k), ": a call without attributes");
  check_operand_counts(k, c.n_in, c.n_out, *c.attrs);
}

OpOperands::OpOperands(OpKind k, const OpCall& c) : kind_(k), call_(&c) { check_operands(k, c); }

const TensorRef* OpOperands::find(Side s, std::string_view name) const {
  const int i = operand_index(kind_, s, name, *call_->attrs);
  if (i < 0) return nullptr;
  return s == Side::In ? &call_->in[i] : &call_->out[i];
}

const TensorRef& OpOperands::in(std::string_view name) const {
  const TensorRef* t = find(Side::In, name);
  TR_CHECK(t != nullptr, op_name(kind_), ": input ", name, " is left out by its attribute");
  return *t;
}

const TensorRef& OpOperands::out(std::string_view name) const {
  const TensorRef* t = find(Side::Out, name);
  TR_CHECK(t != nullptr, op_name(kind_), ": output ", name, " is left out by its attribute");
  return *t;
}

const TensorRef* OpOperands::in_if(std::string_view name) const { return find(Side::In, name); }
const TensorRef* OpOperands::out_if(std::string_view name) const { return find(Side::Out, name); }

}  // namespace tr
